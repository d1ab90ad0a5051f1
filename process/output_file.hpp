#pragma once

/// @file
/// Files that Sprint children's output is appended to (`childOutput`
/// {"file": DIR}), written on a thread of their own.
///
/// The io thread reads the children's output and must never wait for a
/// disk (or a hung NFS mount): it only queues the bytes, under a mutex, and
/// one writer thread per process writes them in order. The queue holds at
/// most `output_file::queue_budget` bytes for all files together; output
/// beyond that is dropped, counted, and replaced in its file by a line that
/// says how much was lost, rather than stalling the children's pipes or
/// growing without bound.

#include <chrono>
#include <memory>
#include <string>
#include <string_view>

#include "sprintrt/error.hpp"

namespace sprintrt::process {

/// One file a child's output is appended to. Closing it (destruction) waits
/// for nothing: the writer closes the descriptor after the queued bytes.
class output_file {
public:
  /// The most bytes queued for all files together.
  static constexpr size_t queue_budget = 16 << 20;

  /// Opens `path` for appending (created with mode 0644 if missing, its
  /// directory too). Fails with `io_error` naming the path and the OS reason.
  static caf::expected<output_file> open(const std::string& path);

  /// Queues `bytes` for the file; never waits for the disk.
  void write(std::string_view bytes);

  /// Returns the file's path.
  const std::string& path() const;

  /// The file's descriptor and counters, shared with the writer thread.
  struct state;

private:
  explicit output_file(std::shared_ptr<state> s) : state_(std::move(s)) {}
  std::shared_ptr<state> state_;
};

/// Waits up to `limit` until every byte queued so far reached its file (or
/// failed to); returns whether the queue drained in time.
bool flush_output_files(std::chrono::milliseconds limit);

} // namespace sprintrt::process
