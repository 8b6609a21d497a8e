#!/usr/bin/env bash
# tools/soak.sh as a developer runs it (ops_soak):
# 1. its verdict on crafted book files: identical is 0; a book that differs and says
#    "stale":true is "marked", still 0; one that differs silently is UNMARKED: exit 1;
# 2. a day whose lines both lose datagrams with no re-request and no snapshot server (gaps
#    for good): the feed marks books stale, none differs unmarked;
# 3. a day with a SIGKILL and restart mid-day, re-requests served: none differs unmarked.
#   check_soak.sh SOURCE_DIR BIN_DIR
set -euo pipefail
src=$1
export UF_BIN_DIR=$2
soak=$src/tools/soak.sh
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

day='{"symbol":"AA","bid":[[100,5,1]],"ask":[]}'
echo "$day" >"$tmp/day"
echo "$day" >"$tmp/same"
echo '{"symbol":"AA","bid":[[100,4,1]],"ask":[],"stale":true}' >"$tmp/marked"
echo '{"symbol":"AA","bid":[[100,4,1]],"ask":[]}' >"$tmp/silent"
out=$(bash "$soak" --compare "$tmp/same" "$tmp/day") || fail "identical books: exit $?"
grep -q "same 1, marked 0, UNMARKED 0" <<<"$out" || fail "identical: $out"
out=$(bash "$soak" --compare "$tmp/marked" "$tmp/day") || fail "marked book: exit $?"
grep -q "same 0, marked 1, UNMARKED 0" <<<"$out" || fail "marked: $out"
rc=0
out=$(bash "$soak" --compare "$tmp/silent" "$tmp/day") || rc=$?
[ "$rc" = 1 ] || fail "a silently different book: exit $rc, wanted 1"
grep -q "UNMARKED 1" <<<"$out" || fail "silent: $out"
# a book with no symbol (its directory never reached the feed) matches nothing: it must say
# it may be wrong, and then the day's book it stands for counts as marked
echo '{"symbol":"","bid":[[100,4,1]],"ask":[],"stale":true}' >"$tmp/nameless"
out=$(bash "$soak" --compare "$tmp/nameless" "$tmp/day") || fail "nameless marked: exit $?"
grep -q "same 0, marked 2, UNMARKED 0" <<<"$out" || fail "nameless marked: $out"
echo '{"symbol":"","bid":[[100,4,1]],"ask":[]}' >"$tmp/nameless"
rc=0
out=$(bash "$soak" --compare "$tmp/nameless" "$tmp/day") || rc=$?
[ "$rc" = 1 ] || fail "a nameless book that does not say so: exit $rc, wanted 1"
echo "verdicts: ok"

# 10 % loss a line: ~1 % of the ~1400 datagrams lost on both, gaps for good
out=$(bash "$soak" --runs 1 --messages 60000 --symbols 40 --rate 60000 --loss 0.1 \
	--no-recovery --no-snapshot --seed 7) || fail "gaps for good: exit $?: $out"
echo "$out"
grep -q ", UNMARKED 0 (" <<<"$out" || fail "gaps for good: $out"
n=$(sed -nE 's/.*\(([0-9]+) marked stale\).*/\1/p' <<<"$out" | head -1)
[ "${n:-0}" -gt 0 ] || fail "no book marked stale after gaps for good: $out"

out=$(bash "$soak" --runs 1 --messages 60000 --symbols 40 --rate 60000 --loss 0.05 \
	--restart --no-snapshot --backends recvmmsg --seed 8) || fail "restart: exit $?: $out"
echo "$out"
grep -q ", UNMARKED 0 (" <<<"$out" || fail "restart: $out"
echo "ok"
