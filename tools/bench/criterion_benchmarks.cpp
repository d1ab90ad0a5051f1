// The simulated Sprint's criterion and full-sum passes for one segment,
// against log_softmax + exp (BENCHMARKS.md, "The simulated Sprint's
// criterion").

#include <cmath>
#include <random>

#include "criterion/ctc_topology.hpp"
#include "criterion/full_sum.hpp"
#include "criterion/hmm_topology.hpp"
#include "criterion/random_posteriors.hpp"
#include "tools/bench/benchmarks.hpp"

namespace sprintrt::bench {

namespace {

using criterion::row_matrix_f;

struct shape {
  size_t frames;
  size_t dim;
  size_t labels;
};

row_matrix_f log_posteriors(const shape& s) {
  row_matrix_f lp(s.frames, s.dim);
  criterion::fill_random_log_posteriors(lp.data(), s.frames, s.dim, 20240601);
  return lp;
}

std::vector<uint32_t> labels_of(const shape& s) {
  std::mt19937 rng{20240601};
  return alignable_labels(s.labels, s.dim, s.frames, rng);
}

void log_softmax_exp(bench_state& state, const shape& s) {
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

void sim_criterion(bench_state& state, const shape& s) {
  std::string text = "bench\t";
  for (auto label : labels_of(s))
    text += (text.back() == '\t' ? "" : " ") + std::to_string(label);
  sim::corpus_criterion c{unwrap(criterion::corpus::from_string(text + "\n"), "corpus"),
                          std::make_shared<criterion::ctc_topology>(0)};
  const auto lp = log_posteriors(s);
  row_matrix_f error_signal(s.frames, s.dim);
  for (auto _ : state)
    benchmark::DoNotOptimize(
        unwrap(c.loss_and_error_signal("bench", lp, error_signal), "criterion").loss);
}

void full_sum(bench_state& state, const std::string& topology, const shape& s,
              criterion::full_sum_method method) {
  criterion::hmm_options hmm;
  hmm.silence_index = 0;
  const auto labels = labels_of(s);
  const auto automaton = unwrap(
      topology == "ctc" ? criterion::ctc_topology{0}.build("bench", labels)
                        : unwrap(criterion::hmm_topology::make(hmm), "hmm").build("bench", labels),
      "automaton");
  const auto lp = log_posteriors(s);
  row_matrix_f error_signal(s.frames, s.dim);
  criterion::full_sum_engine engine{method};
  run_warm(state, [&] { // the engine's workspaces grow once, as a worker's do
    auto result =
        unwrap(engine.loss_and_error_signal("bench", automaton, lp, error_signal), "full sum");
    if (result.skipped)
      throw std::runtime_error("the benchmark segment was skipped");
    benchmark::DoNotOptimize(result.loss);
  });
  // The default path is the scaled linear-space pass, or log space where it
  // falls back: the label says which ran.
  const auto path = engine.last_path();
  state.SetLabel(path == criterion::full_sum_path::scaled      ? "scaled"
                 : path == criterion::full_sum_path::log_space ? "log-space"
                                                               : "none");
  state.counters["states"] = static_cast<double>(automaton.num_states());
  state.counters["edges"] = static_cast<double>(automaton.num_edges());
}

} // namespace

void register_criterion_benchmarks() {
  for (const shape s : {shape{150, 28, 40}, shape{500, 100, 50}}) {
    const size_list sizes{{"T", s.frames}, {"D", s.dim}};
    const size_list with_labels{{"T", s.frames}, {"D", s.dim}, {"L", s.labels}};
    const std::string tdl = shape_name(with_labels);
    const std::string text = " (" + shape_text(with_labels) + ")";
    const std::string baseline = "baseline/log_softmax_exp/" + shape_name(sizes);
    add_benchmark(baseline, benchmark::kMicrosecond, timing::cpu,
                  [s](bench_state& state) { log_softmax_exp(state, s); });
    add_benchmark("sim/criterion/ctc/" + tdl, benchmark::kMicrosecond, timing::cpu,
                  [s](bench_state& state) { sim_criterion(state, s); });
    declare_figure("sim::criterion, CTC, one segment" + text, "us/segment",
                   "sim/criterion/ctc/" + tdl, baseline);
    for (const std::string topology : {"ctc", "hmm"}) {
      const std::string name = "sim/full_sum/" + topology;
      for (const auto method :
           {criterion::full_sum_method::automatic, criterion::full_sum_method::log_space})
        add_benchmark(
            name + (method == criterion::full_sum_method::automatic ? "/default/" : "/log_space/") +
                tdl,
            benchmark::kMicrosecond, timing::cpu,
            [=](bench_state& state) { full_sum(state, topology, s, method); });
      declare_figure("full-sum " + topology + ", default path" + text, "us/segment",
                     name + "/default/" + tdl, baseline);
      declare_figure("full-sum " + topology + ", default path against the log-space pass" + text,
                     "us/segment", name + "/default/" + tdl, name + "/log_space/" + tdl,
                     "baseline/value");
    }
  }
}

} // namespace sprintrt::bench
