"""-o naming something that is not a regular file: a device or a FIFO is written in
place, never replaced by a regular file through the temp-and-rename path."""
import os
import stat
import tempfile
import threading

import pytest

from helpers import INTERPRETERS_AVAILABLE, Workload, record, record_sampled


def any_python():
    if not INTERPRETERS_AVAILABLE:
        pytest.skip("no supported interpreter installed")
    return INTERPRETERS_AVAILABLE[-1]


def test_output_dev_null_stays_a_device(root_record_bin):
    interp = any_python()
    with Workload(interp.path, "spin.py", "stdin", stdin=True) as w:
        r = record(root_record_bin, "-p", w.pid, "-d", 1, "-o", "/dev/null")
    st = os.stat("/dev/null")
    assert stat.S_ISCHR(st.st_mode), "/dev/null was replaced: mode %o" % st.st_mode
    assert r.rc == 0, "writing to /dev/null failed" + r.describe()
    assert not [n for n in os.listdir("/dev") if n.startswith("null.tmp")], "temp file left"


def test_output_fifo_gets_the_profile(root_record_bin):
    interp = any_python()
    d = tempfile.mkdtemp(prefix="asyncbpf-")
    fifo = os.path.join(d, "out")
    os.mkfifo(fifo, 0o600)
    got = []

    def drain():
        with open(fifo, errors="replace") as f:
            got.append(f.read())

    t = threading.Thread(target=drain)
    t.start()
    try:
        with Workload(interp.path, "spin.py", "stdin", stdin=True) as w:
            r = record_sampled(root_record_bin, "-p", w.pid, "-o", fifo, pids=[w.pid])
    finally:
        if t.is_alive():  # the recorder failed before opening it: unblock the reader
            with open(fifo, "w"):
                pass
        t.join(10)
    assert r.rc == 0, "writing to a FIFO failed" + r.describe()
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode), "the FIFO was replaced"
    assert "(pid %d)" % w.pid in got[0], "no stacks of pid %d came through the FIFO" % w.pid
    os.unlink(fifo)
    os.rmdir(d)
