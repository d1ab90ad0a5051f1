#include "tools/sprintrt/demo_model.hpp"

#include <algorithm>
#include <cmath>
#include <random>

#include "sprintrt/tensor_eigen.hpp"

namespace sprintrt::cli {

namespace {

using Eigen::Index;

/// A rows x cols matrix of N(0, scale^2) entries.
matrix gaussian(Index rows, Index cols, float scale, std::mt19937_64& gen) {
  std::normal_distribution<float> normal{0.0f, scale};
  matrix m(rows, cols);
  for (Index r = 0; r < rows; ++r)
    for (Index c = 0; c < cols; ++c)
      m(r, c) = normal(gen);
  return m;
}

} // namespace

demo_model::demo_model(const demo_model_config& config) : context_(config.context) {
  std::mt19937_64 gen{config.seed};
  auto inputs = static_cast<Index>((2 * config.context + 1) * config.features);
  auto hidden = static_cast<Index>(config.hidden);
  auto classes = static_cast<Index>(config.classes);
  // Glorot-like scales keep tanh out of saturation at the start; small
  // output weights start the posteriors near uniform.
  w1_ = gaussian(inputs, hidden, 1.0f / std::sqrt(static_cast<float>(inputs)), gen);
  b1_ = Eigen::RowVectorXf::Zero(hidden);
  w2_ = gaussian(hidden, classes, 0.1f / std::sqrt(static_cast<float>(hidden)), gen);
  b2_ = Eigen::RowVectorXf::Zero(classes);
  w1_grad_ = matrix::Zero(inputs, hidden);
  b1_grad_ = Eigen::RowVectorXf::Zero(hidden);
  w2_grad_ = matrix::Zero(hidden, classes);
  b2_grad_ = Eigen::RowVectorXf::Zero(classes);
}

matrix demo_model::windows(const matrix& features) const {
  Index frames = features.rows();
  Index dim = features.cols();
  auto c = static_cast<Index>(context_);
  matrix x = matrix::Zero(frames, (2 * c + 1) * dim);
  for (Index t = 0; t < frames; ++t)
    for (Index k = -c; k <= c; ++k)
      if (t + k >= 0 && t + k < frames)
        x.block(t, (k + c) * dim, 1, dim) = features.row(t + k);
  return x;
}

matrix demo_model::logits(const matrix& input, matrix& hidden) const {
  hidden = ((input * w1_).rowwise() + b1_).array().tanh().matrix();
  return (hidden * w2_).rowwise() + b2_;
}

demo_model::activations demo_model::forward(const matrix& features, const matrix_slice& out) const {
  activations pass;
  pass.input = windows(features);
  matrix z = logits(pass.input, pass.hidden);
  // y_t = z_t - log sum_d exp(z_t,d), with the maximum taken out for range.
  auto y = as_matrix(out);
  for (Index t = 0; t < z.rows(); ++t) {
    float max = z.row(t).maxCoeff();
    float log_sum = max + std::log((z.row(t).array() - max).exp().sum());
    y.row(t) = z.row(t).array() - log_sum;
  }
  return pass;
}

void demo_model::accumulate(const activations& pass, const matrix_slice& error_signal) {
  auto dz = as_matrix(error_signal);
  w2_grad_.noalias() += pass.hidden.transpose() * dz;
  b2_grad_ += dz.colwise().sum();
  matrix dh = ((dz * w2_.transpose()).array() * (1.0f - pass.hidden.array().square())).matrix();
  w1_grad_.noalias() += pass.input.transpose() * dh;
  b1_grad_ += dh.colwise().sum();
}

void demo_model::step(float learning_rate, size_t frames) {
  float scale = learning_rate / static_cast<float>(std::max<size_t>(frames, 1));
  w1_ -= scale * w1_grad_;
  b1_ -= scale * b1_grad_;
  w2_ -= scale * w2_grad_;
  b2_ -= scale * b2_grad_;
  w1_grad_.setZero();
  b1_grad_.setZero();
  w2_grad_.setZero();
  b2_grad_.setZero();
}

std::vector<uint32_t> demo_model::decode(const matrix& features) const {
  matrix hidden;
  matrix z = logits(windows(features), hidden);
  std::vector<uint32_t> labels;
  uint32_t previous = 0;
  for (Index t = 0; t < z.rows(); ++t) {
    Index best = 0;
    z.row(t).maxCoeff(&best);
    auto k = static_cast<uint32_t>(best);
    if (k != 0 && k != previous)
      labels.push_back(k);
    previous = k;
  }
  return labels;
}

} // namespace sprintrt::cli
