"""Partial batches: ``get_batch_loss_and_error_signal(..., partial=True)``
and ``sprint_loss(..., partial=True)`` return the results of the segments
that succeeded, bit for bit those of a batch of only them, with a mask and
an error per failed segment (an unknown segment's code ``unknown_segment``),
through Sprint children (sprint-sim) and in-process workers alike; without
``partial`` the batch fails as a whole, as RETURNN's does."""

import math

import numpy
import pytest

import sprintrt
from conftest import random_batch, sim_options

#: Segment 2 of the batch is not in the corpus.
UNKNOWN = "no-such-segment"


def batch_with_unknown(names):
    """A batch of four segments whose segment 2 is unknown, and the batch
    of its segments 0, 1 and 3 alone (the same posteriors)."""
    lp, lengths = random_batch(names[:4])
    tags = [names[0], names[1], UNKNOWN, names[3]]
    picked = [0, 1, 3]
    alone = (numpy.ascontiguousarray(lp[:, picked]), lengths[picked], [tags[i] for i in picked])
    return (lp, lengths, tags), alone


@pytest.mark.parametrize("in_process", [False, True])
def test_a_partial_batch_returns_the_others_results_and_each_failure(corpus, in_process):
    path, names = corpus
    pool = sprintrt.SprintInstancePool.get_global_instance(sim_options(path),
                                                           in_process=in_process)
    (lp, lengths, tags), alone = batch_with_unknown(names)
    want_loss, want_signal = pool.get_batch_loss_and_error_signal(*alone)

    # All or nothing by default.
    with pytest.raises(sprintrt.Error) as failed:
        pool.get_batch_loss_and_error_signal(lp, lengths, tags)
    assert failed.value.code == "unknown_segment"
    assert f"segment 2 ('{UNKNOWN}')" in str(failed.value)

    result = pool.get_batch_loss_and_error_signal(lp, lengths, tags, partial=True)
    assert isinstance(result, sprintrt.PartialBatch)
    loss, error_signal, ok, errors = result
    assert loss.dtype == numpy.float32 and loss.shape == (4,)
    assert error_signal.shape == lp.shape
    assert ok.dtype == numpy.bool_ and ok.tolist() == [True, True, False, True]
    assert loss[[0, 1, 3]].tobytes() == want_loss.tobytes()
    assert math.isnan(loss[2])
    assert error_signal[:, [0, 1, 3]].tobytes() == want_signal.tobytes()
    assert not error_signal[:, 2].any()
    assert errors[0] is None and errors[1] is None and errors[3] is None
    error = errors[2]
    assert isinstance(error, sprintrt.Error)
    assert error.code == "unknown_segment"
    assert (error.index, error.tag) == (2, UNKNOWN)
    assert f"unknown segment '{UNKNOWN}'" in str(error)
    # A batch refused as a whole still raises.
    lengths[0] = lp.shape[0] + 1
    with pytest.raises(sprintrt.Error) as refused:
        pool.get_batch_loss_and_error_signal(lp, lengths, tags, partial=True)
    assert refused.value.code == "invalid_input"
    with pytest.raises(TypeError, match="partial must be a bool, got int"):
        pool.get_batch_loss_and_error_signal(lp, lengths, tags, partial=1)


def test_sprint_loss_partial_masks_the_failed_segments_loss_and_gradient(corpus):
    torch = pytest.importorskip("torch")
    from sprintrt.torch import PartialLoss, sprint_loss
    path, names = corpus
    pool = sprintrt.SprintInstancePool.get_global_instance(sim_options(path))
    (lp, lengths, tags), (lp_alone, lengths_alone, tags_alone) = batch_with_unknown(names)

    z_alone = torch.from_numpy(lp_alone).double().requires_grad_()
    want = sprint_loss(z_alone, lengths_alone, tags_alone, pool)
    want.sum().backward()

    with pytest.raises(sprintrt.Error) as failed:
        sprint_loss(torch.from_numpy(lp).double(), lengths, tags, pool)
    assert failed.value.code == "unknown_segment"

    z = torch.from_numpy(lp).double().requires_grad_()
    result = sprint_loss(z, lengths, tags, pool, partial=True)
    assert isinstance(result, PartialLoss)
    loss, ok, errors = result
    assert loss.dtype == torch.float64 and ok.dtype == torch.bool
    assert ok.tolist() == [True, True, False, True]
    assert torch.equal(loss[ok], want.detach())
    assert torch.isnan(loss[2])
    assert errors[2].code == "unknown_segment" and errors[2].tag == UNKNOWN
    assert [e is None for e in errors] == [True, True, False, True]
    # A NaN gradient into the failed segment (what its NaN loss gives in
    # most expressions) leaves its gradient zero; the others' are those of
    # the batch without it.
    grad_loss = torch.tensor([1.0, 1.0, math.nan, 1.0], dtype=torch.float64)
    (grad,) = torch.autograd.grad(loss, z, grad_outputs=grad_loss, retain_graph=True)
    assert torch.equal(grad[:, [0, 1, 3]], z_alone.grad)
    assert not grad[:, 2].any()
    # The usual ways to sum the rest.
    loss.nansum().backward()
    assert torch.equal(z.grad, grad)
