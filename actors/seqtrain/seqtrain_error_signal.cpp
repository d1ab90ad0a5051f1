#include "sprintrt/seqtrain_error_signal.hpp"

#include <cmath>
#include <string>

#include "sprintrt/error.hpp"

namespace sprintrt {

caf::expected<tensor> seqtrain_error_signal(const tensor& log_posteriors, const tensor& hat_y,
                                            const std::vector<int64_t>& lengths) {
  if (log_posteriors.rank() != 3 || hat_y.shape() != log_posteriors.shape())
    return make_error(errc::invalid_input, "seqtrain_error_signal: log_posteriors " +
                                               log_posteriors.shape_string() + " and hat_y " +
                                               hat_y.shape_string() + " must both be [T, B, D]");
  const size_t frames = log_posteriors.dim(0);
  const size_t columns = log_posteriors.dim(1);
  const size_t dim = log_posteriors.dim(2);
  if (lengths.size() != columns)
    return make_error(errc::invalid_input,
                      "seqtrain_error_signal: " + std::to_string(lengths.size()) +
                          " lengths for B = " + std::to_string(columns));
  for (size_t b = 0; b < columns; ++b)
    if (lengths[b] < 0 || static_cast<size_t>(lengths[b]) > frames)
      return make_error(errc::invalid_input, "seqtrain_error_signal: length " +
                                                 std::to_string(lengths[b]) + " of column " +
                                                 std::to_string(b) + " is not in 0.." +
                                                 std::to_string(frames));
  auto out = tensor::zeros(log_posteriors.shape());
  for (size_t t = 0; t < frames; ++t)
    for (size_t b = 0; b < columns; ++b) {
      if (static_cast<int64_t>(t) >= lengths[b])
        continue;
      size_t offset = (t * columns + b) * dim;
      const float* lp = log_posteriors.data() + offset;
      const float* target = hat_y.data() + offset;
      float* dz = out.data() + offset;
      for (size_t d = 0; d < dim; ++d)
        dz[d] = std::exp(lp[d]) - target[d];
    }
  return out;
}

} // namespace sprintrt
