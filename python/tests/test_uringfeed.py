"""The uringfeed package against a live ring written by sdk-producer (test/sdk/sdk_producer.c
states the script, so every expected value below comes from it). Run by CTest
(test_sdk_python) with UF_CONSUMER_LIB, UF_SDK_PRODUCER and UF_BIN_DIR set."""
import os
import select
import subprocess
import sys

import pytest

import uringfeed
from uringfeed import __main__ as cli

PRODUCER = os.environ.get("UF_SDK_PRODUCER")
BIN = os.environ.get("UF_BIN_DIR")
TOTAL_RECORDS = 37  # phase 1: 29, phase 2: 8


def wait_line(proc, want, timeout=10.0):
    lines = []
    while True:
        r, _, _ = select.select([proc.stdout], [], [], timeout)
        assert r, "sdk-producer said %r, not %r, within %s s" % (lines, want, timeout)
        line = proc.stdout.readline().decode().strip()
        assert line, "sdk-producer ended: %r" % lines
        lines.append(line)
        if line == want:
            return


@pytest.fixture(scope="module")
def ring():
    assert PRODUCER and os.access(PRODUCER, os.X_OK), "UF_SDK_PRODUCER not set (run via ctest)"
    name = "pyt%d" % os.getpid()
    # unbuffered: select() must not miss a line already read into a Python buffer
    proc = subprocess.Popen([PRODUCER, "--ring", name, "--depth", "4"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, bufsize=0)
    try:
        wait_line(proc, "live")
        yield name
    finally:
        proc.stdin.close()  # the producer closes and removes the ring
        try:
            assert proc.wait(timeout=10) == 0
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


def ids(c):
    return c.lookup("AAPL"), c.lookup("MSFT"), c.lookup("DEEP")


def test_records_iterate_as_plain_objects_in_order(ring):
    with uringfeed.Consumer(ring, start="oldest") as c:
        recs = list(c.records(timeout=0.5))
    assert [r.seq for r in recs] == list(range(TOTAL_RECORDS))
    first = recs[0]
    assert first.kind == uringfeed.REC_INSTRUMENT and first.instrument == 1
    assert first.ref.to_bytes(8, "little") == b"AAPL    "
    trade = [r for r in recs if r.kind == uringfeed.REC_TRADE]
    assert len(trade) == 1 and (trade[0].price, trade[0].shares) == (1500100, 25)
    assert recs[-1].kind == uringfeed.REC_SNAPSHOT_END and recs[-1].flags & uringfeed.RECF_LAST
    assert all(r.flags & uringfeed.RECF_LAST for r in recs if r.kind == uringfeed.REC_TRADE)


def test_batches_are_numpy_structured_arrays(ring):
    import numpy as np  # tools/setup.sh installs python3-numpy: this path is tested, never skipped
    assert uringfeed.HAVE_NUMPY
    with uringfeed.Consumer(ring, start="oldest") as c:
        parts = list(c.batches(max=10, timeout=0.5))
    assert all(len(p) <= 10 for p in parts) and len(parts) >= 4
    a = np.concatenate(parts)
    assert a.dtype == uringfeed.RECORD_DTYPE and a.dtype.itemsize == 64
    assert len(a) == TOTAL_RECORDS
    lv = a[(a["kind"] == uringfeed.REC_LEVEL) & (a["instrument"] == 1)]
    assert list(lv["price"]) == [1500000, 1499900, 1500100, 1500000, 1500050]
    assert list(lv["shares"]) == [100, 200, 300, 0, 400]


def test_batches_without_numpy_are_lists_of_records(ring, monkeypatch):
    monkeypatch.setattr(uringfeed, "HAVE_NUMPY", False)
    with uringfeed.Consumer(ring, start="oldest") as c:
        first, recs = c.read(100)
    assert first == 0 and isinstance(recs, list) and len(recs) == TOTAL_RECORDS
    assert isinstance(recs[5], uringfeed.Record) and recs[5].seq == 5


def test_snapshot_reports_truncated_sides_and_trades(ring):
    with uringfeed.Consumer(ring) as c:
        aapl, msft, deep = ids(c)
        assert (aapl, msft, deep) == (1, 2, 3)
        s = c.snapshot(deep)
        assert s.truncated and s.flags & uringfeed.BOOKF_TRUNCATED_BID
        assert s.flags & uringfeed.BOOKF_TRUNCATED_ASK
        assert len(s.bid) == 4 and s.bid[0] == (99900, 20, 1)
        a = c.snapshot(aapl)
        assert not a.truncated and not a.stale
        assert a.bid == [(1500050, 400, 4), (1499900, 200, 2)] and a.ask == [(1500100, 300, 3)]
        assert (a.last_price, a.volume, a.trades) == (1500100, 25, 1)
        assert a.stamp > 0 and a.symbol == "AAPL"
        assert c.snapshot(9) is None
        assert [x.symbol for x in c.snapshot_all()] == ["AAPL", "MSFT", "DEEP"]
        assert c.lookup("NOPE") is None


def test_book_builder_hands_over_and_follows(ring):
    with uringfeed.Consumer(ring) as c:
        b = uringfeed.BookBuilder(16)
        b.sync(c)
        list(b.follow(c, timeout=0.2))  # nothing after the image here: the ring is idle
        assert b.top(1) == ((1500050, 400, 4), (1500100, 300, 3))
        assert b.levels(2, "S") == [(4100500, 20, 1)]
        assert b.symbol(3) == "DEEP"
        assert b.flags(3) & uringfeed.BOOKF_TRUNCATED and not b.flags(1)
        assert b.depth(3, "B") == 4  # what the image had; the flag says there is more
        st = b.stats()
        assert st["syncs"] == 1 and st["truncated"] == 1
        b.close()


def test_book_builder_from_the_oldest_record_applies_the_whole_stream(ring):
    with uringfeed.Consumer(ring, start="oldest") as c:
        b = uringfeed.BookBuilder(16)
        n = len(list(b.follow(c, timeout=0.3)))  # no sync: every record from seq 0
        assert n == TOTAL_RECORDS
        assert b.top(1) == ((1500050, 400, 4), (1500100, 300, 3))
        assert b.depth(3, "B") == 9 and b.depth(3, "S") == 10 and b.flags(3) == 0
        b.clear()
        assert b.top(1) == (None, None)


def test_book_builder_snapshot_is_the_image_entry_with_trade_and_volume(ring):
    # the same model as the image: levels, directory, last trade, volume, trade count
    with uringfeed.Consumer(ring, start="oldest") as c:
        b = uringfeed.BookBuilder(16)
        list(b.follow(c, timeout=0.3))  # the whole stream from seq 0
        for i in (1, 2):
            got, img = b.snapshot(i), c.snapshot(i)
            for f in ("symbol", "round_lot", "category", "flags", "bid", "ask", "last_price",
                      "last_shares", "last_exch_ts", "volume", "trades", "status"):
                assert getattr(got, f) == getattr(img, f), (i, f)
        a = b.snapshot(1)
        assert (a.last_price, a.last_shares, a.volume, a.trades) == (1500100, 25, 25, 1)
        assert b.snapshot(9) is None
        assert [x.symbol for x in b.snapshot_all()] == ["AAPL", "MSFT", "DEEP"]


def test_book_builder_tracks_orders_when_asked():
    b = uringfeed.BookBuilder(4)
    b.track_orders(10)

    class R:  # any object with the record fields will do
        kind, side, flags, instrument, price, shares = 2, ord("B"), 1, 1, 1500000, 100
        orders, pub_delta_ns, ref, exch_ts, rx_ts, feed_seq = 0, 0, 42, 0, 0, 1
    assert b.apply(R, 0)
    assert b.order(42) == (1, "B", 1500000, 100)
    assert b.order(43) is None
    R.kind = 4  # ORDER_DELETE
    assert b.apply(R, 1)
    assert b.order(42) is None and b.stats()["orders_live"] == 0


def test_book_builder_snapshot_holds_every_status_code_with_its_latest_value():
    # every defined code twice, highest first (ring layout 1 kept 8, first come): the snapshot
    # struct (BOOK_MAX_STATUS slots) lists each one, in code order, with its latest value
    b = uringfeed.BookBuilder(8)

    class R:
        kind, side, flags, instrument, price, shares = 6, 0, 1, 3, 0, 0  # STATUS
        orders, pub_delta_ns, ref, exch_ts, rx_ts, feed_seq = 0, 0, 0, 0, 0, 1
    seq = 0
    for rnd in (0, 1):
        for code in range(uringfeed._lib.STATUS_MAX, 0, -1):
            R.orders, R.price, R.shares = code, 1000 * rnd + code, 10 * code + rnd
            assert b.apply(R, seq)
            seq += 1
    ignored = b.stats()["ignored"]
    R.orders = uringfeed._lib.STATUS_MAX + 1  # a code this build does not know: ignored
    assert not b.apply(R, seq)
    assert b.stats()["ignored"] == ignored + 1
    assert uringfeed._lib.BOOK_MAX_STATUS >= uringfeed._lib.STATUS_MAX
    assert b.snapshot(3).status == [(c, 1000 + c, 10 * c + 1)
                                    for c in range(1, uringfeed._lib.STATUS_MAX + 1)]


def test_ctypes_constants_mirror_the_c_headers():
    # the limits the ctypes structs are sized by, read from the headers they mirror
    import re
    src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
    with open(os.path.join(src, "publish", "uf_record.h")) as f:
        rec = f.read()
    with open(os.path.join(src, "ring", "ufconsumer.h")) as f:
        cons = f.read()
    enum = rec[rec.index("enum uf_status_code {"):rec.index("UF_STATUS_LIMIT")]
    assert max(int(v) for v in re.findall(r"UF_STATUS_\w+ =\s*(\d+)", enum)) == \
        uringfeed._lib.STATUS_MAX
    for name, val in (("UF_BOOK_MAX_STATUS", uringfeed._lib.BOOK_MAX_STATUS),
                      ("UF_BOOK_MAX_DEPTH", uringfeed._lib.BOOK_MAX_DEPTH)):
        assert int(re.search(r"#define %s\s+(\d+)" % name, cons).group(1)) == val, name


def test_books_command_prints_exactly_uf_tail_books(ring):
    uf_tail = os.path.join(BIN, "uf-tail")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    for depth in ([], ["--depth", "1"], ["--depth", "3"], ["--depth", "64"]):
        want = subprocess.run([uf_tail, "--ring", ring, "--books"] + depth,
                              capture_output=True, check=True, timeout=20).stdout
        got = subprocess.run([sys.executable, "-m", "uringfeed", "books", "--ring", ring] + depth,
                             capture_output=True, check=True, timeout=20, env=env).stdout
        assert got == want and got.count(b"\n") == 3


def test_books_command_marks_stale_and_cut_books_as_uf_tail():
    """The marks of uf-tail --books (test_tail.c has the same books): "stale":true for a book
    that may be wrong (printed even when empty), "truncated":true for a side the image cut
    when more was asked."""
    class Snap:
        def __init__(self, sym, inst, bid, ask, flags):
            self.symbol_bytes, self.instrument = sym, inst
            self.bid, self.ask, self.flags = bid, ask, flags
    deep = [(10 + i, 100 * (i + 1), i + 1) for i in range(5)]
    snaps = [Snap(b"OK", 1, [(100, 100, 1)], [], 0),
             Snap(b"BAD", 2, [(200, 100, 1)], [], uringfeed.BOOKF_STALE),
             Snap(b"DEEP", 3, [], deep, uringfeed.BOOKF_TRUNCATED_ASK),
             Snap(b"GONE", 4, [], [], uringfeed.BOOKF_STALE),  # empty, in doubt: printed
             Snap(b"NONE", 5, [], [], 0),  # empty and sound: not printed
             Snap(b"", 6, [], [], uringfeed.BOOKF_STALE)]  # no symbol, no level: not printed
    assert cli.render_books(snaps) == (
        '{"symbol":"BAD","bid":[[200,100,1]],"ask":[],"stale":true}\n'
        '{"symbol":"DEEP","bid":[],"ask":[[10,100,1],[11,200,2],[12,300,3],[13,400,4],'
        '[14,500,5]],"truncated":true}\n'
        '{"symbol":"GONE","bid":[],"ask":[],"stale":true}\n'
        '{"symbol":"OK","bid":[[100,100,1]],"ask":[]}\n')
    assert "truncated" not in cli.render_books(snaps, 5)
    assert cli.render_books(snaps, 6).count('"truncated":true') == 1


def test_books_command_escapes_symbols_as_uf_tail():
    assert cli.json_str(b'A"B\\C\x01\xff') == '"A\\"B\\\\C\\u0001\\u00ff"'


def crc32c(data, crc=0):
    """CRC32C as ring/journal_file.c computes it (table-free: the test's few entries)."""
    crc ^= 0xffffffff
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82f63b78 if crc & 1 else crc >> 1
    return crc ^ 0xffffffff


def write_journal(path, ring, generation, first_seq):
    """A journal file of no entries (ring/journal_file.h: struct uf_journal_hdr)."""
    import struct
    import time
    day = int(time.strftime("%Y%m%d", time.gmtime()))
    hdr = struct.pack("<QIIIIII QQQ 32s 36s I", 0x4c4e524a46465546, 1, 128, 80, 64,
                      1,  # UF_RECORD_VERSION
                      day, generation, first_seq, time.time_ns(), ring.encode(), b"", 0)
    assert len(hdr) == 128
    hdr = hdr[:124] + struct.pack("<I", crc32c(hdr))
    with open(path, "wb") as f:
        f.write(hdr)


def test_start_journal_without_a_journal_is_a_clear_error(ring):
    with pytest.raises(uringfeed.UfError) as e:
        uringfeed.Consumer(ring, start="journal")
    assert e.value.rc == -61 and "journal" in str(e.value)  # -ENODATA
    with pytest.raises(ValueError):
        uringfeed.Consumer(ring, start="yesterday")


def test_start_journal_reads_from_the_days_first_record(ring, tmp_path, monkeypatch):
    with uringfeed.Consumer(ring, start="oldest") as c:
        gen = c.info()["generation"]
        want = [r.seq for r in c.records(timeout=0.5)]
    write_journal(str(tmp_path / ("%s.x.ufj" % ring)), ring, gen, 0)
    monkeypatch.setenv("UF_JOURNAL_DIR", str(tmp_path))
    with uringfeed.Consumer(ring, start="journal") as c:
        got = [r.seq for r in c.records(timeout=0.5)]
        with pytest.raises(uringfeed.UfError):
            c.seek(10 ** 12)  # past the tail
    assert got == want == list(range(TOTAL_RECORDS))


def test_missing_ring_is_an_error_with_a_reason():
    with pytest.raises(uringfeed.UfError) as e:
        uringfeed.Consumer("no-such-ring-%d" % os.getpid())
    assert e.value.rc == -2 and "no-such-ring" in str(e.value)
    p = subprocess.run([sys.executable, "-m", "uringfeed", "books", "--ring", "nope%d" % os.getpid()],
                       capture_output=True, timeout=20,
                       env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))
    assert p.returncode == 1 and p.stderr.startswith(b"uringfeed: ")


def test_without_uf_consumer_lib_the_system_loader_finds_the_library():
    libdir = os.path.dirname(os.environ["UF_CONSUMER_LIB"])
    env = {k: v for k, v in os.environ.items() if k != "UF_CONSUMER_LIB"}
    env.update(LD_LIBRARY_PATH=libdir, PYTHONPATH=os.pathsep.join(sys.path))
    p = subprocess.run([sys.executable, "-c", "import uringfeed._lib as l; print(l.lib._name)"],
                       capture_output=True, timeout=20, env=env)
    assert p.returncode == 0, p.stderr
    assert b"ufconsumer" in p.stdout
    env["LD_LIBRARY_PATH"] = "/nonexistent"
    p = subprocess.run([sys.executable, "-c", "import uringfeed"], capture_output=True,
                       timeout=20, env=env)
    if p.returncode == 0:  # an installed copy elsewhere on the system: acceptable
        return
    assert b"UF_CONSUMER_LIB" in p.stderr  # the error says how to fix it
