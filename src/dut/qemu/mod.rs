//! The QEMU backend: runs an image on qemu-system-* with semihosting, captures UART and stderr,
//! detects crashes as they happen and reads the fault state over QMP.
