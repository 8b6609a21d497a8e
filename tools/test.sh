#!/usr/bin/env bash
# The README's test command: installs what is missing, builds, and runs every test through
# CTest three times: the normal build (-Werror), an ASan+UBSan build, and a clang build that
# adds the libFuzzer targets (run for a bounded time). Exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
tools/setup.sh

jobs=$(nproc)
ctest_jobs=${UF_CTEST_JOBS:-1} # tests busy-poll; on 2 CPUs they run one at a time
status=0
summary=()

run_suite() { # name builddir ctest-args... ; cmake args come from $cfg
	local name=$1 dir=$2
	shift 2
	echo "=== $name: configure + build ($dir)"
	cmake -S "$root" -B "$dir" -DUF_WERROR=ON "${cfg[@]}" >"$dir.configure.log" 2>&1 ||
		{ cat "$dir.configure.log"; return 1; }
	if ! cmake --build "$dir" -j"$jobs" >"$dir.build.log" 2>&1; then
		grep -v '^\[' "$dir.build.log" | tail -60
		echo "=== $name: BUILD FAILED (full log: $dir.build.log)"
		return 1
	fi
	echo "=== $name: ctest"
	(cd "$dir" && ctest --output-on-failure --no-tests=error -j"$ctest_jobs" "$@") | tee "$dir.ctest.log"
	return "${PIPESTATUS[0]}"
}

mkdir -p build
cfg=()
if run_suite normal "$root/build"; then summary+=("normal: ok"); else summary+=("normal: FAILED"); status=1; fi

cfg=(-DUF_SANITIZE=ON)
if run_suite sanitize "$root/build-asan" -LE nosan; then summary+=("asan+ubsan: ok"); else summary+=("asan+ubsan: FAILED"); status=1; fi

cfg=(-DCMAKE_C_COMPILER=clang -DUF_FUZZ=ON)
if run_suite fuzz "$root/build-fuzz" -L fuzz; then summary+=("fuzz: ok"); else summary+=("fuzz: FAILED"); status=1; fi

# One closing line over all three suites, in the plain "N passed, N failed" form.
passed=0
failed=0
for log in build.ctest.log build-asan.ctest.log build-fuzz.ctest.log; do
	[ -f "$log" ] || continue
	line=$(grep -E 'tests passed, [0-9]+ tests failed out of' "$log" | tail -1 || true)
	[ -n "$line" ] || { failed=$((failed + 1)); continue; }
	total=$(sed -E 's/.*out of ([0-9]+).*/\1/' <<<"$line")
	f=$(sed -E 's/.*tests passed, ([0-9]+) tests failed.*/\1/' <<<"$line")
	passed=$((passed + total - f))
	failed=$((failed + f))
done
printf '%s\n' "${summary[@]}"
echo "total: $passed passed, $failed failed"
[ "$failed" -eq 0 ] || status=1
exit $status
