"""Processes that exit or exec while the recorder attaches their task-creation probe
(issue: a churned process once drew 'cannot watch task creation (Invalid argument)').
An interpreter that is finalizing tears its modules down under the reads (EINVAL,
EAGAIN), one that execs or exits takes its files and maps away (ENOENT, ESRCH): such a
process is gone, counted in --stats, and no warning names it."""
import os
import re
import signal
import subprocess

import pytest

from helpers import INTERPRETERS_AVAILABLE, WORKLOADS, Recording, named_pids
from test_lifecycle import wait_sampling

PER_INTERPRETER = int(os.environ.get("ASYNCBPF_ORIGIN_RACE_PROCS") or 60)
EVERY = 0.03
MODES = ("exit", "exec-true", "exec-python")


def test_exit_or_exec_while_attaching(root_record_bin):
    if not INTERPRETERS_AVAILABLE:
        pytest.skip("no supported interpreter installed")
    argv = [root_record_bin, "-a", "--stats"]
    started = []
    with subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          start_new_session=True) as rec:
        try:
            wait_sampling(rec)
            script = os.path.join(WORKLOADS, "exit_race.py")
            cmds = " ".join('"%s -S %s %s"' % (i.path, script, MODES[k % len(MODES)])
                            for i in INTERPRETERS_AVAILABLE for k in range(PER_INTERPRETER))
            # a shell starts them, each in a session of its own, and prints each pid
            spawner = subprocess.Popen(
                ["sh", "-c", 'for c in %s; do setsid $c >/dev/null 2>&1 & echo $!; '
                 'sleep %s; done; wait' % (cmds, EVERY)],
                stdout=subprocess.PIPE, start_new_session=True)
            started.extend(int(l) for l in spawner.stdout)
            assert spawner.wait(timeout=600) == 0, "the spawner failed"
            rec.send_signal(signal.SIGINT)
            _, err = rec.communicate(timeout=120)
        except BaseException:
            rec.kill()
            raise
    r = Recording(argv, rec.returncode, "", err.decode(errors="replace"), 0)
    assert r.rc == 0, "recording failed" + r.describe()
    assert len(started) == PER_INTERPRETER * len(INTERPRETERS_AVAILABLE), "spawner lost pids"
    gone = set(started)
    named = [l for l in r.err_lines() if l.startswith("asyncbpf-record:")
             and gone & named_pids(l)]
    assert not named, "messages about processes that exited or exec'd: %s" % named[:10] \
        + r.describe()
    stats = dict(l.split(": ", 1) for l in r.err_lines() if ": " in l)
    created = int(stats["tasks created"])
    assert created > 0, "no task creation was seen: the probe was never attached" + r.describe()
    not_attached = int(stats["task-creation probes not attached"].split()[0])
    print("%d processes, %d tasks created, %d probes not attached (gone)"
          % (len(started), created, not_attached))
