"""The full-sum loss over a batch FSA in PyTorch, and the lattice-free
sequence criteria (MMI, boosted MMI, sMBR) over numerator FSAs and a
denominator graph: ``fsa_loss``.

``fsa_loss(log_probs, seq_lens, fsa)`` is -log of the sum over all paths of
each sequence's automaton, where a path of sequence b is a chain of exactly
``seq_lens[b]`` edges of b (``fsa.edges[3] == b``) from its start state
``fsa.start_end_states[0, b]`` to its end state ``fsa.start_end_states[1, b]``,
and its score is ``sum_t log_probs[t, b, emission(e_t)] - weight(e_t)``
(weights are costs in -log space, as ``FsaBuilder`` and RASR give them). This
is the criterion of RETURNN's ``fast_baum_welch`` and i6_native_ops' ``fbw``,
over the same ``WeightedFsa`` layout.

Gradient. Unlike ``sprintrt.torch.sprint_loss`` (see that module's docstring),
whose backward returns Sprint's error signal ``softmax - occupancy`` as the
gradient with respect to ``log_probs``, ``fsa_loss`` returns the true gradient
with respect to ``log_probs``: ``-occupancy * grad_loss``, where
``occupancy[t, b, k]`` is the posterior probability that sequence b's path
emits k at frame t (each frame's occupancies sum to 1). So
``torch.autograd.gradcheck`` passes, and ``log_probs`` need not be normalized:
the loss is the plain full sum for any scores. When ``log_probs =
log_softmax(z)``, log_softmax's backward maps ``-occupancy`` to
``softmax * sum_k occupancy - occupancy = softmax - occupancy``, which is
Sprint's error signal with respect to the logits z: both losses send the same
gradient to z (and to everything before it). The gradient is zero in the
padding frames and for a sequence without any path of nonzero probability,
whose loss is ``inf`` (as ``torch.nn.functional.ctc_loss`` without
``zero_infinity``): each call names such sequences once, in one warning
through the ``sprintrt`` logger, and ``fsa_loss_stats()`` counts them (the
rule of every entry point: docs/design.md, "A segment without a path").
The FSA's weights get no gradient.

Sequence criteria. With ``criterion="mmi"``, ``"bmmi"`` or ``"smbr"`` and a
denominator ``den_fsa`` (one graph shared by every sequence, or one per
sequence), the loss is exactly docs/sequence-training.md's: paths score
``am_scale * sum_t log_probs[t, b, e_t] - weight``; MMI is log Z_den - log
Z_num (the numerator's paths also paying ``num_cost[b]``), boosted MMI
lowers each denominator path's score by ``boost`` per frame on which it
emits what the numerator's best path emits there, and sMBR is minus the
expected number of such frames under the denominator. The gradient is the
true gradient with respect to ``log_probs``: ``am_scale * (occupancy_den -
occupancy_num)`` for MMI (the best path held fixed for bMMI and sMBR), and
the covariance of an edge's use with the accuracy for sMBR. A sequence whose
numerator or denominator has no path is skipped as for the full sum.

Implementations:

* ``"kernel"``: sprint-sim's own code on the CPU (``criterion::full_sum_engine``
  for the full sum, ``criterion::sequence_loss`` for the criteria, over one
  read-only copy of a shared denominator), threaded over the sequences with
  the GIL released (one engine per thread, kept between calls). It reads
  float32 and accumulates in double; other floating dtypes are converted to
  float32 (and the results back to them).
* ``"torch"``: a forward-backward in torch operations over all sequences at
  once, a few large kernels per frame and no scatter (fsa_loss_torch.py), so
  bit-for-bit deterministic on any device; it runs wherever torch runs and
  computes in float64 whatever the input's dtype (float32 on devices
  without float64, such as Apple's MPS: not exact on long segments), the
  results in the input's dtype. The FSAs are laid out
  on the host (pass them on the CPU, where ``FsaBuilder`` makes them) and
  uploaded before the frame loops; the only read back from the device is
  one small tensor per call (which sequences were skipped, and whether
  log_probs held NaN or +inf), besides ``seq_lens`` and ``num_cost`` if
  they are given on the device.
* ``"auto"`` (the default): the kernel for CPU tensors, except float64 ones,
  which take the torch implementation, exact in float64; the torch
  implementation on any other device.

Both implementations need what every builder of batch FSAs makes (and
``fsa_loss`` checks it for both, numerators and denominators alike): each
sequence's states are the range ``start_end_states[0, b] ..
start_end_states[1, b]``, its end state is the highest of them, its edges
stay within it, and the ranges of different sequences do not overlap.
"""

from __future__ import annotations

import logging
import math
import numbers
import threading
from typing import Any, Callable, NoReturn, Optional, Sequence

import numpy
import torch

from . import _sprintrt
from ._arguments import _batch_major_hint
from .fsa_loss_torch import Graph, loss_and_gradient

__all__ = ["fsa_loss", "fsa_loss_stats"]

_IMPLEMENTATIONS = ("auto", "kernel", "torch")
_CRITERIA = ("full-sum", "mmi", "bmmi", "smbr")
_FSA_FIELDS = ("num_states", "edges", "weights", "start_end_states")
# How many sequences a warning names before "and N more".
_NAMES_SHOWN = 3

# fsa_loss' counters (see fsa_loss_stats), for every thread of the process.
_stats_lock = threading.Lock()
_stats = {"calls": 0, "sequences": 0, "skipped": 0, "scaled": 0, "log_space": 0}

# A compute function of ``_PrecomputedGradientLoss``: (log_probs, want_gradient) ->
# (loss [B], gradient [T, B, D] or None).
_Compute = Callable[[torch.Tensor, bool], "tuple[torch.Tensor, Optional[torch.Tensor]]"]


def fsa_loss_stats() -> dict[str, int]:
    """``fsa_loss``' counters in this process: ``calls``, ``sequences``
    (computed) and ``skipped`` (of those, without a path: loss inf,
    gradient zero); and of the sequence criteria's sequences, ``scaled``
    (the denominator ran in probability space) and ``log_space`` (it ran
    in the log-space recursions: a graph without a dense or sparse layout,
    or a sequence the scaled recursions could not hold). As a new dict."""
    with _stats_lock:
        return dict(_stats)


def _count_and_warn(skipped: list[int], total: int, paths: dict[str, int]) -> None:
    """Counts the call, its ``skipped`` sequences (a list of indices, loss
    inf) and its denominators' ``paths`` (``scaled``, ``log_space``) and
    names the skipped sequences once in a warning through the ``sprintrt``
    logger."""
    with _stats_lock:
        _stats["calls"] += 1
        _stats["sequences"] += total
        _stats["skipped"] += len(skipped)
        for key, count in paths.items():
            _stats[key] += count
    if skipped:
        shown = ", ".join(str(b) for b in skipped[:_NAMES_SHOWN])
        more = len(skipped) - _NAMES_SHOWN
        logging.getLogger("sprintrt").warning(
            "fsa_loss: %d of %d sequences without a path (loss inf, gradient zero: too few "
            "frames for the FSA, no path to its end state, a denominator without a path, or a "
            "frame whose every score is -inf): %s%s", len(skipped), total, shown,
            f" and {more} more" if more > 0 else "")


def _host_array(value: Any, name: str) -> numpy.ndarray:
    """``value`` (tensor on any device, numpy array, list or number) as a
    numpy array; unsigned arrays (sprint-sim's uint32 edges) become int64."""
    if isinstance(value, torch.Tensor):
        value = value.detach()
        value = (value if value.device.type == "cpu" else value.cpu()).numpy()
    try:
        array = numpy.asarray(value)
    except (TypeError, ValueError) as e:
        raise TypeError(f"{name} must be a tensor or an array, got {type(value).__name__} "
                        f"({e})") from None
    if array.dtype == object:
        raise TypeError(f"{name} must be a tensor or an array, got {type(value).__name__}")
    if array.dtype.kind == "u":
        array = array.astype(numpy.int64)
    return array


def _fsa_fields(fsa: Any, name: str) -> tuple[Any, ...]:
    """The four fields of a WeightedFsa-like ``fsa``: by name if it has
    them (sprintrt's and i6_models' ``WeightedFsa``), else by position."""
    if all(hasattr(fsa, field) for field in _FSA_FIELDS):
        return tuple(getattr(fsa, field) for field in _FSA_FIELDS)
    try:
        fields = tuple(fsa)
    except TypeError:
        raise TypeError(f"{name} must be a WeightedFsa or a tuple (num_states, edges, weights, "
                        f"start_end_states), got {type(fsa).__name__}") from None
    if len(fields) != 4:
        raise ValueError(f"{name} must have 4 fields (num_states, edges, weights, "
                         f"start_end_states), got {len(fields)}")
    return fields


def _first(bad: numpy.ndarray) -> int | None:
    """The index of the first True of the 1-D numpy bool array ``bad``, or
    None."""
    hits = numpy.flatnonzero(bad)
    return int(hits[0]) if len(hits) else None


def _fsa_structure(fsa: Any, name: str, sizes: Sequence[int], log_probs_shape: Sequence[int] = (),
                   batch_first: bool = False
                   ) -> tuple[int, numpy.ndarray, numpy.ndarray, numpy.ndarray]:
    """The FSA's fields as host arrays, their shapes and dtypes checked:
    (num_states int, edges [4, E], weights [E], start_end_states [2, N]) with
    N in ``sizes`` (the batch, or 1 and the batch for a denominator); raises
    ValueError or TypeError naming the field."""
    num_states, edges, weights, start_end = _fsa_fields(fsa, name)
    num_states = _host_array(num_states, name + ".num_states")
    if num_states.ndim != 0 or num_states.dtype.kind not in "iu":
        raise ValueError(f"{name}.num_states must be one integer (0-d: the total state count), got "
                         f"shape {list(num_states.shape)} of {num_states.dtype} (a WeightedFsaV2? "
                         "fsa_loss takes the V1 layout)")
    edges = _host_array(edges, name + ".edges")
    if edges.ndim != 2 or edges.shape[0] != 4:
        raise ValueError(f"{name}.edges must have shape [4, E] (from, to, emission, sequence), got "
                         f"{list(edges.shape)}")
    if edges.dtype.kind not in "iu":
        raise TypeError(f"{name}.edges must be integers, got {edges.dtype}")
    weights = _host_array(weights, name + ".weights")
    if weights.shape != (edges.shape[1],) or weights.dtype.kind != "f":
        raise ValueError(f"{name}.weights must be floats of shape [E] = [{edges.shape[1]}], got "
                         f"{list(weights.shape)} of {weights.dtype}")
    start_end = _host_array(start_end, name + ".start_end_states")
    if start_end.ndim != 2 or start_end.shape[0] != 2:
        raise ValueError(f"{name}.start_end_states must have shape [2, N], got "
                         f"{list(start_end.shape)}")
    if start_end.shape[1] not in sizes:
        batch = sizes[-1]
        if name == "fsa":
            hint = _batch_major_hint(start_end.shape[1], log_probs_shape, "log_probs",
                                     batch_first)
            raise ValueError(f"fsa has {start_end.shape[1]} sequences (fsa.start_end_states "
                             f"columns) for a batch of {batch} (log_probs){hint}")
        raise ValueError(f"{name} has {start_end.shape[1]} sequences ({name}.start_end_states "
                         f"columns) for a batch of {batch}: give one graph for every sequence, or "
                         "one per sequence")
    if start_end.dtype.kind not in "iu":
        raise TypeError(f"{name}.start_end_states must be integers, got {start_end.dtype}")
    return int(num_states), edges, weights, start_end


def _uint32_values(array: numpy.ndarray) -> numpy.ndarray:
    """An integer array as int64, int32 read as uint32 (i6_models' layout
    stores uint32 state and emission indices in int32)."""
    wide = array.astype(numpy.int64)
    return wide & 0xFFFFFFFF if array.dtype == numpy.int32 else wide


def _check_fsa_values(name: str, num_states: int, edges: numpy.ndarray, weights: numpy.ndarray,
                      start_end: numpy.ndarray, classes: int
                      ) -> tuple[numpy.ndarray, numpy.ndarray, numpy.ndarray]:
    """The FSA's values checked on the host (criterion/batch_fsa.cpp checks the same,
    with the same messages, for the kernel): (edges int64 [4, E], start
    int64 [N], end int64 [N]); raises ValueError naming the field."""
    edges = _uint32_values(edges)
    start, end = _uint32_values(start_end)
    sequences = len(start)
    b = _first((start < 0) | (end < start) | (end >= num_states))
    if b is not None:
        raise ValueError(f"{name}.start_end_states: sequence {b} has start state {start[b]} and "
                         f"end state {end[b]} (need 0 <= start <= end < num_states = {num_states})")
    order = numpy.argsort(start, kind="stable")
    b = _first(end[order[:-1]] >= start[order[1:]])
    if b is not None:
        raise ValueError(f"{name}.start_end_states: the states of sequences {order[b]} and "
                         f"{order[b + 1]} overlap")
    e = _first(numpy.isnan(weights) | (weights == -numpy.inf))
    if e is not None:
        raise ValueError(f"{name}.weights[{e}] is {float(weights[e])} (a cost: finite or +inf)")
    sequence = edges[3]
    e = _first((sequence < 0) | (sequence >= sequences))
    if e is not None:
        raise ValueError(f"{name}.edges: edge {e} belongs to sequence {sequence[e]}, but {name} "
                         f"has {sequences} sequences")
    first, last = start[sequence], end[sequence]
    for row in (0, 1):
        e = _first((edges[row] < first) | (edges[row] > last))
        if e is not None:
            s = sequence[e]
            raise ValueError(f"{name}.edges: edge {e} of sequence {s} touches state "
                             f"{edges[row, e]}, outside the sequence's states [{start[s]}, "
                             f"{end[s]}] ({name}.start_end_states)")
    e = _first((edges[2] < 0) | (edges[2] >= classes))
    if e is not None:
        raise ValueError(f"{name}.edges: edge {e} emits {edges[2, e]}, but log_probs has {classes} "
                         "classes (D)")
    return edges, start, end


def _kernel_array(array: numpy.ndarray) -> numpy.ndarray:
    """An integer host array for the kernel, int32 viewed as uint32 (what
    the binding reads as int64)."""
    return array.view(numpy.uint32) if array.dtype == numpy.int32 else array


def lengths_numpy(lengths: Any, batch: int, name: str, log_probs_shape: Sequence[int] = (),
                  batch_first: bool = False) -> numpy.ndarray:
    """``lengths`` (a tensor on any device, a numpy array or a list of ints)
    as a 1-D integer numpy array of ``batch`` entries; a ValueError or
    TypeError naming ``name`` otherwise (saying so when the count matches
    the other leading axis of ``log_probs_shape``, as ``_batch_major_hint``
    does). Both losses' check of their sequence lengths (``sprint_loss``
    takes them as they are)."""
    if isinstance(lengths, torch.Tensor):
        lengths = lengths.detach().cpu().numpy()
    lengths = numpy.asarray(lengths)
    if lengths.ndim != 1:
        raise ValueError(f"{name} must be 1-D (batch), got {lengths.ndim}-D")
    if lengths.dtype.kind not in "iu":
        raise TypeError(f"{name} must be integers, got {lengths.dtype}")
    if len(lengths) != batch:
        hint = _batch_major_hint(len(lengths), log_probs_shape, "log_probs", batch_first)
        raise ValueError(f"{name} has {len(lengths)} entries for a batch of {batch}{hint}")
    return lengths


def _check_lengths(seq_lens: Any, batch: int, frames: int, log_probs_shape: Sequence[int],
                   batch_first: bool) -> numpy.ndarray:
    """``seq_lens`` as an int64 numpy array of ``batch`` lengths in [0,
    frames]; raises ValueError or TypeError (``log_probs_shape``, as given,
    for ``lengths_numpy``'s hint)."""
    lengths = lengths_numpy(seq_lens, batch, "seq_lens", log_probs_shape,
                            batch_first).astype(numpy.int64)
    b = _first((lengths < 0) | (lengths > frames))
    if b is not None:
        raise ValueError(f"seq_lens[{b}] is {lengths[b]}, not in [0, {frames}] (log_probs' frames)")
    return lengths


def _nonfinite(log_probs: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """A 0-d bool tensor on log_probs' device: whether a frame ``lengths``
    (on that device) covers holds NaN or +inf (read back with the call's
    other flags)."""
    frames = torch.arange(log_probs.shape[0], device=log_probs.device)
    valid = frames[:, None] < lengths[None, :]
    return (~(log_probs < float("inf")) & valid[:, :, None]).any()


def _raise_nonfinite(log_probs: torch.Tensor, lengths: numpy.ndarray) -> NoReturn:
    """Raises ValueError naming the first NaN or +inf in the valid frames."""
    frames = log_probs.shape[0]
    valid = torch.arange(frames)[:, None] < torch.from_numpy(lengths)[None, :]
    bad = ~(log_probs.detach().cpu() < float("inf")) & valid[:, :, None]
    t, b, k = (int(i) for i in bad.nonzero()[0])
    value = "NaN" if math.isnan(float(log_probs[t, b, k])) else "+inf"
    raise ValueError(f"log_probs[{t}, {b}, {k}] (frame, sequence, class) is {value} (only finite "
                     "values and -inf are valid)")


class _PrecomputedGradientLoss(torch.autograd.Function):
    """A loss whose gradient with respect to log_probs is computed with it:
    ``compute(log_probs)`` returns (loss [B], gradient [T, B, D] or None when
    no gradient is wanted); backward scales the gradient by grad_loss."""

    @staticmethod
    def forward(ctx: Any, log_probs: torch.Tensor, compute: _Compute) -> torch.Tensor:
        loss, gradient = compute(log_probs.detach(), ctx.needs_input_grad[0])
        ctx.gradient = gradient
        return loss.to(log_probs.dtype)

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx: Any, grad_loss: torch.Tensor) -> tuple[torch.Tensor, None]:
        gradient = ctx.gradient
        scaled = gradient * grad_loss.to(gradient.dtype)[None, :, None]
        return scaled.to(grad_loss.dtype), None


def _kernel_compute(lengths: numpy.ndarray, fsa: tuple[Any, ...], den: tuple[Any, ...] | None,
                    criterion: str, am_scale: float, boost: float, num_cost: numpy.ndarray,
                    num_threads: int, skipped: list[int], paths: dict[str, int]) -> _Compute:
    """The kernel's compute function for ``_PrecomputedGradientLoss``; it
    extends ``skipped`` with the sequences of loss inf (read from the
    kernel's float64 losses: a half-precision loss may overflow, and numpy
    has no bfloat16), and counts the denominators' ``paths``."""
    num_states, edges, weights, start_end = fsa

    def compute(log_probs: torch.Tensor,
                want_gradient: bool) -> tuple[torch.Tensor, torch.Tensor | None]:
        values = log_probs.to(torch.float32)
        if values.stride(2) != 1:
            values = values.contiguous()
        if criterion == "full-sum":
            loss, host_gradient = _sprintrt.fsa_loss_cpu(
                values.numpy(), lengths, _kernel_array(edges), weights,
                _kernel_array(start_end), num_states, num_threads)
            gradient = torch.from_numpy(host_gradient)
        else:
            den_states, den_edges, den_weights, den_start_end = den  # type: ignore[misc]
            loss, host_gradient, scaled, log_space = _sprintrt.sequence_loss_cpu(
                values.numpy(), lengths, _kernel_array(edges), weights, _kernel_array(start_end),
                num_states, _kernel_array(den_edges), den_weights, _kernel_array(den_start_end),
                den_states, num_cost, criterion, am_scale, boost, num_threads)
            gradient = torch.from_numpy(host_gradient)
            paths["scaled"] += scaled
            paths["log_space"] += log_space
        skipped.extend(numpy.flatnonzero(numpy.isinf(loss)).tolist())
        return torch.from_numpy(loss), gradient.to(log_probs.dtype) if want_gradient else None

    return compute


def _compute_dtype(device: torch.device) -> torch.dtype:
    """The torch implementation's dtype on ``device``: float64, where
    float32's rounding, gathered over thousands of frames, would move the
    posteriors by more than 1e-4 (docs/sequence-training.md); float32 on
    devices without float64 (Apple's MPS)."""
    return torch.float32 if device.type == "mps" else torch.float64


def _torch_compute(lengths: numpy.ndarray, fsa: tuple[Any, ...], den: tuple[Any, ...] | None,
                   classes: int, criterion: str, am_scale: float, boost: float,
                   num_cost: numpy.ndarray, flags: list[torch.Tensor],
                   paths: dict[str, int]) -> _Compute:
    """The torch implementation's compute function. ``fsa`` and ``den``:
    (num_states, edges, weights, start_end_states, checked values) on the
    host. Appends the call's device flags (skipped sequences, then NaN or
    +inf in log_probs) to ``flags``, and counts the denominators'
    ``paths``."""

    def compute(log_probs: torch.Tensor,
                want_gradient: bool) -> tuple[torch.Tensor, torch.Tensor | None]:
        dtype = _compute_dtype(log_probs.device)
        device = log_probs.device

        def graph(parts: tuple[Any, ...], shared: bool) -> Graph:
            num_states, _, weights, _, (edges, start, end) = parts
            return Graph(num_states, edges, weights, start, end, lengths, classes, shared, dtype,
                         device)

        numerator = graph(fsa, False)
        denominator = None if den is None else graph(den, len(den[4][1]) == 1)
        loss, gradient = loss_and_gradient(
            log_probs.to(dtype), lengths, numerator, denominator, criterion=criterion,
            am_scale=am_scale, boost=boost,
            num_cost=torch.as_tensor(num_cost, dtype=dtype, device=device),
            want_gradient=want_gradient, paths=paths)
        flags.append(torch.cat([torch.isinf(loss),
                                _nonfinite(log_probs, numerator.lengths)[None]]))
        return loss, gradient

    return compute


def _is_number(value: object) -> bool:
    """Whether ``value`` is a real number (a Python or numpy scalar, not a
    bool)."""
    return isinstance(value, numbers.Real) and not isinstance(value, (bool, numpy.bool_))


def _check_parameters(criterion: str, den_fsa: Any, am_scale: Any, boost: Any, num_cost: Any,
                      batch: int) -> numpy.ndarray:
    """Checks the criterion and its parameters; returns num_cost as a float64
    numpy array [B]."""
    if criterion not in _CRITERIA:
        raise ValueError(f"criterion must be one of {', '.join(_CRITERIA)}, got {criterion!r}")
    if criterion == "full-sum":
        given = [name for name, given in (
            ("den_fsa", den_fsa is not None), ("am_scale", _is_number(am_scale) and am_scale != 1),
            ("boost", _is_number(boost) and boost != 0), ("num_cost", num_cost is not None))
            if given]
        if given:
            raise ValueError(f"{' and '.join(given)} applies to criteria mmi, bmmi and smbr, "
                             "not full-sum")
        return numpy.zeros(batch)
    if den_fsa is None:
        raise ValueError(f"criterion {criterion!r} needs den_fsa, the denominator graph (e.g. "
                         "sprintrt.torch.label_lm_denominator)")
    if not _is_number(am_scale) or not math.isfinite(am_scale) or am_scale <= 0:
        raise ValueError(f"am_scale must be a finite number > 0, got {am_scale!r}")
    if not _is_number(boost) or not math.isfinite(boost) or boost < 0:
        raise ValueError(f"boost must be a finite number >= 0, got {boost!r}")
    if boost != 0 and criterion != "bmmi":
        raise ValueError(f"boost applies to criterion bmmi only, not {criterion}")
    if num_cost is not None and criterion == "smbr":
        raise ValueError("num_cost applies to criteria mmi and bmmi, not smbr (the expected "
                         "accuracy does not depend on it)")
    if num_cost is None:
        return numpy.zeros(batch)
    cost = _host_array(num_cost, "num_cost")
    if cost.shape != (batch,) or cost.dtype.kind not in "iuf":
        raise ValueError(f"num_cost must be B = {batch} numbers, got shape {list(cost.shape)} of "
                         f"{cost.dtype}")
    b = _first(~numpy.isfinite(cost))
    if b is not None:
        raise ValueError(f"num_cost[{b}] is {cost[b]} (must be finite)")
    return cost.astype(numpy.float64)


def fsa_loss(log_probs: torch.Tensor, seq_lens: Any, fsa: Any, *, den_fsa: Any = None,
             criterion: str = "full-sum", am_scale: float = 1.0, boost: float = 0.0,
             num_cost: Any = None, batch_first: bool = False, implementation: str = "auto",
             num_threads: int | None = None) -> torch.Tensor:
    """The loss [B] of each sequence (see the module's docstring), of
    ``log_probs``' dtype, on its device; ``inf`` for a sequence without a
    path of nonzero probability.

    ``log_probs``: float tensor (T, B, D), or (B, T, D) with
    ``batch_first=True``, of log-probabilities (any scores: they need not be
    normalized); only the first ``seq_lens[b]`` frames of sequence b are
    read. ``seq_lens``: B lengths in [0, T] (a tensor on any device, a numpy
    array or a list). ``fsa``: the numerators, a WeightedFsa (sprintrt's,
    i6_models' or any 4-tuple ``(num_states, edges [4, E], weights [E],
    start_end_states [2, B])``; int32 edges are read as uint32 values).

    ``criterion``: ``"full-sum"`` (-log Z of ``fsa``), ``"mmi"``, ``"bmmi"``
    or ``"smbr"`` (docs/sequence-training.md), which need ``den_fsa``: a
    WeightedFsa of one sequence (one graph for every sequence of the batch,
    read in place, e.g. ``label_lm_denominator``) or of B (one per sequence,
    e.g. ``hypotheses_denominator`` per segment joined by ``join_graphs``).
    ``am_scale`` (KAPPA, > 0) scales log_probs in both; ``boost`` (B >= 0)
    is bmmi's; ``num_cost`` [B] is the cost every numerator path of
    sequence b pays (e.g. ``lm_scale * LabelLm.cost(labels)``, which makes
    MMI over a label LM non-negative; it does not change any gradient).

    ``implementation``: ``"auto"``, ``"kernel"`` (CPU only) or ``"torch"``
    (see the module's docstring). ``num_threads``: the kernel's threads
    (default ``torch.get_num_threads()``); its results are the same bits
    for any number.

    The gradient with respect to ``log_probs`` is the loss's true gradient
    times ``grad_loss`` (zero in the padding frames). Bad arguments raise
    ``ValueError`` or ``TypeError`` naming the argument and what is wrong."""
    if not isinstance(log_probs, torch.Tensor):
        raise TypeError(f"log_probs must be a torch.Tensor, got {type(log_probs).__name__}")
    if log_probs.dim() != 3:
        axes = "batch, time, dim" if batch_first else "time, batch, dim"
        raise ValueError(f"log_probs must be 3-D ({axes}), got {log_probs.dim()}-D")
    if not log_probs.is_floating_point():
        raise TypeError(f"log_probs must be a floating-point tensor, got {log_probs.dtype}")
    if implementation not in _IMPLEMENTATIONS:
        raise ValueError(f"implementation must be one of {', '.join(_IMPLEMENTATIONS)}, "
                         f"got {implementation!r}")
    on_cpu = log_probs.device.type == "cpu"
    if implementation == "kernel" and not on_cpu:
        raise ValueError("implementation='kernel' runs on the CPU, but log_probs is on "
                         f"{log_probs.device}")
    if implementation == "auto":
        implementation = "kernel" if on_cpu and log_probs.dtype != torch.float64 else "torch"
    time_major = log_probs.transpose(0, 1) if batch_first else log_probs
    frames, batch, classes = time_major.shape
    shape = tuple(log_probs.shape)
    lengths = _check_lengths(seq_lens, batch, frames, shape, batch_first)
    cost = _check_parameters(criterion, den_fsa, am_scale, boost, num_cost, batch)
    numerator = _fsa_structure(fsa, "fsa", (batch,), shape, batch_first)
    denominator = None
    if den_fsa is not None:
        denominator = _fsa_structure(den_fsa, "den_fsa", (1, batch))
    paths = {"scaled": 0, "log_space": 0}
    if implementation == "kernel":
        if num_threads is None:
            num_threads = torch.get_num_threads()
        if not isinstance(num_threads, int) or num_threads < 1:
            raise ValueError(f"num_threads must be a positive int, got {num_threads!r}")
        # The binding checks the FSAs' values and log_probs' (no torch
        # operations, which are slow here when their threads compete with the
        # kernel's).
        skipped: list[int] = []
        compute = _kernel_compute(lengths, numerator, denominator, criterion, float(am_scale),
                                  float(boost), cost, num_threads, skipped, paths)
        loss = _PrecomputedGradientLoss.apply(time_major, compute)
    else:
        parts = [numerator + (_check_fsa_values("fsa", *numerator, classes),)]
        if denominator is not None:
            parts.append(denominator + (_check_fsa_values("den_fsa", *denominator, classes),))
        flags: list[torch.Tensor] = []
        compute = _torch_compute(lengths, parts[0], parts[1] if len(parts) > 1 else None,
                                 classes, criterion, float(am_scale), float(boost), cost, flags,
                                 paths)
        loss = _PrecomputedGradientLoss.apply(time_major, compute)
        # The call's one read from the device (besides one per graph in
        # probability space: fsa_loss_torch.frame_pass).
        host_flags = flags[0].cpu().numpy()
        if host_flags[-1]:
            _raise_nonfinite(time_major, lengths)
        skipped = numpy.flatnonzero(host_flags[:-1]).tolist()
    _count_and_warn(skipped, batch, paths)
    return loss
