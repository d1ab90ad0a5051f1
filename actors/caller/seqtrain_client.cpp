#include "sprintrt/seqtrain_client.hpp"

#include "actors/caller/blocking_ask.hpp"
#include "sprintrt/seqtrain_scheduler.hpp"
#include "sprintrt/sprint_runtime.hpp"

namespace sprintrt {

seqtrain_client::seqtrain_client(sprint_runtime& rt, worker_pool_actor pool,
                                 seqtrain_options options)
    : runtime_(&rt), scheduler_(spawn_seqtrain_scheduler(rt, std::move(pool), options)) {}

seqtrain_client::~seqtrain_client() {
  stop_seqtrain_scheduler(scheduler_);
}

caf::error seqtrain_client::start_epoch(uint64_t epoch) {
  auto started = detail::blocking_ask<bool>(*runtime_, scheduler_, epoch_start_atom::value, epoch);
  return started ? caf::error{} : std::move(started.error());
}

caf::expected<seqtrain_stats> seqtrain_client::finish_epoch() {
  return detail::blocking_ask<seqtrain_stats>(*runtime_, scheduler_, epoch_finish_atom::value);
}

caf::expected<bool> seqtrain_client::have_space(uint64_t num_seqs) {
  return detail::blocking_ask<bool>(*runtime_, scheduler_, have_space_atom::value, num_seqs);
}

caf::error seqtrain_client::forward(forward_sequences sequences) {
  auto queued = detail::blocking_ask<uint64_t>(*runtime_, scheduler_, forward_atom::value,
                                               std::move(sequences));
  return queued ? caf::error{} : std::move(queued.error());
}

caf::expected<seqtrain_result> seqtrain_client::train(std::vector<seqtrain_batch> batches,
                                                      const stop_token& stop) {
  return detail::stoppable_ask<seqtrain_result>(*runtime_, stop, scheduler_, train_atom::value,
                                                std::move(batches));
}

caf::expected<seqtrain_stats> seqtrain_client::stats() {
  return detail::blocking_ask<seqtrain_stats>(*runtime_, scheduler_, stats_atom::value);
}

} // namespace sprintrt
