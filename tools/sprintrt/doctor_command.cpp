// `sprintrt doctor`: checks a Sprint set-up step by step. It starts one child
// with the given options, shows the exact argument list, performs the init
// handshake, optionally computes one segment on uniform posteriors, and stops
// the child with `exit`. Each step reports its timing; the first failure ends
// the run with a diagnosis (program missing, handshake failed, child died with
// status N and this output, timeout) and a non-zero exit status. It first
// shows the options that differ from their defaults; `--list-options` lists
// every option instead (`--markdown`: as the README's table), both derived
// from the option table (config/option_table.hpp). With `remote` in the
// options it first checks each remote pool (doctor_remote.hpp), and with
// `numInstances` 0 only those.
//
// It drives the pipe channel directly (not the worker actor, which would
// retry and restart and so hide the first failure), waiting on the channel's
// reports from the command's main thread.

#include <chrono>
#include <cmath>
#include <condition_variable>
#include <deque>
#include <fstream>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
#include <variant>

#include <nlohmann/json.hpp>

#include "common/shared_region.hpp"
#include "config/child_environment.hpp"
#include "config/option_table.hpp"
#include "config/sprint_args.hpp"
#include "config/wire_format.hpp"
#include "process/child_spawn.hpp"
#include "process/io_thread.hpp"
#include "process/output_tail.hpp"
#include "process/sprint_channel.hpp"
#include "protocol/messages.hpp"
#include "protocol/ndarray_access.hpp"
#include "protocol/pickle_reader.hpp"
#include "tools/sprintrt/commands.hpp"
#include "tools/sprintrt/doctor_remote.hpp"
#include "tools/sprintrt/python_reading.hpp"
#include "tools/sprintrt/shell_quote.hpp"

extern char** environ;

namespace sprintrt::cli {

namespace {

using clock = std::chrono::steady_clock;
using json = nlohmann::json;

struct doctor_options {
  std::string config;
  bool list_options = false;
  bool markdown = false;
  std::string segment;
  size_t frames = 0;
  size_t dim = 0;
  bool json_output = false;
  /// The rules `sprintConfigStr` will be read under: "sprintrt" (this tool,
  /// `serve`, C++, Python's `sprintrt.Options`) or "returnn" (a dict of
  /// `sprint_opts` in Python, RETURNN's `eval_shell_str`).
  std::string rules = "sprintrt";
};

/// A report of the channel, as the main thread sees it.
struct started_event {
  pid_t pid;
  std::vector<std::string> argv;
};
using channel_event = std::variant<started_event, protocol::byte_buffer, process::child_down>;

/// Collects the channel's reports (made on the io thread) for the main thread.
class event_queue {
public:
  process::channel_events callbacks() {
    process::channel_events events;
    events.started = [this](pid_t pid, const std::vector<std::string>& argv) {
      push(started_event{pid, argv});
    };
    events.message = [this](protocol::byte_buffer msg) { push(std::move(msg)); };
    events.down = [this](process::child_down down) { push(std::move(down)); };
    return events;
  }

  /// Waits up to `timeout` for the next report.
  std::optional<channel_event> wait(std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> guard{mutex_};
    if (!ready_.wait_for(guard, timeout, [this] { return !events_.empty(); }))
      return std::nullopt;
    auto event = std::move(events_.front());
    events_.pop_front();
    return event;
  }

private:
  void push(channel_event event) {
    std::lock_guard<std::mutex> guard{mutex_};
    events_.push_back(std::move(event));
    ready_.notify_one();
  }

  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<channel_event> events_;
};

/// The `sprintConfigStr` string as written in the options file (through a
/// `config:NAME` reference), if it is a string.
std::optional<std::string> raw_config_string(const std::string& path) {
  std::ifstream in{path};
  auto doc = json::parse(in, nullptr, false);
  if (!doc.is_object() || !doc.contains("sprintConfigStr") || !doc["sprintConfigStr"].is_string())
    return std::nullopt;
  auto text = doc["sprintConfigStr"].get<std::string>();
  if (text.rfind("config:", 0) == 0) {
    auto key = text.substr(7);
    if (!doc.contains(key) || !doc[key].is_string())
      return std::nullopt;
    return doc[key].get<std::string>();
  }
  return text;
}

double elapsed_ms(clock::time_point since) {
  return std::chrono::duration<double, std::milli>(clock::now() - since).count();
}

/// Runs the checks; prints human-readable steps unless `json_output`, and
/// fills `summary` for --json.
class doctor {
public:
  doctor(const doctor_options& opts, json& summary) : cli_(opts), summary_(summary) {}

  int run() {
    auto opts = load_options(cli_.config);
    if (!opts)
      return diagnose("options", render(opts.error()));
    opts_ = *opts;
    summary_["options"] = json::parse(to_json_string(opts_));
    say_options();
    const bool local = opts_.num_instances > 0;
    if (local)
      if (auto err = process::check_executable(opts_.sprint_exec_path))
        return diagnose("program", render(err));
    // The arguments as the child will get them: an unset variable is named
    // here, before anything starts. (Remote pools expand them in their own
    // environment.)
    auto lookup = config::environment_lookup(config::child_environment(opts_.env, environ));
    if (local)
      if (auto words = config::expand_sprint_config(opts_, lookup); !words)
        return diagnose("arguments", render(words.error()));
    summary_["rules"] = cli_.rules;
    summary_["warnings"] = json::array();
    auto differences = python_reading_differences(opts_, lookup, raw_config_string(cli_.config));
    if (cli_.rules == "returnn" && !differences.empty()) {
      // The children would get other arguments than the file says: fail
      // before starting one.
      std::string what = "read as a Python dict of sprint_opts (RETURNN's rules), "
                         "sprintConfigStr means something else than in the options file:";
      for (const auto& line : differences)
        what += "\n    " + line;
      what += "\nfrom Python, pass sprintrt.Options.from_file('" + cli_.config +
              "') to read the file as the sprintrt tool does";
      return diagnose("arguments", what);
    }
    for (const auto& line : differences) {
      summary_["warnings"].push_back(line);
      say("warning: " + line);
    }
    if (!differences.empty())
      say("    (from Python, sprintrt.Options.from_file reads the file as here; "
          "--rules returnn checks it as a dict)");
    if (!opts_.remote.empty()) {
      summary_["remote"] = json::array();
      std::optional<doctor_segment> segment;
      if (!cli_.segment.empty())
        segment = doctor_segment{cli_.segment, cli_.frames, cli_.dim};
      auto failure = check_remote_pools(
          opts_, segment, [this](const std::string& line) { say(line); }, summary_["remote"]);
      if (failure)
        return diagnose(failure->step, failure->what);
    }
    if (!local) {
      say("no local children to check (numInstances 0)");
      summary_["ok"] = true;
      return 0;
    }
    format_ = config::wire_format_of(opts_);
    io_.emplace();
    auto start = clock::now();
    // The region a worker would offer (docs/protocol.md section 7): the
    // child gets the command line a worker's child gets.
    if (config::offers_shared_memory(opts_))
      if (auto region = shared_region::create("doctor"))
        region_ = std::make_shared<shared_region>(std::move(*region));
    channel_ = process::sprint_channel::open(*io_, opts_, "doctor", events_.callbacks(), region_);
    int status = steps(start);
    if (!down_) {
      // Make sure the child is gone, whatever step failed.
      channel_->kill(make_error(errc::cancelled, "doctor finished"));
      wait_down(opts_.exit_grace);
    }
    io_->stop(opts_.exit_grace);
    return status;
  }

private:
  int steps(clock::time_point start) {
    auto first = events_.wait(opts_.init_timeout);
    if (!first)
      return fail_child("start", "the child did not start within initTimeout");
    if (auto* down = std::get_if<process::child_down>(&*first))
      return child_down_diagnosis("start", *down);
    const auto& started = std::get<started_event>(*first);
    json argv = started.argv;
    summary_["argv"] = argv;
    summary_["pid"] = started.pid;
    say("started pid " + std::to_string(started.pid) + " in " + ms(elapsed_ms(start)) + ":");
    for (const auto& arg : started.argv)
      say("    " + shell_quote(arg));
    // The handshake.
    auto sent = clock::now();
    protocol::byte_buffer init;
    protocol::encode_init_command(init, format_);
    // One message: no buffer to reuse.
    (void)channel_->send(std::move(init), protocol::max_init_reply_size);
    int status = 0;
    auto reply = wait_reply("init", opts_.init_timeout, status);
    if (!reply)
      return status;
    auto init_reply = protocol::decode_init_reply(reply->value);
    double init_ms = elapsed_ms(sent);
    summary_["handshake_ms"] = init_ms;
    if (!init_reply)
      return diagnose("handshake", "bad reply to init: " + render(init_reply.error()));
    if (auto err = protocol::check_protocol_version(*init_reply))
      return diagnose("handshake", error_message(err));
    if (init_reply->shared_memory && !region_)
      return diagnose("handshake",
                      "bad reply to init: it accepts a shared region that it was not offered");
    summary_["child_name"] = init_reply->child_name;
    summary_["shared_memory"] = init_reply->shared_memory;
    say("handshake ok: child '" + init_reply->child_name + "', protocol version 1, " + ms(init_ms));
    if (region_)
      say(init_reply->shared_memory
              ? "shared memory: accepted (large segments travel through it, not the pipes)"
              : "shared memory: declined by the child (everything through the pipes)");
    if (!cli_.segment.empty())
      if (status = compute_segment(); status != 0)
        return status;
    return stop();
  }

  int compute_segment() {
    // Uniform posteriors: every class has probability 1/D in every frame.
    std::vector<float> lp(cli_.frames * cli_.dim, -std::log(static_cast<float>(cli_.dim)));
    protocol::byte_buffer request;
    if (auto err = protocol::encode_loss_command(request, format_, cli_.segment, cli_.frames,
                                                 cli_.dim, lp.data(), cli_.dim))
      return diagnose("segment", render(err));
    auto sent = clock::now();
    (void)channel_->send(std::move(request), protocol::max_loss_reply_size(cli_.frames, cli_.dim));
    int status = 0;
    auto reply = wait_reply("get_loss_and_error_signal", opts_.reply_timeout, status);
    if (!reply)
      return status;
    double took = elapsed_ms(sent);
    auto loss = protocol::decode_loss_reply(reply->value, cli_.frames, cli_.dim);
    if (!loss)
      return diagnose("segment", "segment '" + cli_.segment + "': " + render(loss.error()));
    std::vector<float> es(cli_.frames * cli_.dim);
    protocol::copy_rows(loss->error_signal, es.data(), cli_.dim);
    double norm = 0;
    for (float x : es)
      norm += static_cast<double>(x) * x;
    summary_["segment"] = {{"name", cli_.segment},
                           {"frames", cli_.frames},
                           {"dim", cli_.dim},
                           {"loss", loss->loss},
                           {"error_signal_l2", std::sqrt(norm)},
                           {"ms", took}};
    say("segment '" + cli_.segment + "' (" + std::to_string(cli_.frames) + " x " +
        std::to_string(cli_.dim) + ", uniform posteriors): loss " + std::to_string(loss->loss) +
        ", |error signal| " + std::to_string(std::sqrt(norm)) + ", " + ms(took));
    return 0;
  }

  int stop() {
    auto sent = clock::now();
    protocol::byte_buffer exit;
    protocol::encode_exit_command(exit, format_);
    channel_->stop(opts_.exit_grace, std::move(exit));
    if (!wait_down(opts_.exit_grace + std::chrono::seconds{5}))
      return diagnose("exit", "the child did not end");
    summary_["exit_code"] = down_->exit_code();
    summary_["exit_ms"] = elapsed_ms(sent);
    if (!down_->clean_exit())
      return child_down_diagnosis("exit", *down_);
    say("exit ok: the child " + down_->describe() + " after " + ms(elapsed_ms(sent)));
    summary_["ok"] = true;
    return 0;
  }

  /// A decoded reply, kept together with the buffer its arrays point into.
  struct reply_message {
    std::shared_ptr<const protocol::byte_buffer> buffer;
    protocol::value value;
  };

  /// Waits for the reply to `command`. On failure diagnoses, sets `status`
  /// to the exit status and returns nothing.
  std::optional<reply_message> wait_reply(const std::string& command,
                                          std::chrono::milliseconds timeout, int& status) {
    auto event = events_.wait(timeout);
    if (!event) {
      status = fail_child(command, "no reply to " + command + " within " +
                                       std::to_string(timeout.count()) + " ms");
      return std::nullopt;
    }
    if (auto* down = std::get_if<process::child_down>(&*event)) {
      status = child_down_diagnosis(command, *down);
      return std::nullopt;
    }
    auto buffer = std::make_shared<const protocol::byte_buffer>(
        std::get<protocol::byte_buffer>(std::move(*event)));
    auto value = protocol::read_pickle(buffer);
    if (!value) {
      status = diagnose(command, "the child sent a malformed reply: " + render(value.error()));
      return std::nullopt;
    }
    return reply_message{buffer, std::move(*value)};
  }

  bool wait_down(std::chrono::milliseconds timeout) {
    auto deadline = clock::now() + timeout;
    while (!down_) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock::now());
      auto event = events_.wait(std::max(left, std::chrono::milliseconds{0}));
      if (!event)
        return false;
      if (auto* down = std::get_if<process::child_down>(&*event))
        down_ = std::move(*down);
    }
    return true;
  }

  int child_down_diagnosis(const std::string& step, const process::child_down& down) {
    down_ = down;
    std::string text = "the child " + down.describe();
    if (down.cause)
      text = render(down.cause) + "; " + text;
    summary_["exit_code"] = down.exit_code();
    auto lines = process::last_lines(down.output, 30);
    if (!lines.empty())
      text += "\nits output ended with:\n" + lines;
    return diagnose(step, text);
  }

  int fail_child(const std::string& step, const std::string& what) {
    channel_->kill(make_error(errc::timeout, what));
    wait_down(opts_.exit_grace);
    return down_ ? child_down_diagnosis(step, *down_) : diagnose(step, what);
  }

  int diagnose(const std::string& step, const std::string& what) {
    summary_["ok"] = false;
    summary_["failed_step"] = step;
    summary_["diagnosis"] = what;
    if (!cli_.json_output)
      std::cout << "FAILED at " << step << ": " << what << "\n";
    return 1;
  }

  /// Shows the options that differ from their defaults, as canonical JSON.
  void say_options() {
    const sprint_options defaults;
    say("options (the others have their defaults):");
    for (const auto& option : config::option_table())
      if (!option.equal(opts_, defaults))
        say("    " + std::string{option.key} + " " + option.write(opts_).dump());
  }

  void say(const std::string& line) {
    if (!cli_.json_output)
      std::cout << line << "\n";
  }

  static std::string ms(double x) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%.1f ms", x);
    return buf;
  }

  const doctor_options& cli_;
  json& summary_;
  sprint_options opts_;
  protocol::wire_format format_;
  event_queue events_;
  // Declared before the channel: the io thread must outlive it.
  std::optional<process::io_thread> io_;
  std::optional<process::sprint_channel> channel_;
  /// The shared region offered to the child, if the options offer one.
  std::shared_ptr<shared_region> region_;
  std::optional<process::child_down> down_;
};

} // namespace

void add_doctor_command(CLI::App& app, int& exit_code) {
  auto opts = std::make_shared<doctor_options>();
  auto* cmd = app.add_subcommand("doctor", "Check a Sprint set-up (local children and remote "
                                           "pools): start one child, handshake, optionally "
                                           "compute one segment, stop it");
  cmd->add_option("--config", opts->config,
                  "Options JSON file (RETURNN's sprint_opts; --list-options lists them)");
  auto* segment = cmd->add_option("--segment", opts->segment,
                                  "Also compute this segment on uniform posteriors");
  auto* frames = cmd->add_option("--frames", opts->frames, "Frames of the segment (T)")
                     ->check(CLI::PositiveNumber);
  auto* dim =
      cmd->add_option("--dim", opts->dim, "Classes per frame (D)")->check(CLI::PositiveNumber);
  segment->needs(frames, dim);
  frames->needs(segment);
  dim->needs(segment);
  cmd->add_flag("--json", opts->json_output, "Print one JSON summary instead of steps");
  cmd->add_option("--rules", opts->rules,
                  "How sprintConfigStr will be read: sprintrt (this tool, serve, C++, Python's "
                  "sprintrt.Options) or returnn (a dict of sprint_opts in Python); with returnn, "
                  "an argument the two read differently fails the check")
      ->check(CLI::IsMember({"sprintrt", "returnn"}))
      ->capture_default_str();
  auto* list = cmd->add_flag("--list-options", opts->list_options,
                             "List the options with their defaults and meanings, and exit");
  cmd->add_flag("--markdown", opts->markdown, "With --list-options: as the README's table")
      ->needs(list);
  cmd->callback([opts, &exit_code] {
    if (opts->list_options) {
      std::cout << (opts->markdown ? config::options_markdown_table()
                                   : config::options_text_listing());
      return;
    }
    // Required unless the options are only listed.
    if (opts->config.empty())
      throw CLI::RequiredError("--config");
    json summary = json::object();
    exit_code = doctor{*opts, summary}.run();
    if (opts->json_output)
      std::cout << summary.dump(2) << "\n";
  });
}

} // namespace sprintrt::cli
