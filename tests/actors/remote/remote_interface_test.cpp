// The values that cross the network to remote pools (remote_interface.hpp):
// floats go as raw bytes and come back bit for bit (+inf, NaN, -0, subnormals),
// in one piece rather than per element, and a hostile or broken message is an
// invalid_message error without a huge allocation.

#include "sprintrt/remote_interface.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/binary_deserializer.hpp>
#include <caf/binary_serializer.hpp>
#include <caf/message.hpp>

#include "sprintrt/error.hpp"

using namespace sprintrt;

namespace {

/// A float with the given bits (NaN payloads survive, unlike arithmetic).
float float_bits(uint32_t bits) {
  float x;
  std::memcpy(&x, &bits, sizeof x);
  return x;
}

/// A double with the given bits.
double double_bits(uint64_t bits) {
  double x;
  std::memcpy(&x, &bits, sizeof x);
  return x;
}

/// A 3 x 4 matrix with -0, a subnormal, +-inf and three NaN bit patterns.
float_rows odd_rows() {
  float_rows x;
  x.rows = 3;
  x.cols = 4;
  x.values = make_storage(std::vector<float>{
      1.5f, -0.0f, float_bits(0x00000001), // the smallest subnormal
      float_bits(0x7fc00001),              // quiet NaN with a payload
      float_bits(0x7f800001),              // signalling NaN
      float_bits(0xffc12345),              // negative NaN
      std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
      std::numeric_limits<float>::max(), -3.25e-30f, 0.0f, float_bits(0x807fffff)});
  return x;
}

/// Whether two float_rows have the same shape and the same bits.
bool same_bits(const float_rows& x, const float_rows& y) {
  if (x.rows != y.rows || x.cols != y.cols || !x.values || !y.values ||
      x.values->size() != y.values->size())
    return false;
  return std::memcmp(x.values->data(), y.values->data(), x.values->size() * sizeof(float)) == 0;
}

/// Serializes `x` as CAF's network layer does (binary, no actor system).
template <class T>
std::vector<char> save(T& x) {
  std::vector<char> buf;
  caf::binary_serializer sink{nullptr, buf};
  auto err = sink(x);
  if (err)
    FAIL(render(err));
  return buf;
}

/// Deserializes `x` from all of `buf`; an error if bytes are left over.
template <class T>
caf::error load(const std::vector<char>& buf, T& x) {
  caf::binary_deserializer source{nullptr, buf};
  if (auto err = source(x))
    return err;
  if (source.remaining() != 0)
    return make_error(errc::invalid_message,
                      std::to_string(source.remaining()) + " bytes left over (test)");
  return {};
}

/// A buffer written by hand with `write`, for messages no sender would make.
template <class Write>
std::vector<char> hostile(Write write) {
  std::vector<char> buf;
  caf::binary_serializer sink{nullptr, buf};
  write(sink);
  return buf;
}

} // namespace

TEST_CASE("a remote_segment round-trips its name and every float bit for bit") {
  remote_segment x{"corpus/rec1/seg-7", odd_rows()};
  auto buf = save(x);
  remote_segment y;
  auto err = load(buf, y);
  REQUIRE_FALSE(err);
  CHECK(y.segment == "corpus/rec1/seg-7");
  CHECK(y.log_posteriors.rows == 3);
  CHECK(y.log_posteriors.cols == 4);
  CHECK(same_bits(x.log_posteriors, y.log_posteriors));
}

TEST_CASE("a remote_loss round-trips an infinite loss and a negative subnormal loss bit for bit") {
  for (uint64_t loss_bits : {uint64_t{0x7ff0000000000000}, // +inf: a skipped segment
                             uint64_t{0x800000000000abcd}, // a negative subnormal
                             uint64_t{0x7ff8000000000123}}) {
    INFO(loss_bits);
    remote_loss x{double_bits(loss_bits), odd_rows()};
    auto buf = save(x);
    remote_loss y;
    auto err = load(buf, y);
    REQUIRE_FALSE(err);
    CHECK(std::memcmp(&x.loss, &y.loss, sizeof(double)) == 0);
    CHECK(same_bits(x.error_signal, y.error_signal));
  }
  remote_loss inf{std::numeric_limits<double>::infinity(), odd_rows()};
  remote_loss back;
  REQUIRE_FALSE(load(save(inf), back));
  CHECK(std::isinf(back.loss));
  CHECK(back.loss > 0);
}

TEST_CASE("a remote_fsa round-trips its edges and weights, +inf included") {
  remote_fsa x{segment_fsa{3,
                           {0, 0, 1, 0, 1, 2, 7, 7, 4294967295u}, // from, to, emission of 3 edges
                           {0.5f, std::numeric_limits<float>::infinity(), float_bits(0x80000001)}}};
  auto buf = save(x);
  remote_fsa y;
  auto err = load(buf, y);
  REQUIRE_FALSE(err);
  CHECK(y.fsa.num_states == 3);
  CHECK(y.fsa.edges == x.fsa.edges);
  REQUIRE(y.fsa.weights.size() == 3);
  CHECK(std::memcmp(y.fsa.weights.data(), x.fsa.weights.data(), 3 * sizeof(float)) == 0);
}

TEST_CASE("an empty float_rows round-trips its shape with null storage") {
  remote_loss x{2.0, float_rows{0, 5, nullptr}};
  remote_loss y;
  y.error_signal = odd_rows();
  REQUIRE_FALSE(load(save(x), y));
  CHECK(y.loss == 2.0);
  CHECK(y.error_signal.rows == 0);
  CHECK(y.error_signal.cols == 5);
  CHECK(y.error_signal.values == nullptr);
}

TEST_CASE("a float_rows is serialized as its raw bytes plus a small header") {
  const uint64_t rows = 1000;
  const uint64_t cols = 100;
  float_rows x{rows, cols, make_storage(rows * cols, 0.25f)};
  auto buf = save(x);
  CHECK(buf.size() >= rows * cols * sizeof(float));
  CHECK(buf.size() < rows * cols * sizeof(float) + 64);
}

TEST_CASE("remote values cross CAF's message serialization with the registered types") {
  caf::actor_system_config config;
  add_remote_message_types(config);
  caf::actor_system sys{config};
  auto msg = caf::make_message(remote_loss{std::numeric_limits<double>::infinity(), odd_rows()},
                               remote_segment{"seg", odd_rows()});
  std::vector<char> buf;
  caf::binary_serializer sink{sys, buf};
  auto err = sink(msg);
  REQUIRE_FALSE(err);
  caf::message back;
  caf::binary_deserializer source{sys, buf};
  err = source(back);
  REQUIRE_FALSE(err);
  REQUIRE((back.match_elements<remote_loss, remote_segment>()));
  const auto& loss = back.get_as<remote_loss>(0);
  CHECK(std::isinf(loss.loss));
  CHECK(same_bits(loss.error_signal, odd_rows()));
  CHECK(back.get_as<remote_segment>(1).segment == "seg");
  CHECK(same_bits(back.get_as<remote_segment>(1).log_posteriors, odd_rows()));
}

TEST_CASE("an FSA query crosses CAF's message serialization with its source and text") {
  caf::actor_system_config config;
  add_remote_message_types(config);
  caf::actor_system sys{config};
  auto msg = caf::make_message(fsa_atom::value, fsa_query{fsa_source::orthography, "3 17 5"},
                               fsa_query{fsa_source::segment_name, "corpus/rec/seg-1"});
  std::vector<char> buf;
  caf::binary_serializer sink{sys, buf};
  REQUIRE_FALSE(sink(msg));
  caf::message back;
  caf::binary_deserializer source{sys, buf};
  REQUIRE_FALSE(source(back));
  REQUIRE((back.match_elements<fsa_atom, fsa_query, fsa_query>()));
  CHECK(back.get_as<fsa_query>(1).source == fsa_source::orthography);
  CHECK(back.get_as<fsa_query>(1).text == "3 17 5");
  CHECK(back.get_as<fsa_query>(2).source == fsa_source::segment_name);
  CHECK(back.get_as<fsa_query>(2).text == "corpus/rec/seg-1");
  CHECK(to_string(msg) == R"(('fsa', orthography, "3 17 5", segment_name, "corpus/rec/seg-1"))");
}

TEST_CASE("a byte count beyond the message's end is refused before anything is allocated") {
  // The wire's sequence lengths are 32 bits: the largest claim a peer can
  // make is just under 4 GB.
  auto buf = hostile([](caf::serializer& sink) {
    std::string segment = "seg";
    uint64_t rows = 1;
    uint64_t cols = 1073741823;
    size_t claim = 4294967292u;
    CHECK_FALSE(sink(segment, rows, cols));
    CHECK_FALSE(sink.begin_sequence(claim));
  });
  remote_segment x;
  caf::error err;
  REQUIRE_NOTHROW(err = load(buf, x));
  CHECK(err == errc::invalid_message);
  CHECK(error_message(err) == "float_rows: 4294967292 bytes claimed, 0 left in the message");
  CHECK(x.log_posteriors.values == nullptr);

  auto edges = hostile([](caf::serializer& sink) {
    uint64_t num_states = 2;
    size_t claim = 4000000000u;
    CHECK_FALSE(sink(num_states));
    CHECK_FALSE(sink.begin_sequence(claim));
    uint32_t some_data = 7;
    CHECK_FALSE(sink(some_data));
  });
  remote_fsa fsa;
  REQUIRE_NOTHROW(err = load(edges, fsa));
  CHECK(err == errc::invalid_message);
  CHECK(error_message(err) == "fsa edges: 4000000000 bytes claimed, 4 left in the message");
}

TEST_CASE("a truncated message is refused, naming the bytes claimed and left") {
  remote_segment x{"seg", odd_rows()};
  auto buf = save(x);
  buf.pop_back();
  remote_segment y;
  auto err = load(buf, y);
  CHECK(err == errc::invalid_message);
  CHECK(error_message(err) == "float_rows: 48 bytes claimed, 47 left in the message");
}

TEST_CASE("a byte count that is not a whole number of floats is refused") {
  auto buf = hostile([](caf::serializer& sink) {
    uint64_t rows = 1;
    uint64_t cols = 1;
    size_t claim = 5;
    char data[5] = {1, 2, 3, 4, 5};
    CHECK_FALSE(sink(rows, cols));
    CHECK_FALSE(sink.begin_sequence(claim));
    CHECK_FALSE(sink.apply_raw(5, data));
  });
  float_rows x;
  auto err = load(buf, x);
  CHECK(err == errc::invalid_message);
  CHECK(error_message(err) == "float_rows: 5 bytes, not a whole number of elements");

  auto weights = hostile([](caf::serializer& sink) {
    uint64_t num_states = 2;
    std::vector<uint32_t> edges{0, 1, 0};
    size_t claim = 6;
    char data[6] = {};
    CHECK_FALSE(sink(num_states));
    CHECK_FALSE(save_raw(sink, edges.data(), edges.size(), sizeof(uint32_t)));
    CHECK_FALSE(sink.begin_sequence(claim));
    CHECK_FALSE(sink.apply_raw(6, data));
  });
  remote_fsa fsa;
  err = load(weights, fsa);
  CHECK(err == errc::invalid_message);
  CHECK(error_message(err) == "fsa weights: 6 bytes, not a whole number of elements");
}

TEST_CASE("a shape that does not match the byte count is refused") {
  auto with_shape = [](uint64_t rows, uint64_t cols, size_t count) {
    return hostile([=](caf::serializer& sink) {
      uint64_t r = rows;
      uint64_t c = cols;
      std::vector<float> values(count, 1.0f);
      CHECK_FALSE(sink(r, c));
      CHECK_FALSE(save_raw(sink, values.data(), values.size(), sizeof(float)));
    });
  };
  float_rows x;
  auto err = load(with_shape(2, 3, 5), x);
  CHECK(err == errc::invalid_message);
  CHECK(error_message(err) == "float_rows: 2 x 3 with 5 values");
  err = load(with_shape(2, 3, 7), x);
  CHECK(err == errc::invalid_message);
  CHECK(error_message(err) == "float_rows: 2 x 3 with 7 values");
  // 2^32 x 2^32 wraps to 0 in uint64: still refused.
  err = load(with_shape(uint64_t{1} << 32, uint64_t{1} << 32, 0), x);
  CHECK(err == errc::invalid_message);
  CHECK(error_message(err) == "float_rows: 4294967296 x 4294967296 with 0 values");
  // And the same count in a matching shape is accepted.
  CHECK_FALSE(load(with_shape(3, 2, 6), x));
}

TEST_CASE("an automaton without three edge values per weight is refused") {
  auto with_sizes = [](size_t num_edge_values, size_t num_weights) {
    return hostile([=](caf::serializer& sink) {
      uint64_t num_states = 2;
      std::vector<uint32_t> edges(num_edge_values, 1);
      std::vector<float> weights(num_weights, 0.5f);
      CHECK_FALSE(sink(num_states));
      CHECK_FALSE(save_raw(sink, edges.data(), edges.size(), sizeof(uint32_t)));
      CHECK_FALSE(save_raw(sink, weights.data(), weights.size(), sizeof(float)));
    });
  };
  remote_fsa x;
  auto err = load(with_sizes(4, 1), x);
  CHECK(err == errc::invalid_message);
  CHECK(error_message(err) == "fsa: 4 edge values for 1 weights (3 per edge)");
  err = load(with_sizes(3, 2), x);
  CHECK(err == errc::invalid_message);
  CHECK(error_message(err) == "fsa: 3 edge values for 2 weights (3 per edge)");
  CHECK_FALSE(load(with_sizes(6, 2), x));
}

TEST_CASE("saving a float_rows whose values do not fill its shape fails with invalid_input") {
  std::vector<char> buf;
  caf::binary_serializer sink{nullptr, buf};
  float_rows short_rows{2, 3, make_storage(5, 1.0f)};
  auto err = sink(short_rows);
  CHECK(err == errc::invalid_input);
  CHECK(error_message(err) == "float_rows: 2 x 3 with 5 values");
  float_rows no_storage{1, 1, nullptr};
  err = sink(no_storage);
  CHECK(err == errc::invalid_input);
  CHECK(error_message(err) == "float_rows: 1 x 1 with 0 values");
  remote_loss loss{1.0, float_rows{1, 2, make_storage(3, 0.0f)}};
  CHECK(sink(loss) == errc::invalid_input);
  remote_segment segment{"seg", float_rows{4, 1, nullptr}};
  CHECK(sink(segment) == errc::invalid_input);
}
