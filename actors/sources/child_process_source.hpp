#pragma once

/// @file
/// The default worker source: Sprint child processes started from the
/// options, one `sprint_worker` actor per child.

#include "sprintrt/options.hpp"
#include "sprintrt/worker_source.hpp"

namespace sprintrt::process {
class io_thread;
} // namespace sprintrt::process

namespace sprintrt::detail {

/// Returns a source of `numInstances` workers, each owning a Sprint child
/// started from `opts` whose pipes run on `io` (which must outlive the
/// workers), plus one worker per remote pool in `opts.remote`
/// (`with_remote_pools`). Options without `sprintExecPath` and with
/// `numInstances` > 0 give a source that is `unavailable` with an
/// `invalid_options` error naming the option: a pool over it refuses every
/// request with it.
worker_source child_process_source(process::io_thread& io, const sprint_options& opts);

} // namespace sprintrt::detail
