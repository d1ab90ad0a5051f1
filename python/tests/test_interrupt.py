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

import numpy
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
want = sprintrt.SprintInstancePool.get_global_instance(plain).get_batch_loss_and_error_signal(*small)
pool = sprintrt.SprintInstancePool.get_global_instance(opts)
if call in ("torch", "builder"):  # imported before the signal can come
    import torch
    import sprintrt.torch as sprint_torch


""" + CHILDREN_FUNCTION + r"""


def wait():
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


print("ready", flush=True)
started = time.monotonic()
try:
    wait()
    outcome = "returned"
except KeyboardInterrupt:
    outcome = "interrupted"
waited = time.monotonic() - started
if len(sys.argv) > 4:  # uncaught: Python ends with the usual status
    raise KeyboardInterrupt
again = pool.get_batch_loss_and_error_signal(*small)
same = all(numpy.array_equal(a, b) for a, b in zip(want, again))
before = children()
_sprintrt.shutdown()
print(json.dumps({"outcome": outcome, "waited": waited, "same": same, "before": before,
                  "after": children()}), flush=True)
"""


def run_interrupted(opts, names, call, uncaught=False, python=sys.executable):
    """Runs the trainer, sends SIGINT 0.5 s into its call; returns its
    report (or, uncaught, its exit status) and the seconds from the signal
    to the report."""
    argv = [python, "-c", SCRIPT, json.dumps(opts), json.dumps(names), call]
    if uncaught:
        argv.append("uncaught")
    trainer = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
    try:
        assert trainer.stdout.readline().strip() == "ready"
        time.sleep(0.5)
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


def test_the_torch_loss_is_interrupted(corpus):
    pytest.importorskip("torch")
    path, names = corpus
    check_interrupted(*run_interrupted(slow_options(path), names, "torch"))
