#pragma once

/// @file
/// `affine_sharing`: CAF's shared-queue scheduling policy without the
/// ping-pong between threads. Internal to the actors library (the runtime
/// loads it; see `sprint_runtime::settings::shared_queue`).
///
/// CAF's `work_sharing` wakes a sleeping scheduler thread for every actor
/// that becomes runnable. In sprintrt most handlers take microseconds and end
/// by sending one message (the worker answers the pool, the pool sends the
/// worker its next segment), so each hop woke the other thread, which took
/// the job while the sender went to sleep: two futex wake-ups per segment,
/// each far dearer on a virtual machine than the job itself, which the
/// sending thread would have run a microsecond later (BENCHMARKS.md, "Figures
/// behind the design", has the cost).
///
/// So a job that an actor makes runnable from a scheduler thread joins the
/// shared queue and wakes another thread only if that thread has something
/// to do in parallel: when the queue already holds a job besides this one,
/// or when the current job has run for a while (`long_job`) and so may keep
/// its thread busy. Jobs from outside the scheduler (the io thread, blocking
/// callers, timers) always wake a thread, as before. The cost: a job
/// enqueued early in a resume waits while the same actor goes on with more
/// messages from its mailbox in that resume ("long" counts from the start of
/// the resume, so the first send after `long_job` wakes a thread); sprintrt's
/// actors keep long work (O(T x B x D)) on actors of its own.
///
/// Only sends from scheduler threads may take the quiet path: CAF passes the
/// sender's execution unit, so a send or promise delivery from a foreign
/// thread through an actor pointer (rather than `anon_send`) would enqueue
/// without a wake-up. sprintrt never does that.

#include <chrono>
#include <condition_variable>
#include <list>
#include <mutex>

#include <caf/policy/unprofiled.hpp>
#include <caf/resumable.hpp>

namespace sprintrt::detail {

/// CAF scheduling policy: one shared queue; see the file comment.
class affine_sharing : public caf::policy::unprofiled {
public:
  using clock = std::chrono::steady_clock;

  /// How long a job may have run before the jobs it makes runnable wake
  /// another thread instead of waiting for it.
  static constexpr std::chrono::microseconds long_job{20};

  /// The shared queue.
  struct coordinator_data {
    explicit coordinator_data(caf::scheduler::abstract_coordinator*) {}

    std::list<caf::resumable*> queue;
    std::mutex lock;
    std::condition_variable cv;
  };

  /// When the thread's current job began.
  struct worker_data {
    explicit worker_data(caf::scheduler::abstract_coordinator*) {}

    clock::time_point resumed_at;
  };

  /// From outside the scheduler (no thread of ours will take it): always
  /// wakes a thread.
  template <class Coordinator>
  void central_enqueue(Coordinator* self, caf::resumable* job) {
    push(d(self), job, true);
  }

  /// Targeted at a worker (unused by this policy's coordinator): wakes one.
  template <class Worker>
  void external_enqueue(Worker* self, caf::resumable* job) {
    push(d(self->parent()), job, true);
  }

  /// From a job running on `self`: wakes another thread only if there is
  /// work for two.
  template <class Worker>
  void internal_enqueue(Worker* self, caf::resumable* job) {
    push(d(self->parent()), job, clock::now() - d(self).resumed_at > long_job);
  }

  /// Whether a job joining the queue wakes a sleeping thread: it came from
  /// outside the scheduler, or from a job that has run for a while
  /// (`from_long_job`), or another job is queued already. Otherwise the
  /// thread that enqueued it takes it next.
  static bool wakes_a_thread(bool from_long_job, bool others_queued) noexcept {
    return from_long_job || others_queued;
  }

  /// A job that yielded goes to the back of the queue.
  template <class Worker>
  void resume_job_later(Worker* self, caf::resumable* job) {
    push(d(self->parent()), job, false);
  }

  /// Takes the next job, waiting for one.
  template <class Worker>
  caf::resumable* dequeue(Worker* self) {
    auto& shared = d(self->parent());
    std::unique_lock<std::mutex> guard(shared.lock);
    shared.cv.wait(guard, [&] { return !shared.queue.empty(); });
    auto* job = shared.queue.front();
    shared.queue.pop_front();
    return job;
  }

  /// Notes when the job began (see `internal_enqueue`).
  template <class Worker>
  void before_resume(Worker* self, caf::resumable*) {
    d(self).resumed_at = clock::now();
  }

  /// Nothing is worker-local.
  template <class Worker, class UnaryFunction>
  void foreach_resumable(Worker*, UnaryFunction) {}

  /// Hands every queued job to `f` (at shutdown).
  template <class Coordinator, class UnaryFunction>
  void foreach_central_resumable(Coordinator* self, UnaryFunction f) {
    auto& shared = d(self);
    std::unique_lock<std::mutex> guard(shared.lock);
    while (!shared.queue.empty()) {
      auto* job = shared.queue.front();
      shared.queue.pop_front();
      f(job);
    }
  }

private:
  // Queues `job`; wakes a thread as `wakes_a_thread` says (`urgent`: from
  // outside, or from a long job).
  static void push(coordinator_data& shared, caf::resumable* job, bool urgent) {
    std::list<caf::resumable*> node{job}; // allocated outside the lock
    std::unique_lock<std::mutex> guard(shared.lock);
    bool others_queued = !shared.queue.empty();
    shared.queue.splice(shared.queue.end(), node);
    if (wakes_a_thread(urgent, others_queued))
      shared.cv.notify_one();
  }
};

} // namespace sprintrt::detail
