#!/usr/bin/env bash
# fwfix's main job on the bundled fixture: installs the host tools if missing, builds fwfix,
# makes a throwaway git repository from fixtures/fwtests, and runs fwfix on it under QEMU.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/prerequisites.sh
cargo build --quiet --locked
fwfix="$PWD/target/debug/fwfix"

work="$(mktemp -d "${TMPDIR:-/tmp}/fwfix-demo.XXXXXX")"
cp -r fixtures/fwtests/. "$work/"
rm -rf "$work/build"
git -C "$work" init -q -b main
git -C "$work" add -A
git -C "$work" -c user.name="fwfix demo" -c user.email="demo@fwfix.invalid" \
    commit -q -m "Fixture firmware"
echo "== firmware repository: $work"

status=0
for profile in ringbuf crc sensor; do
    echo
    echo "== fwfix test --board qemu-mps2-an385 --profile $profile"
    "$fwfix" test --repo "$work" --board qemu-mps2-an385 --profile "$profile" || status=$?
done
echo
echo "== runs are in $work/.fwfix/runs/ (report.json, report.md, junit.xml, trace.jsonl)"
# The crc and sensor images fail on purpose: the demo succeeded if fwfix reported them (exit 1).
[ "$status" -le 1 ]
