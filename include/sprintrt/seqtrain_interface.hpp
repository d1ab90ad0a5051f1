#pragma once

/// @file
/// The typed message interface of the sequence-training scheduler (the
/// original's `SeqTrainParallelControlDevHost`): it overlaps the Sprint
/// computation for upcoming sequences with training on the current ones,
/// under a bounded, deterministic forward delay.
///
/// The pipeline, per epoch:
/// 1. forward: the trainer runs its model ahead of training and pushes each
///    sequence's log-posteriors while `have_space(n)` says yes.
/// 2. calc loss: whenever a worker is free, the oldest forwarded sequence is
///    sent to the pool; its reply gives the loss and hat_y = exp(log
///    posteriors) - error signal (the occupancy). Results enter the loss data
///    strictly in sequence order, whatever order the workers finish in.
/// 3. train: the trainer declares the batches it trains on now and gets loss
///    and hat_y laid out for them, as soon as every sequence of those batches
///    has its loss data. Its own error signal is then exp(log posteriors) -
///    hat_y (`seqtrain_error_signal`).

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/atom.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include "sprintrt/batch.hpp"
#include "sprintrt/tensor.hpp"
#include "sprintrt/worker_interface.hpp"

namespace sprintrt {

/// Start an epoch.
using epoch_start_atom = caf::atom_constant<caf::atom("ep_start")>;
/// Finish an epoch.
using epoch_finish_atom = caf::atom_constant<caf::atom("ep_finish")>;
/// Ask whether more sequences may be forwarded.
using have_space_atom = caf::atom_constant<caf::atom("have_space")>;
/// Push forwarded sequences.
using forward_atom = caf::atom_constant<caf::atom("forward")>;
/// Ask for the loss and hat_y of the current batches.
using train_atom = caf::atom_constant<caf::atom("train")>;

/// What a `(cancel, request_id)` to the scheduler did.
enum class cancel_outcome : uint8_t {
  /// The sender's train request of that id was waiting: it is answered with
  /// `cancelled` now.
  cancelled,
  /// That train request was answered already (with its result or an error):
  /// the cancel came too late and changed nothing.
  already_answered,
  /// The scheduler knows no train request of that id from the sender: none
  /// was made, or it is older than the last 16 train requests answered.
  unknown,
};

/// "cancelled", "already_answered" or "unknown".
inline std::string to_string(cancel_outcome x) {
  switch (x) {
  case cancel_outcome::cancelled:
    return "cancelled";
  case cancel_outcome::already_answered:
    return "already_answered";
  case cancel_outcome::unknown:
    return "unknown";
  }
  return "cancel_outcome(" + std::to_string(static_cast<int>(x)) + ")";
}

/// Settings of one scheduler.
struct seqtrain_options {
  /// The admission bound: `have_space(n)` is exactly
  /// `forward_queue + in_flight + loss_data + n < forward_seq_delay`.
  size_t forward_seq_delay = 5;
  /// At most this many sequences are computed at once; 0 (the default): the
  /// pool's capacity, one per worker (the scheduler asks the pool once).
  size_t max_in_flight = 0;
  /// Record each computation's start and end in the epoch statistics (for
  /// timelines); off by default.
  bool record_timeline = false;
};

/// Sequences the trainer forwards: a time-major batch of its model's
/// log-posteriors (`data.log_posteriors` [T, B, D], `data.seq_lengths`,
/// `data.tags`) and each column's sequence index. Indices increase strictly,
/// within a message and across messages of an epoch. Every row of a
/// sequence must be normalizable: no NaN, no +inf, not all -inf.
struct forward_sequences {
  /// [B]: the sequence index of each column.
  std::vector<uint64_t> seq_indices;
  /// The log-posteriors, lengths and tags. The scheduler keeps the tensor
  /// (shared, not copied) until the sequences are computed.
  batch data;
};

/// One part of a sequence in a training batch (RETURNN's `BatchSeqCopyPart`):
/// frames [seq_start_frame, seq_end_frame) of sequence `seq_idx` go to rows
/// [batch_frame_offset, batch_frame_offset + (seq_end_frame -
/// seq_start_frame)) of column `batch_slice` of its batch. A sequence trained
/// in chunks has one part per chunk.
struct seqtrain_part {
  /// The sequence (as forwarded).
  uint64_t seq_idx = 0;
  /// The batch column it goes to, below the batch's `num_slices`.
  uint64_t batch_slice = 0;
  /// The first batch row it fills.
  uint64_t batch_frame_offset = 0;
  /// Its frames of the sequence: [seq_start_frame, seq_end_frame), not
  /// empty, within the sequence.
  uint64_t seq_start_frame = 0;
  uint64_t seq_end_frame = 0;
};

/// A training batch: `num_frames` x `num_slices`, and the parts in it.
struct seqtrain_batch {
  /// Rows (time frames) of the batch.
  uint64_t num_frames = 0;
  /// Columns (slices) of the batch.
  uint64_t num_slices = 0;
  /// What goes where; columns without a part stay zero.
  std::vector<seqtrain_part> parts;
};

/// What a train request gets: the batches side by side, batch i's columns
/// after those of batches 0..i-1.
struct seqtrain_result {
  /// [n_batch]: per column, the sum over its parts of the sequence's loss
  /// times the part's share of the sequence's frames (+inf for a sequence
  /// Sprint skipped).
  std::vector<float> loss;
  /// float32 [n_time, n_batch, D], n_time the most frames of any batch: a
  /// part's rows hold its frames of the sequence's hat_y, zero elsewhere.
  tensor hat_y;
};

/// One computation of a sequence, for timelines: nanoseconds since the
/// epoch started, and the lane (0..max_in_flight-1) it ran in.
struct seqtrain_interval {
  uint64_t seq_idx = 0;
  uint32_t lane = 0;
  int64_t start_ns = 0;
  int64_t end_ns = 0;
};

/// Counters and queue depths of a scheduler (of the current or just
/// finished epoch).
struct seqtrain_stats {
  /// The epoch number given at its start.
  uint64_t epoch = 0;
  /// Queue depths now: forwarded and not sent, being computed, loss data kept.
  uint64_t forward_queue = 0;
  uint64_t in_flight = 0;
  uint64_t loss_data = 0;
  /// Sequences forwarded, computed, skipped by Sprint (loss +inf), failed.
  uint64_t forwarded = 0;
  uint64_t computed = 0;
  uint64_t skipped = 0;
  uint64_t failed = 0;
  /// Train requests answered.
  uint64_t train_requests = 0;
  /// Time train requests waited for loss data before their reply.
  int64_t trainer_wait_ns = 0;
  /// Summed time sequences spent being computed (over all lanes).
  int64_t worker_busy_ns = 0;
  /// Time since the epoch started (until it finished, for a finished one).
  int64_t elapsed_ns = 0;
  /// Computed sequences per second of `elapsed_ns`.
  double seqs_per_second = 0;
  /// Each computation's interval, if `record_timeline` is set.
  std::vector<seqtrain_interval> timeline;
};

/// CAF inspection of `seqtrain_interval`.
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, seqtrain_interval& x) {
  return f(x.seq_idx, x.lane, x.start_ns, x.end_ns);
}

/// CAF inspection of `seqtrain_stats`.
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, seqtrain_stats& x) {
  return f(x.epoch, x.forward_queue, x.in_flight, x.loss_data, x.forwarded, x.computed, x.skipped,
           x.failed, x.train_requests, x.trainer_wait_ns, x.worker_busy_ns, x.elapsed_ns,
           x.seqs_per_second, x.timeline);
}

/// CAF inspection of `seqtrain_part`.
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, seqtrain_part& x) {
  return f(x.seq_idx, x.batch_slice, x.batch_frame_offset, x.seq_start_frame, x.seq_end_frame);
}

/// CAF inspection of `seqtrain_batch`.
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, seqtrain_batch& x) {
  return f(x.num_frames, x.num_slices, x.parts);
}

/// The sequence-training scheduler, one per training run.
///
/// - `(epoch_start, epoch) -> bool`: empties the queues and starts epoch
///   `epoch` (true). Error if an epoch is running. Computations of an earlier
///   epoch still running are discarded when they return.
/// - `(epoch_finish) -> seqtrain_stats`: ends the epoch. Error, naming what is
///   left, if forwarded sequences or computations remain.
/// - `(have_space, n) -> bool`: exactly `forward_queue + in_flight + loss_data
///   + n < forward_seq_delay`; never depends on worker timing.
/// - `(forward, sequences) -> uint64_t`: queues the sequences (replies how
///   many it queued). Errors (`invalid_input`, nothing queued): no epoch
///   running, malformed batch, NaN / +inf / an all -inf row (naming sequence
///   and frame), an index that does not increase.
/// - `(train, batches) -> seqtrain_result`: declares the current batches and
///   replies once every sequence in them has loss data. Errors: the start of
///   the sequence range moved backwards, a part outside its batch or its
///   sequence, a sequence whose loss data was dropped or that was never
///   forwarded, a range holding at least `forward_seq_delay` sequences (it
///   could never be admitted: an immediate error, where the original
///   deadlocked), a sequence whose computation failed (naming it and the
///   cause; the scheduler stays usable), a second train request while one
///   waits.
/// - `(stats) -> seqtrain_stats`.
/// - `(cancel, request_id) -> cancel_outcome`: the sender no longer wants
///   its train request of that id (`request_id_of` its message id). A
///   waiting one is answered with `cancelled` at once (before this reply)
///   and the reply is `cancelled`; its sequences stay forwarded and keep
///   computing, so that the same train request may be made again. The reply
///   is `already_answered` when the request got its answer before the cancel
///   arrived (the last 16 answered train requests are remembered), and
///   `unknown` for any other id. A cancel sent with `send` gets its reply
///   as an ordinary message: send it as a request, or be ready for that
///   message.
using seqtrain_scheduler_actor = caf::typed_actor<
    caf::replies_to<epoch_start_atom, uint64_t>::with<bool>,
    caf::replies_to<epoch_finish_atom>::with<seqtrain_stats>,
    caf::replies_to<have_space_atom, uint64_t>::with<bool>,
    caf::replies_to<forward_atom, forward_sequences>::with<uint64_t>,
    caf::replies_to<train_atom, std::vector<seqtrain_batch>>::with<seqtrain_result>,
    caf::replies_to<stats_atom>::with<seqtrain_stats>,
    caf::replies_to<cancel_atom, uint64_t>::with<cancel_outcome>>;

} // namespace sprintrt

// Forwarded sequences and results share tensor storage: they are for actors
// in one process.
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(sprintrt::forward_sequences)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(sprintrt::seqtrain_result)
