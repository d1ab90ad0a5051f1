"""A batch-major (B, T, D) array where a time-major (T, B, D) one is due is
named as such by every entry point (the pool, the scheduler, `sprint_loss`,
`fsa_loss`), not blamed on the lengths or tags that match its first axis."""

import numpy
import pytest

import sprintrt
from conftest import random_batch, sim_options

BATCH_MAJOR = (r", T = 2, matches instead: did you pass a batch-major \(B, T, D\) "
               r"array\? \[T, B, D\] \(time-major\) is due \(swap its axes 0 and 1\)")


def _batch_major(corpus):
    """Two sequences of 9 frames given as [B, T, D] = [2, 9, D]."""
    path, names = corpus
    lp, lengths = random_batch(names[:2])
    lp = numpy.concatenate([lp, numpy.full((9 - lp.shape[0],) + lp.shape[1:], -1.6,
                                           numpy.float32)])
    lengths[:] = 9
    return path, names[:2], numpy.ascontiguousarray(lp.transpose(1, 0, 2)), lengths


def test_the_pool_names_a_batch_major_array(corpus):
    path, names, lp, lengths = _batch_major(corpus)
    pool = sprintrt.SprintInstancePool.get_global_instance(sim_options(path))
    with pytest.raises(ValueError, match="tags has 2 names for a batch of 9; the first axis of "
                                         "log_posteriors" + BATCH_MAJOR):
        pool.get_batch_loss_and_error_signal(lp, lengths, names)
    # With as many tags as it has columns, the lengths are the ones to blame.
    with pytest.raises(ValueError, match="seq_lengths has 2 entries for a batch of 9; "
                                         "the first axis of log_posteriors" + BATCH_MAJOR):
        pool.get_batch_loss_and_error_signal(lp, lengths, names * 4 + names[:1])
    # The right layout computes.
    loss, _ = pool.get_batch_loss_and_error_signal(lp.transpose(1, 0, 2), lengths, names)
    assert numpy.isfinite(loss).all()


def test_a_count_that_matches_no_axis_gets_no_guess(corpus):
    path, names, lp, lengths = _batch_major(corpus)
    pool = sprintrt.SprintInstancePool.get_global_instance(sim_options(path))
    with pytest.raises(ValueError) as e:
        pool.get_batch_loss_and_error_signal(lp, lengths, names + names[:1])
    assert str(e.value) == "tags has 3 names for a batch of 9"


def test_the_scheduler_names_a_batch_major_array(corpus):
    path, names, lp, lengths = _batch_major(corpus)
    pool = sprintrt.SprintInstancePool.get_global_instance(sim_options(path))
    scheduler = sprintrt.SeqTrainScheduler(pool)
    scheduler.start_epoch(1)
    with pytest.raises(ValueError, match="tags has 2 names for a batch of 9; "
                                         + "the first axis of log_posteriors" + BATCH_MAJOR):
        scheduler.forward([0, 1], lp, lengths, names)
    scheduler.finish_epoch()


def test_sprint_loss_names_a_batch_major_tensor(corpus):
    torch = pytest.importorskip("torch")
    from sprintrt.torch import sprint_loss

    path, names, lp, lengths = _batch_major(corpus)
    pool = sprintrt.SprintInstancePool.get_global_instance(sim_options(path))
    with pytest.raises(ValueError, match="seq_lengths has 2 entries for a batch of 9; "
                                         "the first axis of log_probs" + BATCH_MAJOR):
        sprint_loss(torch.from_numpy(lp), lengths, names, pool)


def test_fsa_loss_names_swapped_axes_both_ways(corpus):
    torch = pytest.importorskip("torch")
    from sprintrt.torch import FsaBuilder, fsa_loss

    path, names, lp, lengths = _batch_major(corpus)
    fsa = FsaBuilder(sim_options(path), in_process=True).build_batch(names)
    with pytest.raises(ValueError, match="seq_lens has 2 entries for a batch of 9; the first "
                                         "axis of log_probs" + BATCH_MAJOR):
        fsa_loss(torch.from_numpy(lp), lengths, fsa)
    # Time-major given with batch_first=True.
    time_major = torch.from_numpy(lp).transpose(0, 1)
    with pytest.raises(ValueError, match=r"seq_lens has 2 entries for a batch of 9; the second "
                                         r"axis of log_probs matches instead: did you pass a "
                                         r"time-major \(T, B, D\) array with batch_first=True\?"):
        fsa_loss(time_major, lengths, fsa, batch_first=True)
    assert torch.isfinite(fsa_loss(time_major, lengths, fsa)).all()
    assert torch.isfinite(fsa_loss(torch.from_numpy(lp), lengths, fsa, batch_first=True)).all()
