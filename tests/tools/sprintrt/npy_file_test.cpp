// Reading and writing .npy files: NumPy's own bytes, round trips, header forms, conversions.

#include "tools/sprintrt/npy_file.hpp"

#include <catch2/catch.hpp>

#include <cstddef>
#include <string>
#include <vector>

#include "tests/tools/sprintrt/npy_test_support.hpp"

using sprintrt::byte_span;
using sprintrt::span;
using namespace npy_test;

TEST_CASE("npy: files NumPy wrote are read", "[npy]") {
  temp_dir dir;
  auto f4 = read_valid(dir, f4_3);
  CHECK(f4.type == dtype::float32);
  CHECK(f4.shape == shape_type{3});
  CHECK(values<float>(f4) == std::vector<float>{1.5f, -2.0f, 3.25f});
  auto scalar = read_valid(dir, i8_0d);
  CHECK(scalar.type == dtype::int64);
  CHECK(scalar.shape.empty());
  CHECK(scalar.num_elements() == 1);
  CHECK(values<int64_t>(scalar) == std::vector<int64_t>{7});
  auto empty = read_valid(dir, f8_empty);
  CHECK(empty.type == dtype::float64);
  CHECK(empty.shape == shape_type{2, 0, 3});
  CHECK(empty.num_elements() == 0);
  CHECK(empty.data.empty());
  auto u1 = read_valid(dir, u1_3);
  CHECK(u1.type == dtype::uint8);
  CHECK(values<int>(u1) == std::vector<int>{0, 255, 7});
  auto lengths = read_valid(dir, i8_len);
  CHECK(values<uint32_t>(lengths) == std::vector<uint32_t>{5, 3});
  CHECK(values<int32_t>(read_valid(dir, i4_len)) == std::vector<int32_t>{5, -3});
  auto u4 = read_valid(dir, u4_2x2);
  CHECK(u4.shape == shape_type{2, 2});
  CHECK(values<uint64_t>(u4) == std::vector<uint64_t>{1, 2, 3, 4000000000u});
}

TEST_CASE("npy: version 2.0 and 3.0 files are read", "[npy]") {
  temp_dir dir;
  auto v2 = read_valid(dir, i4_v2);
  CHECK(v2.type == dtype::int32);
  CHECK(v2.shape == shape_type{4});
  CHECK(values<int32_t>(v2) == std::vector<int32_t>{1, -2, 3, 4});
  auto v3 = read_valid(dir, u4_v3);
  CHECK(v3.type == dtype::uint32);
  CHECK(values<uint32_t>(v3) == std::vector<uint32_t>{9, 10});
}

TEST_CASE("npy: writing gives NumPy's bytes exactly", "[npy]") {
  temp_dir dir;
  const auto path = dir.file("out.npy");
  for (const auto* expected : {&f4_3, &i8_0d, &f8_empty, &u1_3, &i8_len, &i4_len, &u4_2x2}) {
    auto array = read_valid(dir, *expected);
    REQUIRE_FALSE(write_npy(path, array));
    CHECK(read_file(path) == *expected);
  }
  struct {
    shape_type shape;
    const std::string& header;
  } headers[] = {
      {{3, 4}, f4_3x4_header}, {{2, 3, 4}, f4_2x3x4_header}, {{1000000, 2}, f4_1000000x2_header}};
  for (const auto& [shape, header] : headers) {
    std::vector<float> zeros(shape[0] * shape[1] * (shape.size() > 2 ? shape[2] : 1));
    REQUIRE_FALSE(write_npy<float>(path, shape, zeros));
    auto written = read_file(path);
    CHECK(written.size() == header.size() + zeros.size() * 4);
    CHECK(written.substr(0, header.size()) == header);
  }
  shape_type shape(14, 1);
  shape.back() = 100;
  REQUIRE_FALSE(write_npy<uint8_t>(path, shape, std::vector<uint8_t>(100)));
  auto written = read_file(path);
  CHECK(written.size() == 292);
  CHECK(written.substr(0, 192) == u1_14d_header);
}

TEST_CASE("npy: every dtype round-trips in 0-d, 1-d, 3-d and empty shapes", "[npy]") {
  temp_dir dir;
  const auto path = dir.file("round.npy");
  const shape_type shapes[] = {{}, {5}, {2, 3, 4}, {3, 0, 2}, {0}};
  for (dtype type : all_dtypes) {
    for (const auto& shape : shapes) {
      INFO(sprintrt::protocol::to_string(type) << " " << npy_shape_string(shape));
      npy_array array{type, shape, {}};
      for (size_t i = 0; i < array.num_elements() * sprintrt::protocol::item_size(type); ++i)
        array.data.push_back(static_cast<std::byte>(i * 37 + 11));
      REQUIRE_FALSE(write_npy(path, array));
      auto file = read_file(path);
      CHECK((file.size() - array.data.size()) % 64 == 0);
      auto back = read_npy(path);
      REQUIRE(back);
      CHECK(back->type == type);
      CHECK(back->shape == shape);
      CHECK(back->data == array.data);
    }
  }
  CHECK(dir.names() == std::vector<std::string>{"round.npy"});
}

TEST_CASE("npy: a header too long for version 1.0 is written as version 2.0", "[npy]") {
  temp_dir dir;
  const auto path = dir.file("dims.npy");
  // Lengths from NumPy's _wrap_header_guess_version for these headers:
  // 21817 dimensions still fit version 1.0 (header length 0xfff6, data at
  // 65536), 21818 need version 2.0 (header length 65588, data at 65600).
  struct {
    size_t dims;
    char major;
    std::string length_field;
    size_t data_offset;
  } cases[] = {{21817, 1, bytes("\xf6\xff"), 65536}, {21818, 2, bytes("\x34\x00\x01\x00"), 65600}};
  for (const auto& c : cases) {
    INFO(c.dims);
    shape_type shape(c.dims, 1);
    const float value = 2.5f;
    REQUIRE_FALSE(write_npy<float>(path, shape, span<const float>{&value, 1}));
    auto file = read_file(path);
    REQUIRE(file.size() == c.data_offset + 4);
    CHECK(file.substr(0, 8) == bytes("\x93NUMPY") + c.major + '\0');
    CHECK(file.substr(8, c.length_field.size()) == c.length_field);
    auto dict_start = 8 + c.length_field.size();
    std::string tuple = "(";
    for (size_t i = 0; i < c.dims; ++i)
      tuple += i == 0 ? "1" : ", 1";
    auto dict = "{'descr': '<f4', 'fortran_order': False, 'shape': " + tuple + "), }";
    CHECK(file.substr(dict_start, dict.size()) == dict);
    auto padding = c.data_offset - 1 - dict_start - dict.size();
    CHECK(file.substr(dict_start + dict.size(), padding + 1) == std::string(padding, ' ') + "\n");
    auto back = read_npy_exact<float>(path);
    REQUIRE(back);
    CHECK(back->shape == shape);
    CHECK(back->values == std::vector<float>{value});
  }
}

TEST_CASE("npy: headers in the forms NumPy and other writers use are accepted", "[npy]") {
  temp_dir dir;
  const std::string data = bytes("\x01\x00\x00\x00\x02\x00\x00\x00");
  // Older NumPy padded to 16 bytes and wrote no spare spaces.
  CHECK(read_valid(dir,
                   bytes("\x93NUMPY\x01\x00\x46\x00") +
                       "{'descr': '<i4', 'fortran_order': False, 'shape': (2,), }            \n" +
                       data)
            .shape == shape_type{2});
  for (const char* dict : {"{\"descr\": \"<i4\", \"fortran_order\": False, \"shape\": (2,)}",
                           "{'shape': (2, ), 'fortran_order': False, 'descr': '=i4'}",
                           " {\n 'descr' :'<i4' ,\t'fortran_order':False,'shape':(2,),\r\n}  ",
                           "{'descr': '<i4', 'fortran_order': False, 'shape': (1, 2,), }"}) {
    INFO(dict);
    auto array = read_valid(dir, npy_bytes(dict, data));
    CHECK(array.type == dtype::int32);
    CHECK(array.num_elements() == 2);
    CHECK(values<int32_t>(array) == std::vector<int32_t>{1, 2});
  }
  // No final newline at all (numpy accepts that too).
  auto unterminated = npy_bytes("{'descr': '|u1', 'fortran_order': False, 'shape': ()}");
  unterminated.pop_back();
  --unterminated[8];
  CHECK(values<int>(read_valid(dir, unterminated + "x")) == std::vector<int>{'x'});
  for (const char* descr : {"<u1", ">u1", "=u1", "|u1"})
    CHECK(read_valid(dir, npy_bytes(std::string{"{'descr': '"} + descr +
                                        "', 'fortran_order': False, 'shape': (1,), }",
                                    "a"))
              .type == dtype::uint8);
}

TEST_CASE("npy: read_npy_exact reads into a vector of the element type", "[npy]") {
  temp_dir dir;
  write_file(dir.file("lp.npy"), f4_3);
  auto lp = read_npy_exact<float>(dir.file("lp.npy"));
  REQUIRE(lp);
  CHECK(lp->shape == shape_type{3});
  CHECK(lp->values == std::vector<float>{1.5f, -2.0f, 3.25f});
  write_file(dir.file("u4.npy"), u4_2x2);
  auto u4 = read_npy_exact<uint32_t>(dir.file("u4.npy"));
  REQUIRE(u4);
  CHECK(u4->values == std::vector<uint32_t>{1, 2, 3, 4000000000u});
  auto wrong = read_npy_exact<double>(dir.file("lp.npy"));
  REQUIRE_FALSE(wrong);
  CHECK(wrong.error() == errc::invalid_input);
  CHECK(sprintrt::error_message(wrong.error()) ==
        "npy file '" + dir.file("lp.npy") + "': has dtype float32, expected float64");
  auto missing = read_npy_exact<float>(dir.file("missing.npy"));
  REQUIRE_FALSE(missing);
  CHECK(missing.error() == errc::io_error);
}

TEST_CASE("npy: values_as converts integers with range checks", "[npy]") {
  auto i64 = make_array(dtype::int64, {3},
                        bytes("\x05\0\0\0\0\0\0\0\xfd\xff\xff\xff\xff\xff\xff\xff"
                              "\0\0\0\0\x01\0\0\0"));
  CHECK(values<int64_t>(i64) == std::vector<int64_t>{5, -3, 1ll << 32});
  CHECK(conversion_error<uint32_t>(i64) ==
        "element 1 of the int64 array is -3, which does not fit in uint32");
  CHECK(conversion_error<uint64_t>(i64) ==
        "element 1 of the int64 array is -3, which does not fit in uint64");
  i64 = make_array(dtype::int64, {3},
                   bytes("\x05\0\0\0\0\0\0\0\x07\0\0\0\0\0\0\0\0\0\0\0\x01\0\0\0"));
  CHECK(conversion_error<int32_t>(i64) ==
        "element 2 of the int64 array is 4294967296, which does not fit in int32");
  auto u4 = make_array(dtype::uint32, {2}, bytes("\x01\0\0\0\0\x28\x6b\xee"));
  CHECK(values<uint32_t>(u4) == std::vector<uint32_t>{1, 4000000000u});
  CHECK(values<int64_t>(u4) == std::vector<int64_t>{1, 4000000000});
  CHECK(conversion_error<int32_t>(u4) ==
        "element 1 of the uint32 array is 4000000000, which does not fit in int32");
  auto u1 = make_array(dtype::uint8, {2, 1}, bytes("\x7f\x80"));
  CHECK(values<int8_t>(make_array(dtype::uint8, {1}, bytes("\x7f"))) == std::vector<int8_t>{127});
  CHECK(conversion_error<int8_t>(u1) ==
        "element 1 of the uint8 array is 128, which does not fit in int8");
  auto i4 = make_array(dtype::int32, {2}, bytes("\xff\xff\xff\x7f\xff\xff\xff\xff"));
  CHECK(values<int64_t>(i4) == std::vector<int64_t>{2147483647, -1});
  CHECK(conversion_error<uint16_t>(i4) ==
        "element 0 of the int32 array is 2147483647, which does not fit in uint16");
}

TEST_CASE("npy: values_as refuses conversions between integers and floats", "[npy]") {
  auto f4 = make_array(dtype::float32, {1}, bytes("\0\0\xc0?"));
  CHECK(values<float>(f4) == std::vector<float>{1.5f});
  CHECK(values<double>(f4) == std::vector<double>{1.5});
  CHECK(conversion_error<int32_t>(f4) == "the float32 array cannot be read as int32 values: no "
                                         "conversion between integers and floating point is done");
  auto f8 = make_array(dtype::float64, {1}, bytes("\0\0\0\0\0\0\xf8?"));
  CHECK(values<double>(f8) == std::vector<double>{1.5});
  CHECK(conversion_error<float>(f8) ==
        "the float64 array cannot be read as float32 values: that would round them");
  auto i8 = make_array(dtype::int64, {1}, bytes("\x01\0\0\0\0\0\0\0"));
  CHECK(conversion_error<double>(i8) == "the int64 array cannot be read as float64 values: no "
                                        "conversion between integers and floating point is done");
  auto short_data = make_array(dtype::int32, {2}, bytes("\x01\0\0\0"));
  CHECK(conversion_error<int32_t>(short_data) ==
        "the int32 array of shape (2,) has 4 bytes of data, which does not match its shape");
}
