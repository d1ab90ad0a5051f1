#pragma once

/// @file
/// The pool's single-segment requests (a loss or an FSA export): each waits
/// in arrival order until a worker is idle, then goes to it. Internal to the
/// actors library.

#include "actors/pool/pool_assignment.hpp"
#include "actors/pool/pool_state.hpp"
#include "actors/pool/segment_requests.hpp"

namespace sprintrt::detail {

/// Queues `req` behind the requests already waiting and serves the queue.
void serve_single(pool_pointer self, segment_request req);

/// Hands waiting single-segment requests to idle workers, creating workers
/// while fewer than the source's capacity exist.
void serve_waiting(pool_pointer self);

/// Releases `held` (its worker answered), then serves waiting requests: the
/// worker may have become idle.
void release_and_serve(pool_pointer self, assignment& held);

} // namespace sprintrt::detail
