// Figure g of `sprintrt-bench all`: a CTC batch (B=64, T=150, D=28) through
// the Python module's SprintInstancePool against the C++ facade
// `pool_client::compute` on the same batch and the same pool, in rounds that
// alternate between the two (scripts/bench/python_module.py; the C++ side is
// timed in C++, with no Python in its loop).

#include <string>
#include <vector>

#include "tools/bench/figure_runs.hpp"
#include "tools/bench/subprocess_json.hpp"

namespace sprintrt::bench {

namespace {

spread spread_from(const nlohmann::json& x) {
  return {x.at("median").get<double>(), x.at("min").get<double>(), x.at("max").get<double>(),
          x.at("runs").get<int>()};
}

} // namespace

std::vector<figure> python_figures(figure_context& cx) {
  const target goal{"<=", 1.05, true, "<= 1.05x (within 5%)"};
  const std::string title = "CTC batch (B=64, T=150, D=28) through the Python module, 2 workers";
  const std::string baseline = "the same batch through pool_client::compute (C++)";
  const int rounds = cx.options.quick ? 2 : 60;
  auto outcome =
      run_script(cx.options.python, "python3-numpy", cx.options.scripts + "/python_module.py",
                 {"--module-dir", cx.options.python_module, "--sprint-sim", cx.sprint_sim,
                  "--rounds", std::to_string(rounds)});
  if (!outcome.skipped.empty())
    return {skipped_figure("g", title, "ms/batch", baseline, goal, outcome.skipped)};
  figure g;
  g.id = "g";
  g.title = title;
  g.unit = "ms/batch";
  g.value = spread_from(outcome.result.at("python_ms"));
  g.baseline_name = baseline;
  g.baseline = spread_from(outcome.result.at("cpp_ms"));
  g.goal = goal;
  g.details = outcome.result;
  g.notes = {"scripts/bench/python_module.py: one pool of 2 sprint-sim children (CTC, 40 "
             "labels), RETURNN's per-batch path (get_global_instance, lock, "
             "get_batch_loss_and_error_signal with bytes "
             "tags) against Pool._time_facade (pool_client::compute timed in C++), "
             "alternating in 60 rounds of 5; ratio = Python / C++ (Python " +
             outcome.result.value("python", std::string{"?"}) + ")."};
  return {std::move(g)};
}

} // namespace sprintrt::bench
