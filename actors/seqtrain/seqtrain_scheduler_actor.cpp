/// @file
/// The sequence-training scheduler actor: the pipeline's queues
/// (`seqtrain_pipeline`) driven by messages. Forwarded sequences go to the
/// pool as single-segment requests, at most `max_in_flight` at once, each in
/// a lane (a slot of the in-flight limit, i.e. a worker); a train request
/// waits as a response promise until its sequences have loss data.

#include "actors/seqtrain/seqtrain_scheduler_actor.hpp"
#include "sprintrt/logging.hpp"

#include <chrono>
#include <deque>
#include <optional>

#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <spdlog/spdlog.h>

#include "actors/seqtrain/seqtrain_layout.hpp"
#include "actors/seqtrain/seqtrain_pipeline.hpp"
#include "actors/worker/worker_requests.hpp"

namespace sprintrt::detail {

namespace {

using clock = std::chrono::steady_clock;
using detail::entry_pointer;
using detail::pipeline_entry;

int64_t nanoseconds(clock::duration d) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(d).count();
}

/// A train request waiting for loss data.
struct waiting_train {
  std::vector<seqtrain_batch> batches;
  detail::train_plan plan;
  clock::time_point arrived;
  caf::typed_response_promise<seqtrain_result> promise;
  /// Whose request it is (what a `(cancel, id)` names).
  request_origin origin;
};

struct scheduler_state {
  static inline const char* name = "seqtrain_scheduler";

  worker_pool_actor pool;
  seqtrain_options options;
  detail::seqtrain_pipeline pipeline{0};
  /// Lane l is busy while a computation it started has not returned (also
  /// one whose entry was dropped meanwhile: its worker is still busy).
  std::vector<bool> lane_busy;
  std::optional<waiting_train> train;
  /// The last `answered_memory` train requests answered (with a result or an
  /// error), oldest first: what tells a cancel that came too late
  /// (`cancel_outcome::already_answered`) from one naming no train request.
  std::deque<request_origin> answered;
  clock::time_point epoch_started = clock::now();
  clock::time_point epoch_ended = clock::now();
  seqtrain_stats counters;

  /// A waiting train request must not be left unanswered.
  ~scheduler_state() {
    if (train)
      train->promise.deliver(make_error(errc::cancelled, "the scheduler stopped"));
  }
};

using scheduler_pointer = seqtrain_scheduler_actor::stateful_pointer<scheduler_state>;

/// How many answered train requests a scheduler remembers for late cancels:
/// one train request waits at a time, so this covers a trainer's cancel that
/// crossed its reply, even with several trainers taking turns.
constexpr size_t answered_memory = 16;

/// Remembers that the train request of `origin` was answered.
void remember_answered(scheduler_state& st, request_origin origin) {
  st.answered.push_back(std::move(origin));
  if (st.answered.size() > answered_memory)
    st.answered.pop_front();
}

/// What `(cancel, id)` from the sender of the current message does: cancels
/// its waiting train request, or says why there is none.
cancel_outcome cancel_train(scheduler_pointer self, uint64_t id) {
  // Only a train request waits. Its sequences stay forwarded and keep
  // computing: a later train of the same range is answered from them.
  auto& st = self->state;
  request_origin origin{caf::actor_cast<caf::actor_addr>(self->current_sender()), id};
  if (st.train && st.train->origin == origin) {
    st.train->promise.deliver(make_error(errc::cancelled, "train: cancelled by its caller"));
    st.train.reset();
    remember_answered(st, std::move(origin));
    return cancel_outcome::cancelled;
  }
  for (const auto& answered : st.answered)
    if (answered == origin)
      return cancel_outcome::already_answered;
  return cancel_outcome::unknown;
}

/// The current counters and queue depths.
seqtrain_stats current_stats(scheduler_pointer self) {
  auto& st = self->state;
  seqtrain_stats stats = st.counters;
  stats.epoch = st.pipeline.epoch();
  stats.forward_queue = st.pipeline.forward_queue();
  stats.in_flight = st.pipeline.in_flight();
  stats.loss_data = st.pipeline.loss_data();
  auto end = st.pipeline.running() ? clock::now() : st.epoch_ended;
  stats.elapsed_ns = nanoseconds(end - st.epoch_started);
  stats.seqs_per_second = stats.elapsed_ns > 0 ? static_cast<double>(stats.computed) * 1e9 /
                                                     static_cast<double>(stats.elapsed_ns)
                                               : 0.0;
  return stats;
}

/// Answers the waiting train request if every sequence it needs has loss
/// data: with the layout, or with the first failure among them.
void try_answer_train(scheduler_pointer self) {
  auto& st = self->state;
  if (!st.train)
    return;
  auto& train = *st.train;
  for (auto seq : train.plan.sequences)
    if (st.pipeline.loss_data(seq) == nullptr)
      return;
  st.counters.trainer_wait_ns += nanoseconds(clock::now() - train.arrived);
  ++st.counters.train_requests;
  caf::error failure;
  for (auto seq : train.plan.sequences)
    if (const auto* entry = st.pipeline.loss_data(seq); entry->failure) {
      failure = with_context("train: sequence " + std::to_string(seq) + " ('" + entry->tag +
                                 "') could not be computed",
                             entry->failure);
      break;
    }
  remember_answered(st, train.origin);
  if (failure)
    train.promise.deliver(failure);
  else
    train.promise.deliver(
        detail::lay_out_train_result(train.batches, train.plan, [&](uint64_t seq) {
          const auto* entry = st.pipeline.loss_data(seq);
          return detail::sequence_outcome{entry->loss, &entry->hat_y};
        }));
  st.train.reset();
}

void dispatch(scheduler_pointer self);

/// Records the end of `entry`'s computation in `lane` and moves on.
void computed(scheduler_pointer self, const entry_pointer& entry, uint32_t lane,
              clock::time_point started, caf::expected<double> loss) {
  auto& st = self->state;
  st.lane_busy[lane] = false;
  if (!entry->dropped) {
    auto now = clock::now();
    st.counters.worker_busy_ns += nanoseconds(now - started);
    if (st.options.record_timeline)
      st.counters.timeline.push_back({entry->seq_idx, lane, nanoseconds(started - st.epoch_started),
                                      nanoseconds(now - st.epoch_started)});
    if (!loss) {
      ++st.counters.failed;
      logger().warn("seqtrain: sequence {} ('{}') failed: {}", entry->seq_idx, entry->tag,
                    render(loss.error()));
    } else {
      ++st.counters.computed;
      if (*loss == INFINITY) {
        ++st.counters.skipped;
        logger().warn("seqtrain: sequence {} ('{}') without a path (loss inf, error signal zero)",
                      entry->seq_idx, entry->tag);
      }
    }
    st.pipeline.complete(entry, std::move(loss));
  }
  dispatch(self);
  try_answer_train(self);
}

/// Sends queued sequences to the pool while lanes are free.
void dispatch(scheduler_pointer self) {
  auto& st = self->state;
  for (uint32_t lane = 0; lane < st.lane_busy.size(); ++lane) {
    if (st.lane_busy[lane])
      continue;
    auto entry = st.pipeline.take_next();
    if (!entry)
      return;
    st.lane_busy[lane] = true;
    auto started = clock::now();
    segment_job job{entry->tag, entry->log_posteriors, entry->hat_y};
    self->request(st.pool, caf::infinite, compute_atom::value, std::move(job))
        .then([self, entry, lane,
               started](double loss) { computed(self, entry, lane, started, loss); },
              [self, entry, lane, started](caf::error& err) {
                computed(self, entry, lane, started, std::move(err));
              });
  }
}

caf::result<seqtrain_result> start_train(scheduler_pointer self,
                                         std::vector<seqtrain_batch>& batches) {
  auto& st = self->state;
  auto& pipeline = st.pipeline;
  if (!pipeline.running())
    return make_error(errc::invalid_request, "train: no epoch is running");
  if (st.train)
    return make_error(errc::invalid_request,
                      "train: a train request is already waiting (send one at a time)");
  auto plan = detail::plan_train(batches);
  if (!plan)
    return std::move(plan.error());
  if (auto err = pipeline.check_range_start(plan->start_seq))
    return err;
  std::string range =
      "sequences [" + std::to_string(plan->start_seq) + ", " + std::to_string(plan->end_seq) + ")";
  if (plan->sequences.size() >= pipeline.forward_seq_delay())
    return make_error(errc::invalid_request,
                      "train: " + range + " hold " + std::to_string(plan->sequences.size()) +
                          " sequences, but the forward delay " +
                          std::to_string(pipeline.forward_seq_delay()) + " admits at most " +
                          std::to_string(pipeline.forward_seq_delay() == 0
                                             ? 0
                                             : pipeline.forward_seq_delay() - 1) +
                          " at once: this request could never be answered");
  for (auto seq : plan->sequences)
    if (pipeline.kept(seq) == nullptr)
      return make_error(errc::invalid_request,
                        "train: sequence " + std::to_string(seq) + " of " + range +
                            (pipeline.forwarded_any() && seq <= pipeline.last_forwarded()
                                 ? " was not forwarded in this epoch, or was dropped"
                                 : " has not been forwarded yet (forward a batch before "
                                   "training on it)"));
  auto shape_of = [&](uint64_t seq) {
    const auto& hat_y = pipeline.kept(seq)->hat_y;
    return detail::sequence_shape{hat_y.rows, hat_y.cols};
  };
  if (auto err = detail::check_parts(batches, *plan, shape_of))
    return err;
  pipeline.set_range_start(plan->start_seq); // checked above
  auto origin = request_origin::current(self);
  auto promise = self->make_response_promise<seqtrain_result>();
  st.train =
      waiting_train{std::move(batches), std::move(*plan), clock::now(), promise, std::move(origin)};
  try_answer_train(self);
  return promise;
}

seqtrain_scheduler_actor::behavior_type
scheduler_behavior(scheduler_pointer self, worker_pool_actor pool, seqtrain_options options) {
  auto& st = self->state;
  st.pool = std::move(pool);
  st.options = options;
  st.pipeline = detail::seqtrain_pipeline{options.forward_seq_delay};
  if (options.max_in_flight > 0) {
    st.lane_busy.assign(options.max_in_flight, false);
  } else {
    // One lane per worker the pool can have. Until the pool answered there
    // are no lanes: forwarded sequences wait.
    self->request(st.pool, caf::infinite, stats_atom::value)
        .then(
            [self](pool_stats& stats) {
              self->state.lane_busy.assign(std::max<uint64_t>(stats.capacity, 1), false);
              dispatch(self);
            },
            [self](caf::error& err) { self->quit(err); });
  }
  // Bound to its pool: when the pool ends (e.g. at the runtime's shutdown),
  // so does the scheduler, failing a waiting train request.
  self->monitor(st.pool);
  self->set_down_handler([self](caf::down_msg& msg) { self->quit(msg.reason); });
  return {
      [self](epoch_start_atom, uint64_t epoch) -> caf::result<bool> {
        auto& st = self->state;
        if (auto err = st.pipeline.start_epoch(epoch))
          return err;
        st.counters = {};
        st.epoch_started = clock::now();
        return true;
      },
      [self](epoch_finish_atom) -> caf::result<seqtrain_stats> {
        auto& st = self->state;
        if (st.train)
          return make_error(errc::invalid_request,
                            "epoch " + std::to_string(st.pipeline.epoch()) +
                                " cannot finish while a train request waits");
        bool was_running = st.pipeline.running();
        auto err = st.pipeline.finish_epoch();
        // The epoch ended (even with leftovers), unless none was running.
        if (was_running)
          st.epoch_ended = clock::now();
        if (err)
          return err;
        return current_stats(self);
      },
      [self](have_space_atom, uint64_t num_seqs) {
        return self->state.pipeline.have_space(num_seqs);
      },
      [self](forward_atom, forward_sequences& seqs) -> caf::result<uint64_t> {
        auto queued = self->state.pipeline.forward(seqs);
        if (!queued)
          return std::move(queued.error());
        self->state.counters.forwarded += *queued;
        dispatch(self);
        return static_cast<uint64_t>(*queued);
      },
      [self](train_atom, std::vector<seqtrain_batch>& batches) {
        auto result = start_train(self, batches);
        // Refused at once: answered as well. One that waits is remembered
        // when its answer is delivered.
        if (result.flag == caf::rt_error)
          remember_answered(self->state, request_origin::current(self));
        return result;
      },
      [self](stats_atom) { return current_stats(self); },
      [self](cancel_atom, uint64_t id) { return cancel_train(self, id); },
  };
}

} // namespace

seqtrain_scheduler_actor spawn_seqtrain_scheduler(caf::actor_system& system, worker_pool_actor pool,
                                                  seqtrain_options options) {
  return system.spawn(scheduler_behavior, std::move(pool), options);
}

} // namespace sprintrt::detail
