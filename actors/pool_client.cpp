#include "sprintrt/pool_client.hpp"

#include "actors/blocking_ask.hpp"
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

caf::expected<batch_result> pool_client::compute(batch b) const {
  if (!pool_)
    return no_pool();
  return detail::blocking_ask<batch_result>(*runtime_, pool_, compute_atom::value, std::move(b));
}

caf::expected<batch_automata> pool_client::automata(std::vector<std::string> tags) const {
  if (!pool_)
    return no_pool();
  return detail::blocking_ask<batch_automata>(*runtime_, pool_, automata_atom::value,
                                              std::move(tags));
}

caf::expected<double> pool_client::compute_segment(segment_job job) const {
  if (!pool_)
    return no_pool();
  return detail::blocking_ask<double>(*runtime_, pool_, compute_atom::value, std::move(job));
}

caf::expected<pool_stats> pool_client::stats() const {
  if (!pool_)
    return no_pool();
  return detail::blocking_ask<pool_stats>(*runtime_, pool_, stats_atom::value);
}

} // namespace sprintrt
