#pragma once

/// @file
/// What the pool benchmarks measure with besides the pool itself: the
/// child's work for one request run in this process, requests to a worker
/// from an event-based or a scoped actor, and the workers' counters.

#include <cstddef>
#include <memory>
#include <string>

#include <caf/fwd.hpp>

#include "protocol/byte_buffer.hpp"
#include "sim/corpus_criterion.hpp"
#include "sim/sprint_service.hpp"
#include "sprintrt/pool_client.hpp"
#include "sprintrt/worker_interface.hpp"

namespace sprintrt::bench {

/// What the child does for one request, run in this process.
class child_probe {
public:
  /// Prepares `job`'s request as the child receives it and a service over
  /// `corpus` computing `kind`; serves it once (warm-up).
  child_probe(const std::string& corpus, const segment_job& job,
              sim::criterion_kind kind = sim::criterion_kind::full_sum);

  /// Runs the whole service: unpickle the request, check and compute,
  /// encode the reply (into a reused buffer).
  void serve();

private:
  std::shared_ptr<protocol::byte_buffer> request_;
  sim::sprint_service service_;
  protocol::byte_buffer reply_;
};

/// Sends `count` compute requests for `job` to `worker` one after the other
/// from a fresh event-based actor; returns when the last reply arrived.
void event_based_requests(caf::actor_system& system, const sprint_worker_actor& worker,
                          const segment_job& job, size_t count);

/// One compute request from a scoped actor, waiting for the reply.
void scoped_request(caf::scoped_actor& self, const sprint_worker_actor& worker,
                    const segment_job& job);

/// Returns the counters of the first worker of `client`'s pool.
worker_stats first_worker(const pool_client& client);

/// Returns the mean time a worker counted as busy per request served between
/// two snapshots (from handing a request to its io thread until the reply
/// is decoded), in microseconds.
double busy_us(const worker_stats& before, const worker_stats& after);

} // namespace sprintrt::bench
