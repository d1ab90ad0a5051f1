#pragma once

/// @file
/// Writing to a pipe from any thread without SIGPIPE, and without changing
/// the process's signal dispositions.
///
/// A write to a pipe whose reader is gone raises SIGPIPE in the writing
/// thread, which kills the process unless it is ignored or blocked. sprintrt
/// writes to its children's pipes from its io thread (which blocks SIGPIPE
/// for good: the thread is sprintrt's own) and, for a request to an idle
/// pipe, from whatever thread sends it: a scheduler thread, or the trainer's
/// own thread in a blocking call. Ignoring SIGPIPE process-wide would change
/// the trainer's own handling of it, so such a write blocks SIGPIPE in the
/// calling thread for its duration, and takes back a SIGPIPE the write
/// raised before unblocking (the technique of OpenSSL's and libcurl's
/// notes), leaving EPIPE as the result.

#include <cstddef>
#include <sys/types.h>

namespace sprintrt::process {

/// `::write(fd, data, size)`, except that a broken pipe gives -1 with
/// errno == EPIPE and raises no SIGPIPE. The calling thread's signal mask
/// and pending signals are as before (a SIGPIPE that was pending before the
/// call stays pending).
ssize_t write_without_sigpipe(int fd, const void* data, size_t size);

/// Blocks SIGPIPE in the calling thread for good: for threads sprintrt owns
/// (the io thread), whose writes then fail with EPIPE.
void block_sigpipe_in_this_thread();

} // namespace sprintrt::process
