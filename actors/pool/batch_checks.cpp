#include "actors/pool/batch_checks.hpp"

#include <cmath>

namespace sprintrt::detail {

namespace {

caf::error invalid(std::string what) {
  return make_error(errc::invalid_input, "batch: " + std::move(what));
}

std::string segment_name(const batch& b, size_t i) {
  return "segment " + std::to_string(i) + " ('" + b.tags[i] + "')";
}

} // namespace

std::string batch_major_hint(size_t count, size_t frames, size_t batch_size) {
  if (count != frames || count == batch_size)
    return "";
  return "; the first axis of log_posteriors, T = " + std::to_string(frames) +
         ", matches instead: did you pass a batch-major (B, T, D) array? [T, B, D] "
         "(time-major) is due (swap its axes 0 and 1)";
}

caf::error check_tags(const std::vector<std::string>& tags) {
  if (tags.empty())
    return invalid("no tags");
  for (size_t i = 0; i < tags.size(); ++i)
    if (tags[i].empty())
      return invalid("tag " + std::to_string(i) + " is empty");
  return {};
}

caf::error check_batch(const batch& b, const batch_check_rules& rules) {
  auto name = [&](size_t i) {
    return rules.column_name ? rules.column_name(i) : segment_name(b, i);
  };
  const auto& lp = b.log_posteriors;
  if (lp.rank() != 3)
    return invalid("log_posteriors must be [T, B, D], got shape " + lp.shape_string());
  size_t frames = lp.dim(0);
  size_t batch_size = lp.dim(1);
  size_t dim = lp.dim(2);
  if (frames == 0 || batch_size == 0 || dim == 0)
    return invalid("log_posteriors shape " + lp.shape_string() + " has an empty dimension");
  if (b.seq_lengths.size() != batch_size)
    return invalid("seq_lengths has " + std::to_string(b.seq_lengths.size()) +
                   " entries, log_posteriors has B = " + std::to_string(batch_size) +
                   batch_major_hint(b.seq_lengths.size(), frames, batch_size));
  if (b.tags.size() != batch_size)
    return invalid("tags has " + std::to_string(b.tags.size()) +
                   " entries, log_posteriors has B = " + std::to_string(batch_size) +
                   batch_major_hint(b.tags.size(), frames, batch_size));
  if (auto err = check_tags(b.tags))
    return err;
  for (size_t i = 0; i < batch_size; ++i) {
    auto length = b.seq_lengths[i];
    if (length <= 0 || static_cast<size_t>(length) > frames)
      return invalid(name(i) + ": seq_length " + std::to_string(length) + " is not in 1.." +
                     std::to_string(frames));
  }
  // The used frames of each segment: NaN is never valid, +inf is not a log
  // probability; -inf (probability zero) is.
  const float* data = lp.data();
  for (size_t t = 0; t < frames; ++t)
    for (size_t i = 0; i < batch_size; ++i) {
      if (static_cast<int64_t>(t) >= b.seq_lengths[i])
        continue;
      const float* row = data + (t * batch_size + i) * dim;
      // A branch-free pass the compiler vectorizes (!(x < inf) holds for NaN
      // and +inf only); the class is looked for only in a bad row.
      unsigned bad = 0;
      for (size_t d = 0; d < dim; ++d)
        bad |= static_cast<unsigned>(!(row[d] < INFINITY));
      if (bad == 0)
        continue;
      for (size_t d = 0; d < dim; ++d)
        if (std::isnan(row[d]) || row[d] == INFINITY)
          return invalid(name(i) + ", frame " + std::to_string(t) + ", class " + std::to_string(d) +
                         ": log-posterior is " + (std::isnan(row[d]) ? "NaN" : "+inf"));
    }
  return {};
}

} // namespace sprintrt::detail
