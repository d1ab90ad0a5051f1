#include "tools/sprintrt/npy_header.hpp"

#include <catch2/catch.hpp>

using namespace sprintrt::cli;
using sprintrt::protocol::dtype;

// The parser's every error message is pinned through read_npy in
// npy_file_test.cpp; these are the direct cases.

TEST_CASE("npy header: NumPy's dict literal parses into its three fields", "[npy]") {
  npy_header h;
  std::string error;
  REQUIRE(parse_npy_header("{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }   \n", h,
                           error));
  CHECK(h.descr == "<f4");
  CHECK_FALSE(h.fortran_order);
  CHECK(h.shape == std::vector<size_t>{3, 4});
  npy_header scalar;
  REQUIRE(parse_npy_header("{\"shape\": (), \"fortran_order\": True, \"descr\": \"|u1\"}", scalar,
                           error));
  CHECK(scalar.shape.empty());
  CHECK(scalar.fortran_order);
  npy_header bad;
  CHECK_FALSE(parse_npy_header("{'descr': '<f4'}", bad, error));
  CHECK(error == "the key 'fortran_order' is missing");
}

TEST_CASE("npy header: descr strings map to dtypes, or say why not", "[npy]") {
  std::string error;
  CHECK(npy_descr_type("<f4", error) == dtype::float32);
  CHECK(npy_descr_type("=i8", error) == dtype::int64);
  CHECK(npy_descr_type("|u1", error) == dtype::uint8);
  CHECK(npy_descr_type(">u1", error) == dtype::uint8);
  CHECK_FALSE(npy_descr_type(">f8", error));
  CHECK(error == "big-endian dtype '>f8' is not supported; convert with array.astype('<f8')");
  CHECK_FALSE(npy_descr_type("<c8", error));
  CHECK(error == "unsupported dtype '<c8' (supported: <f4, <f8, <i4, <u4, <i8, |u1)");
}

TEST_CASE("npy header: bytes in messages are escaped", "[npy]") {
  CHECK(escape_for_message("ab\x01\xff") == "ab\\x01\\xff");
}
