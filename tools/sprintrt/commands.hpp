#pragma once

/// @file
/// The subcommands of the `sprintrt` tool. Each lives in its own file and
/// registers itself on the application; its callback runs the command and
/// leaves the process exit code in `exit_code`.

#include <CLI/CLI.hpp>

namespace sprintrt::cli {

/// `sprintrt pickle-dump FILE [--framing F]`: decodes captured pipe traffic.
void add_pickle_dump_command(CLI::App& app, int& exit_code);

/// `sprintrt loss --config ... --log-posteriors LP.npy --seq-lengths LEN.npy
/// --tags TAGS.txt --loss-out LOSS.npy --error-signal-out ES.npy [--json]`.
void add_loss_command(CLI::App& app, int& exit_code);

/// `sprintrt automata --config ... --tags TAGS.txt --out-dir DIR [--json]`.
void add_automata_command(CLI::App& app, int& exit_code);

/// `sprintrt demo [--workers N] [--epochs E] ...`: the built-in training run.
void add_demo_command(CLI::App& app, int& exit_code);

/// `sprintrt doctor --config OPTIONS.json [--segment S --frames T --dim D]`:
/// checks a Sprint set-up step by step.
void add_doctor_command(CLI::App& app, int& exit_code);

/// `sprintrt first-run [--dir DIR] [--force]`: writes a corpus and options
/// for this installation's sprint-sim and prints the `doctor` command that
/// checks them.
void add_first_run_command(CLI::App& app, int& exit_code);

/// `sprintrt record --dir D -- EXEC ARGS...`: runs a Sprint program with its
/// pipe traffic recorded for `pickle-dump`.
void add_record_command(CLI::App& app, int& exit_code);

/// `sprintrt serve --config OPTIONS.json --port P [--bind ADDR] [--insecure]
/// [--tls-cert C --tls-key K --tls-ca A] [--port-file F] [--json]`: a worker
/// pool for trainers on other machines.
void add_serve_command(CLI::App& app, int& exit_code);

} // namespace sprintrt::cli
