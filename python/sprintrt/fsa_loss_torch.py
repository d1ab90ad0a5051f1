"""The torch implementation of ``fsa_loss``: forward-backward over a batch
FSA (and the sequence criteria's denominators) in torch operations, for any
device.

Layout. Every graph is laid out once per call on the host (numpy), when
first needed, then moved to the device: its edges grouped by target state (forward), by source
state (backward) and by emitted column (occupancies), each group padded to
the width of its bucket (groups of similar size share a bucket, so a few
wide groups do not pad every other). A frame's recursion is then one gather
and one ``logsumexp`` over the padded last axis per bucket: a few large
kernels, no scatter, deterministic on every device (no atomic adds). Both
passes keep their tables ([T + 1, G, S]), so that the edge posteriors and
their sums by column are a few kernels per chunk of frames, not per frame.

Groups. A graph runs for G groups of sequences at once: a batch FSA is one
group whose states and columns span the whole batch (columns b * D + k); a
denominator shared by the batch is B groups over the same states and the
columns k of each sequence's frame. ``alpha`` and ``beta`` are
[T + 1, G, S]; the pad edge (id E) scores -inf, from and to state 0.

The recursions (frames t = 0 .. T-1, s_e(t) the score of edge e at frame t,
-inf from frame seq_lens[b] on):

    alpha[t + 1, q] = logsumexp over e into q of alpha[t, from(e)] + s_e(t)
    beta[t, q] = logsumexp over e out of q of s_e(t) + beta[t + 1, to(e)],
                 and 0 at sequence b's end state at t = seq_lens[b]
    occupancy of e at t = exp(alpha[t, from] + s_e(t) + beta[t + 1, to] - log Z)

and for sMBR the expectation semiring of docs/sequence-training.md (the same
as criterion/sequence_engine.cpp): conditional expected accuracies of prefixes and
suffixes, carried beside alpha and beta.

Precision: fsa_loss.py runs this in float64 whatever the input's dtype;
each frame's occupancies are divided by their sum (1 in exact arithmetic),
which removes the rounding that alpha[t] + beta[t + 1] and log Z gathered
over different frames. In float32 (devices without float64) every frame is
also rescaled per sequence (``_rescale``).

In float64, every graph runs in probability space instead
(fsa_loss_scaled.py); ``frame_pass`` chooses, and runs the sequences that
path cannot hold again here. The log-space recursions serve those, devices
without float64, and the best path.

Host synchronisation: none in the frame loops; the caller reads one small
tensor back per call (fsa_loss.py), and each pass in probability space one
more.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy
import torch

from .fsa_loss_buckets import Bucket, buckets, select
from .fsa_loss_scaled import ScaledGraph, forward_backward

__all__ = ["Graph", "loss_and_gradient"]

# Scores are gathered for this many (frame, group, edge) entries at a time.
_CHUNK_ENTRIES = 1 << 22
# Up to this many members, a bucket log-adds its slots pairwise.
_PAIRWISE_WIDTH = 8


class Graph:
    """One graph laid out for the frame loop (see the module's docstring).

    ``edges`` numpy int64 [4, E] (from, to, emission, sequence), ``weights``
    numpy [E], ``start``/``end`` numpy int64 [N]: the checked batch FSA with
    N sequences. ``shared``: one graph (N = 1) run for every sequence of the
    batch (G = B groups, columns D) instead of N = B sequences in one group
    (columns B * D). ``lengths``: numpy int64 [B]."""

    def __init__(self, num_states: int, edges: numpy.ndarray, weights: numpy.ndarray,
                 start: numpy.ndarray, end: numpy.ndarray, lengths: numpy.ndarray, classes: int,
                 shared: bool, dtype: torch.dtype, device: torch.device) -> None:
        batch = len(lengths)
        count = edges.shape[1]
        self.groups = batch if shared else 1
        self.num_states = num_states
        self.classes = classes
        self.columns = classes if shared else batch * classes
        # The pad edge (id E) scores -inf; its states are any real state.
        source = numpy.append(edges[0], 0)
        target = numpy.append(edges[1], 0)
        column = edges[2] if shared else edges[3] * classes + edges[2]
        self.source = torch.from_numpy(source).to(device)
        self.target = torch.from_numpy(target).to(device)
        self.column = torch.from_numpy(numpy.append(column, 0)).to(device)
        self.weight = torch.from_numpy(
            numpy.append(numpy.asarray(weights, dtype=numpy.float64), numpy.inf)).to(device, dtype)
        # The buckets of the log-space recursions, made when first needed
        # (``incoming``, ``outgoing``, ``by_column``).
        self._layout = (edges[0], edges[1], source, target, column, count, device)
        # Sequence b's group and start and end states.
        groups = numpy.arange(batch) if shared else numpy.zeros(batch, dtype=numpy.int64)
        starts = numpy.repeat(start, batch) if shared else start
        ends = numpy.repeat(end, batch) if shared else end
        self.group_of = torch.from_numpy(groups).to(device)
        self.start = torch.from_numpy(starts).to(device)
        self.end = torch.from_numpy(ends).to(device)
        self.lengths = torch.from_numpy(lengths).to(device)
        self.nonempty = int(numpy.count_nonzero(lengths))
        self._scaled_layout = (num_states, edges, weights, start, end, classes, shared, dtype)
        # The frame at which the backward pass starts in each end state.
        end_frame = numpy.full((self.groups, num_states), -1, dtype=numpy.int64)
        end_frame[groups, ends] = lengths
        self.end_frame = torch.from_numpy(end_frame).to(device)
        self.end_frames = {int(n) for n in lengths}
        # The sequences within a group (one for a shared graph, all of them
        # in a batch FSA's one group): each is rescaled on its own. A
        # state's and an edge's index among them; a state without edges
        # keeps 0 (its scores stay -inf).
        self.group_size = 1 if shared else batch
        state_sequence = numpy.zeros(num_states, dtype=numpy.int64)
        if not shared:
            state_sequence[edges[0]] = edges[3]
            state_sequence[edges[1]] = edges[3]
            state_sequence[start] = numpy.arange(batch)
            state_sequence[end] = numpy.arange(batch)
        self.state_sequence = torch.from_numpy(state_sequence).to(device)
        self.edge_sequence = torch.from_numpy(
            numpy.zeros(count + 1, dtype=numpy.int64) if shared else numpy.append(edges[3], 0)
        ).to(device)
        # Sequence b's index within its group.
        self.sequence_in_group = torch.from_numpy(
            numpy.zeros(batch, dtype=numpy.int64) if shared else numpy.arange(batch)).to(device)
        # Each sequence's states, padded with state S (a -inf column that
        # ``rescale`` appends): [group_size, W].
        members = numpy.full((self.group_size, 1), num_states, dtype=numpy.int64)
        if not shared:
            counts = numpy.bincount(state_sequence, minlength=batch)
            order = numpy.argsort(state_sequence, kind="stable")
            begins = numpy.concatenate((numpy.zeros(1, dtype=numpy.int64),
                                        numpy.cumsum(counts)[:-1]))
            members = numpy.full((batch, max(1, int(counts.max(initial=0)))), num_states,
                                 dtype=numpy.int64)
            slot = numpy.arange(members.shape[1])
            valid = slot[None, :] < counts[:, None]
            members[valid] = order[(begins[:, None] + slot[None, :])[valid]]
        self.members = torch.from_numpy(members.reshape(-1)).to(device)

    @functools.cached_property
    def scaled(self) -> ScaledGraph | None:
        """The layout for products in probability space (fsa_loss_scaled.py),
        where float64 can hold it; None where not."""
        num_states, edges, weights, start, end, classes, shared, dtype = self._scaled_layout
        device = self._layout[-1]
        if dtype != torch.float64:
            return None
        if shared:
            return ScaledGraph.lay_out_shared(num_states, edges, weights, int(start[0]),
                                              int(end[0]), classes, device)
        return ScaledGraph.lay_out_batch(num_states, edges, weights, start, end, classes,
                                         device)

    @functools.cached_property
    def incoming(self) -> list[Bucket]:
        """The edges by target state, each with its source."""
        sources, targets, source, _, _, count, device = self._layout
        return buckets(targets, self.num_states, count, device, source)

    @functools.cached_property
    def outgoing(self) -> list[Bucket]:
        """The edges by source state, each with its target."""
        sources, _, _, target, _, count, device = self._layout
        return buckets(sources, self.num_states, count, device, target)

    @functools.cached_property
    def by_column(self) -> list[Bucket]:
        """The edges by column. Summed once per chunk of frames, not per
        frame: no padding is worth saving a bucket."""
        _, _, _, _, column, count, device = self._layout
        return buckets(column, self.columns, count, device, overhead=0)

    def chunks(self, frames: int) -> list[tuple[int, int]]:
        """Frame ranges [t0, t1) of at most ``_CHUNK_ENTRIES`` scores each."""
        size = max(1, _CHUNK_ENTRIES // max(1, self.groups * len(self.column)))
        return [(t, min(t + size, frames)) for t in range(0, frames, size)]

    def scores(self, values: torch.Tensor, t0: int, t1: int) -> torch.Tensor:
        """s_e(t) for frames t0 .. t1-1: [t1 - t0, G, E + 1] from ``values``
        [T, B, D] (scaled, and -inf where the sequence has ended: see
        ``mask_ended``)."""
        return self.gather(values, t0, t1).sub_(self.weight)

    def gather(self, values: torch.Tensor, t0: int, t1: int) -> torch.Tensor:
        """``values`` [T, B, D] at each edge's column: [t1 - t0, G, E + 1]."""
        frames = values[t0:t1].reshape(t1 - t0, self.groups, self.columns)
        return select(frames.contiguous(), self.column)


class _ChunkScores:
    """A graph's edge scores by chunk of frames, computed once for the
    passes over them when all frames are one chunk (the usual case), else
    again for each pass (their memory is the chunk's bound)."""

    def __init__(self, graph: Graph, values: torch.Tensor, steps: int) -> None:
        self.graph = graph
        self.values = values
        self.ranges = graph.chunks(steps)
        self.cached = None
        if len(self.ranges) == 1:
            self.cached = graph.scores(values, *self.ranges[0])

    def __call__(self, t0: int, t1: int) -> torch.Tensor:
        if self.cached is not None:
            return self.cached
        return self.graph.scores(self.values, t0, t1)


def mask_ended(values: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """``values`` [T, B, D] with -inf from frame ``lengths[b]`` (a tensor
    [B]) of each sequence b on: every edge scores -inf there."""
    frames = torch.arange(values.shape[0], device=values.device)
    return values.masked_fill((frames[:, None] >= lengths)[..., None], -float("inf"))


def _log_sum(values: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    """logsumexp of ``values`` [..., W, R] over its slots W (into ``out``
    [..., R] if given); -inf where every value is -inf. For a few slots, a
    tree of pairwise ``logaddexp`` over whole planes: about log2(W)
    kernels."""
    width = values.shape[-2]
    if width > _PAIRWISE_WIDTH:
        return torch.logsumexp(values, -2, out=out)
    while width > 2:
        half = width // 2
        pairs = torch.logaddexp(values[..., :half, :], values[..., half:2 * half, :])
        if width % 2:
            first = pairs[..., 0, :]
            torch.logaddexp(first, values[..., width - 1, :], out=first)
        values, width = pairs, half
    if width == 1:
        return values[..., 0, :].clone() if out is None else out.copy_(values[..., 0, :])
    if out is None:
        return torch.logaddexp(values[..., 0, :], values[..., 1, :])
    return torch.logaddexp(values[..., 0, :], values[..., 1, :], out=out)


def _safe(log_total: torch.Tensor) -> torch.Tensor:
    """``log_total`` with -inf replaced by 0, for subtracting."""
    return log_total.masked_fill(log_total == -float("inf"), 0)


def _rescale(graph: Graph, row: torch.Tensor, scale: torch.Tensor | None = None) -> None:
    """Subtracts from ``row`` [G, S] (log values, in place) each sequence's
    largest value, 0 for a sequence whose values are all -inf, and writes
    those to ``scale`` [G, group_size] (float64) if given. Keeps the
    recursions' values near 0, where the dtype's precision is finest: for
    float32 (devices without float64); float64 keeps 1e-11 at the
    magnitudes of 1e5 that long segments reach, and skips it."""
    if graph.group_size == 1:
        top = row.amax(-1, keepdim=True)
    else:
        padded = torch.cat((row, row.new_full((row.shape[0], 1), -float("inf"))), -1)
        top = select(padded, graph.members).view(row.shape[0], graph.group_size, -1).amax(-1)
    top = top.masked_fill(top == -float("inf"), 0)
    if scale is not None:
        scale.copy_(top)
    row.sub_(top if graph.group_size == 1 else select(top, graph.state_sequence))


def best_path(graph: Graph, values: torch.Tensor,
              steps: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The emissions of a best path of each sequence (Viterbi; ties: the
    first best incoming edge in edge order, as criterion/sequence_engine.cpp), int64
    [steps, B], -1 from frame seq_lens[b] on; and whether the sequence has a
    path of finite score (bool [B]; its row is all -1 otherwise)."""
    device = values.device
    neg_inf = -float("inf")
    score = torch.full((graph.groups, graph.num_states), neg_inf, dtype=values.dtype,
                       device=device)
    score[graph.group_of, graph.start] = 0
    pad_edge = len(graph.column) - 1
    best = torch.full((steps, graph.groups, graph.num_states), pad_edge, dtype=torch.long,
                      device=device)
    # The best score at each sequence's end state after its last frame.
    final = score[graph.group_of, graph.end].masked_fill(graph.lengths != 0, neg_inf)
    for t0, t1 in graph.chunks(steps):
        chunk = graph.scores(values, t0, t1)
        edge_scores = [bucket.edges_of(chunk) for bucket in graph.incoming]
        for t in range(t0, t1):
            new = torch.empty_like(score)
            for bucket, scores in zip(graph.incoming, edge_scores):
                top, at = torch.max(bucket.gather(score) + scores[t - t0], dim=-2)
                bucket.put(new, top)
                bucket.put(best[t], bucket.ids.gather(0, at))
            if new.dtype != torch.float64:
                _rescale(graph, new)
            score = new
            final = torch.where(graph.lengths == t + 1, score[graph.group_of, graph.end], final)
    state = graph.end.clone()
    path = torch.full((steps, len(graph.end)), -1, dtype=torch.long, device=device)
    emission = graph.column % graph.classes
    for t in reversed(range(steps)):
        edge = best[t][graph.group_of, state]
        active = (t < graph.lengths) & (final > neg_inf)
        path[t] = torch.where(active, emission[edge], path[t])
        state = torch.where(active, graph.source[edge], state)
    return path, final > neg_inf


def _recursion(graph: Graph, buckets: list[Bucket], scores: _ChunkScores, table: torch.Tensor,
               scale: torch.Tensor, acc: torch.Tensor | None, hits: Any, reverse: bool) -> None:
    """Fills ``table`` [steps + 1, G, S] (alpha forward, beta with
    ``reverse``) from its first (last) row, each row rescaled (``_rescale``)
    with what it subtracted in ``scale`` [steps + 1, G, group_size]
    (float64), and with ``acc`` (same shape as ``table``, sMBR) the
    conditional expected accuracies beside it, ``hits`` [T, B, D] the
    reference's columns. ``buckets``: the graph's incoming (outgoing) edges
    by state; ``scores``: its ``_ChunkScores``."""
    for t0, t1 in (reversed(scores.ranges) if reverse else scores.ranges):
        chunk = scores(t0, t1)
        # Each bucket's edge scores for the chunk, gathered once.
        edge_scores = [bucket.edges_of(chunk) for bucket in buckets]
        edge_hits: Any = None  # with acc: the hits per bucket
        if acc is not None:
            gathered = graph.gather(hits, t0, t1)
            edge_hits = [bucket.edges_of(gathered) for bucket in buckets]
        for t in (reversed(range(t0, t1)) if reverse else range(t0, t1)):
            previous, current = (t + 1, t) if reverse else (t, t + 1)
            for i, bucket in enumerate(buckets):
                candidates = bucket.gather(table[previous]).add_(edge_scores[i][t - t0])
                out = table[current] if bucket.full else None
                total = _log_sum(candidates, out=out)
                if not bucket.full:
                    bucket.put(table[current], total)
                if acc is not None:
                    share = torch.exp(candidates - _safe(total)[..., None, :])
                    gained = bucket.gather(acc[previous]).add_(edge_hits[i][t - t0])
                    bucket.put(acc[current], (share * gained).sum(-2))
            if reverse and t in graph.end_frames:
                ends = graph.end_frame == t
                table[t].masked_fill_(ends, 0)
                if acc is not None:
                    acc[t].masked_fill_(ends, 0)
            if table.dtype != torch.float64:
                _rescale(graph, table[current], scale[current])


_Pass = tuple[torch.Tensor, Any, Any, Any]


def frame_pass(graph: Graph, values: torch.Tensor, steps: int, *, want_gradient: bool,
               accuracy: torch.Tensor | None = None, paths: dict[str, int] | None = None
               ) -> _Pass:
    """Forward (and, with ``want_gradient``, backward) over ``graph`` scored
    with ``values`` [T, B, D] (already scaled, boosted and ``mask_ended``). Returns (log Z
    [B], occupancy [steps, B, D] or None, expected accuracy [B] or None,
    accuracy gradient [steps, B, D] or None).

    ``accuracy``: None, or [T, B, D] with 1 at each frame's reference column
    (sMBR): then also the expected accuracy E[A] and sum over the paths with
    e_t = k of P(pi) (A(pi) - E[A]) (its derivative by values[t, b, k]).

    A graph with a layout in probability space runs there; if it cannot
    compute some sequences exactly (one read from the device tells), the
    whole graph runs again in log space and those sequences take its
    results. ``paths``: counts the sequences of each kind
    (``scaled``, ``log_space``) if given."""
    if paths is None:
        paths = {"scaled": 0, "log_space": 0}
    if graph.scaled is None or steps == 0:
        paths["log_space"] += graph.nonempty
        return _log_space_pass(graph, values, steps, want_gradient=want_gradient,
                               accuracy=accuracy)
    *scaled, inexact = forward_backward(graph.scaled, values, graph.lengths, steps,
                                        want_gradient=want_gradient, accuracy=accuracy)
    redone = int(inexact.sum())
    paths["scaled"] += graph.nonempty - redone
    paths["log_space"] += redone
    if not redone:
        return tuple(scaled)  # type: ignore[return-value]
    exact = _log_space_pass(graph, values, steps, want_gradient=want_gradient, accuracy=accuracy)
    merged: list[Any] = []
    for fast, slow in zip(scaled, exact):
        if fast is None:
            merged.append(None)
            continue
        redo = inexact if fast.dim() == 1 else inexact[None, :, None]
        merged.append(torch.where(redo, slow, fast))
    return tuple(merged)  # type: ignore[return-value]


def _log_space_pass(graph: Graph, values: torch.Tensor, steps: int, *, want_gradient: bool,
                    accuracy: torch.Tensor | None = None) -> _Pass:
    """``frame_pass`` in log space, for any graph."""
    device, dtype = values.device, values.dtype
    neg_inf = -float("inf")
    groups, states = graph.groups, graph.num_states
    smbr = accuracy is not None
    alpha = torch.full((steps + 1, groups, states), neg_inf, dtype=dtype, device=device)
    alpha[0, graph.group_of, graph.start] = 0
    alpha_acc: Any = torch.zeros_like(alpha) if smbr else None
    scores = _ChunkScores(graph, values, steps)
    # What each frame's rescaling subtracted, per sequence, and its sums:
    # alpha's true value at frame t is alpha[t] + alpha_offset[t], beta's
    # beta[t] + beta_offset[t].
    scale_shape = (steps + 1, groups, graph.group_size)
    # The offsets in float64, where the device has it (MPS has not).
    offset_dtype = torch.float32 if device.type == "mps" else torch.float64
    alpha_scale = torch.zeros(scale_shape, dtype=offset_dtype, device=device)
    _recursion(graph, graph.incoming, scores, alpha, alpha_scale, alpha_acc, accuracy,
               reverse=False)
    alpha_offset = alpha_scale.cumsum(0)
    log_total = (alpha[graph.lengths, graph.group_of, graph.end].to(offset_dtype) +
                 alpha_offset[graph.lengths, graph.group_of, graph.sequence_in_group])
    expected = alpha_acc[graph.lengths, graph.group_of, graph.end] if smbr else None
    if not want_gradient:
        return log_total, None, expected, None
    beta = torch.full_like(alpha, neg_inf)
    beta[steps].masked_fill_(graph.end_frame == steps, 0)
    beta_acc: Any = torch.zeros_like(alpha) if smbr else None
    beta_scale = torch.zeros(scale_shape, dtype=offset_dtype, device=device)
    _recursion(graph, graph.outgoing, scores, beta, beta_scale, beta_acc, accuracy, reverse=True)
    beta_offset = beta_scale.flip(0).cumsum(0).flip(0)
    # Per frame and sequence, log Z less the offsets of alpha[t] and
    # beta[t + 1], in float64 before it is rounded: the edge posteriors are
    # exp(alpha[t] + s_e(t) + beta[t + 1] - norm). exp(x - inf) = 0: no
    # occupancy for a sequence without a path.
    log_z = log_total.masked_fill(log_total == neg_inf, float("inf"))
    norm = (log_z.view(groups, graph.group_size) - alpha_offset[:steps] -
            beta_offset[1:]).to(dtype)
    occupancy = torch.zeros(steps, groups, graph.columns, dtype=dtype, device=device)
    covariance: Any = torch.zeros_like(occupancy) if smbr else None
    if smbr:
        mean = expected.view(groups, graph.group_size)[:, graph.edge_sequence]
    for t0, t1 in scores.ranges:
        # Edge posteriors of the chunk's frames, summed by column.
        forward = select(alpha[t0:t1], graph.source)
        backward = select(beta[t0 + 1:t1 + 1], graph.target)
        posterior = (forward.add_(scores(t0, t1)).add_(backward)
                     .sub_(select(norm[t0:t1], graph.edge_sequence)).exp_())
        if accuracy is not None:  # smbr
            paths = (select(alpha_acc[t0:t1], graph.source)
                     .add_(graph.gather(accuracy, t0, t1))
                     .add_(select(beta_acc[t0 + 1:t1 + 1], graph.target)).sub_(mean))
            weighted = paths.mul_(posterior)
        for bucket in graph.by_column:
            bucket.put(occupancy[t0:t1], bucket.edges_of(posterior).sum(-2))
            if smbr:
                bucket.put(covariance[t0:t1], bucket.edges_of(weighted).sum(-2))
    # A sequence's occupancies of a frame sum to 1 exactly; their computed
    # sum differs from 1 by the rounding that alpha[t] + beta[t + 1] and log Z
    # each gathered over different frames, which grows with T (systematic
    # in float32). Dividing it out leaves the within-frame rounding only.
    shape = (steps, len(graph.end), graph.classes)
    occupancy = occupancy.view(shape)
    total = occupancy.sum(-1, keepdim=True)
    total = total.masked_fill(total == 0, 1)
    occupancy.div_(total)
    if smbr:
        covariance = covariance.view(shape).div_(total)
    return log_total, occupancy, expected, covariance


def loss_and_gradient(values: torch.Tensor, lengths: numpy.ndarray, numerator: Graph,
                      denominator: Graph | None, *, criterion: str, am_scale: float,
                      boost: float, num_cost: torch.Tensor, want_gradient: bool,
                      paths: dict[str, int] | None = None
                      ) -> tuple[torch.Tensor, torch.Tensor | None]:
    """The criterion's loss [B] and, with ``want_gradient``, its gradient
    [T, B, D] with respect to ``values`` [T, B, D] (log_probs in the compute
    dtype): docs/sequence-training.md's definitions for ``mmi``, ``bmmi``
    and ``smbr``, -log Z for ``full-sum``. ``numerator``/``denominator``:
    ``Graph``s (the denominator None for ``full-sum``); ``lengths`` numpy
    int64 [B]; ``num_cost`` [B] on the device (numerator paths pay it);
    ``paths``: counts the denominator passes' kinds (``frame_pass``).

    A sequence whose numerator (or denominator) has no path of finite score
    gets loss inf and a zero gradient; a sequence of 0 frames gets loss 0
    under every criterion if its numerator has the empty path (nothing to
    tell apart), inf otherwise."""
    frames, batch, classes = values.shape
    steps = int(lengths.max()) if batch else 0
    device = values.device
    inf = float("inf")
    values = mask_ended(values[:steps], numerator.lengths)
    if criterion == "full-sum":
        log_total, occupancy, _, _ = frame_pass(numerator, values, steps,
                                                want_gradient=want_gradient)
        loss, gradient = -log_total, (None if occupancy is None else -occupancy)
        skipped = log_total == -inf
    else:
        assert denominator is not None  # only full-sum has none
        scaled = values * am_scale
        hits: Any = None  # without mmi: the best path's columns
        if criterion != "mmi":
            path, has_path = best_path(numerator, scaled, steps)
            # 1 at each frame's best-path column (none where path is -1).
            columns = torch.arange(classes, device=device)
            hits = (path[..., None] == columns).to(scaled.dtype)
        if criterion == "smbr":
            log_den, _, expected, covariance = frame_pass(
                denominator, scaled, steps, want_gradient=want_gradient, accuracy=hits,
                paths=paths)
            assert expected is not None  # given an accuracy, frame_pass computes it
            loss = -expected
            gradient = None if covariance is None else covariance * -am_scale
            skipped = ~has_path | (log_den == -inf)
        else:
            log_num, occ_num, _, _ = frame_pass(numerator, scaled, steps,
                                                want_gradient=want_gradient)
            den_values = scaled - boost * hits if criterion == "bmmi" else scaled
            log_den, occ_den, _, _ = frame_pass(denominator, den_values, steps,
                                                want_gradient=want_gradient, paths=paths)
            loss = log_den - (log_num - num_cost)
            gradient = None if occ_den is None else (occ_den - occ_num) * am_scale
            skipped = (log_num == -inf) | (log_den == -inf)
            if criterion == "bmmi":
                skipped = skipped | ~has_path
        empty = numerator.lengths == 0
        has_empty = numerator.start == numerator.end
        loss = torch.where(empty, torch.full_like(loss, inf).masked_fill(has_empty, 0), loss)
        skipped = torch.where(empty, ~has_empty, skipped)
    loss = loss.masked_fill(skipped, inf)
    if gradient is None:
        return loss, None
    gradient = gradient.masked_fill(skipped[None, :, None], 0)
    if steps < frames:
        gradient = torch.cat([gradient, gradient.new_zeros(frames - steps, batch, classes)])
    return loss, gradient
