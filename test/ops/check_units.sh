#!/usr/bin/env bash
# Checks the systemd files as `cmake --install --prefix /usr` ships them (ops_systemd_units).
#   check_units.sh BUILD_DIR [--absent TOOL]...
# 1. Installs BUILD_DIR into a scratch DESTDIR.
# 2. `systemd-analyze verify` on each installed unit must print nothing at all (it exits 0
#    on unknown keys and bad values, so the output is what is checked). verify needs each
#    Exec*= binary to exist: a copy of the unit points /usr/bin/ at the scratch tree, nothing
#    else changes. A canary key proves that warnings are seen.
#    --absent TOOL: this build does not make TOOL (uf-bridge lives on another branch); its
#    unit must then print exactly the one "not executable" line for it and nothing else.
#    `systemd-analyze security --offline` must rate each unit at most at its ceiling below
#    (exposure x 10; 0 = locked down, 100 = none): a hardening line lost is a failure.
# 3. sysusers and tmpfiles drop-ins applied to a scratch root: the ring folder is created
#    with mode 0750, owned by uringfeed:marketdata.
# 4. Every key of the sysctl drop-in exists in this kernel (/proc/sys).
set -euo pipefail

build=$1
shift
absent=()
while [ $# -gt 0 ]; do
	case $1 in
	--absent) absent+=("$2"); shift 2 ;;
	*) echo "check_units: unknown argument $1" >&2; exit 2 ;;
	esac
done
for t in systemd-analyze systemd-sysusers systemd-tmpfiles; do
	command -v "$t" >/dev/null || { echo "FAIL: $t not found (apt-get install systemd)"; exit 1; }
done

tmp=$(mktemp -d /tmp/uf-units.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
root=$tmp/root
DESTDIR=$root cmake --install "$build" --prefix /usr >/dev/null
fail=0

units=("$root"/usr/lib/systemd/system/*.service)
[ ${#units[@]} -ge 3 ] || { echo "FAIL: expected at least 3 units, found ${#units[@]}"; exit 1; }
mkdir "$tmp/units" "$tmp/canary"
for u in "${units[@]}"; do
	name=$(basename "$u")
	sed -E "s#^(Exec[A-Za-z]*=[-@:+!]*)/usr/bin/#\1$root/usr/bin/#" "$u" >"$tmp/units/$name"
	out=$(systemd-analyze verify "$tmp/units/$name" 2>&1) || true
	expect=""
	for t in "${absent[@]}"; do
		if grep -q "^ExecStart=/usr/bin/$t " "$u"; then
			expect="$name: Command $root/usr/bin/$t is not executable: No such file or directory"
		fi
	done
	if [ "$out" != "$expect" ]; then
		echo "FAIL: systemd-analyze verify $name printed:"
		echo "$out"
		[ -n "$expect" ] && echo "(expected only: $expect)"
		fail=1
	else
		echo "ok: $name verifies clean${expect:+ (apart from the absent binary)}"
	fi
done
# Exposure ceilings, a little above today's scores (uringfeed 2.1, uf-bridge 1.6,
# uf-replay 1.3): the daemon needs the network and three capabilities.
declare -A ceiling=([uringfeed.service]=25 [uf-bridge.service]=20 [uf-replay.service]=15)
for u in "${units[@]}"; do
	name=$(basename "$u")
	max=${ceiling[$name]:-15}
	out=$(systemd-analyze security --offline=true --threshold="$max" "$tmp/units/$name" 2>&1) &&
		echo "ok: $name $(grep -o 'exposure level.*' <<<"$out")" ||
		{ echo "FAIL: $name: exposure above $max/10: $(grep 'Overall' <<<"$out")"; fail=1; }
done
# Canary: the same check must see a warning in a unit that has one.
sed 's/^\[Service\]$/[Service]\nUfCanaryUnknownKey=1/' "$tmp/units/uringfeed.service" \
	>"$tmp/canary/uringfeed.service"
out=$(systemd-analyze verify "$tmp/canary/uringfeed.service" 2>&1) || true
if ! grep -q "Unknown key 'UfCanaryUnknownKey'" <<<"$out"; then
	echo "FAIL: systemd-analyze verify did not report the canary key: '$out'"
	fail=1
fi

sysroot=$tmp/sysroot
mkdir -p "$sysroot/etc" "$sysroot/dev/shm"
systemd-sysusers --root="$sysroot" "$root/usr/lib/sysusers.d/uringfeed.conf" >/dev/null 2>"$tmp/err" ||
	{ echo "FAIL: systemd-sysusers: $(cat "$tmp/err")"; fail=1; }
out=$(systemd-tmpfiles --root="$sysroot" --create "$root/usr/lib/tmpfiles.d/uringfeed.conf" 2>&1) ||
	{ echo "FAIL: systemd-tmpfiles: $out"; fail=1; }
[ -z "$out" ] || { echo "FAIL: systemd-tmpfiles printed: $out"; fail=1; }
uid=$(awk -F: '$1 == "uringfeed" { print $3 }' "$sysroot/etc/passwd")
gid=$(awk -F: '$1 == "marketdata" { print $3 }' "$sysroot/etc/group")
got=$(stat -c '%a %u %g' "$sysroot/dev/shm/uringfeed" 2>&1) || true
if [ -z "$uid" ] || [ -z "$gid" ] || [ "$got" != "750 $uid $gid" ]; then
	echo "FAIL: ring folder is '$got', want '750 $uid $gid' (uringfeed:marketdata)"
	fail=1
else
	echo "ok: sysusers + tmpfiles create /dev/shm/uringfeed 0750 uringfeed:marketdata"
fi

nkeys=0
while read -r key _; do
	nkeys=$((nkeys + 1))
	if [ ! -e "/proc/sys/${key//.//}" ]; then
		echo "FAIL: sysctl key $key does not exist in this kernel"
		fail=1
	fi
done < <(grep -E '^[a-z]' "$root/usr/lib/sysctl.d/60-uringfeed.conf")
[ "$nkeys" -gt 0 ] || { echo "FAIL: no keys in the sysctl drop-in"; fail=1; }
[ $fail -eq 0 ] && echo "ok: $nkeys sysctl keys exist"
exit $fail
