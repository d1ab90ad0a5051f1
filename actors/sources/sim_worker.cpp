// sim_worker_source: the options a user would pass to run sprint-sim as the
// Sprint executable, turned into in-process simulated workers.

#include "sprintrt/sim_worker.hpp"
#include "sprintrt/logging.hpp"

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <spdlog/spdlog.h>

#include "actors/remote/remote_source.hpp"
#include "actors/worker/sim_worker_actor.hpp"
#include "config/child_environment.hpp"
#include "config/sprint_args.hpp"
#include "criterion/corpus.hpp"
#include "sim/sprint_sim_config.hpp"

extern char** environ;

namespace sprintrt {

namespace {

/// The words of `sprintConfigStr` as a child would get them: variables
/// expanded against this process's environment changed by the options'
/// `env` (see config/child_environment.hpp); an unset one is an error.
caf::expected<std::vector<std::string>> expanded_parameters(const sprint_options& opts) {
  return config::expand_sprint_config(
      opts, config::environment_lookup(config::child_environment(opts.env, environ)));
}

} // namespace

caf::expected<worker_source> sim_worker_source(const sprint_options& opts,
                                               sim_worker_behavior behavior) {
  const std::string context = "in-process sprint-sim workers";
  // sprint-sim refuses to start for a parent asking for more than it speaks;
  // workers from the same options must not quietly accept it.
  if (opts.min_python_control_version > sim::python_control_version)
    return make_error(errc::invalid_options,
                      context + ": minPythonControlVersion " +
                          std::to_string(opts.min_python_control_version) +
                          " is higher than sprint-sim's PythonControl version " +
                          std::to_string(sim::python_control_version));
  auto parameters = expanded_parameters(opts);
  if (!parameters)
    return with_context(context, parameters.error());
  auto config = sim::parse_sim_parameters(*parameters, sim::parameter_scope::in_process);
  if (!config)
    return with_context(context + ": sprintConfigStr", config.error());
  for (const auto& warning : config->warnings)
    logger().warn("{}: {}", context, warning);
  auto topology = sim::make_topology(*config);
  if (!topology)
    return with_context(context, topology.error());
  auto segments = criterion::corpus::from_file(config->corpus_path);
  if (!segments)
    return with_context(context, segments.error());
  auto setup = std::make_shared<detail::sim_worker_setup>();
  setup->segments = std::make_shared<const criterion::corpus>(std::move(*segments));
  setup->automaton_topology = std::move(*topology);
  setup->loss_encoding = config->service.loss_encoding;
  auto spec = sim::make_criterion_spec(*config, *setup->segments, *setup->automaton_topology);
  if (!spec)
    return with_context(context, spec.error());
  setup->criterion = std::move(*spec);
  setup->behavior = std::move(behavior);
  worker_source source;
  source.description = "in-process sprint-sim workers on " + config->corpus_path + " (" +
                       (config->topology == sim::topology_kind::ctc ? "ctc" : "hmm") +
                       (config->criterion == sim::criterion_kind::full_sum
                            ? std::string{}
                            : ", criterion " + std::string{sim::to_string(config->criterion)}) +
                       ")";
  source.capacity = opts.num_instances;
  source.max_resends = opts.max_retries;
  std::shared_ptr<const detail::sim_worker_setup> shared = std::move(setup);
  source.make = [shared](caf::actor_system& system, size_t index, const std::string& name) {
    return detail::spawn_sim_worker(system, shared, index, name);
  };
  // Remote pools beside the simulated workers, as beside children.
  return detail::with_remote_pools(std::move(source), opts);
}

} // namespace sprintrt
