/// @file
/// The pool's batch requests: a batch's segments (or automata exports) are
/// split into one list per worker by LPT, and each list is streamed: a
/// worker holds `segments_ahead` of its segments at a time and gets the
/// next when it answered one, so all workers stay busy without the pool
/// between two segments. Exactly one copy of each segment's posteriors leaves
/// the batch (the worker's request), and each error signal is written
/// straight into the batch's output.
///
/// Both kinds share the streaming (`send_next`, `start_streaming`): what
/// differs is in their progress types, which say how heavy a segment is,
/// what to send for it, where its reply goes and how the request finishes,
/// and in their kind (`pool_kinds.hpp`).

#include "actors/pool/pool_batches.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <deque>
#include <map>
#include <memory>

#include <caf/atom.hpp>
#include <caf/event_based_actor.hpp>
#include <spdlog/spdlog.h>

#include "actors/pool/automata_merge.hpp"
#include "actors/pool/batch_checks.hpp"
#include "actors/pool/pool_kinds.hpp"
#include "actors/pool/pool_singles.hpp"
#include "common/float_loss.hpp"
#include "sprintrt/error.hpp"

namespace sprintrt::detail {

namespace {

using clock = std::chrono::steady_clock;

/// How many segments of a streamed request each worker holds at once: the
/// one it serves and those it writes to its child ahead (`write_ahead` in
/// sprint_worker_state.hpp), so that it never waits for the pool between two
/// segments. The lists are assigned up front (LPT), so holding more does
/// not change which worker computes what.
constexpr size_t segments_ahead = 4;

/// A segment of a streamed request, waiting in its worker's list or sent:
/// counted in that worker's load until answered.
struct queued_segment {
  size_t index = 0;
  assignment held;
  /// How often it was sent again after its worker terminated.
  size_t resends = 0;
  /// How often it went to another worker because its own was unavailable.
  size_t reroutes = 0;
};

/// What batch and automata requests have in common: each worker's list of
/// segments (streamed: the next is sent when one is answered), the
/// count still to come, and the failures so far.
struct streamed_request {
  std::vector<std::deque<queued_segment>> lists;
  /// Segments sent to each worker and not answered yet.
  std::vector<size_t> outstanding;
  /// The same by the id of the request to the worker, for telling the
  /// workers to drop them when the caller cancels.
  std::map<uint64_t, sprint_worker_actor> at_workers;
  std::vector<std::string> tags;
  size_t pending = 0;
  /// Failed segments by index (listed in batch order).
  std::map<size_t, std::string> failures;
  caf::error first_error;
  /// A failure listed the unavailable workers already.
  bool listed_unavailable = false;
  /// The caller cancelled it (or the pool stopped): nothing more is sent,
  /// and answers to what was sent only release their workers.
  bool abandoned = false;
  /// Its id in the pool's tracked requests.
  uint64_t id = 0;

  /// Notes that segment `index` failed with `err`.
  void record_failure(size_t index, const caf::error& err) {
    if (!first_error)
      first_error = err;
    failures.emplace(index, "segment " + std::to_string(index) + " ('" + tags[index] +
                                "'): " + render(err));
  }

  /// The error the request fails with when some of its segments failed:
  /// every failure listed in batch order, the code of the first one kept.
  caf::error combined_error(const std::string& what) const {
    std::string text = what + ": " + std::to_string(failures.size()) + " of " +
                       std::to_string(tags.size()) + " segments failed";
    for (const auto& [index, failure] : failures)
      text += "\n  " + failure;
    auto code = first_error && first_error.category() == error_category
                    ? static_cast<errc>(first_error.code())
                    : errc::child_failed;
    return make_error(code, text);
  }

  /// Stops the request: the segments not sent yet are dropped.
  void abandon() {
    abandoned = true;
    for (auto& list : lists) {
      for (auto& segment : list)
        segment.held.withdraw();
      list.clear();
    }
  }
};

/// A batch in progress: its result fills in as replies arrive.
struct batch_progress : streamed_request {
  batch_result result;
  tensor log_posteriors;
  std::vector<int64_t> lengths;
  clock::time_point started = clock::now();
  caf::typed_response_promise<batch_result> promise;

  using kind = loss_kind;
  using result_type = batch_result;

  /// A segment weighs its frames.
  int64_t frames(size_t index) const { return lengths[index]; }

  /// Asks `worker` for segment `index`'s loss; its error signal goes
  /// straight into the result.
  auto request(pool_pointer self, const sprint_worker_actor& worker, size_t index) {
    auto rows = static_cast<size_t>(lengths[index]);
    segment_job job{tags[index], segment_slice(log_posteriors, index, rows),
                    segment_slice(result.error_signal, index, rows)};
    return kind::ask(self, worker, std::move(job));
  }

  /// Puts segment `index`'s loss into the result.
  void store(size_t index, double loss) { result.loss[index] = to_float_loss(loss); }

  /// Completes the batch once its last segment answered.
  void finish(pool_pointer self);
};

void batch_progress::finish(pool_pointer self) {
  auto& st = self->state;
  st.untrack(id);
  ++st.stats.batches;
  if (!failures.empty()) {
    promise.deliver(combined_error(st.label + ": batch"));
    return;
  }
  // As the original: the average loss per frame, for the log.
  double loss_sum = 0;
  int64_t frame_sum = 0;
  size_t skipped = 0;
  for (size_t b = 0; b < lengths.size(); ++b) {
    if (std::isinf(result.loss[b])) {
      ++skipped;
      continue;
    }
    loss_sum += result.loss[b];
    frame_sum += lengths[b];
  }
  double ms = std::chrono::duration<double, std::milli>(clock::now() - started).count();
  spdlog::debug("{}: batch of {} segments ({} skipped): average frame loss {:.6f}, {:.1f} ms",
                st.label, lengths.size(), skipped,
                frame_sum > 0 ? loss_sum / static_cast<double>(frame_sum) : 0.0, ms);
  promise.deliver(std::move(result));
}

/// An automata request in progress.
struct automata_progress : streamed_request {
  std::vector<segment_fsa> automata;
  caf::typed_response_promise<batch_automata> promise;

  using kind = fsa_kind;
  using result_type = batch_automata;

  /// Exports cost about the same each: LPT weighs each as one frame.
  int64_t frames(size_t) const { return 1; }

  /// Asks `worker` for segment `index`'s FSA.
  auto request(pool_pointer self, const sprint_worker_actor& worker, size_t index) {
    return kind::ask(self, worker, tags[index]);
  }

  /// Keeps segment `index`'s automaton for the merge.
  void store(size_t index, segment_fsa fsa) { automata[index] = std::move(fsa); }

  /// Merges the automata once the last segment answered.
  void finish(pool_pointer self);
};

void automata_progress::finish(pool_pointer self) {
  auto& st = self->state;
  st.untrack(id);
  ++st.stats.automata;
  if (!failures.empty()) {
    promise.deliver(combined_error(st.label + ": automata"));
    return;
  }
  auto merged = merge_automata(automata);
  if (!merged)
    promise.deliver(with_context(st.label + ": automata", merged.error()));
  else
    promise.deliver(std::move(*merged));
}

template <class Progress>
void send_next(pool_pointer self, std::shared_ptr<Progress> progress, size_t w);

template <class Progress>
void place(pool_pointer self, std::shared_ptr<Progress> progress,
           std::vector<queued_segment> segments);

/// Sends the first segment of worker `w`'s list. Its answer (or failure)
/// releases the segment's assignment and sends the next; the last one of the
/// whole request finishes it. A segment whose worker turns out to be gone
/// goes back to the front of the list, still assigned, for the replacement.
template <class Progress>
void send_first(pool_pointer self, std::shared_ptr<Progress> progress, size_t w) {
  using kind = typename Progress::kind;
  auto& list = progress->lists[w];
  auto sent = std::make_shared<queued_segment>(std::move(list.front()));
  list.pop_front();
  ++progress->outstanding[w];
  auto used = self->state.workers[w].handle;
  auto asked = progress->request(self, used, sent->index);
  auto worker_request = request_id_of(asked.id());
  progress->at_workers.emplace(worker_request, used);
  auto answered = [self, progress, w, sent] {
    --progress->outstanding[w];
    release_and_serve(self, sent->held);
    if (--progress->pending == 0)
      progress->finish(self);
    else
      send_next(self, progress, w);
  };
  // An answer to an abandoned request only frees its worker (counting what
  // it computed into its measured speed).
  auto settled = [self, progress, w, sent, worker_request](bool computed) {
    progress->at_workers.erase(worker_request);
    if (!progress->abandoned)
      return false;
    --progress->outstanding[w];
    if (computed)
      sent->held.release();
    else
      sent->held.withdraw();
    serve_waiting(self);
    return true;
  };
  asked.then(
      [self, progress, sent, answered, settled](typename kind::reply_type& reply) {
        if (settled(true))
          return;
        progress->store(sent->index, std::move(reply));
        kind::count_served(self->state.stats);
        answered();
      },
      [self, progress, w, sent, used, answered, settled](caf::error& err) {
        if (settled(false))
          return;
        if (worker_was_unavailable(err) && sent->reroutes < max_reroutes(self)) {
          // Not computed: it goes elsewhere, with the rest of this
          // worker's list (its other sent segments come back likewise).
          --progress->outstanding[w];
          std::vector<queued_segment> moved;
          moved.push_back(std::move(*sent));
          ++moved.back().reroutes;
          for (auto& queued : progress->lists[w])
            moved.push_back(std::move(queued));
          progress->lists[w].clear();
          place(self, progress, std::move(moved));
          return;
        }
        if (worker_was_gone(self, w, used, err)) {
          if (sent->resends < self->state.source.max_resends) {
            ++sent->resends;
            --progress->outstanding[w];
            progress->lists[w].push_front(std::move(*sent));
            send_next(self, progress, w);
            return;
          }
          err = workers_kept_terminating(self, sent->resends);
        }
        kind::count_failed(self->state.stats);
        progress->record_failure(sent->index, err);
        answered();
      });
}

/// Sends worker `w` segments of its list until it holds `segments_ahead`
/// per request it computes at once.
template <class Progress>
void send_next(pool_pointer self, std::shared_ptr<Progress> progress, size_t w) {
  size_t ahead = segments_ahead * std::max<size_t>(slot_state(self, w).parallelism, 1);
  while (progress->outstanding[w] < ahead && !progress->lists[w].empty())
    send_first(self, progress, w);
}

/// Spreads `segments` (assigned to nobody, or to a worker they leave) over
/// the workers' lists by LPT and sends each worker what it can hold. If no
/// worker is available, they fail.
template <class Progress>
void place(pool_pointer self, std::shared_ptr<Progress> progress,
           std::vector<queued_segment> segments) {
  using kind = typename Progress::kind;
  std::vector<int64_t> weights;
  for (auto& segment : segments) {
    segment.held.withdraw();
    weights.push_back(progress->frames(segment.index));
  }
  auto lists = lpt_lists(self, weights);
  // Single requests may have made workers since the request started.
  progress->lists.resize(std::max(progress->lists.size(), lists.size()));
  progress->outstanding.resize(progress->lists.size(), 0);
  bool placed = false;
  for (size_t w = 0; w < lists.size(); ++w)
    for (size_t k : lists[w]) {
      placed = true;
      segments[k].held = assign(self, w, weights[k]);
      progress->lists[w].push_back(std::move(segments[k]));
    }
  if (!placed && !segments.empty()) {
    // The unavailable workers are listed once per request, with the first
    // segment that found none.
    for (auto& segment : segments) {
      kind::count_failed(self->state.stats);
      progress->record_failure(segment.index, progress->listed_unavailable
                                                  ? make_error(errc::worker_unavailable,
                                                               "no worker can take it (see above)")
                                                  : no_worker_available(self));
      progress->listed_unavailable = true;
    }
    progress->pending -= segments.size();
    if (progress->pending == 0) {
      progress->finish(self);
      return;
    }
  }
  for (size_t w = 0; w < progress->lists.size(); ++w)
    send_next(self, progress, w);
}

/// Registers the request being handled with the pool (so that a stopping
/// pool or its cancelling caller fails it) and makes its promise.
template <class Progress>
void begin_request(pool_pointer self, const std::shared_ptr<Progress>& progress) {
  auto origin = request_origin::current(self);
  progress->promise = self->make_response_promise<typename Progress::result_type>();
  progress->id = self->state.track(
      [progress](const caf::error& err) {
        progress->abandon();
        progress->promise.deliver(err);
      },
      std::move(origin),
      [self, progress] {
        for (auto& [worker_request, worker] : progress->at_workers)
          self->send(worker, cancel_atom::value, worker_request);
      });
}

/// Starts a registered request streaming: spreads its segments over the
/// workers (`place`), weighing each by `Progress::frames`.
template <class Progress>
void start_streaming(pool_pointer self, std::shared_ptr<Progress> progress) {
  progress->pending = progress->tags.size();
  ensure_workers(self, progress->tags.size());
  progress->lists.resize(self->state.workers.size());
  progress->outstanding.assign(self->state.workers.size(), 0);
  std::vector<queued_segment> segments(progress->tags.size());
  for (size_t i = 0; i < segments.size(); ++i)
    segments[i].index = i;
  place(self, progress, std::move(segments));
}

/// The error signal output: the caller's tensor if it fits and is not
/// shared, else a new one of zeros. A reused one has only its padding (the
/// rows past each segment's length) zeroed: every segment's reply
/// overwrites all of its own rows, and a batch with a failed segment
/// delivers no output at all.
tensor error_signal_output(batch& b) {
  auto& reuse = b.reuse_error_signal;
  if (reuse.shape() == b.log_posteriors.shape() && reuse.unique()) {
    size_t frames = reuse.dim(0), batch_size = reuse.dim(1), dim = reuse.dim(2);
    for (size_t t = 0; t < frames; ++t)
      for (size_t i = 0; i < batch_size; ++i)
        if (static_cast<int64_t>(t) >= b.seq_lengths[i]) {
          float* row = reuse.data() + (t * batch_size + i) * dim;
          std::fill(row, row + dim, 0.0f);
        }
    return std::move(reuse);
  }
  return tensor::zeros(b.log_posteriors.shape());
}

using prepare_atom = caf::atom_constant<caf::atom("prepare")>;

/// The pool's helper for the O(T x B x D) part of a batch: the NaN/+inf scan
/// and the zeroed output (tens of milliseconds for a large batch), so that
/// the pool serves other requests meanwhile, on the other scheduler thread.
/// `(prepare, batch) -> batch`: the batch checked, `reuse_error_signal` its
/// output.
caf::behavior batch_preparer(caf::event_based_actor*, std::string) {
  return {
      [](prepare_atom, batch& b) -> caf::result<batch> {
        if (auto err = check_batch(b))
          return err;
        b.reuse_error_signal = error_signal_output(b);
        return std::move(b);
      },
  };
}

} // namespace

caf::result<batch_result> compute_batch(pool_pointer self, batch& b) {
  auto& st = self->state;
  if (!st.preparer)
    st.preparer = self->spawn(batch_preparer, st.label);
  auto progress = std::make_shared<batch_progress>();
  begin_request(self, progress);
  // The batch is this request's own copy: it moves to the preparer and back.
  self->request(st.preparer, caf::infinite, prepare_atom::value, std::move(b))
      .then(
          [self, progress](batch& ready) {
            if (!self->state.tracked(progress->id))
              return; // the pool stopped meanwhile and failed it
            progress->result.loss.assign(ready.tags.size(), 0.0f);
            progress->result.error_signal = std::move(ready.reuse_error_signal);
            progress->log_posteriors = std::move(ready.log_posteriors);
            progress->tags = std::move(ready.tags);
            progress->lengths = std::move(ready.seq_lengths);
            start_streaming(self, progress);
          },
          [self, progress](caf::error& err) {
            if (err == caf::sec::request_receiver_down)
              self->state.preparer = caf::actor{}; // the next batch gets a new one
            if (!self->state.tracked(progress->id))
              return;
            self->state.untrack(progress->id);
            progress->promise.deliver(with_context(self->state.label, err));
          });
  return progress->promise;
}

caf::result<batch_automata> compute_automata(pool_pointer self, std::vector<std::string>& tags) {
  auto& st = self->state;
  if (auto err = check_tags(tags))
    return with_context(st.label, err);
  auto progress = std::make_shared<automata_progress>();
  progress->automata.resize(tags.size());
  progress->tags = std::move(tags);
  begin_request(self, progress);
  start_streaming(self, progress);
  return progress->promise;
}

} // namespace sprintrt::detail
