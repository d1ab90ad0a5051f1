// The public `sprintrt::fsa_loss`: the caller's views as a
// `criterion::batch_loss` call.

#include "sprintrt/fsa_loss.hpp"

#include <optional>

#include "criterion/batch_loss.hpp"

namespace sprintrt {

namespace {

criterion::batch_fsa batch_of(const char* name, const fsa_batch_view& view) {
  return {name,
          view.edges,
          view.num_edges,
          view.weights,
          view.start_end_states,
          view.num_sequences,
          view.num_states,
          {},
          {}};
}

} // namespace

caf::expected<fsa_loss_counts> fsa_loss(const float* log_probs, int64_t frames, int64_t batch,
                                        int64_t classes, const int64_t* seq_lens,
                                        const fsa_batch_view& fsa, const fsa_loss_options& options,
                                        double* loss, float* gradient) {
  if (frames < 0 || batch < 0 || classes < 1)
    return make_error(errc::invalid_input, "log_probs must have T >= 0, B >= 0 and D >= 1, got [" +
                                               std::to_string(frames) + ", " +
                                               std::to_string(batch) + ", " +
                                               std::to_string(classes) + "]");
  criterion::batch_loss_inputs in;
  in.log_probs = {log_probs, frames, batch, classes, batch * classes, classes};
  in.lengths = seq_lens;
  auto numerator = batch_of("fsa", fsa);
  in.numerator = &numerator;
  std::optional<criterion::batch_fsa> denominator;
  if (options.denominator != nullptr)
    in.denominator = &denominator.emplace(batch_of("den_fsa", *options.denominator));
  switch (options.criterion) {
  case fsa_criterion::full_sum:
    break;
  case fsa_criterion::mmi:
    in.kind = criterion::sequence_kind::mmi;
    break;
  case fsa_criterion::bmmi:
    in.kind = criterion::sequence_kind::bmmi;
    break;
  case fsa_criterion::smbr:
    in.kind = criterion::sequence_kind::smbr;
    break;
  }
  in.scales.am = options.am_scale;
  in.scales.boost = options.boost;
  in.numerator_cost = options.numerator_cost;
  in.threads = options.threads;
  auto counts = criterion::batch_loss(in, loss, gradient);
  if (!counts)
    return std::move(counts.error());
  return fsa_loss_counts{counts->scaled, counts->log_space};
}

} // namespace sprintrt
