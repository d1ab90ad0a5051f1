#pragma once

/// @file
/// How the pool counts what each worker has to do: a `worker_load` per
/// worker slot, and an `assignment` for each request sent (or queued) to a
/// worker, which counts the request into the load when made and out of it
/// when released, exactly once. Internal to the actors library.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>

namespace sprintrt::detail {

/// What one worker slot was assigned and has not answered yet. Shared by
/// the slot and the assignments on it, so that an assignment released after
/// its pool is gone (a callback destroyed late) still finds it.
struct worker_load {
  /// Frames of the segments assigned (the slot's LPT load).
  int64_t frames = 0;
  /// Requests of any kind assigned (0: the worker is idle).
  size_t requests = 0;

  /// The slot's measured speed, for spreading work over workers of
  /// different speeds: frames of the requests released so far, and the time
  /// during which it had requests assigned (its busy time, which includes
  /// its parallelism: a remote pool of eight does eight times the frames).
  int64_t done_frames = 0;
  std::chrono::steady_clock::duration busy{};
  /// When it last became busy (meaningful while `requests > 0`).
  std::chrono::steady_clock::time_point busy_since{};

  /// Returns the measured frames per second, or 0 before enough is known
  /// (at least 10 ms busy and some frames done).
  double frames_per_second() const noexcept;
};

/// One request counted in a worker's load. Move-only: the request is
/// counted once when the assignment is made and uncounted once, by the first
/// `release` or else by the destructor; moved-from and released assignments
/// uncount nothing.
class assignment {
public:
  /// An empty assignment (counts nothing).
  assignment() = default;

  /// Counts a request of `frames` frames into `load` of worker `worker`.
  assignment(std::shared_ptr<worker_load> load, size_t worker, int64_t frames);

  assignment(assignment&& other) noexcept;
  assignment& operator=(assignment&& other) noexcept;
  assignment(const assignment&) = delete;
  assignment& operator=(const assignment&) = delete;

  /// Releases it (see `release`).
  ~assignment();

  /// Uncounts the request if it is still counted, as done (its frames count
  /// into the worker's measured speed); later calls do nothing.
  void release() noexcept;

  /// Uncounts the request without counting it as done: it was not computed
  /// (its worker was unavailable) and goes elsewhere.
  void withdraw() noexcept;

  /// Returns whether the request is still counted.
  bool held() const noexcept { return load_ != nullptr; }

  /// Returns the worker slot it is counted on.
  size_t worker() const noexcept { return worker_; }

  /// Returns the frames it counts.
  int64_t frames() const noexcept { return frames_; }

private:
  /// Uncounts it, as done (`release`) or not (`withdraw`).
  void uncount(bool done) noexcept;

  std::shared_ptr<worker_load> load_;
  size_t worker_ = 0;
  int64_t frames_ = 0;
};

} // namespace sprintrt::detail
