// sprintrt-bench: micro-benchmarks of sprintrt's layers, one subcommand each.
// Not tests: they report times, they do not judge them.

#include <CLI/CLI.hpp>

#include "tools/bench/sim_bench.hpp"

int main(int argc, char** argv) {
  CLI::App app{"sprintrt micro-benchmarks: per-layer timings (medians over --repeat runs)"};
  app.require_subcommand(1);
  sprintrt::bench::add_sim_bench(app);
  CLI11_PARSE(app, argc, argv);
  return 0;
}
