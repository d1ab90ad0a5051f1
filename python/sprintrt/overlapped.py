"""The seed's overlapping pipeline for PyTorch: Sprint computes the losses
of batches forwarded ahead while the trainer trains on earlier ones.

RETURNN's SeqTrainParallelControl forwards sequences ahead without
gradients, lets the Sprint children compute their losses meanwhile, and
trains on them later, at most ``forward_seq_delay`` sequences behind. The
error signal Sprint computed belongs to the activations it saw; the trainer
applies it to its current ones as the seed does: the gradient with respect
to the pre-softmax activations is exp(log_probs_now) - hat_y, where hat_y =
exp(log_probs_forwarded) - error_signal is the target distribution Sprint's
error signal implies. This module keeps the error signal and the forwarded
log-probabilities and computes that gradient as

    error_signal + (exp(log_probs_now) - exp(log_probs_forwarded))

in the padding-free frames: the same value, and exactly Sprint's error
signal (sprint_loss's gradient, bit for bit) wherever the activations have
not changed since they were forwarded.

``OverlappedSprintLoss`` is the pair ``submit`` / ``loss``; ``overlapped``
wraps it around a DataLoader: the trainer's loop stays a loop over its data.
The pool computes one submitted batch at a time, in submission order, on a
thread of this module (holding the pool's lock per batch, as
``sprint_loss`` does), with all of its workers.
"""

from __future__ import annotations

import collections
import concurrent.futures
import functools
import threading
import time
import weakref
from collections.abc import Iterable
from typing import Any, Callable, Optional, Union

import numpy
import torch

from . import SprintInstancePool
from .fsa_loss import lengths_numpy
from .sprint_autograd import PartialLoss, require_log_probs

__all__ = ["OverlappedBatches", "OverlappedSprintLoss", "Pending", "overlapped"]


class Pending:
    """A submitted batch: its forwarded log-probabilities (detached, on
    their device), lengths, tags and the pool's result to come."""

    def __init__(self, log_probs: torch.Tensor, lengths: numpy.ndarray, tags: Any,
                 result: concurrent.futures.Future) -> None:
        self.log_probs = log_probs
        self.lengths = lengths
        self.tags = tags
        self.result = result
        self.used = False

    @property
    def batch_size(self) -> int:
        """The number of sequences B."""
        return len(self.lengths)


class _DelayedSprintLoss(torch.autograd.Function):
    """The loss [B] of a submitted batch, its gradient with respect to the
    current ``log_probs`` that of the module's docstring."""

    @staticmethod
    def forward(ctx: Any, log_probs: torch.Tensor, forwarded: torch.Tensor,
                error_signal: torch.Tensor, loss: torch.Tensor, valid: torch.Tensor,
                ok: Optional[torch.Tensor]) -> torch.Tensor:
        ctx.save_for_backward(log_probs.detach(), forwarded, error_signal, valid)
        ctx.ok = ok
        # A new tensor, not the input: the caller may change it in place.
        return loss.clone()

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx: Any, grad_loss: torch.Tensor) -> tuple[Any, ...]:
        log_probs, forwarded, error_signal, valid = ctx.saved_tensors
        # Selected, not multiplied by 0: padding may hold NaN or inf.
        drift = torch.where(valid, log_probs.exp() - forwarded.exp(), log_probs.new_zeros(()))
        gradient = error_signal + drift
        if ctx.ok is not None:
            grad_loss = torch.where(ctx.ok, grad_loss, torch.zeros_like(grad_loss))
        return gradient * grad_loss[None, :, None], None, None, None, None, None


class OverlappedSprintLoss:
    """Sprint losses computed in the background while the trainer trains:
    ``submit`` a batch's forwarded log-probabilities (computed without
    gradients), train on earlier batches, then ask for its ``loss`` with the
    current log-probabilities of the same batch.

    ``pool``: the ``SprintInstancePool`` that computes the batches.
    ``forward_seq_delay``: how many sequences may be submitted and not yet
    trained on (``have_space``; RETURNN's option of that name); the first
    batch is always accepted. ``partial`` and ``check_log_probs``: as
    ``sprint_loss`` takes them, for every batch. Use it as a context
    manager, or ``close`` it: closing waits for the batch the pool is
    computing and drops those not started."""

    def __init__(self, pool: SprintInstancePool, *, forward_seq_delay: int = 32,
                 partial: bool = False, check_log_probs: bool = True) -> None:
        if not isinstance(pool, SprintInstancePool):
            raise TypeError(f"pool must be a sprintrt.SprintInstancePool, got "
                            f"{type(pool).__name__}")
        if isinstance(forward_seq_delay, bool) or not isinstance(forward_seq_delay, int) \
                or forward_seq_delay < 0:
            raise ValueError(f"forward_seq_delay must be an int >= 0, got {forward_seq_delay!r}")
        for name, value in (("partial", partial), ("check_log_probs", check_log_probs)):
            if not isinstance(value, bool):
                raise TypeError(f"{name} must be a bool, got {type(value).__name__}")
        self.pool = pool
        self.forward_seq_delay = forward_seq_delay
        self.partial = partial
        self.check_log_probs = check_log_probs
        self._executor = concurrent.futures.ThreadPoolExecutor(
            max_workers=1, thread_name_prefix="sprintrt-overlapped")
        # Dropped without ``close`` (a loop left without a ``with``): the
        # batches not started are dropped, nothing waits for them at exit.
        self._finalizer = weakref.finalize(self, self._executor.shutdown, wait=False,
                                           cancel_futures=True)
        self._lock = threading.Lock()
        self._in_flight: collections.OrderedDict[int, Pending] = collections.OrderedDict()
        self._started: Optional[float] = None
        self._waited = 0.0
        self._batches = 0
        self._sequences = 0

    def __enter__(self) -> OverlappedSprintLoss:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        """Waits for the batch the pool is computing, drops the rest."""
        self._finalizer.detach()
        self._executor.shutdown(wait=True, cancel_futures=True)

    def in_flight(self) -> int:
        """Sequences submitted and not yet trained on (their ``loss`` not
        yet asked for)."""
        with self._lock:
            return sum(p.batch_size for p in self._in_flight.values())

    def have_space(self, num_seqs: int) -> bool:
        """Whether a batch of ``num_seqs`` sequences may be submitted now:
        nothing is in flight, or it stays within ``forward_seq_delay``."""
        in_flight = self.in_flight()
        return in_flight == 0 or in_flight + num_seqs <= self.forward_seq_delay

    def submit(self, log_probs: torch.Tensor, seq_lengths: Any, tags: Any) -> Pending:
        """Hands a batch to the pool: ``log_probs`` [T, B, D] (detached: the
        forward without gradients), ``seq_lengths`` and ``tags`` as
        ``sprint_loss`` takes them. Returns at once; the pool computes the
        batch after those submitted before it."""
        if not isinstance(log_probs, torch.Tensor) or log_probs.dim() != 3 \
                or not log_probs.is_floating_point():
            raise ValueError("log_probs must be a 3-D (time, batch, dim) floating-point tensor")
        forwarded = log_probs.detach()
        lengths = lengths_numpy(seq_lengths, forwarded.shape[1], "seq_lengths",
                                tuple(forwarded.shape))
        host_tensor = forwarded.to("cpu", torch.float32).contiguous()
        if host_tensor.data_ptr() == forwarded.data_ptr():
            # The pool reads it later, on another thread: the caller's own
            # buffer could change meanwhile.
            host_tensor = host_tensor.clone()
        host = host_tensor.numpy()
        if hasattr(tags, "__len__") and len(tags) != forwarded.shape[1]:
            raise ValueError(f"tags has {len(tags)} names for a batch of {forwarded.shape[1]}")
        if self.check_log_probs:
            require_log_probs(host, lengths, forwarded.dtype)

        # Not a closure over self: the executor's queue must not keep this
        # object alive (its finalizer drops what was not started).
        pool, partial = self.pool, self.partial

        def compute() -> Any:
            with pool.lock:
                if partial:
                    return pool.get_batch_loss_and_error_signal(host, lengths, tags, partial=True)
                return pool.get_batch_loss_and_error_signal(host, lengths, tags)

        with self._lock:
            if self._started is None:
                self._started = time.perf_counter()
            pending = Pending(forwarded, lengths, tags, self._executor.submit(compute))
            self._in_flight[id(pending)] = pending
        return pending

    def loss(self, pending: Pending, log_probs: torch.Tensor) -> Any:
        """The batch's Sprint loss [B] (a ``PartialLoss`` with ``partial``)
        on ``log_probs``' device and of its dtype, its gradient with respect
        to ``log_probs`` [T, B, D] (the same batch, now, with gradients) the
        module's docstring's. Waits for the pool's result (counted in
        ``stats``); raises the pool's ``sprintrt.Error`` for a failed batch.
        Each pending batch's loss is asked for once."""
        if pending.used:
            raise ValueError("this batch's loss was asked for already (each once)")
        if log_probs.shape != pending.log_probs.shape:
            raise ValueError(f"log_probs has shape {list(log_probs.shape)}, but the batch was "
                             f"submitted with {list(pending.log_probs.shape)}")
        pending.used = True
        waiting = time.perf_counter()
        try:
            result = pending.result.result()
        finally:
            with self._lock:
                self._waited += time.perf_counter() - waiting
            self.trained(pending)
        self._batches += 1
        self._sequences += pending.batch_size
        like = {"device": log_probs.device, "dtype": log_probs.dtype}
        loss = torch.from_numpy(result[0]).to(**like)
        error_signal = torch.from_numpy(result[1]).to(**like)
        forwarded = pending.log_probs.to(**like)
        frames = torch.arange(log_probs.shape[0], device=log_probs.device)
        lengths = torch.from_numpy(pending.lengths).to(log_probs.device)
        valid = (frames[:, None] < lengths)
        # A sequence Sprint skipped (loss inf) or that failed keeps a zero
        # gradient, as in sprint_loss: no drift either.
        valid = (valid & torch.isfinite(loss)[None, :])[..., None]
        ok = None
        if self.partial:
            ok = torch.from_numpy(result[2]).to(log_probs.device)
        value = _DelayedSprintLoss.apply(log_probs, forwarded, error_signal, loss, valid, ok)
        if not self.partial:
            return value
        return PartialLoss(value, ok, result[3])

    def trained(self, pending: Pending) -> None:
        """Counts ``pending`` as trained on (``loss`` does): it leaves the
        sequences in flight. For a batch whose loss the trainer skips."""
        with self._lock:
            self._in_flight.pop(id(pending), None)

    def stats(self) -> dict[str, Union[int, float]]:
        """``batches`` and ``sequences`` trained on, ``wait_seconds`` (the
        trainer's time in ``loss`` waiting for the pool), ``seconds`` since
        the first submit, and ``wait_fraction``, their ratio."""
        with self._lock:
            seconds = 0.0 if self._started is None else time.perf_counter() - self._started
            return {"batches": self._batches, "sequences": self._sequences,
                    "wait_seconds": self._waited, "seconds": seconds,
                    "wait_fraction": self._waited / seconds if seconds else 0.0}


class OverlappedBatches:
    """What ``overlapped`` returns: an iterator of (batch, loss function),
    with the pipeline's ``stats`` and ``in_flight`` as
    ``OverlappedSprintLoss`` has them; ``close`` (or leaving a ``with``
    block) ends it early."""

    def __init__(self, batches: Iterable[Any], losses: OverlappedSprintLoss,
                 forward: Callable[[Any], tuple[torch.Tensor, Any, Any]]) -> None:
        self.losses = losses
        self._forward = forward
        self._batches = batches
        self._source = iter(batches)
        self._queue: collections.deque[tuple[Any, Pending]] = collections.deque()
        # A batch taken from the source and not yet submitted, and its
        # forward's output once made; the size of the last batch forwarded.
        self._waiting: list[Any] = []
        self._forwarded: Optional[tuple[torch.Tensor, Any, Any]] = None
        self._last_size = 1
        self._exhausted = False
        self._current: Optional[Pending] = None
        self._started = False

    def __iter__(self) -> OverlappedBatches:
        return self

    def __len__(self) -> int:
        """The number of batches, where the source has one (a DataLoader)."""
        return len(self._batches)  # type: ignore[arg-type]

    def __next__(self) -> tuple[Any, Callable[[torch.Tensor], Any]]:
        if self._current is not None:
            self.losses.trained(self._current)
            self._current = None
        try:
            self._fill()
        except BaseException:
            self.close()
            raise
        if not self._queue:
            self.close()
            raise StopIteration
        batch, pending = self._queue.popleft()
        self._current = pending
        return batch, functools.partial(self.losses.loss, pending)

    def __enter__(self) -> OverlappedBatches:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        """Ends the pipeline: waits for the batch the pool is computing,
        drops the rest."""
        self._exhausted = True
        self._queue.clear()
        self.losses.close()

    def in_flight(self) -> int:
        """Sequences handed to the pool and not yet trained on."""
        return self.losses.in_flight()

    def stats(self) -> dict[str, Union[int, float]]:
        """``OverlappedSprintLoss.stats``."""
        return self.losses.stats()

    def _fill(self) -> None:
        """Forwards and submits batches while the delay allows (at least
        one). A batch is forwarded when one the size of the last would fit;
        if it is larger and does not, it waits with its forward until it
        does (never forwarded twice)."""
        losses = self.losses
        while not self._exhausted:
            if not self._waiting:
                try:
                    self._waiting.append(next(self._source))
                except StopIteration:
                    self._exhausted = True
                    return
                self._forwarded = None
            if self._forwarded is None:
                if self._queue and not losses.have_space(self._last_size):
                    return
                with torch.no_grad():
                    self._forwarded = self._forward(self._waiting[0])
                self._last_size = self._forwarded[0].shape[1]
            log_probs, seq_lengths, tags = self._forwarded
            if self._queue and not losses.have_space(log_probs.shape[1]):
                return
            self._queue.append((self._waiting.pop(), losses.submit(log_probs, seq_lengths, tags)))
            self._forwarded = None


def overlapped(batches: Iterable[Any], pool: SprintInstancePool,
               forward: Callable[[Any], tuple[torch.Tensor, Any, Any]], *,
               forward_seq_delay: int = 32, partial: bool = False,
               check_log_probs: bool = True) -> OverlappedBatches:
    """Yields each of ``batches`` (a DataLoader, any iterable) with its loss
    function, having forwarded batches ahead: ``forward(batch)`` returns
    (log_probs [T, B, D], seq_lengths, tags) and runs under
    ``torch.no_grad()`` for the batches handed to the pool ahead of
    training, as many as ``forward_seq_delay`` sequences allow (at least the
    current one); each batch is forwarded once without gradients. The loss
    function takes the batch's log-probabilities now (with gradients) and
    returns ``OverlappedSprintLoss.loss``'s; a failed batch raises there. A
    batch counts as trained once the next one is asked for. Every batch is
    yielded, in order; ending the loop early (``close``, or leaving a
    ``with`` block around it) waits for the batch the pool is computing and
    drops the rest, and so does an exception from ``forward``; an iterator
    dropped without either drops the batches not started.
    ``partial`` and ``check_log_probs``: as ``sprint_loss`` takes them."""
    return OverlappedBatches(batches, OverlappedSprintLoss(
        pool, forward_seq_delay=forward_seq_delay, partial=partial,
        check_log_probs=check_log_probs), forward)
