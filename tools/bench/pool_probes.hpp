#pragma once

/// @file
/// What `sprintrt-bench pool` measures with: jobs over reused buffers, the
/// child's work measured in this process, requests to a worker from an
/// event-based or a scoped actor, through the blocking facade, and counters
/// (worker busy time, page faults).

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <caf/fwd.hpp>

#include "protocol/byte_buffer.hpp"

#include "sim/criterion.hpp"
#include "sim/sprint_service.hpp"
#include "sprintrt/pool_client.hpp"
#include "sprintrt/worker_interface.hpp"
#include "tools/bench/bench_support.hpp"

namespace sprintrt::bench {

/// Throws `std::runtime_error` with `what` and the rendered `err`.
[[noreturn]] void throw_error(const std::string& what, const caf::error& err);

/// A job for segment `name` over random log-posteriors [frames, dim] (from
/// `seed`), with an error-signal slice that every request writes into
/// again: the previous storage passed back, as a trainer would.
segment_job make_job(const std::string& name, size_t frames, size_t dim, uint64_t seed);

/// The criterion sprint-sim runs for the bench's options (CTC, blank 0) over
/// the corpus file `corpus`, computing `kind` (`zero`: --*.criterion=zero).
sim::criterion load_criterion(const std::string& corpus,
                              sim::criterion_kind kind = sim::criterion_kind::full_sum);

/// What the child does for one request, run in this process (so that the
/// bench can interleave it with the requests through the pipes).
class child_probe {
public:
  /// Prepares `job`'s request as the child receives it, a criterion, and a
  /// service over `corpus` computing `kind`; runs both once (warm-up,
  /// message sizes).
  child_probe(const std::string& corpus, const segment_job& job,
              sim::criterion_kind kind = sim::criterion_kind::full_sum);

  /// Runs sim::criterion alone on the job; returns the loss.
  double compute();

  /// Runs the whole service: unpickle the request, compute, encode the
  /// reply (into a reused buffer).
  void serve();

  /// Returns the framed request size.
  size_t request_bytes() const noexcept { return request_bytes_; }

  /// Returns the framed reply size.
  size_t reply_bytes() const noexcept { return reply_.size(); }

private:
  const segment_job job_;
  sim::criterion criterion_;
  sim::row_matrix_f error_signal_;
  std::shared_ptr<protocol::byte_buffer> request_;
  size_t request_bytes_ = 0;
  sim::sprint_service service_;
  protocol::byte_buffer reply_;
};

/// Sends `count` compute requests for `job` to `worker` one after the other
/// from an event-based actor and returns each one's time in microseconds.
std::vector<double> event_based_requests(caf::actor_system& system,
                                         const sprint_worker_actor& worker, const segment_job& job,
                                         size_t count);

/// One compute request from a scoped actor, waiting for the reply.
void scoped_request(caf::scoped_actor& self, const sprint_worker_actor& worker,
                    const segment_job& job);

/// One `pool_client::compute_segment`; returns the loss.
double facade_request(const pool_client& client, const segment_job& job);

/// Returns the counters of `worker`.
worker_stats stats_of(caf::scoped_actor& self, const sprint_worker_actor& worker);

/// Returns the mean time a worker counted as busy per request served between
/// two snapshots (from handing a request to its io thread until the reply is
/// decoded), in microseconds.
double busy_us(const worker_stats& before, const worker_stats& after);

/// Returns the minor page faults of process `pid` so far (this process for
/// 0), from /proc/PID/stat; 0 if unknown (also for a negative pid).
uint64_t minor_faults(int pid = 0);

} // namespace sprintrt::bench
