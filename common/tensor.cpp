#include "sprintrt/tensor.hpp"

#include <cstdint>
#include <optional>

namespace sprintrt {

namespace {

/// The product of `shape`, or nothing on overflow.
std::optional<size_t> element_count(const std::vector<size_t>& shape) {
  size_t n = 1;
  for (auto extent : shape) {
    if (extent != 0 && n > SIZE_MAX / extent)
      return std::nullopt;
    n *= extent;
  }
  return n;
}

} // namespace

tensor tensor::zeros(std::vector<size_t> shape) {
  auto n = element_count(shape);
  auto storage = make_storage(n ? *n : 0);
  return tensor{std::move(shape), std::move(storage)};
}

caf::expected<tensor> tensor::from_vector(std::vector<float> data, std::vector<size_t> shape) {
  return from_storage(make_storage(std::move(data)), std::move(shape));
}

caf::expected<tensor> tensor::from_storage(float_storage storage, std::vector<size_t> shape) {
  if (!storage)
    return make_error(errc::invalid_input,
                      "tensor of shape " + sprintrt::shape_string(shape) + " has no storage");
  auto n = element_count(shape);
  if (!n || *n != storage->size()) {
    return make_error(errc::invalid_input, "tensor of shape " + sprintrt::shape_string(shape) +
                                               " needs " +
                                               (n ? std::to_string(*n) : std::string{"too many"}) +
                                               " elements, got " + std::to_string(storage->size()));
  }
  return tensor{std::move(shape), std::move(storage)};
}

tensor tensor::clone() const {
  return tensor{shape_, make_storage(std::vector<float>(storage_->begin(), storage_->end()))};
}

std::string shape_string(const std::vector<size_t>& shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i > 0)
      text += ", ";
    text += std::to_string(shape[i]);
  }
  return text + "]";
}

std::string tensor::shape_string() const {
  return sprintrt::shape_string(shape_);
}

matrix_slice segment_slice(const tensor& batch, size_t b, size_t frames) {
  size_t batch_size = batch.dim(1);
  size_t dim = batch.dim(2);
  return {batch.storage(), b * dim, frames, dim, batch_size * dim};
}

} // namespace sprintrt
