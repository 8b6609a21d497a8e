#!/usr/bin/env bash
# The README's demo command: installs what is missing, builds, and runs the most complete
# pipeline uringfeed has on its embedded default. Ends by itself; Ctrl-C stops it early.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
cmake -S . -B build >/dev/null
cmake --build build -j"$(nproc)" 2>&1 | grep -Ev '^\[|^-- ' || true
bin=build/bin
work=$(mktemp -d /tmp/uringfeed-demo.XXXXXX)
trap 'rm -rf "$work"' EXIT
echo "demo: working in $work"
if [ -x $bin/uf-gen ] && [ -x $bin/uf-decode ]; then
	$bin/uf-gen --out "$work/day.itch" --messages 200000 --symbols 50 --seed 1
	echo "demo: decode statistics of the generated day"
	$bin/uf-decode stats "$work/day.itch"
else
	echo "demo: no pipeline built yet"
fi
