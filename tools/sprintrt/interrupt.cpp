#include "tools/sprintrt/interrupt.hpp"

#include <signal.h>
#include <unistd.h>

#include <atomic>

namespace sprintrt::cli {

namespace {

/// The number of the signal that arrived, 0 before. Lock-free, so that the
/// handler may store it.
std::atomic<int> caught_signal{0};
static_assert(std::atomic<int>::is_always_lock_free);

struct sigaction previous_int;
struct sigaction previous_term;

extern "C" void on_signal(int sig) {
  int none = 0;
  caught_signal.compare_exchange_strong(none, sig);
}

} // namespace

interrupt_guard::interrupt_guard() : source_([] { return caught_signal.load() != 0; }) {
  caught_signal.store(0);
  struct sigaction action {};
  action.sa_handler = on_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESETHAND | SA_RESTART;
  ::sigaction(SIGINT, &action, &previous_int);
  ::sigaction(SIGTERM, &action, &previous_term);
}

interrupt_guard::~interrupt_guard() {
  ::sigaction(SIGINT, &previous_int, nullptr);
  ::sigaction(SIGTERM, &previous_term, nullptr);
}

bool interrupt_guard::interrupted() const {
  return caught_signal.load() != 0;
}

int interrupt_guard::exit_status() const {
  return 128 + caught_signal.load();
}

void remove_outputs(const std::vector<std::string>& paths) {
  for (const auto& path : paths)
    ::unlink(path.c_str());
}

} // namespace sprintrt::cli
