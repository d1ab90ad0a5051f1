#include "sprintrt/pool_client.hpp"

#include <memory>
#include <tuple>

#include "actors/caller/blocking_ask.hpp"
#include "actors/caller/runtime_access.hpp"
#include "actors/worker/commands.hpp"
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
  return detail::ask_each_as<segment_fsa>(
      detail::runtime_access::callers(*runtime_).of_this_thread(), pool_, stop, fsa_atom::value,
      std::move(queries));
}

caf::expected<double> pool_client::compute_segment(segment_job job, const stop_token& stop) const {
  return ask<get_loss_command>(std::move(job), stop);
}

template <class Command>
caf::expected<typename Command::reply> pool_client::ask(typename Command::work work,
                                                        const stop_token& stop) const {
  using reply = typename Command::reply;
  using entry = detail::command_entry<Command>;
  if (!pool_)
    return no_pool();
  if (!stop.stop_possible())
    return detail::blocking_ask<reply>(*runtime_, pool_, Command::atom::value, std::move(work));
  // The pool closes what a worker could still write into (a job's output
  // gate) when it answers `cancelled`; a gate given here lets this call
  // close it too, since the reply may have been a real one. What `admit`
  // refuses, the pool refuses as well, in its own words.
  static_cast<void>(entry::admit(work));
  auto kept = work;
  auto result =
      detail::stoppable_ask<reply>(*runtime_, stop, pool_, Command::atom::value, std::move(work));
  if (!result && result.error() == errc::cancelled)
    entry::close(kept);
  return result;
}

namespace detail {

/// The addresses of `pool_client::ask` for every command of `Commands`.
template <class... Commands>
auto ask_instances(sprint_command_list<Commands...>) {
  return std::make_tuple(&pool_client::ask<Commands>...);
}

/// Instantiates `pool_client::ask` for every command, for callers in other
/// translation units: a function with external linkage is always emitted,
/// and with it what it takes the address of.
auto pool_client_asks() {
  return ask_instances(sprint_commands{});
}

} // namespace detail

caf::expected<pool_stats> pool_client::stats() const {
  if (!pool_)
    return no_pool();
  return detail::blocking_ask<pool_stats>(*runtime_, pool_, stats_atom::value);
}

} // namespace sprintrt
