// libFuzzer target for an options file (include/sprintrt/options.hpp): the
// input is the text of a JSON options document, read as `load_options`
// reads a file's text (`parse_options`: duplicate keys, `config:NAME`
// references, each option's codec). Options that read are then taken where
// a pool takes them, with a fixed parent environment:
//   - a Sprint child's environment (`env` applied) and argument vector
//     (`build_sprint_args`: `$VAR`s expanded, each word of sprintConfigStr
//     one argument, the pymod config string), as process/child_spawn.cpp
//     builds them;
//   - the wire format the options select;
//   - the canonical JSON (`to_json_string`), which must read back to equal
//     options and render the same text again.
// Besides memory errors, a check fails (fuzz_check.hpp) on an error of
// another code than the function documents, an argument or environment
// entry that `execve` would cut short (a NUL inside), an environment that is
// not one sorted entry per name with the options' changes applied, a pymod
// config string the child would split into other items than the options
// say, and a canonical form that does not read back.
//
// Build: configure with clang and -DSPRINTRT_FUZZ=ON (see fuzz/README.md).

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <spdlog/spdlog.h>

#include "config/child_environment.hpp"
#include "config/shell_words.hpp"
#include "config/sprint_args.hpp"
#include "config/wire_format.hpp"
#include "fuzz/fuzz_check.hpp"
#include "fuzz/fuzz_input.hpp"
#include "protocol/shared_array.hpp"
#include "sprintrt/logging.hpp"
#include "sprintrt/options.hpp"

using namespace sprintrt;
using fuzz::require;

namespace {

/// The trainer's environment the children start from: the variables the
/// documentation's examples use, one set to "", a duplicate (the first
/// counts) and an entry without '=' (dropped).
const char* const parent_environ[] = {"HOME=/home/trainer",
                                      "PATH=/usr/bin:/bin",
                                      "SETUP_DIR=/work/asr/setup",
                                      "CORPUS=/data/corpus.txt",
                                      "EMPTY=",
                                      "HOME=/second/home",
                                      "NOT_AN_ASSIGNMENT",
                                      nullptr};

/// The descriptors a child gets: its pipes and its shared region.
constexpr int c2p_fd = 3;
constexpr int p2c_fd = 4;
constexpr int shared_memory_fd = 5;

/// Whether `text` would reach a child whole through `execve`.
bool passable(const std::string& text) {
  return text.find('\0') == std::string::npos;
}

/// Checks a child's environment: sorted, one "NAME=value" per name, the
/// options' `env` applied, nothing `execve` would cut short.
void check_environment(const std::vector<std::string>& env, const environment_changes& changes) {
  std::map<std::string, std::string> vars;
  std::string previous;
  for (const auto& entry : env) {
    const size_t eq = entry.find('=');
    require(eq != std::string::npos && eq > 0 && passable(entry),
            "an environment entry is no NAME=value that execve passes whole");
    auto name = entry.substr(0, eq);
    require(vars.empty() || name > previous, "the environment is unsorted, or has a name twice");
    previous = name;
    vars[name] = entry.substr(eq + 1);
  }
  for (const auto& [name, value] : changes.set)
    require(vars.count(name) != 0 && vars[name] == value,
            "a variable the options set is missing or has another value");
  for (const auto& name : changes.unset)
    require(changes.set.count(name) != 0 || vars.count(name) == 0,
            "a variable the options unset is there");
}

/// Reads the pymod config string as sprintrt_control's `parse_config`
/// does: items separated by ',', each "key:value" split at its first ':'.
std::map<std::string, std::string> as_child_reads(std::string_view config) {
  std::map<std::string, std::string> items;
  size_t start = 0;
  while (start <= config.size()) {
    size_t end = config.find(',', start);
    if (end == std::string_view::npos)
      end = config.size();
    auto item = config.substr(start, end - start);
    if (!item.empty()) {
      const size_t colon = item.find(':');
      require(colon != std::string_view::npos, "a pymod config item the child refuses");
      std::string key{item.substr(0, colon)};
      require(items.count(key) == 0, "a pymod config item the child reads twice");
      items[key] = std::string{item.substr(colon + 1)};
    }
    start = end + 1;
  }
  return items;
}

/// Checks a child's argument vector against the options it came from.
void check_arguments(const std::vector<std::string>& args, const sprint_options& opts,
                     const config::env_lookup& lookup, bool shared_memory) {
  for (const auto& arg : args)
    require(passable(arg), "execve would cut an argument short");
  const size_t flags = opts.use_python_segment_order ? 10 : 5;
  require(args.size() == flags + opts.sprint_config.size() && args[0] == opts.sprint_exec_path,
          "the arguments are not the executable, the flags and one per word");
  for (size_t i = 0; i < opts.sprint_config.size(); ++i)
    require(args[flags + i] == config::expand_word(opts.sprint_config[i], lookup),
            "a word's argument is not its expansion");
  constexpr std::string_view config_flag = "--*.pymod-config=";
  require(args[4].compare(0, config_flag.size(), config_flag) == 0,
          "the pymod config is not where docs/protocol.md section 1 puts it");
  auto items = as_child_reads(std::string_view{args[4]}.substr(config_flag.size()));
  std::map<std::string, std::string> expected = opts.sprint_control_config;
  expected["c2p_fd"] = std::to_string(c2p_fd);
  expected["p2c_fd"] = std::to_string(p2c_fd);
  expected["minPythonControlVersion"] = std::to_string(opts.min_python_control_version);
  if (shared_memory)
    expected[std::string{protocol::shared_memory_config_key}] = std::to_string(shared_memory_fd);
  require(items == expected, "the child would read other pymod config items than the options say");
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // The warning that sprintrt_control.py is nowhere (once per process) and
  // any other log line are not under test.
  sprintrt::logger().set_level(spdlog::level::off);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::fuzz_input in{data, size};
  auto opts = parse_options(in.rest_text());
  if (!opts) {
    require(opts.error() == errc::invalid_options, "parse_options failed with another code");
    return 0;
  }

  // The child's environment and command line, as child_spawn builds them.
  auto env = config::child_environment(opts->env, parent_environ);
  check_environment(env, opts->env);
  auto lookup = config::environment_lookup(env);
  const bool shared_memory = config::offers_shared_memory(*opts);
  auto args = config::build_sprint_args(*opts, c2p_fd, p2c_fd, lookup,
                                        shared_memory ? shared_memory_fd : -1);
  if (args)
    check_arguments(*args, *opts, lookup, shared_memory);
  else
    require(args.error() == errc::spawn_failed, "build_sprint_args failed with another code");
  for (const auto& word : opts->sprint_config) {
    require(config::parse_word_with_variables(config::word_text(word)) == word,
            "a word's text form reads back to another word");
    (void)config::display_word(word);
  }

  auto format = config::wire_format_of(*opts);
  require(format.framing == config::wire_framing(opts->framing) &&
              format.array_module == opts->array_global_module,
          "the wire format is not the options'");

  // The canonical form reads back to the same options, and renders the same.
  const auto canonical = to_json_string(*opts);
  auto again = parse_options(canonical);
  require(again && *again == *opts && to_json_string(*again) == canonical,
          "the canonical JSON does not read back to the same options");
  return 0;
}
