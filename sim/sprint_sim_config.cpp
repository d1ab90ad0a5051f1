#include "sim/sprint_sim_config.hpp"

#include <cctype>
#include <string_view>

#include "criterion/ctc_topology.hpp"
#include "protocol/shared_array.hpp"
#include "sim/sprint_sim_parameters.hpp"

namespace sprintrt::sim {

namespace {

caf::error invalid(std::string message) {
  return make_error(errc::invalid_options, std::move(message));
}

/// Like Python's int(): white space around the number is allowed.
std::optional<int> parse_python_int(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front())))
    text.remove_prefix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back())))
    text.remove_suffix(1);
  return parse_decimal<int>(text);
}

caf::expected<sim_argument> split_argument(const std::string& text) {
  std::string_view view{text};
  const auto eq = view.find('=');
  if (view.substr(0, 2) != "--" || eq == std::string_view::npos)
    return invalid("argument '" + text + "': expected RASR style --SELECTOR.NAME=VALUE");
  auto key = view.substr(2, eq - 2);
  auto name = key.substr(key.rfind('.') + 1); // npos + 1 == 0: all of key
  if (name.empty())
    return invalid("argument '" + text + "': the parameter name is empty");
  return sim_argument{text, name, view.substr(eq + 1)};
}

/// Applies one argument: its parameter's reader, or a warning for an
/// unknown parameter.
caf::error apply(parameter_state& state, const sim_argument& arg) {
  const auto* p = find_sim_parameter(arg.name);
  if (p == nullptr) {
    state.config.warnings.push_back("unknown parameter '" + std::string{arg.text} + "' ignored");
    return {};
  }
  if (p->process_only && state.scope == parameter_scope::in_process)
    return arg.error("'" + std::string{arg.name} +
                     "' injects faults into the sprint-sim process; in-process workers take "
                     "their delays and failures from sim_worker_behavior");
  if (!state.was_given(p->name))
    state.given.push_back(p->name);
  return p->apply(arg, state.config);
}

/// The parameters of the sequence-discriminative criteria: required by them,
/// refused elsewhere.
caf::error check_sequence_parameters(const parameter_state& state) {
  const auto& config = state.config;
  const auto criterion = "--*.criterion=" + std::string{to_string(config.criterion)};
  const auto sequence = to_sequence_kind(config.criterion);
  if (!sequence) {
    for (const auto* name :
         {"denominator", "am-scale", "lm-scale", "boost", "lm-order", "lm-smoothing"})
      if (state.was_given(name))
        return invalid("--*." + std::string{name} +
                       " applies to criterion mmi, bmmi or smbr, not to " + criterion);
    return {};
  }
  if (state.was_given("boost") && *sequence != criterion::sequence_kind::bmmi)
    return invalid("--*.boost applies to criterion bmmi only, not to " + criterion);
  if (config.denominator.source.empty())
    return invalid(criterion + " needs --*.denominator=FILE|label-lm (the competing hypotheses)");
  if (!config.denominator.is_label_lm())
    for (const auto* name : {"lm-order", "lm-smoothing"})
      if (state.was_given(name))
        return invalid("--*." + std::string{name} +
                       " applies to --*.denominator=label-lm, not to a denominator file");
  if (auto problem = criterion::check_scales(*sequence, config.scales); !problem.empty())
    return invalid(criterion + ": " + problem);
  return {};
}

/// Checks the whole after every argument was applied.
caf::expected<sprint_sim_config> finish(parameter_state& state) {
  auto& config = state.config;
  for (const auto& p : sim_parameters()) {
    const bool applies =
        p.required == requirement::always ||
        (p.required == requirement::process && state.scope == parameter_scope::process);
    if (!applies || p.satisfied(state))
      continue;
    auto message = "--*." + std::string{p.name} + "=" + std::string{p.value_form} + " is required";
    if (!p.required_because.empty())
      message += " (" + std::string{p.required_because} + ")";
    return invalid(std::move(message));
  }
  if (auto err = check_sequence_parameters(state))
    return err;
  if (state.was_given("fault-after") && !counts_requests(config.faults.kind))
    return invalid("--*.fault-after applies to fault=crash, hang, garbage, oversized-prefix, "
                   "wrong-shape, bomb or shm-outside only, not to fault=" +
                   std::string{to_string(config.faults.kind)});
  // Parameters of the topology that was not chosen, in the order given.
  const auto chosen =
      config.topology == topology_kind::ctc ? parameter_topology::ctc : parameter_topology::hmm;
  for (const auto name : state.given) {
    const auto topology = find_sim_parameter(name)->topology;
    if (topology != parameter_topology::any && topology != chosen)
      config.warnings.push_back("--*." + std::string{name} + " does not apply to topology=" +
                                (chosen == parameter_topology::ctc ? "ctc" : "hmm") + ": ignored");
  }
  return std::move(config);
}

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
    } else if (key == protocol::shared_memory_config_key) {
      auto x = parse_python_int(value);
      if (!x || *x < 0)
        return invalid("pymod-config " + std::string{key} + " '" + std::string{value} +
                       "' is not a descriptor number");
      result.shared_memory_fd = *x;
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
  if (result.shared_memory_fd &&
      (*result.shared_memory_fd <= 2 || *result.shared_memory_fd == *c2p ||
       *result.shared_memory_fd == *p2c))
    return invalid("pymod-config sprintrtSharedMemoryFd " +
                   std::to_string(*result.shared_memory_fd) +
                   " is a standard stream or one of the pipes");
  result.c2p_fd = *c2p;
  result.p2c_fd = *p2c;
  return result;
}

caf::expected<sprint_sim_config> parse_sprint_sim_config(const std::vector<std::string>& args) {
  return parse_sim_parameters(args, parameter_scope::process);
}

caf::expected<sprint_sim_config> parse_sim_parameters(const std::vector<std::string>& args,
                                                      parameter_scope scope) {
  parameter_state state;
  state.scope = scope;
  for (const auto& text : args) {
    auto arg = split_argument(text);
    if (!arg)
      return arg.error();
    if (auto err = apply(state, *arg))
      return err;
  }
  return finish(state);
}

caf::expected<std::shared_ptr<const criterion::topology>>
make_topology(const sprint_sim_config& config) {
  if (config.topology == topology_kind::ctc)
    return std::make_shared<const criterion::ctc_topology>(config.blank_index);
  auto hmm = criterion::hmm_topology::make(config.hmm);
  if (!hmm)
    return hmm.error();
  return std::make_shared<const criterion::hmm_topology>(std::move(*hmm));
}

caf::expected<criterion_spec> make_criterion_spec(const sprint_sim_config& config,
                                                  const criterion::corpus& segments,
                                                  const criterion::topology& automaton_topology) {
  criterion_spec spec{config.criterion};
  if (!to_sequence_kind(config.criterion))
    return spec;
  spec.scales = config.scales;
  auto competitors = criterion::denominator::make(config.denominator, segments, automaton_topology,
                                                  config.scales.lm);
  if (!competitors)
    return std::move(competitors.error());
  spec.competitors = std::make_shared<const criterion::denominator>(std::move(*competitors));
  return spec;
}

} // namespace sprintrt::sim
