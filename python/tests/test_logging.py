"""sprintrt's logs go through Python's logging: the runtime's records under
the `sprintrt` logger, the Sprint children's output lines under
`sprintrt.child`, nothing on stdout, the last records delivered at exit,
none lost silently when the queue overflows, and a thread holding the GIL
never holds up the runtime."""

import json
import logging
import os
import re
import subprocess
import sys
import threading
import time

import pytest

import sprintrt
from sprintrt import _sprintrt
from conftest import SPRINT_SIM, random_batch, sim_options
from test_shutdown import processes_mentioning

TESTS = os.path.dirname(os.path.abspath(__file__))


class Collector(logging.Handler):
    """Keeps every record it is given."""

    def __init__(self):
        super().__init__(logging.NOTSET)
        self.records = []
        self.changed = threading.Condition()

    def emit(self, record):
        with self.changed:
            self.records.append(record)
            self.changed.notify_all()

    def wait_for(self, predicate, timeout=10):
        """The first record for which ``predicate`` holds, waiting up to
        ``timeout`` seconds for it; fails the test if none comes."""
        deadline = time.monotonic() + timeout
        with self.changed:
            while True:
                for record in self.records:
                    if predicate(record):
                        return record
                left = deadline - time.monotonic()
                if left <= 0:
                    pytest.fail("no such record; got %r" % [r.getMessage() for r in self.records])
                self.changed.wait(left)


@pytest.fixture
def collected():
    """A Collector on the `sprintrt` logger, sprintrt at level info."""
    logger = logging.getLogger("sprintrt")
    handler = Collector()
    logger.addHandler(handler)
    sprintrt.set_log_level("info")
    yield handler
    logger.removeHandler(handler)
    sprintrt.set_log_level("info")
    logger.setLevel(logging.NOTSET)


def fake_child(tmp_path, delay=0.0):
    """A Sprint executable that writes a line to stderr, waits ``delay``
    seconds, then becomes sprint-sim."""
    script = tmp_path / "fake-child.sh"
    script.write_text("#!/bin/sh\necho 'fake child says hello' >&2\nsleep %g\nexec '%s' \"$@\"\n"
                      % (delay, SPRINT_SIM))
    script.chmod(0o755)
    return str(script)


def run_python(code, *args):
    """Runs ``code`` in a new interpreter (beside conftest); returns the run."""
    run = subprocess.run([sys.executable, "-c", code] + list(args), capture_output=True,
                         text=True, timeout=60, cwd=TESTS)
    assert run.returncode == 0, run.stderr
    return run


def test_a_pools_info_line_reaches_the_sprintrt_logger(collected, corpus):
    path, names = corpus
    pool = sprintrt.SprintInstancePool(sim_options(path))
    lp, lengths = random_batch(names[:2])
    pool.get_batch_loss_and_error_signal(lp, lengths, names[:2])
    record = collected.wait_for(lambda r: "ready after" in r.getMessage())
    assert record.name == "sprintrt" and record.levelno == logging.INFO
    assert re.fullmatch(r"pool \d+ worker 0: Sprint child 'sprint-sim' pid \d+ ready after \d+ ms",
                        record.getMessage()), record.getMessage()


def test_a_childs_output_line_reaches_the_child_logger(collected, corpus, tmp_path):
    path, names = corpus
    pool = sprintrt.SprintInstancePool(dict(sim_options(path), sprintExecPath=fake_child(tmp_path)))
    lp, lengths = random_batch(names[:2])
    pool.get_batch_loss_and_error_signal(lp, lengths, names[:2])
    record = collected.wait_for(lambda r: "fake child says hello" in r.getMessage())
    assert record.name == "sprintrt.child" and record.levelno == logging.INFO


def test_levels_map_to_loggings_and_set_log_level_sets_both(collected):
    sprintrt.set_log_level("trace")
    assert logging.getLogger("sprintrt").level == 5
    for level in ("trace", "debug", "info", "warning", "error", "critical"):
        _sprintrt._log("sprintrt", level, "level-" + level)
    collected.wait_for(lambda r: r.getMessage() == "level-critical")
    assert [(r.getMessage(), r.levelno) for r in collected.records
            if r.getMessage().startswith("level-")] == [
        ("level-trace", 5), ("level-debug", logging.DEBUG), ("level-info", logging.INFO),
        ("level-warning", logging.WARNING), ("level-error", logging.ERROR),
        ("level-critical", logging.CRITICAL)]

    for name, number in [("warn", logging.WARNING), ("warning", logging.WARNING),
                         ("critical", logging.CRITICAL), ("off", logging.CRITICAL + 10),
                         ("debug", logging.DEBUG)]:
        sprintrt.set_log_level(name)
        assert logging.getLogger("sprintrt").level == number
    # Below spdlog's level a record never reaches Python.
    sprintrt.set_log_level("warning")
    logging.getLogger("sprintrt").setLevel(logging.DEBUG)
    _sprintrt._log("sprintrt", "info", "quiet-info")
    _sprintrt._log("sprintrt.child", "info", "quiet-child")
    _sprintrt._log("sprintrt", "warning", "quiet-marker")
    collected.wait_for(lambda r: r.getMessage() == "quiet-marker")
    assert not [r for r in collected.records if r.getMessage() in ("quiet-info", "quiet-child")]
    with pytest.raises(ValueError, match="level must be one of .*; got 'loud'"):
        sprintrt.set_log_level("loud")


def test_an_overflow_drops_the_oldest_and_says_how_many(collected):
    capacity = _sprintrt._log_queue_capacity
    assert capacity == 10000
    with sprintrt._logging._log_delivery:  # nothing is delivered meanwhile
        _sprintrt._take_log_records()  # earlier tests' records, if any are left
        for i in range(capacity + 7):
            _sprintrt._log("sprintrt", "info", "overflow-%d" % i)
    collected.wait_for(lambda r: r.getMessage() == "overflow-%d" % (capacity + 6))
    got = [r for r in collected.records if r.getMessage().startswith(("overflow-", "7 log"))]
    assert got[0].levelno == logging.WARNING and got[0].name == "sprintrt"
    assert got[0].getMessage() == (
        "7 log record(s) dropped: the queue for Python's logging was full (10000 records) "
        "because Python did not take them fast enough")
    assert [r.getMessage() for r in got[1:]] == ["overflow-%d" % i
                                                 for i in range(7, capacity + 7)]


NOTHING_ON_STDOUT = r"""
import json, sys
import sprintrt
from sprintrt import _sprintrt
from conftest import random_batch

opts, names = json.loads(sys.argv[1]), json.loads(sys.argv[2])
pool = sprintrt.SprintInstancePool.get_global_instance(opts)
lp, lengths = random_batch(names[:3])
pool.get_batch_loss_and_error_signal(lp, lengths, names[:3])
_sprintrt._log("sprintrt", "warning", "a warning from sprintrt")
"""


def test_nothing_is_written_to_stdout(corpus, tmp_path):
    path, names = corpus
    opts = dict(sim_options(path), sprintExecPath=fake_child(tmp_path))
    run = run_python(NOTHING_ON_STDOUT, json.dumps(opts), json.dumps(names))
    assert run.stdout == ""
    # logging's defaults: warnings on stderr (its last resort), info dropped.
    assert run.stderr == "a warning from sprintrt\n"
    assert processes_mentioning(path) == []


LAST_RECORDS = r"""
import json, logging, sys
logging.basicConfig(level=logging.DEBUG, stream=sys.stderr,
                    format="%(name)s:%(levelname)s:%(message)s")
import sprintrt
from sprintrt import _sprintrt
from conftest import random_batch

opts, names = json.loads(sys.argv[1]), json.loads(sys.argv[2])
sprintrt.set_log_level("debug")
pool = sprintrt.SprintInstancePool.get_global_instance(opts)
lp, lengths = random_batch(names[:3])
pool.get_batch_loss_and_error_signal(lp, lengths, names[:3])
for i in range(3000):
    _sprintrt._log("sprintrt", "info", "last-%d" % i)
"""


def test_the_last_records_are_delivered_at_exit(corpus):
    path, names = corpus
    run = run_python(LAST_RECORDS, json.dumps(sim_options(path)), json.dumps(names))
    assert run.stdout == ""
    lines = run.stderr.splitlines()
    last = [line for line in lines if line.startswith("sprintrt:INFO:last-")]
    assert last == ["sprintrt:INFO:last-%d" % i for i in range(3000)]
    # The child exits during the shutdown at exit, after the records above.
    after = lines[lines.index("sprintrt:INFO:last-2999") + 1:]
    assert [line for line in after
            if re.fullmatch(r"sprintrt:DEBUG:\[pool \d+ worker 0\] pid \d+ exited with status 0",
                            line)], run.stderr
    assert processes_mentioning(path) == []


def test_a_thread_holding_the_gil_does_not_hold_up_the_runtime(collected, corpus, tmp_path):
    path, names = corpus
    # The child is ready 0.3 s after it starts, so the runtime logs (the
    # child's line, "ready") while the spinning thread below holds the GIL;
    # its six segments take 0.1 s each.
    opts = dict(sim_options(path, extra=["--*.delay-ms=100"]),
                sprintExecPath=fake_child(tmp_path, delay=0.3))
    sprintrt.set_log_level("debug")
    lp, lengths = random_batch(names[:6])
    main = threading.main_thread().ident
    spun = {}

    def spin():
        # Waits until the main thread is in the call (it then releases the
        # GIL), then keeps the GIL for 2 s in pure Python: with a switch
        # interval of 100 s no other thread gets it meanwhile.
        while sys._current_frames()[main].f_code.co_name != "get_batch_loss_and_error_signal":
            time.sleep(0.001)
        time.sleep(0.02)
        sys.setswitchinterval(100)
        spun["start"] = time.monotonic()
        while time.monotonic() < spun["start"] + 2:
            pass
        spun["end"] = time.monotonic()
        sys.setswitchinterval(interval)

    interval = sys.getswitchinterval()
    spinner = threading.Thread(target=spin)
    try:
        pool = sprintrt.SprintInstancePool(opts)
        spinner.start()
        pool.get_batch_loss_and_error_signal(lp, lengths, names[:6])
        returned = time.monotonic()
    finally:
        spinner.join()
        sys.setswitchinterval(interval)
    # The batch (0.3 s start, 0.6 s of segments) was done while the GIL was
    # held: the call returned as soon as the spinning thread let go of it
    # (a runtime waiting for the GIL to log would compute the segments after).
    assert returned - spun["end"] < 0.3, (returned - spun["end"])
    collected.wait_for(lambda r: "fake child says hello" in r.getMessage())
    collected.wait_for(lambda r: "ready after" in r.getMessage())
