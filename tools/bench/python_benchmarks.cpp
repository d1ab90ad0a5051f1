// The Python module against the C++ facade on one CTC batch, both timed by
// scripts/bench/python_module.py in alternating rounds: the C++ side is a
// counter (cpp_ms) of the Python benchmark (BENCHMARKS.md, "The Python module").

#include "tools/bench/benchmarks.hpp"
#include "tools/bench/child_program.hpp"

namespace sprintrt::bench {

namespace {

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
