#!/usr/bin/env bash
# Install story of libufconsumer, checked the way a user meets it:
#   1. a consumer-only build (-DUF_CONSUMER_ONLY=ON) configures without any of the daemon's
#      libraries, builds, and `cmake --install`s into a temporary prefix;
#   2. every installed header compiles alone as C11 (gcc, clang) and C++17 (g++, clang++)
#      with -Wall -Wextra -Werror -pedantic;
#   3. a tiny consumer (C and C++) builds against the prefix with find_package(ufconsumer),
#      and with pkg-config, all with #include <uringfeed/...>; the C one also through
#      the deprecated "ring/ufconsumer.h" paths (kept until 0.2.0), with both; all of them
#      read the top of book of a live ring.
# Usage: test_sdk_install.sh SOURCE_DIR SDK_PRODUCER
set -euo pipefail
src=$1
producer=$2
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
lib=$(dirname "$(find "$tmp/prefix" -name 'libufconsumer.so.1' | head -1)")
[ -n "$lib" ] || fail "libufconsumer.so.1 not installed"
new_headers=(uringfeed/ufconsumer.h uringfeed/ufbook.h uringfeed/uf_record.h uringfeed/uf_level.h)
old_headers=(ring/ufconsumer.h ring/ufbook.h publish/uf_record.h publish/uf_level.h)
for f in "${new_headers[@]/#/$inc/}" "${old_headers[@]/#/$inc/uringfeed/}" \
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
exec 3>&-
wait "$pid" || fail "producer exit status"
pid=""
echo "PASS"
