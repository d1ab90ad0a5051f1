// The `sprintrt` command-line tool: one executable, one subcommand per job.
// Logs go to stderr (stdout is for results, e.g. --json), at the level of
// --log-level.

#include <iostream>

#include <CLI/CLI.hpp>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "tools/sprintrt/commands.hpp"

int main(int argc, char** argv) {
  CLI::App app{"sprintrt: sequence-training losses and error signals from Sprint workers"};
  app.require_subcommand(1);
  std::string log_level = "warn";
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error or off")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "critical", "off"}))
      ->capture_default_str();
  app.parse_complete_callback([&] {
    auto logger = spdlog::stderr_color_mt("sprintrt");
    logger->set_pattern("%Y-%m-%d %H:%M:%S.%e sprintrt %^%l%$: %v");
    spdlog::set_default_logger(logger);
    spdlog::set_level(spdlog::level::from_str(log_level));
  });
  int exit_code = 0;
  sprintrt::cli::add_automata_command(app, exit_code);
  sprintrt::cli::add_demo_command(app, exit_code);
  sprintrt::cli::add_doctor_command(app, exit_code);
  sprintrt::cli::add_loss_command(app, exit_code);
  sprintrt::cli::add_pickle_dump_command(app, exit_code);
  sprintrt::cli::add_serve_command(app, exit_code);
  CLI11_PARSE(app, argc, argv);
  return exit_code;
}
