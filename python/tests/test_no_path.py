"""One rule for a segment without a path (too few frames, an unreachable end
state, a frame whose every log-posterior is -inf), the same in the pool,
`sprint_loss`, `fsa_loss` and the scheduler: loss inf, zero gradient,
counted, and named once in a warning (docs/design.md, "A segment without a
path"). The CLI's side: tests/integration/batch_commands_test.cpp."""

import logging

import numpy
import pytest

import sprintrt
from conftest import DIM, SPRINT_SIM

NAMES = ["fine", "long", "dead"]
LENGTHS = numpy.array([6, 3, 6], numpy.int32)


def _options(tmp_path):
    # "long" has 8 labels for 3 frames; "dead" gets a frame of all -inf.
    (tmp_path / "corpus.txt").write_text("fine\t1 2\nlong\t1 2 3 4 1 2 3 4\ndead\t1 2\n")
    return sprintrt.Options({"sprintExecPath": SPRINT_SIM,
                             "sprintConfigStr": ["--*.corpus=%s" % (tmp_path / "corpus.txt"),
                                                 "--*.topology=ctc"]})


def _batch():
    rng = numpy.random.default_rng(5)
    logits = rng.normal(size=(6, 3, DIM))
    lp = (logits - numpy.log(numpy.exp(logits).sum(axis=2, keepdims=True))).astype(numpy.float32)
    lp[1, 2, :] = -numpy.inf
    lp[3:, 1] = 0  # padding
    return lp


def _warnings(caplog):
    """The sprintrt warnings so far, those of the runtime's threads included
    (queued for the delivering thread: delivered here)."""
    sprintrt._logging._deliver_log_records()
    return [r.getMessage() for r in caplog.records
            if r.name == "sprintrt" and r.levelno == logging.WARNING]


POOL_WARNING = ("batch: 2 of 3 segments without a path (loss inf, error signal zero): "
                "2 segments: 1 ('long'), 2 ('dead')")


@pytest.mark.parametrize("in_process", [False, True])
def test_the_pool_gives_inf_and_zero_counts_and_warns_once(tmp_path, caplog, in_process):
    # In-process workers compute in the trainer: their skips are the pool's
    # warning too, not one more per segment.
    pool = sprintrt.SprintInstancePool.get_global_instance(_options(tmp_path),
                                                           in_process=in_process)
    with caplog.at_level(logging.WARNING, logger="sprintrt"):
        loss, error_signal = pool.get_batch_loss_and_error_signal(_batch(), LENGTHS, NAMES)
    assert numpy.isfinite(loss[0]) and numpy.isinf(loss[1:]).all()
    assert not error_signal[:, 1:].any() and error_signal[:, 0].any()
    (warning,) = _warnings(caplog)
    assert warning.endswith(POOL_WARNING), warning
    assert pool._pool.stats()["skipped_segments"] == 2


def test_sprint_loss_gives_inf_and_a_zero_gradient(tmp_path, caplog):
    torch = pytest.importorskip("torch")
    from sprintrt.torch import sprint_loss

    pool = sprintrt.SprintInstancePool.get_global_instance(_options(tmp_path))
    log_probs = torch.tensor(_batch(), requires_grad=True)
    with caplog.at_level(logging.WARNING, logger="sprintrt"):
        loss = sprint_loss(log_probs, LENGTHS, NAMES, pool)
    assert torch.isfinite(loss[0]) and torch.isinf(loss[1:]).all()
    loss.backward(torch.ones(3))
    assert not log_probs.grad[:, 1:].any() and log_probs.grad[:, 0].any()
    (warning,) = _warnings(caplog)
    assert warning.endswith(POOL_WARNING), warning


@pytest.mark.parametrize("implementation", ["kernel", "torch"])
def test_fsa_loss_gives_inf_and_a_zero_gradient_counts_and_warns_once(tmp_path, caplog,
                                                                      implementation):
    torch = pytest.importorskip("torch")
    from sprintrt.torch import FsaBuilder, fsa_loss, fsa_loss_stats

    fsa = FsaBuilder(_options(tmp_path), in_process=True).build_batch(NAMES)
    log_probs = torch.tensor(_batch(), requires_grad=True)
    before = fsa_loss_stats()
    with caplog.at_level(logging.WARNING, logger="sprintrt"):
        loss = fsa_loss(log_probs, LENGTHS, fsa, implementation=implementation)
    assert torch.isfinite(loss[0]) and torch.isinf(loss[1:]).all()
    loss.backward(torch.ones(3))
    assert not log_probs.grad[:, 1:].any() and log_probs.grad[:, 0].any()
    (warning,) = _warnings(caplog)
    assert warning.startswith("fsa_loss: 2 of 3 sequences without a path (loss inf, gradient "
                              "zero: ")
    assert warning.endswith("): 1, 2")
    after = fsa_loss_stats()
    assert (after["calls"] - before["calls"], after["sequences"] - before["sequences"],
            after["skipped"] - before["skipped"]) == (1, 3, 2)


@pytest.mark.parametrize("implementation", ["kernel", "torch"])
def test_fsa_loss_of_an_unreachable_end_state(implementation, caplog):
    torch = pytest.importorskip("torch")
    from sprintrt.torch import fsa_loss

    # States 0 -> 1 (emitting 1, then a loop on 1); the end state 2 has no
    # edge into it.
    edges = torch.tensor([[0, 1], [1, 1], [1, 1], [0, 0]])
    fsa = (3, edges, torch.zeros(2), torch.tensor([[0], [2]]))
    log_probs = torch.full((4, 1, 3), -1.0, requires_grad=True)
    with caplog.at_level(logging.WARNING, logger="sprintrt"):
        loss = fsa_loss(log_probs, [4], fsa, implementation=implementation)
    assert torch.isinf(loss).all()
    loss.backward(torch.ones(1))
    assert not log_probs.grad.any()
    (warning,) = _warnings(caplog)
    assert warning.startswith("fsa_loss: 1 of 1 sequences without a path")


def test_the_scheduler_gives_inf_and_a_zero_error_signal_counts_and_warns(tmp_path, caplog):
    pool = sprintrt.SprintInstancePool.get_global_instance(_options(tmp_path))
    lp = _batch()
    sched = sprintrt.SeqTrainScheduler(pool, forward_seq_delay=8)
    sched.start_epoch(1)
    with caplog.at_level(logging.WARNING, logger="sprintrt"):
        sched.forward([0, 1, 2], lp, LENGTHS, NAMES)  # an all -inf frame is not refused
        parts = [sprintrt.SeqTrainPart(seq_idx=b, batch_slice=b, batch_frame_offset=0,
                                       seq_start_frame=0, seq_end_frame=int(n))
                 for b, n in enumerate(LENGTHS)]
        loss, hat_y = sched.train([sprintrt.SeqTrainBatch(num_frames=6, num_slices=3,
                                                          parts=parts)])
    assert numpy.isfinite(loss[0]) and numpy.isinf(loss[1:]).all()
    signal = sprintrt.seqtrain_error_signal(lp, hat_y, LENGTHS)
    assert not signal[:, 1:].any() and signal[:, 0].any()
    assert sched.finish_epoch()["skipped"] == 2
    warnings = _warnings(caplog)
    assert [w for w in warnings if "without a path" in w] == [
        "seqtrain: sequence 1 ('long') without a path (loss inf, error signal zero)",
        "seqtrain: sequence 2 ('dead') without a path (loss inf, error signal zero)"]
