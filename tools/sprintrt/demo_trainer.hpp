#pragma once

/// @file
/// The demo's trainer loop: sequence training through the sequence-training
/// scheduler, as the loop in `sprintrt/seqtrain_client.hpp` describes.
///
/// Per epoch the training utterances are shuffled (seeded) into batches.
/// For batch i the trainer forwards it if it is not there yet, asks for its
/// loss and hat_y and waits for them (the reply drops batch i-1 from the
/// scheduler). Then it runs its current model over the batches ahead and
/// forwards their log-posteriors while the scheduler's `have_space` admits
/// them, so that the workers compute Sprint losses for upcoming batches while
/// the trainer trains on the current one. Last it runs the current model
/// over batch i again, takes the error signal exp(log posteriors) - hat_y,
/// backpropagates it and takes an SGD step.
///
/// Why run the model over batch i again instead of using the forwarded
/// log-posteriors: those may come from a model up to a few updates older
/// (the bounded delay the pipeline buys), and backpropagation needs the
/// hidden activations of the model being updated anyway. Recomputing gives
/// the exact gradient, at the current weights, of the cross-entropy against
/// hat_y, the soft alignment Sprint computed from the slightly older model,
/// which is what RETURNN's trainer does with the scheduler's hat_y too. The
/// loss reported is Sprint's, i.e. of the model at forwarding time.
///
/// Nothing here depends on timing: which batches are forwarded when follows
/// from `have_space`, which depends only on counts, so that losses are
/// bit-identical for any number and kind of workers.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <random>
#include <vector>

#include "sprintrt/error.hpp"
#include "sprintrt/seqtrain_client.hpp"
#include "tools/sprintrt/demo_model.hpp"
#include "tools/sprintrt/demo_report.hpp"
#include "tools/sprintrt/demo_task.hpp"

namespace sprintrt::cli {

/// What one epoch of training gave.
struct demo_epoch_result {
  /// Sprint's losses of the trained sequences, summed; and their frames.
  double loss_sum = 0;
  size_t frames = 0;
  /// Sequences trained on, and sequences Sprint skipped (not trained on).
  size_t sequences = 0;
  size_t skipped = 0;
  /// From sending the epoch start until the epoch's statistics came back.
  int64_t elapsed_ns = 0;
  /// Time spent waiting on train replies (trainer side).
  int64_t wait_ns = 0;
  /// The trainer's busy periods (since sending the epoch start).
  std::vector<trainer_interval> trainer;
  /// The scheduler's statistics of the epoch.
  seqtrain_stats stats;
};

/// Trains a model on a set of utterances through a scheduler.
class demo_trainer {
public:
  /// Trains `model` on `utterances` through `scheduler`, batches of
  /// `batch_size` in an order drawn from `seed`. All references must
  /// outlive the trainer. A stop requested through `stop` ends the wait for
  /// a train reply with `cancelled`.
  demo_trainer(demo_model& model, const std::vector<demo_segment>& utterances,
               seqtrain_client& scheduler, size_t batch_size, float learning_rate, uint64_t seed,
               stop_token stop = {});

  /// From the next epoch on, trains through `scheduler` (which must outlive
  /// the trainer) with step size `learning_rate`: the demo's switch from CTC
  /// to a sequence-discriminative criterion. The batch order continues as
  /// before.
  void use_scheduler(seqtrain_client& scheduler, float learning_rate) {
    scheduler_ = &scheduler;
    learning_rate_ = learning_rate;
  }

  /// Runs epoch `epoch` (one pass over the utterances), calling
  /// `progress(done)` after each batch. Errors are the scheduler's.
  caf::expected<demo_epoch_result> run_epoch(uint64_t epoch,
                                             const std::function<void(size_t)>& progress);

private:
  using clock = std::chrono::steady_clock;

  // One batch of the epoch: utterances and their sequence indices.
  struct batch_members {
    std::vector<size_t> utterances;
    uint64_t first_seq_idx = 0;
  };

  // Runs the current model over `members` into a [T, B, D] batch; keeps the
  // activations in `passes` if given.
  batch model_batch(const batch_members& members,
                    std::vector<demo_model::activations>* passes) const;

  // Forwards `members` with the current model.
  caf::error forward(const batch_members& members);

  // Asks for the loss and hat_y of `members` and waits for them.
  caf::expected<seqtrain_result> request(const batch_members& members, demo_epoch_result& result);

  // Trains on `members` from their `reply`: runs the model again,
  // backpropagates the error signal, updates.
  caf::error learn(const batch_members& members, const seqtrain_result& reply,
                   demo_epoch_result& result);

  // Nanoseconds since the epoch start was sent.
  int64_t since_start(clock::time_point t) const;

  demo_model& model_;
  const std::vector<demo_segment>& utterances_;
  seqtrain_client* scheduler_;
  size_t batch_size_;
  float learning_rate_;
  std::mt19937_64 order_gen_;
  std::vector<size_t> order_;
  clock::time_point epoch_start_;
  std::vector<trainer_interval>* intervals_ = nullptr;
  stop_token stop_;
};

} // namespace sprintrt::cli
