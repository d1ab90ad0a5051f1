#pragma once

/// @file
/// The demo's acoustic model: one hidden layer over a window of frames and a
/// softmax over the K labels and the blank.
///
/// For frame t of an utterance with features f_1..f_T (F each):
///
///     x_t = [f_{t-c}, ..., f_t, ..., f_{t+c}]    (2c+1)F inputs, zero outside 1..T
///     h_t = tanh(x_t W1 + b1)                     H hidden units
///     z_t = h_t W2 + b2                           D = K+1 classes
///     y_t = log_softmax(z_t)
///
/// Training gets dL/dz_t (the error signal, from the Sprint side) and
/// backpropagates it:
///
///     dW2 = sum_t h_t^T dz_t,          db2 = sum_t dz_t
///     dh_t = (dz_t W2^T) * (1 - h_t^2) (elementwise: tanh' = 1 - tanh^2)
///     dW1 = sum_t x_t^T dh_t,          db1 = sum_t dh_t
///
/// then takes a plain SGD step of the summed gradient divided by the frames.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "sprintrt/matrix_slice.hpp"
#include "tools/sprintrt/demo_task.hpp"

namespace sprintrt::cli {

/// Sizes of the model.
struct demo_model_config {
  /// F, features per frame.
  size_t features = 16;
  /// c: frames of context on each side.
  size_t context = 2;
  /// H, hidden units.
  size_t hidden = 48;
  /// D, output classes (labels and blank).
  size_t classes = 25;
  /// Seed of the initial weights.
  uint64_t seed = 1;
};

/// A one-hidden-layer network over a window of frames (see the file comment).
class demo_model {
public:
  /// One utterance's forward pass, kept for its backward pass.
  struct activations {
    /// [T, (2c+1)F]: the windows x_t.
    matrix input;
    /// [T, H]: h_t.
    matrix hidden;
  };

  /// A model with small random weights drawn from `config.seed`.
  explicit demo_model(const demo_model_config& config);

  /// Returns D, the number of classes.
  size_t classes() const noexcept { return static_cast<size_t>(w2_.cols()); }

  /// Writes the log-posteriors y_t of `features` [T, F] into `out` ([T, D],
  /// e.g. one column of a batch) and returns the activations.
  activations forward(const matrix& features, const matrix_slice& out) const;

  /// Adds the gradient for one utterance from its activations and its error
  /// signal dL/dz [T, D].
  void accumulate(const activations& pass, const matrix_slice& error_signal);

  /// Applies the accumulated gradient (SGD, step size `learning_rate` per
  /// frame of the `frames` it was summed over) and clears it.
  void step(float learning_rate, size_t frames);

  /// Greedy CTC decoding: the best class per frame, repeats merged, blanks
  /// (class 0) removed.
  std::vector<uint32_t> decode(const matrix& features) const;

private:
  // The windows x_t of `features` [T, F].
  matrix windows(const matrix& features) const;

  // z_t for all frames, and the hidden activations into `hidden`.
  matrix logits(const matrix& input, matrix& hidden) const;

  size_t context_;
  matrix w1_;
  Eigen::RowVectorXf b1_;
  matrix w2_;
  Eigen::RowVectorXf b2_;
  matrix w1_grad_;
  Eigen::RowVectorXf b1_grad_;
  matrix w2_grad_;
  Eigen::RowVectorXf b2_grad_;
};

} // namespace sprintrt::cli
