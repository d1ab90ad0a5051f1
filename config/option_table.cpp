#include "config/option_table.hpp"

#include <iterator>

#include "config/aggregate_fields.hpp"

namespace sprintrt::config {

namespace {

using json = nlohmann::json;
constexpr auto shared = option_scope::shared;
constexpr auto machine_local = option_scope::machine_local;

/// Declares the option `key` stored in `Member` and read and written by
/// `Codec`; `required_what` is empty for an optional option.
template <auto Member, class Codec>
constexpr option_descriptor declare(std::string_view key, option_scope scope, std::string_view help,
                                    std::string_view required_what = {}) {
  return {key,
          required_what,
          scope,
          help,
          [](const option_field& f, sprint_options& opts) { return Codec::read(f, opts.*Member); },
          [](const sprint_options& opts) { return json(Codec::write(opts.*Member)); },
          [](const sprint_options& x, const sprint_options& y) { return x.*Member == y.*Member; }};
}

using o = sprint_options;

constexpr option_descriptor table[] = {
    declare<&o::sprint_exec_path, optional_name_codec>(
        "sprintExecPath", shared,
        "the Sprint executable, started without a shell; needed only where children start "
        "(`numInstances` > 0), not by in-process simulated workers or remote-only pools"),
    declare<&o::sprint_config, config_words_codec>(
        "sprintConfigStr", shared,
        "Sprint arguments: a string split like a POSIX shell splits words (quotes, "
        "backslashes; `$VAR`/`${VAR}` outside single quotes expanded from the child's "
        "environment when it starts, an unset one an error; see \"First run\"), or a list of "
        "arguments (with `$VAR`/`${VAR}` likewise and `$$` for a literal `$`)"),
    declare<&o::min_python_control_version, count_codec>("minPythonControlVersion", shared,
                                                         "passed in the pymod config"),
    declare<&o::sprint_control_config, control_config_codec>(
        "sprintControlConfig", shared,
        "extra `key:value` items of the pymod config (sorted by key), values rendered as "
        "Python's `%s` would (`true` as `True`); the keys sprintrt sets itself are refused"),
    declare<&o::use_python_segment_order, flag_codec>("usePythonSegmentOrder", shared,
                                                      "also pass the five segment-order flags"),
    declare<&o::num_instances, count_codec>(
        "numInstances", machine_local,
        "children per pool, started when first needed (0 allowed with `remote`)"),
    declare<&o::pymod_path, text_codec>(
        "pymodPath", shared,
        "where Sprint loads the Python module from; with neither `pymodPath` nor `pymodName`, "
        "the directory of sprintrt's own `sprintrt_control.py` (`$SPRINTRT_CONTROL_DIR` if "
        "set, else `build/python` of the build tree, else the installed package's directory; "
        "the Python package names its own)"),
    declare<&o::pymod_name, optional_name_codec>(
        "pymodName", shared,
        "the module Sprint loads: none for sprintrt's own child side `sprintrt_control`; with "
        "only `pymodPath` given, `returnn.sprint.control` (a RETURNN checkout; "
        "`SprintControl` for old checkouts)"),
    declare<&o::framing, framing_codec>(
        "framing", shared,
        "how messages on the pipes are delimited: `\"length_prefixed\"` (current RETURNN) "
        "or `\"raw\"` (RETURNN before 2023)"),
    declare<&o::array_global_module, non_empty_text_codec>(
        "arrayGlobalModule", shared,
        "module of the array constructor in our pickles (`TaskSystem` for old checkouts)"),
    declare<&o::init_timeout, seconds_codec>("initTimeout", machine_local,
                                             "seconds for the `init` handshake"),
    declare<&o::reply_timeout, seconds_codec>(
        "replyTimeout", machine_local,
        "seconds for each reply; a child that misses it is killed and restarted"),
    declare<&o::exit_grace, seconds_codec>(
        "exitGrace", machine_local,
        "seconds a child may take to exit after `exit` before it is killed (a child still "
        "holding requests when its pool stops is killed at once: it would compute them first)"),
    declare<&o::max_retries, count_codec>(
        "maxRetries", machine_local,
        "how often a request is resent after its child failed (died, hung, broke the "
        "protocol)"),
    declare<&o::on_cancel, cancel_policy_codec>(
        "onCancel", machine_local,
        "what happens to a child computing a request whose caller cancelled it: `\"keep\"` "
        "lets it finish what it holds and drops the replies, `\"kill\"` kills it and starts a "
        "new one when next needed, `\"auto\"` does whichever is expected to be quicker from "
        "the child's own start-up and request times; a child that misses its replyTimeout is "
        "killed in any case"),
    declare<&o::env, environment_codec>(
        "env", machine_local,
        "`{\"set\": {\"NAME\": \"value\"}, \"unset\": [\"NAME\"]}` for the children"),
    declare<&o::remote, remote_codec>(
        "remote", machine_local,
        "remote pools (`sprintrt serve`) beside the local children: `[\"host:port\", ...]` or "
        "`[{\"host\": ..., \"port\": ...}]`; with `remote`, `numInstances` may be 0"),
    declare<&o::remote_wait, seconds_codec>(
        "remoteWait", machine_local,
        "seconds a request waits for a remote pool to come back (a server that restarts, a "
        "connection that drops) when no worker at all can take it; then it fails naming the "
        "servers it waited for"),
    declare<&o::remote_tls, tls_codec>(
        "remoteTls", machine_local,
        "`{\"certificate\": ..., \"key\": ..., \"ca\": ...}`: PEM files for TLS to the remote "
        "pools"),
    declare<&o::child_output, child_output_codec>(
        "childOutput", machine_local,
        "where each child's own stdout and stderr go: `\"log\"` (each line at info as "
        "`[pool 0 worker 1] ...`, through the spdlog logger `sprintrt.child` if registered, "
        "else sprintrt's own logger), `\"inherit\"` (the trainer's own stdout and stderr, as under "
        "RETURNN; error messages then say it was not kept), or `{\"file\": \"DIR\"}` "
        "(appended unchanged to `DIR/pool-0-worker-1.log`, DIR created; written by a thread "
        "of its own, so a slow disk never stalls the pipes: beyond 16 MiB queued, output is "
        "dropped and the file says how much). Except with `\"inherit\"`, a child's error "
        "messages quote its last lines"),
    declare<&o::shared_memory, shared_memory_codec>(
        "sharedMemory", machine_local,
        "`\"auto\"`: large loss requests and their error signals travel through a "
        "shared-memory region of each child instead of the pipes, with children that run "
        "sprintrt's own module (`sprintrt_control`, `sprint-sim`) and accept it; `\"off\"`: "
        "everything through the pipes (docs/protocol.md section 7)"),
    declare<&o::shared_memory_threshold, count_codec>(
        "sharedMemoryThreshold", machine_local,
        "bytes of a segment's posteriors from which it goes through the shared region"),
};

static_assert(std::size(table) == aggregate_field_count<sprint_options>(),
              "every member of sprint_options needs its entry in the option table");

/// Escapes what would end a Markdown table cell.
std::string table_cell(std::string_view text) {
  std::string cell;
  for (char c : text) {
    if (c == '|')
      cell += '\\';
    cell += c;
  }
  return cell;
}

} // namespace

span<const option_descriptor> option_table() noexcept {
  return {table, std::size(table)};
}

json options_json(const sprint_options& opts, option_selection which) {
  json doc = json::object();
  for (const auto& option : table)
    if (which == option_selection::all || option.scope == option_scope::shared)
      doc[std::string{option.key}] = option.write(opts);
  return doc;
}

std::string documented_default(const option_descriptor& option) {
  if (option.required())
    return "(required)";
  const auto value = option.write(sprint_options{});
  return value.is_null() ? "none" : "`" + value.dump() + "`";
}

std::string options_markdown_table() {
  std::string text = "| key | default | on a remote pool | meaning |\n|---|---|---|---|\n";
  for (const auto& option : table)
    text += "| `" + std::string{option.key} + "` | " + table_cell(documented_default(option)) +
            " | " + (option.scope == option_scope::shared ? "the same" : "its own") + " | " +
            table_cell(option.help) + " |\n";
  return text;
}

std::string options_text_listing() {
  std::string text;
  for (const auto& option : table) {
    text += std::string{option.key} +
            (option.required() ? " (required" : " (default " + documented_default(option));
    if (option.scope == option_scope::machine_local)
      text += "; a remote pool has its own";
    text += ")\n    " + std::string{option.help} + "\n";
  }
  return text;
}

} // namespace sprintrt::config
