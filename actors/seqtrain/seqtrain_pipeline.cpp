#include "actors/seqtrain/seqtrain_pipeline.hpp"

#include <algorithm>
#include <cmath>

#include "actors/pool/batch_checks.hpp"

namespace sprintrt::detail {

namespace {

caf::error invalid_request(std::string what) {
  return make_error(errc::invalid_request, std::move(what));
}

std::string sequence_name(uint64_t seq_idx, const std::string& tag) {
  return "sequence " + std::to_string(seq_idx) + " ('" + tag + "')";
}

/// hat_y = exp(log_posteriors) - error_signal, row by row, in the error
/// signal's place: the occupancy the trainer's error signal is formed from.
/// A skipped sequence has a zero error signal, so its hat_y is the
/// posteriors themselves.
void form_hat_y(const matrix_slice& log_posteriors, const matrix_slice& error_signal) {
  for (size_t r = 0; r < log_posteriors.rows; ++r) {
    const float* lp = log_posteriors.row(r);
    float* out = error_signal.row(r);
    for (size_t c = 0; c < log_posteriors.cols; ++c)
      out[c] = std::exp(lp[c]) - out[c];
  }
}

} // namespace

caf::error seqtrain_pipeline::start_epoch(uint64_t epoch) {
  if (running_)
    return invalid_request("epoch " + std::to_string(epoch) + " cannot start: epoch " +
                           std::to_string(epoch_) + " is still running");
  drop_all();
  running_ = true;
  epoch_ = epoch;
  range_start_ = 0;
  forwarded_any_ = false;
  last_forwarded_ = 0;
  return {};
}

caf::error seqtrain_pipeline::finish_epoch() {
  if (!running_)
    return invalid_request("no epoch is running");
  running_ = false;
  size_t queued = forward_queue();
  size_t computing = in_flight();
  if (queued == 0 && computing == 0) {
    drop_all();
    return {};
  }
  std::string left;
  for (size_t i = loss_data_; i < entries_.size(); ++i)
    left += (left.empty() ? "" : ", ") + std::to_string(entries_[i]->seq_idx);
  drop_all();
  return invalid_request("epoch " + std::to_string(epoch_) + " finished with " +
                         std::to_string(queued) + " forwarded sequence(s) not sent and " +
                         std::to_string(computing) +
                         " computation(s) unfinished, now discarded (sequences " + left + ")");
}

bool seqtrain_pipeline::have_space(uint64_t num_seqs) const noexcept {
  // Written so that it cannot overflow for any num_seqs.
  return entries_.size() < delay_ && num_seqs < delay_ - entries_.size();
}

caf::expected<size_t> seqtrain_pipeline::forward(forward_sequences& seqs) {
  if (!running_)
    return invalid_request("forward: no epoch is running");
  const auto& indices = seqs.seq_indices;
  auto& data = seqs.data;
  if (indices.size() != data.tags.size())
    return make_error(errc::invalid_input, "forward: " + std::to_string(indices.size()) +
                                               " sequence indices for " +
                                               std::to_string(data.tags.size()) + " tags");
  batch_check_rules rules;
  rules.column_name = [&](size_t i) { return sequence_name(indices[i], data.tags[i]); };
  if (auto err = check_batch(data, rules))
    return with_context("forward", err);
  for (size_t i = 0; i < indices.size(); ++i) {
    bool after_previous =
        i > 0 ? indices[i] > indices[i - 1] : !forwarded_any_ || indices[i] > last_forwarded_;
    if (!after_previous) {
      auto previous = i > 0 ? indices[i - 1] : last_forwarded_;
      return make_error(errc::invalid_input,
                        "forward: " + sequence_name(indices[i], data.tags[i]) +
                            " does not come after sequence " + std::to_string(previous) +
                            " (indices must increase strictly within an epoch)");
    }
  }
  const size_t dim = data.log_posteriors.dim(2);
  for (size_t i = 0; i < indices.size(); ++i) {
    auto entry = std::make_shared<pipeline_entry>();
    auto frames = static_cast<size_t>(data.seq_lengths[i]);
    entry->seq_idx = indices[i];
    entry->tag = std::move(data.tags[i]);
    entry->log_posteriors = segment_slice(data.log_posteriors, i, frames);
    entry->hat_y = matrix_slice::dense(frames, dim);
    entries_.push_back(std::move(entry));
  }
  forwarded_any_ = true;
  last_forwarded_ = indices.back();
  return indices.size();
}

entry_pointer seqtrain_pipeline::take_next() {
  if (queued_from_ == entries_.size())
    return nullptr;
  auto& entry = entries_[queued_from_++];
  entry->where = pipeline_entry::stage::computing;
  return entry;
}

void seqtrain_pipeline::complete(const entry_pointer& entry, caf::expected<double> loss) {
  if (entry->dropped)
    return;
  entry->where = pipeline_entry::stage::done;
  if (loss) {
    entry->loss = *loss;
    form_hat_y(entry->log_posteriors, entry->hat_y);
  } else {
    entry->failure = std::move(loss.error());
  }
  // The forwarded batch's storage is freed once all its sequences are done.
  entry->log_posteriors = {};
  while (loss_data_ < queued_from_ && entries_[loss_data_]->where == pipeline_entry::stage::done)
    ++loss_data_;
}

caf::error seqtrain_pipeline::check_range_start(uint64_t start_seq) const {
  if (start_seq < range_start_)
    return invalid_request("train: the sequence range starts at " + std::to_string(start_seq) +
                           ", before the previous start " + std::to_string(range_start_) +
                           " (it must never move backwards)");
  return {};
}

caf::error seqtrain_pipeline::set_range_start(uint64_t start_seq) {
  if (auto err = check_range_start(start_seq))
    return err;
  range_start_ = start_seq;
  while (!entries_.empty() && entries_.front()->seq_idx < start_seq) {
    entries_.front()->dropped = true;
    entries_.pop_front();
    // Every index into entries_ moves down by one.
    loss_data_ = loss_data_ > 0 ? loss_data_ - 1 : 0;
    queued_from_ = queued_from_ > 0 ? queued_from_ - 1 : 0;
  }
  // A dropped entry still computing may have held back finished ones.
  while (loss_data_ < queued_from_ && entries_[loss_data_]->where == pipeline_entry::stage::done)
    ++loss_data_;
  return {};
}

const pipeline_entry* seqtrain_pipeline::loss_data(uint64_t seq_idx) const {
  auto end = entries_.begin() + static_cast<ptrdiff_t>(loss_data_);
  auto i = std::lower_bound(entries_.begin(), end, seq_idx,
                            [](const entry_pointer& e, uint64_t idx) { return e->seq_idx < idx; });
  return i != end && (*i)->seq_idx == seq_idx ? i->get() : nullptr;
}

const pipeline_entry* seqtrain_pipeline::kept(uint64_t seq_idx) const {
  auto i = std::lower_bound(entries_.begin(), entries_.end(), seq_idx,
                            [](const entry_pointer& e, uint64_t idx) { return e->seq_idx < idx; });
  return i != entries_.end() && (*i)->seq_idx == seq_idx ? i->get() : nullptr;
}

void seqtrain_pipeline::drop_all() {
  for (auto& entry : entries_)
    entry->dropped = true;
  entries_.clear();
  loss_data_ = 0;
  queued_from_ = 0;
}

} // namespace sprintrt::detail
