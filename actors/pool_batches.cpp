/// @file
/// The pool's batch requests: a batch's segments (or automata exports) are
/// split into one list per worker by LPT, and each list is streamed: a
/// worker gets its next segment when it answered the previous one, so all
/// workers stay busy. Exactly one copy of each segment's posteriors leaves
/// the batch (the worker's request), and each error signal is written
/// straight into the batch's output.

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

} // namespace

caf::result<batch_result> compute_batch(pool_pointer self, batch& b) {
  auto& st = self->state;
  if (auto err = check_batch(b))
    return with_context(st.label, err);
  size_t batch_size = b.tags.size();
  auto progress = std::make_shared<batch_progress>();
  progress->result.loss.assign(batch_size, 0.0f);
  progress->result.error_signal = error_signal_output(b);
  // The batch is this request's own copy: its parts move into the progress.
  progress->log_posteriors = std::move(b.log_posteriors);
  progress->tags = std::move(b.tags);
  progress->lengths = std::move(b.seq_lengths);
  progress->pending = batch_size;
  progress->promise = self->make_response_promise<batch_result>();
  progress->id = track(self, [progress](const caf::error& err) { progress->promise.deliver(err); });
  progress->lists = assign_lists(self, progress->lengths);
  for (size_t w = 0; w < progress->lists.size(); ++w) {
    for (size_t index : progress->lists[w])
      assign(self, w, progress->lengths[index]);
    send_next_segment(self, progress, w);
  }
  return progress->promise;
}

namespace {

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

} // namespace

caf::result<batch_automata> compute_automata(pool_pointer self, std::vector<std::string>& tags) {
  auto& st = self->state;
  if (auto err = check_tags(tags))
    return with_context(st.label, err);
  auto progress = std::make_shared<automata_progress>();
  progress->automata.resize(tags.size());
  progress->pending = tags.size();
  progress->tags = std::move(tags);
  progress->promise = self->make_response_promise<batch_automata>();
  progress->id = track(self, [progress](const caf::error& err) { progress->promise.deliver(err); });
  // Exports cost about the same per segment: count each as one frame.
  std::vector<int64_t> unit(progress->tags.size(), 1);
  progress->lists = assign_lists(self, unit);
  for (size_t w = 0; w < progress->lists.size(); ++w) {
    for (size_t i = 0; i < progress->lists[w].size(); ++i)
      assign(self, w, 0);
    send_next_export(self, progress, w);
  }
  return progress->promise;
}

} // namespace sprintrt::detail
