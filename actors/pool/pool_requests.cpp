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

/// The text of `err` as a batch's error tells it: a worker's label as its
/// pool's (`failure::pool`), since every worker of a pool meets a missing
/// program or a wrong config alike (the log names them).
std::string cause_text(const caf::error& err) {
  if (err.category() != error_category)
    return render(err);
  auto what = failure_of(err);
  if (!what.worker.empty())
    what.worker = what.pool;
  return std::string{to_string(static_cast<errc>(err.code()))} + ": " + to_string(what);
}

/// Returns whether `a` and `b` fail their segments for the same reason:
/// equal codes, and `same_cause`.
bool same_reason(const caf::error& a, const caf::error& b) {
  if (a.code() != b.code() || a.category() != b.category())
    return false;
  if (a.category() != error_category)
    return render(a) == render(b);
  return same_cause(failure_of(a), failure_of(b));
}

/// The error a batch of segments `tags` fails with when some of them failed
/// (`failures`): one entry per distinct reason
/// (`same_reason`), in the order of its first segment, naming how many
/// segments it failed and the first few of them, with the first segment's
/// text. Its code is that of the failed segment first in batch order (not
/// the first failure to arrive, which depends on the workers' timing), so
/// that equal batches fail with equal codes; `child_failed` if that error
/// is not sprintrt's own.
caf::error combined_error(const std::string& what, const std::vector<std::string>& tags,
                          const std::map<size_t, item_failure>& failures) {
  std::vector<std::pair<const caf::error*, std::vector<size_t>>> reasons;
  for (const auto& [index, failed] : failures) {
    const auto& err = failed.error;
    auto known = std::find_if(reasons.begin(), reasons.end(), [&err](const auto& reason) {
      return same_reason(*reason.first, err);
    });
    if (known == reasons.end())
      reasons.emplace_back(&err, std::vector<size_t>{index});
    else
      known->second.push_back(index);
  }
  std::string text = what + ": " + std::to_string(failures.size()) + " of " +
                     std::to_string(tags.size()) + " segments failed";
  for (const auto& [first, indices] : reasons)
    text += "\n  " + segment_list(tags, indices) + ": " + cause_text(*first);
  const auto& first = failures.begin()->second.error;
  auto code =
      first.category() == error_category ? static_cast<errc>(first.code()) : errc::child_failed;
  return make_error(code, text);
}

/// A batch's losses as they come in: what its answer needs besides the
/// request's items.
struct batch_progress {
  batch_result result;
  std::vector<std::string> tags;
  std::vector<int64_t> lengths;
  /// `batch::partial`: failures are answered beside the results.
  bool partial = false;
  clock::time_point started = clock::now();
  caf::typed_response_promise<batch_result> promise;

  /// Puts the failures into the result of a partial batch: each failed
  /// segment's loss NaN, its rows of the error signal zero (a worker may
  /// have written some before it failed, and a reused output holds the
  /// previous batch's), its error in `result.failures`.
  void answer_failures_in_result(const std::map<size_t, item_failure>& failures);

  /// Answers the caller once every segment of `req` is done: the losses,
  /// or the batch's error (`combined_error`).
  void answer(pool_pointer self, pool_request& req);
};

void batch_progress::answer_failures_in_result(const std::map<size_t, item_failure>& failures) {
  const size_t batch_size = lengths.size();
  const size_t dim = result.error_signal.dim(2);
  for (const auto& [index, failed] : failures) {
    result.loss[index] = std::numeric_limits<float>::quiet_NaN();
    for (size_t t = 0; t < static_cast<size_t>(lengths[index]); ++t) {
      float* row = result.error_signal.data() + (t * batch_size + index) * dim;
      std::fill(row, row + dim, 0.0f);
    }
    result.failures.push_back({index, tags[index], failed.error});
  }
}

void batch_progress::answer(pool_pointer self, pool_request& req) {
  auto& st = self->state;
  ++st.stats.batches;
  auto& of = std::get<command_items<get_loss_command>>(req.items);
  for (size_t b = 0; b < of.replies.size(); ++b)
    if (of.replies[b])
      result.loss[b] = to_float_loss(*of.replies[b]);
  // The jobs' slices share the output's storage: released first, so that
  // the caller holds it alone (and may hand it back for reuse).
  of.work.clear();
  if (!req.failures.empty()) {
    auto combined = combined_error(st.label + ": batch", tags, req.failures);
    if (!partial) {
      promise.deliver(std::move(combined));
      return;
    }
    logger().warn("{} (a partial batch: the others' results are returned)", render(combined));
    answer_failures_in_result(req.failures);
  }
  // A segment without a path (loss inf, error signal zero) is a result,
  // not a failure: counted, and named once per batch.
  double loss_sum = 0;
  int64_t frame_sum = 0;
  std::vector<size_t> skipped;
  for (size_t b = 0; b < lengths.size(); ++b) {
    if (req.failures.count(b) > 0)
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
                 st.label, lengths.size(), skipped.size(), req.failures.size(),
                 frame_sum > 0 ? loss_sum / static_cast<double>(frame_sum) : 0.0, ms);
  promise.deliver(std::move(result));
}

/// How an automata request of segments `tags` is answered: their merged
/// automata, or the batch's error (`combined_error`).
request_answer automata_answer(std::vector<std::string> tags,
                               caf::typed_response_promise<batch_automata> promise) {
  return {
      [tags = std::move(tags), promise](pool_pointer self, pool_request& req) mutable {
        auto& st = self->state;
        ++st.stats.automata;
        if (!req.failures.empty()) {
          promise.deliver(combined_error(st.label + ": automata", tags, req.failures));
          return;
        }
        std::vector<segment_fsa> automata;
        for (auto& fsa : std::get<command_items<export_fsa_command>>(req.items).replies)
          automata.push_back(std::move(*fsa));
        auto merged = merge_automata(automata);
        if (!merged)
          promise.deliver(with_context(st.label + ": automata", merged.error()));
        else
          promise.deliver(std::move(*merged));
      },
      [promise](const caf::error& err) mutable { promise.deliver(err); },
  };
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
  auto progress = std::make_shared<batch_progress>();
  // The origin first: making the promise takes the sender out of the message.
  auto origin = request_origin::current(self);
  progress->promise = self->make_response_promise<batch_result>();
  // Its items are made once the batch is checked; until then a stopping
  // pool or its caller can cancel it.
  auto req = std::make_shared<pool_request>(
      command_items<get_loss_command>{},
      request_answer{
          [progress](pool_pointer self, pool_request& req) { progress->answer(self, req); },
          [progress](const caf::error& err) { progress->promise.deliver(err); }});
  st.enroll(req, std::move(origin));
  if (b.time_limit.count() > 0)
    self->delayed_send(self, b.time_limit, time_limit_atom::value, req->id,
                       static_cast<int64_t>(b.time_limit.count()));
  // The batch is this request's own copy: it moves to the preparer and back.
  self->request(st.preparer, caf::infinite, prepare_atom::value, std::move(b))
      .then(
          [self, req, progress](batch& ready) {
            if (!self->state.in_progress(req->id))
              return; // the pool stopped meanwhile and failed it
            auto& result = progress->result;
            result.loss.assign(ready.tags.size(), 0.0f);
            result.error_signal = std::move(ready.reuse_error_signal);
            // Each segment's posteriors, and its rows of the output for its
            // error signal.
            std::vector<segment_job> jobs;
            for (size_t i = 0; i < ready.tags.size(); ++i) {
              auto rows = static_cast<size_t>(ready.seq_lengths[i]);
              jobs.push_back({ready.tags[i], segment_slice(ready.log_posteriors, i, rows),
                              segment_slice(result.error_signal, i, rows)});
            }
            req->items = command_items<get_loss_command>{std::move(jobs)};
            progress->tags = std::move(ready.tags);
            progress->lengths = std::move(ready.seq_lengths);
            progress->partial = ready.partial;
            start_request(self, req, request_shape::batch);
          },
          [self, req, progress](caf::error& err) {
            if (err == caf::sec::request_receiver_down)
              self->state.preparer = caf::actor{}; // the next batch gets a new one
            if (!self->state.in_progress(req->id))
              return;
            self->state.complete(req->id);
            progress->promise.deliver(with_context(self->state.label, err));
          });
  return progress->promise;
}

caf::result<batch_automata> compute_automata(pool_pointer self, std::vector<std::string>& tags) {
  auto& st = self->state;
  if (auto err = check_tags(tags))
    return with_context(st.label, err);
  std::vector<fsa_query> queries;
  for (const auto& tag : tags)
    queries.push_back({fsa_source::segment_name, tag});
  auto origin = request_origin::current(self); // before the promise, as above
  auto promise = self->make_response_promise<batch_automata>();
  auto req = std::make_shared<pool_request>(command_items<export_fsa_command>{std::move(queries)},
                                            automata_answer(std::move(tags), promise));
  st.enroll(req, std::move(origin));
  start_request(self, req, request_shape::batch);
  return promise;
}

} // namespace sprintrt::detail
