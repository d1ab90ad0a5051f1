#pragma once

/// @file
/// The loss of a batch over batch FSAs on the CPU, and its gradient with
/// respect to the log-probabilities, threaded over the batch: the full sum
/// (`full_sum_engine`, a sequence per task) or a sequence criterion
/// (`sequence_loss_block`; over a shared denominator one block of sequences
/// per thread, which shares one layout of it). What the public
/// `sprintrt::fsa_loss` (include/sprintrt/fsa_loss.hpp) and the Python
/// kernel of `sprintrt.torch.fsa_loss` run.

#include <cstdint>
#include <optional>

#include <Eigen/Core>
#include <caf/error.hpp>
#include <caf/expected.hpp>

#include "criterion/batch_fsa.hpp"
#include "criterion/matrix_views.hpp"
#include "criterion/sequence_criterion.hpp"

namespace sprintrt::criterion {

/// log_probs [T, B, D], float32, contiguous along D: element (t, b, k) at
/// t * frame_stride + b * sequence_stride + k.
struct frames_view {
  /// The first element.
  const float* data = nullptr;
  /// T, B and D.
  int64_t frames = 0;
  int64_t batch = 0;
  int64_t classes = 0;
  /// Strides in elements.
  int64_t frame_stride = 0;
  int64_t sequence_stride = 0;

  /// Returns the first `length` frames of sequence b, read in place.
  Eigen::Map<const row_matrix_f, 0, Eigen::OuterStride<>> sequence(int64_t b,
                                                                   int64_t length) const {
    return {data + b * sequence_stride, length, classes, Eigen::OuterStride<>{frame_stride}};
  }
};

/// What `batch_loss` reads. The FSAs are checked and grouped by it.
struct batch_loss_inputs {
  /// The scores.
  frames_view log_probs;
  /// [B] frames per sequence, each in [0, T].
  const int64_t* lengths = nullptr;
  /// The numerators (for the full sum, the FSAs): B sequences.
  batch_fsa* numerator = nullptr;
  /// The denominators: none for the full sum, else 1 (shared by the batch)
  /// or B sequences.
  batch_fsa* denominator = nullptr;
  /// The criterion; none: the full sum.
  std::optional<sequence_kind> kind;
  /// KAPPA and B of the sequence criteria (`lm` unused: LAMBDA is in the
  /// denominator's weights and `numerator_cost`).
  sequence_scales scales;
  /// [B] what every numerator path of sequence b pays; null for none.
  const double* numerator_cost = nullptr;
  /// Threads, at least 1 (more than the batch's tasks do not run).
  int64_t threads = 1;
};

/// The sequences of one call, by the recursions their denominators took.
struct batch_loss_counts {
  /// In probability space (scaled_forward_backward.hpp).
  uint64_t scaled = 0;
  /// In log space: handed back, or without a layout.
  uint64_t log_space = 0;
};

/// Computes loss [B] (float64) and the gradient [T, B, D] (float32, C
/// order) of the summed loss with respect to log_probs: -log Z and
/// -occupancy for the full sum, docs/sequence-training.md's definitions for
/// the criteria. A sequence without a path gets loss +inf and a zero
/// gradient, as do the frames after each sequence's end; a sequence of 0
/// frames has loss 0 if its numerator's start is its end, else +inf.
/// Errors (`invalid_input`, the first problem named): a length outside [0,
/// T], an FSA whose layout is broken, a number of sequences other than B
/// (the denominator: 1 or B), a scale out of range, fewer than 1 thread, a
/// score that is NaN or +inf within a sequence's frames.
caf::expected<batch_loss_counts> batch_loss(const batch_loss_inputs& in, double* loss,
                                            float* gradient);

/// Checks that each of the `batch` lengths lies in [0, frames]; errors
/// (`invalid_input`) name the first that does not, as `seq_lens[b]`.
caf::error check_lengths(const int64_t* lengths, int64_t batch, int64_t frames);

} // namespace sprintrt::criterion
