// The simulated Sprint's MMI, boosted MMI and sMBR for one segment, against
// its full-sum (BENCHMARKS.md, "The simulated Sprint's sequence criteria").

#include <cmath>
#include <fstream>
#include <random>
#include <set>

#include "criterion/ctc_topology.hpp"
#include "criterion/denominator.hpp"
#include "criterion/random_posteriors.hpp"
#include "tools/bench/benchmarks.hpp"

namespace sprintrt::bench {

namespace {

// One segment of a character-like inventory (40 labels and the blank), with a
// reference short enough for CTC at any one or two labels changed.
constexpr size_t frames = 100;
constexpr size_t dim = 41;
constexpr size_t labels = 12;
// The competing hypotheses of the file, besides the reference.
constexpr size_t hypotheses = 12;
// The segments the label n-gram is estimated from, the benchmarked one first.
constexpr size_t corpus_size = 20;
constexpr uint32_t seed = 20240601;

const std::string segment = "bench";

// The hypotheses file's lines: `hypotheses` distinct sequences, each
// `reference` with one or two labels changed (never to the blank), none the
// reference itself: near misses, as a lattice would hold.
std::string hypotheses_text(const std::vector<uint32_t>& reference) {
  std::mt19937 rng{seed + 1};
  std::uniform_int_distribution<size_t> position{0, reference.size() - 1};
  std::uniform_int_distribution<uint32_t> shift{1, static_cast<uint32_t>(dim - 2)};
  std::bernoulli_distribution two{0.5};
  std::set<std::vector<uint32_t>> seen{reference};
  std::string text;
  while (seen.size() <= hypotheses) {
    auto h = reference;
    for (int changes = two(rng) ? 2 : 1; changes > 0; --changes) {
      auto& label = h[position(rng)];
      label = 1 + (label - 1 + shift(rng)) % static_cast<uint32_t>(dim - 1);
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
                       alignable_labels(labels, dim, frames, rng)});
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
  criterion::row_matrix_f lp(frames, dim);
  criterion::fill_random_log_posteriors(lp.data(), frames, dim, uint64_t{seed});
  criterion::row_matrix_f error_signal(frames, dim);
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

} // namespace

void register_sequence_criterion_benchmarks() {
  const size_list sizes{{"T", frames}, {"D", dim}, {"L", labels}};
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
    if (name != baseline)
      declare_figure("sim::criterion " + v.title + ", against its full-sum (CTC, " +
                         shape_text(sizes) + ")",
                     "us/segment", name, baseline);
  }
}

} // namespace sprintrt::bench
