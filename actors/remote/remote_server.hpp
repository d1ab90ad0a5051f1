#pragma once

/// @file
/// The actor that `sprintrt serve` publishes: a local worker pool's
/// Sprint commands for trainers on other machines.

#include <string>

#include <caf/fwd.hpp>

#include "sprintrt/options.hpp"
#include "sprintrt/pool_interface.hpp"
#include "sprintrt/remote_interface.hpp"

namespace sprintrt::detail {

/// Spawns a server for `pool`, a pool of `capacity` workers for `opts`;
/// `name` labels it in logs and errors ("127.0.0.1:7000").
///
/// Each trainer (each remote actor that said hello) has a queue of its
/// own; the server hands its commands (segments and exports alike) to the
/// pool in turns, at most two per worker at once (so the pool always has
/// the next at hand), and keeps the rest. A trainer that disconnects (its
/// actor or its node goes down) loses its work: its queue is dropped and
/// what it has in progress is closed (`command_entry::close`: a segment's
/// output gate), so that the workers answer at once, and the others are
/// served on. Segments are computed on storage that came with the request,
/// and answered with the storage the pool wrote (`remote_wire`).
remote_pool_actor spawn_remote_server(caf::actor_system& system, worker_pool_actor pool,
                                      size_t capacity, const sprint_options& opts,
                                      std::string name);

} // namespace sprintrt::detail
