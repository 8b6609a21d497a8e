#!/usr/bin/env python3
"""top_of_book.py RING [IDLE_S]: top of every book of a uringfeed ring, from Python.

Hands the books over from the image, follows the stream for IDLE_S seconds (default 1) or
until the ring closes, then prints one line per book:
    SYMBOL BID_PRICE BID_SHARES ASK_PRICE ASK_SHARES [STALE] [TRUNCATED]
With the package installed (the .deb, cmake --install, pip: docs/consumers.md) just run it;
from the source tree: PYTHONPATH=<repo>/python UF_CONSUMER_LIB=<build>/lib/libufconsumer.so.
"""
import sys

import uringfeed


def fmt(level):
    if level is None:
        return "- -"
    price, shares, _orders = level
    return "%d.%04d %d" % (price // 10000, price % 10000, shares)


def main():
    ring = sys.argv[1]
    idle = float(sys.argv[2]) if len(sys.argv) > 2 else 1.0
    # any start works: sync() moves the position to the image's commit point ("oldest": the
    # producer's consumer report shows us behind until the handover is done)
    with uringfeed.Consumer(ring, start="oldest", tag="top_of_book.py") as c:
        books = uringfeed.BookBuilder()
        books.sync(c)
        for _ in books.follow(c, timeout=idle):
            pass
        for s in c.snapshot_all():  # the instruments the producer knows, in id order
            bid, ask = books.top(s.instrument)
            if bid is None and ask is None:
                continue
            flags = books.flags(s.instrument)
            print("%s %s %s%s%s" % (books.symbol(s.instrument), fmt(bid), fmt(ask),
                                    " STALE" if flags & uringfeed.BOOKF_STALE else "",
                                    " TRUNCATED" if flags & uringfeed.BOOKF_TRUNCATED else ""))


if __name__ == "__main__":
    main()
