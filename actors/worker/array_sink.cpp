#include "actors/worker/array_sink.hpp"

#include <cstring>
#include <string>

#include "sprintrt/error.hpp"

namespace sprintrt::detail {

caf::expected<protocol::shared_array> array_sink::put(const matrix_slice& array) const {
  const protocol::shared_array reference{slot_->offset, array.rows, array.cols};
  auto place = slot_->region->view(reference.offset, reference.bytes(), alignof(float));
  if (!place)
    return place.error();
  auto* to = reinterpret_cast<float*>(*place);
  for (size_t r = 0; r < array.rows; ++r)
    std::memcpy(to + r * array.cols, array.row(r), array.cols * sizeof(float));
  return reference;
}

caf::expected<const float*> array_sink::get(const protocol::shared_array& reference,
                                            const char* what) const {
  auto place = slot_->region->view(reference.offset, reference.bytes(), alignof(float));
  if (!place)
    return place.error();
  if (reference.offset != slot_->offset)
    return make_error(errc::invalid_message,
                      std::string{what} + " is at offset " + std::to_string(reference.offset) +
                          " of the shared region, not over the posteriors at " +
                          std::to_string(slot_->offset));
  return reinterpret_cast<const float*>(*place);
}

} // namespace sprintrt::detail
