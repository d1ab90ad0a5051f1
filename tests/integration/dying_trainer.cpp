// A trainer for the test of what happens to Sprint children when their
// trainer dies (trainer_death_test.cpp): it computes one batch of two
// segments on two sprint-sim children that never answer (fault=hang),
// prints "PIDS <pid> <pid>" on stdout once both children run, and waits to
// be killed.
//
//   sprintrt-dying-trainer SPRINT_SIM CORPUS SEGMENT_0 SEGMENT_1
//
// Exit status 2 for bad arguments, 3 if the children did not appear.

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include "sprintrt/pool_client.hpp"
#include "sprintrt/sprint_runtime.hpp"
#include "tests/support/process_checks.hpp"

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: %s SPRINT_SIM CORPUS SEGMENT_0 SEGMENT_1\n", argv[0]);
    return 2;
  }
  const nlohmann::json json = {
      {"sprintExecPath", argv[1]},
      {"sprintConfigStr",
       {std::string{"--*.corpus="} + argv[2], "--*.topology=ctc", "--*.fault=hang"}},
      {"numInstances", 2},
  };
  // Stdout is for the pids alone.
  spdlog::set_default_logger(spdlog::stderr_logger_mt("stderr"));
  auto opts = sprintrt::parse_options(json.dump());
  if (!opts) {
    std::fprintf(stderr, "%s\n", sprintrt::render(opts.error()).c_str());
    return 2;
  }
  // Never destroyed: the process ends by a signal.
  auto* rt = new sprintrt::sprint_runtime;
  auto* client = new sprintrt::pool_client{*rt, *opts};
  constexpr size_t frames = 12, dim = 5;
  std::vector<float> uniform(frames * 2 * dim, static_cast<float>(-std::log(double{dim})));
  sprintrt::batch b;
  b.log_posteriors = *sprintrt::tensor::from_vector(std::move(uniform), {frames, 2, dim});
  b.seq_lengths = {frames, frames};
  b.tags = {argv[3], argv[4]};
  std::thread{[client, b = std::move(b)]() mutable {
    (void)client->compute(std::move(b));
  }}.detach();
  for (int i = 0; i < 2000; ++i) {
    auto children = sprintrt::test::child_processes();
    if (children.size() == 2) {
      std::printf("PIDS %d %d\n", static_cast<int>(children[0].pid),
                  static_cast<int>(children[1].pid));
      std::fflush(stdout);
      for (;;)
        ::pause();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds{10});
  }
  return 3;
}
