// The simulated Sprint's work for one segment, against one log_softmax + exp
// pass over the same [T, D] (what any trainer does per frame anyway): the
// criterion as sprint-sim runs it (corpus lookup, CTC automaton, full-sum
// loss and error signal), and the full-sum engine alone over a built CTC or
// HMM automaton, on its default path (the scaled linear-space pass, or log
// space where it falls back; the benchmark's label says which ran) and on
// the log-space reference.

#include <cmath>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "sim/ctc_topology.hpp"
#include "sim/full_sum.hpp"
#include "sim/hmm_topology.hpp"
#include "sim/random_posteriors.hpp"
#include "tools/bench/bench_support.hpp"
#include "tools/bench/benchmarks.hpp"
#include "tools/bench/figure_table.hpp"

namespace sprintrt::bench {

namespace {

using sim::row_matrix_f;

struct shape {
  size_t frames;
  size_t dim;
  size_t labels;
};

row_matrix_f log_posteriors(const shape& s) {
  row_matrix_f lp(s.frames, s.dim);
  sim::fill_random_log_posteriors(lp.data(), s.frames, s.dim, 20240601);
  return lp;
}

std::vector<uint32_t> labels_of(const shape& s) {
  std::mt19937 rng{20240601};
  return alignable_labels(s.labels, s.dim, s.frames, rng);
}

void log_softmax_exp(benchmark::State& state, const shape& s) {
  const auto logits = log_posteriors(s);
  row_matrix_f lp(s.frames, s.dim);
  row_matrix_f p(s.frames, s.dim);
  for (auto _ : state) {
    for (Eigen::Index t = 0; t < logits.rows(); ++t) {
      const float max = logits.row(t).maxCoeff();
      const float log_norm = max + std::log((logits.row(t).array() - max).exp().sum());
      lp.row(t) = logits.row(t).array() - log_norm;
      p.row(t) = lp.row(t).array().exp().matrix();
    }
    benchmark::DoNotOptimize(p.data());
    benchmark::ClobberMemory();
  }
}

void criterion(benchmark::State& state, const shape& s) {
  std::string text = "bench\t";
  for (auto label : labels_of(s))
    text += (text.back() == '\t' ? "" : " ") + std::to_string(label);
  auto corpus = unwrap(sim::corpus::from_string(text + "\n"), "corpus");
  sim::criterion c{std::move(corpus), std::make_shared<sim::ctc_topology>(0)};
  const auto lp = log_posteriors(s);
  row_matrix_f error_signal(s.frames, s.dim);
  for (auto _ : state)
    benchmark::DoNotOptimize(
        unwrap(c.loss_and_error_signal("bench", lp, error_signal), "criterion").loss);
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

void full_sum(benchmark::State& state, const sim::topology& topology, const shape& s,
              sim::full_sum_method method) {
  const auto automaton = unwrap(topology.build("bench", labels_of(s)), "automaton");
  const auto lp = log_posteriors(s);
  row_matrix_f error_signal(s.frames, s.dim);
  sim::full_sum_engine engine{method};
  auto once = [&] {
    auto result =
        unwrap(engine.loss_and_error_signal("bench", automaton, lp, error_signal), "full sum");
    if (result.skipped)
      throw std::runtime_error("the benchmark segment was skipped");
    benchmark::DoNotOptimize(result.loss);
  };
  once(); // the engine's workspaces grow once, as a worker's do
  for (auto _ : state)
    once();
  state.SetLabel(path_name(engine.last_path()));
  state.counters["states"] = static_cast<double>(automaton.num_states());
  state.counters["edges"] = static_cast<double>(automaton.num_edges());
}

} // namespace

void register_criterion_benchmarks() {
  // A small ASR-like segment (characters) and a longer one with a larger
  // inventory; the first is the CTC batch's segment.
  for (const shape s : {shape{150, 28, 40}, shape{500, 100, 50}}) {
    const std::string td = "T:" + std::to_string(s.frames) + "/D:" + std::to_string(s.dim);
    const std::string tdl = td + "/L:" + std::to_string(s.labels);
    const std::string text = "T=" + std::to_string(s.frames) + ", D=" + std::to_string(s.dim) +
                             ", L=" + std::to_string(s.labels);
    const std::string baseline = "baseline/log_softmax_exp/" + td;
    add_benchmark(baseline, [s](benchmark::State& state) {
      log_softmax_exp(state, s);
    })->Unit(benchmark::kMicrosecond);
    add_benchmark("sim/criterion/ctc/" + tdl, [s](benchmark::State& state) {
      criterion(state, s);
    })->Unit(benchmark::kMicrosecond);
    declare_figure("sim::criterion, CTC, one segment (" + text + ")", "us/segment",
                   "sim/criterion/ctc/" + tdl, baseline);
    for (const std::string topology : {"ctc", "hmm"}) {
      const std::string name = "sim/full_sum/" + topology;
      for (const auto method : {sim::full_sum_method::automatic, sim::full_sum_method::log_space})
        add_benchmark(
            name + (method == sim::full_sum_method::automatic ? "/default/" : "/log_space/") + tdl,
            [s, topology, method](benchmark::State& state) {
              if (topology == "ctc") {
                full_sum(state, sim::ctc_topology{0}, s, method);
                return;
              }
              sim::hmm_options options;
              options.silence_index = 0;
              full_sum(state, unwrap(sim::hmm_topology::make(options), "hmm"), s, method);
            })
            ->Unit(benchmark::kMicrosecond);
      declare_figure("full-sum " + topology + ", default path (" + text + ")", "us/segment",
                     name + "/default/" + tdl, baseline);
      declare_figure(
          "full-sum " + topology + ", default path against the log-space pass (" + text + ")",
          "us/segment", name + "/default/" + tdl, name + "/log_space/" + tdl, "baseline/value");
    }
  }
}

} // namespace sprintrt::bench
