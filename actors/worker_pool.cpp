#include "actors/worker_pool.hpp"

#include <cfloat>
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
#include "runtime/io_thread.hpp"

namespace sprintrt {

namespace {

using clock = std::chrono::steady_clock;

/// One worker as the pool sees it. A worker that terminates is replaced in
/// its slot; the counters stay, since every request counted in them is
/// answered exactly once (CAF answers requests to a dead actor with an
/// error).
struct worker_slot {
  sprint_worker_actor handle;
  /// Frames of segments assigned to it and not answered yet (its LPT load).
  int64_t queued_frames = 0;
  /// Requests of any kind assigned to it and not answered yet.
  size_t queued_requests = 0;
};

/// A single-segment request waiting for a free worker.
struct waiting_request {
  std::variant<segment_job, std::string> what;
  caf::typed_response_promise<double> loss_promise;
  caf::typed_response_promise<segment_fsa> fsa_promise;
};

/// What batch and automata requests have in common: each worker's list of
/// segment indices (streamed: the next is sent when the previous is
/// answered), the count still to come, and the failures so far.
struct segment_lists {
  std::vector<std::deque<size_t>> lists;
  std::vector<std::string> tags;
  size_t pending = 0;
  std::vector<std::string> failures;
  caf::error first_error;
  uint64_t id = 0;

  void record_failure(size_t index, const caf::error& err) {
    if (!first_error)
      first_error = err;
    failures.push_back("segment " + std::to_string(index) + " ('" + tags[index] +
                       "'): " + render(err));
  }
};

/// A batch in progress: its result fills in as replies arrive.
struct batch_progress : segment_lists {
  batch_result result;
  tensor log_posteriors;
  std::vector<int64_t> lengths;
  clock::time_point started = clock::now();
  caf::typed_response_promise<batch_result> promise;
};

/// An automata request in progress.
struct automata_progress : segment_lists {
  std::vector<segment_fsa> automata;
  caf::typed_response_promise<batch_automata> promise;
};

struct pool_state {
  static inline const char* name = "worker_pool";

  sprint_options opts;
  runtime::io_thread* io = nullptr;
  std::string label;
  std::vector<worker_slot> workers;
  std::deque<waiting_request> waiting;
  pool_stats stats;
  /// Requests in progress, by id: how to fail each if the pool stops first
  /// (the workers' replies would not reach it then).
  std::map<uint64_t, std::function<void(const caf::error&)>> in_progress;
  uint64_t next_id = 0;
  /// Set when the pool cannot serve anything (e.g. remote pools requested).
  caf::error refusal;

  ~pool_state() {
    // Normally stop_pool emptied everything. If the pool ended otherwise
    // (killed, an exception), nobody may wait forever and no worker may
    // outlive it.
    auto gone = make_error(errc::cancelled, label + " terminated");
    for (auto& req : waiting) {
      if (std::holds_alternative<segment_job>(req.what))
        req.loss_promise.deliver(gone);
      else
        req.fsa_promise.deliver(gone);
    }
    for (auto& [id, cancel] : in_progress)
      cancel(gone);
    for (auto& slot : workers)
      caf::anon_send_exit(slot.handle, caf::exit_reason::user_shutdown);
  }
};

using pool_pointer = worker_pool_actor::stateful_pointer<pool_state>;

// -- bookkeeping ------------------------------------------------------------------

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

/// Starts a worker in slot `index` (first use, or replacing one that
/// terminated; the slot's counters stay). The pool monitors it.
void start_worker(pool_pointer self, size_t index) {
  auto& st = self->state;
  auto name = st.label + " worker " + std::to_string(index);
  auto handle = spawn_sprint_worker(self->system(), *st.io, st.opts, name);
  self->monitor(handle);
  st.workers[index].handle = handle;
}

/// Creates workers until there are `count` (at most numInstances).
void ensure_workers(pool_pointer self, size_t count) {
  auto& st = self->state;
  count = std::min(count, st.opts.num_instances);
  while (st.workers.size() < count) {
    st.workers.emplace_back();
    start_worker(self, st.workers.size() - 1);
  }
}

/// Whether `err` says that `used`, the worker a request went to, was gone.
/// Then the slot gets a new worker (unless the down message did that
/// already), and the request should be sent again.
bool worker_was_gone(pool_pointer self, size_t index, const sprint_worker_actor& used,
                     const caf::error& err) {
  if (err != caf::sec::request_receiver_down)
    return false;
  if (self->state.workers[index].handle == used)
    start_worker(self, index);
  return true;
}

/// Counts a request of `frames` frames as assigned to a worker.
void assign(pool_pointer self, size_t index, int64_t frames) {
  auto& slot = self->state.workers[index];
  slot.queued_frames += frames;
  ++slot.queued_requests;
}

void serve_waiting(pool_pointer self);

/// Counts a request as answered by worker `index`.
void worker_done(pool_pointer self, size_t index, int64_t frames) {
  auto& slot = self->state.workers[index];
  slot.queued_frames -= frames;
  --slot.queued_requests;
  serve_waiting(self);
}

/// The error a request fails with when some of its segments failed: every
/// failure listed, the code of the first one kept.
caf::error combined_error(const std::string& what, const segment_lists& progress) {
  std::string text = what + ": " + std::to_string(progress.failures.size()) + " of " +
                     std::to_string(progress.tags.size()) + " segments failed";
  for (const auto& failure : progress.failures)
    text += "\n  " + failure;
  const auto& first = progress.first_error;
  auto code = first && first.category() == error_category ? static_cast<errc>(first.code())
                                                          : errc::child_failed;
  return make_error(code, text);
}

// -- single segments --------------------------------------------------------------

/// Sends one single-segment request to worker `index`. If that worker turns
/// out to be gone, the request waits again for a (replaced) worker.
void send_single(pool_pointer self, size_t index, waiting_request req) {
  auto used = self->state.workers[index].handle;
  auto frames = std::holds_alternative<segment_job>(req.what)
                    ? static_cast<int64_t>(std::get<segment_job>(req.what).log_posteriors.rows)
                    : int64_t{0};
  assign(self, index, frames);
  // The request is kept (as the cancel hook) until answered, so that a
  // worker gone before reading it can be given the same request again.
  auto kept = std::make_shared<waiting_request>(std::move(req));
  auto id = track(self, [kept](const caf::error& err) {
    if (std::holds_alternative<segment_job>(kept->what))
      kept->loss_promise.deliver(err);
    else
      kept->fsa_promise.deliver(err);
  });
  auto retry_or = [self, index, used, frames, id, kept](const caf::error& err, auto fail) {
    untrack(self, id);
    if (worker_was_gone(self, index, used, err)) {
      auto& slot = self->state.workers[index];
      slot.queued_frames -= frames;
      --slot.queued_requests;
      self->state.waiting.push_front(std::move(*kept));
      serve_waiting(self);
      return;
    }
    fail();
    worker_done(self, index, frames);
  };
  if (auto* job = std::get_if<segment_job>(&kept->what)) {
    self->request(used, caf::infinite, compute_atom::value, *job)
        .then(
            [self, index, frames, id, kept](double loss) {
              ++self->state.stats.segments;
              kept->loss_promise.deliver(loss);
              untrack(self, id);
              worker_done(self, index, frames);
            },
            [self, kept, retry_or](caf::error& err) {
              retry_or(err, [&] {
                ++self->state.stats.failed_segments;
                kept->loss_promise.deliver(err);
              });
            });
    return;
  }
  self->request(used, caf::infinite, fsa_atom::value, std::get<std::string>(kept->what))
      .then(
          [self, index, id, kept](segment_fsa& fsa) {
            ++self->state.stats.fsa_exports;
            kept->fsa_promise.deliver(std::move(fsa));
            untrack(self, id);
            worker_done(self, index, 0);
          },
          [kept, retry_or](caf::error& err) {
            retry_or(err, [&] { kept->fsa_promise.deliver(err); });
          });
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

// -- batches ----------------------------------------------------------------------

/// Completes a batch once its last segment answered.
void finish_batch(pool_pointer self, batch_progress& progress) {
  auto& st = self->state;
  untrack(self, progress.id);
  ++st.stats.batches;
  if (!progress.failures.empty()) {
    progress.promise.deliver(combined_error(st.label + ": batch", progress));
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
  double ms = std::chrono::duration<double, std::milli>(clock::now() - progress.started).count();
  spdlog::debug("{}: batch of {} segments ({} skipped): average frame loss {:.6f}, {:.1f} ms",
                st.label, progress.lengths.size(), skipped,
                frames > 0 ? loss_sum / static_cast<double>(frames) : 0.0, ms);
  progress.promise.deliver(std::move(progress.result));
}

/// A loss as the float32 the result holds: beyond float range is +-inf
/// (converting it directly would be undefined).
float to_float_loss(double loss) {
  if (loss > FLT_MAX)
    return INFINITY;
  if (loss < -FLT_MAX)
    return -INFINITY;
  return static_cast<float>(loss);
}

/// Sends worker `w`'s next segment of the batch, if any. A segment whose
/// worker turns out to be gone goes back to the list for the replacement.
void send_next_segment(pool_pointer self, std::shared_ptr<batch_progress> progress, size_t w) {
  auto& list = progress->lists[w];
  if (list.empty())
    return;
  size_t index = list.front();
  list.pop_front();
  auto frames = progress->lengths[index];
  auto rows = static_cast<size_t>(frames);
  auto used = self->state.workers[w].handle;
  segment_job job{progress->tags[index], segment_slice(progress->log_posteriors, index, rows),
                  segment_slice(progress->result.error_signal, index, rows)};
  auto answered = [self, progress, w, frames] {
    worker_done(self, w, frames);
    if (--progress->pending == 0)
      finish_batch(self, *progress);
    else
      send_next_segment(self, progress, w);
  };
  self->request(used, caf::infinite, compute_atom::value, std::move(job))
      .then(
          [self, progress, index, answered](double loss) {
            progress->result.loss[index] = to_float_loss(loss);
            ++self->state.stats.segments;
            answered();
          },
          [self, progress, w, index, used, answered](caf::error& err) {
            if (worker_was_gone(self, w, used, err)) {
              progress->lists[w].push_front(index);
              send_next_segment(self, progress, w);
              return;
            }
            ++self->state.stats.failed_segments;
            progress->record_failure(index, err);
            answered();
          });
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

/// Assigns `lengths` to the workers by LPT, counting what they have queued.
std::vector<std::deque<size_t>> assign_lists(pool_pointer self, span<const int64_t> lengths) {
  ensure_workers(self, lengths.size());
  std::vector<int64_t> loads;
  for (const auto& slot : self->state.workers)
    loads.push_back(slot.queued_frames);
  std::vector<std::deque<size_t>> lists;
  for (auto& list : lpt_assign(lengths, loads))
    lists.emplace_back(list.begin(), list.end());
  return lists;
}

caf::result<batch_result> compute_batch(pool_pointer self, batch& b) {
  auto& st = self->state;
  if (auto err = check_batch(b))
    return with_context(st.label, err);
  size_t batch_size = b.tags.size();
  auto progress = std::make_shared<batch_progress>();
  progress->result.loss.assign(batch_size, 0.0f);
  progress->result.error_signal = error_signal_output(b);
  progress->log_posteriors = b.log_posteriors;
  progress->tags = b.tags;
  progress->lengths = b.seq_lengths;
  progress->pending = batch_size;
  progress->promise = self->make_response_promise<batch_result>();
  progress->id = track(self, [progress](const caf::error& err) { progress->promise.deliver(err); });
  progress->lists = assign_lists(self, b.seq_lengths);
  for (size_t w = 0; w < progress->lists.size(); ++w) {
    for (size_t index : progress->lists[w])
      assign(self, w, b.seq_lengths[index]);
    send_next_segment(self, progress, w);
  }
  return progress->promise;
}

// -- automata ---------------------------------------------------------------------

/// Completes an automata request once its last segment answered.
void finish_automata(pool_pointer self, automata_progress& progress) {
  auto& st = self->state;
  untrack(self, progress.id);
  ++st.stats.automata;
  if (!progress.failures.empty()) {
    progress.promise.deliver(combined_error(st.label + ": automata", progress));
    return;
  }
  auto merged = merge_automata(progress.automata);
  if (!merged)
    progress.promise.deliver(with_context(st.label + ": automata", merged.error()));
  else
    progress.promise.deliver(std::move(*merged));
}

/// Sends worker `w`'s next FSA export, if any (retried on a replacement
/// worker like a batch segment).
void send_next_export(pool_pointer self, std::shared_ptr<automata_progress> progress, size_t w) {
  auto& list = progress->lists[w];
  if (list.empty())
    return;
  size_t index = list.front();
  list.pop_front();
  auto used = self->state.workers[w].handle;
  auto answered = [self, progress, w] {
    worker_done(self, w, 0);
    if (--progress->pending == 0)
      finish_automata(self, *progress);
    else
      send_next_export(self, progress, w);
  };
  self->request(used, caf::infinite, fsa_atom::value, progress->tags[index])
      .then(
          [self, progress, index, answered](segment_fsa& fsa) {
            ++self->state.stats.fsa_exports;
            progress->automata[index] = std::move(fsa);
            answered();
          },
          [self, progress, w, index, used, answered](caf::error& err) {
            if (worker_was_gone(self, w, used, err)) {
              progress->lists[w].push_front(index);
              send_next_export(self, progress, w);
              return;
            }
            progress->record_failure(index, err);
            answered();
          });
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
  // Exports cost about the same per segment: count each as one frame.
  std::vector<int64_t> unit(tags.size(), 1);
  progress->lists = assign_lists(self, unit);
  for (size_t w = 0; w < progress->lists.size(); ++w) {
    for (size_t i = 0; i < progress->lists[w].size(); ++i)
      assign(self, w, 0);
    send_next_export(self, progress, w);
  }
  return progress->promise;
}

// -- stats, life cycle ------------------------------------------------------------

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
  auto id = track(self, [promise](const caf::error& err) mutable { promise.deliver(err); });
  for (size_t w = 0; w < st.workers.size(); ++w) {
    auto done = [self, collected, pending, promise, id]() mutable {
      if (--*pending == 0) {
        untrack(self, id);
        promise.deliver(*collected);
      }
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

/// Stops the pool: every waiting and in-progress request fails with
/// `cancelled`, every worker gets the exit (and stops its child gracefully).
void stop_pool(pool_pointer self, const caf::error& reason) {
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
  for (auto& slot : st.workers)
    self->send_exit(slot.handle, reason);
  self->quit(reason);
}

/// The pool's behavior, spawned as a function with arguments (CAF 0.17
/// dereferences a null argument tuple when a lambda is spawned without any).
worker_pool_actor::behavior_type pool_behavior(pool_pointer self, sprint_options opts,
                                               std::string name, runtime::io_thread* io) {
  auto& st = self->state;
  st.opts = std::move(opts);
  st.io = io;
  st.label = std::move(name);
  if (!st.opts.remote.empty())
    st.refusal = make_error(errc::invalid_options,
                            st.label + ": the 'remote' option (pools on other machines) is not "
                                       "supported yet; remove it to run local children");
  self->set_exit_handler([self](caf::exit_msg& msg) { stop_pool(self, msg.reason); });
  self->set_down_handler([self](caf::down_msg& msg) {
    // Workers end only when stopped; one that terminated otherwise (killed,
    // an exception) failed its requests, whose callbacks already ran or will
    // run. Its slot gets a new worker (unless a request found it gone first).
    auto& st = self->state;
    for (size_t i = 0; i < st.workers.size(); ++i)
      if (st.workers[i].handle.address() == msg.source) {
        spdlog::warn("{}: worker {} terminated ({}); starting a new one", st.label, i,
                     render(msg.reason));
        start_worker(self, i);
      }
  });
  return {
      [self](compute_atom, batch& b) -> caf::result<batch_result> {
        if (self->state.refusal)
          return self->state.refusal;
        return compute_batch(self, b);
      },
      [self](automata_atom, std::vector<std::string>& tags) -> caf::result<batch_automata> {
        if (self->state.refusal)
          return self->state.refusal;
        return compute_automata(self, tags);
      },
      [self](compute_atom, segment_job& job) -> caf::result<double> {
        if (self->state.refusal)
          return self->state.refusal;
        waiting_request req;
        req.what = std::move(job);
        req.loss_promise = self->make_response_promise<double>();
        auto promise = req.loss_promise;
        self->state.waiting.push_back(std::move(req));
        serve_waiting(self);
        return promise;
      },
      [self](fsa_atom, std::string& segment) -> caf::result<segment_fsa> {
        if (self->state.refusal)
          return self->state.refusal;
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
}

} // namespace

worker_pool_actor spawn_worker_pool(caf::actor_system& system, runtime::io_thread& io,
                                    sprint_options opts, std::string name) {
  return system.spawn(pool_behavior, std::move(opts), std::move(name), &io);
}

} // namespace sprintrt
