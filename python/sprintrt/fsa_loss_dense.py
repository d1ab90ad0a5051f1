"""The torch implementation's forward-backward in probability space, for a
denominator that the batch shares and whose transitions are dense enough
for matrix products (criterion/scaled_forward_backward.cpp's formulation,
in torch operations).

Layout. Emissions sit on edges; a product needs them on states. So the
graph's states are split by the column their incoming edge emits: a frame
state j is a pair (state q_j, column c_j) that some edge into q_j with
column c_j makes. ``transitions`` [J, J] holds, from frame state i to j, the
summed exp(-(w_e - w_min)) of the edges q_i -> q_j emitting c_j;
``initial`` [J] the same from the start state for the first frame, and
``final`` [J] marks the frame states of the end state. Every path has one
edge per frame, so the shift by w_min is len * w_min in log Z, added back.

Recursions (B sequences side by side, frames t = 0 .. T-1, em_t [B, D] =
exp(x_t - m_t) with m_t the frame's largest score among the graph's
columns):

    alpha[0] = initial * em_0[:, c],   alpha[t] = (alpha[t-1] @ M) * em_t[:, c]
    beta[len-1] = final,               beta[t] = (beta[t+1] * em_{t+1}[:, c]) @ M^T
    occupancy of j at frame t = alpha[t, j] * beta[t, j] / Z

each row divided by its largest entry every frame, the logs of those
divisors summed in float64 (log Z = log(alpha[len-1] . final) + their sum
+ the sum of m_t - len * w_min). A frame's occupancies are divided by their
sum, which is Z up to rounding.

sMBR carries the expectation semiring's first component beside alpha and
beta: the accuracy-weighted masses (sum over prefixes, or suffixes, of
P * A), rescaled with them; the covariance of frame state j at frame t is
(N[t] * beta[t] + alpha[t] * U[t]) / Z - occupancy * E[A].

Exactness. What float64 cannot hold makes a sequence ``inexact``, and the
caller computes it again in log space (criterion/scaled_forward_backward.cpp
derives the bounds): a score of a column the graph emits more than 700
below its frame's largest (its exp would underflow); mass that vanished;
a frame whose rescaled forward and backward rows (each of largest entry 1)
overlap, sum_j alpha[t, j] beta[t, j], by less than 1e20 J (eps_f + eps_b),
where eps = J DBL_MIN / (the row's largest entry before rescaling) bounds
what its product lost below double's smallest normal: then what either
pass lost, even a path both lost, stays below 1e-20 of Z; and Kaldi's check, a frame whose
occupancies' sum differs from Z by more than 1e-6 relative. The backward
pass runs for these checks even when no gradient is wanted. A graph whose
weights span more than 700 is not laid out at all.
"""

from __future__ import annotations

from typing import Any

import numpy
import torch

__all__ = ["DenseGraph", "forward_backward"]

# Frame states up to this many take the dense path (transitions of 32 MB).
_MAX_FRAME_STATES = 2048
# ... when at least this share of the transitions is nonzero.
_MIN_FILL = 1 / 16
# How far below a frame's largest term a value may lie, in log space, for
# float64 to hold it (its smallest normal is exp(-708)).
_RANGE = 700.0
# Kaldi's check: a frame's occupancies sum to 1 within this.
_CHECK_TOLERANCE = 1e-6
# What a row of zeros is divided by (any positive number keeps it zero).
_TINY = 1e-300
# What the passes may lose, as a fraction of Z, is at most 1 / this (see
# above).
_MAX_LOST_INVERSE = 1e20


class DenseGraph:
    """One shared graph laid out for ``forward_backward`` (see the module's
    docstring): ``columns`` [J] (long), ``transitions`` [J, J], ``initial``
    [J], ``final`` [J], ``one_hot`` [J, D] (float64), ``emitted`` [D] (bool,
    the columns some edge emits), ``min_weight`` (the shift)."""

    def __init__(self, columns: numpy.ndarray, transitions: numpy.ndarray, initial: numpy.ndarray,
                 final: numpy.ndarray, classes: int, min_weight: float,
                 device: torch.device) -> None:
        self.num_frame_states = len(columns)
        self.columns = torch.from_numpy(columns).to(device)
        self.transitions = torch.from_numpy(transitions).to(device)
        self.initial = torch.from_numpy(initial).to(device)
        self.final = torch.from_numpy(final).to(device)
        one_hot = numpy.zeros((len(columns), classes))
        one_hot[numpy.arange(len(columns)), columns] = 1
        self.one_hot = torch.from_numpy(one_hot).to(device)
        emitted = numpy.zeros(classes, dtype=bool)
        emitted[columns] = True
        self.emitted = torch.from_numpy(emitted).to(device)
        self.min_weight = min_weight

    @staticmethod
    def lay_out(num_states: int, edges: numpy.ndarray, weights: numpy.ndarray, start: int,
                end: int, classes: int, device: torch.device) -> DenseGraph | None:
        """The layout of one graph (``edges`` numpy int64 [4, E] of one
        sequence, ``weights`` [E]), or None where the dense path does not
        pay or cannot be exact: too many frame states, too sparse, no
        edges, or weights that span more than float64 holds."""
        weights = numpy.asarray(weights, dtype=numpy.float64)
        usable = numpy.isfinite(weights)
        if not usable.any():
            return None
        source, target, column = (part[usable] for part in edges[:3])
        cost = weights[usable]
        min_weight = float(cost.min())
        if float(cost.max()) - min_weight > _RANGE:
            return None
        keys, frame_state = numpy.unique(target * classes + column, return_inverse=True)
        count = len(keys)
        if count > _MAX_FRAME_STATES:
            return None
        state_of = keys // classes
        # Each edge leaves every frame state of its source state.
        by_state = numpy.argsort(state_of, kind="stable")
        per_state = numpy.bincount(state_of, minlength=num_states)
        begin = numpy.concatenate((numpy.zeros(1, dtype=numpy.int64), numpy.cumsum(per_state)[:-1]))
        fan = per_state[source]
        edge_of = numpy.repeat(numpy.arange(len(source)), fan)
        within = numpy.arange(int(fan.sum())) - numpy.repeat(numpy.cumsum(fan) - fan, fan)
        rows = by_state[begin[source[edge_of]] + within]
        value = numpy.exp(-(cost - min_weight))
        transitions = numpy.zeros((count, count))
        numpy.add.at(transitions, (rows, frame_state[edge_of]), value[edge_of])
        if numpy.count_nonzero(transitions) < _MIN_FILL * count * count:
            return None
        initial = numpy.zeros(count)
        from_start = source == start
        numpy.add.at(initial, frame_state[from_start], value[from_start])
        final = (state_of == end).astype(numpy.float64)
        return DenseGraph(keys % classes, transitions, initial, final, classes, min_weight,
                          device)


def forward_backward(graph: DenseGraph, values: torch.Tensor, lengths: torch.Tensor, steps: int,
                     *, want_gradient: bool, accuracy: torch.Tensor | None = None
                     ) -> tuple[torch.Tensor, Any, Any, Any, torch.Tensor]:
    """``fsa_loss_torch.frame_pass`` on the dense layout: ``values`` [T, B,
    D] (float64, -inf from each sequence's end on), ``lengths`` [B] on the
    device, ``steps`` >= 1. Returns (log Z [B], occupancy [steps, B, D] or None, expected
    accuracy [B] or None, its covariance [steps, B, D] or None, inexact
    [B] (bool: compute these again in log space))."""
    batch = values.shape[1]
    device, dtype = values.device, values.dtype
    frames = torch.arange(steps, device=device)
    live = frames[:, None] < lengths  # [steps, B]
    # exp of the scores less each frame's largest among the graph's columns;
    # ended frames score 0 (never read back: beta is 0 there).
    x = values[:steps].masked_fill(~live[..., None], 0)
    top = x.masked_fill(~graph.emitted, -float("inf")).amax(-1, keepdim=True)
    top = top.masked_fill(~torch.isfinite(top), 0)
    shifted = x - top
    beyond = (shifted < -_RANGE) & torch.isfinite(shifted) & graph.emitted
    inexact = beyond.any(-1).any(0)
    emission = shifted.exp_().index_select(-1, graph.columns)  # [steps, B, J]
    hits: Any = None
    if accuracy is not None:
        hits = accuracy[:steps].index_select(-1, graph.columns)
    smbr = hits is not None

    count = graph.num_frame_states
    # Each frame's rows are divided by their largest entry (``tops``, kept
    # for the log-scales); a row of zeros stays zero (divided by _TINY).
    alpha = torch.empty(steps, batch, count, dtype=dtype, device=device)
    weighted: Any = torch.empty_like(alpha) if smbr else None  # N, sMBR
    tops = torch.empty(steps, batch, 1, dtype=dtype, device=device)
    for t in range(steps):
        if t == 0:
            torch.mul(graph.initial, emission[0], out=alpha[0])
            if smbr:
                torch.mul(alpha[0], hits[0], out=weighted[0])
        else:
            torch.mm(alpha[t - 1], graph.transitions, out=alpha[t]).mul_(emission[t])
            if smbr:
                torch.mm(weighted[t - 1], graph.transitions, out=weighted[t]).mul_(emission[t])
                weighted[t].addcmul_(alpha[t], hits[t])
        divisor = torch.amax(alpha[t], -1, keepdim=True, out=tops[t]).clamp_min(_TINY)
        alpha[t].div_(divisor)
        if smbr:
            weighted[t].div_(divisor)
    alpha_offset = tops.clamp_min(_TINY).log_().squeeze(-1).cumsum(0)
    last = (lengths - 1).clamp(min=0)
    batch_index = torch.arange(batch, device=device)
    end_mass = (alpha[last, batch_index] * graph.final).sum(-1)
    # log Z less the emissions' and the weights' shifts: what the frames'
    # occupancy sums are checked against.
    log_z_scaled = end_mass.log() + alpha_offset[last, batch_index]
    shifts = top.squeeze(-1).masked_fill(~live, 0).sum(0, dtype=torch.float64)
    log_total = log_z_scaled + shifts - lengths.double() * graph.min_weight
    expected: Any = None
    if smbr:
        end_weighted = (weighted[last, batch_index] * graph.final).sum(-1)
        expected = (end_weighted / end_mass).to(dtype)
    inexact |= ~(end_mass > 0) & (lengths > 0)

    # 1 at frame len - 1 of each sequence, where its backward pass starts:
    # beta is zero after it (nothing flows back from zero rows), so adding
    # ``final`` there starts it.
    starts = (frames[:, None] == lengths - 1).to(dtype)[..., None]  # [steps, B, 1]
    beta = torch.zeros(batch, count, dtype=dtype, device=device)
    unweighted: Any = torch.zeros_like(beta) if smbr else None  # U, sMBR
    sums = torch.empty(steps, batch, dtype=dtype, device=device)
    beta_tops = torch.empty_like(tops)
    covariance: Any = torch.empty_like(alpha) if smbr else None
    for t in reversed(range(steps)):
        if t < steps - 1:
            carried = beta.mul_(emission[t + 1])
            if smbr:
                # U[t] = (U[t+1] * em + beta[t+1] * em * hit) @ M^T
                unweighted = torch.mm(unweighted.mul_(emission[t + 1]).addcmul_(carried,
                                                                                hits[t + 1]),
                                      graph.transitions.T)
            beta = torch.mm(carried, graph.transitions.T)
        beta.addcmul_(starts[t], graph.final)
        divisor = torch.amax(beta, -1, keepdim=True, out=beta_tops[t]).clamp_min(_TINY)
        beta.div_(divisor)
        if smbr:
            unweighted.div_(divisor)
            torch.mul(weighted[t], beta, out=covariance[t]).addcmul_(alpha[t], unweighted)
        torch.sum(alpha[t].mul_(beta), -1, out=sums[t])  # alpha is read no more at t
    beta_log = beta_tops.clamp_min(_TINY).log_().squeeze(-1).masked_fill_(~live, 0)
    beta_offset = beta_log.flip(0).cumsum(0).flip(0)
    # The overlap, and Kaldi's check, on every frame of each sequence. A row
    # whose mass vanished (largest entry 0) asks for an infinite overlap.
    check = sums.log() + alpha_offset + beta_offset - log_z_scaled
    eps = torch.finfo(dtype).tiny * count * count
    least = (_MAX_LOST_INVERSE * eps) * (tops.reciprocal() + beta_tops.reciprocal()).squeeze(-1)
    off = ~(sums >= least) | ~((check.exp() - 1).abs() <= _CHECK_TOLERANCE)
    inexact |= (off & live).any(0)
    if not want_gradient:
        return log_total, None, expected, None, inexact
    norm = sums.masked_fill(sums == 0, 1)[..., None]
    occupancy = (alpha.view(-1, count) @ graph.one_hot).view(steps, batch, -1).div_(norm)
    if smbr:
        covariance = (covariance.view(-1, count) @ graph.one_hot).view(steps, batch, -1)
        covariance.div_(norm).sub_(occupancy * expected[:, None])
    return log_total, occupancy, expected, covariance, inexact
