#include "protocol/pickle_repr.hpp"
#include "protocol/pickle_writer.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "protocol/pickle_reader.hpp"
#include "tests/support/golden_vectors.hpp"

using namespace sprintrt::protocol;
using sprintrt::errc;
using sprintrt::test::bytes;
using sprintrt::test::concat;

namespace {

std::vector<std::byte> pickled(const value& x) {
  byte_buffer out;
  auto err = write_pickle(out, x);
  REQUIRE_FALSE(err);
  return {out.data(), out.data() + out.size()};
}

/// The pickle of one int, to check the chosen opcode byte by byte.
std::vector<std::byte> int_pickle(std::vector<std::byte> opcode_and_arg) {
  return concat({bytes({0x80, 3}), opcode_and_arg, bytes({'.'})});
}

/// Writes `x`, reads it back, and checks that the result equals `x` and
/// that writing it again gives the same bytes.
void check_round_trip(const value& x) {
  auto message = pickled(x);
  auto y = read_pickle({message.data(), message.size()});
  REQUIRE(y);
  CHECK(*y == x);
  byte_buffer again;
  REQUIRE_FALSE(write_pickle(again, *y));
  CHECK(std::vector<std::byte>(again.data(), again.data() + again.size()) == message);
}

} // namespace

TEST_CASE("ints use the shortest of BININT1, BININT2, BININT and LONG1") {
  CHECK(pickled(value::integer(0)) == int_pickle(bytes({'K', 0})));
  CHECK(pickled(value::integer(255)) == int_pickle(bytes({'K', 0xff})));
  CHECK(pickled(value::integer(256)) == int_pickle(bytes({'M', 0, 1})));
  CHECK(pickled(value::integer(65536)) == int_pickle(bytes({'J', 0, 0, 1, 0})));
  CHECK(pickled(value::integer(-1)) == int_pickle(bytes({'J', 0xff, 0xff, 0xff, 0xff})));
  CHECK(pickled(value::integer(int64_t{1} << 31)) ==
        int_pickle(bytes({0x8a, 5, 0, 0, 0, 0x80, 0})));
  CHECK(pickled(value::integer(-(int64_t{1} << 31) - 1)) ==
        int_pickle(bytes({0x8a, 5, 0xff, 0xff, 0xff, 0x7f, 0xff})));
  CHECK(pickled(value::integer(std::numeric_limits<int64_t>::min())) ==
        int_pickle(bytes({0x8a, 8, 0, 0, 0, 0, 0, 0, 0, 0x80})));
  CHECK(pickled(value::integer(std::numeric_limits<int64_t>::max())) ==
        int_pickle(bytes({0x8a, 8, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f})));
}

TEST_CASE("floats are big-endian BINFLOAT, as CPython writes them") {
  // The bytes of 12.375 in the golden vector c2p_loss_reply.
  CHECK(pickled(value::floating(12.375)) ==
        int_pickle(bytes({'G', 0x40, 0x28, 0xc0, 0, 0, 0, 0, 0})));
}

TEST_CASE("a command tuple is written in the conservative form") {
  auto x =
      value::tuple({value::str("init"), value::str("SprintSubprocessInstance"), value::integer(1)});
  auto expected =
      concat({bytes({0x80, 3, 'X', 4, 0, 0, 0}), bytes("init"), bytes({'X', 24, 0, 0, 0}),
              bytes("SprintSubprocessInstance"), bytes({'K', 1, 0x87, '.'})});
  CHECK(pickled(x) == expected);
}

TEST_CASE("arrays are a call of make_numpy_ndarray_fromstring in the chosen module") {
  float data[] = {1.0f, -2.0f};
  ndarray a{dtype::float32,
            {1, 2},
            bytes_ref::unowned({reinterpret_cast<const std::byte*>(data), sizeof(data)})};
  byte_buffer out;
  REQUIRE_FALSE(write_pickle(out, value::array(a), legacy_array_module));
  auto expected =
      concat({bytes({0x80, 3}), bytes("cTaskSystem\nmake_numpy_ndarray_fromstring\n"),
              bytes({'B', 8, 0, 0, 0, 0, 0, 0x80, 0x3f, 0, 0, 0, 0xc0}), bytes({'X', 7, 0, 0, 0}),
              bytes("float32"), bytes({'K', 1, 'K', 2, 0x86, 0x87, 'R', '.'})});
  CHECK(std::vector<std::byte>(out.data(), out.data() + out.size()) == expected);
}

TEST_CASE("strided rows are gathered into one contiguous array") {
  // A [2, 3] block inside rows of 5: columns 1..3 of each row.
  float batch[] = {0, 1, 2, 3, 4, 10, 11, 12, 13, 14};
  byte_buffer out;
  pickle_writer w{out};
  w.begin();
  size_t shape[] = {2, 3};
  w.ndarray(
      default_array_module, dtype::float32, {shape, 2},
      {reinterpret_cast<const std::byte*>(batch + 1), 2, 3 * sizeof(float), 5 * sizeof(float)});
  w.end();
  auto x = read_pickle(out.bytes());
  REQUIRE(x);
  const auto& a = x->as_ndarray();
  REQUIRE(a.data.size() == 6 * sizeof(float));
  float got[6];
  std::memcpy(got, a.data.data(), sizeof(got));
  CHECK(std::vector<float>(got, got + 6) == std::vector<float>{1, 2, 3, 11, 12, 13});
}

TEST_CASE("every kind of value survives a round trip") {
  auto nan = std::numeric_limits<double>::quiet_NaN();
  auto inf = std::numeric_limits<double>::infinity();
  std::vector<value> samples{
      value{},
      value::boolean(true),
      value::boolean(false),
      value::integer(-123456789012),
      value::floating(nan),
      value::floating(-inf),
      value::floating(-0.0),
      value::str(""),
      value::str("corpus/rec/seg-\xc3\xa4"),
      value::bytes(bytes_ref::copy_of(std::string("\0\xff", 2))),
      value::tuple({}),
      value::tuple({value::integer(1), value::integer(2), value::integer(3), value::integer(4)}),
      value::list({value::str("a"), value::list({})}),
      value::dict(
          {{value::str("k"), value::tuple({value{}})}, {value::integer(2), value::str("v")}}),
      value::scalar(numpy_scalar::of_float(dtype::float32, 2.5)),
      value::scalar(numpy_scalar::of_int(dtype::int32, 3)),
      value::scalar(numpy_scalar::of_int(dtype::uint8, 200)),
      value::array(ndarray{dtype::int64, {0}, {}}),
      value::array(ndarray{dtype::uint8, {}, bytes_ref::copy_of("x")}),
  };
  for (const auto& x : samples) {
    INFO(repr(x));
    check_round_trip(x);
  }
}

TEST_CASE("pickle-machine objects cannot be written") {
  byte_buffer out;
  out.append("keep", 4);
  auto err = write_pickle(out, value::tuple({value::global(callable::numpy_dtype)}));
  CHECK(err == errc::invalid_message);
  // A failed write leaves what the buffer held before.
  CHECK(out.size() == 4);
}
