#pragma once

/// @file
/// The module in a forked child (os.fork, multiprocessing's and PyTorch
/// DataLoader's "fork" start method). Only the forking thread exists in the
/// child: the runtime's threads are gone, a lock they held stays held, and
/// the Sprint children belong to the parent. So C++ takes its locks at the
/// last moment before the fork, and in the child abandons the inherited
/// runtime (`abandon_runtime_in_child`); the package then renews its own
/// Python state (`sprintrt/__init__.py`, `os.register_at_fork`).
///
/// The C++ half is a `pthread_atfork` handler, not an `os.register_at_fork`
/// hook: it runs inside fork() itself, after every Python hook and with the
/// GIL held throughout, so no thread can wait for the GIL while holding one
/// of these locks, and it runs for any fork, also one that bypasses
/// `os.fork`. Its child handler runs no Python code (the interpreter is not
/// yet reinitialized there).

namespace sprintrt::python {

/// Registers the handlers; once per process (at import).
void install_fork_handlers();

} // namespace sprintrt::python
