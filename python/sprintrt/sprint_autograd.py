"""Sprint losses as autograd functions: ``sprint_loss`` (``SprintLoss``) and
what it shares with the overlapped loss (overlapped.py): ``PartialLoss`` and
the check that the rows are log-probabilities. ``sprintrt.torch``'s
docstring gives the gradient's convention."""

from __future__ import annotations

from typing import Any, Literal, NamedTuple, Optional, Union, overload

import numpy
import torch

from . import Error, SprintInstancePool
from .fsa_loss import lengths_numpy

__all__ = ["PartialLoss", "SprintLoss", "require_log_probs", "sprint_loss"]


# How far a checked frame's logsumexp may lie from 0 (log_probs' dtype ->
# tolerance): float32's rounding of a log_softmax row moves it by about 1e-6
# D, half precision's by a few 1e-3.
_LOG_PROB_TOLERANCE = {torch.float16: 5e-2, torch.bfloat16: 5e-2}
_DEFAULT_LOG_PROB_TOLERANCE = 1e-3
# Each sequence's frames that are checked, at these fractions of its length.
_CHECKED_AT = (0.0, 1 / 3, 2 / 3, 1.0)


def require_log_probs(log_posteriors: numpy.ndarray, lengths: numpy.ndarray,
                      dtype: torch.dtype) -> None:
    """Raises ``ValueError`` unless the host copy ``log_posteriors`` [T, B,
    D] holds log-probabilities: in each sequence's first, last and two
    middle frames, logsumexp over D is 0 within the dtype's tolerance. Raw
    logits fail this at any frame (their logsumexp is 0 only by chance), so
    a few frames tell at O(B D) cost."""
    batch = numpy.arange(len(lengths))
    # Lengths beyond T are the pool's to refuse, naming them.
    lengths = numpy.minimum(lengths, log_posteriors.shape[0])
    last = numpy.maximum(lengths - 1, 0)
    frames = numpy.rint(numpy.outer(last, _CHECKED_AT)).astype(numpy.int64)
    nonempty = lengths > 0
    frames, batch = frames[nonempty], numpy.repeat(batch[nonempty, None], len(_CHECKED_AT), 1)
    rows = log_posteriors[frames.ravel(), batch.ravel()].astype(numpy.float64)
    if not len(rows):
        return
    with numpy.errstate(invalid="ignore", over="ignore"):
        top = rows.max(-1)
        total = top + numpy.log(numpy.exp(rows - top[:, None]).sum(-1))
    tolerance = _LOG_PROB_TOLERANCE.get(dtype, _DEFAULT_LOG_PROB_TOLERANCE)
    bad = ~(numpy.abs(total) <= tolerance)
    if bad.any():
        i = int(numpy.argmax(bad))
        t, b = int(frames.ravel()[i]), int(batch.ravel()[i])
        raise ValueError(
            f"log_probs must be log-probabilities (the output of log_softmax over the last axis):"
            f" frame {t} of sequence {b} has logsumexp {total[i]:.6g}, not 0 within {tolerance}"
            " (raw logits give wrong gradients: apply log_softmax first, or pass "
            "check_log_probs=False to send other scores on purpose)")


class PartialLoss(NamedTuple):
    """``sprint_loss(..., partial=True)``: ``loss`` [B] as without
    ``partial`` for the segments that succeeded and NaN for those that
    failed, whose gradient is zero whatever the loss is multiplied by;
    ``ok`` bool [B] on the same device, which succeeded; ``errors``, per
    segment None or the ``sprintrt.Error`` (``code``, ``index``, ``tag``)
    of its failure. ``loss[ok].sum()`` or ``loss.nansum()`` trains on the
    rest; a plain ``loss.sum()`` is NaN, so that a forgotten mask is seen."""

    loss: torch.Tensor
    ok: torch.Tensor
    errors: list[Optional[Error]]


class SprintLoss(torch.autograd.Function):
    """The per-sequence Sprint loss of a time-major batch of log-posteriors;
    its gradient is Sprint's error signal (see the module's docstring).
    Called through ``sprint_loss``, which checks the arguments."""

    @staticmethod
    def forward(ctx: Any, log_probs: torch.Tensor, seq_lengths: Any, tags: Any,
                pool: SprintInstancePool, outcome: Optional[list[Any]],
                checked: bool) -> torch.Tensor:
        """``outcome``: None for all or nothing; a list for a partial batch,
        to which the ``PartialBatch``'s ``ok`` and ``errors`` are appended.
        ``checked``: whether to check that the rows are log-probabilities
        (``require_log_probs``)."""
        # CPU float32 contiguous input is handed to the pool as is (no copy).
        log_posteriors = log_probs.detach().to("cpu", torch.float32).contiguous().numpy()
        if checked:
            require_log_probs(log_posteriors, seq_lengths, log_probs.dtype)
        with pool.lock:
            if outcome is None:
                loss, error_signal = pool.get_batch_loss_and_error_signal(
                    log_posteriors, seq_lengths, tags)
                ok = None
            else:
                loss, error_signal, ok, errors = pool.get_batch_loss_and_error_signal(
                    log_posteriors, seq_lengths, tags, partial=True)
                outcome += [ok, errors]
        like_input: dict[str, Any] = {"device": log_probs.device, "dtype": log_probs.dtype}
        ctx.save_for_backward(torch.from_numpy(error_signal).to(**like_input))
        ctx.ok = None if ok is None else torch.from_numpy(ok).to(log_probs.device)
        return torch.from_numpy(loss).to(**like_input)

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx: Any,
                 grad_loss: torch.Tensor) -> tuple[torch.Tensor, None, None, None, None, None]:
        (error_signal,) = ctx.saved_tensors
        if ctx.ok is not None:
            # A failed segment's gradient is zero even where its NaN loss
            # made its incoming gradient NaN (0 * NaN would be NaN).
            grad_loss = torch.where(ctx.ok, grad_loss, torch.zeros_like(grad_loss))
        return error_signal * grad_loss[None, :, None], None, None, None, None, None


@overload
def sprint_loss(log_probs: torch.Tensor, seq_lengths: Any, tags: Any, pool: SprintInstancePool,
                partial: Literal[False] = False, *,
                check_log_probs: bool = True) -> torch.Tensor: ...


@overload
def sprint_loss(log_probs: torch.Tensor, seq_lengths: Any, tags: Any, pool: SprintInstancePool,
                *, partial: Literal[True], check_log_probs: bool = True) -> PartialLoss: ...


def sprint_loss(log_probs: torch.Tensor, seq_lengths: Any, tags: Any, pool: SprintInstancePool,
                partial: bool = False, *,
                check_log_probs: bool = True) -> Union[torch.Tensor, PartialLoss]:
    """The Sprint loss [B] of each sequence of a batch, on ``log_probs``'
    device and of its dtype (inf for a segment Sprint skipped).

    ``log_probs``: float tensor [T, B, D] (time-major) of log-posteriors, the
    output of a log_softmax over D, on any device; only the first
    ``seq_lengths[b]`` frames of sequence b are read. ``seq_lengths``: B
    lengths (a tensor, a numpy array or a list of ints). ``tags``: the B
    segment names, as ``SprintInstancePool.get_batch_loss_and_error_signal``
    takes them. ``pool``: the ``sprintrt.SprintInstancePool`` that computes
    the batch (holding its ``lock`` meanwhile, as RETURNN does).

    The gradient with respect to ``log_probs`` is Sprint's error signal times
    the loss's gradient (zero in the padding frames): RETURNN's
    ``generic_loss_and_error_signal``, the loss's gradient with respect to the
    activations z of ``log_probs = log_softmax(z)`` once log_softmax's backward
    has run (see the module's docstring). Bad arguments raise ``TypeError`` or
    ``ValueError`` naming the argument; the pool's errors raise
    ``sprintrt.Error``: by default (RETURNN's semantics) one failed segment
    fails the batch, with the code of the failed segment first in batch
    order. With ``partial=True`` the result is a ``PartialLoss``: the losses
    of the segments that succeeded, NaN (and a zero gradient) for those that
    failed, a mask ``ok`` and an error per failed segment; it raises only
    for a batch refused as a whole.

    Sprint's error signal is a gradient only for log-probabilities, so the
    host copy of each sequence's first, last and two middle frames is
    checked: each row's logsumexp must be 0 within 1e-3 (5e-2 for float16
    and bfloat16 input), else ``ValueError`` names the frame and says to
    apply log_softmax. ``check_log_probs=False`` turns the check off, for
    other scores sent on purpose."""
    if not isinstance(log_probs, torch.Tensor):
        raise TypeError(f"log_probs must be a torch.Tensor, got {type(log_probs).__name__}")
    if log_probs.dim() != 3:
        raise ValueError(f"log_probs must be 3-D (time, batch, dim), got {log_probs.dim()}-D")
    if not log_probs.is_floating_point():
        raise TypeError(f"log_probs must be a floating-point tensor, got {log_probs.dtype}")
    if not isinstance(pool, SprintInstancePool):
        raise TypeError(f"pool must be a sprintrt.SprintInstancePool, got {type(pool).__name__}")
    if not isinstance(partial, bool):
        raise TypeError(f"partial must be a bool, got {type(partial).__name__}")
    if not isinstance(check_log_probs, bool):
        raise TypeError(f"check_log_probs must be a bool, got {type(check_log_probs).__name__}")
    lengths = lengths_numpy(seq_lengths, log_probs.shape[1], "seq_lengths",
                            tuple(log_probs.shape))
    if not partial:
        return SprintLoss.apply(log_probs, lengths, tags, pool, None, check_log_probs)
    outcome: list[Any] = []
    loss = SprintLoss.apply(log_probs, lengths, tags, pool, outcome, check_log_probs)
    ok, errors = outcome
    return PartialLoss(loss, torch.from_numpy(ok).to(log_probs.device), errors)
