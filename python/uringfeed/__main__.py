"""python3 -m uringfeed COMMAND --ring NAME ...

  books   [--depth N]            the book image as JSON lines, exactly as `uf-tail --books`
                                 ("stale":true: may be wrong; "truncated":true: cut short)
  records [--count N] [--timeout S] [--oldest | --from-start]   records as JSON lines
          (--from-start: the day from the producer's journal, then live)

Exit 0, 1 on errors (message on stderr), 2 on bad usage.
"""
import argparse
import json
import sys

from . import (BOOKF_STALE, BOOKF_TRUNCATED_ASK, BOOKF_TRUNCATED_BID, Consumer, UfError,
               KIND_NAMES)


def json_str(b):
    """The JSON string of symbol bytes, escaped as uf-tail does it (bytewise)."""
    out = ['"']
    for ch in b:
        if ch in (0x22, 0x5C):
            out.append("\\" + chr(ch))
        elif ch < 0x20 or ch >= 0x7F:
            out.append("\\u%04x" % ch)
        else:
            out.append(chr(ch))
    out.append('"')
    return "".join(out)


def side_json(levels, depth):
    if depth:
        levels = levels[:depth]
    return "[" + ",".join("[%d,%d,%d]" % lv for lv in levels) + "]"


def cut_short(flags, cut, levels, depth):
    """A side the image cut at its depth, printed shorter than asked (depth 0: every level)."""
    return bool(flags & cut) and (depth == 0 or depth > len(levels))


def book_json(s, depth):
    """One book line as uf-tail prints it: "stale":true when the book may be wrong,
    "truncated":true when a side has more levels than the image holds and more were asked."""
    line = '{"symbol":%s,"bid":%s,"ask":%s' % (
        json_str(s.symbol_bytes), side_json(s.bid, depth), side_json(s.ask, depth))
    if s.flags & BOOKF_STALE:
        line += ',"stale":true'
    if cut_short(s.flags, BOOKF_TRUNCATED_BID, s.bid, depth) or \
            cut_short(s.flags, BOOKF_TRUNCATED_ASK, s.ask, depth):
        line += ',"truncated":true'
    return line + "}\n"


def shown(s):
    """The books uf-tail --books prints: those with a level, and the empty ones in doubt that
    have a symbol (the day may have orders there)."""
    return bool(s.bid or s.ask or (s.flags & BOOKF_STALE and s.symbol_bytes))


def render_books(snaps, depth=0):
    """uf-tail --books lines: non-empty books and empty named ones in doubt, sorted by symbol
    bytes, then id."""
    books = [s for s in snaps if shown(s)]
    books.sort(key=lambda s: (s.symbol_bytes, s.instrument))
    return "".join(book_json(s, depth) for s in books)


def cmd_books(a):
    with Consumer(a.ring, tag="py-books", dir=a.dir) as c:
        snaps = c.snapshot_all()
    sys.stdout.write(render_books(snaps, a.depth))
    books = [s for s in snaps if shown(s)]
    stale = sum(1 for s in books if s.flags & BOOKF_STALE)
    if stale:
        sys.stdout.flush()
        sys.stderr.write('uringfeed: %d of %d books are stale ("stale":true): they may be wrong '
                         'until the feed recovers them\n' % (stale, len(books)))
    return 0


def cmd_records(a):
    n = 0
    start = "journal" if a.from_start else "oldest" if a.oldest else "latest"
    with Consumer(a.ring, start=start, tag="py-records",
                  dir=a.dir) as c:
        for r in c.records(timeout=a.timeout):
            print(json.dumps({"seq": r.seq, "kind": KIND_NAMES.get(r.kind, "?"),
                              "instrument": r.instrument,
                              "side": chr(r.side) if r.side else "-", "flags": r.flags,
                              "price": r.price, "shares": r.shares, "orders_aux": r.orders,
                              "ref": r.ref, "exch_ts": r.exch_ts, "rx_ts": r.rx_ts,
                              "feed_seq": r.feed_seq}, separators=(",", ":")))
            n += 1
            if a.count and n >= a.count:
                break
    return 0


def depth_arg(v):
    d = int(v)
    if not 1 <= d <= 64:
        raise argparse.ArgumentTypeError("depth must be 1..64")
    return d


def main(argv=None):
    p = argparse.ArgumentParser(prog="python3 -m uringfeed")
    sub = p.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("books", help="book image as JSON lines (as uf-tail --books)")
    b.add_argument("--ring", required=True)
    b.add_argument("--depth", type=depth_arg, default=0)
    b.add_argument("--dir")
    r = sub.add_parser("records", help="records as JSON lines")
    r.add_argument("--ring", required=True)
    r.add_argument("--count", type=int, default=0)
    r.add_argument("--timeout", type=float, default=None)
    r.add_argument("--oldest", action="store_true")
    r.add_argument("--from-start", action="store_true")
    r.add_argument("--dir")
    a = p.parse_args(argv)
    try:
        return cmd_books(a) if a.cmd == "books" else cmd_records(a)
    except UfError as e:
        print("uringfeed: %s" % e.strerror, file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
