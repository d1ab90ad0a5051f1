// sprintrt-bench: micro-benchmarks of sprintrt's layers, one subcommand each.
// Not tests: they report times, they do not judge them.

#include <exception>
#include <iostream>

#include <CLI/CLI.hpp>

#include "tools/bench/figure_runs.hpp"
#include "tools/bench/pool_bench.hpp"
#include "tools/bench/protocol_bench.hpp"
#include "tools/bench/remote_bench.hpp"
#include "tools/bench/seqtrain_bench.hpp"
#include "tools/bench/sim_bench.hpp"

int main(int argc, char** argv) {
  CLI::App app{"sprintrt micro-benchmarks: per-layer timings (medians over --repeat runs)"};
  app.require_subcommand(1);
  sprintrt::bench::add_sim_bench(app);
  sprintrt::bench::add_protocol_bench(app);
  sprintrt::bench::add_pool_bench(app, argc > 0 ? argv[0] : "");
  sprintrt::bench::add_seqtrain_bench(app, argc > 0 ? argv[0] : "");
  sprintrt::bench::add_remote_bench(app);
  sprintrt::bench::add_all_bench(app, argc > 0 ? argv[0] : "");
  sprintrt::bench::add_large_rss_command(app, argc > 0 ? argv[0] : "");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const std::exception& e) {
    // Caught here so that the stack unwinds: children stopped, temporary
    // files removed.
    std::cerr << "sprintrt-bench: " << e.what() << '\n';
    return 1;
  }
  return 0;
}
