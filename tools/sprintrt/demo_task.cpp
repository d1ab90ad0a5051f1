#include "tools/sprintrt/demo_task.hpp"

#include <algorithm>
#include <cmath>

#include "sim/corpus.hpp"
#include "sprintrt/tensor_eigen.hpp"

namespace sprintrt::cli {

std::vector<demo_segment> make_demo_task(const demo_task_config& config) {
  std::mt19937_64 gen{config.seed};
  std::normal_distribution<float> normal{0.0f, 1.0f};
  // One prototype per class; the blank's sits at the origin.
  matrix prototypes = matrix::Zero(config.labels + 1, static_cast<Eigen::Index>(config.features));
  for (Eigen::Index k = 1; k < prototypes.rows(); ++k)
    for (Eigen::Index f = 0; f < prototypes.cols(); ++f)
      prototypes(k, f) = 2.0f * normal(gen);
  std::uniform_int_distribution<uint32_t> label{1, config.labels};
  std::uniform_int_distribution<size_t> count{2, 6};
  std::uniform_int_distribution<size_t> duration{3, 6};
  std::uniform_int_distribution<size_t> gap{0, 2};
  std::vector<demo_segment> segments;
  for (size_t i = 0; i < config.segments; ++i) {
    demo_segment seg;
    seg.name = "demo/rec/seg-" + std::to_string(i);
    std::vector<uint32_t> frame_class;
    size_t n = count(gen);
    for (size_t k = 0; k < n; ++k) {
      uint32_t l = label(gen);
      seg.labels.push_back(l);
      frame_class.insert(frame_class.end(), gap(gen), 0u);
      frame_class.insert(frame_class.end(), duration(gen), l);
    }
    frame_class.insert(frame_class.end(), gap(gen), 0u);
    seg.features.resize(static_cast<Eigen::Index>(frame_class.size()),
                        static_cast<Eigen::Index>(config.features));
    for (size_t t = 0; t < frame_class.size(); ++t)
      for (Eigen::Index f = 0; f < seg.features.cols(); ++f)
        seg.features(static_cast<Eigen::Index>(t), f) =
            prototypes(frame_class[t], f) + config.noise * normal(gen);
    segments.push_back(std::move(seg));
  }
  return segments;
}

caf::error write_demo_corpus(const std::vector<demo_segment>& segments, const std::string& path) {
  std::vector<sim::corpus_entry> entries;
  for (const auto& seg : segments)
    entries.push_back({seg.name, seg.labels});
  return sim::write_corpus_file(path, entries);
}

demo_model::demo_model(size_t features, size_t classes)
    : weights_(
          matrix::Zero(static_cast<Eigen::Index>(features), static_cast<Eigen::Index>(classes))),
      bias_(Eigen::RowVectorXf::Zero(static_cast<Eigen::Index>(classes))),
      weights_grad_(matrix::Zero(weights_.rows(), weights_.cols())),
      bias_grad_(Eigen::RowVectorXf::Zero(bias_.cols())) {}

void demo_model::log_posteriors(const demo_segment& segment, const matrix_slice& out) const {
  matrix z = (segment.features * weights_).rowwise() + bias_;
  for (Eigen::Index t = 0; t < z.rows(); ++t) {
    float max = z.row(t).maxCoeff();
    float log_sum = max + std::log((z.row(t).array() - max).exp().sum());
    float* row = out.row(static_cast<size_t>(t));
    for (Eigen::Index d = 0; d < z.cols(); ++d)
      row[d] = z(t, d) - log_sum;
  }
}

void demo_model::accumulate(const demo_segment& segment, const matrix_slice& error_signal) {
  auto es = as_matrix(error_signal);
  weights_grad_.noalias() += segment.features.transpose() * es;
  bias_grad_ += es.colwise().sum();
}

void demo_model::step(float learning_rate, size_t frames) {
  float scale = learning_rate / static_cast<float>(std::max<size_t>(frames, 1));
  weights_ -= scale * weights_grad_;
  bias_ -= scale * bias_grad_;
  weights_grad_.setZero();
  bias_grad_.setZero();
}

std::vector<uint32_t> demo_model::decode(const demo_segment& segment) const {
  matrix z = (segment.features * weights_).rowwise() + bias_;
  std::vector<uint32_t> labels;
  uint32_t previous = 0;
  for (Eigen::Index t = 0; t < z.rows(); ++t) {
    Eigen::Index best = 0;
    z.row(t).maxCoeff(&best);
    auto k = static_cast<uint32_t>(best);
    if (k != 0 && k != previous)
      labels.push_back(k);
    previous = k;
  }
  return labels;
}

} // namespace sprintrt::cli
