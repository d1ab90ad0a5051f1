#pragma once

/// @file
/// How the value of each kind of option is read from JSON (validated, with
/// errors that name the option by its path) and written back in the
/// canonical form of `to_json_string`. One codec per kind of value, each a
/// struct with `read(field, member)` and `write(member)`; the option table
/// (option_table.hpp) pairs each option's member with its codec.

#include <array>
#include <chrono>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "sprintrt/error.hpp"
#include "sprintrt/options.hpp"

namespace sprintrt::config {

/// Returns an `invalid_options` error with `message`.
caf::error invalid_options(std::string message);

/// Returns a value for an error message: its JSON text, cut short when long.
std::string shown(const nlohmann::json& value);

/// One value under validation: its path for messages ("remote[0].port") and
/// the `config:NAME` it was taken from, if any.
struct option_field {
  /// The option's key, followed by the path inside its value.
  std::string path;
  /// The NAME of the `config:NAME` reference the value came through, or "".
  std::string via;
  /// The value.
  const nlohmann::json& value;

  /// Returns "option 'PATH'" and where it came from, for messages.
  std::string name() const;

  /// Returns the error that the value is not what was `expected`.
  caf::error fail(const std::string& expected) const;

  /// Returns the error that the value has the problem `what`.
  caf::error problem(const std::string& what) const;

  /// Returns the error that the value is required but missing.
  caf::error missing() const;

  /// Returns the field of a part of this value, its path extended by `suffix`.
  option_field child(const std::string& suffix, const nlohmann::json& child_value) const;
};

/// Returns `names` as a message's choice: "\"a\" or \"b\"", "\"a\", \"b\" or \"c\"".
std::string choice_text(const std::vector<std::string_view>& names);

/// The codec of an enum written as one of its names: `Names::names`, an
/// array of {name, value}, is the one list both directions use.
template <class Enum, class Names>
struct named_enum_codec {
  static caf::error read(const option_field& f, Enum& out) {
    std::vector<std::string_view> choices;
    for (const auto& [name, value] : Names::names) {
      if (f.value.is_string() && f.value.get_ref<const std::string&>() == name) {
        out = value;
        return {};
      }
      choices.push_back(name);
    }
    return f.fail(choice_text(choices));
  }

  static nlohmann::json write(Enum x) {
    for (const auto& [name, value] : Names::names)
      if (value == x)
        return std::string{name};
    return std::string{Names::names[0].first};
  }
};

/// Any string (`pymodPath`).
struct text_codec {
  static caf::error read(const option_field& f, std::string& out);
  static nlohmann::json write(const std::string& x) { return x; }
};

/// A non-empty string (`arrayGlobalModule`).
struct non_empty_text_codec {
  static caf::error read(const option_field& f, std::string& out);
  static nlohmann::json write(const std::string& x) { return x; }
};

/// A non-empty string whose absence is "" (`sprintExecPath`, `pymodName`):
/// "" is written as null, which reads back as not given.
struct optional_name_codec : non_empty_text_codec {
  static nlohmann::json write(const std::string& x);
};

/// true or false.
struct flag_codec {
  static caf::error read(const option_field& f, bool& out);
  static nlohmann::json write(bool x) { return x; }
};

/// Reads an integer from `min` to `max`; `expected` is what a message says.
caf::error read_count(const option_field& f, uint64_t min, uint64_t max,
                      const std::string& expected, uint64_t& out);

/// An integer >= 0 that fits the member's type.
struct count_codec {
  template <class T>
  static caf::error read(const option_field& f, T& out) {
    uint64_t x = 0;
    if (auto err = read_count(f, 0, std::numeric_limits<T>::max(), "an integer >= 0", x))
      return err;
    out = static_cast<T>(x);
    return {};
  }
  template <class T>
  static nlohmann::json write(T x) {
    return x;
  }
};

/// A number of seconds > 0 (at most 1e9), kept as milliseconds rounded up.
struct seconds_codec {
  static caf::error read(const option_field& f, std::chrono::milliseconds& out);
  static nlohmann::json write(std::chrono::milliseconds x) { return x.count() / 1000.0; }
};

/// `sprintConfigStr`: a string split like a shell splits words, or a list of
/// words; written as the list.
struct config_words_codec {
  static caf::error read(const option_field& f, std::vector<config_word>& out);
  static nlohmann::json write(const std::vector<config_word>& x);
};

/// `sprintControlConfig`: an object of values rendered as Python's `%s`.
struct control_config_codec {
  static caf::error read(const option_field& f, std::map<std::string, std::string>& out);
  static nlohmann::json write(const std::map<std::string, std::string>& x) { return x; }
};

/// `framing`: "length_prefixed" or "raw".
struct framing_names {
  static constexpr std::array<std::pair<std::string_view, pipe_framing>, 2> names{
      {{"length_prefixed", pipe_framing::length_prefixed}, {"raw", pipe_framing::raw}}};
};
using framing_codec = named_enum_codec<pipe_framing, framing_names>;

/// `onCancel`: "auto", "keep" or "kill".
struct cancel_policy_names {
  static constexpr std::array<std::pair<std::string_view, cancel_policy>, 3> names{
      {{"auto", cancel_policy::automatic},
       {"keep", cancel_policy::keep},
       {"kill", cancel_policy::kill}}};
};
using cancel_policy_codec = named_enum_codec<cancel_policy, cancel_policy_names>;

/// `sharedMemory`: "auto" or "off".
struct shared_memory_names {
  static constexpr std::array<std::pair<std::string_view, shared_memory_mode>, 2> names{
      {{"auto", shared_memory_mode::automatic}, {"off", shared_memory_mode::off}}};
};
using shared_memory_codec = named_enum_codec<shared_memory_mode, shared_memory_names>;

/// `env`: {"set": {...}, "unset": [...]}.
struct environment_codec {
  static caf::error read(const option_field& f, environment_changes& out);
  static nlohmann::json write(const environment_changes& x);
};

/// `remote`: a list of "host:port" strings or {"host", "port"} objects.
struct remote_codec {
  static caf::error read(const option_field& f, std::vector<remote_endpoint>& out);
  static nlohmann::json write(const std::vector<remote_endpoint>& x);
};

/// `remoteTls`: {"certificate", "key", "ca"}; none is written as null.
struct tls_codec {
  static caf::error read(const option_field& f, tls_files& out);
  static nlohmann::json write(const tls_files& x);
};

/// `childOutput`: "log", "inherit" or {"file": DIR}.
struct child_output_codec {
  static caf::error read(const option_field& f, child_output_mode& out);
  static nlohmann::json write(const child_output_mode& x);
};

} // namespace sprintrt::config
