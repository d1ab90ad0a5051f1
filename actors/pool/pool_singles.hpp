#pragma once

/// @file
/// The pool's single-segment requests (a loss or an FSA export): a request
/// of one segment, queued behind the segments already waiting until a worker
/// is idle (see `placement::when_idle`). Internal to the actors library.

#include <caf/fwd.hpp>

#include "actors/pool/pool_kinds.hpp"
#include "actors/pool/pool_state.hpp"

namespace sprintrt::detail {

/// Starts the single request of kind `Kind` that the pool is handling now:
/// `work` for one worker, answered with its reply or its error. A pool that
/// answers it `cancelled` first closes what a worker could still write into
/// (`Kind::close`).
template <class Kind>
caf::result<typename Kind::reply_type> serve_single(pool_pointer self, typename Kind::work work);

extern template caf::result<loss_kind::reply_type> serve_single<loss_kind>(pool_pointer,
                                                                           loss_kind::work);
extern template caf::result<fsa_kind::reply_type> serve_single<fsa_kind>(pool_pointer,
                                                                         fsa_kind::work);

} // namespace sprintrt::detail
