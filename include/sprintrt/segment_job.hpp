#pragma once

/// @file
/// One segment's loss request as it travels between a trainer and the
/// workers: its posteriors and where its error signal goes.

#include <memory>
#include <string>
#include <utility>

#include "sprintrt/matrix_slice.hpp"
#include "sprintrt/output_gate.hpp"

namespace sprintrt {

/// A request to compute one segment: its log-posteriors [T, D] are read from
/// `log_posteriors`, its error signal [T, D] is written into `error_signal`.
struct segment_job {
  /// The segment name (the corpus tag Sprint looks up).
  std::string segment;
  matrix_slice log_posteriors;
  matrix_slice error_signal;
  /// Optional: a caller that may stop waiting (a timeout) closes this gate
  /// first; from then on nothing is written into `error_signal`, and the
  /// request fails with `cancelled`. A pool gives every job it is sent a
  /// gate, which it closes when it answers `cancelled` (it stopped).
  std::shared_ptr<output_gate> gate{};
};

/// Runs `write` (which writes into `job.error_signal`) unless the job's
/// output gate is closed; returns whether it ran. A job without a gate is
/// always written.
template <class Write>
bool write_output(const segment_job& job, Write&& write) {
  if (job.gate)
    return job.gate->write_if_open(std::forward<Write>(write));
  write();
  return true;
}

} // namespace sprintrt
