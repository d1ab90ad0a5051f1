#include "actors/worker_pool.hpp"

#include <chrono>
#include <cmath>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <variant>

#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/exit_reason.hpp>
#include <caf/send.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <spdlog/spdlog.h>

#include "actors/automata_merge.hpp"
#include "actors/batch_checks.hpp"
#include "actors/lpt_schedule.hpp"
#include "actors/sprint_worker.hpp"

namespace sprintrt {

namespace {

using clock = std::chrono::steady_clock;

/// One worker as the pool sees it.
struct worker_slot {
  sprint_worker_actor handle;
  /// Frames of segments sent to it and not answered yet (its LPT load).
  int64_t queued_frames = 0;
  /// Requests of any kind sent to it and not answered yet.
  size_t queued_requests = 0;
};

/// A single-segment request waiting for a free worker.
struct waiting_request {
  std::variant<segment_job, std::string> what;
  caf::typed_response_promise<double> loss_promise;
  caf::typed_response_promise<segment_fsa> fsa_promise;
};

/// A batch in progress: its result fills in as replies arrive.
struct batch_progress {
  batch_result result;
  std::vector<std::string> tags;
  std::vector<int64_t> lengths;
  size_t pending = 0;
  std::vector<std::string> failures;
  caf::error first_error;
  clock::time_point started = clock::now();
  caf::typed_response_promise<batch_result> promise;
  uint64_t id = 0;
};

/// An automata request in progress.
struct automata_progress {
  std::vector<segment_fsa> automata;
  std::vector<std::string> tags;
  size_t pending = 0;
  std::vector<std::string> failures;
  caf::error first_error;
  caf::typed_response_promise<batch_automata> promise;
  uint64_t id = 0;
};

struct pool_state {
  static inline const char* name = "worker_pool";

  sprint_options opts;
  runtime::io_thread* io = nullptr;
  std::string label;
  std::vector<worker_slot> workers;
  std::deque<waiting_request> waiting;
  pool_stats stats;
  /// Requests sent to workers and not answered, by id: how to fail each if
  /// the pool stops first (the workers' replies would not reach it then).
  std::map<uint64_t, std::function<void(const caf::error&)>> in_progress;
  uint64_t next_id = 0;
};

using pool_pointer = worker_pool_actor::stateful_pointer<pool_state>;

/// Registers how to fail a request in progress if the pool stops; returns
/// the id to `untrack` it with when it completes.
uint64_t track(pool_pointer self, std::function<void(const caf::error&)> cancel) {
  auto id = self->state.next_id++;
  self->state.in_progress.emplace(id, std::move(cancel));
  return id;
}

void untrack(pool_pointer self, uint64_t id) {
  self->state.in_progress.erase(id);
}

/// Creates workers until there are `count` (at most numInstances).
void ensure_workers(pool_pointer self, size_t count) {
  auto& st = self->state;
  count = std::min(count, st.opts.num_instances);
  while (st.workers.size() < count) {
    auto name = st.label + " worker " + std::to_string(st.workers.size());
    st.workers.push_back({spawn_sprint_worker(self->system(), *st.io, st.opts, name), 0, 0});
  }
}

/// The error a request fails with when some of its segments failed: every
/// failure listed, the code of the first one kept.
caf::error combined_error(const std::string& what, const std::vector<std::string>& failures,
                          const caf::error& first, size_t total) {
  std::string text = what + ": " + std::to_string(failures.size()) + " of " +
                     std::to_string(total) + " segments failed";
  for (const auto& failure : failures)
    text += "\n  " + failure;
  auto code = first && first.category() == error_category ? static_cast<errc>(first.code())
                                                          : errc::child_failed;
  return make_error(code, text);
}

void serve_waiting(pool_pointer self);

/// Bookkeeping after a worker answered a request of `frames` frames.
void worker_done(pool_pointer self, size_t worker, int64_t frames) {
  auto& slot = self->state.workers[worker];
  slot.queued_frames -= frames;
  --slot.queued_requests;
  serve_waiting(self);
}

/// Sends one single-segment request to `worker`.
void send_single(pool_pointer self, size_t worker, waiting_request req) {
  auto& slot = self->state.workers[worker];
  ++slot.queued_requests;
  if (auto* job = std::get_if<segment_job>(&req.what)) {
    auto frames = static_cast<int64_t>(job->log_posteriors.rows);
    slot.queued_frames += frames;
    auto id = track(self, [promise = req.loss_promise](const caf::error& err) mutable {
      promise.deliver(err);
    });
    self->request(slot.handle, caf::infinite, compute_atom::value, std::move(*job))
        .then(
            [self, worker, frames, id, promise = req.loss_promise](double loss) mutable {
              ++self->state.stats.segments;
              promise.deliver(loss);
              untrack(self, id);
              worker_done(self, worker, frames);
            },
            [self, worker, frames, id, promise = req.loss_promise](caf::error& err) mutable {
              ++self->state.stats.failed_segments;
              promise.deliver(err);
              untrack(self, id);
              worker_done(self, worker, frames);
            });
  } else {
    auto id = track(
        self, [promise = req.fsa_promise](const caf::error& err) mutable { promise.deliver(err); });
    self->request(slot.handle, caf::infinite, fsa_atom::value, std::get<std::string>(req.what))
        .then(
            [self, worker, id, promise = req.fsa_promise](segment_fsa& fsa) mutable {
              ++self->state.stats.fsa_exports;
              promise.deliver(std::move(fsa));
              untrack(self, id);
              worker_done(self, worker, 0);
            },
            [self, worker, id, promise = req.fsa_promise](caf::error& err) mutable {
              promise.deliver(err);
              untrack(self, id);
              worker_done(self, worker, 0);
            });
  }
}

/// Hands waiting single-segment requests to idle workers, creating workers
/// while fewer than numInstances exist.
void serve_waiting(pool_pointer self) {
  auto& st = self->state;
  while (!st.waiting.empty()) {
    size_t idle = st.workers.size();
    for (size_t i = 0; i < st.workers.size(); ++i)
      if (st.workers[i].queued_requests == 0) {
        idle = i;
        break;
      }
    if (idle == st.workers.size()) {
      if (st.workers.size() >= st.opts.num_instances)
        return;
      ensure_workers(self, st.workers.size() + 1);
    }
    auto req = std::move(st.waiting.front());
    st.waiting.pop_front();
    send_single(self, idle, std::move(req));
  }
}

/// Completes a batch once its last segment answered.
void finish_batch(pool_pointer self, batch_progress& progress) {
  auto& st = self->state;
  untrack(self, progress.id);
  ++st.stats.batches;
  double seconds = std::chrono::duration<double>(clock::now() - progress.started).count();
  if (!progress.failures.empty()) {
    progress.promise.deliver(combined_error(st.label + ": batch", progress.failures,
                                            progress.first_error, progress.tags.size()));
    return;
  }
  // As the original: the average loss per frame, for the log.
  double loss_sum = 0;
  int64_t frames = 0;
  size_t skipped = 0;
  for (size_t b = 0; b < progress.lengths.size(); ++b) {
    if (std::isinf(progress.result.loss[b])) {
      ++skipped;
      continue;
    }
    loss_sum += progress.result.loss[b];
    frames += progress.lengths[b];
  }
  spdlog::debug("{}: batch of {} segments ({} skipped): average frame loss {:.6f}, {:.1f} ms",
                st.label, progress.lengths.size(), skipped,
                frames > 0 ? loss_sum / static_cast<double>(frames) : 0.0, seconds * 1e3);
  progress.promise.deliver(std::move(progress.result));
}

/// The error signal output: the caller's tensor if it fits and is not
/// shared, else a new one; zeroed either way (padding must be zero).
tensor error_signal_output(batch& b) {
  auto& reuse = b.reuse_error_signal;
  if (reuse.shape() == b.log_posteriors.shape() && reuse.unique()) {
    std::fill(reuse.data(), reuse.data() + reuse.size(), 0.0f);
    return std::move(reuse);
  }
  return tensor::zeros(b.log_posteriors.shape());
}

caf::result<batch_result> compute_batch(pool_pointer self, batch& b) {
  auto& st = self->state;
  if (auto err = check_batch(b))
    return with_context(st.label, err);
  size_t batch_size = b.tags.size();
  auto progress = std::make_shared<batch_progress>();
  progress->result.loss.assign(batch_size, 0.0f);
  progress->result.error_signal = error_signal_output(b);
  progress->tags = b.tags;
  progress->lengths = b.seq_lengths;
  progress->pending = batch_size;
  progress->promise = self->make_response_promise<batch_result>();
  progress->id = track(self, [progress](const caf::error& err) { progress->promise.deliver(err); });
  ensure_workers(self, batch_size);
  std::vector<int64_t> loads;
  for (const auto& slot : st.workers)
    loads.push_back(slot.queued_frames);
  auto jobs = lpt_assign(b.seq_lengths, loads);
  for (size_t w = 0; w < jobs.size(); ++w) {
    for (size_t index : jobs[w]) {
      auto frames = b.seq_lengths[index];
      auto& slot = st.workers[w];
      slot.queued_frames += frames;
      ++slot.queued_requests;
      segment_job job{
          b.tags[index], segment_slice(b.log_posteriors, index, static_cast<size_t>(frames)),
          segment_slice(progress->result.error_signal, index, static_cast<size_t>(frames))};
      self->request(slot.handle, caf::infinite, compute_atom::value, std::move(job))
          .then(
              [self, progress, w, index, frames](double loss) {
                progress->result.loss[index] = static_cast<float>(loss);
                ++self->state.stats.segments;
                worker_done(self, w, frames);
                if (--progress->pending == 0)
                  finish_batch(self, *progress);
              },
              [self, progress, w, index, frames](caf::error& err) {
                ++self->state.stats.failed_segments;
                if (!progress->first_error)
                  progress->first_error = err;
                progress->failures.push_back("segment " + std::to_string(index) + " ('" +
                                             progress->tags[index] + "'): " + render(err));
                worker_done(self, w, frames);
                if (--progress->pending == 0)
                  finish_batch(self, *progress);
              });
    }
  }
  return progress->promise;
}

caf::result<batch_automata> compute_automata(pool_pointer self, std::vector<std::string>& tags) {
  auto& st = self->state;
  if (auto err = check_tags(tags))
    return with_context(st.label, err);
  auto progress = std::make_shared<automata_progress>();
  progress->automata.resize(tags.size());
  progress->tags = tags;
  progress->pending = tags.size();
  progress->promise = self->make_response_promise<batch_automata>();
  progress->id = track(self, [progress](const caf::error& err) { progress->promise.deliver(err); });
  ensure_workers(self, tags.size());
  // Exports cost about the same per segment: spread them evenly, starting
  // with the workers that have the least queued.
  std::vector<int64_t> loads;
  for (const auto& slot : st.workers)
    loads.push_back(static_cast<int64_t>(slot.queued_requests));
  std::vector<int64_t> unit(tags.size(), 1);
  auto jobs = lpt_assign(unit, loads);
  auto finish = [self, progress] {
    untrack(self, progress->id);
    ++self->state.stats.automata;
    if (!progress->failures.empty()) {
      progress->promise.deliver(combined_error(self->state.label + ": automata", progress->failures,
                                               progress->first_error, progress->tags.size()));
      return;
    }
    auto merged = merge_automata(progress->automata);
    if (!merged)
      progress->promise.deliver(with_context(self->state.label + ": automata", merged.error()));
    else
      progress->promise.deliver(std::move(*merged));
  };
  for (size_t w = 0; w < jobs.size(); ++w) {
    for (size_t index : jobs[w]) {
      ++st.workers[w].queued_requests;
      self->request(st.workers[w].handle, caf::infinite, fsa_atom::value, tags[index])
          .then(
              [self, progress, w, index, finish](segment_fsa& fsa) {
                ++self->state.stats.fsa_exports;
                progress->automata[index] = std::move(fsa);
                worker_done(self, w, 0);
                if (--progress->pending == 0)
                  finish();
              },
              [self, progress, w, index, finish](caf::error& err) {
                if (!progress->first_error)
                  progress->first_error = err;
                progress->failures.push_back("segment " + std::to_string(index) + " ('" +
                                             progress->tags[index] + "'): " + render(err));
                worker_done(self, w, 0);
                if (--progress->pending == 0)
                  finish();
              });
    }
  }
  return progress->promise;
}

caf::result<pool_stats> collect_stats(pool_pointer self) {
  auto& st = self->state;
  auto promise = self->make_response_promise<pool_stats>();
  if (st.workers.empty()) {
    promise.deliver(st.stats);
    return promise;
  }
  auto collected = std::make_shared<pool_stats>(st.stats);
  collected->workers.resize(st.workers.size());
  auto pending = std::make_shared<size_t>(st.workers.size());
  for (size_t w = 0; w < st.workers.size(); ++w) {
    auto done = [collected, pending, promise]() mutable {
      if (--*pending == 0)
        promise.deliver(*collected);
    };
    self->request(st.workers[w].handle, caf::infinite, stats_atom::value)
        .then(
            [collected, w, done](worker_stats& s) mutable {
              collected->workers[w] = s;
              done();
            },
            [done](caf::error&) mutable { done(); });
  }
  return promise;
}

} // namespace

worker_pool_actor spawn_worker_pool(caf::actor_system& system, runtime::io_thread& io,
                                    sprint_options opts, std::string name) {
  return system.spawn([opts = std::move(opts), name = std::move(name),
                       &io](pool_pointer self) mutable -> worker_pool_actor::behavior_type {
    auto& st = self->state;
    st.opts = std::move(opts);
    st.io = &io;
    st.label = std::move(name);
    self->set_exit_handler([self](caf::exit_msg& msg) {
      auto& st = self->state;
      auto cancelled = make_error(errc::cancelled, st.label + " stopped");
      for (auto& req : st.waiting) {
        if (std::holds_alternative<segment_job>(req.what))
          req.loss_promise.deliver(cancelled);
        else
          req.fsa_promise.deliver(cancelled);
      }
      st.waiting.clear();
      for (auto& [id, cancel] : st.in_progress)
        cancel(cancelled);
      st.in_progress.clear();
      // Each worker stops its child gracefully (`exit`, then a kill after
      // exitGrace); the actor system waits for them.
      for (auto& slot : st.workers)
        self->send_exit(slot.handle, msg.reason);
      self->quit(msg.reason);
    });
    return {
        [self](compute_atom, batch& b) { return compute_batch(self, b); },
        [self](automata_atom, std::vector<std::string>& tags) {
          return compute_automata(self, tags);
        },
        [self](compute_atom, segment_job& job) -> caf::result<double> {
          waiting_request req;
          req.what = std::move(job);
          req.loss_promise = self->make_response_promise<double>();
          auto promise = req.loss_promise;
          self->state.waiting.push_back(std::move(req));
          serve_waiting(self);
          return promise;
        },
        [self](fsa_atom, std::string& segment) -> caf::result<segment_fsa> {
          waiting_request req;
          req.what = std::move(segment);
          req.fsa_promise = self->make_response_promise<segment_fsa>();
          auto promise = req.fsa_promise;
          self->state.waiting.push_back(std::move(req));
          serve_waiting(self);
          return promise;
        },
        [self](stats_atom) { return collect_stats(self); },
    };
  });
}

} // namespace sprintrt
