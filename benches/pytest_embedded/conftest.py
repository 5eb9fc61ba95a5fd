# pytest-embedded as the reference of scripts/bench (see benches/figures.rs).
# Boots a bare-metal ELF with -kernel: pytest-embedded-qemu hands QEMU its image as an MTD drive
# (ESP32 flash), which Cortex-M machines do not have.
import pytest_embedded_qemu.qemu as qemu_mod

_popen_init = qemu_mod.DuplicateStdoutPopen.__init__


def _kernel_init(self, cmd, **kwargs):
    if len(cmd) >= 2 and cmd[-2] == "-drive" and cmd[-1].endswith(",if=mtd,format=raw"):
        image = cmd[-1][len("file="):].split(",if=mtd")[0]
        cmd = [*cmd[:-2], "-kernel", image]
    _popen_init(self, cmd=cmd, **kwargs)


qemu_mod.DuplicateStdoutPopen.__init__ = _kernel_init
