#pragma once

/// @file
/// The demo's synthetic speech-like task.
///
/// Every utterance is a sequence of labels 1..K (0 is the CTC blank). Each
/// label lasts several frames and moves along a trajectory: its frames
/// interpolate linearly from the label's onset prototype to its offset
/// prototype. Labels come in confusable pairs: label 2m+1 goes from p_m to
/// q_m, label 2m+2 from q_m back to p_m, so that one frame alone cannot tell
/// them apart, only the direction seen over neighbouring frames can. Blank
/// frames (pauses) sit between some labels. Every frame gets Gaussian noise,
/// and every utterance a constant offset of its own (a "speaker"), which the
/// model must learn to ignore.
///
/// Held-out utterances come from the same process and are never trained on:
/// they measure the label error rate.

#include <cstdint>
#include <string>
#include <vector>

#include <Eigen/Core>

#include "sprintrt/error.hpp"

namespace sprintrt::cli {

/// Row-major float matrices (frames are rows, as on the wire).
using matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

/// One utterance of the task.
struct demo_segment {
  /// The name Sprint looks it up by.
  std::string name;
  /// Its labels, each in 1..K.
  std::vector<uint32_t> labels;
  /// [T, F] features.
  matrix features;
};

/// Sizes and difficulty of the task.
struct demo_task_config {
  /// Utterances trained on, per epoch.
  size_t train_segments = 1024;
  /// Utterances for the label error rate only.
  size_t heldout_segments = 256;
  /// K, the labels besides the blank (rounded up to an even number: pairs).
  uint32_t labels = 24;
  /// F, the features per frame.
  size_t features = 16;
  /// Standard deviation of each frame's noise.
  float noise = 0.6f;
  /// Standard deviation of each utterance's constant offset.
  float speaker_offset = 0.3f;
  /// Scale of the prototypes (their entries are N(0, scale^2)).
  float prototype_scale = 1.0f;
  /// Seed of everything random in the task.
  uint64_t seed = 1;
};

/// The utterances of the task.
struct demo_task {
  std::vector<demo_segment> train;
  std::vector<demo_segment> heldout;
  /// The classes a model needs: the labels (`labels` rounded up to an even
  /// number) plus the blank.
  size_t classes = 0;
};

/// Makes the task (deterministic for a configuration).
demo_task make_demo_task(const demo_task_config& config);

/// Writes the corpus file sprint-sim reads, one line per segment (an
/// `io_error` if it cannot).
caf::error write_demo_corpus(const std::vector<demo_segment>& segments, const std::string& path);

/// Returns the label a label is confused with: its pair's other label
/// (2m+1 and 2m+2).
uint32_t confusable_label(uint32_t label);

/// Writes a denominator file of competing hypotheses for sprint-sim's
/// sequence-discriminative criteria (docs/sequence-training.md): per
/// segment, each sequence that differs from its labels in one position, by
/// that label's confusable one, at cost 0 (an `io_error` if it cannot).
caf::error write_confusable_denominator(const std::vector<demo_segment>& segments,
                                        const std::string& path);

} // namespace sprintrt::cli
