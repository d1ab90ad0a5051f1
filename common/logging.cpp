#include "sprintrt/logging.hpp"

#include <atomic>
#include <mutex>
#include <vector>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

namespace sprintrt {

namespace {

/// The default: stderr. Not registered with spdlog, so that it cannot clash
/// with a program's own logger named "sprintrt".
spdlog::logger& default_logger() {
  static const std::shared_ptr<spdlog::logger> made = [] {
    auto logger = std::make_shared<spdlog::logger>(
        "sprintrt", std::make_shared<spdlog::sinks::stderr_color_sink_mt>());
    logger->set_level(spdlog::get_level());
    return logger;
  }();
  return *made;
}

/// The installed logger, read without a lock: a process that forks while
/// another thread logs must still be able to log in the child.
std::atomic<spdlog::logger*> current{nullptr};

/// Every logger ever installed, kept alive: a record being written on
/// another thread may still use the one `set_logger` replaces.
std::mutex installed_mutex;
std::vector<std::shared_ptr<spdlog::logger>> installed;

} // namespace

void set_logger(std::shared_ptr<spdlog::logger> target) {
  std::lock_guard<std::mutex> guard{installed_mutex};
  spdlog::logger* raw = target.get();
  if (target)
    installed.push_back(std::move(target));
  current.store(raw, std::memory_order_release);
}

spdlog::logger& logger() {
  if (auto* installed_logger = current.load(std::memory_order_acquire))
    return *installed_logger;
  return default_logger();
}

} // namespace sprintrt
