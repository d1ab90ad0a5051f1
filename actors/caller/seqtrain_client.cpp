#include "sprintrt/seqtrain_client.hpp"

#include <cmath>

#include <caf/exit_reason.hpp>
#include <caf/send.hpp>

#include "actors/caller/blocking_ask.hpp"
#include "actors/seqtrain/seqtrain_scheduler.hpp"
#include "sprintrt/sprint_runtime.hpp"

namespace sprintrt {

seqtrain_client::seqtrain_client(sprint_runtime& rt, worker_pool_actor pool,
                                 seqtrain_options options)
    : runtime_(&rt), scheduler_(spawn_seqtrain_scheduler(rt.system(), std::move(pool), options)) {}

seqtrain_client::~seqtrain_client() {
  caf::anon_send_exit(scheduler_, caf::exit_reason::user_shutdown);
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

caf::expected<tensor> seqtrain_error_signal(const tensor& log_posteriors, const tensor& hat_y,
                                            const std::vector<int64_t>& lengths) {
  if (log_posteriors.rank() != 3 || hat_y.shape() != log_posteriors.shape())
    return make_error(errc::invalid_input, "seqtrain_error_signal: log_posteriors " +
                                               log_posteriors.shape_string() + " and hat_y " +
                                               hat_y.shape_string() + " must both be [T, B, D]");
  const size_t frames = log_posteriors.dim(0);
  const size_t columns = log_posteriors.dim(1);
  const size_t dim = log_posteriors.dim(2);
  if (lengths.size() != columns)
    return make_error(errc::invalid_input,
                      "seqtrain_error_signal: " + std::to_string(lengths.size()) +
                          " lengths for B = " + std::to_string(columns));
  for (size_t b = 0; b < columns; ++b)
    if (lengths[b] < 0 || static_cast<size_t>(lengths[b]) > frames)
      return make_error(errc::invalid_input, "seqtrain_error_signal: length " +
                                                 std::to_string(lengths[b]) + " of column " +
                                                 std::to_string(b) + " is not in 0.." +
                                                 std::to_string(frames));
  auto out = tensor::zeros(log_posteriors.shape());
  for (size_t t = 0; t < frames; ++t)
    for (size_t b = 0; b < columns; ++b) {
      if (static_cast<int64_t>(t) >= lengths[b])
        continue;
      size_t offset = (t * columns + b) * dim;
      const float* lp = log_posteriors.data() + offset;
      const float* target = hat_y.data() + offset;
      float* dz = out.data() + offset;
      for (size_t d = 0; d < dim; ++d)
        dz[d] = std::exp(lp[d]) - target[d];
    }
  return out;
}

} // namespace sprintrt
