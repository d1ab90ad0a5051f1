#pragma once

/// @file
/// A train request's layout: which sequences its batches need, the shape of
/// its reply, and laying each sequence's loss and hat_y out into it. Pure
/// functions, apart from the actor.
///
/// The layout (RETURNN's `assign_dev_data`, with the batches side by side):
/// batch i occupies columns [c_i, c_i + num_slices_i) of the reply, c_i the
/// sum of the earlier batches' slices; n_time is the most frames of any
/// batch. A part (q = c_i + batch_slice, o = batch_frame_offset, frames
/// [s, e) of sequence j with T_j frames) contributes
///
///     hat_y[o + k, q, :] = hat_y_j[s + k, :]      for k in [0, e - s)
///     loss[q]           += loss_j * (e - s) / T_j
///
/// so a sequence trained in chunks is charged its loss once in total. The
/// loss is summed in double and rounded to float32 once per column. Rows and
/// columns no part covers stay zero.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "sprintrt/error.hpp"
#include "sprintrt/seqtrain_interface.hpp"

namespace sprintrt::detail {

/// What a train request needs, checked for consistency.
struct train_plan {
  /// The sequence range [start_seq, end_seq) of all parts.
  uint64_t start_seq = 0;
  uint64_t end_seq = 0;
  /// Every sequence index of a part, ascending, once each.
  std::vector<uint64_t> sequences;
  /// The reply's [n_time, n_batch].
  size_t num_frames = 0;
  size_t num_columns = 0;
};

/// Checks `batches` (at least one part; each batch non-empty; each part
/// inside its batch, with seq_start_frame < seq_end_frame) and returns what
/// they need. Errors are `invalid_input` naming the batch and part.
caf::expected<train_plan> plan_train(const std::vector<seqtrain_batch>& batches);

/// A sequence's extent: its frames T and width D.
struct sequence_shape {
  size_t frames = 0;
  size_t dim = 0;
};

/// Checks every part of `batches` (planned as `plan`) against its sequence,
/// whose shape `shape_of(seq_idx)` gives: frames within the sequence, one
/// width D for all. Errors are `invalid_input` naming batch and part. A
/// scheduler checks this when the request arrives (the shapes are known
/// since forward), not after it waited for the loss data.
caf::error check_parts(const std::vector<seqtrain_batch>& batches, const train_plan& plan,
                       const std::function<sequence_shape(uint64_t)>& shape_of);

/// A sequence's loss data as the layout reads it.
struct sequence_outcome {
  double loss = 0;
  /// Row-major [frames, dim] hat_y.
  const matrix_slice* hat_y = nullptr;
};

/// Lays out the reply for `batches` (planned as `plan`, parts checked with
/// `check_parts`); `lookup(seq_idx)` gives each needed sequence's outcome.
seqtrain_result lay_out_train_result(const std::vector<seqtrain_batch>& batches,
                                     const train_plan& plan,
                                     const std::function<sequence_outcome(uint64_t)>& lookup);

} // namespace sprintrt::detail
