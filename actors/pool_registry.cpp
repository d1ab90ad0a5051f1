#include "actors/pool_registry.hpp"

#include <caf/actor_system.hpp>
#include <caf/exit_reason.hpp>
#include <caf/send.hpp>

#include "actors/worker_pool.hpp"

namespace sprintrt {

worker_pool_actor pool_registry::pool(const sprint_options& opts) {
  auto key = to_json_string(opts);
  std::lock_guard<std::mutex> guard{mutex_};
  auto i = pools_.find(key);
  if (i != pools_.end())
    return i->second;
  auto name = "pool " + std::to_string(pools_.size());
  auto pool = spawn_worker_pool(system_, io_, opts, name);
  pools_.emplace(std::move(key), pool);
  return pool;
}

void pool_registry::stop_all() {
  std::lock_guard<std::mutex> guard{mutex_};
  for (auto& [key, pool] : pools_)
    caf::anon_send_exit(pool, caf::exit_reason::user_shutdown);
  pools_.clear();
}

} // namespace sprintrt
