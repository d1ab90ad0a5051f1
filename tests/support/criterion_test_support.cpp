#include "tests/support/criterion_test_support.hpp"

#include "criterion/random_posteriors.hpp"
#include "sprintrt/logging.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <limits>
#include <new>

namespace {

std::atomic<size_t> allocations{0};

} // namespace

// Counting replacements of the global allocation functions. Every
// non-aligned form is replaced, so that no memory from another allocator (a
// sanitizer's, say) reaches these `free`-based deletes; the aligned forms stay
// the runtime's, in matching pairs.
void* operator new(size_t size) {
  if (void* p = operator new(size, std::nothrow))
    return p;
  throw std::bad_alloc{};
}

void* operator new(size_t size, const std::nothrow_t&) noexcept {
  ++allocations;
  return std::malloc(size == 0 ? 1 : size);
}

void* operator new[](size_t size) {
  return operator new(size);
}

void* operator new[](size_t size, const std::nothrow_t&) noexcept {
  return operator new(size, std::nothrow);
}

void operator delete(void* p) noexcept {
  std::free(p);
}

void operator delete(void* p, size_t) noexcept {
  std::free(p);
}

void operator delete(void* p, const std::nothrow_t&) noexcept {
  std::free(p);
}

void operator delete[](void* p) noexcept {
  std::free(p);
}

void operator delete[](void* p, size_t) noexcept {
  std::free(p);
}

void operator delete[](void* p, const std::nothrow_t&) noexcept {
  std::free(p);
}

namespace sprintrt::criterion::test {

size_t allocation_count() noexcept {
  return allocations.load();
}

namespace {

constexpr double neg_inf = -std::numeric_limits<double>::infinity();

double log_sum_exp(const std::vector<double>& xs) {
  double max = neg_inf;
  for (double x : xs)
    max = std::max(max, x);
  if (max == neg_inf)
    return neg_inf;
  double sum = 0;
  for (double x : xs)
    sum += std::exp(x - max);
  return max + std::log(sum);
}

} // namespace

brute_force_result enumerate_paths(const fsa& automaton, const row_matrix_f& log_posteriors) {
  const auto num_frames = log_posteriors.rows();
  std::vector<std::vector<uint32_t>> paths;
  std::vector<double> scores;
  std::vector<uint32_t> path;
  // Extends `path` (which has reached `state` with `score`) by every edge.
  std::function<void(uint32_t, double)> extend = [&](uint32_t state, double score) {
    const auto t = static_cast<Eigen::Index>(path.size());
    if (t == num_frames) {
      if (state == automaton.final_state()) {
        paths.push_back(path);
        scores.push_back(score);
      }
      return;
    }
    for (uint32_t e = 0; e < automaton.num_edges(); ++e) {
      const fsa_edge edge = automaton.edge(e);
      if (edge.from != state)
        continue;
      path.push_back(e);
      extend(edge.to, score - edge.weight + log_posteriors(t, edge.emission));
      path.pop_back();
    }
  };
  extend(fsa::start_state, 0.0);
  brute_force_result result;
  result.num_paths = paths.size();
  result.log_total = log_sum_exp(scores);
  result.gamma = row_matrix_d::Zero(num_frames, log_posteriors.cols());
  result.best_score = neg_inf;
  for (size_t p = 0; p < paths.size(); ++p) {
    if (result.log_total != neg_inf)
      for (Eigen::Index t = 0; t < num_frames; ++t)
        result.gamma(t, automaton.edge(paths[p][t]).emission) +=
            std::exp(scores[p] - result.log_total);
    if (scores[p] > result.best_score) {
      result.best_score = scores[p];
      result.best_edges = paths[p];
    }
  }
  return result;
}

double ctc_by_definition(const std::vector<uint32_t>& labels, uint32_t blank,
                         const row_matrix_f& log_posteriors) {
  const auto num_frames = log_posteriors.rows();
  const auto num_classes = static_cast<uint32_t>(log_posteriors.cols());
  std::vector<uint32_t> symbols(num_frames, 0);
  std::vector<double> scores;
  // Counts through all sequences like an odometer.
  while (true) {
    std::vector<uint32_t> collapsed;
    for (Eigen::Index t = 0; t < num_frames; ++t)
      if (symbols[t] != blank && (t == 0 || symbols[t] != symbols[t - 1]))
        collapsed.push_back(symbols[t]);
    if (collapsed == labels) {
      double score = 0;
      for (Eigen::Index t = 0; t < num_frames; ++t)
        score += log_posteriors(t, symbols[t]);
      scores.push_back(score);
    }
    Eigen::Index t = 0;
    while (t < num_frames && ++symbols[t] == num_classes)
      symbols[t++] = 0;
    if (t == num_frames)
      break;
  }
  return -log_sum_exp(scores);
}

row_matrix_f log_softmax(const row_matrix_d& logits) {
  row_matrix_f result(logits.rows(), logits.cols());
  for (Eigen::Index t = 0; t < logits.rows(); ++t) {
    const double max = logits.row(t).maxCoeff();
    const double log_norm = max + std::log((logits.row(t).array() - max).exp().sum());
    result.row(t) = (logits.row(t).array() - log_norm).cast<float>().matrix();
  }
  return result;
}

row_matrix_d random_logits(Eigen::Index frames, Eigen::Index classes, std::mt19937& rng,
                           double scale) {
  std::normal_distribution<double> normal{0.0, scale};
  row_matrix_d logits(frames, classes);
  for (Eigen::Index i = 0; i < logits.size(); ++i)
    logits.data()[i] = normal(rng);
  return logits;
}

row_matrix_f random_log_posteriors(Eigen::Index frames, Eigen::Index classes, std::mt19937& rng) {
  row_matrix_f lp(frames, classes);
  fill_random_log_posteriors(lp.data(), static_cast<size_t>(frames), static_cast<size_t>(classes),
                             rng, 1.5);
  return lp;
}

std::vector<std::vector<uint32_t>> all_sequences(const std::vector<uint32_t>& labels,
                                                 size_t max_length) {
  std::vector<std::vector<uint32_t>> result = {{}};
  for (size_t i = 0; i < result.size(); ++i)
    if (result[i].size() < max_length)
      for (uint32_t label : labels) {
        auto longer = result[i];
        longer.push_back(label);
        result.push_back(std::move(longer));
      }
  return result;
}

hmm_options distinct_hmm_costs() {
  hmm_options options;
  options.loop_cost = 0.3f;
  options.forward_cost = 1.1f;
  options.silence_index = 0;
  options.silence_loop_cost = 0.2f;
  options.silence_entry_cost = 0.9f;
  options.silence_exit_cost = 0.4f;
  return options;
}

std::vector<uint32_t> random_labels(size_t count, uint32_t classes, uint32_t blank,
                                    std::mt19937& rng) {
  std::uniform_int_distribution<uint32_t> label{0, classes - 1};
  std::vector<uint32_t> labels;
  while (labels.size() < count) {
    const uint32_t x = label(rng);
    if (x != blank)
      labels.push_back(x);
  }
  return labels;
}

fsa random_fsa(uint32_t num_states, uint32_t num_edges, uint32_t classes, std::mt19937& rng) {
  std::uniform_int_distribution<uint32_t> state{0, num_states - 1};
  std::uniform_int_distribution<uint32_t> emission{0, classes - 1};
  std::uniform_real_distribution<float> weight{-0.5f, 2.0f};
  std::vector<fsa_edge> edges;
  for (uint32_t e = 0; e < num_edges; ++e) {
    const float w = e % 7 == 6 ? std::numeric_limits<float>::infinity() : weight(rng);
    edges.push_back({state(rng), state(rng), emission(rng), w});
  }
  return unwrap(fsa::make(num_states, edges));
}

log_capture::log_capture() : sink_(std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(64)) {
  sink_->set_pattern("%l: %v");
  set_logger(std::make_shared<spdlog::logger>("capture", sink_));
}

log_capture::~log_capture() {
  set_logger(nullptr);
}

std::vector<std::string> log_capture::messages() const {
  return sink_->last_formatted();
}

} // namespace sprintrt::criterion::test
