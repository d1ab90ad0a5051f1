"""The full-sum loss over a batch FSA in PyTorch: ``fsa_loss``.

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

Implementations:

* ``"kernel"``: sprintrt's own full-sum kernel (``sim::full_sum_engine``, the
  one sprint-sim runs), on the CPU, threaded over the sequences with the GIL
  released (one engine per thread, kept between calls). It reads float32 and
  accumulates in double; other floating dtypes are converted to float32 (and
  the results back to them).
* ``"torch"``: a forward-backward in torch operations, per frame over all
  edges of the batch at once (log-sum-exp by scatter), with its own backward
  pass; it runs wherever torch runs, in the input's dtype (float16 and
  bfloat16 in float32).
* ``"auto"`` (the default): the kernel for CPU tensors, except float64 ones,
  which take the torch implementation, exact in float64; the torch
  implementation on any other device.

The kernel needs what every builder of batch FSAs makes (and ``fsa_loss``
checks it for both implementations): each sequence's states are the range
``start_end_states[0, b] .. start_end_states[1, b]``, its end state is the
highest of them, its edges stay within it, and the ranges of different
sequences do not overlap.
"""

import logging
import math
import threading
import warnings

import numpy
import torch

from . import _sprintrt, _batch_major_hint

__all__ = ["fsa_loss", "fsa_loss_stats"]

# The torch implementation's log-sum-exp needs scatter_reduce's "amax", which
# torch 1.12 and 1.13 call beta (and warn about once per process).
warnings.filterwarnings("ignore", message=r"scatter_reduce\(\) is in beta")

_IMPLEMENTATIONS = ("auto", "kernel", "torch")
_FSA_FIELDS = ("num_states", "edges", "weights", "start_end_states")
# How many sequences a warning names before "and N more".
_NAMES_SHOWN = 3

# fsa_loss' counters (see fsa_loss_stats), for every thread of the process.
_stats_lock = threading.Lock()
_stats = {"calls": 0, "sequences": 0, "skipped": 0}


def fsa_loss_stats():
    """``fsa_loss``' counters in this process: ``calls``, ``sequences``
    (computed) and ``skipped`` (of those, without a path: loss inf,
    gradient zero), as a new dict."""
    with _stats_lock:
        return dict(_stats)


def _count_and_warn(loss):
    """Counts the call and its sequences without a path (loss inf) and names
    those once in a warning through the ``sprintrt`` logger (reading the
    loss to the host: one synchronization on a GPU)."""
    skipped = torch.isinf(loss.detach()).nonzero().flatten().tolist()
    with _stats_lock:
        _stats["calls"] += 1
        _stats["sequences"] += loss.shape[0]
        _stats["skipped"] += len(skipped)
    if skipped:
        shown = ", ".join(str(b) for b in skipped[:_NAMES_SHOWN])
        more = len(skipped) - _NAMES_SHOWN
        logging.getLogger("sprintrt").warning(
            "fsa_loss: %d of %d sequences without a path (loss inf, gradient zero: too few "
            "frames for the FSA, no path to its end state, or a frame whose every score is "
            "-inf): %s%s", len(skipped), loss.shape[0], shown,
            " and %d more" % more if more > 0 else "")


def _as_tensor(value, name, device=None):
    """``value`` (tensor, numpy array, list or number) as a tensor on
    ``device`` (its own if None). Unsigned numpy arrays (sprint-sim's uint32
    edges) become int64, which torch can hold."""
    if isinstance(value, numpy.ndarray) and value.dtype.kind == "u":
        value = value.astype(numpy.int64)
    try:
        tensor = torch.as_tensor(value)
    except (TypeError, ValueError, RuntimeError) as e:
        raise TypeError("%s must be a tensor or an array, got %s (%s)"
                        % (name, type(value).__name__, e)) from None
    return tensor if device is None else tensor.to(device)


def _fsa_fields(fsa):
    """The four fields of a WeightedFsa-like ``fsa``: by name if it has
    them (sprintrt's and i6_models' ``WeightedFsa``), else by position."""
    if all(hasattr(fsa, name) for name in _FSA_FIELDS):
        return tuple(getattr(fsa, name) for name in _FSA_FIELDS)
    try:
        fields = tuple(fsa)
    except TypeError:
        raise TypeError("fsa must be a WeightedFsa or a tuple (num_states, edges, weights, "
                        "start_end_states), got %s" % type(fsa).__name__) from None
    if len(fields) != 4:
        raise ValueError("fsa must have 4 fields (num_states, edges, weights, start_end_states), "
                         "got %d" % len(fields))
    return fields


def _first(bad):
    """The index of the first True of the 1-D bool tensor ``bad``, or None."""
    if not bool(bad.any()):
        return None
    return int(bad.nonzero()[0, 0])


def _fsa_structure(fsa, batch, device, log_probs_shape=(), batch_first=False):
    """The FSA's fields, their shapes and dtypes checked: (num_states int,
    edges [4, E], weights [E], start_end_states [2, B]), the tensors on
    ``device``; raises ValueError or TypeError naming the field."""
    num_states, edges, weights, start_end = _fsa_fields(fsa)
    num_states = _as_tensor(num_states, "fsa.num_states")
    if num_states.dim() != 0 or num_states.is_floating_point():
        raise ValueError("fsa.num_states must be one integer (0-d: the total state count), got "
                         "shape %s of %s (a WeightedFsaV2? fsa_loss takes the V1 layout)"
                         % (list(num_states.shape), num_states.dtype))
    edges = _as_tensor(edges, "fsa.edges", device)
    if edges.dim() != 2 or edges.shape[0] != 4:
        raise ValueError("fsa.edges must have shape [4, E] (from, to, emission, sequence), got %s"
                         % list(edges.shape))
    if edges.is_floating_point() or edges.dtype == torch.bool:
        raise TypeError("fsa.edges must be integers, got %s" % edges.dtype)
    weights = _as_tensor(weights, "fsa.weights", device)
    if weights.shape != (edges.shape[1],) or not weights.is_floating_point():
        raise ValueError("fsa.weights must be floats of shape [E] = [%d], got %s of %s"
                         % (edges.shape[1], list(weights.shape), weights.dtype))
    start_end = _as_tensor(start_end, "fsa.start_end_states", device)
    if start_end.dim() != 2 or start_end.shape[0] != 2:
        raise ValueError("fsa.start_end_states must have shape [2, B], got %s"
                         % list(start_end.shape))
    if start_end.shape[1] != batch:
        raise ValueError("fsa has %d sequences (fsa.start_end_states columns) for a batch of %d "
                         "(log_probs)%s" % (start_end.shape[1], batch, _batch_major_hint(
                             start_end.shape[1], log_probs_shape, "log_probs", batch_first)))
    if start_end.is_floating_point() or start_end.dtype == torch.bool:
        raise TypeError("fsa.start_end_states must be integers, got %s" % start_end.dtype)
    return int(num_states), edges, weights, start_end


def _uint32_values(tensor):
    """An integer tensor as int64, int32 read as uint32 (i6_models' layout
    stores uint32 state and emission indices in int32)."""
    wide = tensor.long()
    return wide & 0xFFFFFFFF if tensor.dtype == torch.int32 else wide


def _check_fsa_values(num_states, edges, weights, start_end, batch, classes):
    """The FSA's values checked (fsa_loss_binding.cpp checks the same, with
    the same messages, for the kernel): (edges int64 [4, E], start int64
    [B], end int64 [B]); raises ValueError naming the field."""
    edges = _uint32_values(edges)
    start, end = _uint32_values(start_end)
    b = _first((start < 0) | (end < start) | (end >= num_states))
    if b is not None:
        raise ValueError("fsa.start_end_states: sequence %d has start state %d and end state %d "
                         "(need 0 <= start <= end < num_states = %d)"
                         % (b, int(start[b]), int(end[b]), num_states))
    order = torch.argsort(start)
    b = _first(end[order[:-1]] >= start[order[1:]])
    if b is not None:
        raise ValueError("fsa.start_end_states: the states of sequences %d and %d overlap"
                         % (int(order[b]), int(order[b + 1])))
    e = _first(torch.isnan(weights) | (weights == -float("inf")))
    if e is not None:
        raise ValueError("fsa.weights[%d] is %s (a cost: finite or +inf)" % (e, float(weights[e])))
    sequence = edges[3]
    e = _first((sequence < 0) | (sequence >= batch))
    if e is not None:
        raise ValueError("fsa.edges: edge %d belongs to sequence %d, but the batch has %d "
                         "sequences" % (e, int(sequence[e]), batch))
    first, last = start[sequence], end[sequence]
    for row in (0, 1):
        e = _first((edges[row] < first) | (edges[row] > last))
        if e is not None:
            s = int(sequence[e])
            raise ValueError("fsa.edges: edge %d of sequence %d touches state %d, outside the "
                             "sequence's states [%d, %d] (fsa.start_end_states)"
                             % (e, s, int(edges[row, e]), int(start[s]), int(end[s])))
    e = _first((edges[2] < 0) | (edges[2] >= classes))
    if e is not None:
        raise ValueError("fsa.edges: edge %d emits %d, but log_probs has %d classes (D)"
                         % (e, int(edges[2, e]), classes))
    return edges, start, end


def _kernel_array(tensor):
    """An integer tensor as a numpy array for the kernel, int32 viewed as
    uint32 (what the binding reads as int64)."""
    array = tensor.detach().cpu().numpy()
    return array.view(numpy.uint32) if array.dtype == numpy.int32 else array


def lengths_numpy(lengths, batch, name, log_probs_shape=(), batch_first=False):
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
        raise ValueError("%s must be 1-D (batch), got %d-D" % (name, lengths.ndim))
    if lengths.dtype.kind not in "iu":
        raise TypeError("%s must be integers, got %s" % (name, lengths.dtype))
    if len(lengths) != batch:
        raise ValueError("%s has %d entries for a batch of %d%s" % (
            name, len(lengths), batch,
            _batch_major_hint(len(lengths), log_probs_shape, "log_probs", batch_first)))
    return lengths


def _check_lengths(seq_lens, batch, frames, log_probs_shape, batch_first):
    """``seq_lens`` as an int64 CPU tensor of ``batch`` lengths in
    [0, frames]; raises ValueError or TypeError (``log_probs_shape``, as
    given, for ``lengths_numpy``'s hint)."""
    lengths = torch.from_numpy(lengths_numpy(seq_lens, batch, "seq_lens", log_probs_shape,
                                             batch_first).astype(numpy.int64))
    b = _first((lengths < 0) | (lengths > frames))
    if b is not None:
        raise ValueError("seq_lens[%d] is %d, not in [0, %d] (log_probs' frames)"
                         % (b, int(lengths[b]), frames))
    return lengths


def _check_finite(log_probs, lengths):
    """Raises ValueError for NaN or +inf in the frames ``lengths`` cover."""
    frames = log_probs.shape[0]
    valid = torch.arange(frames, device=log_probs.device)[:, None] < lengths.to(log_probs.device)
    bad = ~(log_probs < float("inf")) & valid[:, :, None]
    if bool(bad.any()):
        t, b, k = (int(i) for i in bad.nonzero()[0])
        value = "NaN" if math.isnan(float(log_probs[t, b, k])) else "+inf"
        raise ValueError("log_probs[%d, %d, %d] (frame, sequence, class) is %s (only finite "
                         "values and -inf are valid)" % (t, b, k, value))


class _KernelFsaLoss(torch.autograd.Function):
    """The loss by sprintrt's full-sum kernel (CPU); arguments checked."""

    @staticmethod
    def forward(ctx, log_probs, lengths, fsa, num_threads):
        num_states, edges, weights, start_end = fsa
        values = log_probs.detach().to(torch.float32)
        if values.stride(2) != 1:
            values = values.contiguous()
        loss, occupancy = _sprintrt.fsa_loss_cpu(
            values.numpy(), lengths.numpy(), _kernel_array(edges),
            weights.detach().cpu().to(torch.float32).numpy(), _kernel_array(start_end),
            num_states, num_threads)
        ctx.save_for_backward(torch.from_numpy(occupancy))
        ctx.dtype = log_probs.dtype
        return torch.from_numpy(loss).to(log_probs.dtype)

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad_loss):
        (occupancy,) = ctx.saved_tensors
        grad = occupancy * -grad_loss.to(torch.float32)[None, :, None]
        return grad.to(ctx.dtype), None, None, None


def _log_sum_scatter(values, index, size):
    """out[s] = log sum of exp(values[i]) over the i with index[i] == s
    (-inf where there are none or all are -inf)."""
    neg_inf = torch.full((size,), -float("inf"), dtype=values.dtype, device=values.device)
    peak = neg_inf.scatter_reduce(0, index, values, "amax", include_self=True)
    peak = peak.masked_fill(peak == -float("inf"), 0)
    total = torch.zeros_like(peak).scatter_add_(0, index, torch.exp(values - peak[index]))
    return peak + torch.log(total)


class _TorchFsaLoss(torch.autograd.Function):
    """The loss by a forward-backward in torch operations; arguments checked.

    With alpha_t(s) the log-sum over paths of t edges from the start states
    to s and s_e(t) = log_probs[t, seq(e), emission(e)] - weight(e) (-inf from
    frame seq_lens[seq(e)] on), alpha_{t+1}(s) = logsumexp over the edges e
    into s of alpha_t(from(e)) + s_e(t), and log Z_b = alpha_{seq_lens[b]}
    (end_b). Backward: beta_t(s) = logsumexp over the edges out of s of
    s_e(t) + beta_{t+1}(to(e)), started with 0 at end_b at frame seq_lens[b];
    the occupancy of edge e at frame t is exp(alpha_t(from(e)) + s_e(t) +
    beta_{t+1}(to(e)) - log Z_seq(e))."""

    @staticmethod
    def forward(ctx, log_probs, lengths, num_states, edges, weights, start, end):
        frames, batch, classes = log_probs.shape
        dtype = torch.float64 if log_probs.dtype == torch.float64 else torch.float32
        device = log_probs.device
        steps = int(lengths.max()) if batch else 0
        lengths = lengths.to(device)
        source, target, sequence = edges[0], edges[1], edges[3]
        column = sequence * classes + edges[2]
        values = log_probs.detach()[:steps].to(dtype).reshape(steps, batch * classes)
        scores = values[:, column] - weights.to(dtype)
        live = torch.arange(steps, device=device)[:, None] < lengths[sequence][None, :]
        scores = scores.masked_fill(~live, -float("inf"))
        alpha = torch.full((steps + 1, num_states), -float("inf"), dtype=dtype, device=device)
        alpha[0, start] = 0
        for t in range(steps):
            alpha[t + 1] = _log_sum_scatter(alpha[t, source] + scores[t], target, num_states)
        log_total = alpha[lengths, end]
        ctx.save_for_backward(alpha, scores, log_total, lengths, edges, column, end)
        ctx.shape = (frames, batch, classes, num_states)
        ctx.dtype = log_probs.dtype
        return (-log_total).to(log_probs.dtype)

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad_loss):
        alpha, scores, log_total, lengths, edges, column, end = ctx.saved_tensors
        frames, batch, classes, num_states = ctx.shape
        steps = scores.shape[0]
        source, target, sequence = edges[0], edges[1], edges[3]
        # exp(x - inf) = 0: no occupancy for a sequence without a path.
        log_total = log_total.masked_fill(log_total == -float("inf"), float("inf"))
        # The frame each sequence's end state starts the backward pass at.
        end_frame = torch.full((num_states,), -1, dtype=torch.long, device=alpha.device)
        end_frame.scatter_(0, end, lengths)
        beta = torch.zeros(num_states, dtype=alpha.dtype, device=alpha.device)
        beta = beta.masked_fill(end_frame != steps, -float("inf"))
        gamma = torch.zeros(steps, batch * classes, dtype=alpha.dtype, device=alpha.device)
        for t in reversed(range(steps)):
            through = scores[t] + beta[target]
            gamma[t].scatter_add_(0, column, torch.exp(alpha[t, source] + through
                                                       - log_total[sequence]))
            beta = _log_sum_scatter(through, source, num_states)
            beta = beta.masked_fill(end_frame == t, 0)
        grad = torch.zeros(frames, batch, classes, dtype=ctx.dtype, device=alpha.device)
        weight = -grad_loss.to(alpha.dtype)[None, :, None]
        grad[:steps] = (gamma.view(steps, batch, classes) * weight).to(ctx.dtype)
        return grad, None, None, None, None, None, None


def fsa_loss(log_probs, seq_lens, fsa, *, batch_first=False, implementation="auto",
             num_threads=None):
    """The full-sum loss [B] of each sequence (see the module's docstring),
    of ``log_probs``' dtype, on its device; ``inf`` for a sequence without a
    path of nonzero probability.

    ``log_probs``: float tensor (T, B, D), or (B, T, D) with
    ``batch_first=True``, of log-probabilities (any scores: they need not be
    normalized); only the first ``seq_lens[b]`` frames of sequence b are
    read. ``seq_lens``: B lengths in [0, T] (a tensor on any device, a numpy
    array or a list). ``fsa``: a WeightedFsa (sprintrt's, i6_models' or any
    4-tuple ``(num_states, edges [4, E], weights [E], start_end_states
    [2, B])``; int32 edges are read as uint32 values). ``implementation``:
    ``"auto"``, ``"kernel"`` (CPU only) or ``"torch"`` (see the module's
    docstring). ``num_threads``: the kernel's threads (default
    ``torch.get_num_threads()``).

    The gradient with respect to ``log_probs`` is ``-occupancy *
    grad_loss`` (zero in the padding frames). Bad arguments raise
    ``ValueError`` or ``TypeError`` naming the argument and what is wrong."""
    if not isinstance(log_probs, torch.Tensor):
        raise TypeError("log_probs must be a torch.Tensor, got %s" % type(log_probs).__name__)
    if log_probs.dim() != 3:
        raise ValueError("log_probs must be 3-D (%s), got %d-D"
                         % ("batch, time, dim" if batch_first else "time, batch, dim",
                            log_probs.dim()))
    if not log_probs.is_floating_point():
        raise TypeError("log_probs must be a floating-point tensor, got %s" % log_probs.dtype)
    if implementation not in _IMPLEMENTATIONS:
        raise ValueError("implementation must be one of %s, got %r"
                         % (", ".join(_IMPLEMENTATIONS), implementation))
    on_cpu = log_probs.device.type == "cpu"
    if implementation == "kernel" and not on_cpu:
        raise ValueError("implementation='kernel' runs on the CPU, but log_probs is on %s"
                         % log_probs.device)
    if implementation == "auto":
        implementation = "kernel" if on_cpu and log_probs.dtype != torch.float64 else "torch"
    time_major = log_probs.transpose(0, 1) if batch_first else log_probs
    frames, batch, classes = time_major.shape
    shape = tuple(log_probs.shape)
    lengths = _check_lengths(seq_lens, batch, frames, shape, batch_first)
    if implementation == "kernel":
        if num_threads is None:
            num_threads = torch.get_num_threads()
        if not isinstance(num_threads, int) or num_threads < 1:
            raise ValueError("num_threads must be a positive int, got %r" % (num_threads,))
        # The binding checks the FSA's values and log_probs' (no torch
        # operations, which are slow here when their threads compete with the
        # kernel's).
        structure = _fsa_structure(fsa, batch, None, shape, batch_first)
        loss = _KernelFsaLoss.apply(time_major, lengths, structure, num_threads)
    else:
        num_states, edges, weights, start_end = _fsa_structure(fsa, batch, log_probs.device,
                                                               shape, batch_first)
        edges, start, end = _check_fsa_values(num_states, edges, weights, start_end, batch,
                                              classes)
        _check_finite(time_major.detach(), lengths)
        loss = _TorchFsaLoss.apply(time_major, lengths, num_states, edges, weights, start, end)
    _count_and_warn(loss)
    return loss
