#pragma once

/// @file
/// What the transport benchmarks (small, tiny, large segments through
/// children) share: jobs, message sizes, a rig of children and a fixed
/// batch, the pipe echo and the child's own work as baselines, and RETURNN's
/// parent. Internal to sprintrt-bench.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include "sim/corpus_criterion.hpp"
#include "sprintrt/pool_client.hpp"
#include "tools/bench/bench.hpp"

namespace sprintrt::bench {

/// A job for `name` over random log-posteriors [frames, dim] from `seed`,
/// with an error-signal slice every request writes into again.
segment_job make_job(const std::string& name, size_t frames, size_t dim, uint64_t seed);

/// The framed size of a loss request for `segment` of [frames, dim].
size_t request_bytes(const std::string& segment, size_t frames, size_t dim);

/// The framed size of its reply.
size_t reply_bytes(size_t frames, size_t dim);

/// The children of `opts` and the fixed batch sent to them; the buffers on
/// both sides grow to the message size and the output is allocated in the
/// warm-up.
struct batch_rig {
  batch_rig(const sprint_options& opts, batch b)
      : client(world().runtime(), opts), data(std::move(b)) {
    run_batch();
    run_batch();
  }

  void run_batch() { compute_reusing(client, data, reuse); }

  /// Computes the batch into a new output, dropped afterwards.
  void run_batch_fresh_output() {
    unwrap(client.compute({data.log_posteriors, data.seq_lengths, data.tags, tensor{}}), "batch");
  }

  pool_client client;
  batch data;
  tensor reuse;
};

/// Returns the counters of the first worker of `client`'s pool.
worker_stats first_worker(const pool_client& client);

/// Registers benchmark `name` (returned): the child's work for one request
/// (unpickle, check and compute `kind` over `corpus()`, encode the reply) for
/// `job()`, in this process, once per iteration.
std::string register_child_work(const std::string& name, benchmark::TimeUnit unit, timing clock,
                                std::function<std::string()> corpus,
                                std::function<segment_job()> job, sim::criterion_kind kind);

/// Registers the store-and-forward pipe echo of a request and a reply of
/// these framed sizes; returns its name.
std::string register_echo(size_t request, size_t reply);

/// What RETURNN's parent runs: `batches` batches of `batch` segments
/// `prefix`0... of [frames, dim] from `corpus`.
struct parent_run {
  size_t frames;
  size_t dim;
  size_t batch;
  std::string prefix;
  std::string corpus;
  size_t batches;
};

/// RETURNN's parent (scripts/bench/returnn_parent.py) on `run`, starting the
/// child with the Sprint words the runtime builds.
void returnn_parent(bench_state& state, const parent_run& run);

} // namespace sprintrt::bench
