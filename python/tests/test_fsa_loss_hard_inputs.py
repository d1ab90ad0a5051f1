"""sprintrt.torch.fsa_loss on the inputs where float arithmetic gives way,
both implementations, from float32 log-probabilities, against the float64
log-space reference of sequence_criteria.py (a plain recursion with no
rescaling, on the same float32 values): segments of up to 3000 frames,
peaked posteriors (logits of scale 8) with log-probabilities of -1e4 among
them, ``am_scale`` 0.1 and 10, every criterion, and a denominator with an
unreachable state, a dead end and zero-cost loops. The loss must agree
within 1e-5 relative and the gradient within 1e-4 absolute."""

import numpy
import pytest

torch = pytest.importorskip("torch")

import sequence_criteria  # noqa: E402 (after the skip without PyTorch)
from sprintrt.torch import (WeightedFsa, fsa_loss, fsa_loss_stats,  # noqa: E402
                            hypotheses_denominator, join_graphs, label_lm_denominator)

DIM = 12
INF = float("inf")
# (criterion, frames, am_scale, logit scale, cut): the longest segments for
# the full sum and mmi, the extreme scales at half that length, and bmmi and
# smbr (whose reference's Viterbi is a Python loop over edges) at a third
# (tests/criterion holds the kernel to T=3000 at every scale). With ``cut``, 1% of the
# log-probabilities are -1e4: beyond what probability space holds beside
# a frame's largest score, so the denominators run in log space; without,
# in probability space (the scores span less than 700 at every scale).
CASES = [
    ("full-sum", 3000, 1.0, 2.0, True),
    ("mmi", 3000, 1.0, 8.0, True),
    ("mmi", 1500, 10.0, 5.0, False),
    ("mmi", 1500, 0.1, 8.0, False),
    ("bmmi", 1000, 1.0, 8.0, True),
    ("bmmi", 1000, 10.0, 5.0, False),
    ("smbr", 1000, 1.0, 8.0, False),
    ("smbr", 1000, 10.0, 2.0, True),
]


def with_hard_states(den):
    """``den`` (one sequence, states 0 .. S-1, end S-1) with two states
    more, renumbered so that the end stays the highest: one that no edge
    reaches (its edges lead to the end), and a dead end that the start
    reaches but that reaches nothing; and a zero-cost loop at the start."""
    num_states = int(den.num_states)
    edges = den.edges.long().clone()
    end = num_states - 1
    unreachable, dead_end, new_end = end, end + 1, end + 2
    edges[:2][edges[:2] == end] = new_end
    # (from, to, emission, weight)
    added = [(unreachable, new_end, 1, 0.0), (unreachable, unreachable, 2, 0.0),
             (0, dead_end, 3, 0.5), (dead_end, dead_end, 4, 0.0), (0, 0, 5, 0.0)]
    extra = torch.tensor([[e[0], e[1], e[2], 0] for e in added]).T
    weights = torch.cat([den.weights.double(), torch.tensor([e[3] for e in added],
                                                            dtype=torch.float64)])
    return WeightedFsa(torch.tensor(num_states + 2), torch.cat([edges, extra], 1).int(),
                       weights, torch.tensor([[0], [new_end]], dtype=torch.int32))


def hard_batch(frames, logit_scale, cut, seed):
    """Two sequences (``frames`` and ``frames - 37`` frames), their CTC
    numerators, the label-bigram denominator with hard states, and float32
    log-probabilities, with ``cut`` -1e4 at 1% of the entries."""
    generator = torch.Generator().manual_seed(seed)
    lengths = [frames, frames - 37]
    labels = [torch.randint(1, DIM, (n // 12,), generator=generator).tolist() for n in lengths]
    numerators = join_graphs([hypotheses_denominator([seq], DIM) for seq in labels])
    denominator = with_hard_states(label_lm_denominator(labels, DIM, order=2))
    logits = torch.randn(frames, len(lengths), DIM, generator=generator) * logit_scale
    log_probs = logits.log_softmax(-1)
    if cut:
        log_probs = log_probs.masked_fill(torch.rand(log_probs.shape, generator=generator) < 0.01,
                                          -1e4)
    return log_probs, lengths, numerators, denominator


def sequence_of(fsa, b):
    """Sequence ``b`` of a WeightedFsa in sequence_criteria.py's form:
    (num_states, edges [E, 3], weights), start 0 and end num_states - 1."""
    edges, weights = fsa.edges.long().numpy(), fsa.weights.double().numpy()
    start, end = (int(v) for v in fsa.start_end_states[:, b])
    own = edges[3] == b
    local = edges[:3, own].T.copy()
    local[:, :2] -= start
    return end - start + 1, local, weights[own]


def reference(log_probs, lengths, num, den, criterion, am_scale, boost):
    """Loss [B] and gradient [T, B, D] in float64 from sequence_criteria.py."""
    x = log_probs.double().numpy()
    losses, gradient = [], numpy.zeros(x.shape)
    for b, length in enumerate(lengths):
        frames = x[:length, b]
        numerator = sequence_of(num, b)
        if criterion == "full-sum":
            states, edges, weights = numerator
            start = numpy.full(states, -numpy.inf)
            start[0] = 0.0
            final = numpy.zeros(states, dtype=bool)
            final[-1] = True
            scores = frames[:, edges[:, 2]] - weights[None, :]
            log_z, posteriors = sequence_criteria._forward_backward(states, edges, scores,
                                                                    start, final)
            losses.append(-log_z)
            gradient[:length, b] = -sequence_criteria._occupancy(edges, posteriors, DIM)
            continue
        loss, error = sequence_criteria.criterion(criterion, frames, (numerator, 0.0),
                                                  [(sequence_of(den, 0), 0.0)],
                                                  am_scale=am_scale, boost=boost)
        losses.append(loss)
        gradient[:length, b] = error
    return torch.tensor(losses, dtype=torch.float64), torch.from_numpy(gradient)


_references = {}


def cached_reference(case, *args):
    """``reference(*args)``, computed once per case for both implementations."""
    if case not in _references:
        _references[case] = reference(*args)
    return _references[case]


@pytest.mark.parametrize("implementation", ["kernel", "torch"])
@pytest.mark.parametrize("criterion,frames,am_scale,logit_scale,cut", CASES,
                         ids=["%s-T%d-am%g-%s" % (case[:3] + ("cut" if case[4] else "whole",))
                              for case in CASES])
def test_hard_inputs_equal_the_float64_reference(implementation, criterion, frames, am_scale,
                                                 logit_scale, cut):
    log_probs, lengths, num, den = hard_batch(frames, logit_scale, cut,
                                              seed=frames + len(criterion))
    boost = 0.5 if criterion == "bmmi" else 0.0
    want_loss, want_gradient = cached_reference(
        (criterion, frames, am_scale), log_probs, lengths, num, den, criterion, am_scale, boost)
    assert torch.isfinite(want_loss).all()
    x = log_probs.clone().requires_grad_()
    options = {} if criterion == "full-sum" else dict(den_fsa=den, criterion=criterion,
                                                      am_scale=am_scale, boost=boost)
    before = fsa_loss_stats()
    loss = fsa_loss(x, torch.tensor(lengths), num, implementation=implementation, **options)
    loss.sum().backward()
    after = fsa_loss_stats()
    assert loss.dtype == torch.float32
    torch.testing.assert_close(loss.double(), want_loss, rtol=1e-5, atol=0)
    torch.testing.assert_close(x.grad.double(), want_gradient, rtol=0, atol=1e-4)
    # Which recursions the sequences took. The kernel also runs each
    # numerator in probability space, where a few thousand frames of
    # scores that do not match it lose more than double's range across
    # its states (the occupancy check fails): then the whole sequence runs
    # in log space.
    paths = {key: after[key] - before[key] for key in ("scaled", "log_space")}
    if criterion == "full-sum":
        assert paths == {"scaled": 0, "log_space": 0}
    elif cut:
        assert paths == {"scaled": 0, "log_space": 2}
    elif implementation == "torch":
        assert paths == {"scaled": 2, "log_space": 0}
    else:
        assert paths["scaled"] + paths["log_space"] == 2


@pytest.mark.parametrize("implementation", ["kernel", "torch"])
@pytest.mark.parametrize("criterion", ["mmi", "bmmi", "smbr"])
def test_a_sequence_beyond_probability_space_runs_in_log_space_beside_the_others(
        implementation, criterion):
    log_probs, lengths, num, den = hard_batch(60, 3.0, False, seed=7)
    # -1e4 at a column the denominator emits, in the first sequence only.
    log_probs[20, 0, 3] = -1e4
    boost = 0.5 if criterion == "bmmi" else 0.0
    want_loss, want_gradient = reference(log_probs, lengths, num, den, criterion, 1.0, boost)
    x = log_probs.clone().requires_grad_()
    before = fsa_loss_stats()
    loss = fsa_loss(x, torch.tensor(lengths), num, den_fsa=den, criterion=criterion,
                    boost=boost, implementation=implementation)
    loss.sum().backward()
    after = fsa_loss_stats()
    assert after["scaled"] - before["scaled"] == 1
    assert after["log_space"] - before["log_space"] == 1
    torch.testing.assert_close(loss.double(), want_loss, rtol=1e-6, atol=0)
    torch.testing.assert_close(x.grad.double(), want_gradient, rtol=0, atol=1e-5)


@pytest.mark.parametrize("criterion", ["full-sum", "mmi", "smbr"])
def test_in_float32_on_devices_without_float64_the_error_stays_bounded(monkeypatch, criterion):
    # The torch implementation computes in float32 only where float64 is
    # missing (MPS), rescaling every frame in log space; on 1500 frames at
    # am_scale 1 it stays within 1e-3 of the reference (float32's rounding
    # of each frame's scores, gathered over the frames).
    import sprintrt.fsa_loss as module

    monkeypatch.setattr(module, "_compute_dtype", lambda device: torch.float32)
    log_probs, lengths, num, den = hard_batch(1500, 2.0, False, seed=11)
    want_loss, want_gradient = reference(log_probs, lengths, num, den, criterion, 1.0, 0.0)
    x = log_probs.clone().requires_grad_()
    options = {} if criterion == "full-sum" else dict(den_fsa=den, criterion=criterion)
    loss = fsa_loss(x, torch.tensor(lengths), num, implementation="torch", **options)
    loss.sum().backward()
    torch.testing.assert_close(loss.double(), want_loss, rtol=1e-5, atol=0)
    torch.testing.assert_close(x.grad.double(), want_gradient, rtol=0, atol=1e-3)


@pytest.mark.parametrize("implementation", ["kernel", "torch"])
def test_a_denominator_whose_weights_span_beyond_float64_runs_in_log_space(implementation):
    log_probs, lengths, num, den = hard_batch(60, 3.0, False, seed=5)
    weights = den.weights.clone()
    weights[torch.argmax((den.edges[0] == 0).int())] += 800.0  # an edge of the start state
    den = den._replace(weights=weights)
    want_loss, want_gradient = reference(log_probs, lengths, num, den, "mmi", 1.0, 0.0)
    x = log_probs.clone().requires_grad_()
    before = fsa_loss_stats()
    loss = fsa_loss(x, torch.tensor(lengths), num, den_fsa=den, criterion="mmi",
                    implementation=implementation)
    loss.sum().backward()
    after = fsa_loss_stats()
    assert (after["scaled"] - before["scaled"], after["log_space"] - before["log_space"]) == (0, 2)
    torch.testing.assert_close(loss.double(), want_loss, rtol=1e-6, atol=0)
    torch.testing.assert_close(x.grad.double(), want_gradient, rtol=0, atol=1e-5)


def small_fsa(num_states, edges, weights):
    """One sequence: states 0 .. num_states - 1, start 0, end the last."""
    columns = torch.tensor([[a, b, c, 0] for a, b, c in edges], dtype=torch.int32).T
    return WeightedFsa(torch.tensor(num_states, dtype=torch.int32), columns.contiguous(),
                       torch.tensor(weights, dtype=torch.float64),
                       torch.tensor([[0], [num_states - 1]], dtype=torch.int32))


# A denominator with two branches to its end, on columns 0 and 1, and a dead
# end on column 2; the numerator takes column 0 throughout.
BRANCHES = [(0, 1, 0), (1, 1, 0), (1, 4, 0), (0, 2, 1), (2, 2, 1), (2, 4, 1), (0, 3, 2), (3, 3, 2)]
CHAIN = small_fsa(3, [(0, 1, 0), (1, 1, 0), (1, 2, 0)], [0.0, 0.0, 0.0])


@pytest.mark.parametrize("want_gradient", [True, False], ids=["gradient", "loss-only"])
@pytest.mark.parametrize("implementation", ["kernel", "torch"])
@pytest.mark.parametrize("criterion", ["mmi", "smbr"])
def test_a_path_that_both_passes_lose_is_computed_in_log_space(criterion, implementation,
                                                               want_gradient):
    # Scores 700 apart: the forward pass loses the numerator's branch where
    # the dead end leads, the backward pass where the other branch leads.
    # Both lose the same path, so their occupancies agree; the overlap of
    # the two rows is what shows it.
    den = small_fsa(5, BRANCHES, [0.0] * 8)
    rows = [(-50, 0, -700), (-700, -700, 0), (0, -700, -700), (0, -700, -700),
            (-700, -700, 0), (-50, 0, -700)]
    log_probs = torch.tensor(rows, dtype=torch.float32)[:, None, :]
    want_loss, want_gradient_values = reference(log_probs, [6], CHAIN, den, criterion, 1.0, 0.0)
    x = log_probs.clone().requires_grad_(want_gradient)
    before = fsa_loss_stats()
    loss = fsa_loss(x, torch.tensor([6]), CHAIN, den_fsa=den, criterion=criterion,
                    implementation=implementation)
    after = fsa_loss_stats()
    assert after["log_space"] - before["log_space"] == 1
    assert after["scaled"] == before["scaled"]
    torch.testing.assert_close(loss.double(), want_loss, rtol=1e-6, atol=1e-6)
    if want_gradient:
        loss.sum().backward()
        torch.testing.assert_close(x.grad.double(), want_gradient_values, rtol=0, atol=1e-5)


@pytest.mark.parametrize("implementation", ["kernel", "torch"])
def test_a_frame_whose_largest_entry_leaves_doubles_precision_is_computed_in_log_space(
        implementation):
    # Weights of 372 and scores of -372 take the one live row's largest entry
    # to about exp(-744), where the rest of it would be subnormal.
    den = small_fsa(5, BRANCHES, [372.0, 0, 0, 372.25, 0, 0, 700, 0])
    log_probs = torch.tensor([(-372.0, -372.0, 0), (0, 0, -5), (0, 0, -5)],
                             dtype=torch.float32)[:, None, :]
    want_loss, want_gradient = reference(log_probs, [3], CHAIN, den, "mmi", 1.0, 0.0)
    x = log_probs.clone().requires_grad_()
    before = fsa_loss_stats()
    loss = fsa_loss(x, torch.tensor([3]), CHAIN, den_fsa=den, criterion="mmi",
                    implementation=implementation)
    loss.sum().backward()
    after = fsa_loss_stats()
    assert after["log_space"] - before["log_space"] == 1
    torch.testing.assert_close(loss.double(), want_loss, rtol=1e-6, atol=0)
    torch.testing.assert_close(x.grad.double(), want_gradient, rtol=0, atol=1e-5)


@pytest.mark.parametrize("implementation", ["kernel", "torch"])
@pytest.mark.parametrize("criterion", ["mmi", "bmmi", "smbr"])
def test_a_batch_of_sequences_without_frames(implementation, criterion):
    log_probs, _, num, den = hard_batch(40, 2.0, False, seed=3)
    x = log_probs.clone().requires_grad_()
    loss = fsa_loss(x, torch.tensor([0, 0]), num, den_fsa=den, criterion=criterion,
                    boost=0.5 if criterion == "bmmi" else 0.0, implementation=implementation)
    loss.sum().backward()
    # Neither numerator has the empty path.
    assert loss.tolist() == [INF, INF]
    assert not x.grad.any()
