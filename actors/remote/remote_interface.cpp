#include "sprintrt/remote_interface.hpp"

#include <sys/mman.h>

#include <cstdint>
#include <cstring>
#include <limits>

#include <caf/actor_system_config.hpp>
#include <caf/binary_deserializer.hpp>

#include "sprintrt/error.hpp"
#include "sprintrt/output_gate.hpp"

namespace sprintrt {

static_assert(sizeof(float) == 4, "float_rows sends float32");
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "remote pools send raw little-endian floats (remote_interface_version)");

float_storage make_float_storage(size_t count) {
  std::vector<float> values;
  values.reserve(count);
  // glibc maps blocks this large afresh each time: without huge pages, the
  // page faults of the first touch of a large segment cost more than
  // sending it. Asked before the first touch (resize zeroes it).
  constexpr size_t huge_page = 2 << 20;
  size_t bytes = count * sizeof(float);
  if (bytes >= 4 * huge_page) {
    auto begin = reinterpret_cast<uintptr_t>(values.data());
    auto first = (begin + huge_page - 1) & ~(huge_page - 1);
    auto last = (begin + bytes) & ~(huge_page - 1);
    if (last > first)
      ::madvise(reinterpret_cast<void*>(first), last - first, MADV_HUGEPAGE);
  }
  values.resize(count);
  return make_storage(std::move(values));
}

caf::error save_raw(caf::serializer& sink, const void* data, size_t count, size_t size) {
  size_t bytes = count * size;
  // CAF 0.17 writes sequence lengths as 32 bits.
  if (bytes > std::numeric_limits<uint32_t>::max())
    return make_error(errc::message_too_large, std::to_string(bytes) +
                                                   " bytes in one value: CAF's messages hold 4 GiB "
                                                   "less one byte at most");
  return caf::error::eval(
      [&] { return sink.begin_sequence(bytes); },
      [&] { return bytes > 0 ? sink.apply_raw(bytes, const_cast<void*>(data)) : caf::error{}; },
      [&] { return sink.end_sequence(); });
}

caf::expected<size_t> begin_raw(caf::deserializer& source, size_t size, const char* what) {
  size_t bytes = 0;
  if (auto err = source.begin_sequence(bytes))
    return err;
  if (bytes % size != 0)
    return make_error(errc::invalid_message, std::string{what} + ": " + std::to_string(bytes) +
                                                 " bytes, not a whole number of elements");
  // CAF's network layer reads with a binary deserializer over the received
  // message: the bytes must be in it. (Other deserializers read from
  // memory of their own: they are not bounded here.)
  auto* binary = dynamic_cast<caf::binary_deserializer*>(&source);
  if (binary != nullptr && bytes > binary->remaining())
    return make_error(errc::invalid_message,
                      std::string{what} + ": " + std::to_string(bytes) + " bytes claimed, " +
                          std::to_string(binary->remaining()) + " left in the message");
  return bytes / size;
}

namespace {

/// An error (`code`) unless `rows` x `cols` equals `count` without overflow.
caf::error check_shape(uint64_t rows, uint64_t cols, size_t count, errc code) {
  bool overflows = cols != 0 && rows > std::numeric_limits<size_t>::max() / cols;
  if (overflows || count != rows * cols)
    return make_error(code, "float_rows: " + std::to_string(rows) + " x " + std::to_string(cols) +
                                " with " + std::to_string(count) + " values");
  return {};
}

} // namespace

caf::error save_float_rows(caf::serializer& sink, float_rows& x) {
  size_t count = x.values ? x.values->size() : 0;
  if (auto err = check_shape(x.rows, x.cols, count, errc::invalid_input))
    return err;
  return caf::error::eval(
      [&] { return sink(x.rows, x.cols); },
      [&] { return save_raw(sink, x.values ? x.values->data() : nullptr, count, sizeof(float)); });
}

caf::error load_float_rows(caf::deserializer& source, float_rows& x) {
  if (auto err = source(x.rows, x.cols))
    return err;
  auto count = begin_raw(source, sizeof(float), "float_rows");
  if (!count)
    return std::move(count.error());
  auto values = make_float_storage(*count);
  if (auto err = caf::error::eval(
          [&] {
            return *count > 0 ? source.apply_raw(*count * sizeof(float), values->data())
                              : caf::error{};
          },
          [&] { return source.end_sequence(); }))
    return err;
  if (auto err = check_shape(x.rows, x.cols, values->size(), errc::invalid_message))
    return err;
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
  config.add_message_type<fsa_query>("sprintrt::fsa_query");
}

remote_segment remote_wire<get_loss_command>::to_remote(const segment_job& job) {
  const auto& slice = job.log_posteriors;
  float_rows rows{slice.rows, slice.cols, make_float_storage(slice.rows * slice.cols)};
  for (size_t r = 0; r < slice.rows; ++r)
    std::memcpy(rows.values->data() + r * slice.cols, slice.row(r), slice.cols * sizeof(float));
  return {job.segment, std::move(rows)};
}

caf::expected<double> remote_wire<get_loss_command>::from_remote(remote_loss& answer,
                                                                 const segment_job& job) {
  auto& signal = answer.error_signal;
  if (signal.rows != job.error_signal.rows || signal.cols != job.error_signal.cols ||
      !signal.values)
    return make_error(errc::invalid_message,
                      "segment '" + job.segment + "': an error signal of " +
                          std::to_string(signal.rows) + " x " + std::to_string(signal.cols) +
                          " for " + std::to_string(job.error_signal.rows) + " x " +
                          std::to_string(job.error_signal.cols) + " posteriors");
  bool written = write_output(job, [&] {
    for (size_t r = 0; r < signal.rows; ++r)
      std::memcpy(job.error_signal.row(r), signal.values->data() + r * signal.cols,
                  signal.cols * sizeof(float));
  });
  if (!written)
    return make_error(errc::cancelled, "the caller stopped waiting");
  return answer.loss;
}

caf::expected<segment_job> remote_wire<get_loss_command>::to_local(remote_segment& segment) {
  auto& in = segment.log_posteriors;
  if (in.rows == 0 || in.cols == 0 || !in.values)
    return make_error(errc::invalid_input, "segment '" + segment.segment + "' has no frames");
  float_rows out{in.rows, in.cols, make_float_storage(in.rows * in.cols)};
  return segment_job{std::move(segment.segment), in.slice(), out.slice(),
                     std::make_shared<output_gate>()};
}

remote_loss remote_wire<get_loss_command>::to_reply(double loss, const segment_job& job) {
  const auto& out = job.error_signal;
  return {loss, float_rows{out.rows, out.cols, out.storage}};
}

} // namespace sprintrt
