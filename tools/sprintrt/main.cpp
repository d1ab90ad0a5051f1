// The `sprintrt` command-line tool: one executable, one subcommand per job.
// Logs go to stderr (stdout is for results, e.g. --json), at the level of
// --log-level, which may come before or after the subcommand.

#include <iostream>

#include <CLI/CLI.hpp>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "sprintrt/logging.hpp"
#include "sprintrt/version.hpp"
#include "tools/sprintrt/commands.hpp"

namespace {

/// Exit status of a bare `sprintrt`: it did nothing, which a script must not
/// take for success.
constexpr int no_command_status = 1;

/// The level names, the same as the Python module's `set_log_level`.
const std::vector<std::string> level_names{"trace", "debug", "info",     "warning",
                                           "warn",  "error", "critical", "off"};

spdlog::level::level_enum level_of(const std::string& name) {
  // spdlog reads an unknown name as off; the names were checked already.
  return spdlog::level::from_str(name == "warning" ? "warn" : name);
}

} // namespace

int main(int argc, char** argv) {
  CLI::App app{"sprintrt: sequence-training losses and error signals from Sprint workers"};
  app.require_subcommand(0, 1);
  // Subcommands pass options they do not know to the tool: --log-level
  // after the subcommand.
  app.fallthrough();
  app.set_version_flag("--version", std::string{"sprintrt "} + sprintrt::version,
                       "Print sprintrt's version and exit");
  std::string log_level = "warning";
  app.add_option("--log-level", log_level,
                 "Level of the logs on stderr: trace, debug, info, warning (or warn), error, "
                 "critical or off")
      ->check(CLI::IsMember(level_names))
      ->capture_default_str();
  app.parse_complete_callback([&] {
    auto logger = spdlog::stderr_color_mt("sprintrt");
    logger->set_pattern("%Y-%m-%d %H:%M:%S.%e sprintrt %^%l%$: %v");
    spdlog::set_default_logger(logger);
    sprintrt::set_logger(logger);
    spdlog::set_level(level_of(log_level));
  });
  int exit_code = 0;
  sprintrt::cli::add_automata_command(app, exit_code);
  sprintrt::cli::add_demo_command(app, exit_code);
  sprintrt::cli::add_doctor_command(app, exit_code);
  sprintrt::cli::add_first_run_command(app, exit_code);
  sprintrt::cli::add_loss_command(app, exit_code);
  sprintrt::cli::add_pickle_dump_command(app, exit_code);
  sprintrt::cli::add_record_command(app, exit_code);
  sprintrt::cli::add_serve_command(app, exit_code);
  CLI11_PARSE(app, argc, argv);
  if (app.get_subcommands().empty()) {
    std::cout << app.help();
    return no_command_status;
  }
  return exit_code;
}
