/// @file
/// The pool's batch requests: a batch's segments (or automata exports) are
/// split into one list per worker by LPT, and each list is streamed: a
/// worker gets its next segment when it answered the previous one, so all
/// workers stay busy. Exactly one copy of each segment's posteriors leaves
/// the batch (the worker's request), and each error signal is written
/// straight into the batch's output.
///
/// Both kinds share the streaming (`send_next`, `start_streaming`): what
/// differs is in their progress types, which say how heavy a segment is,
/// what to send for it, where its reply goes and how the request finishes.

#include <algorithm>
#include <cfloat>
#include <chrono>
#include <cmath>
#include <memory>

#include <caf/event_based_actor.hpp>
#include <spdlog/spdlog.h>

#include "actors/automata_merge.hpp"
#include "actors/batch_checks.hpp"
#include "actors/pool_state.hpp"
#include "sprintrt/error.hpp"

namespace sprintrt::detail {

namespace {

using clock = std::chrono::steady_clock;

/// A loss as the float32 the result holds: beyond float range is +-inf
/// (converting it directly would be undefined).
float to_float_loss(double loss) {
  if (loss > FLT_MAX)
    return INFINITY;
  if (loss < -FLT_MAX)
    return -INFINITY;
  return static_cast<float>(loss);
}

/// A batch in progress: its result fills in as replies arrive.
struct batch_progress : segment_lists {
  batch_result result;
  tensor log_posteriors;
  std::vector<int64_t> lengths;
  clock::time_point started = clock::now();
  caf::typed_response_promise<batch_result> promise;

  using result_type = batch_result;
  using reply_type = double;

  /// A segment weighs its frames.
  int64_t frames(size_t index) const { return lengths[index]; }

  /// Asks `worker` for segment `index`'s loss; its error signal goes
  /// straight into the result.
  auto request(pool_pointer self, const sprint_worker_actor& worker, size_t index) {
    auto rows = static_cast<size_t>(lengths[index]);
    segment_job job{tags[index], segment_slice(log_posteriors, index, rows),
                    segment_slice(result.error_signal, index, rows)};
    return self->request(worker, caf::infinite, compute_atom::value, std::move(job));
  }

  void store(pool_pointer self, size_t index, double loss) {
    result.loss[index] = to_float_loss(loss);
    ++self->state.stats.segments;
  }

  void count_failure(pool_pointer self) { ++self->state.stats.failed_segments; }

  /// Completes the batch once its last segment answered.
  void finish(pool_pointer self);
};

void batch_progress::finish(pool_pointer self) {
  auto& st = self->state;
  untrack(self, id);
  ++st.stats.batches;
  if (!failures.empty()) {
    promise.deliver(combined_error(st.label + ": batch", *this));
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
struct automata_progress : segment_lists {
  std::vector<segment_fsa> automata;
  caf::typed_response_promise<batch_automata> promise;

  using result_type = batch_automata;
  using reply_type = segment_fsa;

  /// Exports are not counted in frames (they cost about the same each).
  int64_t frames(size_t) const { return 0; }

  /// Asks `worker` for segment `index`'s FSA.
  auto request(pool_pointer self, const sprint_worker_actor& worker, size_t index) {
    return self->request(worker, caf::infinite, fsa_atom::value, tags[index]);
  }

  void store(pool_pointer self, size_t index, segment_fsa fsa) {
    automata[index] = std::move(fsa);
    ++self->state.stats.fsa_exports;
  }

  void count_failure(pool_pointer) {}

  /// Merges the automata once the last segment answered.
  void finish(pool_pointer self);
};

void automata_progress::finish(pool_pointer self) {
  auto& st = self->state;
  untrack(self, id);
  ++st.stats.automata;
  if (!failures.empty()) {
    promise.deliver(combined_error(st.label + ": automata", *this));
    return;
  }
  auto merged = merge_automata(automata);
  if (!merged)
    promise.deliver(with_context(st.label + ": automata", merged.error()));
  else
    promise.deliver(std::move(*merged));
}

/// Sends worker `w`'s next segment of a streamed request, if any. Each
/// answer (or failure) sends the next; the last one of the whole request
/// finishes it. A segment whose worker turns out to be gone goes back to
/// the list for the replacement.
template <class Progress>
void send_next(pool_pointer self, std::shared_ptr<Progress> progress, size_t w) {
  auto& list = progress->lists[w];
  if (list.empty())
    return;
  size_t index = list.front();
  list.pop_front();
  auto frames = progress->frames(index);
  auto used = self->state.workers[w].handle;
  auto answered = [self, progress, w, frames] {
    worker_done(self, w, frames);
    if (--progress->pending == 0)
      progress->finish(self);
    else
      send_next(self, progress, w);
  };
  progress->request(self, used, index)
      .then(
          [self, progress, index, answered](typename Progress::reply_type& reply) {
            progress->store(self, index, std::move(reply));
            answered();
          },
          [self, progress, w, index, used, answered](caf::error& err) {
            if (worker_was_gone(self, w, used, err)) {
              progress->lists[w].push_front(index);
              send_next(self, progress, w);
              return;
            }
            progress->count_failure(self);
            progress->record_failure(index, err);
            answered();
          });
}

/// Starts a streamed request: registers it, splits its segments over the
/// workers by LPT on `weights`, counts them as assigned and sends each
/// worker its first segment.
template <class Progress>
void start_streaming(pool_pointer self, std::shared_ptr<Progress> progress,
                     span<const int64_t> weights) {
  progress->pending = progress->tags.size();
  progress->promise = self->make_response_promise<typename Progress::result_type>();
  progress->id = track(self, [progress](const caf::error& err) { progress->promise.deliver(err); });
  progress->lists = assign_lists(self, weights);
  for (size_t w = 0; w < progress->lists.size(); ++w) {
    for (size_t index : progress->lists[w])
      assign(self, w, progress->frames(index));
    send_next(self, progress, w);
  }
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

} // namespace

caf::result<batch_result> compute_batch(pool_pointer self, batch& b) {
  auto& st = self->state;
  if (auto err = check_batch(b))
    return with_context(st.label, err);
  auto progress = std::make_shared<batch_progress>();
  progress->result.loss.assign(b.tags.size(), 0.0f);
  progress->result.error_signal = error_signal_output(b);
  // The batch is this request's own copy: its parts move into the progress.
  progress->log_posteriors = std::move(b.log_posteriors);
  progress->tags = std::move(b.tags);
  progress->lengths = std::move(b.seq_lengths);
  start_streaming(self, progress, progress->lengths);
  return progress->promise;
}

caf::result<batch_automata> compute_automata(pool_pointer self, std::vector<std::string>& tags) {
  auto& st = self->state;
  if (auto err = check_tags(tags))
    return with_context(st.label, err);
  auto progress = std::make_shared<automata_progress>();
  progress->automata.resize(tags.size());
  progress->tags = std::move(tags);
  // Exports cost about the same per segment: LPT weighs each as one.
  std::vector<int64_t> unit(progress->tags.size(), 1);
  start_streaming(self, progress, unit);
  return progress->promise;
}

} // namespace sprintrt::detail
