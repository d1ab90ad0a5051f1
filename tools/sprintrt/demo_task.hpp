#pragma once

/// @file
/// The demo's synthetic speech-like task and its model.
///
/// Every segment is a short sequence of labels 1..K (0 is the CTC blank);
/// each label lasts a few frames, with optional blank frames between labels.
/// A frame's features are its label's prototype vector plus Gaussian noise.
/// The model is a linear layer and a softmax over K+1 classes, trained with
/// the full-sum CTC loss whose error signal comes from the Sprint workers:
/// exactly the situation sprintrt exists for, small enough to run anywhere.

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <Eigen/Core>

#include "sprintrt/batch.hpp"
#include "sprintrt/error.hpp"

namespace sprintrt::cli {

/// Row-major float matrices (frames are rows, as on the wire).
using matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

/// One segment of the task.
struct demo_segment {
  std::string name;
  std::vector<uint32_t> labels;
  /// [T, F] features.
  matrix features;
};

/// Sizes of the task.
struct demo_task_config {
  size_t segments = 64;
  uint32_t labels = 8;
  size_t features = 16;
  float noise = 0.8f;
  uint64_t seed = 1;
};

/// Makes the task's segments (deterministic for a seed).
std::vector<demo_segment> make_demo_task(const demo_task_config& config);

/// Writes the corpus file sprint-sim reads (an `io_error` if it cannot).
caf::error write_demo_corpus(const std::vector<demo_segment>& segments, const std::string& path);

/// A linear softmax model over `classes` classes.
class demo_model {
public:
  demo_model(size_t features, size_t classes);

  /// Writes log_softmax(x W + b) of `segment` into rows of `out` ([T, D] slice).
  void log_posteriors(const demo_segment& segment, const matrix_slice& out) const;

  /// Accumulates the gradient of the loss from the error signal dL/dz [T, D].
  void accumulate(const demo_segment& segment, const matrix_slice& error_signal);

  /// Applies the accumulated gradient (SGD, scaled by 1 / frames) and clears it.
  void step(float learning_rate, size_t frames);

  /// Greedy CTC decoding: best class per frame, repeats merged, blanks removed.
  std::vector<uint32_t> decode(const demo_segment& segment) const;

private:
  matrix weights_;
  Eigen::RowVectorXf bias_;
  matrix weights_grad_;
  Eigen::RowVectorXf bias_grad_;
};

} // namespace sprintrt::cli
