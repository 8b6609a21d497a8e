"""Which libufconsumer the package loads (python/uringfeed/_lib.py's order): $UF_CONSUMER_LIB,
else the path recorded at install (uringfeed/_libpath.py), else the system loader. Each case
imports a copy of the package in a fresh interpreter with a controlled environment (no
inherited UF_CONSUMER_LIB, LD_LIBRARY_PATH or PYTHONPATH). Run by CTest (test_sdk_python)
with UF_CONSUMER_LIB naming the library just built."""
import os
import shutil
import subprocess
import sys

import pytest

import uringfeed

BUILT = os.environ.get("UF_CONSUMER_LIB")
PROBE = "import uringfeed._lib as l; print(l.lib._name)"


@pytest.fixture
def pkg(tmp_path):
    """A copy of the package under test (no _libpath.py: the source tree has none)."""
    assert BUILT and os.path.isfile(BUILT), "UF_CONSUMER_LIB not set (run via ctest)"
    src = os.path.dirname(uringfeed.__file__)
    assert not os.path.exists(os.path.join(src, "_libpath.py")), "source tree holds _libpath.py"
    shutil.copytree(src, tmp_path / "uringfeed", ignore=shutil.ignore_patterns("__pycache__"))
    return tmp_path


def record(pkg, library):
    (pkg / "uringfeed" / "_libpath.py").write_text("LIBRARY = %r\n" % library)


def probe(pkg, env=None):
    """(exit code, stdout, stderr) of importing the copy from a clean environment."""
    p = subprocess.run([sys.executable, "-c", PROBE], cwd=str(pkg), env=env or {},
                       capture_output=True, text=True, timeout=60)
    return p.returncode, p.stdout.strip(), p.stderr


def test_recorded_relative_path_loads_without_environment(pkg):
    # what cmake --install writes: relative to the package folder
    lib_dir = pkg / "lib"
    lib_dir.mkdir()
    shutil.copy(BUILT, lib_dir / "libufconsumer.so.2")
    record(pkg, "../lib/libufconsumer.so.2")
    rc, out, err = probe(pkg)
    assert rc == 0, err
    assert out == str(lib_dir / "libufconsumer.so.2")


def test_recorded_absolute_path_loads_without_environment(pkg):
    # what pip writes from UF_CONSUMER_LIB at install time
    record(pkg, os.path.abspath(BUILT))
    rc, out, err = probe(pkg)
    assert rc == 0, err
    assert out == os.path.abspath(BUILT)


def test_environment_wins_over_recorded_path(pkg):
    record(pkg, "/nonexistent/libufconsumer.so.2")
    rc, out, err = probe(pkg, {"UF_CONSUMER_LIB": BUILT})
    assert rc == 0, err
    assert out == BUILT


def test_bad_environment_path_is_an_error_not_a_fallback(pkg):
    record(pkg, os.path.abspath(BUILT))  # would load, but the user asked for another
    rc, out, err = probe(pkg, {"UF_CONSUMER_LIB": "/nonexistent/libufconsumer.so"})
    assert rc != 0 and out == ""
    assert "UF_CONSUMER_LIB: /nonexistent/libufconsumer.so" in err


def test_stale_recorded_path_falls_back_to_the_system_loader(pkg):
    # the recorded library was removed: the system loader is tried, and the error names both
    record(pkg, "/nonexistent/libufconsumer.so.2")
    rc, out, err = probe(pkg)
    if rc == 0:  # a libufconsumer.so.2 installed on this host: it must be the system's
        assert out != "/nonexistent/libufconsumer.so.2"
        return
    assert "recorded at install: /nonexistent/libufconsumer.so.2" in err
    assert "system loader:" in err
