#include "protocol/pickle_repr.hpp"

#include <catch2/catch.hpp>

#include <limits>

using namespace sprintrt::protocol;

TEST_CASE("repr renders like Python and abbreviates") {
  auto arr = ndarray{dtype::float32, {3, 4}, {}};
  auto msg = value::tuple({value::str("ok"), value::floating(12.375), value::array(arr)});
  CHECK(repr(msg) == "('ok', 12.375, ndarray(float32, [3, 4]))");
  CHECK(repr(value::tuple({value::integer(1)})) == "(1,)");
  CHECK(repr(value::list({value{}, value::boolean(false)})) == "[None, False]");
  CHECK(repr(value::floating(3.0)) == "3.0");
  CHECK(repr(value::floating(std::numeric_limits<double>::infinity())) == "inf");
  CHECK(repr(value::bytes(bytes_ref::copy_of("a'\n"))) == "b'a\\'\\x0a'");
  CHECK(repr(value::scalar(numpy_scalar::of_int(dtype::int32, 3))) == "numpy.int32(3)");
  CHECK(repr(value::str(std::string(500, 'x')), 20).size() <= 23);
}
