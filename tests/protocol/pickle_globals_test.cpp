#include "protocol/pickle_globals.hpp"

#include <catch2/catch.hpp>

#include "protocol/ndarray_access.hpp"

using namespace sprintrt::protocol;
using sprintrt::errc;
using sprintrt::render;

TEST_CASE("exactly the whitelisted globals resolve") {
  CHECK(resolve_global("returnn.util.task_system", "make_numpy_ndarray_fromstring") ==
        callable::make_ndarray);
  CHECK(resolve_global("TaskSystem", "make_numpy_ndarray_fromstring") == callable::make_ndarray);
  CHECK(resolve_global("numpy.core.multiarray", "scalar") == callable::numpy_scalar);
  CHECK(resolve_global("numpy._core.multiarray", "scalar") == callable::numpy_scalar);
  CHECK(resolve_global("numpy", "dtype") == callable::numpy_dtype);
  CHECK(resolve_global("_codecs", "encode") == callable::codecs_encode);
  CHECK(resolve_global("__builtin__", "bytes") == callable::builtin_bytes);
  CHECK(resolve_global("builtins", "bytes") == callable::builtin_bytes);
  CHECK_FALSE(resolve_global("os", "system"));
  CHECK_FALSE(resolve_global("builtins", "eval"));
  CHECK_FALSE(resolve_global("numpy", "load"));
  CHECK_FALSE(resolve_global("returnn.util.task_system", "Pickler"));
  CHECK_FALSE(resolve_global("numpy.core.multiarray", "_reconstruct"));
}

TEST_CASE("calling make_numpy_ndarray_fromstring shares the bytes") {
  auto data = bytes_ref::copy_of(std::string(8, '\0'));
  auto a = call_global(callable::make_ndarray, {value::bytes(data), value::str("uint32"),
                                                value::tuple({value::integer(2)})});
  REQUIRE(a);
  CHECK(a->as_ndarray().shape == std::vector<size_t>{2});
  CHECK(a->as_ndarray().data.data() == data.data());
  auto wrong = call_global(callable::make_ndarray, {value::bytes(data), value::str("float64"),
                                                    value::tuple({value::integer(2)})});
  REQUIRE_FALSE(wrong);
  CHECK(wrong.error() == errc::protocol_error);
  CHECK(render(wrong.error()).find("does not match its 8 data bytes") != std::string::npos);
}

TEST_CASE("numpy scalars are built from a dtype and raw bytes") {
  auto dtype = call_global(callable::numpy_dtype,
                           {value::str("i4"), value::boolean(false), value::boolean(true)});
  REQUIRE(dtype);
  CHECK_FALSE(build_numpy_dtype(value::tuple({value::integer(3), value::str("<")})));
  CHECK(build_numpy_dtype(value::tuple({value::integer(3), value::str(">")})) ==
        errc::protocol_error);
  auto scalar =
      call_global(callable::numpy_scalar,
                  {*dtype, value::bytes(bytes_ref::copy_of(std::string("\x07\0\0\0", 4)))});
  REQUIRE(scalar);
  CHECK(scalar->as_numpy_scalar().to_int() == 7);
  CHECK(call_global(callable::numpy_scalar, {*dtype, value::bytes(bytes_ref::copy_of("12"))})
            .error() == errc::protocol_error);
}

TEST_CASE("bytes at protocol 2: _codecs.encode(text, 'latin1') and bytes()") {
  auto b = call_global(callable::codecs_encode, {value::str("a\xc3\xbf"), value::str("latin1")});
  REQUIRE(b);
  CHECK(b->as_bytes().to_string() == "a\xff");
  CHECK(call_global(callable::codecs_encode, {value::str("a"), value::str("utf-8")}).error() ==
        errc::protocol_error);
  auto empty = call_global(callable::builtin_bytes, {});
  REQUIRE(empty);
  CHECK(empty->as_bytes().size() == 0);
  auto arity = call_global(callable::builtin_bytes, {value{}});
  REQUIRE_FALSE(arity);
  CHECK(render(arity.error()).find("takes 0 arguments, got 1") != std::string::npos);
}
