#pragma once

/// @file
/// sprintrt's logs in Python's `logging`. spdlog's default logger (named
/// "sprintrt") and the logger of the Sprint children's output lines
/// ("sprintrt.child") write to one sink that only queues records, so that an
/// actor or io thread that logs never waits for the GIL. A Python thread of
/// the package (`sprintrt/__init__.py`) waits for records with the GIL
/// released and emits each through `logging.getLogger(name).log(level,
/// text)`, under the spdlog logger's name. The queue is bounded: when it is
/// full, the oldest record is dropped, and the next records taken begin with
/// a warning that counts the records dropped. Once the package has closed
/// the queue at interpreter exit (after shutting the runtime down and
/// delivering what was queued), records go straight to stderr.

#include <pybind11/pybind11.h>

#include <cstddef>

namespace sprintrt::python {

/// How many records the queue holds before it drops the oldest.
constexpr size_t log_queue_capacity = 10000;

/// Makes spdlog's default logger and a logger registered as
/// "sprintrt.child" write to the queue, both at level info (records below
/// spdlog's level are never formatted).
void install_log_bridge();

/// Takes the queue's lock and spdlog's registry lock, so that no other
/// thread holds one at a fork (for `pthread_atfork`'s prepare handler; their
/// holders never wait for anything while holding them).
void lock_logging_for_fork() noexcept;

/// Releases them in the parent after the fork.
void unlock_logging_after_fork() noexcept;

/// In the forked child (its only thread, the locks taken before the fork):
/// releases them, and drops the queued records, which are the parent's to
/// deliver; the package then starts a delivering thread of the child's.
void reset_logging_in_child() noexcept;

/// Defines `set_log_level` and the package's private functions that
/// deliver the queue (`_wait_for_log_records`, `_take_log_records`,
/// `_close_log_queue`, `_log`) in `m`.
void bind_logging(pybind11::module_& m);

} // namespace sprintrt::python
