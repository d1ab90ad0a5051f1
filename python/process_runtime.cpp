#include "process_runtime.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <vector>

#include "sprintrt/sprint_runtime.hpp"

namespace sprintrt::python {

namespace {

/// How long shutdown waits for calls in flight once the pools are stopped
/// (they return at once with `cancelled`; this only bounds a surprise).
constexpr std::chrono::seconds calls_grace{10};

// Never destroyed with the statics: CAF's own may be gone by then. The
// runtime is destroyed by shutdown (at interpreter exit), or not at all.
std::mutex runtime_mutex;
sprint_runtime* runtime = nullptr;
bool runtime_shut_down = false;

/// Every live `runtime_user`. Only touched with the GIL held.
std::vector<runtime_user*>& runtime_users() {
  static auto* users = new std::vector<runtime_user*>;
  return *users;
}

std::mutex calls_mutex;
std::condition_variable calls_ended;
size_t calls = 0;

/// Waits up to `calls_grace` until no call is in flight; returns how many
/// still are.
size_t wait_for_calls() {
  std::unique_lock<std::mutex> lock{calls_mutex};
  calls_ended.wait_for(lock, calls_grace, [] { return calls == 0; });
  return calls;
}

} // namespace

sprint_runtime& process_runtime(const sprint_options& opts, const char* what) {
  std::lock_guard<std::mutex> guard{runtime_mutex};
  if (runtime_shut_down)
    raise_shut_down(what);
  if (!runtime)
    runtime = new sprint_runtime(runtime_settings_for(opts));
  return *runtime;
}

void shutdown_process_runtime() {
  for (auto* user : std::vector<runtime_user*>{runtime_users()})
    user->detach();
  sprint_runtime* stopping = nullptr;
  {
    std::lock_guard<std::mutex> guard{runtime_mutex};
    std::swap(stopping, runtime);
    runtime_shut_down = true;
  }
  if (stopping) {
    pybind11::gil_scoped_release released;
    stopping->stop_pools();
    if (auto left = wait_for_calls(); left == 0)
      delete stopping;
    else
      spdlog::error("sprintrt: {} call(s) still waited {} s after the pools were stopped at "
                    "shutdown; the runtime is left stopped, not destroyed",
                    left, calls_grace.count());
  }
  release_deferred_objects();
}

runtime_user::runtime_user() {
  runtime_users().push_back(this);
}

runtime_user::~runtime_user() {
  auto& users = runtime_users();
  users.erase(std::find(users.begin(), users.end(), this));
}

[[noreturn]] void raise_shut_down(const char* what) {
  raise(make_error(errc::cancelled, std::string{what} +
                                        " cannot be used: sprintrt was shut down (at interpreter "
                                        "exit, or by sprintrt._sprintrt.shutdown())"));
}

call_in_flight::call_in_flight() {
  std::lock_guard<std::mutex> guard{calls_mutex};
  ++calls;
}

call_in_flight::~call_in_flight() {
  end();
}

void call_in_flight::end() noexcept {
  if (ended_)
    return;
  ended_ = true;
  std::lock_guard<std::mutex> guard{calls_mutex};
  if (--calls == 0)
    calls_ended.notify_all();
}

} // namespace sprintrt::python
