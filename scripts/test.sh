#!/usr/bin/env bash
# Runs fwfix's whole test suite: unit tests, and integration tests that drive the real binary
# against real QEMU, the cross compiler and git repositories. Installs those tools first if missing.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/prerequisites.sh
bash scripts/labgrid-venv.sh
cargo test --locked --all-targets
cargo test --locked --doc
