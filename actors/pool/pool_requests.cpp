/// @file
/// The pool's batch requests (single ones are templates in the header): a
/// batch's losses, each segment's error signal
/// written straight into the batch's output (exactly one copy of each
/// segment's posteriors leaves the batch: the worker's request), and a
/// batch's automata, merged once every export arrived. Both are placed by
/// LPT and fail, once all their segments are done, with every failed
/// segment listed and the code of the first in batch order; a partial
/// batch instead answers with its failures beside the other results.

#include "actors/pool/pool_requests.hpp"
#include "sprintrt/logging.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <string_view>

#include <caf/atom.hpp>
#include <caf/event_based_actor.hpp>
#include <spdlog/spdlog.h>

#include "actors/pool/automata_merge.hpp"
#include "actors/pool/batch_checks.hpp"
#include "common/float_loss.hpp"
#include "sprintrt/error.hpp"

namespace sprintrt::detail {

namespace {

using clock = std::chrono::steady_clock;

/// How many names a line of failures shows before "and N more".
constexpr size_t names_shown = 3;

/// "segment 3 ('a')", or "3 segments: 0 ('a'), 1 ('b'), 2 ('c')", or
/// "64 segments: 0 ('a'), 1 ('b'), 2 ('c') and 61 more": the segments at
/// `indices` of `tags`.
std::string segment_list(const std::vector<std::string>& tags, const std::vector<size_t>& indices) {
  auto named = [&tags](size_t index) { return std::to_string(index) + " ('" + tags[index] + "')"; };
  if (indices.size() == 1)
    return "segment " + named(indices[0]);
  std::string text = std::to_string(indices.size()) + " segments: ";
  for (size_t i = 0; i < std::min(indices.size(), names_shown); ++i)
    text += (i > 0 ? ", " : "") + named(indices[i]);
  if (indices.size() > names_shown)
    text += " and " + std::to_string(indices.size() - names_shown) + " more";
  return text;
}

/// What both batch shapes have: the segments' tags, and the failures so
/// far, in batch order.
struct batch_failures {
  std::vector<std::string> tags;
  /// What this pool's workers' labels begin with ("pool 0 worker "): a
  /// cause is grouped without the worker that met it, since every worker
  /// meets a missing program or a wrong config alike (the log names them).
  std::string worker_label;
  /// The failed segments' errors by index: in batch order, whatever order
  /// they arrived in.
  std::map<size_t, caf::error> failures;

  /// Notes that segment `index` failed with `err`.
  void record(size_t index, const caf::error& err) { failures.emplace(index, err); }

  /// `text` with its first "pool 0 worker 3: " as "pool 0: ".
  std::string without_worker(std::string text) const {
    auto at = text.find(worker_label);
    if (worker_label.empty() || at == std::string::npos)
      return text;
    auto digits = at + worker_label.size();
    auto end = digits;
    while (end < text.size() && text[end] >= '0' && text[end] <= '9')
      ++end;
    if (end == digits || text.compare(end, 2, ": ") != 0)
      return text;
    // Keep "pool 0", drop " worker 3" up to the ": ".
    auto pool_end = at + worker_label.size() - std::string_view{" worker "}.size();
    return text.erase(pool_end, end - pool_end);
  }

  /// The error the request fails with when some of its segments failed:
  /// one entry per distinct cause (`failure_cause_key`), in the order of its
  /// first segment, naming how many segments it failed and the first few of
  /// them, with the first segment's text. Its code is that of the failed
  /// segment first in batch order (not the first failure to arrive, which
  /// depends on the workers' timing), so that equal batches fail with equal
  /// codes; `child_failed` if that error is not sprintrt's own.
  caf::error combined_error(const std::string& what) const {
    std::vector<std::pair<std::string, std::vector<size_t>>> causes;
    std::map<std::string, size_t> cause_index;
    for (const auto& [index, err] : failures) {
      auto cause = without_worker(render(err));
      auto [it, added] = cause_index.emplace(failure_cause_key(cause), causes.size());
      if (added)
        causes.emplace_back(cause, std::vector<size_t>{});
      causes[it->second].second.push_back(index);
    }
    std::string text = what + ": " + std::to_string(failures.size()) + " of " +
                       std::to_string(tags.size()) + " segments failed";
    for (const auto& [cause, indices] : causes)
      text += "\n  " + segment_list(tags, indices) + ": " + cause;
    const auto& first = failures.begin()->second;
    auto code =
        first.category() == error_category ? static_cast<errc>(first.code()) : errc::child_failed;
    return make_error(code, text);
  }
};

/// A batch's losses in progress: its result fills in as replies arrive.
struct batch_progress final : command_pool_request<get_loss_command>, batch_failures {
  batch_result result;
  tensor log_posteriors;
  std::vector<int64_t> lengths;
  /// `batch::partial`: failures are answered beside the results.
  bool partial = false;
  clock::time_point started = clock::now();
  caf::typed_response_promise<batch_result> promise;

  /// A batch whose segments are not known before it was checked.
  explicit batch_progress(size_t segments) : command_pool_request(request_shape::batch, segments) {}

  /// Segment `index`'s posteriors, and its rows of the output for its
  /// error signal.
  segment_job work(size_t index) const override {
    auto rows = static_cast<size_t>(lengths[index]);
    return {tags[index], segment_slice(log_posteriors, index, rows),
            segment_slice(result.error_signal, index, rows)};
  }

  void store(size_t index, double loss) override { result.loss[index] = to_float_loss(loss); }

  void record_failure(size_t index, const caf::error& err, bool) override { record(index, err); }

  void finish(pool_pointer self) override;

  void answer_cancelled(const caf::error& err) override { promise.deliver(err); }

private:
  /// Puts the failures into the result of a partial batch: each failed
  /// segment's loss NaN, its rows of the error signal zero (a worker may
  /// have written some before it failed, and a reused output holds the
  /// previous batch's), its error in `result.failures`.
  void answer_failures_in_result();
};

void batch_progress::answer_failures_in_result() {
  const size_t batch_size = lengths.size();
  const size_t dim = result.error_signal.dim(2);
  for (const auto& [index, err] : failures) {
    result.loss[index] = std::numeric_limits<float>::quiet_NaN();
    for (size_t t = 0; t < static_cast<size_t>(lengths[index]); ++t) {
      float* row = result.error_signal.data() + (t * batch_size + index) * dim;
      std::fill(row, row + dim, 0.0f);
    }
    result.failures.push_back({index, tags[index], err});
  }
}

void batch_progress::finish(pool_pointer self) {
  auto& st = self->state;
  st.complete(id);
  ++st.stats.batches;
  if (!failures.empty()) {
    auto combined = combined_error(st.label + ": batch");
    if (!partial) {
      promise.deliver(std::move(combined));
      return;
    }
    logger().warn("{} (a partial batch: the others' results are returned)", render(combined));
    answer_failures_in_result();
  }
  // A segment without a path (loss inf, error signal zero) is a result,
  // not a failure: counted, and named once per batch.
  double loss_sum = 0;
  int64_t frame_sum = 0;
  std::vector<size_t> skipped;
  for (size_t b = 0; b < lengths.size(); ++b) {
    if (failures.count(b) > 0)
      continue;
    if (std::isinf(result.loss[b])) {
      skipped.push_back(b);
      continue;
    }
    loss_sum += result.loss[b];
    frame_sum += lengths[b];
  }
  st.stats.skipped_segments += skipped.size();
  if (!skipped.empty())
    logger().warn("{}: batch: {} of {} segments without a path (loss inf, error signal zero): {}",
                  st.label, skipped.size(), lengths.size(), segment_list(tags, skipped));
  double ms = std::chrono::duration<double, std::milli>(clock::now() - started).count();
  logger().debug("{}: batch of {} segments ({} without a path, {} failed): average frame loss "
                 "{:.6f}, {:.1f} ms",
                 st.label, lengths.size(), skipped.size(), failures.size(),
                 frame_sum > 0 ? loss_sum / static_cast<double>(frame_sum) : 0.0, ms);
  promise.deliver(std::move(result));
}

/// An automata request in progress.
struct automata_progress final : command_pool_request<export_fsa_command>, batch_failures {
  std::vector<segment_fsa> automata;
  caf::typed_response_promise<batch_automata> promise;

  explicit automata_progress(std::vector<std::string> segment_tags)
      : command_pool_request(request_shape::batch, segment_tags.size()) {
    tags = std::move(segment_tags);
    automata.resize(tags.size());
  }

  fsa_query work(size_t index) const override { return {fsa_source::segment_name, tags[index]}; }

  void store(size_t index, segment_fsa fsa) override { automata[index] = std::move(fsa); }

  void record_failure(size_t index, const caf::error& err, bool) override { record(index, err); }

  void finish(pool_pointer self) override;

  void answer_cancelled(const caf::error& err) override { promise.deliver(err); }
};

void automata_progress::finish(pool_pointer self) {
  auto& st = self->state;
  st.complete(id);
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

/// The error signal output: the caller's tensor if it fits and is not
/// shared, else a new one of zeros. A reused one has only its padding (the
/// rows past each segment's length) zeroed: every segment's reply
/// overwrites all of its own rows, a batch with a failed segment delivers
/// no output at all, and a partial one zeroes the failed segments' rows.
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
  auto progress = std::make_shared<batch_progress>(b.tags.size());
  progress->worker_label = st.label + " worker ";
  // The origin first: making the promise takes the sender out of the message.
  auto origin = request_origin::current(self);
  progress->promise = self->make_response_promise<batch_result>();
  st.enroll(progress, std::move(origin));
  if (b.time_limit.count() > 0)
    self->delayed_send(self, b.time_limit, time_limit_atom::value, progress->id,
                       static_cast<int64_t>(b.time_limit.count()));
  // The batch is this request's own copy: it moves to the preparer and back.
  self->request(st.preparer, caf::infinite, prepare_atom::value, std::move(b))
      .then(
          [self, progress](batch& ready) {
            if (!self->state.in_progress(progress->id))
              return; // the pool stopped meanwhile and failed it
            progress->result.loss.assign(ready.tags.size(), 0.0f);
            progress->result.error_signal = std::move(ready.reuse_error_signal);
            progress->log_posteriors = std::move(ready.log_posteriors);
            progress->tags = std::move(ready.tags);
            progress->lengths = std::move(ready.seq_lengths);
            progress->partial = ready.partial;
            start_request(self, progress);
          },
          [self, progress](caf::error& err) {
            if (err == caf::sec::request_receiver_down)
              self->state.preparer = caf::actor{}; // the next batch gets a new one
            if (!self->state.in_progress(progress->id))
              return;
            self->state.complete(progress->id);
            progress->promise.deliver(with_context(self->state.label, err));
          });
  return progress->promise;
}

caf::result<batch_automata> compute_automata(pool_pointer self, std::vector<std::string>& tags) {
  auto& st = self->state;
  if (auto err = check_tags(tags))
    return with_context(st.label, err);
  auto progress = std::make_shared<automata_progress>(std::move(tags));
  progress->worker_label = st.label + " worker ";
  auto origin = request_origin::current(self); // before the promise, as above
  progress->promise = self->make_response_promise<batch_automata>();
  st.enroll(progress, std::move(origin));
  start_request(self, progress);
  return progress->promise;
}

} // namespace sprintrt::detail
