#include "engine_trainer.hpp"

#include <algorithm>
#include <chrono>
#include <functional>
#include <limits>
#include <utility>

#include <caf/actor_system.hpp>
#include <caf/response_promise.hpp>
#include <caf/stateful_actor.hpp>

namespace engine {

namespace {

/// How long the pool may take for a batch (`batch::time_limit`: the pool
/// cancels it then and answers `timeout`, stopping the work; CAF's own
/// request timeout would only end this actor's wait).
constexpr std::chrono::seconds batch_limit{60};

/// How long a scheduler message may take (the scheduler answers at once,
/// except `train`, which waits for the workers).
constexpr std::chrono::seconds reply_limit{120};

struct trainer_state {
  trainer_setup setup;
  caf::response_promise promise;
  std::vector<float> losses;
  /// Pool batches: the next to send and how many wait for replies.
  size_t next_batch = 0;
  size_t in_flight = 0;
  size_t answered = 0;
  /// The running request failed: nothing more is sent for it.
  bool failed = false;
  /// Sequence training: batches forwarded, batches trained.
  size_t forwarded = 0;
  size_t trained = 0;
};

using trainer_actor = caf::stateful_actor<trainer_state>;

/// Ends the running request with `err`; the replies still coming for it
/// are ignored.
void fail(trainer_actor* self, caf::error err) {
  if (self->state.failed)
    return;
  self->state.failed = true;
  self->state.promise.deliver(std::move(err));
}

/// The position of batch `index`'s first segment among all batches'
/// segments: where its losses go, and its first sequence index.
uint64_t first_sequence(const trainer_state& st, size_t index) {
  uint64_t first = 0;
  for (size_t i = 0; i < index; ++i)
    first += st.setup.batches[i].tags.size();
  return first;
}

// --- Pool batches, several in flight.

void send_batches(trainer_actor* self) {
  auto& st = self->state;
  while (!st.failed && st.in_flight < st.setup.max_in_flight &&
         st.next_batch < st.setup.batches.size()) {
    const size_t index = st.next_batch++;
    ++st.in_flight;
    auto limited = st.setup.batches[index];
    limited.time_limit = batch_limit;
    self->request(st.setup.pool, caf::infinite, sprintrt::compute_atom::value, std::move(limited))
        .then(
            [self, index](sprintrt::batch_result& result) {
              auto& st = self->state;
              if (st.failed)
                return;
              std::copy(result.loss.begin(), result.loss.end(),
                        st.losses.begin() + first_sequence(st, index));
              --st.in_flight;
              if (++st.answered == st.setup.batches.size())
                st.promise.deliver(st.losses);
              else
                send_batches(self);
            },
            [self](caf::error& err) { fail(self, std::move(err)); });
  }
}

// --- Sequence training through the scheduler.

/// The layout of batch `index`: each column one whole sequence.
sprintrt::seqtrain_batch layout_of(const trainer_state& st, size_t index) {
  const auto& b = st.setup.batches[index];
  sprintrt::seqtrain_batch layout;
  layout.num_frames = b.log_posteriors.dim(0);
  layout.num_slices = b.tags.size();
  for (size_t column = 0; column < b.tags.size(); ++column)
    layout.parts.push_back({first_sequence(st, index) + column, column, 0, 0,
                            static_cast<uint64_t>(b.seq_lengths[column])});
  return layout;
}

/// Forwards batch `forwarded`, then calls `next`.
void forward_one(trainer_actor* self, std::function<void()> next) {
  auto& st = self->state;
  const size_t index = st.forwarded++;
  const auto& b = st.setup.batches[index];
  sprintrt::forward_sequences sequences;
  for (size_t column = 0; column < b.tags.size(); ++column)
    sequences.seq_indices.push_back(first_sequence(st, index) + column);
  sequences.data = b;
  self->request(st.setup.scheduler, reply_limit, sprintrt::forward_atom::value,
                std::move(sequences))
      .then([next](uint64_t) { next(); }, [self](caf::error& err) { fail(self, std::move(err)); });
}

/// Forwards batches ahead while the scheduler has space, then calls `next`.
void look_ahead(trainer_actor* self, std::function<void()> next) {
  auto& st = self->state;
  if (st.forwarded == st.setup.batches.size())
    return next();
  const uint64_t seqs = st.setup.batches[st.forwarded].tags.size();
  self->request(st.setup.scheduler, reply_limit, sprintrt::have_space_atom::value, seqs)
      .then(
          [self, next](bool space) {
            if (space)
              forward_one(self, [self, next] { look_ahead(self, next); });
            else
              next();
          },
          [self](caf::error& err) { fail(self, std::move(err)); });
}

void train_next(trainer_actor* self) {
  auto& st = self->state;
  if (st.trained == st.setup.batches.size()) {
    self->request(st.setup.scheduler, reply_limit, sprintrt::epoch_finish_atom::value)
        .then(
            [self](sprintrt::seqtrain_stats&) { self->state.promise.deliver(self->state.losses); },
            [self](caf::error& err) { fail(self, std::move(err)); });
    return;
  }
  // The batch to train must have been forwarded.
  if (st.forwarded == st.trained)
    return forward_one(self, [self] { train_next(self); });
  self->request(st.setup.scheduler, reply_limit, sprintrt::train_atom::value,
                std::vector<sprintrt::seqtrain_batch>{layout_of(st, st.trained)})
      .then(
          [self](sprintrt::seqtrain_result& result) {
            auto& st = self->state;
            float sum = 0;
            for (float loss : result.loss)
              sum += loss;
            st.losses.push_back(sum);
            ++st.trained;
            // The reply dropped what came before: forward ahead now, so that
            // the workers compute while this batch would train.
            look_ahead(self, [self] { train_next(self); });
          },
          [self](caf::error& err) { fail(self, std::move(err)); });
}

caf::behavior trainer(trainer_actor* self, trainer_setup setup) {
  self->state.setup = std::move(setup);
  return {
      [self](full_sum_atom) {
        auto& st = self->state;
        st.promise = self->make_response_promise();
        size_t segments = 0;
        for (const auto& b : st.setup.batches)
          segments += b.tags.size();
        st.losses.assign(segments, std::numeric_limits<float>::quiet_NaN());
        st.next_batch = st.in_flight = st.answered = 0;
        st.failed = false;
        send_batches(self);
        return st.promise;
      },
      [self](seqtrain_atom) {
        auto& st = self->state;
        st.promise = self->make_response_promise();
        st.losses.clear();
        st.forwarded = st.trained = 0;
        st.failed = false;
        self->request(st.setup.scheduler, reply_limit, sprintrt::epoch_start_atom::value,
                      uint64_t{1})
            .then([self](bool) { look_ahead(self, [self] { train_next(self); }); },
                  [self](caf::error& err) { fail(self, std::move(err)); });
        return st.promise;
      },
  };
}

} // namespace

caf::actor spawn_trainer(caf::actor_system& system, trainer_setup setup) {
  return system.spawn(trainer, std::move(setup));
}

} // namespace engine
