#pragma once

/// @file
/// What a trainer exchanges with a worker pool (docs/protocol.md section 5).

#include <cstdint>
#include <string>
#include <vector>

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
};

/// The pool's answer for a batch.
struct batch_result {
  /// [B]: each segment's loss; +inf for a segment Sprint skipped.
  std::vector<float> loss;
  /// float32 [T, B, D]: the error signal, zero in the padding frames.
  tensor error_signal;
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
