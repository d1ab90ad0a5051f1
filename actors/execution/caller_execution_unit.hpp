#pragma once

/// @file
/// `caller_execution_unit`: lets a blocking caller run the first hops of its
/// own request instead of waking a scheduler thread for them, and the io
/// thread the handlers of a small reply it read. Internal to the actors
/// library (used by `blocking_ask` and the Sprint workers' channel events).
///
/// Sent the usual way, a blocking facade call costs two thread wake-ups
/// before any work begins: the caller's send wakes a scheduler thread for
/// the pool, and the caller goes to sleep. A wake-up across cores costs
/// several times what the pool's and a worker's handlers take, and those end
/// by writing the request to the child's pipe (BENCHMARKS.md, "Figures
/// behind the design"). So the caller, which has nothing else to
/// do until the reply comes, runs those handlers itself.
///
/// How: a scoped actor sends with this unit as its execution context, so the
/// actor it wakes is handed to `exec_later` here rather than to the
/// scheduler, and the actors that one wakes in turn (they inherit the
/// context while running) come here too. `run_until_reply` resumes them on
/// the caller's thread. The same rules as `affine_sharing` keep parallel work
/// parallel: a job queued while another waits here, or made runnable by a
/// job that has run for a while, goes to the scheduler (and wakes a thread).
/// The io thread does the same with a small message it reads from a child
/// (`send_and_run`): the worker's reply handler and the pool's, a few
/// microseconds each, run there instead of waking a scheduler thread, so a
/// reply costs the wake-ups of the io thread and of the caller only.
///
/// The caller stops as soon as its reply is in its mailbox (a seqtrain
/// `forward` returns at once, and the scheduler's work behind it must not
/// delay the trainer), after `max_resumes` jobs, or when nothing is left;
/// whatever is queued then goes to the scheduler, and so does every job that
/// arrives after that.

#include <chrono>
#include <deque>
#include <functional>
#include <thread>

#include <caf/execution_unit.hpp>
#include <caf/fwd.hpp>

namespace caf {
class actor_system;
class resumable;
} // namespace caf

namespace sprintrt::detail {

/// An execution unit that runs jobs on the thread that created it, for a
/// while; see the file comment. Not copyable; lives on the caller's stack.
class caller_execution_unit final : public caf::execution_unit {
public:
  /// Jobs a blocking caller runs at most per call before handing the rest
  /// over.
  static constexpr size_t caller_resumes = 16;

  /// Messages one job may take per resume on a blocking caller's thread.
  static constexpr size_t caller_throughput = 16;

  /// A unit of `system` owned by the calling thread, which runs at most
  /// `max_resumes` jobs of at most `max_throughput` messages each.
  explicit caller_execution_unit(caf::actor_system& system, size_t max_resumes = caller_resumes,
                                 size_t max_throughput = caller_throughput);

  caller_execution_unit(const caller_execution_unit&) = delete;
  caller_execution_unit& operator=(const caller_execution_unit&) = delete;

  /// Hands whatever is still queued to the scheduler.
  ~caller_execution_unit() override;

  /// Queues `job` to run on the caller's thread, or gives it to the
  /// scheduler (see the file comment).
  void exec_later(caf::resumable* job) override;

  /// Runs queued jobs on this thread until `stop()` is true, the queue is
  /// empty or `max_resumes` jobs have run; from then on every job goes to
  /// the scheduler.
  void run_until(const std::function<bool()>& stop);

  /// Jobs run on the caller's thread so far (for tests).
  size_t resumed() const noexcept { return resumed_; }

private:
  using clock = std::chrono::steady_clock;

  // Gives `job` to the scheduler, which wakes a thread for it.
  void hand_over(caf::resumable* job);

  std::thread::id owner_;
  size_t max_resumes_;
  size_t max_throughput_;
  std::deque<caf::resumable*> queue_;
  bool accepting_ = true;
  bool running_job_ = false;
  clock::time_point resumed_at_;
  size_t resumed_ = 0;
};

/// Sends `content` to `receiver` (anonymously) from a thread outside the
/// scheduler, and runs on this thread the receiver and at most one actor it
/// wakes, one message each (the worker and the pool: see the file comment).
/// Anything further, such as a batch's preparer that a pool message wakes,
/// goes to the scheduler, so that the io thread is never held up for long.
void send_and_run(const caf::strong_actor_ptr& receiver, caf::message content);

} // namespace sprintrt::detail
