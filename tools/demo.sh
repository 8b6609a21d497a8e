#!/usr/bin/env bash
# The README's demo command: installs what is missing (Debian 12, as root), builds, and runs
# uringfeed for real on its embedded default (configs/loopback.json):
#   uf-gen makes a day -> uf-replay sends it with 2% loss on each line, serves re-requests and
#   GLIMPSE snapshots -> uringfeed (io_uring) joins the A and B lines on loopback ->
#   uf-tail shows a live top of book -> mid-day uringfeed is SIGKILLed and restarted: it loads
#   the snapshot and continues with the lines, uf-tail re-attaches -> the status endpoint's
#   summary -> the ring's books are compared with the file's -> SIGTERM, clean stop.
# The same daemon runs a second venue: the "iex" feed of configs/two-venues.json (IEX DEEP over
# IEX-TP, its own ring) is added to that config; after the restart uf-replay sends the real
# DEEP capture ($UF_SHARED_DATA or ../shared/data, /iex, when present) with 2% loss on line A (IEX has no recovery
# service: line B fills the holes), and the iex ring's books are compared with
# `uf-decode books` of the capture as the Nasdaq ones are. Without the capture the IEX part
# is skipped (the project has no IEX-TP generator) and the demo says so.
#   About 20 s; Ctrl-C stops it early.
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
replay=
cleanup() {
	[ -n "$tail" ] && kill "$tail" 2>/dev/null
	[ -n "$feed" ] && kill "$feed" 2>/dev/null
	[ -n "$replay" ] && kill "$replay" 2>/dev/null
	wait 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT
trap 'echo "demo: interrupted"; exit 130' INT TERM

config=configs/loopback.json
deep=${UF_SHARED_DATA:-../shared/data}/iex/iex-deep-1.0-20170425.pcap.gz
if [ -f "$deep" ]; then
	config="$work/demo.json" # loopback.json + the iex feed of two-venues.json: one daemon
	jq --slurpfile v configs/two-venues.json \
		'.feeds += [$v[0].feeds[] | select(.name == "iex")]' configs/loopback.json >"$config"
else
	echo "demo: $deep absent: Nasdaq only (no IEX-TP generator in the project)"
	deep=
fi

echo "demo: generating a day (200000 messages, 50 symbols)"
$bin/uf-gen --out "$work/day.itch" --messages 200000 --symbols 50 --seed 1
syms=$($bin/uf-decode books "$work/day.itch" --depth 1 | head -3 |
	sed 's/.*"symbol":"\([^"]*\)".*/\1/' | paste -sd, -)

start_feed() { # $1: log file; returns when the feed thread runs
	$bin/uringfeed --config "$config" 2>"$1" &
	feed=$!
	for _ in $(seq 100); do # up to 10 s for the feed to start
		grep -q 'running;' "$1" && return 0
		kill -0 $feed 2>/dev/null || { cat "$1"; exit 1; }
		sleep 0.1
	done
}

echo "demo: uf-replay sends the day at 25000 msg/s with 2% loss per line, serves re-requests"
echo "      (port 30100) and GLIMPSE snapshots (port 30200)"
$bin/uf-replay --in "$work/day.itch" --a 239.1.1.1:30001 --b 239.1.1.2:30002 \
	--interface 127.0.0.1 --rate 25000 --drop-a 0.02 --drop-b 0.02 --seed 1 \
	--serve-rerequests 30100 --serve-snapshot 30200 --linger 2 \
	>"$work/replay.json" 2>"$work/replay.err" &
replay=$!

echo "demo: starting uringfeed --config $config (log: $work/uringfeed.log)"
start_feed "$work/uringfeed.log"

echo "demo: live top of book for $syms"
$bin/uf-tail --ring nasdaq --top "$syms" --interval 500 &
tail=$!
sleep 3
echo
echo "demo: SIGKILL uringfeed mid-day (pid $feed), then start it again with the same config"
kill -KILL $feed
wait $feed 2>/dev/null || true
sleep 1 # the lines go on without it
start_feed "$work/uringfeed-2.log"
for _ in $(seq 100); do # the snapshot loads in well under a second
	grep -q 'snapshot loaded' "$work/uringfeed-2.log" && break
	sleep 0.1
done
grep -h 'snapshot' "$work/uringfeed-2.log" | sed 's/^/demo:   /' || true
wait "$replay"
replay=
if [ -n "$deep" ]; then
	echo "demo: uf-replay sends the IEX DEEP capture (121314 segments) at 60000 msg/s to the"
	echo "      iex feed (239.1.2.1:30011 / 239.1.2.2:30012), 2% loss on line A"
	$bin/uf-replay --in "$deep" --a 239.1.2.1:30011 --b 239.1.2.2:30012 \
		--interface 127.0.0.1 --rate 60000 --drop-a 0.02 --seed 1 >"$work/replay-iex.json"
	sed 's/^/demo:   /' "$work/replay-iex.json"
fi
sleep 0.5
kill -INT "$tail" 2>/dev/null || true # one last refresh, then the live view ends
wait "$tail" 2>/dev/null || true
tail=

echo
echo "demo: status endpoint summary (curl http://127.0.0.1:8080/metrics)"
curl -s http://127.0.0.1:8080/metrics |
	grep -E '^uringfeed_(messages|gaps|rerequests|recovered_messages|gaps_unrecovered|decode_errors|book_integrity_errors|snapshots_loaded|snapshot_messages|snapshot_last_duration_ns|snapshot_failures)_total|^uringfeed_line_(wins|duplicates)_total|^uringfeed_wire_to_publish_(seconds_(sum|count)|max_seconds)|^uringfeed_ring_sequence|^uringfeed_consumer_lag_records|^uringfeed_ready' |
	grep -v 'kind=.*} 0$' || true

# Books the ring and the file both mark "stale":true (the book may be wrong: the input itself
# removed an order or a level it never showed) are said, not hidden.
stale_note() {
	local n
	n=$(grep -c '"stale":true' "$1" || true)
	[ "$n" -gt 0 ] && echo " ($n marked stale by both: the input touches what it never showed)"
	return 0
}

echo
echo "demo: books from the ring (uf-tail --books) against the file (uf-decode books), depth 10"
$bin/uf-tail --ring nasdaq --books --depth 10 >"$work/ring-books.jsonl" 2>/dev/null
$bin/uf-decode books "$work/day.itch" --depth 10 >"$work/file-books.jsonl"
if cmp -s "$work/ring-books.jsonl" "$work/file-books.jsonl"; then
	echo "demo: identical: $(wc -l <"$work/file-books.jsonl") books, every level, share and order count$(stale_note "$work/file-books.jsonl")"
else
	echo "demo: BOOKS DIFFER:"
	diff "$work/ring-books.jsonl" "$work/file-books.jsonl" | head -20
fi

if [ -n "$deep" ]; then
	echo "demo: IEX books from the iex ring against the capture (uf-decode books), depth 10"
	$bin/uf-tail --ring iex --books --depth 10 >"$work/ring-iex.jsonl" 2>/dev/null
	$bin/uf-decode books "$deep" --depth 10 >"$work/file-iex.jsonl" 2>/dev/null || true
	if cmp -s "$work/ring-iex.jsonl" "$work/file-iex.jsonl"; then
		echo "demo: identical: $(wc -l <"$work/file-iex.jsonl") IEX books, every level and size$(stale_note "$work/file-iex.jsonl")"
	else
		echo "demo: IEX BOOKS DIFFER:"
		diff "$work/ring-iex.jsonl" "$work/file-iex.jsonl" | head -20
	fi
fi

echo
echo "demo: stopping uringfeed with SIGTERM (consumers see the ring closed)"
kill -TERM $feed
wait $feed
feed=
tail -3 "$work/uringfeed-2.log"
