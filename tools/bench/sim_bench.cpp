#include "tools/bench/sim_bench.hpp"

#include <algorithm>
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

// Runs per block of one measurement (see run_case).
constexpr int block_runs = 10;

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

const char* path_name(sim::full_sum_path path) {
  switch (path) {
  case sim::full_sum_path::scaled:
    return "scaled";
  case sim::full_sum_path::log_space:
    return "log-space";
  case sim::full_sum_path::none:
    break;
  }
  return "none";
}

// Two rows for one segment: the engine's default (the scaled pass, or the
// log-space one where it falls back) and the log-space reference. The three
// measurements alternate in blocks of `block_runs` runs, each block after one
// untimed run: warm, as a worker computing segment after segment is, and
// spread alike over a noisy machine's quiet and busy moments.
std::vector<nlohmann::json> run_case(const sim::topology& topology, const shape& s, int repeat,
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
  row_matrix_f baseline_lp(s.frames, s.classes);
  row_matrix_f baseline_p(s.frames, s.classes);
  sim::full_sum_engine fast;
  sim::full_sum_engine reference{sim::full_sum_method::log_space};
  const auto compute = [&](sim::full_sum_engine& engine) {
    auto computed = engine.loss_and_error_signal("bench", *automaton, log_posteriors, error_signal);
    if (!computed)
      throw std::runtime_error(render(computed.error()));
    if (computed->skipped)
      throw std::runtime_error("the benchmark segment was skipped");
    return computed->loss;
  };
  const double fast_loss = compute(fast);
  const double reference_loss = compute(reference);
  log_softmax_exp(logits, baseline_lp, baseline_p);
  std::vector<double> fast_us;
  std::vector<double> reference_us;
  std::vector<double> baseline_us;
  const auto baseline_pass = [&] { log_softmax_exp(logits, baseline_lp, baseline_p); };
  for (int done = 0; done < repeat; done += block_runs) {
    const auto runs = static_cast<size_t>(std::min(block_runs, repeat - done));
    compute(fast);
    time_each(runs, fast_us, [&] { compute(fast); });
    compute(reference);
    time_each(runs, reference_us, [&] { compute(reference); });
    baseline_pass();
    time_each(runs, baseline_us, baseline_pass);
  }
  const auto fast_timing = summarize(fast_us);
  const auto reference_timing = summarize(reference_us);
  const auto baseline = summarize(baseline_us);
  const auto row = [&](const char* path, double loss, const timing& t) {
    return nlohmann::json{
        {"topology", std::string{topology.name()}},
        {"T", s.frames},
        {"D", s.classes},
        {"L", s.labels},
        {"states", automaton->num_states()},
        {"edges", automaton->num_edges()},
        {"path", path},
        {"loss", loss},
        {"median_us", t.median_us},
        {"min_us", t.min_us},
        {"baseline_median_us", baseline.median_us},
        {"baseline_min_us", baseline.min_us},
        {"ratio", t.median_us / baseline.median_us},
        {"speedup", reference_timing.median_us / t.median_us},
    };
  };
  return {row(path_name(fast.last_path()), fast_loss, fast_timing),
          row("log-space", reference_loss, reference_timing)};
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
      for (auto& row : run_case(*topology, s, options.repeat, rng))
        rows.push_back(std::move(row));
  section table{"sim",
                "sim: full-sum loss + error signal per segment, median of " +
                    std::to_string(options.repeat) +
                    " runs; baseline = one log_softmax+exp pass over the same [T, D]",
                {{"topology", "topology", 9},
                 {"T", "T", 6},
                 {"D", "D", 6},
                 {"L", "L", 5},
                 {"states", "states", 8},
                 {"edges", "edges", 7},
                 {"path", "path", 11},
                 {"median_us", "median_us", 11},
                 {"min_us", "min_us", 10},
                 {"baseline_median_us", "baseline_us", 13},
                 {"ratio", "ratio", 8},
                 {"speedup", "speedup", 9}},
                rows,
                {"path: the recursions that ran: the engine's default (scaled linear space, or "
                 "log-space where it falls back), then the log-space reference",
                 "ratio = median / baseline median; speedup = log-space median / median (the three "
                 "alternate in warm blocks of " +
                     std::to_string(block_runs) + " runs)",
                 "machine: " + machine_load()}};
  report(options, "sim", {table});
}

} // namespace

void add_sim_bench(CLI::App& app) {
  auto options = std::make_shared<bench_options>();
  auto* command = app.add_subcommand(
      "sim", "full-sum (CTC, HMM) loss + error signal per segment at T=150,D=28,L=40 and "
             "T=500,D=100,L=50: the scaled pass and the log-space reference, against a "
             "log_softmax+exp baseline");
  add_common_options(*command, *options);
  command->callback([options] { run_sim_bench(*options); });
}

} // namespace sprintrt::bench
