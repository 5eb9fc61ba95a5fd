#!/usr/bin/env bash
# fwfix's main job on the bundled fixture: installs the host tools if missing, builds fwfix,
# makes a throwaway git repository with real history from fixtures/fwtests (a working CRC-16, the
# commit that breaks it, unrelated work), and runs the fix loop (`fwfix run --strategy revert`) on
# it under QEMU: fwfix bisects from the known-good commit to the culprit, proposes its revert, and
# verifies it. No model is needed.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/prerequisites.sh
cargo build --quiet --locked
fwfix="$PWD/target/debug/fwfix"
fixture="$PWD/fixtures/fwtests"

work="$(mktemp -d "${TMPDIR:-/tmp}/fwfix-demo.XXXXXX")"
git_() { git -C "$work" -c user.name="fwfix demo" -c user.email="demo@fwfix.invalid" "$@"; }
# History: a working CRC module, then a change that breaks CRC-16, then unrelated work on top.
cp -r "$fixture/." "$work/"
rm -rf "$work/build"
git_ init -q -b main
git -C "$work" apply "$fixture/patches/04-fixes-crc16.diff"
git_ add -A
git_ commit -q -m "Firmware with CRC-8/16/32, ring buffer, sensor and event modules"
good="$(git -C "$work" rev-parse --short HEAD)"
git -C "$work" apply -R "$fixture/patches/04-fixes-crc16.diff"
git_ commit -q -am "crc: start CRC-16 from zero"
echo "Notes for the next release." > "$work/NOTES.md"
git_ add NOTES.md
git_ commit -q -m "Release notes"
echo "== firmware repository with real history: $work"
git -C "$work" log --oneline

echo
echo "== fwfix run --board qemu-mps2-an385 --profile crc --strategy revert --good $good"
set +e
"$fwfix" run --repo "$work" --board qemu-mps2-an385 --profile crc \
    --strategy revert --good "$good"
status=$?
set -e
run="$(ls -d "$work"/.fwfix/runs/* | tail -n 1)"
echo
echo "== the bisect that found the culprit (iter-001/bisect)"
sed -n 3p "$run/iter-001/bisect/report.md" 2>/dev/null || echo "(no bisect record)"
echo
echo "== the state progression (trace.jsonl)"
"$fwfix" show --repo "$work" "$run" 2>/dev/null || cat "$run/trace.jsonl"
echo
echo "== where things are"
echo "bisect:      $run/iter-001/bisect (each commit it tested, and its culprit)"
echo "fix branch:  $(git -C "$work" branch --list 'fwfix/*' | tr -d ' ')"
echo "fix.patch:   $run/fix.patch"
echo "report:      $run/report.md (and report.json, junit.xml)"
echo "trace:       $run/trace.jsonl"
echo "your tree:   $(git -C "$work" status --porcelain | wc -l) changed file(s) (fwfix leaves it as it was)"
exit "$status"
