#include "sprintrt/pool_client.hpp"

#include <memory>

#include "actors/caller/blocking_ask.hpp"
#include "sprintrt/sprint_runtime.hpp"

namespace sprintrt {

namespace {

/// The error of a call through a client without a pool (one made after the
/// runtime was shut down).
caf::error no_pool() {
  return make_error(errc::cancelled,
                    "this client has no pool: it was made after the runtime was shut down");
}

} // namespace

pool_client::pool_client(sprint_runtime& rt, const sprint_options& opts)
    : runtime_(&rt), pool_(rt.pool(opts)) {}

pool_client::pool_client(sprint_runtime& rt, worker_pool_actor pool)
    : runtime_(&rt), pool_(std::move(pool)) {}

caf::expected<batch_result> pool_client::compute(batch b, const stop_token& stop) const {
  if (!pool_)
    return no_pool();
  return detail::stoppable_ask<batch_result>(*runtime_, stop, pool_, compute_atom::value,
                                             std::move(b));
}

caf::expected<batch_automata> pool_client::automata(std::vector<std::string> tags,
                                                    const stop_token& stop) const {
  if (!pool_)
    return no_pool();
  return detail::stoppable_ask<batch_automata>(*runtime_, stop, pool_, automata_atom::value,
                                               std::move(tags));
}

std::vector<caf::expected<segment_fsa>> pool_client::fsas(std::vector<fsa_query> queries,
                                                          const stop_token& stop) const {
  if (!pool_) {
    std::vector<caf::expected<segment_fsa>> results;
    results.reserve(queries.size());
    for (size_t i = 0; i < queries.size(); ++i)
      results.emplace_back(no_pool());
    return results;
  }
  if (queries.empty())
    return {};
  return detail::ask_each_as<segment_fsa>(runtime_->callers().of_this_thread(), pool_, stop,
                                          fsa_atom::value, std::move(queries));
}

caf::expected<double> pool_client::compute_segment(segment_job job, const stop_token& stop) const {
  if (!pool_)
    return no_pool();
  if (!stop.stop_possible())
    return detail::blocking_ask<double>(*runtime_, pool_, compute_atom::value, std::move(job));
  // The pool closes the gate when it answers `cancelled`; one of our own
  // makes sure of it here too, since the reply may have been a real one.
  if (!job.gate)
    job.gate = std::make_shared<output_gate>();
  auto gate = job.gate;
  auto result =
      detail::stoppable_ask<double>(*runtime_, stop, pool_, compute_atom::value, std::move(job));
  if (!result && result.error() == errc::cancelled)
    gate->close();
  return result;
}

caf::expected<pool_stats> pool_client::stats() const {
  if (!pool_)
    return no_pool();
  return detail::blocking_ask<pool_stats>(*runtime_, pool_, stats_atom::value);
}

} // namespace sprintrt
