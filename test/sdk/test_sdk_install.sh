#!/usr/bin/env bash
# Install story of libufconsumer, checked the way a user meets it:
#   1. a consumer-only build (-DUF_CONSUMER_ONLY=ON) configures without any of the daemon's
#      libraries, builds, and `cmake --install`s into a temporary prefix;
#   2. every installed header compiles alone as C11 (gcc, clang) and C++17 (g++, clang++)
#      with -Wall -Wextra -Werror -pedantic;
#   3. a tiny consumer (C and C++) builds against the prefix with find_package(ufconsumer),
#      and with pkg-config, all with #include <uringfeed/...>; the C one also through
#      the deprecated "ring/ufconsumer.h" paths (kept until 0.2.0), with both; all of them
#      read the top of book of a live ring;
#   4. the Python package, from a clean environment (env -i: no UF_CONSUMER_LIB, no
#      LD_LIBRARY_PATH, no PYTHONPATH), opens the live ring and reads the same top of book
#      a) as `cmake --install` put it in the prefix (lib/python3/dist-packages, its library
#         found through the relative path recorded at install),
#      b) as `pip install --no-build-isolation --no-index` puts it in a venv (Debian's
#         setuptools as the build backend, the library's path recorded from UF_CONSUMER_LIB
#         during the install), and in each case the library it loaded is the prefix's.
#   5. the full build (BUILD_DIR, already built) installs the same SDK: `cmake --install
#      BUILD_DIR --prefix` into a second prefix gives the same headers, pkg-config file and
#      Python package, and a pkg-config consumer built there reads the ring too.
# Usage: test_sdk_install.sh SOURCE_DIR SDK_PRODUCER PYTHON3 BUILD_DIR
set -euo pipefail
src=$1
producer=$2
python=$3
build=$4
tmp=$(mktemp -d /tmp/uf-sdk-install.XXXXXX)
ring="sdkinst$$"
pid=""
cleanup() {
	exec 3>&- 2>/dev/null || true
	[ -n "$pid" ] && { kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; }
	rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

echo "--- 1. consumer-only build and install"
cmake -S "$src" -B "$tmp/build" -DUF_CONSUMER_ONLY=ON -DUF_WERROR=ON >"$tmp/configure.log" 2>&1 ||
	{ cat "$tmp/configure.log"; fail "consumer-only configure"; }
if grep -Ei "liburing|jansson|cmocka|libnuma|libzmq|microhttpd|clang-format" "$tmp/configure.log"; then
	fail "the consumer-only configure looked for a daemon dependency"
fi
cmake --build "$tmp/build" -j2 >"$tmp/build.log" 2>&1 || { cat "$tmp/build.log"; fail "build"; }
cmake --install "$tmp/build" --prefix "$tmp/prefix" >"$tmp/install.log"
cat "$tmp/install.log"
inc="$tmp/prefix/include"
lib=$(dirname "$(find "$tmp/prefix" -name 'libufconsumer.so.2' | head -1)")
[ -n "$lib" ] || fail "libufconsumer.so.2 not installed"
new_headers=(uringfeed/ufconsumer.h uringfeed/ufbook.h uringfeed/uf_record.h uringfeed/uf_level.h)
old_headers=(ring/ufconsumer.h ring/ufbook.h publish/uf_record.h publish/uf_level.h)
pypkg="$tmp/prefix/lib/python3/dist-packages"
for f in "${new_headers[@]/#/$inc/}" "${old_headers[@]/#/$inc/uringfeed/}" \
	"$pypkg/uringfeed/__init__.py" "$pypkg/uringfeed/_lib.py" "$pypkg/uringfeed/_libpath.py" \
	"$lib/libufconsumer.so" "$lib/pkgconfig/ufconsumer.pc" \
	"$lib/cmake/ufconsumer/ufconsumerConfig.cmake" \
	"$lib/cmake/ufconsumer/ufconsumerConfigVersion.cmake"; do
	[ -f "$f" ] || fail "not installed: $f"
done
# exactly the consumer API is exported, nothing of the internals
if nm -D --defined-only "$lib/libufconsumer.so" | awk '{print $3}' | grep -Ev '^(uf_consumer_|uf_book_builder_)'; then
	fail "libufconsumer exports symbols outside its API"
fi

# the installed headers name no source-tree folder: each includes its siblings by file name
if grep -En '#[[:space:]]*include[[:space:]]*"[^"]*/' "${new_headers[@]/#/$inc/}"; then
	fail "an installed header includes a source-tree path"
fi

echo "--- 2. installed headers as C11 and C++17, by the new and by the deprecated paths"
# <uringfeed/...> with -I PREFIX/include alone; the deprecated paths with the extra
# -I PREFIX/include/uringfeed that pkg-config and find_package give until 0.2.0
for h in "${new_headers[@]}" "${old_headers[@]}"; do
	flags=(-Wall -Wextra -Werror -pedantic -fsyntax-only -I"$inc")
	case $h in
	uringfeed/*) printf '#include <%s>\n' "$h" >"$tmp/one.c" ;;
	*)
		printf '#include "%s"\n' "$h" >"$tmp/one.c"
		flags+=(-I"$inc/uringfeed")
		;;
	esac
	cp "$tmp/one.c" "$tmp/one.cpp"
	for cc in gcc clang; do
		$cc -std=c11 "${flags[@]}" "$tmp/one.c" || fail "$h as C11 with $cc"
	done
	for cxx in g++ clang++; do
		$cxx -std=c++17 "${flags[@]}" "$tmp/one.cpp" || fail "$h as C++17 with $cxx"
	done
	echo "ok $h: gcc clang -std=c11, g++ clang++ -std=c++17"
done

echo "--- 3. tiny consumers against the prefix, reading a live ring"
cmake -S "$src/test/sdk/install_consumer" -B "$tmp/cons" -DCMAKE_PREFIX_PATH="$tmp/prefix" \
	>"$tmp/cons.log" 2>&1 || { cat "$tmp/cons.log"; fail "find_package(ufconsumer) project"; }
cmake --build "$tmp/cons" >>"$tmp/cons.log" 2>&1 || { cat "$tmp/cons.log"; fail "tiny build"; }
# examples/ builds standalone against the prefix too (what docs/consumers.md promises)
cmake -S "$src/examples" -B "$tmp/examples" -DCMAKE_PREFIX_PATH="$tmp/prefix" >>"$tmp/cons.log" 2>&1 &&
	cmake --build "$tmp/examples" >>"$tmp/cons.log" 2>&1 || { cat "$tmp/cons.log"; fail "examples against the prefix"; }
[ -x "$tmp/examples/examples/minimal_consumer" ] && [ -x "$tmp/examples/examples/book_consumer" ] ||
	fail "examples not built against the prefix"
export PKG_CONFIG_PATH="$lib/pkgconfig"
# shellcheck disable=SC2046
cc -std=c11 -Wall -Wextra -Werror -pedantic -o "$tmp/tiny_pc" "$src/test/sdk/install_consumer/tiny.c" \
	$(pkg-config --cflags --libs ufconsumer) || fail "pkg-config build"
# shellcheck disable=SC2046
c++ -std=c++17 -Wall -Wextra -Werror -pedantic -o "$tmp/tiny_cpp_pc" \
	"$src/test/sdk/install_consumer/tiny_cpp.cpp" $(pkg-config --cflags --libs ufconsumer) ||
	fail "pkg-config build (C++)"
# shellcheck disable=SC2046
cc -std=c11 -Wall -Wextra -Werror -pedantic -DTINY_OLD_INCLUDE_PATHS -o "$tmp/tiny_old_pc" \
	"$src/test/sdk/install_consumer/tiny.c" $(pkg-config --cflags --libs ufconsumer) ||
	fail "pkg-config build through the deprecated include paths"

mkfifo "$tmp/in"
"$producer" --ring "$ring" <"$tmp/in" >"$tmp/producer.out" &
pid=$!
exec 3>"$tmp/in" # the producer keeps the ring until this closes
for _ in $(seq 1 200); do
	grep -q live "$tmp/producer.out" && break
	kill -0 "$pid" 2>/dev/null || fail "producer died"
	sleep 0.05
done
grep -q live "$tmp/producer.out" || fail "producer not ready in 10 s"
want="AAPL bid 1500050 400 ask 1500100 300"
LD_LIBRARY_PATH="$lib" "$tmp/examples/examples/book_consumer" "$ring" 100 | grep -qx "top AAPL 150.0050 400 150.0100 300" ||
	fail "book_consumer built against the prefix"
for t in "$tmp/cons/tiny" "$tmp/cons/tiny_cpp" "$tmp/cons/tiny_old" "$tmp/tiny_pc" "$tmp/tiny_cpp_pc" \
	"$tmp/tiny_old_pc"; do
	got=$(LD_LIBRARY_PATH="$lib" "$t" "$ring" AAPL) || fail "$t exited $?"
	[ "$got" = "$want" ] || fail "$t printed '$got', want '$want'"
	echo "ok $(basename "$t"): $got"
done
# the installed rpath-less find_package build runs too: CMake put the prefix in its RUNPATH
"$tmp/cons/tiny" "$ring" MSFT | grep -qx "MSFT bid 4100000 50 ask 4100500 20" || fail "tiny MSFT"

echo "--- 4. the Python package from a clean environment: installed by cmake, and by pip"
# prints "LIBRARY_PATH\nAAPL bid PRICE SHARES ask PRICE SHARES" from the ring's image
cat >"$tmp/top.py" <<'PY'
import sys
if len(sys.argv) > 2:
    sys.path.insert(0, sys.argv[2])  # the prefix's dist-packages (no PYTHONPATH)
import uringfeed
from uringfeed import _lib
with uringfeed.Consumer(sys.argv[1]) as c:
    s = c.snapshot(c.lookup("AAPL"))
    print(_lib.lib._name)
    print("AAPL bid %d %d ask %d %d" % (s.bid[0][0], s.bid[0][1], s.ask[0][0], s.ask[0][1]))
print(uringfeed.__file__, file=sys.stderr)
PY
check_py() { # what, output of top.py
	[ "$(sed -n 2p <<<"$2")" = "$want" ] || fail "$1: printed '$2', want '$want'"
	[ "$(realpath "$(sed -n 1p <<<"$2")")" = "$(realpath "$lib/libufconsumer.so.2")" ] ||
		fail "$1 loaded $(sed -n 1p <<<"$2"), not the prefix's library"
	echo "ok $1: $(sed -n 2p <<<"$2")"
}
out=$(cd / && env -i "$python" "$tmp/top.py" "$ring" "$pypkg" 2>"$tmp/py.err") ||
	{ cat "$tmp/py.err"; fail "python from the cmake-installed prefix"; }
grep -q "^$pypkg/uringfeed/__init__.py" "$tmp/py.err" || fail "imported $(cat "$tmp/py.err"), not the prefix's"
check_py "python (cmake --install)" "$out"
# pip: a copy of python/ (pip builds in the folder it is given), a venv that sees Debian's
# setuptools (--system-site-packages); no registry is reachable, so nothing is fetched
cp -r "$src/python" "$tmp/pysrc"
rm -rf "$tmp/pysrc/build" "$tmp/pysrc"/*.egg-info
"$python" -m venv --system-site-packages "$tmp/venv" || fail "python3 -m venv"
UF_CONSUMER_LIB="$lib/libufconsumer.so.2" "$tmp/venv/bin/python" -m pip install --no-build-isolation \
	--no-index --no-cache-dir -q "$tmp/pysrc" >"$tmp/pip.log" 2>&1 || { cat "$tmp/pip.log"; fail "pip install"; }
out=$(cd / && env -i "$tmp/venv/bin/python" "$tmp/top.py" "$ring" 2>"$tmp/py.err") ||
	{ cat "$tmp/py.err"; fail "python from the pip-installed venv"; }
grep -q "^$tmp/venv/lib/python3[^/]*/site-packages/uringfeed/__init__.py" "$tmp/py.err" ||
	fail "imported $(cat "$tmp/py.err"), not the venv's"
check_py "python (pip install into a venv)" "$out"

echo "--- 5. the full build's cmake --install gives the same SDK"
cmake --install "$build" --prefix "$tmp/full" >"$tmp/full.log" 2>&1 || { cat "$tmp/full.log"; fail "full install"; }
flib=$(dirname "$(find "$tmp/full" -name 'libufconsumer.so.2' | head -1)")
[ -n "$flib" ] || fail "the full install has no libufconsumer.so.2"
diff -r "$inc/uringfeed" "$tmp/full/include/uringfeed" || fail "headers differ between the installs"
diff -r -x __pycache__ "$pypkg/uringfeed" "$tmp/full/lib/python3/dist-packages/uringfeed" ||
	fail "Python packages differ between the installs"
diff "$lib/pkgconfig/ufconsumer.pc" "$flib/pkgconfig/ufconsumer.pc" || fail "ufconsumer.pc differs"
# shellcheck disable=SC2046
cc -std=c11 -Wall -Wextra -Werror -pedantic -o "$tmp/tiny_full" "$src/test/sdk/install_consumer/tiny.c" \
	$(PKG_CONFIG_PATH="$flib/pkgconfig" pkg-config --cflags --libs ufconsumer) || fail "full-prefix build"
got=$(LD_LIBRARY_PATH="$flib" "$tmp/tiny_full" "$ring" AAPL) || fail "tiny_full exited $?"
[ "$got" = "$want" ] || fail "tiny_full printed '$got', want '$want'"
echo "ok tiny_full: $got"

exec 3>&-
wait "$pid" || fail "producer exit status"
pid=""
echo "PASS"
