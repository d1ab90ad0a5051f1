// sprintrt-bench: every benchmark of sprintrt under Google Benchmark (its own
// flags select, repeat and write them) with sprintrt's flags in `usage`
// (BENCHMARKS.md, "Running them"); `--helper=...` runs one of the helper
// processes the benchmarks start.

#include <exception>
#include <filesystem>
#include <iostream>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "process/child_spawn.hpp"
#include "sprintrt/logging.hpp"
#include "tools/bench/bench.hpp"

#ifndef SPRINTRT_BENCH_SCRIPTS
#define SPRINTRT_BENCH_SCRIPTS "scripts/bench"
#endif
#ifndef SPRINTRT_BENCH_PYTHON_MODULE
#define SPRINTRT_BENCH_PYTHON_MODULE "build/python"
#endif

namespace {

using namespace sprintrt::bench;

const char* usage = "sprintrt-bench [--quick] [--sprint-sim=PATH] [--python=PATH] "
                    "[--scripts=DIR] [--python-module=DIR] [Google Benchmark's flags]\n";

// Takes sprintrt-bench's flags out of `argv` into `s`; returns the rest.
std::vector<std::string> parse_settings(int argc, char** argv, bench_settings& s) {
  const std::pair<std::string, std::string bench_settings::*> flags[] = {
      {"--sprint-sim=", &bench_settings::sprint_sim},
      {"--python=", &bench_settings::python},
      {"--scripts=", &bench_settings::scripts},
      {"--python-module=", &bench_settings::python_module}};
  std::vector<std::string> rest;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    bool known = arg == "--quick";
    s.quick = s.quick || known;
    for (const auto& [prefix, member] : flags)
      if (!known && arg.compare(0, prefix.size(), prefix) == 0) {
        s.*member = arg.substr(prefix.size());
        known = true;
      }
    if (!known)
      rest.push_back(arg);
  }
  if (s.sprint_sim.empty())
    s.sprint_sim =
        (std::filesystem::path{s.self}.parent_path() / ".." / "sprint-sim" / "sprint-sim")
            .lexically_normal()
            .string();
  return rest;
}

int run_helper(const std::string& mode, const std::vector<std::string>& args,
               const bench_settings& s) {
  if (mode == "pipe-echo")
    return serve_pipe_echo();
  if (mode == "remote-echo")
    return run_remote_echo_helper();
  if (mode == "large-rss") {
    bench_world w{s};
    return run_large_rss_helper(args);
  }
  std::cerr << "sprintrt-bench: unknown helper " << mode << '\n';
  return 2;
}

} // namespace

int main(int argc, char** argv) {
  bench_settings settings;
  std::error_code ec;
  settings.self = std::filesystem::read_symlink("/proc/self/exe", ec).string();
  if (ec)
    settings.self = std::filesystem::absolute(argv[0], ec).string();
  settings.scripts = SPRINTRT_BENCH_SCRIPTS;
  settings.python_module = SPRINTRT_BENCH_PYTHON_MODULE;
  // Log lines (warnings only) go to stderr, never into the benchmark output.
  spdlog::set_default_logger(spdlog::stderr_color_mt("sprintrt-bench"));
  spdlog::set_level(spdlog::level::warn);
  sprintrt::set_logger(spdlog::default_logger());
  try {
    if (argc > 1 && std::string{argv[1]}.compare(0, 9, "--helper=") == 0) {
      // Its positional arguments after the flags, which go into `settings`.
      auto rest = parse_settings(argc - 1, argv + 1, settings);
      return run_helper(std::string{argv[1]}.substr(9), rest, settings);
    }
    // The figures go into the context only when it is written as JSON (the
    // input of figures.py), not onto the console's first lines.
    bool json = false;
    for (int i = 1; i < argc; ++i) {
      const std::string arg = argv[i];
      if (arg == "--help")
        std::cout << usage;
      json =
          json || arg.compare(0, 16, "--benchmark_out=") == 0 || arg == "--benchmark_format=json";
    }
    benchmark::Initialize(&argc, argv);
    const auto rest = parse_settings(argc, argv, settings);
    if (!rest.empty()) {
      std::cerr << "sprintrt-bench: unknown argument " << rest.front() << "\n" << usage;
      return 2;
    }
    if (auto err = sprintrt::process::check_executable(settings.sprint_sim)) {
      std::cerr << "sprintrt-bench: sprint-sim not found (" << sprintrt::render(err)
                << "); build the sprint-sim target or pass --sprint-sim=PATH\n";
      return 2;
    }
    bench_world w{settings};
    for (auto family :
         {register_codec_benchmarks, register_criterion_benchmarks, register_engine_benchmarks,
          register_transport_benchmarks, register_large_segment_benchmarks,
          register_batch_benchmarks, register_seqtrain_benchmarks, register_cancel_benchmarks,
          register_remote_benchmarks, register_python_benchmarks})
      family();
    if (json)
      publish_figures();
    benchmark::AddCustomContext("sprintrt_quick", settings.quick ? "true" : "false");
    benchmark::RunSpecifiedBenchmarks();
    // Before main returns: every child stopped and reaped, files removed.
    w.stop();
    benchmark::Shutdown();
  } catch (const std::exception& e) {
    std::cerr << "sprintrt-bench: " << e.what() << '\n';
    return 1;
  }
  return benchmark_failures() == 0 ? 0 : 1;
}
