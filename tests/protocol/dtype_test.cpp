#include "protocol/dtype.hpp"

#include <catch2/catch.hpp>

using namespace sprintrt::protocol;

TEST_CASE("dtypes have NumPy's names, codes and sizes") {
  struct row {
    dtype type;
    const char* name;
    const char* code;
    size_t size;
  };
  for (auto [type, name, code, size] :
       {row{dtype::float32, "float32", "f4", 4}, row{dtype::float64, "float64", "f8", 8},
        row{dtype::int32, "int32", "i4", 4}, row{dtype::uint32, "uint32", "u4", 4},
        row{dtype::int64, "int64", "i8", 8}, row{dtype::uint8, "uint8", "u1", 1}}) {
    CHECK(std::string{to_string(type)} == name);
    CHECK(std::string{type_code(type)} == code);
    CHECK(item_size(type) == size);
    CHECK(parse_dtype(name) == type);
    CHECK(parse_dtype(code) == type);
    CHECK(parse_dtype(std::string{"<"} + code) == type);
    CHECK(parse_dtype(std::string{"="} + code) == type);
  }
  CHECK(is_floating(dtype::float32));
  CHECK(is_floating(dtype::float64));
  CHECK_FALSE(is_floating(dtype::int64));
}

TEST_CASE("big-endian and unknown dtypes are rejected") {
  CHECK_FALSE(parse_dtype(">f4"));
  CHECK_FALSE(parse_dtype("float16"));
  CHECK_FALSE(parse_dtype("f2"));
  CHECK_FALSE(parse_dtype(""));
  CHECK_FALSE(parse_dtype("<"));
}
