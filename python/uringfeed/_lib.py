"""ctypes view of libufconsumer: the C structs of ring/ufconsumer.h and ring/ufbook.h, and the
functions with their signatures. Internal: use the classes of the package.

Which libufconsumer, first found wins (no environment variable needed once installed):
  1. $UF_CONSUMER_LIB, a path, when set (in-tree tests and runs, a library elsewhere);
  2. the path recorded when the package was installed, in uringfeed/_libpath.py: `cmake
     --install` and the .deb write it relative to the package, so it names the library
     installed beside it in the same prefix; `pip install` writes it when UF_CONSUMER_LIB is set
     during the install (python/setup.py); the source tree has none;
  3. the system loader: libufconsumer.so.2 where ld.so finds it (/usr/lib, or /usr/local/lib
     after `cmake --install` and `ldconfig`), as ctypes.util.find_library names it.
"""
import ctypes
import ctypes.util
import errno
import os

u8, u16, u32, u64 = ctypes.c_uint8, ctypes.c_uint16, ctypes.c_uint32, ctypes.c_uint64
i32, i64 = ctypes.c_int32, ctypes.c_int64

# ---- constants (publish/uf_record.h, ring/ufconsumer.h) ----
REC_LEVEL, REC_ORDER_ADD, REC_ORDER_MODIFY, REC_ORDER_DELETE = 1, 2, 3, 4
REC_TRADE, REC_STATUS, REC_GAP, REC_SNAPSHOT_BEGIN, REC_SNAPSHOT_END, REC_INSTRUMENT = (
    5, 6, 7, 8, 9, 10)
REC_RESET, REC_STALE = 11, 12  # a new session voids every book; a book (or all) in doubt
INSTRUMENT_ALL = 0xFFFFFFFF    # REC_STALE instrument: every book
KIND_NAMES = {1: "level", 2: "add", 3: "modify", 4: "delete", 5: "trade", 6: "status",
              7: "gap", 8: "snap_begin", 9: "snap_end", 10: "instrument", 11: "reset",
              12: "stale"}
SIDE_BID, SIDE_ASK = ord("B"), ord("S")
RECF_LAST, RECF_BBO, RECF_SNAPSHOT, RECF_STALE, RECF_REPLACE = 1, 2, 4, 8, 16
BOOKF_STALE = RECF_STALE
BOOKF_TRUNCATED_BID, BOOKF_TRUNCATED_ASK = 1 << 16, 1 << 17
BOOKF_TRUNCATED = BOOKF_TRUNCATED_BID | BOOKF_TRUNCATED_ASK
BOOK_MAX_DEPTH, BOOK_MAX_STATUS = 64, 32  # ABI 2 (libufconsumer.so.2): 32 status slots
STATUS_MAX = 20  # UF_STATUS_MAX: codes 1..20 defined; a snapshot lists each one seen
START_LATEST, START_OLDEST, START_JOURNAL = 0, 1, 2  # enum uf_consumer_start
PRICE_DECIMALS = 4

# uf_consumer_* return -errno (Linux values, as the errno module has them)
EAGAIN, ENOENT, ERANGE, EBUSY = errno.EAGAIN, errno.ENOENT, errno.ERANGE, errno.EBUSY
EOVERFLOW, EPIPE, ESTALE = errno.EOVERFLOW, errno.EPIPE, errno.ESTALE
ETIMEDOUT, EINTR = errno.ETIMEDOUT, errno.EINTR


class Record(ctypes.Structure):
    """struct uf_record (64 bytes). `orders` is also `aux` (a C union)."""
    _fields_ = [("kind", u8), ("side", u8), ("flags", u16), ("instrument", u32),
                ("price", i64), ("shares", u64), ("orders", u32), ("pub_delta_ns", u32),
                ("ref", u64), ("exch_ts", u64), ("rx_ts", u64), ("feed_seq", u64)]


class Level(ctypes.Structure):
    _fields_ = [("price", i64), ("shares", u64), ("orders", u32), ("reserved", u32)]


class BookStatus(ctypes.Structure):
    _fields_ = [("code", u32), ("reserved", u32), ("price", i64), ("shares", u64),
                ("exch_ts", u64)]


class BookSnapshot(ctypes.Structure):
    _fields_ = [("instrument", u32), ("flags", u32), ("stamp", u64),
                ("symbol", ctypes.c_char * 9), ("round_lot", u32), ("category", u32),
                ("nbid", u32), ("nask", u32), ("last_price", i64), ("last_shares", u64),
                ("last_exch_ts", u64), ("last_rx_ts", u64), ("volume", u64), ("trades", u64),
                ("update_rx_ts", u64), ("nstatus", u32), ("reserved", u32),
                ("status", BookStatus * BOOK_MAX_STATUS), ("bid", Level * BOOK_MAX_DEPTH),
                ("ask", Level * BOOK_MAX_DEPTH)]


class ConsumerOptions(ctypes.Structure):
    _fields_ = [("spin_ns", u64), ("start", ctypes.c_int), ("tag", ctypes.c_char_p),
                ("dir", ctypes.c_char_p)]


class ConsumerLap(ctypes.Structure):
    _fields_ = [("from_seq", u64), ("resume_seq", u64), ("lost", u64)]


class ConsumerInfo(ctypes.Structure):
    _fields_ = [("generation", u64), ("capacity", u64), ("position", u64), ("tail", u64),
                ("received", u64), ("lost", u64), ("laps", u64), ("created_ns", u64),
                ("producer_pid", i32), ("numa_node", i32), ("depth", u32),
                ("max_instruments", u32), ("closed", ctypes.c_int),
                ("producer_alive", ctypes.c_int), ("hugepages", ctypes.c_int),
                ("forged", u32)]  # in the C struct's former tail padding: size unchanged


class BuilderStats(ctypes.Structure):
    _fields_ = [(n, u64) for n in ("applied", "skipped", "ignored", "syncs", "laps", "gaps",
                                    "resets", "truncated", "orders_live", "orders_unknown",
                                    "orders_full")]


class BookOrder(ctypes.Structure):
    _fields_ = [("ref", u64), ("price", i64), ("shares", u64), ("instrument", u32),
                ("side", u8), ("reserved", u8 * 3)]


# The C layout, checked once here rather than discovered as garbage later.
for _t, _size in ((Record, 64), (Level, 24), (BookStatus, 32), (BookSnapshot, 4208),
                  (ConsumerOptions, 32), (ConsumerLap, 24), (ConsumerInfo, 96),
                  (BuilderStats, 88), (BookOrder, 32)):
    assert ctypes.sizeof(_t) == _size, (_t.__name__, ctypes.sizeof(_t), _size)

SNAPSHOT_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(BookSnapshot), ctypes.c_void_p)


def _recorded_path():
    """The library recorded at install time (uringfeed/_libpath.py), absolute, or None."""
    try:
        from . import _libpath
    except ImportError:
        return None
    return os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                         _libpath.LIBRARY))


def _load():
    """The first candidate of the module docstring's order that loads. An explicit
    UF_CONSUMER_LIB that fails is an error (no silent fallback to another library); a recorded
    path that fails (the library was removed or moved) falls through to the system loader."""
    path = os.environ.get("UF_CONSUMER_LIB")
    if path:
        candidates = [("UF_CONSUMER_LIB", path)]
    else:
        candidates = []
        recorded = _recorded_path()
        if recorded:
            candidates.append(("recorded at install", recorded))
        candidates.append(("system loader",
                           ctypes.util.find_library("ufconsumer") or "libufconsumer.so.2"))
    errors = []
    for how, cand in candidates:
        try:
            return ctypes.CDLL(cand)
        except OSError as e:
            errors.append("%s: %s" % (how, e))
    raise ImportError(
        "uringfeed: cannot load libufconsumer (%s): install it (cmake --install, then "
        "ldconfig; or the .deb), or set UF_CONSUMER_LIB to the library's path"
        % "; ".join(errors)) from None


lib = _load()
_P = ctypes.c_void_p


def _sig(name, res, *args):
    f = getattr(lib, name)
    f.restype = res
    f.argtypes = list(args)


_sig("uf_consumer_options_init", None, ctypes.POINTER(ConsumerOptions))
_sig("uf_consumer_attach", ctypes.c_int, ctypes.c_char_p, ctypes.POINTER(ConsumerOptions),
     ctypes.POINTER(_P), ctypes.c_char_p, ctypes.c_size_t)
_sig("uf_consumer_detach", None, _P)
_sig("uf_consumer_reattach", ctypes.c_int, _P, ctypes.c_char_p, ctypes.c_size_t)
_sig("uf_consumer_next", ctypes.c_int, _P, ctypes.POINTER(Record), ctypes.POINTER(u64))
_sig("uf_consumer_read", ctypes.c_int, _P, ctypes.c_void_p, ctypes.c_size_t,
     ctypes.POINTER(u64))
_sig("uf_consumer_wait", ctypes.c_int, _P, i64)
_sig("uf_consumer_last_lap", None, _P, ctypes.POINTER(ConsumerLap))
_sig("uf_consumer_seek", ctypes.c_int, _P, u64)
_sig("uf_consumer_get_info", None, _P, ctypes.POINTER(ConsumerInfo))
_sig("uf_consumer_image_seq", u64, _P)
_sig("uf_consumer_snapshot", ctypes.c_int, _P, u32, ctypes.POINTER(BookSnapshot))
_sig("uf_consumer_snapshot_all", ctypes.c_int, _P, SNAPSHOT_FN, ctypes.c_void_p)
_sig("uf_consumer_lookup", ctypes.c_int, _P, ctypes.c_char_p, ctypes.POINTER(u32))
_sig("uf_consumer_strerror", ctypes.c_char_p, ctypes.c_int)

_sig("uf_book_builder_create", ctypes.c_int, u32, ctypes.POINTER(_P))
_sig("uf_book_builder_destroy", None, _P)
_sig("uf_book_builder_clear", None, _P)
_sig("uf_book_builder_load", ctypes.c_int, _P, ctypes.POINTER(BookSnapshot))
_sig("uf_book_builder_apply", ctypes.c_int, _P, ctypes.POINTER(Record), u64)
_sig("uf_book_builder_sync", ctypes.c_int, _P, _P)
_sig("uf_book_builder_next", ctypes.c_int, _P, _P, ctypes.POINTER(Record), ctypes.POINTER(u64))
_sig("uf_book_builder_top", ctypes.c_int, _P, u32, ctypes.POINTER(Level), ctypes.POINTER(Level))
_sig("uf_book_builder_levels", ctypes.c_int, _P, u32, ctypes.c_int, ctypes.POINTER(Level),
     ctypes.c_size_t)
_sig("uf_book_builder_depth", ctypes.c_size_t, _P, u32, ctypes.c_int)
_sig("uf_book_builder_flags", u32, _P, u32)
_sig("uf_book_builder_symbol", ctypes.c_char_p, _P, u32)
_sig("uf_book_builder_max_instruments", u32, _P)
_sig("uf_book_builder_snapshot", ctypes.c_int, _P, u32, ctypes.POINTER(BookSnapshot))
_sig("uf_book_builder_get_stats", None, _P, ctypes.POINTER(BuilderStats))
_sig("uf_book_builder_track_orders", ctypes.c_int, _P, u64)
_sig("uf_book_builder_order", ctypes.c_int, _P, u64, ctypes.POINTER(BookOrder))


def strerror(rc):
    return lib.uf_consumer_strerror(rc).decode()
