#include "criterion/batch_threads.hpp"

#include <algorithm>
#include <atomic>
#include <exception>
#include <numeric>
#include <system_error>
#include <thread>

namespace sprintrt::criterion {

std::string run_sequences(size_t workers, int64_t count,
                          const std::function<int64_t(int64_t)>& work,
                          const std::function<std::string(size_t, int64_t)>& task) {
  std::vector<int64_t> schedule(count);
  std::iota(schedule.begin(), schedule.end(), 0);
  std::stable_sort(schedule.begin(), schedule.end(),
                   [&](int64_t x, int64_t y) { return work(x) > work(y); });
  std::vector<std::string> errors(count);
  std::atomic<size_t> next{0};
  const auto drain = [&](size_t worker) {
    for (size_t i = next++; i < schedule.size(); i = next++) {
      const int64_t b = schedule[i];
      try {
        errors[b] = task(worker, b);
      } catch (const std::exception& e) {
        errors[b] = "item " + std::to_string(b) + ": " + e.what();
      }
    }
  };
  std::vector<std::thread> threads;
  for (size_t i = 1; i < workers; ++i) {
    try {
      threads.emplace_back(drain, i);
    } catch (const std::system_error&) {
      break; // No more threads to be had: the ones running take the rest.
    }
  }
  drain(0);
  for (auto& thread : threads)
    thread.join();
  for (const auto& error : errors)
    if (!error.empty())
      return error;
  return {};
}

} // namespace sprintrt::criterion
