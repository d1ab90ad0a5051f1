#pragma once

/// @file
/// What the pool benchmarks measure with besides the pool: the child's work
/// for one request in this process, requests to a worker from an
/// event-based or a scoped actor, and the workers' counters.

#include <cstddef>
#include <functional>
#include <string>

#include <caf/fwd.hpp>

#include "sprintrt/worker_interface.hpp"
#include "tools/bench/bench_support.hpp"

namespace sprintrt::bench {

/// Registers benchmark `name` (returned): the child's work for one request
/// (unpickle, check and compute `kind` over `corpus()`, encode the reply) for
/// `job()`, in this process, once per iteration.
std::string register_child_work(const std::string& name, benchmark::TimeUnit unit, timing clock,
                                std::function<std::string()> corpus,
                                std::function<segment_job()> job, sim::criterion_kind kind);

/// Sends `count` requests for `job` to `worker` one after the other from a
/// fresh event-based actor; returns after the last reply.
void event_based_requests(caf::actor_system& system, const sprint_worker_actor& worker,
                          const segment_job& job, size_t count);

/// One request from a scoped actor, waiting for the reply.
void scoped_request(caf::scoped_actor& self, const sprint_worker_actor& worker,
                    const segment_job& job);

/// Returns the counters of the first worker of `client`'s pool.
worker_stats first_worker(const pool_client& client);

/// Returns a worker's mean busy time per request between two snapshots, in us.
double busy_us(const worker_stats& before, const worker_stats& after);

} // namespace sprintrt::bench
