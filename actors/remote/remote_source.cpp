#include "actors/remote/remote_source.hpp"

#include <memory>
#include <string>
#include <vector>

#include "actors/remote/remote_handshake.hpp"
#include "actors/remote/remote_worker.hpp"

namespace sprintrt::detail {

namespace {

/// How long a remote pool may take for one segment, its queue included: it
/// holds up to four segments per worker from this trainer, each of which its
/// children may take `replyTimeout` for (and restart `maxRetries` times).
std::chrono::milliseconds reply_deadline(const sprint_options& opts) {
  auto per_segment = opts.reply_timeout * static_cast<int64_t>(opts.max_retries + 1);
  return 4 * per_segment + std::chrono::seconds{30};
}

} // namespace

worker_source with_remote_pools(worker_source local, const sprint_options& opts) {
  if (opts.remote.empty())
    return local;
  const size_t locals = opts.num_instances;
  std::vector<std::shared_ptr<remote_slot>> slots;
  std::string endpoints;
  for (const auto& endpoint : opts.remote) {
    slots.push_back(std::make_shared<remote_slot>());
    endpoints +=
        (endpoints.empty() ? "" : ", ") + endpoint.host + ":" + std::to_string(endpoint.port);
  }
  worker_source source;
  source.description =
      (locals > 0 ? local.description + " and " : std::string{}) + "remote pools at " + endpoints;
  source.capacity = locals + slots.size();
  source.max_resends = local.max_resends;
  source.unavailable = local.unavailable;
  auto key = remote_options_key(opts);
  auto deadline = reply_deadline(opts);
  source.make = [make_local = std::move(local.make), locals, slots, remote = opts.remote, key,
                 deadline, tls = opts.remote_tls](caf::actor_system& system, size_t index,
                                                  const std::string& name) {
    if (index < locals)
      return make_local(system, index, name);
    remote_worker_settings settings;
    settings.endpoint = remote[index - locals];
    settings.options_key = key;
    settings.tls = tls;
    settings.reply_deadline = deadline;
    return spawn_remote_worker(system, std::move(settings), slots[index - locals], name);
  };
  source.slot_wait = opts.remote_wait;
  source.slot_state = [locals, slots](size_t index) {
    return index < locals ? worker_slot_state{} : slots[index - locals]->get();
  };
  return source;
}

} // namespace sprintrt::detail
