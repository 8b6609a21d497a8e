#!/usr/bin/env bash
# The README's demo command: installs what is missing (Debian 12, as root), builds, and runs
# uringfeed for real on its embedded default (configs/loopback.json):
#   uf-gen makes a day -> uringfeed (io_uring) joins the A and B lines on loopback ->
#   uf-replay sends the day with 2% loss on each line and serves re-requests ->
#   uf-tail shows a live top of book -> the status endpoint's summary -> the ring's books are
#   compared with the file's -> SIGTERM, clean stop. About 10 s; Ctrl-C stops it early.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
cmake -S . -B build >/dev/null
cmake --build build -j"$(nproc)" >/tmp/uringfeed-demo-build.log 2>&1 ||
	{ tail -40 /tmp/uringfeed-demo-build.log; exit 1; }

bin=build/bin
work=$(mktemp -d /tmp/uringfeed-demo.XXXXXX)
export UF_RING_DIR="$work" # the demo's ring lives with its other files, not in /dev/shm
feed=
tail=
cleanup() {
	[ -n "$tail" ] && kill "$tail" 2>/dev/null
	[ -n "$feed" ] && kill "$feed" 2>/dev/null
	wait 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT
trap 'echo "demo: interrupted"; exit 130' INT TERM

echo "demo: generating a day (200000 messages, 50 symbols)"
$bin/uf-gen --out "$work/day.itch" --messages 200000 --symbols 50 --seed 1
syms=$($bin/uf-decode books "$work/day.itch" --depth 1 | head -3 |
	sed 's/.*"symbol":"\([^"]*\)".*/\1/' | paste -sd, -)

echo "demo: starting uringfeed --config configs/loopback.json (log: $work/uringfeed.log)"
$bin/uringfeed --config configs/loopback.json 2>"$work/uringfeed.log" &
feed=$!
for _ in $(seq 100); do # up to 10 s for the feed to start
	grep -q 'running;' "$work/uringfeed.log" && break
	kill -0 $feed 2>/dev/null || { cat "$work/uringfeed.log"; exit 1; }
	sleep 0.1
done

echo "demo: live top of book for $syms while uf-replay sends the day with 2% loss per line"
$bin/uf-tail --ring nasdaq --top "$syms" --interval 500 &
tail=$!
$bin/uf-replay --in "$work/day.itch" --a 239.1.1.1:30001 --b 239.1.1.2:30002 \
	--interface 127.0.0.1 --rate 50000 --drop-a 0.02 --drop-b 0.02 --seed 1 \
	--serve-rerequests 30100 --linger 1 >"$work/replay.json"
sleep 0.5
kill -INT "$tail" 2>/dev/null || true # one last refresh, then the live view ends
wait "$tail" 2>/dev/null || true
tail=

echo
echo "demo: status endpoint summary (curl http://127.0.0.1:8080/metrics)"
curl -s http://127.0.0.1:8080/metrics |
	grep -E '^uringfeed_(messages|gaps|rerequests|recovered_messages|gaps_unrecovered|decode_errors|book_integrity_errors)_total|^uringfeed_line_(wins|duplicates)_total|^uringfeed_wire_to_publish_(seconds_(sum|count)|max_seconds)|^uringfeed_ring_sequence|^uringfeed_consumer_lag_records|^uringfeed_ready' |
	grep -v 'kind=.*} 0$' || true

echo
echo "demo: books from the ring (uf-tail --books) against the file (uf-decode books), depth 10"
$bin/uf-tail --ring nasdaq --books --depth 10 >"$work/ring-books.jsonl"
$bin/uf-decode books "$work/day.itch" --depth 10 >"$work/file-books.jsonl"
if cmp -s "$work/ring-books.jsonl" "$work/file-books.jsonl"; then
	echo "demo: identical: $(wc -l <"$work/file-books.jsonl") books, every level, share and order count"
else
	echo "demo: BOOKS DIFFER:"
	diff "$work/ring-books.jsonl" "$work/file-books.jsonl" | head -20
fi

echo
echo "demo: stopping uringfeed with SIGTERM (consumers see the ring closed)"
kill -TERM $feed
wait $feed
feed=
tail -3 "$work/uringfeed.log"
