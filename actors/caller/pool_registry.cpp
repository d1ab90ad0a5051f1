#include "actors/caller/pool_registry.hpp"

#include <algorithm>

#include <caf/actor_cast.hpp>
#include <caf/actor_system.hpp>
#include <caf/exit_reason.hpp>
#include <caf/send.hpp>

#include "actors/pool/worker_pool.hpp"
#include "actors/sources/child_process_source.hpp"
#include "sprintrt/error.hpp"

namespace sprintrt::detail {

worker_pool_actor pool_registry::pool(const sprint_options& opts) {
  auto key = to_json_string(opts);
  std::lock_guard<std::mutex> guard{mutex_};
  if (stopped_)
    return {};
  auto i = pools_.find(key);
  if (i != pools_.end())
    return i->second;
  auto name = "pool " + std::to_string(created_++);
  auto source = child_process_source(io_, opts);
  // An embedding program's actor system may lack the network layer.
  if (!opts.remote.empty() && !system_.has_middleman())
    source.unavailable = make_error(
        errc::invalid_options,
        "remote pools need CAF's network layer: load caf::io::middleman into the actor system's "
        "config and call sprintrt::add_remote_message_types on it");
  auto pool = spawn_enlisted(std::move(source), name);
  pools_.emplace(std::move(key), pool);
  return pool;
}

worker_pool_actor pool_registry::own_pool(worker_source source, std::string name) {
  std::lock_guard<std::mutex> guard{mutex_};
  if (stopped_)
    return {};
  if (name.empty())
    name = "pool " + std::to_string(created_);
  ++created_;
  auto pool = spawn_enlisted(std::move(source), std::move(name));
  // Forget pools that ended (an actor_addr that no longer converts to a
  // strong pointer), so that a trainer making pool after pool does not grow
  // this list.
  own_pools_.erase(std::remove_if(own_pools_.begin(), own_pools_.end(),
                                  [](const caf::actor_addr& addr) {
                                    return !caf::actor_cast<caf::strong_actor_ptr>(addr);
                                  }),
                   own_pools_.end());
  own_pools_.push_back(pool.address());
  return pool;
}

worker_pool_actor pool_registry::spawn_enlisted(worker_source source, std::string name) {
  source.make = [make = std::move(source.make), census = census_](
                    caf::actor_system& system, size_t index, const std::string& worker_name) {
    auto worker = make(system, index, worker_name);
    census->enlist(caf::actor_cast<caf::strong_actor_ptr>(worker));
    return worker;
  };
  auto pool = spawn_worker_pool(system_, std::move(source), std::move(name));
  census_->enlist(caf::actor_cast<caf::strong_actor_ptr>(pool));
  return pool;
}

void pool_registry::stop_all() {
  std::lock_guard<std::mutex> guard{mutex_};
  stopped_ = true;
  for (auto& [key, pool] : pools_)
    caf::anon_send_exit(pool, caf::exit_reason::user_shutdown);
  pools_.clear();
  for (auto& pool : own_pools_)
    caf::anon_send_exit(pool, caf::exit_reason::user_shutdown);
  own_pools_.clear();
}

} // namespace sprintrt::detail
