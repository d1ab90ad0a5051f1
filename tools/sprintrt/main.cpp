// The `sprintrt` command-line tool: one executable, one subcommand per job.

#include <iostream>

#include <CLI/CLI.hpp>

#include "tools/sprintrt/commands.hpp"

int main(int argc, char** argv) {
  CLI::App app{"sprintrt: sequence-training losses and error signals from Sprint workers"};
  app.require_subcommand(1);
  int exit_code = 0;
  sprintrt::cli::add_doctor_command(app, exit_code);
  sprintrt::cli::add_pickle_dump_command(app, exit_code);
  CLI11_PARSE(app, argc, argv);
  return exit_code;
}
