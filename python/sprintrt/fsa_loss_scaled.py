"""The torch implementation's forward-backward in probability space
(criterion/scaled_forward_backward.cpp's formulation, in torch operations),
for every graph whose weights float64 can hold: a denominator that the
batch shares, and a batch FSA (the numerators, per-sequence denominators).

Frame states. Emissions sit on edges; a product needs them on states. So
a graph's states are split by the column their incoming edge emits: a
frame state j is a pair (state q_j, column c_j) that some edge into q_j
with column c_j makes. The transition from frame state i to j is the
summed exp(-(w_e - w_min)) of the edges q_i -> q_j emitting c_j; ``initial``
[J] holds the same from the start state for the first frame, and
``final`` [J] marks the frame states of the end state. Every path has one
edge per frame, so the shift by w_min is len * w_min in log Z, added back.
A shared graph's frame states are the same J for every sequence; a batch
FSA's are each sequence's own, numbered from 0 and padded to the longest
(a pad has no transitions: its entries stay 0). Rows are [B, J] either way.

Products. A shared graph whose transitions are dense enough takes one
``torch.mm`` of [B, J] x [J, J] per frame and pass. Every other graph takes
a sparse product: bands, the transitions i -> i + d of an offset d that
many entries share (CTC's and HMM's loops, steps and skips), one
multiply-add of shifted rows each; the other transitions grouped by
destination (forward) or by source (backward), each group padded to its
bucket's width (fsa_loss_buckets.py), so that a frame is a gather, a
multiply and a sum per bucket. No scatter: deterministic on every device.
A batch FSA's rows enter it as one flat row of B x J entries, each
sequence reading only its own transitions.

Recursions (frames t = 0 .. T-1, em_t [B, D] = exp(x_t - m_t) with m_t the
frame's largest score among the columns the sequence's graph emits):

    alpha[0] = initial * em_0[:, c],   alpha[t] = (alpha[t-1] M) * em_t[:, c]
    beta[len-1] = final,               beta[t] = (beta[t+1] * em_{t+1}[:, c]) M^T
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
below its frame's largest (its exp would underflow); mass that vanished
(which a sequence without a path shares); a frame whose rescaled forward
and backward rows (each of largest entry 1) overlap, sum_j alpha[t, j]
beta[t, j], by less than 1e20 J (eps_f + eps_b), where eps = J DBL_MIN /
(the row's largest entry before rescaling) bounds what its product lost
below double's smallest normal: then what either pass lost, even a path
both lost, stays below 1e-20 of Z; and Kaldi's check, a frame whose
occupancies' sum differs from Z by more than 1e-6 relative. The backward
pass runs for these checks even when no gradient is wanted. A shared graph
whose weights span more than 700 is not laid out at all; in a batch FSA,
such a sequence is left out (its mass vanishes).
"""

from __future__ import annotations

from typing import Any

import numpy
import torch

from .fsa_loss_buckets import buckets

__all__ = ["ScaledGraph", "forward_backward"]

# A shared graph of up to this many frame states takes dense products
# (transitions of 32 MB) ...
_MAX_DENSE_FRAME_STATES = 2048
# ... when at least this share of its transitions is nonzero.
_MIN_DENSE_FILL = 1 / 16
# How far below a frame's largest term a value may lie, in log space, for
# float64 to hold it (its smallest normal is exp(-708)).
_RANGE = 700.0
# A sparse product's transitions i -> i + d are all bands where they have at
# most this many offsets d (a band costs one kernel, the other transitions
# about six) ...
_MAX_BANDS = 8
# ... else an offset whose transitions number at least this share of the
# product's entries, and at least _MIN_BAND_TRANSITIONS, is a band.
_MIN_BAND_FILL = 1 / 4
_MIN_BAND_TRANSITIONS = 8
# A pass gathers a frame's emissions by frame state for all frames at once
# where they take at most this many entries (32 MB in float64).
_TABLE_ENTRIES = 1 << 22
# Kaldi's check: a frame's occupancies sum to 1 within this.
_CHECK_TOLERANCE = 1e-6
# What a row of zeros is divided by (any positive number keeps it zero).
_TINY = 1e-300
# What the passes may lose, as a fraction of Z, is at most 1 / this (see
# above).
_MAX_LOST_INVERSE = 1e20


class _DenseProduct:
    """Products with one shared graph's transitions [J, J] as a matrix."""

    def __init__(self, transitions: numpy.ndarray, columns: numpy.ndarray, classes: int,
                 device: torch.device) -> None:
        self.transitions = torch.from_numpy(transitions).to(device)
        one_hot = numpy.zeros((len(columns), classes))
        one_hot[numpy.arange(len(columns)), columns] = 1
        self.one_hot = torch.from_numpy(one_hot).to(device)

    def forward(self, rows: torch.Tensor) -> torch.Tensor:
        """``rows`` [B, J] times the transitions."""
        return torch.mm(rows, self.transitions)

    def backward(self, rows: torch.Tensor) -> torch.Tensor:
        """``rows`` [B, J] times the transposed transitions."""
        return torch.mm(rows, self.transitions.T)

    def by_column(self, table: torch.Tensor) -> torch.Tensor:
        """``table`` [T, B, J] summed by the frame states' columns: [T, B, D]."""
        count = table.shape[-1]
        return (table.reshape(-1, count) @ self.one_hot).view(*table.shape[:-1], -1)


class _SparseProduct:
    """Products with transitions given as (source, target, value) triples
    over ``size`` entries of a flat row ([B, J] rows are read as [-1,
    size]: a shared graph's J, or a batch FSA's B x J). ``keys``: each
    entry's column key for ``by_column``, in [0, ``num_keys``).

    Bands, as in criterion/frame_graph.cpp: the transitions from entry i to
    i + d, for an offset d that at least a quarter of the entries have
    (CTC's and HMM's loops, steps and skips, where frame states follow the
    graph's states) and at least _MIN_BAND_TRANSITIONS of them, or for
    every d where there are at most _MAX_BANDS, are a weight per target
    entry, and a product's band is one multiply-add of shifted rows. The
    other transitions are summed by target (forward) or source (backward)
    in padded buckets: a gather, a multiply and a sum each."""

    def __init__(self, source: numpy.ndarray, target: numpy.ndarray, value: numpy.ndarray,
                 size: int, keys: numpy.ndarray, num_keys: int, device: torch.device) -> None:
        self.size = size
        offset = target - source
        offsets, counts = numpy.unique(offset, return_counts=True)
        banded = offsets
        if len(offsets) > _MAX_BANDS:
            banded = offsets[counts >= max(_MIN_BAND_TRANSITIONS, _MIN_BAND_FILL * size)]
        # Per band, the main diagonal first: (d, its weights [size] by
        # target entry, the forward product's (out, in) entries as slices,
        # the backward product's, and the weights of the entries it reaches).
        self.bands = []
        for d in sorted(banded.tolist(), key=abs):
            on = offset == d
            weight = numpy.zeros(size)
            weight[target[on]] = value[on]
            reach = size - abs(d)
            # Forward, out[j] += rows[j - d] w[j]; backward, out[i] +=
            # rows[i + d] w[i + d].
            ahead = slice(abs(d), size)
            behind = slice(0, reach)
            at = torch.from_numpy(weight[ahead] if d > 0 else weight[behind]).to(device)
            forward = (ahead, behind) if d > 0 else (behind, ahead)
            self.bands.append((d, torch.from_numpy(weight).to(device), forward, forward[::-1],
                               at))
        rest = ~numpy.isin(offset, banded)
        source, target, value = source[rest], target[rest], value[rest]
        self.into: list[Any] = []
        self.out_of: list[Any] = []
        if len(source):
            pad = len(source)
            weight = torch.from_numpy(numpy.append(value, 0.0)).to(device)
            # Beside bands, only the entries with transitions.
            alone = not self.bands
            self.into = [(bucket, weight[bucket.ids]) for bucket in
                         buckets(target, size, pad, device, numpy.append(source, 0),
                                 every_key=alone)]
            self.out_of = [(bucket, weight[bucket.ids]) for bucket in
                           buckets(source, size, pad, device, numpy.append(target, 0),
                                   every_key=alone)]
        self.num_keys = num_keys
        # The entries by key; the pad id (``size``) reads an appended 0.
        self.by_key = buckets(keys, num_keys, size, device, overhead=0)

    def forward(self, rows: torch.Tensor) -> torch.Tensor:
        """``rows`` [B, J] times the transitions."""
        return self._apply(rows, self.into, transposed=False)

    def backward(self, rows: torch.Tensor) -> torch.Tensor:
        """``rows`` [B, J] times the transposed transitions."""
        return self._apply(rows, self.out_of, transposed=True)

    def _apply(self, rows: torch.Tensor, groups: list[Any], transposed: bool) -> torch.Tensor:
        flat = rows.reshape(-1, self.size)
        out: Any = None
        for d, weight, forward, backward, at in self.bands:
            if d == 0:
                out = torch.mul(flat, weight)
                continue
            if out is None:
                out = torch.zeros_like(flat)
            into, source = backward if transposed else forward
            out[:, into].addcmul_(flat[:, source], at)
        # Without bands, the buckets write every entry once
        # (fsa_loss_buckets.buckets covers them all); else they add.
        assign = out is None
        for bucket, weight in groups:
            total = bucket.gather(flat).mul_(weight).sum(-2)
            if assign and bucket.full:
                out = total
            elif assign:
                out = torch.empty_like(flat) if out is None else out
                bucket.put(out, total)
            elif bucket.full:
                out.add_(total)
            else:
                out[:, bucket.rows] += total
        if out is None:
            out = torch.zeros_like(flat)
        return out.view_as(rows)

    def by_column(self, table: torch.Tensor) -> torch.Tensor:
        """``table`` [T, B, J] summed by the entries' keys: [T, B, D]."""
        flat = table.reshape(-1, self.size)
        flat = torch.cat((flat, flat.new_zeros(flat.shape[0], 1)), -1)
        out = flat.new_zeros(flat.shape[0], self.num_keys)
        for bucket in self.by_key:
            bucket.put(out, bucket.edges_of(flat).sum(-2))
        return out.view(*table.shape[:-1], -1)


class _FrameByFrame:
    """``graph.emission(frames[t])`` by ``[t]``."""

    def __init__(self, graph: ScaledGraph, frames: torch.Tensor) -> None:
        self.graph = graph
        self.frames = frames

    def __getitem__(self, t: int) -> torch.Tensor:
        return self.graph.emission(self.frames[t])


class ScaledGraph:
    """A graph laid out for ``forward_backward`` (see the module's
    docstring): ``count`` J, ``columns`` [J] (shared) or [B, J] (a batch
    FSA's, long), ``initial`` and ``final`` of the same shape (float64),
    ``emitted`` [D] or [B, D] (bool: the columns some edge emits),
    ``min_weight`` (the shift: a float, or float64 [B]), ``empty_total``
    (log Z of a sequence of 0 frames, 0 or -inf: float64 [B], or a scalar
    for a shared graph) and ``product`` (dense or sparse)."""

    def __init__(self, columns: numpy.ndarray, initial: numpy.ndarray, final: numpy.ndarray,
                 emitted: numpy.ndarray, min_weight: Any, empty_total: numpy.ndarray,
                 product: Any, device: torch.device) -> None:
        self.count = columns.shape[-1]
        self.columns = torch.from_numpy(columns).to(device)
        self.initial = torch.from_numpy(initial).to(device)
        self.final = torch.from_numpy(final).to(device)
        self.emitted = torch.from_numpy(emitted).to(device)
        self.min_weight = (min_weight if isinstance(min_weight, float)
                           else torch.from_numpy(min_weight).to(device))
        self.empty_total = torch.from_numpy(empty_total).to(device)
        self.product = product

    def emission(self, frames: torch.Tensor) -> torch.Tensor:
        """``frames`` [..., B, D] at each frame state's column: [..., B, J]."""
        if self.columns.dim() == 1:
            return frames.index_select(-1, self.columns)
        return frames.gather(-1, self.columns.expand(*frames.shape[:-1], self.count))

    def emissions(self, frames: torch.Tensor) -> Any:
        """A frame t's ``emission(frames[t])`` by ``table[t]``: all frames
        gathered at once where they take at most _TABLE_ENTRIES, else each
        when asked."""
        if frames.numel() // frames.shape[-1] * self.count <= _TABLE_ENTRIES:
            return self.emission(frames)
        return _FrameByFrame(self, frames)

    @staticmethod
    def lay_out_shared(num_states: int, edges: numpy.ndarray, weights: numpy.ndarray, start: int,
                       end: int, classes: int, device: torch.device) -> ScaledGraph | None:
        """The layout of one graph shared by the batch (``edges`` numpy
        int64 [4, E] of one sequence, ``weights`` [E]), or None where it
        cannot be exact: no edges, or weights that span more than float64
        holds."""
        weights = numpy.asarray(weights, dtype=numpy.float64)
        usable = numpy.isfinite(weights)
        if not usable.any():
            return None
        source, target, column = (part[usable] for part in edges[:3])
        cost = weights[usable]
        min_weight = float(cost.min())
        if float(cost.max()) - min_weight > _RANGE:
            return None
        value = numpy.exp(-(cost - min_weight))
        states = _frame_states(num_states, source, target, column, classes)
        keys, frame_state, rows, targets, copies = states
        count = len(keys)
        state_of, columns = keys // classes, keys % classes
        initial = numpy.zeros(count)
        from_start = source == start
        numpy.add.at(initial, frame_state[from_start], value[from_start])
        final = (state_of == end).astype(numpy.float64)
        emitted = numpy.zeros(classes, dtype=bool)
        emitted[columns] = True
        source_of, target_of, summed = _summed(rows, targets, value[copies], count)
        if (count <= _MAX_DENSE_FRAME_STATES
                and len(summed) >= _MIN_DENSE_FILL * count * count):
            transitions = numpy.zeros((count, count))
            transitions[source_of, target_of] = summed
            product: Any = _DenseProduct(transitions, columns, classes, device)
        else:
            product = _SparseProduct(source_of, target_of, summed, count, columns, classes,
                                     device)
        empty_total = numpy.array(0.0 if start == end else -numpy.inf)
        return ScaledGraph(columns, initial, final, emitted, min_weight, empty_total, product,
                           device)

    @staticmethod
    def lay_out_batch(num_states: int, edges: numpy.ndarray, weights: numpy.ndarray,
                      start: numpy.ndarray, end: numpy.ndarray, classes: int,
                      device: torch.device) -> ScaledGraph:
        """The layout of a batch FSA (``edges`` numpy int64 [4, E] of B
        sequences, each within its states start[b] .. end[b]), each
        sequence's graph beside the others. A sequence whose weights span
        more than float64 holds is left out: it has no mass, and the caller
        computes it in log space."""
        batch = len(start)
        weights = numpy.asarray(weights, dtype=numpy.float64)
        finite = numpy.isfinite(weights)
        sequence = edges[3]
        lowest = numpy.full(batch, numpy.inf)
        highest = numpy.full(batch, -numpy.inf)
        numpy.minimum.at(lowest, sequence[finite], weights[finite])
        numpy.maximum.at(highest, sequence[finite], weights[finite])
        held = (highest - lowest <= _RANGE) & numpy.isfinite(lowest)
        lowest[~held] = 0.0
        usable = finite & held[sequence]
        source, target, column, sequence = (part[usable] for part in edges)
        value = numpy.exp(-(weights[usable] - lowest[sequence]))
        keys, frame_state, rows, targets, copies = _frame_states(num_states, source, target,
                                                                 column, classes)
        # Frame state k belongs to the sequence of its state; its place
        # within its sequence follows the keys' order.
        state_sequence = numpy.zeros(num_states, dtype=numpy.int64)
        state_sequence[target] = sequence
        owner = state_sequence[keys // classes]
        counts = numpy.bincount(owner, minlength=batch)
        width = max(1, int(counts.max(initial=0)))
        begins = numpy.concatenate((numpy.zeros(1, dtype=numpy.int64), numpy.cumsum(counts)[:-1]))
        by_owner = numpy.argsort(owner, kind="stable")
        rank = numpy.empty(len(keys), dtype=numpy.int64)
        rank[by_owner] = numpy.arange(len(keys)) - begins[owner[by_owner]]
        place = owner * width + rank
        size = batch * width
        columns = numpy.zeros(size, dtype=numpy.int64)
        columns[place] = keys % classes
        initial = numpy.zeros(size)
        from_start = source == start[sequence]
        numpy.add.at(initial, place[frame_state[from_start]], value[from_start])
        final = numpy.zeros(size)
        final[place[keys // classes == end[owner]]] = 1.0
        emitted = numpy.zeros((batch, classes), dtype=bool)
        emitted[owner, keys % classes] = True
        source_of, target_of, summed = _summed(place[rows], place[targets], value[copies], size)
        entry_sequence = numpy.repeat(numpy.arange(batch), width)
        product = _SparseProduct(source_of, target_of, summed, size,
                                 entry_sequence * classes + columns, batch * classes, device)
        empty_total = numpy.where(start == end, 0.0, -numpy.inf)
        return ScaledGraph(columns.reshape(batch, width), initial.reshape(batch, width),
                           final.reshape(batch, width), emitted, lowest, empty_total, product,
                           device)


def _frame_states(num_states: int, source: numpy.ndarray, target: numpy.ndarray,
                  column: numpy.ndarray, classes: int) -> tuple[numpy.ndarray, ...]:
    """The frame states of edges (``source``, ``target``, ``column``):
    their sorted keys (state * classes + column), each edge's frame state,
    and the transitions before summing: each edge leaves every frame state
    of its source state, so (rows, targets) are the frame states of each
    such copy and ``copies`` its edge."""
    keys, frame_state = numpy.unique(target * classes + column, return_inverse=True)
    state_of = keys // classes
    by_state = numpy.argsort(state_of, kind="stable")
    per_state = numpy.bincount(state_of, minlength=num_states)
    begin = numpy.concatenate((numpy.zeros(1, dtype=numpy.int64), numpy.cumsum(per_state)[:-1]))
    fan = per_state[source]
    copies = numpy.repeat(numpy.arange(len(source)), fan)
    within = numpy.arange(int(fan.sum())) - numpy.repeat(numpy.cumsum(fan) - fan, fan)
    rows = by_state[begin[source[copies]] + within]
    return keys, frame_state, rows, frame_state[copies], copies


def _summed(rows: numpy.ndarray, targets: numpy.ndarray, value: numpy.ndarray,
            size: int) -> tuple[numpy.ndarray, numpy.ndarray, numpy.ndarray]:
    """The transitions (rows -> targets, ``value``) with equal ends summed:
    (source, target, value), ordered by source and target."""
    pairs, inverse = numpy.unique(rows * size + targets, return_inverse=True)
    return pairs // size, pairs % size, numpy.bincount(inverse, weights=value,
                                                       minlength=len(pairs))


def forward_backward(graph: ScaledGraph, values: torch.Tensor, lengths: torch.Tensor, steps: int,
                     *, want_gradient: bool, accuracy: torch.Tensor | None = None
                     ) -> tuple[torch.Tensor, Any, Any, Any, torch.Tensor]:
    """``fsa_loss_torch.frame_pass`` in probability space: ``values`` [T,
    B, D] (float64, -inf from each sequence's end on), ``lengths`` [B] on
    the device, ``steps`` >= 1. Returns (log Z [B], occupancy [steps, B, D]
    or None, expected accuracy [B] or None, its covariance [steps, B, D] or
    None, inexact [B] (bool: compute these again in log space))."""
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
    # A column the graph never emits is read only by pad entries (or not at
    # all): 0, lest a score far above the emitted ones overflow into them.
    shifted.masked_fill_(~graph.emitted, -float("inf"))
    # The emissions and sMBR's hits by frame state: [steps, B, J].
    emission = graph.emissions(shifted.exp_())
    smbr = accuracy is not None
    hits: Any = None if accuracy is None else graph.emissions(accuracy[:steps])
    product = graph.product

    count = graph.count
    # Each frame's rows are divided by their largest entry (``tops``, kept
    # for the log-scales); a row of zeros stays zero (divided by _TINY).
    alpha = torch.empty(steps, batch, count, dtype=dtype, device=device)
    weighted: Any = torch.empty_like(alpha) if smbr else None  # N, sMBR
    tops = torch.empty(steps, batch, 1, dtype=dtype, device=device)
    for t in range(steps):
        em = emission[t]
        if t == 0:
            torch.mul(graph.initial, em, out=alpha[0])
            if smbr:
                torch.mul(alpha[0], hits[0], out=weighted[0])
        else:
            torch.mul(product.forward(alpha[t - 1]), em, out=alpha[t])
            if smbr:
                torch.mul(product.forward(weighted[t - 1]), em, out=weighted[t])
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
    log_total = torch.where(lengths == 0, graph.empty_total, log_total)
    expected: Any = None
    if smbr:
        end_weighted = (weighted[last, batch_index] * graph.final).sum(-1)
        # 0 without a path or frames, as in log space.
        pathless = (end_mass == 0) | (lengths == 0)
        expected = (end_weighted / end_mass.masked_fill(pathless, 1)).masked_fill(pathless, 0)
        expected = expected.to(dtype)
    inexact |= ~(end_mass > 0) & (lengths > 0)

    # 1 at frame len - 1 of each sequence, where its backward pass starts:
    # beta is zero after it (nothing flows back from zero rows), so adding
    # ``final`` there starts it.
    starts = (frames[:, None] == lengths - 1).to(dtype)[..., None]  # [steps, B, 1]
    beta = torch.zeros(batch, count, dtype=dtype, device=device)
    unweighted: Any = torch.zeros_like(beta) if smbr else None  # U, sMBR
    sums = torch.empty(steps, batch, dtype=dtype, device=device)
    beta_tops = torch.empty_like(tops)
    for t in reversed(range(steps)):
        if t < steps - 1:
            em = emission[t + 1]
            carried = beta.mul_(em)
            if smbr:
                # U[t] = (U[t+1] * em + beta[t+1] * em * hit) @ M^T
                unweighted = product.backward(unweighted.mul_(em).addcmul_(carried, hits[t + 1]))
            beta = product.backward(carried)
        beta.addcmul_(starts[t], graph.final)
        divisor = torch.amax(beta, -1, keepdim=True, out=beta_tops[t]).clamp_min(_TINY)
        beta.div_(divisor)
        if smbr:
            # The covariance's numerator, where N[t] is read no more.
            unweighted.div_(divisor)
            weighted[t].mul_(beta).addcmul_(alpha[t], unweighted)
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
    occupancy = product.by_column(alpha).div_(norm)
    covariance: Any = None
    if smbr:
        covariance = product.by_column(weighted).div_(norm).sub_(occupancy * expected[:, None])
    return log_total, occupancy, expected, covariance, inexact
