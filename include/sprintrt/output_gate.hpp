#pragma once

/// @file
/// The permission to write into a caller's output, which the caller's side
/// can take back.

#include <mutex>

namespace sprintrt {

/// Guards the writes into one caller's output (a job's error signal) when
/// the call can end before the workers are done with it: the pool stopped
/// and answered `cancelled`, or the caller stopped waiting. Writers write
/// only through `write_if_open`; `close` waits for a write under way and
/// refuses every later one, so that once `close` has returned, nothing
/// writes into the output any more and the caller may reuse or free it.
///
/// A write holds the gate while it runs: an in-process worker holds it for
/// its whole computation, which is how long `close` may wait.
class output_gate {
public:
  /// Runs `write()` unless the gate is closed; returns whether it ran.
  template <class Write>
  bool write_if_open(Write&& write) {
    std::lock_guard<std::mutex> guard{mutex_};
    if (closed_)
      return false;
    write();
    return true;
  }

  /// Closes the gate, after a write under way (if any) has finished.
  void close() {
    std::lock_guard<std::mutex> guard{mutex_};
    closed_ = true;
  }

  /// Returns whether the gate was closed.
  bool closed() const {
    std::lock_guard<std::mutex> guard{mutex_};
    return closed_;
  }

private:
  mutable std::mutex mutex_;
  bool closed_ = false;
};

} // namespace sprintrt
