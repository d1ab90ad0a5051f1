#include "at_fork.hpp"

#include <pthread.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

#include "binding_support.hpp"
#include "log_bridge.hpp"
#include "process_runtime.hpp"

namespace sprintrt::python {

namespace {

// The locks in one order: a holder of the runtime's lock may log (making a
// runtime), and no holder of a later one takes an earlier one.

void before_fork() {
  lock_runtime_for_fork();
  lock_release_queue_for_fork();
  lock_logging_for_fork();
}

void after_fork_in_parent() {
  unlock_logging_after_fork();
  unlock_release_queue_after_fork();
  unlock_runtime_after_fork();
}

void after_fork_in_child() {
  reset_logging_in_child();
  unlock_release_queue_after_fork();
  abandon_runtime_in_child();
}

} // namespace

void install_fork_handlers() {
  if (int rc = ::pthread_atfork(before_fork, after_fork_in_parent, after_fork_in_child); rc != 0)
    throw std::runtime_error("sprintrt: pthread_atfork failed: " + std::string{std::strerror(rc)});
}

} // namespace sprintrt::python
