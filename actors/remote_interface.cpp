#include "sprintrt/remote_interface.hpp"

#include <cstring>
#include <limits>

#include <caf/actor_system_config.hpp>
#include <caf/binary_deserializer.hpp>

#include "sprintrt/error.hpp"

namespace sprintrt {

static_assert(sizeof(float) == 4, "float_rows sends float32");
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "remote pools send raw little-endian floats (remote_interface_version)");

caf::error save_raw(caf::serializer& sink, const void* data, size_t count, size_t size) {
  size_t bytes = count * size;
  return caf::error::eval(
      [&] { return sink.begin_sequence(bytes); },
      [&] { return bytes > 0 ? sink.apply_raw(bytes, const_cast<void*>(data)) : caf::error{}; },
      [&] { return sink.end_sequence(); });
}

caf::error check_remaining(caf::deserializer& source, size_t bytes, const char* what) {
  // CAF's network layer reads with a binary deserializer over the received
  // message: the bytes must be in it.
  auto* binary = dynamic_cast<caf::binary_deserializer*>(&source);
  if (binary != nullptr && bytes > binary->remaining())
    return make_error(errc::invalid_message,
                      std::string{what} + ": " + std::to_string(bytes) + " bytes claimed, " +
                          std::to_string(binary->remaining()) + " left in the message");
  return {};
}

caf::error save_float_rows(caf::serializer& sink, float_rows& x) {
  size_t count = x.values ? x.values->size() : 0;
  if (count != x.rows * x.cols)
    return make_error(errc::invalid_input, "float_rows: " + std::to_string(x.rows) + " x " +
                                               std::to_string(x.cols) + " with " +
                                               std::to_string(count) + " values");
  return caf::error::eval(
      [&] { return sink(x.rows, x.cols); },
      [&] { return save_raw(sink, x.values ? x.values->data() : nullptr, count, sizeof(float)); });
}

caf::error load_float_rows(caf::deserializer& source, float_rows& x) {
  if (auto err = source(x.rows, x.cols))
    return err;
  auto values = std::make_shared<std::vector<float>>();
  if (auto err = load_raw(source, *values, "float_rows"))
    return err;
  if (x.cols != 0 && x.rows > values->size() / x.cols)
    return make_error(errc::invalid_message, "float_rows: " + std::to_string(x.rows) + " x " +
                                                 std::to_string(x.cols) + " with " +
                                                 std::to_string(values->size()) + " values");
  if (values->size() != x.rows * x.cols)
    return make_error(errc::invalid_message, "float_rows: " + std::to_string(x.rows) + " x " +
                                                 std::to_string(x.cols) + " with " +
                                                 std::to_string(values->size()) + " values");
  x.values = values->empty() ? nullptr : std::move(values);
  return {};
}

caf::error save_remote_loss(caf::serializer& sink, remote_loss& x) {
  uint64_t bits = 0;
  std::memcpy(&bits, &x.loss, sizeof bits);
  return caf::error::eval([&] { return sink(bits); },
                          [&] { return save_float_rows(sink, x.error_signal); });
}

caf::error load_remote_loss(caf::deserializer& source, remote_loss& x) {
  uint64_t bits = 0;
  if (auto err = source(bits))
    return err;
  std::memcpy(&x.loss, &bits, sizeof bits);
  return load_float_rows(source, x.error_signal);
}

caf::error save_remote_fsa(caf::serializer& sink, remote_fsa& x) {
  auto& fsa = x.fsa;
  return caf::error::eval(
      [&] { return sink(fsa.num_states); },
      [&] { return save_raw(sink, fsa.edges.data(), fsa.edges.size(), sizeof(uint32_t)); },
      [&] { return save_raw(sink, fsa.weights.data(), fsa.weights.size(), sizeof(float)); });
}

caf::error load_remote_fsa(caf::deserializer& source, remote_fsa& x) {
  auto& fsa = x.fsa;
  if (auto err = caf::error::eval([&] { return source(fsa.num_states); },
                                  [&] { return load_raw(source, fsa.edges, "fsa edges"); },
                                  [&] { return load_raw(source, fsa.weights, "fsa weights"); }))
    return err;
  if (fsa.edges.size() != 3 * fsa.weights.size())
    return make_error(errc::invalid_message,
                      "fsa: " + std::to_string(fsa.edges.size()) + " edge values for " +
                          std::to_string(fsa.weights.size()) + " weights (3 per edge)");
  return {};
}

void add_remote_message_types(caf::actor_system_config& config) {
  config.add_message_type<remote_segment>("sprintrt::remote_segment");
  config.add_message_type<remote_loss>("sprintrt::remote_loss");
  config.add_message_type<remote_fsa>("sprintrt::remote_fsa");
}

} // namespace sprintrt
