#include "sim/sprint_sim_config.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <chrono>
#include <string_view>

#include "protocol/utf8.hpp"
#include "sim/ctc_topology.hpp"

namespace sprintrt::sim {

namespace {

caf::error invalid(std::string message) {
  return make_error(errc::invalid_options, std::move(message));
}

std::string lower(std::string_view text) {
  std::string result{text};
  for (auto& c : result)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return result;
}

std::optional<bool> parse_bool(std::string_view text) {
  auto x = lower(text);
  if (x == "true" || x == "yes" || x == "on" || x == "1")
    return true;
  if (x == "false" || x == "no" || x == "off" || x == "0")
    return false;
  return std::nullopt;
}

/// A decimal number of type T (an integer, or a float that may be inf) in
/// all of `text`, with an optional '+'.
template <class T>
std::optional<T> parse_number(std::string_view text) {
  if (!text.empty() && text.front() == '+')
    text.remove_prefix(1);
  T x{};
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), x);
  if (text.empty() || ec != std::errc{} || end != text.data() + text.size())
    return std::nullopt;
  return x;
}

/// Like Python's int(): white space around the number is allowed.
std::optional<int> parse_python_int(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front())))
    text.remove_prefix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back())))
    text.remove_suffix(1);
  return parse_number<int>(text);
}

std::optional<std::string> any_text(std::string_view text) {
  return std::string{text};
}

std::optional<std::string> non_empty(std::string_view text) {
  if (text.empty())
    return std::nullopt;
  return std::string{text};
}

std::optional<topology_kind> parse_topology(std::string_view text) {
  if (text == "ctc")
    return topology_kind::ctc;
  if (text == "hmm")
    return topology_kind::hmm;
  return std::nullopt;
}

/// A module name that can follow GLOBAL in a pickle: dotted identifiers.
std::optional<std::string> parse_module_name(std::string_view name) {
  if (name.empty() || name.front() == '.' || name.back() == '.')
    return std::nullopt;
  for (char c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '.')
      return std::nullopt;
  return std::string{name};
}

std::optional<protocol::loss_encoding> parse_loss_encoding(std::string_view text) {
  if (text == "float")
    return protocol::loss_encoding::python_float;
  if (text == "numpy-float32")
    return protocol::loss_encoding::numpy_float32;
  return std::nullopt;
}

/// The child name must be something Python can decode.
std::optional<std::string> parse_child_name(std::string_view text) {
  if (text.empty() || !protocol::is_valid_utf8(text))
    return std::nullopt;
  return std::string{text};
}

std::optional<spdlog::level::level_enum> parse_log_level(std::string_view text) {
  auto level = spdlog::level::from_str(std::string{text});
  if (level == spdlog::level::off && text != "off")
    return std::nullopt;
  return level;
}

/// At most an hour: a longer delay is a hang, and says so better.
std::optional<std::chrono::milliseconds> parse_delay(std::string_view text) {
  constexpr uint32_t max_delay = 3'600'000;
  auto x = parse_number<uint32_t>(text);
  if (!x || *x > max_delay)
    return std::nullopt;
  return std::chrono::milliseconds{*x};
}

std::optional<double> parse_probability(std::string_view text) {
  double x = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), x);
  if (ec != std::errc{} || end != text.data() + text.size() || !(x >= 0.0 && x <= 1.0))
    return std::nullopt;
  return x;
}

/// One `--KEY=VALUE` argument.
struct argument {
  /// The argument as given, for messages.
  std::string_view text;
  /// The part of KEY after its last '.'.
  std::string_view name;
  std::string_view value;

  caf::error error(std::string_view what) const {
    return invalid("argument '" + std::string{text} + "': " + std::string{what});
  }
};

caf::expected<argument> split_argument(const std::string& text) {
  std::string_view view{text};
  const auto eq = view.find('=');
  if (view.substr(0, 2) != "--" || eq == std::string_view::npos)
    return invalid("argument '" + text + "': expected RASR style --SELECTOR.NAME=VALUE");
  auto key = view.substr(2, eq - 2);
  auto name = key.substr(key.rfind('.') + 1); // npos + 1 == 0: all of key
  if (name.empty())
    return invalid("argument '" + text + "': the parameter name is empty");
  return argument{text, name, view.substr(eq + 1)};
}

/// Parses the value of `arg` with `parse` into `target`, or fails saying
/// what was `expected`.
template <class T, class Parse>
caf::error assign(const argument& arg, T& target, Parse&& parse, std::string_view expected) {
  auto x = parse(arg.value);
  if (!x)
    return arg.error(expected);
  target = std::move(*x);
  return {};
}

/// The HMM cost parameters and where they go.
struct cost_parameter {
  std::string_view name;
  float hmm_options::*member;
};

constexpr std::array<cost_parameter, 5> cost_parameters{{
    {"hmm-loop-cost", &hmm_options::loop_cost},
    {"hmm-forward-cost", &hmm_options::forward_cost},
    {"hmm-silence-loop-cost", &hmm_options::silence_loop_cost},
    {"hmm-silence-entry-cost", &hmm_options::silence_entry_cost},
    {"hmm-silence-exit-cost", &hmm_options::silence_exit_cost},
}};

/// Parameters that real Sprint uses and `sprint-sim` accepts without
/// meaning: the segment order is the parent's business here.
constexpr std::array<std::string_view, 3> ignored_text_parameters{{
    "python-segment-order-pymod-path",
    "python-segment-order-pymod-name",
    "python-segment-order-config",
}};

/// The fault injection parameters of the `sprint-sim` process.
constexpr std::array<std::string_view, 6> fault_parameters{{
    "fault",
    "fault-after",
    "crash-segment",
    "delay-ms",
    "fault-rate",
    "fault-seed",
}};

bool is_fault_parameter(std::string_view name) {
  return std::find(fault_parameters.begin(), fault_parameters.end(), name) !=
         fault_parameters.end();
}

constexpr std::string_view expected_bool = "expected true or false";
constexpr std::string_view expected_column = "expected a column index (0 to 2^32-1)";

/// Applies arguments one by one to a config, then checks the whole.
class config_parser {
public:
  explicit config_parser(parameter_scope scope) : scope_(scope) {}

  caf::error apply(const argument& arg) {
    if (auto handled = apply_python_control(arg))
      return *handled;
    if (auto handled = apply_criterion(arg))
      return *handled;
    if (auto handled = apply_service(arg))
      return *handled;
    if (auto handled = apply_faults(arg))
      return *handled;
    config_.warnings.push_back("unknown parameter '" + std::string{arg.text} + "' ignored");
    return {};
  }

  caf::expected<sprint_sim_config> finish() {
    if (scope_ == parameter_scope::process) {
      if (auto err = check_pipes())
        return err;
    }
    if (config_.corpus_path.empty())
      return invalid("--*.corpus=FILE is required");
    if (fault_after_given_ && !counts_requests(config_.faults.kind))
      return invalid("--*.fault-after applies to fault=crash, hang, garbage, oversized-prefix, "
                     "wrong-shape or bomb only, not to "
                     "fault=" +
                     std::string{to_string(config_.faults.kind)});
    const auto topology_name = config_.topology == topology_kind::ctc ? "ctc" : "hmm";
    for (const auto& name : foreign_topology_options())
      config_.warnings.push_back("--*." + name + " does not apply to topology=" + topology_name +
                                 ": ignored");
    return std::move(config_);
  }

private:
  // Each apply_* returns nothing when the parameter is not its own, else
  // the outcome of applying it.
  using outcome = std::optional<caf::error>;

  /// A process talks over the pipes only when both are configured.
  caf::error check_pipes() const {
    if (!python_control_enabled_)
      return invalid("--*.python-control-enabled=true is required (RASR talks over the pipes "
                     "only with PythonControl enabled)");
    if (!pymod_config_given_)
      return invalid("--*.pymod-config=c2p_fd:C,p2c_fd:P,... is required (it names the pipes)");
    return {};
  }

  outcome apply_python_control(const argument& arg) {
    if (arg.name == "python-control-enabled")
      return assign(arg, python_control_enabled_, parse_bool, expected_bool);
    if (arg.name == "pymod-config")
      return apply_pymod_config(arg);
    if (arg.name == "pymod-path")
      return assign(arg, config_.pymod_path, any_text, "");
    if (arg.name == "pymod-name")
      return assign(arg, config_.pymod_name, any_text, "");
    if (arg.name == "python-segment-order")
      return assign(arg, config_.python_segment_order, parse_bool, expected_bool);
    if (arg.name == "python-segment-order-allow-copy") {
      bool ignored = false;
      return assign(arg, ignored, parse_bool, expected_bool);
    }
    for (auto name : ignored_text_parameters)
      if (arg.name == name)
        return caf::error{};
    return std::nullopt;
  }

  caf::error apply_pymod_config(const argument& arg) {
    auto parsed = parse_python_control_config(arg.value);
    if (!parsed)
      return arg.error(error_message(parsed.error()));
    config_.python_control = std::move(*parsed);
    pymod_config_given_ = true;
    auto shm = config_.python_control.extra.find("EnableAutoNumpySharedMemPickling");
    if (shm != config_.python_control.extra.end() && shm->second == "True")
      config_.warnings.push_back("EnableAutoNumpySharedMemPickling:True is not supported: "
                                 "arrays must be sent inline in the pickles");
    return {};
  }

  outcome apply_criterion(const argument& arg) {
    if (arg.name == "corpus")
      return assign(arg, config_.corpus_path, non_empty, "expected a file name");
    if (arg.name == "criterion")
      return assign(arg, config_.criterion, parse_criterion_kind, "expected full-sum or zero");
    if (arg.name == "topology")
      return assign(arg, config_.topology, parse_topology, "expected ctc or hmm");
    if (arg.name == "blank-index") {
      blank_index_given_ = true;
      return assign(arg, config_.blank_index, parse_number<uint32_t>, expected_column);
    }
    if (arg.name == "hmm-silence-index") {
      note_hmm_option(arg.name);
      if (arg.value == "none") {
        config_.hmm.silence_index.reset();
        return caf::error{};
      }
      return assign(arg, config_.hmm.silence_index, parse_number<uint32_t>,
                    std::string{expected_column} + " or none");
    }
    for (const auto& cost : cost_parameters)
      if (arg.name == cost.name) {
        note_hmm_option(arg.name);
        return assign(arg, config_.hmm.*cost.member, parse_number<float>,
                      "expected a cost in -log space (a number, or inf)");
      }
    return std::nullopt;
  }

  outcome apply_service(const argument& arg) {
    auto& service = config_.service;
    if (arg.name == "framing")
      return assign(arg, service.wire.framing, protocol::parse_framing,
                    "expected length_prefixed or raw");
    if (arg.name == "array-module")
      return assign(arg, service.wire.array_module, parse_module_name,
                    "expected a Python module name such as returnn.util.task_system");
    if (arg.name == "loss-type")
      return assign(arg, service.loss_encoding, parse_loss_encoding,
                    "expected float or numpy-float32");
    if (arg.name == "name")
      return assign(arg, service.child_name, parse_child_name, "expected a non-empty UTF-8 name");
    if (arg.name == "log-level")
      return assign(arg, config_.log_level, parse_log_level,
                    "expected trace, debug, info, warn, error, critical or off");
    return std::nullopt;
  }

  outcome apply_faults(const argument& arg) {
    if (scope_ == parameter_scope::in_process && is_fault_parameter(arg.name))
      return arg.error("'" + std::string{arg.name} +
                       "' injects faults into the sprint-sim process; in-process workers take "
                       "their delays and failures from sim_worker_behavior");
    auto& faults = config_.faults;
    if (arg.name == "fault")
      return assign(arg, faults.kind, parse_fault_kind,
                    "expected none, crash, hang, garbage, exit-at-start, no-init-reply, "
                    "bad-version, oversized-prefix, wrong-shape, random or bomb");
    if (arg.name == "fault-after") {
      fault_after_given_ = true;
      return assign(arg, faults.after, parse_number<size_t>, "expected a number of requests");
    }
    if (arg.name == "crash-segment")
      return assign(arg, faults.crash_segment, non_empty, "expected a segment name");
    if (arg.name == "delay-ms")
      return assign(arg, faults.delay, parse_delay, "expected milliseconds from 0 to 3600000");
    if (arg.name == "fault-rate")
      return assign(arg, faults.rate, parse_probability, "expected a probability from 0 to 1");
    if (arg.name == "fault-seed")
      return assign(arg, faults.seed, parse_number<uint64_t>, "expected a seed (0 to 2^64-1)");
    return std::nullopt;
  }

  void note_hmm_option(std::string_view name) {
    if (std::find(hmm_options_given_.begin(), hmm_options_given_.end(), name) ==
        hmm_options_given_.end())
      hmm_options_given_.emplace_back(name);
  }

  /// The names of options given for the topology that was not chosen.
  std::vector<std::string> foreign_topology_options() const {
    if (config_.topology == topology_kind::ctc)
      return hmm_options_given_;
    if (blank_index_given_)
      return {"blank-index"};
    return {};
  }

  parameter_scope scope_;
  sprint_sim_config config_;
  bool python_control_enabled_ = false;
  bool pymod_config_given_ = false;
  bool fault_after_given_ = false;
  bool blank_index_given_ = false;
  std::vector<std::string> hmm_options_given_;
};

} // namespace

caf::expected<python_control_config> parse_python_control_config(std::string_view text) {
  python_control_config result;
  std::optional<int> c2p;
  std::optional<int> p2c;
  while (!text.empty()) {
    const auto comma = text.find(',');
    const auto item = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view{} : text.substr(comma + 1);
    if (item.empty())
      continue;
    const auto colon = item.find(':');
    if (colon == std::string_view::npos)
      return invalid("pymod-config item '" + std::string{item} + "' is not key:value");
    const auto key = item.substr(0, colon);
    const auto value = item.substr(colon + 1);
    if (key == "c2p_fd" || key == "p2c_fd" || key == "minPythonControlVersion") {
      auto x = parse_python_int(value);
      if (!x)
        return invalid("pymod-config " + std::string{key} + " '" + std::string{value} +
                       "' is not an integer");
      (key == "c2p_fd" ? c2p : key == "p2c_fd" ? p2c : result.min_version) = *x;
    } else {
      result.extra[std::string{key}] = std::string{value};
    }
  }
  if (!c2p || !p2c)
    return invalid(std::string{"pymod-config lacks "} + (c2p ? "p2c_fd" : "c2p_fd") +
                   " (the pipe the child " + (c2p ? "reads" : "writes") + ")");
  if (*c2p < 0 || *p2c < 0)
    return invalid("pymod-config file descriptors must not be negative, got c2p_fd " +
                   std::to_string(*c2p) + " and p2c_fd " + std::to_string(*p2c));
  if (*c2p == *p2c)
    return invalid("pymod-config c2p_fd and p2c_fd are both " + std::to_string(*c2p));
  if (result.min_version && *result.min_version > python_control_version)
    return invalid("minPythonControlVersion " + std::to_string(*result.min_version) +
                   " is higher than this PythonControl's version " +
                   std::to_string(python_control_version));
  result.c2p_fd = *c2p;
  result.p2c_fd = *p2c;
  return result;
}

caf::expected<sprint_sim_config> parse_sprint_sim_config(const std::vector<std::string>& args) {
  return parse_sim_parameters(args, parameter_scope::process);
}

caf::expected<sprint_sim_config> parse_sim_parameters(const std::vector<std::string>& args,
                                                      parameter_scope scope) {
  config_parser parser{scope};
  for (const auto& text : args) {
    auto arg = split_argument(text);
    if (!arg)
      return arg.error();
    if (auto err = parser.apply(*arg))
      return err;
  }
  return parser.finish();
}

caf::expected<std::shared_ptr<const topology>> make_topology(const sprint_sim_config& config) {
  if (config.topology == topology_kind::ctc)
    return std::make_shared<const ctc_topology>(config.blank_index);
  auto hmm = hmm_topology::make(config.hmm);
  if (!hmm)
    return hmm.error();
  return std::make_shared<const hmm_topology>(std::move(*hmm));
}

} // namespace sprintrt::sim
