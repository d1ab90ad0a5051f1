#pragma once

/// @file
/// In-process simulated Sprint workers: actors that speak
/// `sprint_worker_actor` and compute with the simulated Sprint's criterion
/// (`sim/`) instead of talking to a child process. They give bit-identical
/// results to `sprint-sim` for the same options and input, and they can be
/// slowed down or made to fail on purpose, so that message-driven tests and
/// CI exercise the pool and the sequence-training scheduler without
/// processes.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

#include <caf/fwd.hpp>

#include "sprintrt/error.hpp"
#include "sprintrt/options.hpp"
#include "sprintrt/worker_interface.hpp"
#include "sprintrt/worker_source.hpp"

namespace sprintrt {

/// How simulated workers behave besides computing: timing and failures.
struct sim_worker_behavior {
  /// Each reply is delivered after a delay drawn uniformly from
  /// [min_delay, max_delay] (a fixed delay when they are equal) by a
  /// generator seeded with `seed` + the worker's slot index, so that runs are
  /// reproducible. The delay never blocks an actor thread.
  std::chrono::microseconds min_delay{0};
  std::chrono::microseconds max_delay{0};
  uint64_t seed = 0;
  /// 1-based: the worker's N-th request fails with `child_failed`, as if its
  /// child had crashed more often than `maxRetries` allows (0: never).
  size_t fail_request = 0;
  /// 1-based: on receiving its N-th request the worker terminates with an
  /// error, answering that request and those it holds as a terminated actor
  /// would (`request_receiver_down`) (0: never). Its pool replaces it and
  /// resends them (up to `worker_source::max_resends` times each). The count
  /// is per worker: a replacement starts from 0 and dies at its own N-th
  /// request too, unless `max_deaths` says otherwise.
  size_t die_at_request = 0;
  /// The most workers that die of `die_at_request`, counted over every
  /// worker the source makes, replacements included, whichever thread runs
  /// them (0: no limit, every worker dies at its N-th request). With 1,
  /// exactly one worker dies once (the first to reach its N-th request) and
  /// its replacement serves on: one recovery to test, not a pool that keeps
  /// failing. A worker past the limit serves its N-th request as any other.
  size_t max_deaths = 0;
  /// Every request for this segment fails with `child_failed` (empty: none).
  std::string fail_segment;
};

/// A source of in-process simulated workers for `opts`: `numInstances` of
/// them, each computing what `sprint-sim` would compute when started with
/// `opts` (its parameters come from `sprintConfigStr`: `--*.corpus=FILE`,
/// `--*.topology=ctc|hmm`, `--*.blank-index=N`, the HMM costs, `loss-type`,
/// `--*.criterion=full-sum|zero`;
/// sprint-sim's own fault injection parameters are refused, use `behavior`).
/// The corpus is read once, here. Errors: `invalid_options` naming the
/// parameter, `io_error` / `invalid_input` for the corpus file.
caf::expected<worker_source> sim_worker_source(const sprint_options& opts,
                                               sim_worker_behavior behavior = {});

} // namespace sprintrt
