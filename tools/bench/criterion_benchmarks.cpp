// The simulated Sprint's criterion and full-sum passes for one segment,
// against log_softmax + exp (BENCHMARKS.md, "The simulated Sprint's
// criterion").

#include <cmath>
#include <random>

#include "criterion/ctc_topology.hpp"
#include "criterion/full_sum.hpp"
#include "criterion/hmm_topology.hpp"
#include "criterion/random_posteriors.hpp"
#include "tools/bench/bench.hpp"

namespace sprintrt::bench {

namespace {

using criterion::row_matrix_f;

constexpr uint32_t seed = 20240601;

struct shape {
  size_t frames;
  size_t dim;
  size_t labels;
};

row_matrix_f log_posteriors(const shape& s) {
  row_matrix_f lp(s.frames, s.dim);
  criterion::fill_random_log_posteriors(lp.data(), s.frames, s.dim, uint64_t{seed});
  return lp;
}

std::vector<uint32_t> labels_of(const shape& s) {
  std::mt19937 rng{seed};
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

// The sequence criteria's segment: a character-like inventory (40 labels and
// the blank), with a reference short enough for CTC at any one or two labels
// changed.
constexpr shape seq{100, 41, 12};
// The competing hypotheses of the file, besides the reference.
constexpr size_t hypotheses = 12;
// The segments the label n-gram is estimated from, the benchmarked one first.
constexpr size_t corpus_size = 20;

const std::string segment = "bench";

// The hypotheses file's lines: `hypotheses` distinct sequences, each
// `reference` with one or two labels changed (never to the blank), none the
// reference itself: near misses, as a lattice would hold.
std::string hypotheses_text(const std::vector<uint32_t>& reference) {
  std::mt19937 rng{seed + 1};
  std::uniform_int_distribution<size_t> position{0, reference.size() - 1};
  std::uniform_int_distribution<uint32_t> shift{1, static_cast<uint32_t>(seq.dim - 2)};
  std::bernoulli_distribution two{0.5};
  std::set<std::vector<uint32_t>> seen{reference};
  std::string text;
  while (seen.size() <= hypotheses) {
    auto h = reference;
    for (int changes = two(rng) ? 2 : 1; changes > 0; --changes) {
      auto& label = h[position(rng)];
      label = 1 + (label - 1 + shift(rng)) % static_cast<uint32_t>(seq.dim - 1);
    }
    if (!seen.insert(h).second)
      continue;
    text += segment + "\t";
    for (size_t i = 0; i < h.size(); ++i)
      text += (i == 0 ? "" : " ") + std::to_string(h[i]);
    text += "\n";
  }
  return text;
}

// Which denominator a sequence criterion runs over.
enum class denominator_kind { none, file, label_lm };

// The criterion sprint-sim would build for `kind` over the corpus (see
// sim/sprint_sim_config.cpp's make_criterion_spec): CTC with blank 0, scales
// 1, the boost `boost`, the denominator read or estimated once.
sim::corpus_criterion make_criterion(sim::criterion_kind kind, denominator_kind source,
                                     double boost) {
  std::mt19937 rng{seed};
  std::vector<criterion::corpus_entry> entries;
  for (size_t i = 0; i < corpus_size; ++i)
    entries.push_back({i == 0 ? segment : segment + "-" + std::to_string(i),
                       alignable_labels(seq.labels, seq.dim, seq.frames, rng)});
  auto files = write_corpus(entries);
  auto segments = unwrap(criterion::corpus::from_file(files.path), "corpus");
  auto topology = std::make_shared<criterion::ctc_topology>(0);
  sim::criterion_spec spec{kind};
  if (const auto sequence = sim::to_sequence_kind(kind)) {
    spec.scales.boost = boost;
    if (const auto problem = criterion::check_scales(*sequence, spec.scales); !problem.empty())
      throw std::runtime_error("scales: " + problem);
    criterion::denominator_options options;
    options.lm.order = 2;
    options.source = std::string{criterion::denominator_options::label_lm_value};
    if (source == denominator_kind::file) {
      options.source = files.dir.path() + "/hypotheses.txt";
      std::ofstream out{options.source};
      out << hypotheses_text(entries.front().labels);
      if (!out.flush())
        throw std::runtime_error("cannot write " + options.source);
    }
    spec.competitors = std::make_shared<const criterion::denominator>(unwrap(
        criterion::denominator::make(options, segments, *topology, spec.scales.lm), "denominator"));
  }
  return sim::corpus_criterion{std::move(segments), std::move(topology), std::move(spec)};
}

void sequence_criterion(bench_state& state, sim::criterion_kind kind, denominator_kind source,
                        double boost) {
  auto c = make_criterion(kind, source, boost);
  const auto lp = log_posteriors(seq);
  row_matrix_f error_signal(seq.frames, seq.dim);
  run_warm(state, [&] { // the FSA is cached and the workspaces grow once
    auto result = unwrap(c.loss_and_error_signal(segment, lp, error_signal), "criterion");
    if (result.skipped || !std::isfinite(result.loss))
      throw std::runtime_error("the benchmark segment was skipped");
    benchmark::DoNotOptimize(result.loss);
  });
  if (c.spec().competitors) {
    const auto view = unwrap(c.spec().competitors->lookup(segment), "denominator");
    state.counters["den_states"] = static_cast<double>(view.graph->num_states());
    state.counters["den_edges"] = static_cast<double>(view.graph->edges.size());
  }
}

void register_sequence_criteria() {
  const size_list sizes{{"T", seq.frames}, {"D", seq.dim}, {"L", seq.labels}};
  const std::string file = " over " + std::to_string(hypotheses) + " hypotheses from a file";
  const std::string lm = " over a label 2-gram of " + std::to_string(corpus_size) + " segments";
  struct variant {
    sim::criterion_kind kind;
    denominator_kind source;
    double boost;
    std::string name;
    std::string title;
  };
  // The baseline first: `full-sum` on the same segment, what a sequence
  // criterion replaces in a child.
  const std::vector<variant> variants{
      {sim::criterion_kind::full_sum, denominator_kind::none, 0, "full_sum", ""},
      {sim::criterion_kind::mmi, denominator_kind::file, 0, "mmi/hypotheses", "mmi" + file},
      {sim::criterion_kind::smbr, denominator_kind::file, 0, "smbr/hypotheses", "smbr" + file},
      {sim::criterion_kind::bmmi, denominator_kind::file, 0.5, "bmmi/hypotheses",
       "bmmi (boost 0.5)" + file},
      {sim::criterion_kind::mmi, denominator_kind::label_lm, 0, "mmi/label_lm", "mmi" + lm},
      {sim::criterion_kind::smbr, denominator_kind::label_lm, 0, "smbr/label_lm", "smbr" + lm},
  };
  const std::string baseline = "sim/sequence/full_sum/" + shape_name(sizes);
  for (const auto& v : variants) {
    const std::string name = "sim/sequence/" + v.name + "/" + shape_name(sizes);
    add_benchmark(name, benchmark::kMicrosecond, timing::cpu, [v](bench_state& state) {
      sequence_criterion(state, v.kind, v.source, v.boost);
    });
    // Over the 13 hypotheses, a denominator of about 13 times the
    // numerator's arcs: at most 15 times its full-sum.
    if (name != baseline)
      declare_figure("sim::criterion " + v.title + ", against its full-sum (CTC, " +
                         shape_text(sizes) + ")",
                     "us/segment", name, baseline, "value/baseline",
                     v.source == denominator_kind::file ? "<= 15" : "");
  }
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
  register_sequence_criteria();
}

} // namespace sprintrt::bench
