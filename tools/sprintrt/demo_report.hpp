#pragma once

/// @file
/// The demo's `--report DIR`: report.json and two hand-written SVG figures,
/// the learning curves (loss per frame and held-out label error rate per
/// epoch) and the timeline of one epoch (when the trainer computed and when
/// each worker lane computed: the overlap the pipeline buys).

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "sprintrt/error.hpp"
#include "sprintrt/seqtrain_interface.hpp"

namespace sprintrt::cli {

/// The figures of one epoch.
struct demo_epoch_figures {
  uint64_t epoch = 0;
  /// Summed Sprint loss over the summed frames of the trained sequences.
  double loss_per_frame = 0;
  /// Greedy-decoding label error rate on the held-out utterances.
  double label_error_rate = 0;
  /// Wall time from sending the epoch start until its statistics came back.
  double seconds = 0;
  /// Trained sequences per second of `seconds`.
  double seqs_per_second = 0;
  /// Time the trainer waited on train replies, over `seconds`.
  double trainer_wait_fraction = 0;
  /// Time the workers computed, over `seconds` times the workers.
  double worker_utilization = 0;
  /// Sequences Sprint skipped (loss +inf), not trained on.
  uint64_t skipped = 0;
};

/// What the trainer was doing in one of its busy periods.
enum class trainer_activity {
  /// Running the model over sequences to forward them.
  forward,
  /// Running the model again over the current batch, backpropagating the
  /// error signal and updating the weights.
  train,
};

/// One busy period of the trainer, in nanoseconds since it sent the epoch
/// start (the scheduler's clock starts when it receives it, microseconds
/// later: close enough for a picture).
struct trainer_interval {
  trainer_activity activity = trainer_activity::forward;
  int64_t start_ns = 0;
  int64_t end_ns = 0;
};

/// Everything the timeline shows of one epoch.
struct demo_timeline {
  uint64_t epoch = 0;
  /// The epoch's length (the time axis).
  int64_t elapsed_ns = 0;
  /// Worker lanes (the scheduler's `max_in_flight`).
  size_t lanes = 0;
  std::vector<trainer_interval> trainer;
  /// The scheduler's computation intervals (`seqtrain_stats::timeline`).
  std::vector<seqtrain_interval> workers;
};

/// Returns the SVG of the learning curves: two panels over the epochs.
std::string learning_curves_svg(const std::vector<demo_epoch_figures>& epochs);

/// Returns the SVG of the timeline: one lane for the trainer, one per worker.
std::string timeline_svg(const demo_timeline& timeline);

/// Creates `dir` if needed and writes `report.json` (the text `json`),
/// `learning_curves.svg` and `timeline.svg`. An `io_error` names the file
/// that could not be written.
caf::error write_demo_report(const std::string& dir, const std::string& json,
                             const std::vector<demo_epoch_figures>& epochs,
                             const demo_timeline& timeline);

} // namespace sprintrt::cli
