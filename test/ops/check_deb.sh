#!/usr/bin/env bash
# Builds the .deb from BUILD_DIR and checks it from the outside (CTest ops_deb_package).
#   check_deb.sh BUILD_DIR VERSION
# 1. `cpack -G DEB` into a scratch folder (the build folder is only read).
# 2. Control: Depends names each Debian runtime package the binaries link; conffiles lists
#    every file under /etc/uringfeed and nothing else; the maintainer scripts are there.
# 3. Contents: every tool, unit, drop-in, the rules, the dashboard, the docs.
# 4. Extracted with dpkg-deb -x: the daemon prints VERSION and validates the packaged
#    loopback.json; every packaged binary resolves all its libraries, libufconsumer from the
#    package itself (no RUNPATH into the build folder); the Python package in Debian's
#    /usr/lib/python3/dist-packages imports from a clean environment (env -i) and loads the
#    packaged libufconsumer through the path recorded at install (_libpath.py).
set -euo pipefail
build=$1
version=$2
tmp=$(mktemp -d /tmp/uf-deb.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }

if ! cpack --config "$build/CPackConfig.cmake" -G DEB -B "$tmp/pkg" >"$tmp/cpack.log" 2>&1; then
	cat "$tmp/cpack.log"
	bad "cpack -G DEB failed"
	exit 1
fi
debs=("$tmp"/pkg/*.deb)
[ ${#debs[@]} -eq 1 ] && [ -f "${debs[0]}" ] || { bad "want one .deb, got: ${debs[*]}"; exit 1; }
deb=${debs[0]}
echo "ok: built $(basename "$deb")"

[ "$(dpkg-deb -f "$deb" Version)" = "$version" ] || bad "Version is $(dpkg-deb -f "$deb" Version), want $version"
depends=$(dpkg-deb -f "$deb" Depends)
for p in libc6 liburing2 libnuma1 libjansson4 libmicrohttpd12 libzmq5; do
	grep -Eq "(^|, )$p( |,|$)" <<<"$depends" || bad "Depends lacks $p: $depends"
done
echo "ok: Depends: $depends"

dpkg-deb -e "$deb" "$tmp/ctrl"
for s in postinst prerm postrm triggers conffiles shlibs; do
	[ -f "$tmp/ctrl/$s" ] || bad "control file $s missing"
done
dpkg-deb -c "$deb" | awk '{ print $6 }' | sed 's#^\./#/#' >"$tmp/list"
etc=$(grep -E '^/etc/uringfeed/[^/]+$' "$tmp/list" | sort)
conf=$(grep -v '^$' "$tmp/ctrl/conffiles" | sort)
[ -n "$etc" ] && [ "$etc" = "$conf" ] || bad "conffiles ($conf) differ from the files in /etc/uringfeed ($etc)"

want=(/usr/bin/uringfeed /usr/bin/uf-gen /usr/bin/uf-decode /usr/bin/uf-replay /usr/bin/uf-tail
      /usr/bin/uf-bench /usr/bin/uf-snap /usr/lib/libufconsumer.so.2
      /etc/uringfeed/loopback.json /etc/uringfeed/nasdaq-production.json
      /etc/uringfeed/uf-replay.env /etc/uringfeed/uf-bridge.json
      /usr/lib/systemd/system/uringfeed.service /usr/lib/systemd/system/uf-replay.service
      /usr/lib/systemd/system/uf-bridge.service /usr/lib/sysctl.d/60-uringfeed.conf
      /usr/lib/tmpfiles.d/uringfeed.conf /usr/lib/sysusers.d/uringfeed.conf
      /usr/share/uringfeed/prometheus/uringfeed-alerts.yml
      /usr/share/uringfeed/grafana/uringfeed-dashboard.json
      /usr/share/doc/uringfeed/operations.md /usr/share/doc/uringfeed/configuration.md
      /usr/lib/python3/dist-packages/uringfeed/__init__.py
      /usr/lib/python3/dist-packages/uringfeed/_lib.py
      /usr/lib/python3/dist-packages/uringfeed/_libpath.py)
for f in "${want[@]}"; do
	grep -qx -- "$f" "$tmp/list" || bad "$f not in the package"
done
# Every tool the build made (uf-bridge included when its target exists) is in the package.
for b in "$build"/bin/*; do
	[ -x "$b" ] && [ -f "$b" ] || continue
	grep -qx -- "/usr/bin/$(basename "$b")" "$tmp/list" || bad "built tool $(basename "$b") not in the package"
done
if grep -q '__pycache__' "$tmp/list"; then
	bad "byte-compiled Python in the package: $(grep '__pycache__' "$tmp/list" | head -3)"
fi
if grep -Eq '^/usr/local/|^/usr/etc/' "$tmp/list"; then
	bad "configure-time prefix leaked into the package: $(grep -E '^/usr/local/|^/usr/etc/' "$tmp/list" | head -3)"
fi
[ $fail -eq 0 ] && echo "ok: ${#want[@]} expected files present, conffiles match /etc/uringfeed"

root=$tmp/root
dpkg-deb -x "$deb" "$root"
export LD_LIBRARY_PATH=$root/usr/lib
out=$("$root/usr/bin/uringfeed" --version 2>&1) || bad "uringfeed --version exited $?: $out"
[ "$out" = "uringfeed $version" ] || bad "uringfeed --version printed '$out', want 'uringfeed $version'"
out=$(cd "$root" && usr/bin/uringfeed --check-config etc/uringfeed/loopback.json --no-host-checks 2>&1) ||
	bad "packaged uringfeed refused the packaged loopback.json: $out"
[ $fail -eq 0 ] && echo "ok: extracted daemon: $("$root/usr/bin/uringfeed" --version), loopback.json valid"
# The extracted daemon runs: the packaged loopback.json, made private to this run (epoll, no
# pinning, port 0, groups, ports and ring from our pid, rings in the scratch folder), serves
# /health 200 with its feed running and stops cleanly on SIGTERM.
n=$(($$ % 200))
/usr/bin/python3 - "$root/etc/uringfeed/loopback.json" "$tmp/run.json" "$n" "$$" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
n, pid = int(sys.argv[3]), sys.argv[4]
c["status"] = {"listen": "127.0.0.1:0"}
f = c["feeds"][0]
f.update(backend="epoll", cpu=-1, ring={"name": f"uf_deb_{pid}", "capacity": 65536},
         book={"max_orders": 100000})
f.pop("recovery", None)
for i, l in enumerate(f["lines"]):
    l.update(group=f"239.81.{n}.{i + 1}", port=24000 + n * 2 + i)
json.dump(c, open(sys.argv[2], "w"))
PY
mkdir -p "$tmp/rings"
UF_RING_DIR=$tmp/rings timeout -s KILL 30 "$root/usr/bin/uringfeed" --config "$tmp/run.json" 2>"$tmp/run.log" &
dpid=$!
port=
for _ in $(seq 200); do
	port=$(sed -n 's#.*serving http://127.0.0.1:\([0-9]*\)/.*#\1#p' "$tmp/run.log")
	[ -n "$port" ] && grep -q 'running;' "$tmp/run.log" && break
	kill -0 $dpid 2>/dev/null || break
	sleep 0.05
done
health=$(curl -s -m 5 "http://127.0.0.1:$port/health" 2>&1) || true
[ "$health" = "ok: 1 feeds running" ] || [ "$health" = "ok: 1 feed running" ] ||
	bad "extracted daemon: /health said '$health'; log: $(cat "$tmp/run.log")"
kill -TERM $dpid 2>/dev/null || true
rc=0
wait $dpid || rc=$?
[ $rc -eq 0 ] || bad "extracted daemon exited $rc after SIGTERM; log: $(cat "$tmp/run.log")"
[ $fail -eq 0 ] && echo "ok: extracted daemon ran the packaged loopback.json: /health '$health', exit 0 on SIGTERM"
for b in "$root"/usr/bin/*; do
	if readelf -d "$b" | grep -Eq 'RPATH|RUNPATH'; then
		bad "$(basename "$b") carries an RPATH/RUNPATH: $(readelf -d "$b" | grep -E 'RPATH|RUNPATH')"
	fi
	libs=$(ldd "$b" 2>&1) || true
	if grep -q "not found" <<<"$libs"; then
		bad "$(basename "$b"): $(grep 'not found' <<<"$libs")"
	fi
done
grep -q "libufconsumer.so.2 => $root/usr/lib/libufconsumer.so.2" <<<"$(ldd "$root/usr/bin/uf-tail")" ||
	bad "uf-tail does not load the packaged libufconsumer: $(ldd "$root/usr/bin/uf-tail" | grep ufconsumer)"
out=$("$root/usr/bin/uf-tail" --help 2>&1) || bad "packaged uf-tail --help exited $?: $out"
[ $fail -eq 0 ] && echo "ok: every packaged binary resolves its libraries; uf-tail runs on the packaged libufconsumer"
# /usr/lib/python3/dist-packages is on Debian python3's path once installed; extracted, put it
# first by hand. No UF_CONSUMER_LIB, no LD_LIBRARY_PATH: the recorded relative path must lead
# to the extracted library, not to one elsewhere on the system.
got=$(cd / && env -i /usr/bin/python3 -c 'import sys; sys.path.insert(0, sys.argv[1])
import uringfeed, uringfeed._lib as l
assert uringfeed.__file__.startswith(sys.argv[1]), uringfeed.__file__
print(l.lib._name); print(l.strerror(-l.EOVERFLOW))' "$root/usr/lib/python3/dist-packages" 2>&1) ||
	bad "packaged Python package does not import: $got"
[ "$(head -1 <<<"$got")" = "$root/usr/lib/libufconsumer.so.2" ] ||
	bad "packaged Python package loaded '$(head -1 <<<"$got")', want $root/usr/lib/libufconsumer.so.2"
[ $fail -eq 0 ] && echo "ok: packaged Python package imports with no environment and loads the packaged library ($(tail -1 <<<"$got"))"
exit $fail
