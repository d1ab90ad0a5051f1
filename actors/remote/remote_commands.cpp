#include "actors/remote/remote_commands.hpp"

#include <cstring>

#include "actors/worker/commands.hpp"
#include "sprintrt/error.hpp"

namespace sprintrt {

remote_segment remote_entry<get_loss_command>::to_remote(const segment_job& job) {
  const auto& slice = job.log_posteriors;
  float_rows rows{slice.rows, slice.cols, make_float_storage(slice.rows * slice.cols)};
  for (size_t r = 0; r < slice.rows; ++r)
    std::memcpy(rows.values->data() + r * slice.cols, slice.row(r), slice.cols * sizeof(float));
  return {job.segment, std::move(rows)};
}

caf::expected<double> remote_entry<get_loss_command>::from_remote(remote_loss& answer,
                                                                  const segment_job& job) {
  auto& signal = answer.error_signal;
  if (signal.rows != job.error_signal.rows || signal.cols != job.error_signal.cols ||
      !signal.values)
    return make_error(errc::invalid_message,
                      "segment '" + job.segment + "': an error signal of " +
                          std::to_string(signal.rows) + " x " + std::to_string(signal.cols) +
                          " for " + std::to_string(job.error_signal.rows) + " x " +
                          std::to_string(job.error_signal.cols) + " posteriors");
  bool written = write_output(job, [&] {
    for (size_t r = 0; r < signal.rows; ++r)
      std::memcpy(job.error_signal.row(r), signal.values->data() + r * signal.cols,
                  signal.cols * sizeof(float));
  });
  if (!written)
    return make_error(errc::cancelled, "the caller stopped waiting");
  return answer.loss;
}

} // namespace sprintrt
