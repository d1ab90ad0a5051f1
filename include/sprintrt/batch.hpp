#pragma once

/// @file
/// What a trainer exchanges with a worker pool (docs/protocol.md section 5).

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <chrono>

#include <caf/error.hpp>

#include "sprintrt/tensor.hpp"

namespace sprintrt {

/// A batch of segments for sequence training, time-major.
struct batch {
  /// float32 [T, B, D]: segment b is `log_posteriors[0:seq_lengths[b], b, :]`.
  tensor log_posteriors;
  /// [B]: each in 1..T.
  std::vector<int64_t> seq_lengths;
  /// [B]: the segment names Sprint looks up, non-empty.
  std::vector<std::string> tags;
  /// Optional: a [T, B, D] tensor to write the error signal into, e.g. the
  /// previous batch's result, so that large batches do not allocate (the page
  /// faults of a fresh large buffer cost more than filling it). Used only if its shape fits
  /// and nothing else shares its storage; otherwise a new one is made.
  tensor reuse_error_signal;
  /// Whether the batch may succeed in part. False (the default, RETURNN's
  /// semantics): if any segment fails, the whole request fails with one
  /// error listing every failed segment, and no loss is returned; its code
  /// is that of the failed segment first in batch order (the lowest index),
  /// whatever order the failures came in. True: the request returns the
  /// losses and error signals of the segments that succeeded and one
  /// `segment_failure` per failed segment in `batch_result::failures`; it
  /// fails as a whole only when the batch itself is refused (its checks, a
  /// pool that cannot serve) or cancelled.
  bool partial = false;
  /// Optional: how long the pool may take for the batch from when it
  /// receives it (0, the default: no limit). When the time is up, the pool
  /// cancels the batch as if its caller had (no segment is started any
  /// more; children computing one are kept or killed as `onCancel` says)
  /// and answers `timeout`. CAF's own request timeout
  /// (`request(pool, timeout, ...)`) is only an event at the caller: the
  /// pool goes on computing the batch unless the caller also sends
  /// `(cancel, request_id)`.
  std::chrono::milliseconds time_limit{0};
};

/// Why one segment of a partial batch failed (see `batch::partial`).
struct segment_failure {
  /// The segment's index b in the batch.
  size_t index = 0;
  /// Its tag.
  std::string tag;
  /// The error: its code (`errc`, e.g. `unknown_segment`,
  /// `child_exception`, `child_failed`) and a message naming the worker,
  /// the segment and the cause.
  caf::error error;
};

/// The pool's answer for a batch.
struct batch_result {
  /// [B]: each segment's loss; +inf for a segment Sprint skipped (a result:
  /// no path, error signal zero); NaN for a segment that failed (partial
  /// batches only). NaN, not +inf, so that a failure cannot be taken for a
  /// skip, and so that a sum over the batch that forgets the failures is
  /// NaN (loud) rather than a number; `nansum`, or a mask from `failures`,
  /// sums the rest.
  std::vector<float> loss;
  /// float32 [T, B, D]: the error signal, zero in the padding frames and in
  /// every frame of a failed segment (so that its gradient is zero).
  tensor error_signal;
  /// The failed segments in batch order, one each (partial batches only;
  /// empty when every segment succeeded).
  std::vector<segment_failure> failures;

  /// Returns whether segment `b` succeeded (computed or skipped).
  bool succeeded(size_t b) const noexcept {
    for (const auto& failure : failures)
      if (failure.index == b)
        return false;
    return true;
  }
};

/// The automata of a batch merged into one (docs/protocol.md section 5).
struct batch_automata {
  /// [4, E] row-major: all `from` states, all `to` states, all emission
  /// indices, all segment indices. Segment b's states are shifted by the
  /// number of states of the segments before it.
  std::vector<uint32_t> edges;
  /// [E]: costs in -log space.
  std::vector<float> weights;
  /// [2, B] row-major: each segment's start state, then each one's final state.
  std::vector<uint32_t> start_end_states;

  /// Returns the number of edges E.
  size_t num_edges() const noexcept { return weights.size(); }
};

} // namespace sprintrt
