"""The uringfeed package on an IEX DEEP ring, with no venue-specific code: the real DEEP
capture played into a ring through the iex-deep protocol entry (uf-bridge-feed-iex), then
the books read from Python (the image, and a book builder applying every record) must equal
`uf-decode books` of the same capture, and the ring names its venue as every ring does.

Not collected with the other tests (it needs the capture in ../shared/data/iex): CTest runs
it as test_sdk_python_iex (conformance) with UF_CONSUMER_LIB, UF_BRIDGE_FEED_IEX,
UF_BIN_DIR and UF_SHARED_DATA set."""
import os
import shutil
import subprocess
import tempfile

import pytest

import uringfeed
from uringfeed import __main__ as cli

FEED = os.environ.get("UF_BRIDGE_FEED_IEX")
BIN = os.environ.get("UF_BIN_DIR")
DATA = os.environ.get("UF_SHARED_DATA")
DEPTH = 10
STATUS_VENUE = 20  # UF_STATUS_VENUE (publish/uf_record.h)


@pytest.fixture(scope="module")
def capture():
    assert DATA, "UF_SHARED_DATA not set (run via ctest, conformance label)"
    path = os.path.join(DATA, "iex", "iex-deep-1.0-20170425.pcap.gz")
    assert os.access(path, os.R_OK), "the real IEX DEEP capture is absent: %s" % path
    return path


@pytest.fixture(scope="module")
def ring(capture):
    assert FEED and os.access(FEED, os.X_OK), "UF_BRIDGE_FEED_IEX not set (run via ctest)"
    d = tempfile.mkdtemp(prefix="uf-pyiex-", dir="/dev/shm")
    name = "pyiex%d" % os.getpid()
    env = dict(os.environ, UF_RING_DIR=d)
    try:
        p = subprocess.run([FEED, "--in", capture, "--ring", name, "--depth", str(DEPTH)],
                           env=env, capture_output=True, timeout=120)
        assert p.returncode == 0, p.stderr.decode()
        assert b'"restarts":11' in p.stdout, p.stdout  # the capture's 11 stream restarts
        yield name, d
    finally:
        shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="module")
def decoded(capture):
    # exit 1: the capture's truncated last record and its 8 deletes of never-set levels are
    # reported; the books are printed all the same
    p = subprocess.run([os.path.join(BIN, "uf-decode"), "books", capture, "--depth",
                        str(DEPTH)], capture_output=True, timeout=120)
    assert p.returncode in (0, 1), p.stderr.decode()
    out = p.stdout.decode()
    assert out.count("\n") >= 5  # open books at the end of the capture
    return out


def test_image_books_equal_uf_decode_books(ring, decoded):
    name, d = ring
    with uringfeed.Consumer(name, start="oldest", dir=d) as c:
        got = cli.render_books(c.snapshot_all(), DEPTH)
    assert got == decoded


def test_books_built_from_every_record_equal_uf_decode_books(ring, decoded):
    name, d = ring
    b = uringfeed.BookBuilder()
    n = 0
    with uringfeed.Consumer(name, start="oldest", dir=d) as c:
        with pytest.raises(uringfeed.RingClosed):
            while True:
                r = b.next(c)
                assert r is not None  # the whole day is in the ring: never waits, no lap
                n += 1
    assert n > 390000
    assert cli.render_books(b.snapshot_all(), DEPTH) == decoded
    b.close()


def test_the_ring_names_its_venue_and_date(ring):
    name, d = ring
    with uringfeed.Consumer(name, dir=d) as c:
        market = c.snapshot(0)
    venue = [(p, s) for code, p, s in market.status if code == STATUS_VENUE]
    assert venue == [(int.from_bytes(b"IEXG    ", "little", signed=True), 20170425)]
