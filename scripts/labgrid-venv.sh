#!/usr/bin/env bash
# Installs labgrid 26.0.1 (the coordinator, exporter and client the labgrid backend's tests run)
# into target/labgrid-venv with pip, when it is not there yet.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=target/labgrid-venv
if [ -x "$venv/bin/labgrid-client" ] && [ -x "$venv/bin/labgrid-coordinator" ]; then
    exit 0
fi
echo "fwfix: installing labgrid 26.0.1 into $venv ..." >&2
python3 -m venv "$venv"
"$venv/bin/pip" install --quiet labgrid==26.0.1
