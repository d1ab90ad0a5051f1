// sprint-sim: a simulated Sprint executable. It takes the arguments a parent
// gives real RASR (docs/protocol.md section 1) plus its own (sim/sprint_sim_parameters.hpp),
// serves the Sprint control protocol on the two inherited pipes with a real
// full-sum criterion, and can inject faults so that a parent's failure handling
// is testable. It never touches stdin and writes to stdout only for --help and --version:
// everything it has to say goes to stderr, one line each, prefixed "sprint-sim[pid]".

#include <unistd.h>

#include <csignal>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include <spdlog/sinks/stdout_sinks.h>

#include <spdlog/spdlog.h>

#include "common/shared_region.hpp"
#include "criterion/corpus.hpp"
#include "sim/corpus_criterion.hpp"
#include "sim/fault_injection.hpp"
#include "sim/sprint_service.hpp"
#include "sim/sprint_sim_config.hpp"
#include "sim/sprint_sim_exit.hpp"
#include "sim/sprint_sim_parameters.hpp"
#include "sprintrt/logging.hpp"
#include "sprintrt/version.hpp"
#include "tools/sprint-sim/pipe_io.hpp"
#include "tools/sprint-sim/pipe_server.hpp"

namespace {

using namespace sprintrt;
using sim::sprint_sim_exit;

/// What `--help` prints between the usage line and the parameters.
constexpr const char* about = R"(
A simulated Sprint (RASR) worker: it serves the Sprint PythonControl pipe
protocol on the two pipes of --*.pymod-config with real criteria: full-sum,
and MMI, boosted MMI and sMBR over a denominator (docs/sequence-training.md).
A parent (sprintrt, RETURNN) starts it; run by hand it needs those pipes.
Only the name after the last '.' of a key counts (--*.corpus, --corpus).
Defaults are in brackets.

)";

/// What `--help` prints after the parameters.
constexpr const char* closing =
    "\nOther parameters are accepted with a warning, as real Sprint configs pass many.\n";

/// Logs to stderr only, every line flushed at once (a parent keeps the tail
/// of a failing child's stderr).
void set_up_logging(spdlog::level::level_enum level) {
  auto logger = spdlog::stderr_logger_mt("sprint-sim");
  logger->set_pattern("%Y-%m-%d %H:%M:%S.%e sprint-sim[%P] %l: %v");
  logger->set_level(level);
  logger->flush_on(spdlog::level::trace);
  spdlog::set_default_logger(logger);
  sprintrt::set_logger(logger);
}

int status(sprint_sim_exit code) {
  return static_cast<int>(code);
}

int fail(const std::string& what, const caf::error& err) {
  spdlog::error("{}: {}", what, render(err));
  return status(sprint_sim_exit::failure);
}

int run(const sim::sprint_sim_config& config) {
  auto fault_options = config.faults;
  // A restarted child draws its random faults anew.
  fault_options.seed ^= static_cast<uint64_t>(::getpid()) * 0x9e3779b97f4a7c15ull;
  sim::fault_injector faults{fault_options};
  if (faults.exits_at_start()) {
    spdlog::warn("fault injection: exiting with status {} at start",
                 status(sprint_sim_exit::exit_at_start));
    return status(sprint_sim_exit::exit_at_start);
  }
  const auto& pipes = config.python_control;
  if (auto err = sim_tool::prepare_pipe_end(pipes.p2c_fd, sim_tool::pipe_direction::read, "p2c_fd"))
    return fail("pymod-config", err);
  if (auto err =
          sim_tool::prepare_pipe_end(pipes.c2p_fd, sim_tool::pipe_direction::write, "c2p_fd"))
    return fail("pymod-config", err);
  auto corpus = criterion::corpus::from_file(config.corpus_path);
  if (!corpus)
    return fail("corpus", corpus.error());
  auto topology = sim::make_topology(config);
  if (!topology)
    return fail("topology", topology.error());
  auto spec = sim::make_criterion_spec(config, *corpus, **topology);
  if (!spec)
    return fail("denominator", spec.error());
  if (spec->competitors)
    spdlog::info("denominator: {}", spec->competitors->description());
  auto options = config.service;
  options.init_reply_version = faults.init_reply_version();
  options.claim_shared_memory = faults.claims_region();
  // The shared region sprintrt offers (docs/protocol.md section 7): taken if
  // it is what it must be, else the pipes serve everything.
  std::optional<shared_region> region;
  if (pipes.shared_memory_fd) {
    auto attached = shared_region::attach(*pipes.shared_memory_fd);
    if (attached)
      region = std::move(*attached);
    else
      spdlog::warn("not using the shared region: {}", render(attached.error()));
  }

  spdlog::info("serving {} segments of '{}' with the {} topology, criterion {}, {} framing, on "
               "fds {} (read) and {} (write)",
               corpus->size(), config.corpus_path, (*topology)->name(),
               sim::to_string(config.criterion), protocol::to_string(options.wire.framing),
               pipes.p2c_fd, pipes.c2p_fd);
  sim::sprint_service service{
      sim::corpus_criterion{std::move(*corpus), std::move(*topology), std::move(*spec)},
      std::move(options)};
  if (region)
    service.use_shared_region(&*region);
  sim_tool::pipe_server server{pipes.p2c_fd, pipes.c2p_fd, service, faults};
  return status(server.run());
}

} // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + (argc > 0 ? 1 : 0), argv + argc);
  for (const auto& arg : args) {
    if (arg == "--help" || arg == "-h") {
      std::cout << sim::sim_usage() << about << sim::sim_parameters_help() << closing;
      return 0;
    }
    if (arg == "--version") {
      std::cout << "sprint-sim " << sprintrt::version << "\n";
      return 0;
    }
  }
  auto config = sim::parse_sprint_sim_config(args);
  if (!config) {
    std::cerr << "sprint-sim: " << error_message(config.error()) << "\n"
              << sim::sim_usage() << "(sprint-sim --help lists the parameters)\n";
    return status(sprint_sim_exit::failure);
  }
  set_up_logging(config->log_level);
  for (const auto& warning : config->warnings)
    spdlog::warn("{}", warning);
  // A parent that goes away shows as EPIPE on write, which we log, rather
  // than as a silent death by SIGPIPE.
  std::signal(SIGPIPE, SIG_IGN);
  return run(*config);
}
