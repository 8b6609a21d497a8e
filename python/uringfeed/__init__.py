"""uringfeed: read uringfeed market-data rings from Python (ctypes over libufconsumer).

    import uringfeed
    with uringfeed.Consumer("itch") as c:
        for rec in c.records(timeout=5):              # plain objects, one per record
            print(rec.kind_name, rec.instrument, rec.price, rec.shares)
        for batch in c.batches(max=4096, timeout=5):  # numpy structured arrays (if numpy)
            print(batch["price"].mean())
        snap = c.snapshot(c.lookup("AAPL"))           # the book image, with its stamp
        books = uringfeed.BookBuilder()
        books.sync(c)                                 # image -> books, stream from the stamps
        for rec in books.follow(c, timeout=5): ...    # laps re-sync by themselves
        print(books.top(c.lookup("AAPL")))

Library: $UF_CONSUMER_LIB (path) or the system's libufconsumer.so.2. Prices are integers
with 4 implied decimals, as in the C records (docs/consumers.md has the record contract).
No build step: PYTHONPATH=python is enough.
"""
import ctypes
import time

from . import _lib
from ._lib import (BOOKF_STALE, BOOKF_TRUNCATED, BOOKF_TRUNCATED_ASK,  # noqa: F401
                   BOOKF_TRUNCATED_BID, KIND_NAMES, PRICE_DECIMALS, RECF_BBO, RECF_LAST,
                   RECF_SNAPSHOT, RECF_STALE, REC_GAP, REC_INSTRUMENT, REC_LEVEL,
                   REC_SNAPSHOT_BEGIN, REC_SNAPSHOT_END, REC_TRADE, REC_RESET, REC_STALE,
                   INSTRUMENT_ALL, SIDE_ASK, SIDE_BID)

try:
    import numpy as _np
except ImportError:  # plain objects only
    _np = None

__all__ = ["Consumer", "BookBuilder", "Record", "Snapshot", "UfError", "Lapped",
           "RingClosed", "ProducerRestarted", "RECORD_DTYPE", "HAVE_NUMPY"]

HAVE_NUMPY = _np is not None
RECORD_DTYPE = None
if HAVE_NUMPY:
    RECORD_DTYPE = _np.dtype([
        ("kind", "u1"), ("side", "u1"), ("flags", "<u2"), ("instrument", "<u4"),
        ("price", "<i8"), ("shares", "<u8"), ("orders", "<u4"), ("pub_delta_ns", "<u4"),
        ("ref", "<u8"), ("exch_ts", "<u8"), ("rx_ts", "<u8"), ("feed_seq", "<u8")])
    assert RECORD_DTYPE.itemsize == 64


class UfError(OSError):
    """A uf_consumer_* call failed: .rc is the negative errno."""

    def __init__(self, rc, what=""):
        self.rc = rc
        msg = _lib.strerror(rc)
        super().__init__(-rc, "%s: %s" % (what, msg) if what else msg)


class Lapped(UfError):
    """The consumer fell more than a ring behind: .lost records are gone (.from_seq ..
    .resume_seq - 1). Reading continues at .resume_seq."""

    def __init__(self, lap):
        super().__init__(-_lib.EOVERFLOW)
        self.from_seq, self.resume_seq, self.lost = lap.from_seq, lap.resume_seq, lap.lost


class RingClosed(UfError):
    """The producer closed the ring and everything was read."""


class ProducerRestarted(UfError):
    """The producer restarted (new generation): call Consumer.reattach()."""


class Record:
    """One record (publish/uf_record.h) as a plain object; `seq` is its ring sequence."""
    __slots__ = ("seq", "kind", "side", "flags", "instrument", "price", "shares", "orders",
                 "pub_delta_ns", "ref", "exch_ts", "rx_ts", "feed_seq")

    def __init__(self, c, seq):
        self.seq = seq
        for f in Record.__slots__[1:]:
            setattr(self, f, getattr(c, f))

    @property
    def aux(self):
        return self.orders  # the same 4 bytes: `aux` for kinds other than LEVEL

    @property
    def kind_name(self):
        return KIND_NAMES.get(self.kind, "?")

    def __repr__(self):
        return "Record(seq=%d, %s, instrument=%d, side=%r, price=%d, shares=%d, orders=%d)" % (
            self.seq, self.kind_name, self.instrument, chr(self.side) if self.side else "-",
            self.price, self.shares, self.orders)


class Snapshot:
    """A consistent copy of one instrument's book image entry (struct uf_book_snapshot).
    bid/ask are lists of (price, shares, orders), best first. `stamp`: the entry reflects
    every record < stamp of this instrument and none >= stamp."""

    def __init__(self, s):
        self.instrument = s.instrument
        self.flags = s.flags
        self.stamp = s.stamp
        self.symbol_bytes = bytes(s.symbol)  # trimmed, as the C library gives it
        self.symbol = self.symbol_bytes.decode("latin-1")
        self.round_lot = s.round_lot
        self.category = s.category
        self.bid = [(s.bid[i].price, s.bid[i].shares, s.bid[i].orders) for i in range(s.nbid)]
        self.ask = [(s.ask[i].price, s.ask[i].shares, s.ask[i].orders) for i in range(s.nask)]
        self.last_price = s.last_price
        self.last_shares = s.last_shares
        self.last_exch_ts = s.last_exch_ts
        self.last_rx_ts = s.last_rx_ts
        self.volume = s.volume
        self.trades = s.trades
        self.status = [(s.status[i].code, s.status[i].price, s.status[i].shares)
                       for i in range(s.nstatus)]

    @property
    def stale(self):
        return bool(self.flags & BOOKF_STALE)

    @property
    def truncated(self):
        """True when a side had more levels than the image holds (docs/consumers.md)."""
        return bool(self.flags & BOOKF_TRUNCATED)


def _raise_for(c, rc):
    if rc == -_lib.EOVERFLOW:
        lap = _lib.ConsumerLap()
        _lib.lib.uf_consumer_last_lap(c._h, ctypes.byref(lap))
        raise Lapped(lap)
    if rc == -_lib.EPIPE:
        raise RingClosed(rc)
    if rc == -_lib.ESTALE:
        raise ProducerRestarted(rc)
    raise UfError(rc)


class Consumer:
    """An attachment to ring `name`. start: "latest" (next published), "oldest" (the oldest
    record the ring still holds) or "journal" (the day's first record, from the producer's
    journal, then the ring with no gap: UF_CONSUMER_START_JOURNAL, docs/journal.md)."""

    _STARTS = {"latest": _lib.START_LATEST, "oldest": _lib.START_OLDEST,
               "journal": _lib.START_JOURNAL}

    def __init__(self, name, start="latest", tag="python", dir=None, spin_ns=20000):
        self._h = None  # close() is safe even when attach fails
        opt = _lib.ConsumerOptions()
        _lib.lib.uf_consumer_options_init(ctypes.byref(opt))
        opt.spin_ns = spin_ns
        if start not in self._STARTS:
            raise ValueError("start must be one of %s, not %r" % (sorted(self._STARTS), start))
        opt.start = self._STARTS[start]
        self._tag = tag.encode()
        self._dir = dir.encode() if dir else None
        opt.tag = self._tag
        opt.dir = self._dir
        h = ctypes.c_void_p()
        err = ctypes.create_string_buffer(512)
        rc = _lib.lib.uf_consumer_attach(name.encode(), ctypes.byref(opt), ctypes.byref(h),
                                         err, len(err))
        if rc < 0:
            raise UfError(rc, err.value.decode(errors="replace"))
        self._h = h
        self.name = name
        self._rec = _lib.Record()
        self._seq = _lib.u64()
        self._buf = None  # batch buffer, allocated on first use

    def close(self):
        if self._h:
            _lib.lib.uf_consumer_detach(self._h)
            self._h = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        self.close()

    def reattach(self):
        err = ctypes.create_string_buffer(512)
        rc = _lib.lib.uf_consumer_reattach(self._h, err, len(err))
        if rc < 0:
            raise UfError(rc, err.value.decode(errors="replace"))

    def next(self):
        """The next record, or None when there is none yet. Raises Lapped (then continues),
        RingClosed, ProducerRestarted."""
        rc = _lib.lib.uf_consumer_next(self._h, ctypes.byref(self._rec), ctypes.byref(self._seq))
        if rc == 0:
            return Record(self._rec, self._seq.value)
        if rc == -_lib.EAGAIN:
            return None
        _raise_for(self, rc)

    def read(self, max=1024):
        """Up to `max` records at once. Returns (first_seq, records): records is a numpy
        structured array (RECORD_DTYPE) when numpy is present, else a list of Record; empty
        when none is ready. Raises as next()."""
        if self._buf is None or len(self._buf) < max:
            self._buf = (_lib.Record * max)()
        rc = _lib.lib.uf_consumer_read(self._h, self._buf, max, ctypes.byref(self._seq))
        if rc == -_lib.EAGAIN:
            return self._seq.value, (_np.empty(0, RECORD_DTYPE) if HAVE_NUMPY else [])
        if rc < 0:
            _raise_for(self, rc)
        first = self._seq.value
        if HAVE_NUMPY:
            raw = ctypes.string_at(self._buf, rc * 64)
            return first, _np.frombuffer(raw, dtype=RECORD_DTYPE, count=rc)
        return first, [Record(self._buf[i], first + i) for i in range(rc)]

    def wait(self, timeout_s=None):
        """Blocks until next() has something to say; False on timeout."""
        ns = -1 if timeout_s is None else int(timeout_s * 1e9)
        rc = _lib.lib.uf_consumer_wait(self._h, ns)
        return rc == 0

    def _pump(self, get, timeout, skip_laps):
        end = None if timeout is None else time.monotonic() + timeout
        while True:
            try:
                got = get()
            except RingClosed:
                return
            except Lapped:
                if not skip_laps:
                    raise
                continue
            if got is not None and (not hasattr(got, "__len__") or len(got)):
                yield got
                continue
            left = None if end is None else end - time.monotonic()
            if left is not None and left <= 0:
                return
            self.wait(0.1 if left is None else min(left, 0.1))

    def records(self, timeout=None, skip_laps=True):
        """Iterates records until the ring closes or `timeout` s pass without the stream
        ending. A lap is skipped (counted in info()['lost']) unless skip_laps=False, which
        raises Lapped."""
        return self._pump(self.next, timeout, skip_laps)

    def batches(self, max=4096, timeout=None, skip_laps=True):
        """Like records(), but yields arrays of up to `max` records (see read())."""
        return self._pump(lambda: self.read(max)[1], timeout, skip_laps)

    def seek(self, seq):
        """Moves to `seq`: anywhere in the ring, or in the producer's journal when it keeps
        one. UfError -ERANGE past the tail, -ENODATA before the journal's start."""
        rc = _lib.lib.uf_consumer_seek(self._h, seq)
        if rc < 0:
            raise UfError(rc, "seek")

    def info(self):
        i = _lib.ConsumerInfo()
        _lib.lib.uf_consumer_get_info(self._h, ctypes.byref(i))
        return {f: getattr(i, f) for f, _ in _lib.ConsumerInfo._fields_}

    def snapshot(self, instrument):
        """Snapshot of one instrument, or None when the image never had it."""
        s = _lib.BookSnapshot()
        rc = _lib.lib.uf_consumer_snapshot(self._h, instrument, ctypes.byref(s))
        if rc == -_lib.ENOENT:
            return None
        if rc < 0:
            raise UfError(rc, "snapshot %d" % instrument)
        return Snapshot(s)

    def snapshot_all(self):
        """Snapshots of every instrument the image holds, in id order."""
        out = []

        def cb(p, arg):
            out.append(Snapshot(p.contents))
            return 0

        fn = _lib.SNAPSHOT_FN(cb)
        rc = _lib.lib.uf_consumer_snapshot_all(self._h, fn, None)
        if rc < 0:
            raise UfError(rc, "snapshot_all")
        return out

    def lookup(self, symbol):
        """Instrument id of `symbol`, or None."""
        i = _lib.u32()
        rc = _lib.lib.uf_consumer_lookup(self._h, symbol.encode(), ctypes.byref(i))
        return i.value if rc == 0 else None


class BookBuilder:
    """Price-level books rebuilt from a ring (ring/ufbook.h): sync() hands over from the
    image, follow()/next() apply the stream; laps re-sync inside next()."""

    def __init__(self, max_instruments=0):
        self._h = None
        h = ctypes.c_void_p()
        rc = _lib.lib.uf_book_builder_create(max_instruments, ctypes.byref(h))
        if rc < 0:
            raise UfError(rc, "book builder")
        self._h = h
        self._rec = _lib.Record()
        self._seq = _lib.u64()
        self._lv = (_lib.Level * 1024)()

    def close(self):
        if self._h:
            _lib.lib.uf_book_builder_destroy(self._h)
            self._h = None

    def __del__(self):
        self.close()

    def sync(self, consumer):
        rc = _lib.lib.uf_book_builder_sync(self._h, consumer._h)
        if rc < 0:
            raise UfError(rc, "sync")

    def clear(self):
        _lib.lib.uf_book_builder_clear(self._h)

    def apply(self, rec, seq):
        """Applies a Record (or a ctypes record) with sequence `seq`; True when applied."""
        r = _lib.Record()
        for f, _ in _lib.Record._fields_:
            setattr(r, f, getattr(rec, f))
        rc = _lib.lib.uf_book_builder_apply(self._h, ctypes.byref(r), seq)
        if rc < 0:
            raise UfError(rc, "apply")
        return rc == 1

    def next(self, consumer):
        """Reads and applies one record: the Record, None when none is ready. A lap re-syncs
        and returns None; RingClosed and ProducerRestarted are raised (after a restart:
        consumer.reattach(), then sync())."""
        rc = _lib.lib.uf_book_builder_next(self._h, consumer._h, ctypes.byref(self._rec),
                                           ctypes.byref(self._seq))
        if rc == 0:
            return Record(self._rec, self._seq.value)
        if rc in (-_lib.EAGAIN, -_lib.EOVERFLOW):
            return None
        _raise_for(consumer, rc)

    def follow(self, consumer, timeout=None):
        """Yields each record after applying it, until the ring closes or `timeout` s."""
        return consumer._pump(lambda: self.next(consumer), timeout, True)

    def top(self, instrument):
        """((bid_price, shares, orders) or None, (ask ...) or None)."""
        b, a = _lib.Level(), _lib.Level()
        rc = _lib.lib.uf_book_builder_top(self._h, instrument, ctypes.byref(b), ctypes.byref(a))
        if rc < 0:
            raise UfError(rc, "top")
        return ((b.price, b.shares, b.orders) if rc & 1 else None,
                (a.price, a.shares, a.orders) if rc & 2 else None)

    def levels(self, instrument, side, n=None):
        """Best levels of one side ("B"/"S" or SIDE_*), best first, as (price, shares, orders)."""
        s = ord(side) if isinstance(side, str) else side
        n = self.depth(instrument, s) if n is None else n
        if n > len(self._lv):
            self._lv = (_lib.Level * n)()
        rc = _lib.lib.uf_book_builder_levels(self._h, instrument, s, self._lv, n)
        if rc < 0:
            raise UfError(rc, "levels")
        return [(self._lv[i].price, self._lv[i].shares, self._lv[i].orders) for i in range(rc)]

    def depth(self, instrument, side):
        s = ord(side) if isinstance(side, str) else side
        return _lib.lib.uf_book_builder_depth(self._h, instrument, s)

    def flags(self, instrument):
        return _lib.lib.uf_book_builder_flags(self._h, instrument)

    def symbol(self, instrument):
        return _lib.lib.uf_book_builder_symbol(self._h, instrument).decode("latin-1")

    def snapshot(self, instrument):
        """The book as the image holds it (a Snapshot: levels, flags, directory, last trade,
        volume, statuses; the same model every consumer path uses), or None without one."""
        s = _lib.BookSnapshot()
        rc = _lib.lib.uf_book_builder_snapshot(self._h, instrument, ctypes.byref(s))
        if rc in (-_lib.ENOENT, -_lib.ERANGE):
            return None
        if rc < 0:
            raise UfError(rc, "snapshot %d" % instrument)
        return Snapshot(s)

    def snapshot_all(self):
        """Snapshots of every book the builder holds, in id order."""
        n = _lib.lib.uf_book_builder_max_instruments(self._h)
        return [s for s in (self.snapshot(i) for i in range(n)) if s is not None]

    def track_orders(self, max_orders):
        """Turns on market-by-order tracking (see uf_book_builder_track_orders: only orders
        added after the handover are known)."""
        rc = _lib.lib.uf_book_builder_track_orders(self._h, max_orders)
        if rc < 0:
            raise UfError(rc, "track_orders")

    def order(self, ref):
        """(instrument, side letter, price, shares) of a live order, or None."""
        o = _lib.BookOrder()
        rc = _lib.lib.uf_book_builder_order(self._h, ref, ctypes.byref(o))
        if rc == -_lib.ENOENT:
            return None
        if rc < 0:
            raise UfError(rc, "order")
        return (o.instrument, chr(o.side), o.price, o.shares)

    def stats(self):
        st = _lib.BuilderStats()
        _lib.lib.uf_book_builder_get_stats(self._h, ctypes.byref(st))
        return {f: getattr(st, f) for f, _ in _lib.BuilderStats._fields_}
