#include "sim/sprint_sim_parameters.hpp"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <type_traits>
#include <utility>

#include "protocol/utf8.hpp"

namespace sprintrt::sim {

namespace {

// -- value parsers ------------------------------------------------------------

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
  auto x = parse_decimal<uint32_t>(text);
  if (!x || *x > max_delay)
    return std::nullopt;
  return std::chrono::milliseconds{*x};
}

std::optional<double> parse_non_negative(std::string_view text) {
  auto x = parse_decimal<double>(text);
  if (!x || !std::isfinite(*x) || *x < 0)
    return std::nullopt;
  return x;
}

std::optional<double> parse_positive(std::string_view text) {
  auto x = parse_non_negative(text);
  if (!x || *x == 0)
    return std::nullopt;
  return x;
}

std::optional<uint32_t> parse_lm_order(std::string_view text) {
  auto x = parse_decimal<uint32_t>(text);
  if (!x || *x < 1 || *x > 3)
    return std::nullopt;
  return x;
}

std::optional<double> parse_probability(std::string_view text) {
  double x = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), x);
  if (ec != std::errc{} || end != text.data() + text.size() || !(x >= 0.0 && x <= 1.0))
    return std::nullopt;
  return x;
}

// -- how values are shown in --help --------------------------------------------

std::string show_value(bool x) {
  return x ? "true" : "false";
}

std::string show_value(const std::string& x) {
  return x;
}

template <class T, class = std::enable_if_t<std::is_integral_v<T>>>
std::string show_value(T x) {
  return std::to_string(x);
}

std::string show_value(double x) {
  char text[32];
  std::snprintf(text, sizeof(text), "%g", x);
  return text;
}

std::string show_value(const std::optional<uint32_t>& x) {
  return x ? std::to_string(*x) : "none";
}

std::string show_value(const std::optional<std::string>& x) {
  return x.value_or("");
}

std::string show_value(criterion_kind x) {
  return std::string{to_string(x)};
}

std::string show_value(topology_kind x) {
  return x == topology_kind::ctc ? "ctc" : "hmm";
}

std::string show_value(protocol::framing x) {
  return protocol::to_string(x);
}

std::string show_value(protocol::loss_encoding x) {
  return x == protocol::loss_encoding::python_float ? "float" : "numpy-float32";
}

std::string show_value(spdlog::level::level_enum x) {
  // The spellings `log-level` lists, not spdlog's ("warning").
  static constexpr const char* names[] = {"trace", "debug",    "info", "warn",
                                          "error", "critical", "off"};
  return names[x];
}

std::string show_value(fault_kind x) {
  return to_string(x);
}

std::string show_value(std::chrono::milliseconds x) {
  return std::to_string(x.count());
}

// -- declarations ---------------------------------------------------------------

/// A parameter whose value `parse` reads into the member `access` selects
/// (a generic lambda, called on a const and a mutable config), failing
/// with "expected " and `what`.
template <class Access, class Parse>
sim_parameter value(std::string_view name, std::string_view form, std::string_view help,
                    Access access, Parse parse, std::string_view what) {
  const auto expected = "expected " + std::string{what};
  sim_parameter p;
  p.name = name;
  p.value_form = form;
  p.help = help;
  p.apply = [access, parse, expected](const sim_argument& arg, sprint_sim_config& config) {
    auto x = parse(arg.value);
    if (!x)
      return arg.error(expected);
    access(config) = std::move(*x);
    return caf::error{};
  };
  p.show = [access](const sprint_sim_config& config) { return show_value(access(config)); };
  return p;
}

/// A parameter real Sprint takes and `sprint-sim` accepts without meaning
/// (the segment order is the parent's business here); `parse` checks its
/// value when given.
template <class Parse>
sim_parameter ignored(std::string_view name, std::string_view form, Parse parse,
                      std::string_view what) {
  const auto expected = "expected " + std::string{what};
  sim_parameter p;
  p.name = name;
  p.value_form = form;
  p.help = "accepted, ignored";
  p.apply = [parse, expected](const sim_argument& arg, sprint_sim_config&) {
    return parse(arg.value) ? caf::error{} : arg.error(expected);
  };
  p.show = [](const sprint_sim_config&) { return std::string{}; };
  return p;
}

/// `p`, required `when`, satisfied as `satisfied` says.
sim_parameter required_in(requirement when, std::string_view because,
                          std::function<bool(const parameter_state&)> satisfied, sim_parameter p) {
  p.required = when;
  p.required_because = because;
  p.satisfied = std::move(satisfied);
  return p;
}

/// `p`, about `topology` only.
sim_parameter for_topology(parameter_topology topology, sim_parameter p) {
  p.topology = topology;
  return p;
}

/// `p`, refused for in-process workers.
sim_parameter process_only(sim_parameter p) {
  p.process_only = true;
  return p;
}

/// `pymod-config`: the pipes, parsed as SprintControl parses them.
sim_parameter pymod_config() {
  sim_parameter p;
  p.name = "pymod-config";
  p.value_form = "c2p_fd:C,p2c_fd:P,...";
  p.help = "the child's ends of the pipes (it writes to C, reads P), then optionally "
           "minPythonControlVersion:V (refused above this PythonControl's version) and other "
           "key:value items";
  p.apply = [](const sim_argument& arg, sprint_sim_config& config) {
    auto parsed = parse_python_control_config(arg.value);
    if (!parsed)
      return arg.error(error_message(parsed.error()));
    config.python_control = std::move(*parsed);
    auto shm = config.python_control.extra.find("EnableAutoNumpySharedMemPickling");
    if (shm != config.python_control.extra.end() && shm->second == "True")
      config.warnings.push_back("EnableAutoNumpySharedMemPickling:True is not supported: "
                                "arrays must be sent inline in the pickles");
    return caf::error{};
  };
  p.show = [](const sprint_sim_config&) { return std::string{}; };
  return required_in(
      requirement::process, "it names the pipes",
      [](const parameter_state& s) { return s.was_given("pymod-config"); }, p);
}

/// An HMM cost in -log space.
sim_parameter hmm_cost(std::string_view name, std::string_view help,
                       float criterion::hmm_options::*member) {
  return for_topology(parameter_topology::hmm,
                      value(
                          name, "C", help, [member](auto& c) -> auto& { return c.hmm.*member; },
                          parse_decimal<float>, "a cost in -log space (a number, or inf)"));
}

/// `hmm-silence-index`: a column, or `none` for no silence.
sim_parameter hmm_silence_index() {
  auto p = for_topology(parameter_topology::hmm,
                        value(
                            "hmm-silence-index", "N|none", "the HMM silence column",
                            [](auto& c) -> auto& { return c.hmm.silence_index; },
                            parse_decimal<uint32_t>, "a column index (0 to 2^32-1) or none"));
  p.apply = [column = std::move(p.apply)](const sim_argument& arg, sprint_sim_config& config) {
    if (arg.value != "none")
      return column(arg, config);
    config.hmm.silence_index.reset();
    return caf::error{};
  };
  return p;
}

constexpr std::string_view bool_values = "true or false";
constexpr std::string_view log_levels = "trace, debug, info, warn, error, critical or off";
constexpr std::string_view fault_kinds =
    "none, crash, hang, garbage, exit-at-start, no-init-reply, bad-version, oversized-prefix, "
    "wrong-shape, random, bomb, shm-outside, shm-scribble, shm-shrink or shm-claim";

std::vector<sim_parameter> declare_parameters() {
  return {
      required_in(
          requirement::process, "RASR talks over the pipes only with PythonControl enabled",
          [](const parameter_state& s) { return s.config.python_control_enabled; },
          value(
              "python-control-enabled", "true", "PythonControl, which the pipes need",
              [](auto& c) -> auto& { return c.python_control_enabled; }, parse_bool, bool_values)),
      pymod_config(),
      value(
          "pymod-path", "DIR", "recorded, ignored (real RASR loads its module from there)",
          [](auto& c) -> auto& { return c.pymod_path; }, any_text, ""),
      value(
          "pymod-name", "MODULE", "recorded, ignored (the module real RASR would load)",
          [](auto& c) -> auto& { return c.pymod_name; }, any_text, ""),
      value(
          "python-segment-order", "BOOL", "recorded, ignored (the parent orders the segments)",
          [](auto& c) -> auto& { return c.python_segment_order; }, parse_bool, bool_values),
      ignored("python-segment-order-allow-copy", "BOOL", parse_bool, bool_values),
      ignored("python-segment-order-pymod-path", "DIR", any_text, ""),
      ignored("python-segment-order-pymod-name", "MODULE", any_text, ""),
      ignored("python-segment-order-config", "TEXT", any_text, ""),
      required_in(
          requirement::always, "",
          [](const parameter_state& s) { return !s.config.corpus_path.empty(); },
          value(
              "corpus", "FILE", "one segment per line: NAME<TAB>label label ...",
              [](auto& c) -> auto& { return c.corpus_path; }, non_empty, "a file name")),
      value(
          "criterion", "full-sum|zero|mmi|bmmi|smbr",
          "zero: loss 0 and an all-zero error signal for any segment, no FSA run "
          "(transport-only benchmarks); mmi, bmmi, smbr: sequence-discriminative, over "
          "--*.denominator (docs/sequence-training.md)",
          [](auto& c) -> auto& { return c.criterion; }, parse_criterion_kind,
          "full-sum, zero, mmi, bmmi or smbr"),
      value(
          "denominator", "FILE|label-lm",
          "mmi, bmmi, smbr: the competing hypotheses, lines NAME<TAB>labels[<TAB>cost], or "
          "label-lm: every label sequence under a label n-gram of the corpus",
          [](auto& c) -> auto& { return c.denominator.source; }, non_empty,
          "a file name or label-lm"),
      value(
          "lm-order", "N", "label-lm: the n-gram's order",
          [](auto& c) -> auto& { return c.denominator.lm.order; }, parse_lm_order, "1, 2 or 3"),
      value(
          "lm-smoothing", "DELTA", "label-lm: added to every n-gram count",
          [](auto& c) -> auto& { return c.denominator.lm.smoothing; }, parse_non_negative,
          "a finite number >= 0"),
      value(
          "am-scale", "KAPPA", "mmi, bmmi, smbr: scales the log-posteriors",
          [](auto& c) -> auto& { return c.scales.am; }, parse_positive, "a finite number > 0"),
      value(
          "lm-scale", "LAMBDA", "mmi, bmmi, smbr: scales hypothesis and n-gram costs",
          [](auto& c) -> auto& { return c.scales.lm; }, parse_non_negative, "a finite number >= 0"),
      value(
          "boost", "B", "bmmi: the boost per frame that agrees with the reference's best path",
          [](auto& c) -> auto& { return c.scales.boost; }, parse_non_negative,
          "a finite number >= 0"),
      value(
          "topology", "ctc|hmm", "the topology of the segments' FSAs",
          [](auto& c) -> auto& { return c.topology; }, parse_topology, "ctc or hmm"),
      for_topology(parameter_topology::ctc,
                   value(
                       "blank-index", "N", "the CTC blank column",
                       [](auto& c) -> auto& { return c.blank_index; }, parse_decimal<uint32_t>,
                       "a column index (0 to 2^32-1)")),
      hmm_cost("hmm-loop-cost", "the HMM's loop cost (inf forbids it)",
               &criterion::hmm_options::loop_cost),
      hmm_cost("hmm-forward-cost", "the HMM's forward cost", &criterion::hmm_options::forward_cost),
      hmm_cost("hmm-silence-loop-cost", "the silence state's loop cost",
               &criterion::hmm_options::silence_loop_cost),
      hmm_cost("hmm-silence-entry-cost", "the cost of entering silence",
               &criterion::hmm_options::silence_entry_cost),
      hmm_cost("hmm-silence-exit-cost", "the cost of leaving silence",
               &criterion::hmm_options::silence_exit_cost),
      hmm_silence_index(),
      value(
          "framing", "length_prefixed|raw", "how the messages on the pipes are delimited",
          [](auto& c) -> auto& { return c.service.wire.framing; }, protocol::parse_framing,
          "length_prefixed or raw"),
      value(
          "array-module", "MODULE", "the module of the array constructor in replies",
          [](auto& c) -> auto& { return c.service.wire.array_module; }, parse_module_name,
          "a Python module name such as returnn.util.task_system"),
      value(
          "loss-type", "float|numpy-float32", "a Python float (as RASR) or a numpy.float32",
          [](auto& c) -> auto& { return c.service.loss_encoding; }, parse_loss_encoding,
          "float or numpy-float32"),
      value(
          "name", "NAME", "the child name in the init reply",
          [](auto& c) -> auto& { return c.service.child_name; }, parse_child_name,
          "a non-empty UTF-8 name"),
      value(
          "log-level", "LEVEL", log_levels, [](auto& c) -> auto& { return c.log_level; },
          parse_log_level, log_levels),
      process_only(value(
          "fault", "KIND", fault_kinds, [](auto& c) -> auto& { return c.faults.kind; },
          parse_fault_kind, fault_kinds)),
      process_only(value(
          "fault-after", "N",
          "loss/FSA requests answered before crash, hang, garbage, oversized-prefix, "
          "wrong-shape, bomb or shm-outside fire",
          [](auto& c) -> auto& { return c.faults.after; }, parse_decimal<size_t>,
          "a number of requests")),
      process_only(value(
          "fault-rate", "P", "for fault=random, the probability of a fault per loss/FSA request",
          [](auto& c) -> auto& { return c.faults.rate; }, parse_probability,
          "a probability from 0 to 1")),
      process_only(value(
          "fault-seed", "N", "for fault=random, the seed of the draws",
          [](auto& c) -> auto& { return c.faults.seed; }, parse_decimal<uint64_t>,
          "a seed (0 to 2^64-1)")),
      process_only(value(
          "crash-segment", "NAME", "crash whenever this segment is requested",
          [](auto& c) -> auto& { return c.faults.crash_segment; }, non_empty, "a segment name")),
      process_only(value(
          "delay-ms", "N", "wait before each loss/FSA reply (at most an hour)",
          [](auto& c) -> auto& { return c.faults.delay; }, parse_delay,
          "milliseconds from 0 to 3600000")),
      process_only(value(
          "init-delay-ms", "N",
          "wait before the init reply, as a slow Sprint start (at most an hour)",
          [](auto& c) -> auto& { return c.faults.init_delay; }, parse_delay,
          "milliseconds from 0 to 3600000")),
  };
}

/// Appends `words` to `out` as lines of at most `width` columns, the first
/// continuing at `column`, the others indented to `indent`.
void append_wrapped(std::string& out, std::string_view words, size_t column, size_t indent,
                    size_t width) {
  while (!words.empty()) {
    const auto space = words.find(' ');
    const auto word = words.substr(0, space);
    words = space == std::string_view::npos ? std::string_view{} : words.substr(space + 1);
    if (column > indent && column + 1 + word.size() > width) {
      out += "\n" + std::string(indent, ' ');
      column = indent;
    } else if (column > indent) {
      out += ' ';
      ++column;
    }
    out += word;
    column += word.size();
  }
}

} // namespace

caf::error sim_argument::error(std::string_view what) const {
  return make_error(errc::invalid_options,
                    "argument '" + std::string{text} + "': " + std::string{what});
}

bool parameter_state::was_given(std::string_view name) const {
  return std::find(given.begin(), given.end(), name) != given.end();
}

const std::vector<sim_parameter>& sim_parameters() {
  static const auto parameters = declare_parameters();
  return parameters;
}

const sim_parameter* find_sim_parameter(std::string_view name) {
  const auto& parameters = sim_parameters();
  auto found = std::find_if(parameters.begin(), parameters.end(),
                            [&](const sim_parameter& p) { return p.name == name; });
  return found == parameters.end() ? nullptr : &*found;
}

std::string sim_usage() {
  std::string text = "usage: sprint-sim";
  for (const auto& p : sim_parameters())
    if (p.required != requirement::optional)
      text += " --*." + std::string{p.name} + "=" + std::string{p.value_form};
  return text + " [--*.NAME=VALUE ...]\n";
}

std::string sim_parameters_help() {
  constexpr size_t help_column = 32;
  constexpr size_t width = 80;
  const sprint_sim_config defaults;
  std::string text;
  for (const auto& p : sim_parameters()) {
    std::string line = "  --*." + std::string{p.name} + "=" + std::string{p.value_form};
    std::string help{p.help};
    if (p.required == requirement::always)
      help += " (required)";
    else if (p.required == requirement::process)
      help += " (required by the process)";
    else if (auto shown = p.show(defaults); !shown.empty())
      help += " [" + shown + "]";
    if (p.process_only)
      help += " (the process only)";
    if (line.size() + 1 >= help_column) {
      text += line + "\n";
      line.clear();
    }
    line.resize(help_column, ' ');
    text += line;
    append_wrapped(text, help, help_column, help_column, width);
    text += "\n";
  }
  return text;
}

} // namespace sprintrt::sim
