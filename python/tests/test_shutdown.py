"""Process-wide behaviour, each in a separate interpreter (the runtime and
its logger are one per process): `sprintrt` shuts its runtime down at
interpreter exit with pools, schedulers and calls still in flight, leaves no
child behind, and objects used after the shutdown raise `sprintrt.Error`;
`set_log_level` quiets its logs."""

import json
import os
import subprocess
import sys

import pytest

import sprintrt

from conftest import CHILDREN_FUNCTION, sim_options

SCRIPT = r"""
import json, os, sys
import numpy
import sprintrt
from sprintrt import _sprintrt

opts, names = json.loads(sys.argv[1]), json.loads(sys.argv[2])
pool = sprintrt.SprintInstancePool.get_global_instance(opts)
sched = sprintrt.SeqTrainScheduler(pool)
lp = numpy.full((4, 2, 5), numpy.log(0.2), dtype=numpy.float32)
batch = (lp, [4, 3], names[:2])
pool.get_batch_loss_and_error_signal(*batch)


""" + CHILDREN_FUNCTION + r"""


before = children()
_sprintrt.shutdown()
after = children()
errors = []
for call in (lambda: pool.get_batch_loss_and_error_signal(*batch),
             lambda: pool.get_automata_for_batch(names[:1]),
             lambda: sched.stats(),
             lambda: sprintrt.SprintInstancePool(dict(opts, numInstances=3))):
    try:
        call()
        errors.append(None)
    except sprintrt.Error as e:
        errors.append([e.code, str(e)])
print(json.dumps({"before": before, "after": after, "errors": errors}))
# The pool and the scheduler are still referenced when the interpreter ends.
"""


def test_shutdown_stops_everything_and_later_calls_raise(corpus):
    path, names = corpus
    run = subprocess.run([sys.executable, "-c", SCRIPT, json.dumps(sim_options(path)),
                          json.dumps(names)], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    result = json.loads(run.stdout.splitlines()[-1])
    assert len(result["before"]) == 1  # the pool's one sprint-sim child
    assert result["after"] == []  # stopped and reaped: not even a zombie
    for error in result["errors"]:
        assert error is not None
        code, text = error
        assert code == "cancelled"
        assert "cannot be used: sprintrt was shut down" in text


EXIT_SCRIPT = r"""
import atexit, json, sys, threading, time
import numpy

outcome = []
trainers = []


def report():
    # Registered before sprintrt's own handler, so it runs after it.
    for t in trainers:
        t.join(5)
    print("outcome", json.dumps(outcome), flush=True)


atexit.register(report)
import sprintrt

opts, names = json.loads(sys.argv[1]), json.loads(sys.argv[2])
pool = sprintrt.SprintInstancePool.get_global_instance(opts)
sched = sprintrt.SeqTrainScheduler(pool, forward_seq_delay=8)
lp = numpy.full((4, 2, 5), numpy.log(0.2), dtype=numpy.float32)
sched.start_epoch(0)
sched.forward([0, 1], lp, [4, 3], names[:2])  # mid-epoch at exit


def trainer():
    try:
        pool.get_batch_loss_and_error_signal(lp, [4, 3], names[2:4])
        outcome.append("returned")
    except sprintrt.Error as e:
        outcome.append(e.code)


# A daemon thread still waiting in a batch when the interpreter ends.
trainers.append(threading.Thread(target=trainer, daemon=True))
trainers[0].start()
time.sleep(0.5)
print("exiting", flush=True)
"""


def processes_mentioning(text):
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open("/proc/%s/cmdline" % entry, "rb") as f:
                    if text.encode() in f.read():
                        found.append(int(entry))
            except OSError:
                pass
    return found


def test_exit_with_a_call_in_flight_stops_it_and_leaves_nothing(corpus):
    path, names = corpus
    # 5 s a segment: the daemon thread's batch is far from done at exit.
    opts = sim_options(path, extra=["--*.delay-ms=5000"])
    run = subprocess.run([sys.executable, "-c", EXIT_SCRIPT, json.dumps(opts), json.dumps(names)],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    # sprintrt logs through Python's logging (errors on stderr by default):
    # no error there, such as calls still waiting when the runtime was to be
    # destroyed.
    assert "exiting" in run.stdout.splitlines()
    # The call in flight was failed by the shutdown, not left waiting.
    assert 'outcome ["cancelled"]' in run.stdout.splitlines()
    assert "still waited" not in run.stderr, run.stderr
    assert "Traceback" not in run.stderr, run.stderr
    assert processes_mentioning(path) == []


LOG_SCRIPT = r"""
import json, logging, sys
logging.basicConfig(stream=sys.stdout, format="[%(levelname)s] %(message)s")
import numpy
import sprintrt

opts, names, level = json.loads(sys.argv[1]), json.loads(sys.argv[2]), sys.argv[3]
if level != "default":
    sprintrt.set_log_level(level)
pool = sprintrt.SprintInstancePool.get_global_instance(opts)
lp = numpy.full((4, 1, 5), numpy.log(0.2), dtype=numpy.float32)
pool.get_batch_loss_and_error_signal(lp, [4], names[:1])
"""


def test_set_log_level_quiets_sprintrts_logs(corpus):
    path, names = corpus

    def stdout_with(level):
        run = subprocess.run([sys.executable, "-c", LOG_SCRIPT, json.dumps(sim_options(path)),
                              json.dumps(names), level], capture_output=True, text=True,
                             timeout=60)
        assert run.returncode == 0, run.stderr
        return run.stdout

    logging_default = stdout_with("default")
    assert logging_default == "", logging_default  # info is below logging's default
    assert "[INFO]" in stdout_with("info")  # "Sprint child ... ready"
    assert "[INFO]" not in stdout_with("warning")
    with pytest.raises(ValueError, match="level must be one of .*; got 'loud'"):
        sprintrt.set_log_level("loud")
