#include "sprintrt/pool_client.hpp"

#include <caf/actor_system.hpp>
#include <caf/scoped_actor.hpp>

#include "sprintrt/sprint_runtime.hpp"

namespace sprintrt {

namespace {

/// Sends `xs` to `pool` and waits for the reply of type `T`. A scoped actor
/// per call keeps concurrent callers apart; `caf::infinite` because the
/// workers enforce their own timeouts (a blocking actor's request timeout
/// would leave stale timeout messages behind).
template <class T, class... Ts>
caf::expected<T> ask(caf::actor_system& system, const worker_pool_actor& pool, Ts&&... xs) {
  caf::scoped_actor self{system};
  caf::expected<T> result = make_error(errc::cancelled, "no reply from the pool");
  self->request(pool, caf::infinite, std::forward<Ts>(xs)...)
      .receive([&](T& reply) { result = std::move(reply); },
               [&](caf::error& err) { result = std::move(err); });
  return result;
}

} // namespace

pool_client::pool_client(sprint_runtime& rt, const sprint_options& opts)
    : runtime_(&rt), pool_(rt.pool(opts)) {}

caf::expected<batch_result> pool_client::compute(batch b) const {
  return ask<batch_result>(runtime_->system(), pool_, compute_atom::value, std::move(b));
}

caf::expected<batch_automata> pool_client::automata(std::vector<std::string> tags) const {
  return ask<batch_automata>(runtime_->system(), pool_, automata_atom::value, std::move(tags));
}

caf::expected<double> pool_client::compute_segment(segment_job job) const {
  return ask<double>(runtime_->system(), pool_, compute_atom::value, std::move(job));
}

caf::expected<pool_stats> pool_client::stats() const {
  return ask<pool_stats>(runtime_->system(), pool_, stats_atom::value);
}

} // namespace sprintrt
