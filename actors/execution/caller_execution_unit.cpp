#include "actors/execution/caller_execution_unit.hpp"

#include <caf/actor_control_block.hpp>
#include <caf/actor_system.hpp>
#include <caf/intrusive_ptr.hpp>
#include <caf/message.hpp>
#include <caf/message_id.hpp>
#include <caf/resumable.hpp>
#include <caf/scheduler/abstract_coordinator.hpp>

#include "actors/execution/affine_sharing.hpp"

namespace sprintrt::detail {

caller_execution_unit::caller_execution_unit(caf::actor_system& system, size_t max_resumes,
                                             size_t max_throughput)
    : caf::execution_unit(&system), owner_(std::this_thread::get_id()), max_resumes_(max_resumes),
      max_throughput_(max_throughput) {}

caller_execution_unit::~caller_execution_unit() {
  accepting_ = false;
  for (auto* job : queue_)
    hand_over(job);
}

void caller_execution_unit::exec_later(caf::resumable* job) {
  // A send through the pointer of an actor that last ran here, from another
  // thread, must not land in a queue nobody drains, nor touch this unit's
  // state: checked first.
  if (std::this_thread::get_id() != owner_ || !accepting_) {
    hand_over(job);
    return;
  }
  const bool long_job = running_job_ && clock::now() - resumed_at_ > affine_sharing::long_job;
  if (affine_sharing::wakes_a_thread(long_job, !queue_.empty())) {
    hand_over(job);
    return;
  }
  queue_.push_back(job);
}

void caller_execution_unit::run_until(const std::function<bool()>& stop) {
  size_t runs = 0;
  while (!queue_.empty() && runs < max_resumes_ && !stop()) {
    auto* job = queue_.front();
    queue_.pop_front();
    ++runs;
    running_job_ = true;
    resumed_at_ = clock::now();
    const auto result = job->resume(this, max_throughput_);
    running_job_ = false;
    switch (result) {
    case caf::resumable::resume_later:
      // More messages than `max_throughput`: it keeps its reference.
      queue_.push_back(job);
      break;
    case caf::resumable::done:
    case caf::resumable::awaiting_message:
      // As a scheduler thread does: the reference `exec_later` got is
      // released; the next enqueue that wakes the actor takes a new one.
      caf::intrusive_ptr_release(job);
      break;
    case caf::resumable::shutdown_execution_unit:
      // Only the scheduler's own shutdown job says this; it never comes
      // here, and if it did its owner keeps its reference.
      break;
    }
  }
  resumed_ += runs;
  accepting_ = false;
  while (!queue_.empty()) {
    hand_over(queue_.front());
    queue_.pop_front();
  }
}

void caller_execution_unit::hand_over(caf::resumable* job) {
  system().scheduler().enqueue(job);
}

void send_and_run(const caf::strong_actor_ptr& receiver, caf::message content) {
  caller_execution_unit here{*receiver->home_system, 2, 1};
  receiver->enqueue(nullptr, caf::make_message_id(), std::move(content), &here);
  here.run_until([] { return false; });
}

} // namespace sprintrt::detail
