// `sprintrt-bench all`: the issues' figures a-g with their baselines,
// targets and met/missed, as a table, JSON or markdown rows.

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "tools/bench/bench_support.hpp"
#include "tools/bench/figure_runs.hpp"

#ifndef SPRINTRT_BENCH_SCRIPTS
#define SPRINTRT_BENCH_SCRIPTS "scripts/bench"
#endif
#ifndef SPRINTRT_BENCH_PYTHON_MODULE
#define SPRINTRT_BENCH_PYTHON_MODULE "build/python"
#endif

namespace sprintrt::bench {

bool all_options::runs(const std::string& letter) const {
  return only.empty() || std::find(only.begin(), only.end(), letter) != only.end();
}

namespace {

std::string this_program(const std::string& argv0) {
  std::error_code ec;
  auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec)
    self = std::filesystem::absolute(argv0, ec);
  return self.string();
}

void run_all(const all_options& o, const std::string& argv0) {
  // Forked first, while this process has a single thread.
  pipe_echo sf_echo{echo_kind::store_and_forward};
  // Log lines (warnings only) go to stderr, never into the table or JSON.
  spdlog::set_default_logger(spdlog::stderr_color_mt("sprintrt-bench"));
  spdlog::set_level(spdlog::level::warn);
  const auto start = std::chrono::steady_clock::now();
  const std::string load_before = machine_load();
  pipe_echo cat_echo{echo_kind::cat};
  bench_runtime live;
  figure_context cx{
      o, find_sprint_sim(o.sprint_sim, argv0), this_program(argv0), sf_echo, cat_echo, live};
  std::vector<figure> figures;
  auto add = [&figures](std::vector<figure> more) {
    for (auto& f : more)
      figures.push_back(std::move(f));
  };
  if (o.runs("a") || o.runs("b") || o.runs("c"))
    add(transport_figures(cx, o.runs("a"), o.runs("b"), o.runs("c")));
  if (o.runs("d"))
    add(large_figures(cx));
  if (o.runs("e"))
    add(ctc_figures(cx));
  if (o.runs("f"))
    add(seqtrain_figures(cx));
  if (o.runs("g"))
    add(python_figures(cx));
  live.stop();
  std::stable_sort(figures.begin(), figures.end(),
                   [](const figure& x, const figure& y) { return x.id[0] < y.id[0]; });
  const std::vector<std::string> notes{
      std::string{"ratio: value / baseline, or baseline / value where it reads \"x faster\" "
                  "(speedups, the fraction of the pipe limit); the status compares the ratio "
                  "of the medians (or, for page faults, the median) with the target."} +
          (o.quick ? " --quick: few repeats and small counts (smoke test), not for the record."
                   : ""),
      "machine at the start: " + load_before + "; at the end: " + machine_load() + "; took " +
          format_fixed(micros_since(start) / 1e6, 1) + " s."};
  print_figures({o.json, o.markdown, o.quick, o.json_file}, figures, notes);
}

} // namespace

void add_all_bench(CLI::App& app, std::string argv0) {
  auto options = std::make_shared<all_options>();
  options->scripts = SPRINTRT_BENCH_SCRIPTS;
  options->python_module = SPRINTRT_BENCH_PYTHON_MODULE;
  auto* command = app.add_subcommand(
      "all",
      "the issues' figures a-g, each against a baseline from the same run, with its "
      "target: small-segment transport (a), one tiny segment (b), RETURNN's Python parent "
      "(c), 48 MB segments, page faults and peak RSS (d), a CTC batch over 1 and 2 "
      "workers and PyTorch (e), the seqtrain scheduler's cost (f), the Python module against "
      "the C++ facade (g)");
  command->add_flag("--quick", options->quick, "few repeats, small counts (the smoke test)");
  command->add_flag("--json", options->json, "print one JSON document");
  command->add_flag("--markdown", options->markdown, "print the table as markdown rows");
  command->add_option("--json-out", options->json_file,
                      "also write the JSON document to this file");
  command->add_option("--only", options->only, "run only these groups")
      ->check(CLI::IsMember({"a", "b", "c", "d", "e", "f", "g"}));
  command->add_option("--sprint-sim", options->sprint_sim,
                      "the sprint-sim executable [<dir of this program>/../sprint-sim/sprint-sim]");
  command->add_option("--python", options->python, "Python with NumPy (c, g) and PyTorch (e)")
      ->capture_default_str();
  command
      ->add_option("--python-module", options->python_module,
                   "the directory holding the Python package sprintrt (g)")
      ->capture_default_str();
  command->add_option("--scripts", options->scripts, "the directory of the comparison scripts")
      ->capture_default_str();
  command->callback([options, argv0 = std::move(argv0)] { run_all(*options, argv0); });
}

} // namespace sprintrt::bench
