#include "actors/seqtrain/seqtrain_layout.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "common/float_loss.hpp"

namespace sprintrt::detail {

namespace {

caf::error invalid(std::string what) {
  return make_error(errc::invalid_input, "train: " + std::move(what));
}

std::string part_name(size_t batch, size_t part, const seqtrain_part& p) {
  return "batch " + std::to_string(batch) + ", part " + std::to_string(part) + " (sequence " +
         std::to_string(p.seq_idx) + ")";
}

} // namespace

caf::expected<train_plan> plan_train(const std::vector<seqtrain_batch>& batches) {
  train_plan plan;
  if (batches.empty())
    return invalid("no batches");
  for (size_t b = 0; b < batches.size(); ++b) {
    const auto& batch = batches[b];
    if (batch.num_frames == 0 || batch.num_slices == 0)
      return invalid("batch " + std::to_string(b) + " is empty (" +
                     std::to_string(batch.num_frames) + " frames x " +
                     std::to_string(batch.num_slices) + " slices)");
    for (size_t i = 0; i < batch.parts.size(); ++i) {
      const auto& p = batch.parts[i];
      if (p.batch_slice >= batch.num_slices)
        return invalid(part_name(b, i, p) + ": batch_slice " + std::to_string(p.batch_slice) +
                       " is not below num_slices " + std::to_string(batch.num_slices));
      if (p.seq_end_frame <= p.seq_start_frame)
        return invalid(part_name(b, i, p) + ": frames [" + std::to_string(p.seq_start_frame) +
                       ", " + std::to_string(p.seq_end_frame) + ") are empty");
      auto length = p.seq_end_frame - p.seq_start_frame;
      if (p.batch_frame_offset > batch.num_frames ||
          length > batch.num_frames - p.batch_frame_offset)
        return invalid(part_name(b, i, p) + ": rows [" + std::to_string(p.batch_frame_offset) +
                       ", " + std::to_string(p.batch_frame_offset + length) +
                       ") exceed the batch's " + std::to_string(batch.num_frames) + " frames");
      plan.sequences.push_back(p.seq_idx);
    }
    plan.num_frames = std::max<size_t>(plan.num_frames, batch.num_frames);
    plan.num_columns += batch.num_slices;
  }
  if (plan.sequences.empty())
    return invalid("the batches have no parts");
  std::sort(plan.sequences.begin(), plan.sequences.end());
  plan.sequences.erase(std::unique(plan.sequences.begin(), plan.sequences.end()),
                       plan.sequences.end());
  plan.start_seq = plan.sequences.front();
  plan.end_seq = plan.sequences.back() + 1;
  return plan;
}

caf::error check_parts(const std::vector<seqtrain_batch>& batches, const train_plan& plan,
                       const std::function<sequence_shape(uint64_t)>& shape_of) {
  const size_t dim = shape_of(plan.sequences.front()).dim;
  for (size_t b = 0; b < batches.size(); ++b)
    for (size_t i = 0; i < batches[b].parts.size(); ++i) {
      const auto& p = batches[b].parts[i];
      auto shape = shape_of(p.seq_idx);
      if (shape.dim != dim)
        return invalid(part_name(b, i, p) + ": the sequence has " + std::to_string(shape.dim) +
                       " classes, sequence " + std::to_string(plan.sequences.front()) + " has " +
                       std::to_string(dim));
      if (p.seq_end_frame > shape.frames)
        return invalid(part_name(b, i, p) + ": frames [" + std::to_string(p.seq_start_frame) +
                       ", " + std::to_string(p.seq_end_frame) + ") exceed the sequence's " +
                       std::to_string(shape.frames) + " frames");
    }
  return {};
}

seqtrain_result lay_out_train_result(const std::vector<seqtrain_batch>& batches,
                                     const train_plan& plan,
                                     const std::function<sequence_outcome(uint64_t)>& lookup) {
  const size_t dim = lookup(plan.sequences.front()).hat_y->cols;
  seqtrain_result result;
  result.hat_y = tensor::zeros({plan.num_frames, plan.num_columns, dim});
  std::vector<double> loss(plan.num_columns, 0.0);
  size_t first_column = 0;
  for (const auto& batch : batches) {
    for (const auto& p : batch.parts) {
      auto outcome = lookup(p.seq_idx);
      const auto& source = *outcome.hat_y;
      size_t column = first_column + p.batch_slice;
      size_t length = p.seq_end_frame - p.seq_start_frame;
      loss[column] += outcome.loss * static_cast<double>(length) / static_cast<double>(source.rows);
      for (size_t k = 0; k < length; ++k) {
        float* row =
            result.hat_y.data() + ((p.batch_frame_offset + k) * plan.num_columns + column) * dim;
        std::memcpy(row, source.row(p.seq_start_frame + k), dim * sizeof(float));
      }
    }
    first_column += batch.num_slices;
  }
  result.loss.reserve(loss.size());
  for (double x : loss)
    result.loss.push_back(to_float_loss(x));
  return result;
}

} // namespace sprintrt::detail
