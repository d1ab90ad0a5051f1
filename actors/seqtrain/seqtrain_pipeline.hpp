#pragma once

/// @file
/// The sequence-training scheduler's bookkeeping, apart from the actor
/// mechanics (messages, timers, the pool): which forwarded sequences wait,
/// which are being computed, which have loss data, and the admission rule.
///
/// All forwarded sequences of an epoch that are still kept form one list
/// ordered by sequence index, in three consecutive stages:
///
///     [ loss data | computing | queued ]
///       oldest                  newest
///
/// Sequences are sent in index order (the oldest queued first), and a
/// finished computation joins the loss data only when every older sequence
/// has, so the stages never interleave and results enter the loss data
/// strictly in sequence order whatever order the workers finish in.
///
/// Why the admission rule is deterministic: `have_space` counts the kept
/// sequences, i.e. those forwarded and not yet dropped. Forwarding adds to
/// it, only a train request's range start drops from it (and drops from all
/// three stages alike: a sequence still being computed is dropped too and its
/// result discarded when it returns). Worker timing moves sequences between
/// stages but never changes the count, so the trainer's forward decisions,
/// and with them training itself, do not depend on timing.

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>

#include "sprintrt/error.hpp"
#include "sprintrt/seqtrain_interface.hpp"

namespace sprintrt::detail {

/// One forwarded sequence on its way through the pipeline.
struct pipeline_entry {
  /// Where the sequence is.
  enum class stage : uint8_t { queued, computing, done };

  uint64_t seq_idx = 0;
  std::string tag;
  /// [T, D] rows of the forwarded batch (shared with it, not copied);
  /// released once the sequence is computed.
  matrix_slice log_posteriors;
  /// Dense [T, D]: the worker writes the error signal here, which then
  /// becomes hat_y = exp(log_posteriors) - error_signal in place.
  matrix_slice hat_y;
  stage where = stage::queued;
  /// The loss (+inf when Sprint skipped the sequence), once done.
  double loss = 0;
  /// Why the computation failed, if it did (then done; hat_y holds no
  /// meaning, but keeps its shape).
  caf::error failure;
  /// Set when the entry left the pipeline before its computation returned
  /// (its range was passed, or its epoch ended): the result is discarded.
  bool dropped = false;
};

/// Shared between the pipeline and the computation that fills it in.
using entry_pointer = std::shared_ptr<pipeline_entry>;

/// The queues of one scheduler. Not thread-safe (one actor owns it).
class seqtrain_pipeline {
public:
  /// A pipeline admitting up to `forward_seq_delay - 1` kept sequences.
  explicit seqtrain_pipeline(size_t forward_seq_delay) : delay_(forward_seq_delay) {}

  /// Starts epoch `epoch` with empty queues. Error (`invalid_request`) if an
  /// epoch is running. Entries of the previous epoch still computing are
  /// dropped.
  caf::error start_epoch(uint64_t epoch);

  /// Ends the epoch. If sequences are still queued or computing, they are
  /// dropped and the error (`invalid_request`) names them; the epoch ends
  /// either way, so that the trainer can start the next one.
  caf::error finish_epoch();

  /// Returns whether an epoch is running.
  bool running() const noexcept { return running_; }

  /// Returns the number of the current (or last) epoch.
  uint64_t epoch() const noexcept { return epoch_; }

  /// Returns the admission bound.
  size_t forward_seq_delay() const noexcept { return delay_; }

  /// Exactly `forward_queue + in_flight + loss_data + num_seqs <
  /// forward_seq_delay`.
  bool have_space(uint64_t num_seqs) const noexcept;

  /// Queues the sequences of `seqs` (their log-posteriors stay in its
  /// tensor). Errors (`invalid_request` without an epoch, else
  /// `invalid_input`; nothing queued): a malformed batch, a NaN, +inf or
  /// all -inf row (naming sequence and frame), indices that do not increase
  /// strictly (also against earlier forwards of the epoch). Returns the
  /// number queued.
  caf::expected<size_t> forward(forward_sequences& seqs);

  /// Returns the oldest queued entry, now computing, or null if none waits.
  entry_pointer take_next();

  /// Stores the outcome of `entry`'s computation (ignored for a dropped
  /// entry): on success hat_y is formed in place; then every finished entry
  /// whose predecessors are finished joins the loss data.
  void complete(const entry_pointer& entry, caf::expected<double> loss);

  /// Returns an error (`invalid_request`) if a train range starting at
  /// `start_seq` would move backwards, below the previous start.
  caf::error check_range_start(uint64_t start_seq) const;

  /// Declares a train range starting at `start_seq` (error as
  /// `check_range_start`); drops every kept entry before it.
  caf::error set_range_start(uint64_t start_seq);

  /// Returns the finished entry of `seq_idx` in the loss data, or null.
  const pipeline_entry* loss_data(uint64_t seq_idx) const;

  /// Returns the kept entry of `seq_idx` (in any stage), or null.
  const pipeline_entry* kept(uint64_t seq_idx) const;

  /// Queue depths.
  size_t forward_queue() const noexcept { return entries_.size() - queued_from_; }
  size_t in_flight() const noexcept { return queued_from_ - loss_data_; }
  size_t loss_data() const noexcept { return loss_data_; }

  /// The highest sequence index forwarded this epoch, if any was.
  bool forwarded_any() const noexcept { return forwarded_any_; }
  uint64_t last_forwarded() const noexcept { return last_forwarded_; }

private:
  // Drops every kept entry (marking those still computing).
  void drop_all();

  size_t delay_;
  bool running_ = false;
  uint64_t epoch_ = 0;
  /// The kept entries, ordered by sequence index.
  std::deque<entry_pointer> entries_;
  /// entries_[0, loss_data_) are loss data; [loss_data_, queued_from_) are
  /// computing; [queued_from_, end) are queued.
  size_t loss_data_ = 0;
  size_t queued_from_ = 0;
  uint64_t range_start_ = 0;
  bool forwarded_any_ = false;
  uint64_t last_forwarded_ = 0;
};

} // namespace sprintrt::detail
