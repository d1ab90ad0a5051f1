#include "tools/bench/sim_bench.hpp"

#include <cmath>
#include <cstdint>
#include <iostream>
#include <memory>
#include <random>
#include <vector>

#include "sim/ctc_topology.hpp"
#include "sim/full_sum.hpp"
#include "sim/hmm_topology.hpp"
#include "tools/bench/bench_support.hpp"

namespace sprintrt::bench {

namespace {

using sim::row_matrix_f;

// Fixed, so that every run measures the same segments.
constexpr uint32_t seed = 20240601;

// One measured shape: T frames, D classes, L labels.
struct shape {
  Eigen::Index frames;
  Eigen::Index classes;
  size_t labels;
};

// The shapes of the issue: a small ASR-like segment (characters) and a longer
// one with a larger inventory.
const shape shapes[] = {{150, 28, 40}, {500, 100, 50}};

// Random labels in 1..D-1 (0 is the blank, or the silence), redrawn until CTC
// can align them in T frames: L plus one blank per repeated neighbour.
std::vector<uint32_t> random_labels(const shape& s, std::mt19937& rng) {
  std::uniform_int_distribution<uint32_t> label{1, static_cast<uint32_t>(s.classes - 1)};
  while (true) {
    std::vector<uint32_t> labels(s.labels);
    size_t needed = s.labels;
    for (size_t i = 0; i < s.labels; ++i) {
      labels[i] = label(rng);
      needed += i > 0 && labels[i] == labels[i - 1];
    }
    if (needed <= static_cast<size_t>(s.frames))
      return labels;
  }
}

// The baseline: one plain pass of what any trainer does per frame anyway,
// log_softmax of the activations and exp of the result.
void log_softmax_exp(const row_matrix_f& logits, row_matrix_f& log_posteriors,
                     row_matrix_f& posteriors) {
  for (Eigen::Index t = 0; t < logits.rows(); ++t) {
    const float max = logits.row(t).maxCoeff();
    const float log_norm = max + std::log((logits.row(t).array() - max).exp().sum());
    log_posteriors.row(t) = logits.row(t).array() - log_norm;
    posteriors.row(t) = log_posteriors.row(t).array().exp().matrix();
  }
}

nlohmann::json run_case(const sim::topology& topology, const shape& s, int repeat,
                        std::mt19937& rng) {
  const auto labels = random_labels(s, rng);
  auto automaton = topology.build("bench", labels);
  if (!automaton)
    throw std::runtime_error(render(automaton.error()));
  std::normal_distribution<float> normal{0.0f, 2.0f};
  row_matrix_f logits(s.frames, s.classes);
  for (Eigen::Index i = 0; i < logits.size(); ++i)
    logits.data()[i] = normal(rng);
  row_matrix_f log_posteriors(s.frames, s.classes);
  row_matrix_f posteriors(s.frames, s.classes);
  log_softmax_exp(logits, log_posteriors, posteriors);
  row_matrix_f error_signal(s.frames, s.classes);
  sim::full_sum_engine engine;
  sim::full_sum_result result;
  const auto full_sum = measure(repeat, [&] {
    auto computed = engine.loss_and_error_signal("bench", *automaton, log_posteriors, error_signal);
    if (!computed)
      throw std::runtime_error(render(computed.error()));
    result = *computed;
  });
  if (result.skipped)
    throw std::runtime_error("the benchmark segment was skipped");
  row_matrix_f baseline_lp(s.frames, s.classes);
  row_matrix_f baseline_p(s.frames, s.classes);
  const auto baseline = measure(repeat, [&] { log_softmax_exp(logits, baseline_lp, baseline_p); });
  return {
      {"topology", std::string{topology.name()}},
      {"T", s.frames},
      {"D", s.classes},
      {"L", s.labels},
      {"states", automaton->num_states()},
      {"edges", automaton->num_edges()},
      {"loss", result.loss},
      {"median_us", full_sum.median_us},
      {"min_us", full_sum.min_us},
      {"baseline_median_us", baseline.median_us},
      {"baseline_min_us", baseline.min_us},
      {"ratio", full_sum.median_us / baseline.median_us},
  };
}

void run_sim_bench(const bench_options& options) {
  sim::hmm_options hmm_options;
  hmm_options.silence_index = 0;
  auto hmm = sim::hmm_topology::make(hmm_options);
  if (!hmm)
    throw std::runtime_error(render(hmm.error()));
  const sim::ctc_topology ctc{0};
  const sim::topology* topologies[] = {&ctc, &*hmm};
  std::mt19937 rng{seed};
  std::vector<nlohmann::json> rows;
  for (const auto* topology : topologies)
    for (const auto& s : shapes)
      rows.push_back(run_case(*topology, s, options.repeat, rng));
  report(options, "sim",
         "sim: full-sum loss + error signal per segment, median of " +
             std::to_string(options.repeat) +
             " runs; baseline = one log_softmax+exp pass over the same [T, D]",
         {{"topology", "topology", 9},
          {"T", "T", 6},
          {"D", "D", 6},
          {"L", "L", 5},
          {"states", "states", 8},
          {"edges", "edges", 7},
          {"median_us", "median_us", 11},
          {"min_us", "min_us", 10},
          {"baseline_median_us", "baseline_us", 13},
          {"ratio", "ratio", 8}},
         rows);
}

} // namespace

void add_sim_bench(CLI::App& app) {
  auto options = std::make_shared<bench_options>();
  auto* command = app.add_subcommand(
      "sim", "full-sum (CTC, HMM) loss + error signal per segment at T=150,D=28,L=40 and "
             "T=500,D=100,L=50, against a log_softmax+exp baseline");
  add_common_options(*command, *options);
  command->callback([options] { run_sim_bench(*options); });
}

} // namespace sprintrt::bench
