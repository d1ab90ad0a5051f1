#pragma once

/// @file
/// The run of a batch's sequences (or blocks of them) on several threads,
/// the longest first, and the per-thread workspaces kept between runs.

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace sprintrt::criterion {

/// Runs `task(worker, i)` for every item i < `count` on `workers` threads
/// (the calling one among them), each thread with its own worker index
/// below `workers`; items of larger `work(i)` start first, so that no
/// thread starts a long one last. Returns the first item's error message
/// (what `task` returned or threw), empty if none. Fewer threads run if the
/// system has no more to give.
std::string run_sequences(size_t workers, int64_t count,
                          const std::function<int64_t(int64_t)>& work,
                          const std::function<std::string(size_t, int64_t)>& task);

/// Workspaces of one kind kept between calls (their buffers stay warm), for
/// any thread. Never destroyed, so that nothing runs at exit.
template <class Worker>
class worker_cache {
public:
  /// Returns `count` workers, reused where there are idle ones.
  static std::vector<std::unique_ptr<Worker>> take(size_t count) {
    std::vector<std::unique_ptr<Worker>> workers;
    {
      std::lock_guard<std::mutex> guard{state().mutex};
      auto& idle = state().idle;
      while (workers.size() < count && !idle.empty()) {
        workers.push_back(std::move(idle.back()));
        idle.pop_back();
      }
    }
    while (workers.size() < count)
      workers.push_back(std::make_unique<Worker>());
    return workers;
  }

  /// Keeps `workers` for the next call.
  static void give_back(std::vector<std::unique_ptr<Worker>>& workers) {
    std::lock_guard<std::mutex> guard{state().mutex};
    for (auto& worker : workers)
      state().idle.push_back(std::move(worker));
    workers.clear();
  }

private:
  struct shared {
    std::mutex mutex;
    std::vector<std::unique_ptr<Worker>> idle;
  };

  static shared& state() {
    static auto* kept = new shared; // never destroyed: see above
    return *kept;
  }
};

} // namespace sprintrt::criterion
