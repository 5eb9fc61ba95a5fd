//! Drives the state machine: runs each state's handler and does the I/O the machine asks for.
