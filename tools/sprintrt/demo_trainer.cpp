#include "tools/sprintrt/demo_trainer.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace sprintrt::cli {

demo_trainer::demo_trainer(demo_model& model, const std::vector<demo_segment>& utterances,
                           seqtrain_client& scheduler, size_t batch_size, float learning_rate,
                           uint64_t seed, stop_token stop)
    : model_(model), utterances_(utterances), scheduler_(&scheduler),
      batch_size_(std::max<size_t>(batch_size, 1)), learning_rate_(learning_rate), order_gen_(seed),
      order_(utterances.size()), stop_(std::move(stop)) {
  std::iota(order_.begin(), order_.end(), size_t{0});
}

int64_t demo_trainer::since_start(clock::time_point t) const {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t - epoch_start_).count();
}

batch demo_trainer::model_batch(const batch_members& members,
                                std::vector<demo_model::activations>* passes) const {
  size_t frames = 0;
  for (auto u : members.utterances)
    frames = std::max(frames, static_cast<size_t>(utterances_[u].features.rows()));
  batch b;
  b.log_posteriors = tensor::zeros({frames, members.utterances.size(), model_.classes()});
  for (size_t j = 0; j < members.utterances.size(); ++j) {
    const auto& utt = utterances_[members.utterances[j]];
    auto length = static_cast<size_t>(utt.features.rows());
    auto pass = model_.forward(utt.features, segment_slice(b.log_posteriors, j, length));
    if (passes)
      passes->push_back(std::move(pass));
    b.seq_lengths.push_back(static_cast<int64_t>(length));
    b.tags.push_back(utt.name);
  }
  return b;
}

caf::error demo_trainer::forward(const batch_members& members) {
  auto start = clock::now();
  forward_sequences seqs;
  seqs.data = model_batch(members, nullptr);
  for (size_t j = 0; j < members.utterances.size(); ++j)
    seqs.seq_indices.push_back(members.first_seq_idx + j);
  intervals_->push_back({trainer_activity::forward, since_start(start), since_start(clock::now())});
  return scheduler_->forward(std::move(seqs));
}

caf::expected<seqtrain_result> demo_trainer::request(const batch_members& members,
                                                     demo_epoch_result& result) {
  // Whole sequences, one per slice, from row 0.
  seqtrain_batch layout;
  layout.num_slices = members.utterances.size();
  for (size_t j = 0; j < members.utterances.size(); ++j) {
    auto length = static_cast<uint64_t>(utterances_[members.utterances[j]].features.rows());
    layout.num_frames = std::max(layout.num_frames, length);
    layout.parts.push_back({members.first_seq_idx + j, j, 0, 0, length});
  }
  auto wait_start = clock::now();
  auto reply = scheduler_->train({std::move(layout)}, stop_);
  result.wait_ns +=
      std::chrono::duration_cast<std::chrono::nanoseconds>(clock::now() - wait_start).count();
  return reply;
}

caf::error demo_trainer::learn(const batch_members& members, const seqtrain_result& reply,
                               demo_epoch_result& result) {
  auto start = clock::now();
  // The current model's log-posteriors of this batch (see the file comment).
  std::vector<demo_model::activations> passes;
  auto now = model_batch(members, &passes);
  auto error_signal = seqtrain_error_signal(now.log_posteriors, reply.hat_y, now.seq_lengths);
  if (!error_signal)
    return std::move(error_signal.error());
  size_t frames = 0;
  for (size_t j = 0; j < members.utterances.size(); ++j) {
    if (std::isinf(reply.loss[j])) {
      ++result.skipped; // Sprint skipped it: no path, nothing to learn from
      continue;
    }
    auto length = static_cast<size_t>(now.seq_lengths[j]);
    model_.accumulate(passes[j], segment_slice(*error_signal, j, length));
    result.loss_sum += reply.loss[j];
    frames += length;
    ++result.sequences;
  }
  model_.step(learning_rate_, frames);
  result.frames += frames;
  intervals_->push_back({trainer_activity::train, since_start(start), since_start(clock::now())});
  return {};
}

caf::expected<demo_epoch_result>
demo_trainer::run_epoch(uint64_t epoch, const std::function<void(size_t)>& progress) {
  std::shuffle(order_.begin(), order_.end(), order_gen_);
  std::vector<batch_members> batches;
  for (size_t first = 0; first < order_.size(); first += batch_size_) {
    auto last = std::min(order_.size(), first + batch_size_);
    batches.push_back({{order_.begin() + static_cast<ptrdiff_t>(first),
                        order_.begin() + static_cast<ptrdiff_t>(last)},
                       first});
  }
  demo_epoch_result result;
  intervals_ = &result.trainer;
  epoch_start_ = clock::now();
  if (auto err = scheduler_->start_epoch(epoch))
    return err;
  size_t next = 0; // the next batch to forward
  for (size_t i = 0; i < batches.size(); ++i) {
    // A stop is seen while a train request waits, and here: a batch whose
    // reply was there at once would not notice it.
    if (stop_.stop_requested())
      return make_error(errc::cancelled, "epoch " + std::to_string(epoch) + ": stopped");
    if (next == i) // the batch to train must be there
      if (auto err = forward(batches[next++]))
        return err;
    auto reply = request(batches[i], result);
    if (!reply)
      return std::move(reply.error());
    // The reply dropped everything before batch i: look ahead now, so that
    // the workers compute upcoming batches while this one trains.
    while (next < batches.size()) {
      auto space = scheduler_->have_space(batches[next].utterances.size());
      if (!space)
        return std::move(space.error());
      if (!*space)
        break;
      if (auto err = forward(batches[next++]))
        return err;
    }
    if (auto err = learn(batches[i], *reply, result))
      return err;
    if (progress)
      progress(std::min(order_.size(), (i + 1) * batch_size_));
  }
  auto stats = scheduler_->finish_epoch();
  if (!stats)
    return std::move(stats.error());
  result.elapsed_ns = since_start(clock::now());
  result.stats = std::move(*stats);
  intervals_ = nullptr;
  return result;
}

} // namespace sprintrt::cli
