"""``SeqTrainScheduler``: the sequence-training scheduler over a
``SprintInstancePool``, with the operations of the C++ facade
``seqtrain_client``."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy

from ._arguments import _batch_with_tags
from ._pool import SprintInstancePool
from ._sprintrt import Scheduler, SeqTrainBatch


class SeqTrainScheduler:
    """The sequence-training scheduler over ``pool`` (a ``SprintInstancePool``):
    it computes the loss of forwarded sequences while the trainer trains on
    earlier ones, with at most ``forward_seq_delay`` sequences forwarded and
    not yet trained on. The operations are those of the C++ facade
    ``seqtrain_client`` (see ``include/sprintrt/seqtrain_client.hpp`` for the
    loop a trainer runs and every error). ``max_in_flight`` 0 means one
    sequence per worker; ``record_timeline`` keeps each computation's interval
    in the statistics. Calls block (the GIL released) and must come from one
    training loop at a time."""

    def __init__(self, pool: SprintInstancePool, forward_seq_delay: int = 5,
                 max_in_flight: int = 0, record_timeline: bool = False) -> None:
        if not isinstance(pool, SprintInstancePool):
            raise TypeError(f"pool must be a SprintInstancePool, got {type(pool).__name__}")
        self.pool = pool
        self._scheduler = Scheduler(pool._pool, forward_seq_delay, max_in_flight,
                                    record_timeline)

    def start_epoch(self, epoch: int) -> None:
        """Starts epoch ``epoch`` with empty queues."""
        self._scheduler.start_epoch(epoch)

    def finish_epoch(self) -> dict[str, Any]:
        """Ends the epoch; returns its statistics (a dict, as ``stats``)."""
        return self._scheduler.finish_epoch()

    def have_space(self, num_seqs: int) -> bool:
        """Whether ``num_seqs`` more sequences may be forwarded now."""
        return self._scheduler.have_space(num_seqs)

    def forward(self, seq_indices: Any, log_posteriors: Any, seq_lengths: Any,
                tags: Any) -> None:
        """Queues forwarded sequences: ``log_posteriors`` float32 [T, B, D]
        (copied: the array may be reused afterwards), ``seq_lengths`` [B],
        ``tags`` [B] and ``seq_indices`` [B], strictly increasing over the
        epoch."""
        log_posteriors, seq_lengths, tags = _batch_with_tags(log_posteriors, seq_lengths, tags)
        self._scheduler.forward(numpy.asarray(seq_indices), log_posteriors, seq_lengths, tags)

    def train(self, batches: Iterable[SeqTrainBatch]) -> tuple[numpy.ndarray, numpy.ndarray]:
        """Declares the current training batches (``SeqTrainBatch``es); waits
        for their loss data and returns (loss float32 [n_batch], hat_y float32
        [n_time, n_batch, D]), the batches side by side. The trainer's error
        signal is then ``seqtrain_error_signal(log_posteriors, hat_y,
        seq_lengths)``."""
        return self._scheduler.train(list(batches))

    def stats(self) -> dict[str, Any]:
        """The scheduler's counters and queue depths now (a dict)."""
        return self._scheduler.stats()
