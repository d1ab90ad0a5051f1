// `sprintrt loss`: the loss and error signal of one batch stored as .npy
// files, computed by a worker pool, written back as .npy files.

#include <chrono>
#include <cmath>
#include <iostream>

#include <nlohmann/json.hpp>

#include "sprintrt/error.hpp"
#include "sprintrt/pool_client.hpp"
#include "sprintrt/sprint_runtime.hpp"
#include "tools/sprintrt/batch_files.hpp"
#include "tools/sprintrt/commands.hpp"
#include "tools/sprintrt/interrupt.hpp"
#include "tools/sprintrt/npy_file.hpp"
#include "tools/sprintrt/progress_bar.hpp"
#include "tools/sprintrt/value_json.hpp"

namespace sprintrt::cli {

namespace {

using json = nlohmann::json;

struct loss_options {
  std::string config;
  std::string log_posteriors;
  std::string seq_lengths;
  std::string tags;
  std::string loss_out;
  std::string error_signal_out;
  bool json_output = false;
};

// Reports a failure at `step` ("options", "input", "compute", "write",
// "interrupted"): the message on stderr and, with --json, an object a script
// reads in place of the summary: {"ok": false, "failed_step", "error_code",
// "error"}. Returns `exit_status`.
int fail(const loss_options& cli, const char* step, const std::string& code,
         const std::string& message, int exit_status = 1) {
  std::cerr << "sprintrt loss: " << message << "\n";
  if (cli.json_output)
    std::cout << json{{"ok", false},
                      {"failed_step", step},
                      {"error_code", code},
                      {"error", message}}
                     .dump(2)
              << "\n";
  return exit_status;
}

int fail(const loss_options& cli, const char* step, const caf::error& err) {
  auto code = err.category() == error_category
                  ? std::string{to_string(static_cast<errc>(err.code()))}
                  : caf::to_string(err.category());
  return fail(cli, step, code, render(err));
}

int interrupted(const loss_options& cli, const interrupt_guard& guard) {
  return fail(cli, "interrupted", "interrupted", "interrupted; no output written",
              guard.exit_status());
}

int run(const loss_options& cli) {
  interrupt_guard guard;
  auto opts = load_options(cli.config);
  if (!opts)
    return fail(cli, "options", opts.error());
  auto input = read_batch(cli.log_posteriors, cli.seq_lengths, cli.tags);
  if (!input)
    return fail(cli, "input", input.error());
  auto shape = input->log_posteriors.shape();
  auto tags = input->tags;
  auto lengths = input->seq_lengths;
  sprint_runtime rt{runtime_settings_for(*opts)};
  pool_client client{rt, *opts};
  auto start = std::chrono::steady_clock::now();
  // The pool counts finished segments: poll it for the progress bar.
  progress_bar bar{"loss", tags.size(), "segments"};
  caf::expected<batch_result> result = make_error(errc::cancelled, "not computed");
  {
    progress_poller poller{bar, [&client] {
                             auto stats = client.stats();
                             return stats ? stats->segments + stats->failed_segments : 0;
                           }};
    result = client.compute(std::move(*input), guard.token());
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (guard.interrupted())
    return interrupted(cli, guard);
  if (!result)
    return fail(cli, "compute", result.error());
  // Each file appears whole or not at all (write_npy renames a complete
  // temporary file); a signal while writing removes the ones written.
  size_t loss_shape[] = {tags.size()};
  std::vector<std::string> written;
  auto error = cli::write_npy<float>(cli.loss_out, loss_shape, result->loss);
  if (!error) {
    written.push_back(cli.loss_out);
    error = cli::write_npy<float>(
        cli.error_signal_out, shape,
        span<const float>{result->error_signal.data(), result->error_signal.size()});
    if (!error)
      written.push_back(cli.error_signal_out);
  }
  if (guard.interrupted()) {
    remove_outputs(written);
    return interrupted(cli, guard);
  }
  if (error)
    return fail(cli, "write", error);
  auto stats = client.stats();
  int64_t frames = 0;
  double loss_sum = 0;
  // A segment without a path (loss inf, error signal zero; the pool warned
  // about it): the sum leaves it out, and the summary names it.
  std::vector<size_t> skipped;
  for (size_t b = 0; b < tags.size(); ++b) {
    frames += lengths[b];
    if (std::isfinite(result->loss[b]))
      loss_sum += result->loss[b];
    else
      skipped.push_back(b);
  }
  if (cli.json_output) {
    json summary;
    summary["ok"] = true;
    summary["batch_size"] = tags.size();
    summary["max_frames"] = shape[0];
    summary["dim"] = shape[2];
    summary["frames"] = frames;
    summary["seconds"] = seconds;
    summary["segments"] = json::array();
    for (size_t b = 0; b < tags.size(); ++b)
      summary["segments"].push_back({{"tag", tags[b]},
                                     {"frames", lengths[b]},
                                     {"loss", cli::float_to_json(result->loss[b])}});
    summary["skipped"] = json::array();
    for (size_t b : skipped)
      summary["skipped"].push_back({{"index", b}, {"tag", tags[b]}});
    summary["loss_sum"] = loss_sum;
    summary["skipped_segments"] = stats ? stats->skipped_segments : 0;
    summary["workers"] = json::array();
    if (stats)
      for (const auto& w : stats->workers)
        summary["workers"].push_back({{"pid", w.pid},
                                      {"requests_served", w.requests_served},
                                      {"busy_seconds", static_cast<double>(w.busy_ns) * 1e-9},
                                      {"restarts", w.restarts}});
    summary["loss_out"] = cli.loss_out;
    summary["error_signal_out"] = cli.error_signal_out;
    std::cout << summary.dump(2) << "\n";
  } else {
    std::cout << "computed " << tags.size() << " segments (" << frames << " frames) in " << seconds
              << " s on " << (stats ? stats->workers.size() : 0) << " worker(s); loss sum "
              << loss_sum;
    if (!skipped.empty()) {
      std::cout << " over " << tags.size() - skipped.size() << "; " << skipped.size()
                << " without a path (loss inf, error signal zero):";
      for (size_t b : skipped)
        std::cout << " " << tags[b];
    }
    std::cout << "; wrote " << cli.loss_out << " and " << cli.error_signal_out << "\n";
  }
  return 0;
}

} // namespace

void add_loss_command(CLI::App& app, int& exit_code) {
  auto opts = std::make_shared<loss_options>();
  auto* cmd = app.add_subcommand("loss", "Compute a batch's loss and error signal from .npy files");
  cmd->add_option("--config", opts->config, "Options JSON file (RETURNN's sprint_opts)")
      ->required();
  cmd->add_option("--log-posteriors", opts->log_posteriors,
                  "float32 [T, B, D] .npy (float64 is converted)")
      ->required();
  cmd->add_option("--seq-lengths", opts->seq_lengths, "int32 or int64 [B] .npy")->required();
  cmd->add_option("--tags", opts->tags, "Segment names, one per line")->required();
  cmd->add_option("--loss-out", opts->loss_out, "Where to write float32 [B] losses")->required();
  cmd->add_option("--error-signal-out", opts->error_signal_out,
                  "Where to write the float32 [T, B, D] error signal")
      ->required();
  cmd->add_flag("--json", opts->json_output,
                "Print a JSON summary (per-segment loss, timing, workers), or on failure a "
                "JSON object with the failed step and the error");
  cmd->callback([opts, &exit_code] { exit_code = run(*opts); });
}

} // namespace sprintrt::cli
