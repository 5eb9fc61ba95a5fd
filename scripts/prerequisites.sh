#!/usr/bin/env bash
# Installs the host tools fwfix's fixtures, QEMU backend and tests need, when any is missing.
# Debian/Ubuntu only (apt); uses sudo when not root. Safe to run again: installs nothing when
# everything is present.
set -euo pipefail

need=()
have() { command -v "$1" >/dev/null 2>&1; }
have qemu-system-arm || need+=(qemu-system-arm)
have arm-none-eabi-gcc || need+=(gcc-arm-none-eabi)
have gdb-multiarch || need+=(gdb-multiarch)
have socat || need+=(socat)
have ser2net || need+=(ser2net)
have make || need+=(make)
have git || need+=(git)
python3 -c "import venv, ensurepip" >/dev/null 2>&1 || need+=(python3-venv)
have chromium || need+=(chromium)   # report.html is checked in a real headless browser
have cppcheck || need+=(cppcheck)   # the lint stage's tests run real analysers
have clang-tidy || need+=(clang-tidy)

if [ ${#need[@]} -eq 0 ]; then
    exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then
    if ! have sudo; then
        echo "fwfix: missing ${need[*]} and not root; install them with apt-get as root" >&2
        exit 4
    fi
    sudo="sudo"
fi
if ! have apt-get; then
    echo "fwfix: missing ${need[*]}; this script installs them only on Debian/Ubuntu (apt)" >&2
    exit 4
fi
echo "fwfix: installing ${need[*]} ..." >&2
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >&2
