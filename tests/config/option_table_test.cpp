// The option table (config/option_table.hpp): every option declared once, and
// what is derived from it: the canonical JSON of each selection, the documented
// defaults, the README's table and the terminal listing.

#include "config/option_table.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <fstream>
#include <set>
#include <string>

#include "sprintrt/options.hpp"

using namespace sprintrt;
using config::option_scope;
using config::option_selection;

namespace {

/// The options of `full_json` (below).
sprint_options full_options();

const config::option_descriptor& option(std::string_view key) {
  for (const auto& option : config::option_table())
    if (option.key == key)
      return option;
  FAIL("no option " << key);
  throw;
}

/// The rows of the table in the README's section "Options".
std::string readme_options_table() {
  std::ifstream in{SPRINTRT_SOURCE_DIR "/README.md"};
  REQUIRE(in);
  std::string line, table;
  bool in_section = false;
  while (std::getline(in, line)) {
    if (line.rfind("## ", 0) == 0)
      in_section = line.rfind("## Options", 0) == 0;
    else if (in_section && line.rfind('|', 0) == 0)
      table += line + "\n";
    else if (in_section && !table.empty())
      break;
  }
  return table;
}

/// Options with every field away from its default.
constexpr std::string_view full_json = R"({
  "sprintExecPath": "/opt/rasr/nn-trainer", "sprintConfigStr": "--a=$X 'b c'",
  "minPythonControlVersion": 3, "sprintControlConfig": {"a": true},
  "usePythonSegmentOrder": false, "numInstances": 4, "pymodPath": "/src/returnn",
  "pymodName": "SprintControl", "framing": "raw", "arrayGlobalModule": "TaskSystem",
  "initTimeout": 1.5, "replyTimeout": 2, "exitGrace": 3, "maxRetries": 0, "onCancel": "kill",
  "env": {"set": {"A": "1"}, "unset": ["B"]}, "remote": ["gpu1:7000"],
  "remoteTls": {"certificate": "c.pem", "key": "k.pem", "ca": "ca.pem"}, "remoteWait": 4.5,
  "childOutput": {"file": "/var/log/sprint"}, "sharedMemory": "off",
  "sharedMemoryThreshold": 4096})";

sprint_options full_options() {
  auto opts = parse_options(full_json);
  REQUIRE(opts);
  return *opts;
}

} // namespace

TEST_CASE("the README's table of options is the one the option table generates") {
  INFO("regenerate it with: sprintrt doctor --list-options --markdown");
  CHECK(readme_options_table() == config::options_markdown_table());
}

TEST_CASE("every option has its own key, and none is required") {
  std::set<std::string_view> keys;
  for (const auto& option : config::option_table()) {
    INFO(option.key);
    CHECK(keys.insert(option.key).second);
    CHECK_FALSE(option.help.empty());
    // sprintExecPath too: only a pool that starts children needs it.
    CHECK_FALSE(option.required());
  }
  CHECK(keys.size() == 22);
}

TEST_CASE("each option's codec reads back what it writes") {
  const auto full = full_options();
  for (const auto& option : config::option_table()) {
    INFO(option.key);
    const auto written = option.write(full);
    sprint_options read;
    REQUIRE_FALSE(option.read(config::option_field{std::string{option.key}, "", written}, read));
    CHECK(option.equal(read, full));
    CHECK_FALSE(option.equal(read, sprint_options{}));
  }
}

// With as many entries as sprint_options has members (checked when the table
// compiles), entries that never touch each other's member give each member
// exactly one entry.
TEST_CASE("every entry reads, writes and compares a member no other entry touches") {
  const auto full = full_options();
  for (const auto& option : config::option_table()) {
    INFO(option.key);
    const auto written = option.write(full);
    sprint_options changed;
    REQUIRE_FALSE(option.read(config::option_field{std::string{option.key}, "", written}, changed));
    for (const auto& other : config::option_table()) {
      if (other.key == option.key)
        continue;
      INFO("and " << other.key);
      CHECK(other.equal(changed, sprint_options{}));
      CHECK(other.write(changed) == other.write(sprint_options{}));
    }
  }
}

TEST_CASE("the shared selection leaves out exactly the options local to a machine") {
  const auto full = full_options();
  const auto all = config::options_json(full, option_selection::all);
  const auto shared = config::options_json(full, option_selection::shared);
  CHECK(all.dump() == to_json_string(full));
  std::set<std::string_view> local;
  for (const auto& option : config::option_table()) {
    INFO(option.key);
    const std::string key{option.key};
    CHECK(all.contains(key));
    CHECK(shared.contains(key) == (option.scope == option_scope::shared));
    if (option.scope == option_scope::machine_local)
      local.insert(option.key);
  }
  // The ones the remote options key has always left out.
  CHECK(local == std::set<std::string_view>{"numInstances", "remote", "initTimeout", "replyTimeout",
                                            "exitGrace", "maxRetries", "onCancel", "env",
                                            "remoteTls", "remoteWait", "childOutput",
                                            "sharedMemory", "sharedMemoryThreshold"});
}

TEST_CASE("documented defaults are those of a default sprint_options") {
  CHECK(config::documented_default(option("sprintExecPath")) == "none");
  CHECK(config::documented_default(option("numInstances")) == "`1`");
  CHECK(config::documented_default(option("initTimeout")) == "`60.0`");
  CHECK(config::documented_default(option("childOutput")) == "`\"log\"`");
  CHECK(config::documented_default(option("remoteTls")) == "none");
  CHECK(config::documented_default(option("pymodName")) == "none");
}

TEST_CASE("the Markdown table has a header and a row per option") {
  const auto table = config::options_markdown_table();
  CHECK(table.rfind("| key | default | on a remote pool | meaning |\n|---|---|---|---|\n", 0) == 0);
  CHECK(std::count(table.begin(), table.end(), '\n') == 2 + 22);
  CHECK(table.find("| `numInstances` | `1` | its own | children per pool") != std::string::npos);
  CHECK(table.find("| `framing` | `\"length_prefixed\"` | the same | ") != std::string::npos);
}

TEST_CASE("the text listing names every option with its default and meaning") {
  const auto text = config::options_text_listing();
  for (const auto& option : config::option_table()) {
    INFO(option.key);
    CHECK(text.find(std::string{option.key} + " (") != std::string::npos);
    CHECK(text.find("    " + std::string{option.help} + "\n") != std::string::npos);
  }
  CHECK(text.find("sprintExecPath (default none)\n") != std::string::npos);
  CHECK(text.find("maxRetries (default `2`; a remote pool has its own)\n") != std::string::npos);
}

TEST_CASE("null is the default of every option, and a wrong value names its key") {
  const auto defaults = parse_options("{}");
  REQUIRE(defaults);
  for (const auto& option : config::option_table()) {
    INFO(option.key);
    nlohmann::json doc = nlohmann::json::object();
    doc[std::string{option.key}] = nullptr;
    const auto with_null = parse_options(doc.dump());
    REQUIRE(with_null);
    CHECK(*with_null == *defaults);
    doc[std::string{option.key}] = nlohmann::json::parse("[[[]]]");
    const auto wrong = parse_options(doc.dump());
    REQUIRE_FALSE(wrong);
    CHECK(error_message(wrong.error()).rfind("option '" + std::string{option.key}, 0) == 0);
  }
}
