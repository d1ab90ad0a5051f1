#include "tools/sprintrt/batch_files.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>

#include <spdlog/spdlog.h>

#include "actors/pool/batch_checks.hpp"
#include "tools/sprintrt/npy_file.hpp"

namespace sprintrt::cli {

caf::expected<std::vector<std::string>> read_tags(const std::string& path) {
  errno = 0;
  std::ifstream in{path};
  if (!in)
    return make_error(errc::io_error, "tags file '" + path + "' cannot be opened: " +
                                          (errno != 0 ? std::strerror(errno) : "unknown reason"));
  std::vector<std::string> tags;
  size_t first_blank = 0;
  std::string line;
  for (size_t number = 1; std::getline(in, line); ++number) {
    if (!line.empty() && line.back() == '\r')
      line.pop_back();
    if (line.empty()) {
      if (first_blank == 0)
        first_blank = number;
      continue;
    }
    if (first_blank != 0)
      return make_error(errc::invalid_input, "tags file '" + path + "', line " +
                                                 std::to_string(first_blank) +
                                                 ": empty tag (one segment name per line)");
    tags.push_back(line);
  }
  if (tags.empty())
    return make_error(errc::invalid_input, "tags file '" + path + "' has no tags");
  return tags;
}

caf::expected<cli::npy_typed_array<float>> read_log_posteriors(const std::string& path) {
  auto type = cli::read_npy_dtype(path);
  if (!type)
    return std::move(type.error());
  if (*type != protocol::dtype::float64)
    return cli::read_npy_exact<float>(path);
  // As the Python module's astype(float32): Sprint computes in float32.
  auto wide = cli::read_npy_exact<double>(path);
  if (!wide)
    return std::move(wide.error());
  cli::npy_typed_array<float> narrow;
  narrow.shape = std::move(wide->shape);
  narrow.values.assign(wide->values.begin(), wide->values.end());
  spdlog::info("npy file '{}': float64 log-posteriors converted to float32", path);
  return narrow;
}

caf::expected<batch> read_batch(const std::string& log_posteriors, const std::string& seq_lengths,
                                const std::string& tags) {
  auto lp = read_log_posteriors(log_posteriors);
  if (!lp)
    return lp.error();
  if (lp->shape.size() != 3)
    return make_error(errc::invalid_input, "npy file '" + log_posteriors +
                                               "': log-posteriors must be [T, B, D], got " +
                                               cli::npy_shape_string(lp->shape));
  auto lengths_file = cli::read_npy(seq_lengths);
  if (!lengths_file)
    return lengths_file.error();
  if (lengths_file->type != protocol::dtype::int32 && lengths_file->type != protocol::dtype::int64)
    return make_error(errc::invalid_input, "npy file '" + seq_lengths +
                                               "': sequence lengths must be int32 or int64, got " +
                                               protocol::to_string(lengths_file->type));
  if (lengths_file->shape.size() != 1 || lengths_file->shape[0] != lp->shape[1])
    return make_error(errc::invalid_input,
                      "npy file '" + seq_lengths + "': sequence lengths must be [B] = [" +
                          std::to_string(lp->shape[1]) + "], got " +
                          cli::npy_shape_string(lengths_file->shape) +
                          (lengths_file->shape.size() == 1
                               ? sprintrt::detail::batch_major_hint(lengths_file->shape[0],
                                                                    lp->shape[0], lp->shape[1])
                               : std::string{}));
  auto lengths = cli::values_as<int64_t>(*lengths_file);
  if (!lengths)
    return lengths.error();
  auto names = read_tags(tags);
  if (!names)
    return names.error();
  if (names->size() != lp->shape[1])
    return make_error(
        errc::invalid_input,
        "tags file '" + tags + "' has " + std::to_string(names->size()) +
            " tags, the batch has B = " + std::to_string(lp->shape[1]) +
            sprintrt::detail::batch_major_hint(names->size(), lp->shape[0], lp->shape[1]));
  auto posteriors = tensor::from_vector(std::move(lp->values), lp->shape);
  if (!posteriors)
    return posteriors.error();
  batch b;
  b.log_posteriors = std::move(*posteriors);
  b.seq_lengths = std::move(*lengths);
  b.tags = std::move(*names);
  return b;
}

} // namespace sprintrt::cli
