#pragma once

/// @file
/// The one declaration of every parameter of `sprint-sim`: its name, the
/// member it sets and how its value is read, what it means, which topology
/// it applies to, whether only the process takes it, and whether it is
/// required; its default is the member's initializer in `sprint_sim_config`.
/// Parsing (`parse_sim_parameters`) and `sprint-sim --help` are derived
/// from this table.

#include <charconv>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/sprint_sim_config.hpp"
#include "sprintrt/error.hpp"

namespace sprintrt::sim {

/// One `--KEY=VALUE` argument.
struct sim_argument {
  /// The argument as given, for messages.
  std::string_view text;
  /// The part of KEY after its last '.'.
  std::string_view name;
  /// Everything after the first '='.
  std::string_view value;

  /// Returns an `invalid_options` error quoting the argument.
  caf::error error(std::string_view what) const;
};

/// What a parse has read so far.
struct parameter_state {
  /// Who the parameters are for.
  parameter_scope scope = parameter_scope::process;
  /// The configuration, each parameter applied in turn.
  sprint_sim_config config;
  /// The known parameters given so far, each once, in the order of their
  /// first appearance.
  std::vector<std::string_view> given;

  /// Returns whether the parameter `name` was given.
  bool was_given(std::string_view name) const;
};

/// Which topology a parameter is about; a parameter of the other one is
/// ignored with a warning.
enum class parameter_topology : uint8_t { any, ctc, hmm };

/// When a parameter must be given.
enum class requirement : uint8_t {
  /// Never.
  optional,
  /// In the `sprint-sim` process (the pipe parameters).
  process,
  /// Always.
  always,
};

/// One parameter, as declared in the table.
struct sim_parameter {
  /// The name after the last '.' of the key.
  std::string_view name;
  /// The form of its value in `--help` ("FILE", "ctc|hmm").
  std::string_view value_form;
  /// What it means, for `--help`.
  std::string_view help;
  /// Which topology it is about.
  parameter_topology topology = parameter_topology::any;
  /// Whether it injects faults into the process, and so is refused for
  /// in-process workers.
  bool process_only = false;
  /// When it must be given; what the requirement's message adds in
  /// parentheses, if anything, is `required_because`.
  requirement required = requirement::optional;
  /// See `required`.
  std::string_view required_because;
  /// Whether a parse satisfied the requirement (given, and with a value
  /// that counts).
  std::function<bool(const parameter_state&)> satisfied;
  /// Reads the argument's value into the configuration.
  std::function<caf::error(const sim_argument&, sprint_sim_config&)> apply;
  /// Renders the parameter's value in a configuration ("" for none): the
  /// default `--help` shows is that of `sprint_sim_config{}`.
  std::function<std::string(const sprint_sim_config&)> show;
};

/// Returns every parameter, in the order of `--help`.
const std::vector<sim_parameter>& sim_parameters();

/// Returns the parameter called `name`, or null.
const sim_parameter* find_sim_parameter(std::string_view name);

/// Returns the usage line of `sprint-sim`: the parameters the process
/// requires, then "[--*.NAME=VALUE ...]".
std::string sim_usage();

/// Returns the list of parameters `sprint-sim --help` prints: per parameter
/// `--*.NAME=FORM`, what it means, and its default in brackets.
std::string sim_parameters_help();

/// Returns the number of type T (an integer, or a float that may be inf)
/// that is all of `text`, with an optional '+'.
template <class T>
std::optional<T> parse_decimal(std::string_view text) {
  if (!text.empty() && text.front() == '+')
    text.remove_prefix(1);
  T x{};
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), x);
  if (text.empty() || ec != std::errc{} || end != text.data() + text.size())
    return std::nullopt;
  return x;
}

} // namespace sprintrt::sim
