#pragma once

/// @file
/// Shared set-up of the integration tests: a temporary corpus, options that
/// run the real `sprint-sim` executable on it, random posteriors, the
/// in-process reference computation, and an actor system with an io thread
/// that shuts down cleanly.

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/scoped_actor.hpp>

#include "criterion/corpus.hpp"
#include "criterion/random_posteriors.hpp"
#include "process/io_thread.hpp"
#include "process/temp_directory.hpp"
#include "sprintrt/options.hpp"
#include "sprintrt/worker_interface.hpp"

namespace sprintrt::test {

/// A directory under /tmp, removed with everything in it at destruction
/// (throws if it cannot be created).
class temp_dir {
public:
  temp_dir();

  /// Returns the directory's path.
  const std::string& path() const noexcept { return dir_.path(); }

private:
  process::temp_directory dir_;
};

/// One segment of a test corpus.
using test_segment = criterion::corpus_entry;

/// Writes a corpus of `count` segments named "corpus/rec/seg-<i>" with 1 to
/// 4 random labels in 1..num_labels-1 (0 is the CTC blank) to
/// `dir/corpus.txt`; returns its segments.
std::vector<test_segment> write_corpus(const temp_dir& dir, size_t count, uint32_t num_labels,
                                       uint64_t seed = 1);

/// Returns the path of the corpus `write_corpus` wrote into `dir`.
std::string corpus_path(const temp_dir& dir);

/// Options that run sprint-sim (CTC, blank 0) on `corpus`, with extra
/// sprint-sim parameters such as "fault=crash" (passed as --*.NAME=VALUE).
sprint_options sim_options(const std::string& corpus, const std::vector<std::string>& params = {},
                           pipe_framing framing = pipe_framing::length_prefixed);

/// Random log-posteriors [frames, dim]: log_softmax of N(0, 2) logits.
using criterion::random_log_posteriors;

/// The in-process reference: sim::corpus_criterion (CTC, blank 0) on `corpus`.
struct reference_result {
  double loss;
  std::vector<float> error_signal;
};
reference_result reference_loss(const std::string& corpus, const std::string& segment,
                                const std::vector<float>& log_posteriors, size_t dim);

/// An actor system (two scheduler threads) with an io thread. `shutdown`
/// stops the workers spawned through it, waits for every actor, then stops
/// the io thread, which reaps whatever child is left.
class test_runtime {
public:
  test_runtime();
  ~test_runtime();

  caf::actor_system& system() noexcept { return system_; }
  process::io_thread& io() noexcept { return io_; }

  /// Spawns a worker for `opts`; `shutdown` stops it.
  sprint_worker_actor spawn_worker(sprint_options opts, std::string name = "test worker");

  /// Stops all workers (exit message), awaits all actors, stops the io thread.
  void shutdown();

private:
  static caf::actor_system_config& make_config(caf::actor_system_config& cfg);

  process::io_thread io_;
  caf::actor_system_config config_;
  caf::actor_system system_;
  std::vector<sprint_worker_actor> workers_;
  bool shut_down_ = false;
};

/// Makes the kills of `io`'s reaper send `signal` from now on (0: none, so
/// that children behave like ones stuck in the kernel), waiting until the
/// io thread has taken it. Does nothing once `io` was stopped.
void set_kill_signal(process::io_thread& io, int signal);

/// Makes the kills of `io`'s reaper send `signal` while it lives, and real
/// SIGKILLs again after it, even when a test failed half-way, so that the
/// teardown can kill what is left.
class kill_signal_override {
public:
  kill_signal_override(process::io_thread& io, int signal) : io_(io) {
    set_kill_signal(io_, signal);
  }
  ~kill_signal_override();
  kill_signal_override(const kill_signal_override&) = delete;
  kill_signal_override& operator=(const kill_signal_override&) = delete;

private:
  process::io_thread& io_;
};

/// Waits up to `limit` until `pid` is no child of this process any more
/// (exited and reaped); returns whether it is gone.
bool wait_until_reaped(pid_t pid, std::chrono::milliseconds limit);

/// Checks that `pid`, a child given up on, still runs, then kills it for
/// real and checks that it is reaped (by the reaper that still watches it,
/// or the thread a shutdown left it to) within 5 s.
void check_reaped_once_killed(pid_t pid);

/// Computes `job` on `worker`, blocking.
caf::expected<double> compute(caf::scoped_actor& self, const sprint_worker_actor& worker,
                              const segment_job& job);

/// The worker's counters; a failed stats request fails the test (a default
/// `worker_stats` would pass every "restarts == 0").
worker_stats stats_of(caf::scoped_actor& self, const sprint_worker_actor& worker);

/// Exports the FSA of segment `text` (or of the orthography `text`, by
/// `source`) from `worker`, blocking.
caf::expected<segment_fsa> export_fsa(caf::scoped_actor& self, const sprint_worker_actor& worker,
                                      const std::string& text,
                                      fsa_source source = fsa_source::segment_name);

/// The orthography sprint-sim reads as `labels`: "2 3 1" (empty for none).
std::string orthography_of(const std::vector<uint32_t>& labels);

/// Checks that two exported FSAs are equal bit for bit.
void check_same_fsa(const segment_fsa& got, const segment_fsa& want);

/// Makes a job for `segment` over `log_posteriors` [frames, dim] with a fresh
/// zeroed error signal.
segment_job make_job(const std::string& segment, const std::vector<float>& log_posteriors,
                     size_t dim);

} // namespace sprintrt::test
