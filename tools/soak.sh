#!/usr/bin/env bash
# The product's promise under faults, end to end: no book the feed publishes differs from the
# day's books without saying "stale":true.
#
# Each run: uf-gen makes a day; uf-replay sends it on two loopback multicast lines with loss
# on both, duplicates and reordering, serves MoldUDP64 re-requests (unless --no-recovery: a
# datagram both lines lose is then a gap for good) and GLIMPSE snapshots (unless
# --no-snapshot); uringfeed, on a config made from configs/loopback.json with this
# run's back end, groups and ports, receives it; with --restart it is SIGKILLed at 40 % of
# the day and started again (a restart with no snapshot server cannot know the orders it
# missed: its books must say so). After the day: `uf-tail --books` of its ring against
# `uf-decode books` of the day. Each book is "same", "marked" (differs and says
# "stale":true) or UNMARKED (differs and does not: the failure).
#
#   tools/soak.sh [--runs N] [--messages N] [--symbols N] [--rate R] [--loss P]
#                 [--backends LIST] [--restart] [--no-snapshot] [--no-recovery] [--seed S]
#   tools/soak.sh --compare RING_BOOKS FILE_BOOKS     the verdict alone, on two files
#
# Prints a line per run and a summary. Exit 0 when every run completed and no book was
# unmarked, 1 otherwise, 2 on bad usage. Needs a build (build/bin, or $UF_BIN_DIR);
# UF_SOAK_KEEP=1 keeps the runs' files (configs, logs, books).
set -uo pipefail
cd "$(dirname "$0")/.."
bin=${UF_BIN_DIR:-build/bin}

usage() {
	cat >&2 <<'USAGE'
usage: tools/soak.sh [--runs N] [--messages N] [--symbols N] [--rate R] [--loss P]
                     [--backends LIST] [--restart] [--no-snapshot] [--no-recovery] [--seed S]
       tools/soak.sh --compare RING_BOOKS FILE_BOOKS
USAGE
	exit 2
}

# The verdict on two `--books` outputs: counts, and exit 1 when a book is unmarked.
compare() {
	python3 - "$1" "$2" <<'EOF'
import json, sys
def books(path):
    out, unnamed = {}, []
    with open(path) as f:
        for line in f:
            b = json.loads(line)
            if b["symbol"]:
                out[b["symbol"]] = b
            else:
                unnamed.append(b)
    return out, unnamed
(ring, nameless), (day, _) = books(sys.argv[1]), books(sys.argv[2])
empty = {"bid": [], "ask": []}
same = marked = unmarked = stale = 0
# A book with no symbol (its directory entry never reached this feed: a restart with neither
# snapshot nor re-requests) matches no book of the day: marked when it says it may be wrong,
# UNMARKED when it does not. Books of the day it may be stand in `day` as missing from the ring,
# which only such books explain, so they count as marked when every nameless book is.
for b in nameless:
    stale += bool(b.get("stale"))
    if b.get("stale"):
        marked += 1
    else:
        unmarked += 1
        if unmarked <= 3:
            print("UNMARKED (no symbol): ring %s" % json.dumps(b))
covered = bool(nameless) and all(b.get("stale") for b in nameless)
for sym in sorted(set(ring) | set(day)):
    r, d = ring.get(sym, empty), day.get(sym, empty)
    stale += bool(r.get("stale"))
    if r["bid"] == d["bid"] and r["ask"] == d["ask"]:
        same += 1
    elif r.get("stale") or (sym not in ring and covered):
        marked += 1
    else:
        unmarked += 1
        if unmarked <= 3:
            print("UNMARKED %s: ring %s, day %s" % (sym, json.dumps(r), json.dumps(d)))
print("books %d (%d without a symbol): same %d, marked %d, UNMARKED %d (%d marked stale)" %
      (same + marked + unmarked, len(nameless), same, marked, unmarked, stale))
sys.exit(1 if unmarked else 0)
EOF
}

runs=4 msgs=300000 syms=200 rate=150000 loss=0.05 backends=io_uring_nosqpoll,recvmmsg,epoll
restart=0 snap=1 recovery=1 seed=1
while [ $# -gt 0 ]; do
	case $1 in
	--compare) [ $# -eq 3 ] || usage; compare "$2" "$3"; exit $? ;;
	--runs) runs=$2; shift 2 ;;
	--messages) msgs=$2; shift 2 ;;
	--symbols) syms=$2; shift 2 ;;
	--rate) rate=$2; shift 2 ;;
	--loss) loss=$2; shift 2 ;;
	--backends) backends=$2; shift 2 ;;
	--restart) restart=1; shift ;;
	--no-snapshot) snap=0; shift ;;
	--no-recovery) recovery=0; shift ;;
	--seed) seed=$2; shift 2 ;;
	*) echo "soak: unknown argument $1" >&2; usage ;;
	esac
done
for v in "$runs" "$msgs" "$syms" "$rate" "$seed"; do
	[[ $v =~ ^[1-9][0-9]*$ ]] || { echo "soak: $v is not a positive integer" >&2; exit 2; }
done
[[ $loss =~ ^0?\.[0-9]+$|^0$ ]] || { echo "soak: --loss wants a probability, got $loss" >&2; exit 2; }
for b in ${backends//,/ }; do
	case $b in io_uring | io_uring_nosqpoll | recvmmsg | epoll) ;;
	*) echo "soak: unknown back end $b" >&2; exit 2 ;; esac
done
for t in uf-gen uf-replay uringfeed uf-tail uf-decode; do
	[ -x "$bin/$t" ] || { echo "soak: $bin/$t is not built" >&2; exit 2; }
done
command -v jq >/dev/null || { echo "soak: jq not found (tools/setup.sh installs it)" >&2; exit 2; }

# Groups and ports of this process: runs of two soaks at once do not meet.
base=$((20000 + ($$ % 4000) * 10))
ga=239.193.$((($$ >> 8) & 255)).$(($$ & 255))
gb=239.194.$((($$ >> 8) & 255)).$(($$ & 255))
work=$(mktemp -d /tmp/uf-soak.XXXXXX)
export UF_RING_DIR=$work
feed= replay=
cleanup() {
	[ -n "$feed" ] && kill -KILL "$feed" 2>/dev/null
	[ -n "$replay" ] && kill -KILL "$replay" 2>/dev/null
	wait 2>/dev/null
	if [ -n "${UF_SOAK_KEEP:-}" ]; then echo "soak: kept $work" >&2; else rm -rf "$work"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

start_feed() { # $1 config, $2 log; returns once its loop runs (at most 20 s)
	"$bin/uringfeed" --config "$1" 2>"$2" &
	feed=$!
	for _ in $(seq 200); do
		grep -q 'running;' "$2" && return 0
		kill -0 "$feed" 2>/dev/null || break
		sleep 0.1
	done
	echo "soak: uringfeed did not start:" >&2
	tail -5 "$2" >&2
	return 1
}

metric() { # the daemon's metric $1 (first sample), 0 when absent
	local v
	v=$(curl -s "http://127.0.0.1:$((base + 5))/metrics" |
		awk -v m="$1" 'index($1, m "{") == 1 || $1 == m {print $2; exit}')
	echo "${v:-0}"
}

failed=0 total_unmarked=0 total_marked=0
IFS=, read -ra bes <<<"$backends"
for ((i = 0; i < runs; i++)); do
	s=$((seed + i)) be=${bes[$((i % ${#bes[@]}))]}
	dir=$work/run$i
	mkdir -p "$dir"
	jq --arg be "$be" --arg ga "$ga" --arg gb "$gb" --argjson p "$base" --arg ring "soak$$" \
		--argjson snap "$snap" --argjson rec "$recovery" \
		'.status.listen = "127.0.0.1:\($p + 5)" |
		 .feeds[0].backend = $be | .feeds[0].ring.name = $ring |
		 .feeds[0].lines[0].group = $ga | .feeds[0].lines[0].port = $p + 1 |
		 .feeds[0].lines[1].group = $gb | .feeds[0].lines[1].port = $p + 2 |
		 .feeds[0].recovery.server = "127.0.0.1:\($p + 3)" |
		 .feeds[0].snapshot.server = "127.0.0.1:\($p + 4)" |
		 if $snap == 1 then . else del(.feeds[0].snapshot) end |
		 if $rec == 1 then . else del(.feeds[0].recovery) end' configs/loopback.json >"$dir/c.json"
	"$bin/uf-gen" --out "$dir/day.itch" --messages "$msgs" --symbols "$syms" --seed "$s" >/dev/null ||
		{ echo "soak: uf-gen failed" >&2; exit 1; }
	start_feed "$dir/c.json" "$dir/feed.log" || { failed=1; break; }
	serve=()
	[ "$snap" = 1 ] && serve+=(--serve-snapshot $((base + 4)))
	[ "$recovery" = 1 ] && serve+=(--serve-rerequests $((base + 3)))
	"$bin/uf-replay" --in "$dir/day.itch" --a "$ga:$((base + 1))" --b "$gb:$((base + 2))" \
		--interface 127.0.0.1 --rate "$rate" --drop-a "$loss" --drop-b "$loss" --dup 0.02 \
		--reorder 0.03 --seed "$s" "${serve[@]}" \
		--linger 3 >"$dir/replay.json" 2>"$dir/replay.err" &
	replay=$!
	if [ "$restart" = 1 ]; then
		sleep "$(awk -v m="$msgs" -v r="$rate" 'BEGIN {printf "%.2f", 0.4 * m / r}')"
		kill -KILL "$feed"
		wait "$feed" 2>/dev/null
		start_feed "$dir/c.json" "$dir/feed2.log" || { failed=1; break; }
	fi
	wait "$replay" || { echo "soak: uf-replay failed:" >&2; tail -3 "$dir/replay.err" >&2; failed=1; }
	replay=
	# settled: the ring's tail has not moved for a second (at most 20 s)
	last=-1
	for _ in $(seq 20); do
		now=$(metric uringfeed_ring_sequence)
		[ "$now" = "$last" ] && break
		last=$now
		sleep 1
	done
	stale=$(metric uringfeed_books_stale)
	unrec=$(metric uringfeed_messages_unrecovered_total)
	"$bin/uf-tail" --ring "soak$$" --books --depth 10 >"$dir/ring.jsonl" 2>/dev/null
	"$bin/uf-decode" books "$dir/day.itch" --depth 10 >"$dir/day.jsonl"
	kill -TERM "$feed"
	wait "$feed" 2>/dev/null
	feed=
	verdict=$(compare "$dir/ring.jsonl" "$dir/day.jsonl")
	rc=$?
	echo "run $i seed $s $be: $(tail -1 <<<"$verdict"); feed: $stale books stale, $unrec messages unrecovered"
	[ $rc -ne 0 ] && { head -n -1 <<<"$verdict"; failed=1; }
	m=$(tail -1 <<<"$verdict" | sed -E 's/.*marked ([0-9]+), UNMARKED ([0-9]+).*/\1 \2/')
	total_marked=$((total_marked + ${m% *}))
	total_unmarked=$((total_unmarked + ${m#* }))
	rm -f "$dir/day.itch"
done
echo "soak: $runs runs of $msgs messages, loss $loss a line$([ "$restart" = 1 ] && echo ", a restart each")$([ "$snap" = 0 ] && echo ", no snapshot server")$([ "$recovery" = 0 ] && echo ", no re-requests"): $total_marked books differing and marked, $total_unmarked UNMARKED"
exit $failed
