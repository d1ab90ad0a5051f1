"""Ctrl-C during a call that waits for Sprint: each case runs a trainer in
its own interpreter, sends it SIGINT half a second into a long batch, and
checks that `KeyboardInterrupt` comes within 1.5 s (not when the batch would
have ended), that the next batch on the same pool is bit-identical to an
uninterrupted one, and that no child is left once the pool is shut down."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from conftest import CHILDREN_FUNCTION, sim_options

# The trainer: prints "ready" with its reference results, then waits in
# `CALL` until interrupted; reports what happened as one JSON line.
SCRIPT = r"""
import json, os, sys, time
import numpy
import sprintrt
from sprintrt import _sprintrt

opts, names = json.loads(sys.argv[1]), json.loads(sys.argv[2])
call = sys.argv[3]
rng = numpy.random.default_rng(3)
lengths = numpy.array([4 + i % 6 for i in range(len(names))], dtype=numpy.int32)
logits = rng.normal(0, 2, size=(int(lengths.max()), len(names), 5)).astype(numpy.float32)
lp = (logits - numpy.log(numpy.exp(logits).sum(axis=2, keepdims=True))).astype(numpy.float32)
small = (numpy.ascontiguousarray(lp[:, :2]), lengths[:2], names[:2])

# The reference: the same small batch on a pool without faults or delays.
plain = dict(opts, sprintConfigStr=[a for a in opts["sprintConfigStr"]
                                    if not a.startswith(("--*.fault", "--*.delay"))],
             numInstances=1)
plain_pool = sprintrt.SprintInstancePool.get_global_instance(plain)
want = plain_pool.get_batch_loss_and_error_signal(*small)
pool = sprintrt.SprintInstancePool.get_global_instance(opts)
if call in ("torch", "builder"):  # imported before the signal can come
    import torch
    import sprintrt.torch as sprint_torch


""" + CHILDREN_FUNCTION + r"""


builder = None


def wait():
    global builder
    if call == "batch":
        pool.get_batch_loss_and_error_signal(lp, lengths, names)
    elif call == "automata":
        pool.get_automata_for_batch(names)
    elif call == "fsas":
        pool._pool.export_fsas(names)
    elif call == "builder":
        builder = sprint_torch.FsaBuilder(pool=pool)
        try:
            builder.build_batch(names)
        finally:
            # The interrupted exports are over: nothing is left under way.
            assert builder.stats()["in_flight"] == 0
    elif call == "torch":
        log_probs = torch.tensor(lp, requires_grad=True)
        sprint_torch.sprint_loss(log_probs, torch.tensor(lengths), names, pool).sum().backward()
    elif call == "train":
        sched = sprintrt.SeqTrainScheduler(pool, forward_seq_delay=len(names) + 1)
        sched.start_epoch(1)
        sched.forward(numpy.arange(len(names)), lp, lengths, names)
        parts = [sprintrt.SeqTrainPart(seq_idx=b, batch_slice=b, batch_frame_offset=0,
                                       seq_start_frame=0, seq_end_frame=int(lengths[b]))
                 for b in range(len(names))]
        sched.train([sprintrt.SeqTrainBatch(num_frames=lp.shape[0], num_slices=len(names),
                                            parts=parts)])


print("ready %d" % os.getpgrp(), flush=True)
started = time.monotonic()
try:
    wait()
    outcome = "returned"
except KeyboardInterrupt:
    outcome = "interrupted"
waited = time.monotonic() - started
flags = sys.argv[4:]
if "uncaught" in flags:  # Python ends with the usual status
    raise KeyboardInterrupt
again = pool.get_batch_loss_and_error_signal(*small)
same = all(numpy.array_equal(a, b) for a, b in zip(want, again))
before = children()
groups = []
for pid in before:
    with open("/proc/%d/stat" % pid) as stat:
        groups.append(int(stat.read().rsplit(")", 1)[1].split()[2]))
report = {"outcome": outcome, "waited": waited, "same": same, "before": before,
          "groups": groups}
if builder is not None:
    report["stats"] = builder.stats()
    if "rebuild" in flags:  # the same batch again, after the interrupted one
        report["stats_after"] = (builder.build_batch(names), builder.stats())[1]
_sprintrt.shutdown()
report["after"] = children()
print(json.dumps(report), flush=True)
"""


def run_interrupted(opts, names, call, uncaught=False, python=sys.executable, after=0.5,
                    stderr=None, rebuild=False):
    """Runs the trainer, sends SIGINT ``after`` seconds into its call;
    returns its report (or, uncaught, its exit status) and the seconds from
    the signal to the report. With ``stderr`` (a file), the trainer runs in
    a process group of its own, its stderr goes there, and the signal goes
    to the whole group, as a terminal's Ctrl-C does. With ``rebuild``, the
    builder builds the batch again after the interrupt and reports its
    stats then too."""
    argv = [python, "-c", SCRIPT, json.dumps(opts), json.dumps(names), call]
    if uncaught:
        argv.append("uncaught")
    if rebuild:
        argv.append("rebuild")
    trainer = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True, stderr=stderr,
                               start_new_session=stderr is not None)
    try:
        ready = trainer.stdout.readline().split()
        assert ready[0] == "ready"
        time.sleep(after)
        if stderr is not None:
            assert int(ready[1]) == trainer.pid  # its group's leader
            os.killpg(trainer.pid, signal.SIGINT)
        else:
            trainer.send_signal(signal.SIGINT)
        signalled = time.monotonic()
        if uncaught:
            return trainer.wait(timeout=30), time.monotonic() - signalled
        line = trainer.stdout.readline()
        elapsed = time.monotonic() - signalled
        assert trainer.wait(timeout=30) == 0
        return json.loads(line), elapsed
    finally:
        if trainer.poll() is None:
            trainer.kill()
            trainer.wait()


def slow_options(corpus_path, **keys):
    # 12 segments of 1.5 s over two children: a 9 s batch.
    return sim_options(corpus_path, ["--*.delay-ms=1500"], numInstances=2, **keys)


def check_interrupted(report, elapsed):
    assert report["outcome"] == "interrupted"
    assert report["waited"] < 2.0  # 0.5 s before the signal, at most 1.5 s after
    assert elapsed < 5.0  # includes the next (small) batch and the shutdown
    assert report["same"]
    assert report["before"]  # the children were there...
    assert report["after"] == []  # ...and none is left


def test_a_slow_batch_is_interrupted(corpus):
    path, names = corpus
    check_interrupted(*run_interrupted(slow_options(path), names, "batch"))


def test_a_batch_on_a_hung_child_is_interrupted(corpus):
    path, names = corpus
    # One child that answers two requests and then never again; a short
    # replyTimeout, whose kill and resend must not swallow the interrupt.
    opts = sim_options(path, ["--*.fault=hang", "--*.fault-after=2"], replyTimeout=2)
    check_interrupted(*run_interrupted(opts, names, "batch"))


def test_automata_are_interrupted(corpus):
    path, names = corpus
    check_interrupted(*run_interrupted(slow_options(path), names, "automata"))


def test_fsa_exports_are_interrupted(corpus):
    path, names = corpus
    check_interrupted(*run_interrupted(slow_options(path), names, "fsas"))


def test_the_fsa_builder_is_interrupted(corpus):
    pytest.importorskip("torch")
    path, names = corpus
    check_interrupted(*run_interrupted(slow_options(path), names, "builder"))


def test_a_train_request_is_interrupted(corpus):
    path, names = corpus
    check_interrupted(*run_interrupted(slow_options(path), names, "train"))


def test_an_uncaught_interrupt_ends_python_as_usual(corpus):
    path, names = corpus
    status, elapsed = run_interrupted(slow_options(path), names, "batch", uncaught=True)
    assert status == -signal.SIGINT  # Python re-raises SIGINT on an uncaught KeyboardInterrupt
    assert elapsed < 5.0


def test_a_terminals_ctrl_c_reaches_the_trainer_and_not_its_children(corpus, tmp_path):
    path, names = corpus
    with open(tmp_path / "stderr.txt", "w+") as stderr:
        report, elapsed = run_interrupted(slow_options(path), names, "batch", stderr=stderr)
        stderr.seek(0)
        log = stderr.read()
    check_interrupted(report, elapsed)
    # The children are in groups of their own, so the signal to the
    # trainer's group never reached them: none died of it, nothing was resent.
    assert report["groups"] and os.getpgrp() not in report["groups"]
    assert all(group == pid for group, pid in zip(report["groups"], report["before"]))
    assert "killed by signal" not in log and "resending" not in log, log


def test_an_interrupted_builder_keeps_what_arrived_and_counts_the_rest_cancelled(corpus, tmp_path):
    pytest.importorskip("torch")
    path, names = corpus
    # 12 segments of 0.4 s each over two children; interrupted after 1.5 s,
    # when some (about 6) have arrived.
    opts = sim_options(path, ["--*.delay-ms=400"], numInstances=2)
    with open(tmp_path / "stderr.txt", "w+") as stderr:
        report, _ = run_interrupted(opts, names, "builder", after=1.5, stderr=stderr,
                                    rebuild=True)
        stderr.seek(0)
        log = stderr.read()
    assert report["outcome"] == "interrupted"
    stats = report["stats"]
    arrived = stats["entries"]
    assert 0 < arrived < len(names), stats
    assert stats["failures"] == 0, stats
    assert stats["cancelled"] == len(names) - arrived, stats
    assert stats["in_flight"] == 0
    # The next build finds what arrived in the cache and exports the rest.
    after = report["stats_after"]
    assert after["hits"] == arrived, after
    assert after["exports"] == len(names) + len(names) - arrived, after
    assert after["entries"] == len(names) and after["failures"] == 0
    assert "killed by signal" not in log and "resending" not in log, log


def test_the_torch_loss_is_interrupted(corpus):
    pytest.importorskip("torch")
    path, names = corpus
    check_interrupted(*run_interrupted(slow_options(path), names, "torch"))
