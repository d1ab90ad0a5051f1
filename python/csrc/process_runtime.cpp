#include "process_runtime.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <new>
#include <vector>

#include "sprintrt/logging.hpp"
#include "sprintrt/sprint_runtime.hpp"

namespace sprintrt::python {

namespace {

/// How long shutdown waits for calls in flight once the pools are stopped
/// (they return at once with `cancelled`; this only bounds a surprise).
constexpr std::chrono::seconds calls_grace{10};

// Never destroyed with the statics: CAF's own may be gone by then, and a
// call that outlived shutdown's wait may still end at exit. The runtime is
// destroyed by shutdown (at interpreter exit), or not at all.
std::mutex runtime_mutex;
sprint_runtime* runtime = nullptr;

/// Where shutdown is; guarded by `runtime_mutex`.
enum class shutdown_stage { not_begun, in_progress, done };
shutdown_stage stage = shutdown_stage::not_begun;

/// Whether this process abandoned the runtime users of its parent at a
/// fork; guarded by `runtime_mutex`.
bool abandoned_parent_users = false;

/// Where shutdown's waiters wait. A pointer, so that a forked child can make
/// a new one: a condition variable with waiters on the parent's threads
/// cannot be notified (nor destroyed) in the child, glibc would wait for
/// them.
std::condition_variable* shutdown_done_cv = new std::condition_variable;

std::condition_variable& shutdown_done() {
  return *shutdown_done_cv;
}

/// Every live `runtime_user`. Only touched with the GIL held.
std::vector<runtime_user*>& runtime_users() {
  static auto* users = new std::vector<runtime_user*>;
  return *users;
}

/// Calls in flight, and whether new ones are refused (shutdown has begun).
struct call_count {
  std::mutex mutex;
  /// A pointer for the same reason as `shutdown_done_cv`.
  std::condition_variable* ended = new std::condition_variable;
  size_t calls = 0;
  bool refused = false;
};

call_count& calls() {
  static auto* count = new call_count;
  return *count;
}

/// Waits up to `calls_grace` until no call is in flight; returns how many
/// still are.
size_t wait_for_calls() {
  auto& count = calls();
  std::unique_lock<std::mutex> lock{count.mutex};
  count.ended->wait_for(lock, calls_grace, [&] { return count.calls == 0; });
  return count.calls;
}

} // namespace

sprint_runtime& process_runtime(const sprint_options& opts, const char* what) {
  std::unique_lock<std::mutex> lock{runtime_mutex};
  if (stage != shutdown_stage::not_begun) {
    lock.unlock(); // raise_shut_down takes it
    raise_shut_down(what);
  }
  if (!runtime)
    runtime = new sprint_runtime(runtime_settings_for(opts));
  return *runtime;
}

void shutdown_process_runtime() {
  {
    std::unique_lock<std::mutex> lock{runtime_mutex};
    if (stage != shutdown_stage::not_begun) {
      // Another thread shuts down: wait for it without the GIL, and without
      // the lock once the GIL is taken back (a Python thread holding the GIL
      // may want the lock).
      lock.unlock();
      pybind11::gil_scoped_release released;
      std::unique_lock<std::mutex> waiting{runtime_mutex};
      shutdown_done().wait(waiting, [] { return stage == shutdown_stage::done; });
      return;
    }
    stage = shutdown_stage::in_progress;
  }
  // From here no call starts (they are refused, or find their facade gone).
  {
    std::lock_guard<std::mutex> guard{calls().mutex};
    calls().refused = true;
  }
  for (auto* user : std::vector<runtime_user*>{runtime_users()})
    user->detach();
  sprint_runtime* stopping = nullptr;
  {
    std::lock_guard<std::mutex> guard{runtime_mutex};
    std::swap(stopping, runtime);
  }
  if (stopping) {
    pybind11::gil_scoped_release released;
    stopping->stop_pools();
    if (auto left = wait_for_calls(); left == 0)
      delete stopping;
    else
      logger().error("sprintrt: {} call(s) still waited {} s after the pools were stopped at "
                     "shutdown; the runtime is left stopped, not destroyed",
                     left, calls_grace.count());
  }
  release_deferred_objects();
  {
    std::lock_guard<std::mutex> guard{runtime_mutex};
    stage = shutdown_stage::done;
  }
  shutdown_done().notify_all();
}

runtime_user::runtime_user() {
  runtime_users().push_back(this);
}

runtime_user::~runtime_user() {
  auto& users = runtime_users();
  users.erase(std::find(users.begin(), users.end(), this));
}

void keep_forever(std::shared_ptr<const void> handles) {
  static auto* kept = new std::vector<std::shared_ptr<const void>>;
  kept->push_back(std::move(handles));
}

[[noreturn]] void raise_shut_down(const char* what) {
  bool from_parent = false;
  {
    std::lock_guard<std::mutex> guard{runtime_mutex};
    from_parent = abandoned_parent_users && stage == shutdown_stage::not_begun;
  }
  if (from_parent)
    raise(make_error(errc::invalid_request,
                     std::string{what} +
                         " cannot be used: it belongs to the parent process (it was made before "
                         "this process was forked, and sprintrt's runtime does not survive a "
                         "fork); make a new one in this process, e.g. with "
                         "SprintInstancePool.get_global_instance(sprint_opts)"));
  raise(make_error(errc::cancelled, std::string{what} +
                                        " cannot be used: sprintrt was shut down (at interpreter "
                                        "exit, or by sprintrt._sprintrt.shutdown())"));
}

void lock_runtime_for_fork() noexcept {
  runtime_mutex.lock();
  calls().mutex.lock();
}

void unlock_runtime_after_fork() noexcept {
  calls().mutex.unlock();
  runtime_mutex.unlock();
}

void abandon_runtime_in_child() noexcept {
  // The forking thread took both locks before the fork: in the child it is
  // the only thread, and may release them.
  unlock_runtime_after_fork();
  // Deliberately leaked: the runtime's threads did not survive the fork, its
  // locks may be held by them forever, and stopping or destroying it would
  // stop, kill and reap Sprint children that belong to the parent. Its
  // memory (and so every reference it holds to its actors) stays as it is.
  runtime = nullptr;
  abandoned_parent_users = true;
  // A shutdown under way in the parent has nothing left to do here, and
  // its thread is gone: a shutdown in the child must not wait for it.
  if (stage == shutdown_stage::in_progress)
    stage = shutdown_stage::done;
  shutdown_done_cv = new std::condition_variable; // the old one: leaked, see above
  auto& count = calls();
  count.ended = new std::condition_variable;
  // The calls in flight wait on the parent's threads, which the child does
  // not have: they never end here.
  count.calls = 0;
  for (auto* user : std::vector<runtime_user*>{runtime_users()})
    user->abandon();
}

call_in_flight::call_in_flight(const char* what) {
  auto& count = calls();
  std::unique_lock<std::mutex> lock{count.mutex};
  if (count.refused) {
    lock.unlock(); // raise_shut_down takes the runtime's lock, which comes first
    raise_shut_down(what);
  }
  ++count.calls;
}

call_in_flight::~call_in_flight() {
  end();
}

void call_in_flight::end() noexcept {
  if (ended_)
    return;
  ended_ = true;
  auto& count = calls();
  std::lock_guard<std::mutex> guard{count.mutex};
  if (--count.calls == 0)
    count.ended->notify_all();
}

} // namespace sprintrt::python
