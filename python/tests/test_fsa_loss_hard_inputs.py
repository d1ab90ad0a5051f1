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
from sprintrt.torch import (WeightedFsa, fsa_loss, hypotheses_denominator,  # noqa: E402
                            join_graphs, label_lm_denominator)

DIM = 12
# (criterion, frames, am_scale, logit scale): long segments at every scale
# for mmi, and bmmi and smbr (whose reference's Viterbi is a Python loop
# over edges) at a third of the length.
CASES = [
    ("full-sum", 3000, 1.0, 2.0),
    ("mmi", 3000, 1.0, 8.0),
    ("mmi", 3000, 10.0, 8.0),
    ("mmi", 3000, 0.1, 8.0),
    ("bmmi", 1000, 1.0, 8.0),
    ("smbr", 1000, 1.0, 8.0),
    ("smbr", 1000, 10.0, 2.0),
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


def hard_batch(frames, logit_scale, seed):
    """Two sequences (``frames`` and ``frames - 37`` frames), their CTC
    numerators, the label-bigram denominator with hard states, and float32
    log-probabilities with -1e4 at 1% of the entries."""
    generator = torch.Generator().manual_seed(seed)
    lengths = [frames, frames - 37]
    labels = [torch.randint(1, DIM, (n // 12,), generator=generator).tolist() for n in lengths]
    numerators = join_graphs([hypotheses_denominator([seq], DIM) for seq in labels])
    denominator = with_hard_states(label_lm_denominator(labels, DIM, order=2))
    logits = torch.randn(frames, len(lengths), DIM, generator=generator) * logit_scale
    log_probs = logits.log_softmax(-1)
    cut = torch.rand(log_probs.shape, generator=generator) < 0.01
    log_probs = log_probs.masked_fill(cut, -1e4)
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
@pytest.mark.parametrize("criterion,frames,am_scale,logit_scale", CASES,
                         ids=["%s-T%d-am%g" % case[:3] for case in CASES])
def test_hard_inputs_equal_the_float64_reference(implementation, criterion, frames, am_scale,
                                                 logit_scale):
    log_probs, lengths, num, den = hard_batch(frames, logit_scale, seed=frames + len(criterion))
    boost = 0.5 if criterion == "bmmi" else 0.0
    want_loss, want_gradient = cached_reference(
        (criterion, frames, am_scale), log_probs, lengths, num, den, criterion, am_scale, boost)
    assert torch.isfinite(want_loss).all()
    x = log_probs.clone().requires_grad_()
    options = {} if criterion == "full-sum" else dict(den_fsa=den, criterion=criterion,
                                                      am_scale=am_scale, boost=boost)
    loss = fsa_loss(x, torch.tensor(lengths), num, implementation=implementation, **options)
    loss.sum().backward()
    assert loss.dtype == torch.float32
    torch.testing.assert_close(loss.double(), want_loss, rtol=1e-5, atol=0)
    torch.testing.assert_close(x.grad.double(), want_gradient, rtol=0, atol=1e-4)
