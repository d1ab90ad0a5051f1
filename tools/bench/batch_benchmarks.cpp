// CPU-bound CTC batches through pools of 1, 2 (and 4) sprint-sim children,
// the criterion in this process and PyTorch's ctc_loss (BENCHMARKS.md, "CTC
// batches"); the Python module against the C++ facade on one CTC batch, both
// timed by scripts/bench/python_module.py in alternating rounds: the C++ side
// is a counter (cpp_ms) of the Python benchmark (BENCHMARKS.md, "The Python
// module").

#include <cmath>
#include <random>

#include "tools/bench/bench.hpp"

namespace sprintrt::bench {

namespace {

// A batch: its key (also its tags' prefix), its name and title, segments.
struct batch_spec {
  std::string key;
  std::string shape;
  std::string text;
  std::vector<int64_t> lengths;
  size_t dim;
  std::vector<std::vector<uint32_t>> labels;
};

// The batch, its corpus, the criterion in this process over copies of its
// segments, and the pools; every pool's losses must equal the serial ones.
struct ctc_rig {
  explicit ctc_rig(const batch_spec& spec) {
    std::vector<criterion::corpus_entry> entries;
    std::vector<std::string> tags;
    for (size_t b = 0; b < spec.lengths.size(); ++b) {
      tags.push_back("bench/" + spec.key + "-" + std::to_string(b));
      entries.push_back({tags.back(), spec.labels[b]});
    }
    corpus = std::make_unique<bench_corpus>(write_corpus(entries));
    data = random_batch(spec.lengths, tags, spec.dim, 7);
    serial_criterion = std::make_unique<sim::corpus_criterion>(load_criterion(corpus->path));
    for (size_t b = 0; b < spec.lengths.size(); ++b) {
      const auto frames = static_cast<size_t>(spec.lengths[b]);
      auto slice = segment_slice(data.log_posteriors, b, frames);
      segments.emplace_back(frames, spec.dim);
      for (size_t t = 0; t < frames; ++t)
        std::copy(slice.row(t), slice.row(t) + spec.dim, segments.back().row(t).data());
    }
    error_signal = criterion::row_matrix_f(data.log_posteriors.shape()[0], spec.dim);
    expected.resize(spec.lengths.size());
    serial();
  }

  void serial() {
    for (size_t b = 0; b < segments.size(); ++b)
      expected[b] = static_cast<float>(
          unwrap(serial_criterion->loss_and_error_signal(data.tags[b], segments[b],
                                                         error_signal.topRows(segments[b].rows())),
                 "criterion")
              .loss);
  }

  // The pool of `workers` children, started and warmed up on first use.
  pool_client& pool(size_t workers) {
    if (pools.size() < workers) {
      pools.resize(workers);
      reuse.resize(workers);
    }
    if (!pools[workers - 1]) {
      pools[workers - 1] =
          std::make_unique<pool_client>(world().runtime(), sim_options(corpus->path, workers));
      through(workers);
    }
    return *pools[workers - 1];
  }

  void through(size_t workers) {
    if (compute_reusing(pool(workers), data, reuse[workers - 1]) != expected)
      throw std::runtime_error("the pool's losses differ from the in-process ones");
  }

  std::unique_ptr<bench_corpus> corpus;
  batch data;
  std::unique_ptr<sim::corpus_criterion> serial_criterion;
  std::vector<criterion::row_matrix_f> segments;
  criterion::row_matrix_f error_signal;
  std::vector<float> expected;
  std::vector<std::unique_ptr<pool_client>> pools;
  std::vector<tensor> reuse;
};

// B segments of T=150, D=28, 40 random alignable labels each.
batch_spec uniform_batch(size_t batch) {
  std::mt19937 rng{20240601};
  const auto b = std::to_string(batch);
  batch_spec spec{"ctc",
                  "B:" + b + "/T:150/D:28/L:40",
                  "B=" + b + ", T=150, D=28, 40 labels",
                  std::vector<int64_t>(batch, 150),
                  28,
                  {}};
  for (size_t i = 0; i < batch; ++i)
    spec.labels.push_back(alignable_labels(40, spec.dim, 150, rng));
  return spec;
}

// 32 segments, 300 frames down to 20 (many short, few long), D=50, one
// label per 6 frames.
batch_spec skewed_batch() {
  constexpr size_t batch = 32;
  batch_spec spec{"skewed", "B:32/T:20-300/D:50", "B=32, T=300 down to 20, D=50", {}, 50, {}};
  for (size_t b = 0; b < batch; ++b) {
    const double x = static_cast<double>(batch - 1 - b) / (batch - 1);
    spec.lengths.push_back(20 + static_cast<int64_t>(std::lround(280 * x * x)));
    std::vector<uint32_t> labels;
    for (int64_t i = 0; i < std::max<int64_t>(1, spec.lengths.back() / 6); ++i)
      labels.push_back(1 + static_cast<uint32_t>((b * 7 + static_cast<size_t>(i) * 13) % 49));
    spec.labels.push_back(std::move(labels));
  }
  return spec;
}

std::string workers_name(const batch_spec& spec, size_t workers) {
  return "pool/ctc_batch/" + spec.shape + "/workers:" + std::to_string(workers);
}

// Registers the serial run and the pools of `workers` children.
void register_batch(const batch_spec& spec, const std::vector<size_t>& workers) {
  auto rig = [spec]() -> ctc_rig& {
    return world().rig<ctc_rig>(spec.key, [&] { return std::make_unique<ctc_rig>(spec); });
  };
  const std::string serial = "sim/criterion_serial/" + spec.shape;
  add_benchmark(serial, benchmark::kMillisecond, timing::manual, [rig](bench_state& state) {
    auto& r = rig();
    time_manually(state, [&] { r.serial(); });
  });
  for (size_t n : workers)
    add_benchmark(workers_name(spec, n), benchmark::kMillisecond, timing::manual,
                  [rig, n](bench_state& state) {
                    auto& r = rig();
                    r.pool(n);
                    time_manually(state, [&] { r.through(n); });
                  });
  declare_figure("CTC batch (" + spec.text +
                     ") through 1 worker, against the in-process serial criterion",
                 "ms/batch", workers_name(spec, 1), serial);
}

void torch_ctc(bench_state& state, size_t batch, size_t samples) {
  const auto result =
      run_script(state, "python3-torch", "torch_ctc.py",
                 {"--frames", "150", "--batch", std::to_string(batch), "--dim", "28", "--labels",
                  "40", "--threads", "2", "--repeat", std::to_string(samples)});
  if (!result)
    return;
  replay_samples(state, result->at("samples_ms"), 1e-3);
  state.SetLabel("torch " + result->value("torch", std::string{"?"}));
}

void module_batch(bench_state& state, size_t rounds, size_t per_round) {
  const auto& s = world().settings();
  const auto result =
      run_script(state, "python3-numpy", "python_module.py",
                 {"--module-dir", s.python_module, "--sprint-sim", s.sprint_sim, "--rounds",
                  std::to_string(rounds), "--per-round", std::to_string(per_round)});
  if (!result)
    return;
  const auto& python = result->at("python_ms");
  const auto& cpp = result->at("cpp_ms");
  size_t i = 0;
  double cpp_ms = 0;
  for (auto _ : state) {
    state.SetIterationTime(python.at(i % python.size()).get<double>() * 1e-3);
    cpp_ms += cpp.at(i % cpp.size()).get<double>();
    ++i;
  }
  state.counters["cpp_ms"] = benchmark::Counter(cpp_ms, benchmark::Counter::kAvgIterations);
  state.SetLabel("Python " + result->value("python", std::string{"?"}));
}

} // namespace

void register_batch_benchmarks() {
  const bool quick = world().settings().quick;
  const auto uniform = uniform_batch(quick ? 32 : 256);
  register_batch(uniform, {1, 2});
  declare_figure("CTC batch (" + uniform.text + ") through 2 workers, against 1 (x faster)",
                 "ms/batch", workers_name(uniform, 2), workers_name(uniform, 1), "baseline/value",
                 ">= 1.8");
  const size_t samples = quick ? 2 : 10;
  const std::string torch = "python/torch_ctc_loss/" + uniform.shape + "/torch_threads:2";
  add_benchmark(torch, benchmark::kMillisecond, timing::manual,
                [batch = uniform.lengths.size(), samples](bench_state& state) {
                  torch_ctc(state, batch, samples);
                })
      ->Iterations(static_cast<benchmark::IterationCount>(samples));
  declare_figure("CTC batch (" + uniform.text +
                     ") through 2 workers, against PyTorch's ctc_loss forward and backward on 2 "
                     "threads",
                 "ms/batch", workers_name(uniform, 2), torch, "value/baseline", "< 1", "ratio",
                 true);

  const auto skewed = skewed_batch();
  register_batch(skewed, {1, 2, 4});
  for (size_t n : {2, 4})
    declare_figure("CTC batch (" + skewed.text + ") through " + std::to_string(n) +
                       " workers, against 1 (x faster)",
                   "ms/batch", workers_name(skewed, n), workers_name(skewed, 1), "baseline/value");
}

void register_python_benchmarks() {
  // Each repetition runs the script once.
  const size_t rounds = world().settings().quick ? 1 : 6;
  const size_t per_round = world().settings().quick ? 2 : 5;
  const std::string name = "python/module_batch/B:64/T:150/D:28/L:40/workers:2";
  add_benchmark(name, benchmark::kMillisecond, timing::manual,
                [rounds, per_round](bench_state& state) { module_batch(state, rounds, per_round); })
      ->Iterations(static_cast<benchmark::IterationCount>(rounds * per_round));
  declare_figure("CTC batch (B=64, T=150, D=28) through the Python module, 2 workers, against "
                 "the same batch through pool_client::compute (C++)",
                 "ms/batch", name, name + "@cpp_ms", "value/baseline", "<= 1.05", "ratio", true);
}

} // namespace sprintrt::bench
