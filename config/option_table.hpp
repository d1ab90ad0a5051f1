#pragma once

/// @file
/// The one declaration of every option of `sprint_options`: its JSON key,
/// its member, the codec that reads and writes it, whether it is required,
/// whether it is local to a machine, and its help text (its default is the
/// member's initializer). Parsing, canonical JSON, equality, the remote
/// pools' options key, `sprintrt doctor --list-options` and the README's
/// table of options are all derived from this table.

#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "common/span.hpp"
#include "config/option_codecs.hpp"
#include "sprintrt/options.hpp"

namespace sprintrt::config {

/// Whether an option's value may differ between a trainer and the remote
/// pools it uses.
enum class option_scope : uint8_t {
  /// It decides the results (which Sprint, its arguments, the protocol):
  /// both ends must have the same value.
  shared,
  /// It is about the local machine and process (children, timeouts, the
  /// environment, where output goes): each end has its own.
  machine_local,
};

/// One option, as declared in the table.
struct option_descriptor {
  /// The JSON key (RETURNN's name where RETURNN has the option).
  std::string_view key;
  /// For a required option, what it is, for the message when it is missing
  /// ("the Sprint executable"); empty for an optional one, whose `null`
  /// means its default.
  std::string_view required_what;
  /// Whether remote pools must have the same value.
  option_scope scope;
  /// What the option means (Markdown), for the README and `--list-options`.
  std::string_view help;
  /// Reads a (for an optional option, non-null) value into its member.
  caf::error (*read)(const option_field&, sprint_options&);
  /// Writes its member in the canonical form.
  nlohmann::json (*write)(const sprint_options&);
  /// Compares its member.
  bool (*equal)(const sprint_options&, const sprint_options&);

  /// Returns whether the option must be given.
  bool required() const noexcept { return !required_what.empty(); }
};

/// Returns every option, in the order of the documentation.
span<const option_descriptor> option_table() noexcept;

/// Which options `options_json` writes.
enum class option_selection : uint8_t {
  /// Every option (`to_json_string`).
  all,
  /// Only the `shared` ones (the remote pools' options key).
  shared,
};

/// Returns the canonical JSON object of the `which` options of `opts`.
nlohmann::json options_json(const sprint_options& opts, option_selection which);

/// Returns the default of an optional option as documented: its canonical
/// JSON in backquotes, "none" for null; "(required)" for a required one.
std::string documented_default(const option_descriptor& option);

/// Returns the README's table of options (Markdown, one row per option).
std::string options_markdown_table();

/// Returns a plain-text listing of the options for a terminal: per option a
/// line with its key, default and scope, then its help text indented.
std::string options_text_listing();

} // namespace sprintrt::config
