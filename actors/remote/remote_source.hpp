#pragma once

/// @file
/// Worker sources with remote pools: the options' `remote` endpoints as
/// workers beside the local ones.

#include "sprintrt/options.hpp"
#include "sprintrt/worker_source.hpp"

namespace sprintrt::detail {

/// Returns `local` (the source for `numInstances` local workers, children or
/// simulated) extended by one worker per endpoint in `opts.remote`, each a
/// `remote_worker` for the remote pool there. The local workers keep slots
/// 0 to numInstances - 1 (none if it is 0). Slot states say how many
/// requests each remote pool takes at once (its number of workers, once
/// connected) and which ones are unavailable, so that the pool spreads
/// batches by estimated finish time and sends work elsewhere when a remote
/// pool is lost. Without remote endpoints, `local` as it is.
worker_source with_remote_pools(worker_source local, const sprint_options& opts);

} // namespace sprintrt::detail
