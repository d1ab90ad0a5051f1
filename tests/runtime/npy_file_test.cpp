#include "runtime/npy_file.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <unistd.h>

using sprintrt::byte_span;
using sprintrt::errc;
using sprintrt::span;
using sprintrt::protocol::dtype;
using namespace sprintrt::runtime;

namespace {

using shape_type = std::vector<size_t>;

/// A fresh directory (mkdtemp) that is removed with everything in it.
struct temp_dir {
  std::string path;

  temp_dir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "npy_test.XXXXXX").string();
    REQUIRE(::mkdtemp(pattern.data()) != nullptr);
    path = pattern;
  }

  ~temp_dir() { std::filesystem::remove_all(path); }

  std::string file(const std::string& name) const { return path + "/" + name; }

  /// The names of the files in the directory.
  std::vector<std::string> names() const {
    std::vector<std::string> result;
    for (const auto& entry : std::filesystem::directory_iterator(path))
      result.push_back(entry.path().filename().string());
    std::sort(result.begin(), result.end());
    return result;
  }
};

/// A string literal with its embedded NULs (without the terminating one).
template <size_t N>
std::string bytes(const char (&literal)[N]) {
  return std::string(literal, N - 1);
}

void write_file(const std::string& path, const std::string& content) {
  std::ofstream out{path, std::ios::binary};
  out << content;
  REQUIRE(out.good());
}

bool starts_with(const std::string& text, const std::string& prefix) {
  return text.compare(0, prefix.size(), prefix) == 0;
}

bool ends_with(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string read_file(const std::string& path) {
  std::ifstream in{path, std::ios::binary};
  return {std::istreambuf_iterator<char>{in}, std::istreambuf_iterator<char>{}};
}

/// A version 1.0 npy file with the header `dict` (not padded) and `data`.
std::string npy_bytes(const std::string& dict, const std::string& data = "") {
  std::string header = dict + "\n";
  return bytes("\x93NUMPY\x01") + '\0' + static_cast<char>(header.size() & 0xff) +
         static_cast<char>(header.size() >> 8) + header + data;
}

/// Reads `content` from a file and returns the array, which must be valid.
npy_array read_valid(const temp_dir& dir, const std::string& content) {
  write_file(dir.file("in.npy"), content);
  auto array = read_npy(dir.file("in.npy"));
  if (!array)
    FAIL(sprintrt::render(array.error()));
  return std::move(*array);
}

/// The message of the error that reading `content` gives, without the
/// "npy file '<path>': " prefix (checked too).
std::string read_error(const temp_dir& dir, const std::string& content,
                       errc code = errc::invalid_input) {
  const auto path = dir.file("bad.npy");
  write_file(path, content);
  auto array = read_npy(path);
  REQUIRE_FALSE(array);
  CHECK(array.error() == code);
  auto message = sprintrt::error_message(array.error());
  const auto prefix = "npy file '" + path + "': ";
  REQUIRE(starts_with(message, prefix));
  return message.substr(prefix.size());
}

/// The header-parse error for the header dict `dict`.
std::string header_error(const std::string& dict) {
  temp_dir dir;
  auto message = read_error(dir, npy_bytes(dict));
  const std::string prefix = "header is not parseable: ";
  REQUIRE(starts_with(message, prefix));
  auto end = message.find(" in header \"");
  REQUIRE(end != std::string::npos);
  return message.substr(prefix.size(), end - prefix.size());
}

template <class T>
std::vector<T> values(const npy_array& array) {
  auto result = values_as<T>(array);
  if (!result)
    FAIL(sprintrt::render(result.error()));
  return *result;
}

template <class T>
std::string conversion_error(const npy_array& array) {
  auto result = values_as<T>(array);
  REQUIRE_FALSE(result);
  CHECK(result.error() == errc::invalid_input);
  return sprintrt::error_message(result.error());
}

npy_array make_array(dtype type, shape_type shape, std::string data) {
  npy_array array{type, std::move(shape), {}};
  for (char c : data)
    array.data.push_back(static_cast<std::byte>(c));
  return array;
}

// Files and headers written by NumPy 1.24.2 with numpy.save(f, array) or, for
// version=..., numpy.lib.format.write_array(f, array, version=...). Generated
// once with /usr/bin/python3; the tests do not need Python.
// numpy.array([1.5, -2.0, 3.25], dtype='<f4')
const std::string f4_3 =
    bytes("\x93NUMPY\x01\x00v\x00{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }         "
          "        "
          "                                           \n\x00\x00\xc0?\x00\x00\x00\xc0\x00\x00P@");
// numpy.array(7, dtype='<i8')
const std::string i8_0d =
    bytes("\x93NUMPY\x01\x00v\x00{'descr': '<i8', 'fortran_order': False, 'shape': (), }           "
          "        "
          "                                           \n\x07\x00\x00\x00\x00\x00\x00\x00");
// numpy.zeros((2, 0, 3), '<f8')
const std::string f8_empty = bytes("\x93NUMPY\x01\x00v\x00{'descr': '<f8', 'fortran_order': False, "
                                   "'shape': (2, 0, 3), }            "
                                   "                                           \n");
// numpy.array([0, 255, 7], dtype=numpy.uint8)
const std::string u1_3 = bytes("\x93NUMPY\x01\x00v\x00{'descr': '|u1', 'fortran_order': False, "
                               "'shape': (3,), }                 "
                               "                                           \n\x00\xff\x07");
// numpy.array([5, 3], dtype='<i8')
const std::string i8_len = bytes(
    "\x93NUMPY\x01\x00v\x00{'descr': '<i8', 'fortran_order': False, 'shape': (2,), }               "
    "  "
    "                                           \n\x05\x00\x00\x00\x00\x00\x00\x00\x03\x00\x00\x00"
    "\x00\x00\x00\x00");
// numpy.array([5, -3], dtype='<i4')
const std::string i4_len =
    bytes("\x93NUMPY\x01\x00v\x00{'descr': '<i4', 'fortran_order': False, 'shape': (2,), }         "
          "        "
          "                                           \n\x05\x00\x00\x00\xfd\xff\xff\xff");
// numpy.array([[1, 2], [3, 4000000000]], dtype='<u4')
const std::string u4_2x2 = bytes(
    "\x93NUMPY\x01\x00v\x00{'descr': '<u4', 'fortran_order': False, 'shape': (2, 2), }             "
    "  "
    "                                           \n\x01\x00\x00\x00\x02\x00\x00\x00\x03\x00\x00\x00"
    "\x00(k\xee");
// numpy.array([1, -2, 3, 4], dtype='<i4'), version=(2, 0)
const std::string i4_v2 = bytes("\x93NUMPY\x02\x00t\x00\x00\x00{'descr': '<i4', 'fortran_order': "
                                "False, 'shape': (4,), }         "
                                "                                                 "
                                "\n\x01\x00\x00\x00\xfe\xff\xff\xff\x03\x00\x00"
                                "\x00\x04\x00\x00\x00");
// numpy.array([9, 10], dtype='<u4'), version=(3, 0)
const std::string u4_v3 =
    bytes("\x93NUMPY\x03\x00t\x00\x00\x00{'descr': '<u4', 'fortran_order': False, 'shape': (2,), } "
          "        "
          "                                                 \n\x09\x00\x00\x00\n\x00\x00\x00");
// numpy.zeros((3, 4), '<f4'), first 128 bytes
const std::string f4_3x4_header = bytes("\x93NUMPY\x01\x00v\x00{'descr': '<f4', 'fortran_order': "
                                        "False, 'shape': (3, 4), }               "
                                        "                                           \n");
// numpy.zeros((2, 3, 4), '<f4'), first 128 bytes
const std::string f4_2x3x4_header = bytes("\x93NUMPY\x01\x00v\x00{'descr': '<f4', 'fortran_order': "
                                          "False, 'shape': (2, 3, 4), }            "
                                          "                                           \n");
// numpy.zeros((1000000, 2), '<f4'), first 128 bytes
const std::string f4_1000000x2_header =
    bytes("\x93NUMPY\x01\x00v\x00{'descr': '<f4', 'fortran_order': False, 'shape': (1000000, 2), } "
          "        "
          "                                           \n");
// numpy.zeros((1,) * 13 + (100,), '|u1'), first 192 bytes: the header text
// ends exactly at a multiple of 64, so NumPy pads with 64 more spaces.
const std::string u1_14d_header = bytes("\x93NUMPY\x01\x00\xb6\x00{'descr': '|u1', "
                                        "'fortran_order': False, 'shape': (1, 1, 1, 1, 1, 1, 1,"
                                        " 1, 1, 1, 1, 1, 1, 100), }                                "
                                        "                                      "
                                        "              \n");
// numpy.asfortranarray(numpy.zeros((2, 3), '<f4')), first 128 bytes
const std::string f4_fortran_header =
    bytes("\x93NUMPY\x01\x00v\x00{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }        "
          "        "
          "                                           \n");

const dtype all_dtypes[] = {dtype::float32, dtype::float64, dtype::int32,
                            dtype::uint32,  dtype::int64,   dtype::uint8};

} // namespace

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

TEST_CASE("npy: files that cannot be read are io errors", "[npy]") {
  temp_dir dir;
  auto missing = read_npy(dir.file("missing.npy"));
  REQUIRE_FALSE(missing);
  CHECK(missing.error() == errc::io_error);
  CHECK(sprintrt::error_message(missing.error()) ==
        "npy file '" + dir.file("missing.npy") + "': cannot open: No such file or directory");
  auto directory = read_npy(dir.path);
  REQUIRE_FALSE(directory);
  CHECK(directory.error() == errc::io_error);
  CHECK(sprintrt::error_message(directory.error()) ==
        "npy file '" + dir.path + "': not a regular file");
}

TEST_CASE("npy: the magic string, version and header length are checked", "[npy]") {
  temp_dir dir;
  CHECK(read_error(dir, "") == "not an npy file: it is empty");
  CHECK(read_error(dir, "hello world") ==
        "not an npy file: it starts with \"hello \", not \"\\x93NUMPY\"");
  CHECK(read_error(dir, bytes("PK\x03\x04\x14\x00\x00")) ==
        "not an npy file: it starts with \"PK\\x03\\x04\\x14\\x00\", not \"\\x93NUMPY\" (a zip "
        "archive such as an .npz file?)");
  CHECK(read_error(dir, bytes("\x93NUM")) ==
        "not an npy file: it starts with \"\\x93NUM\", not \"\\x93NUMPY\"");
  CHECK(read_error(dir, bytes("\x93NUMPY\x01")) ==
        "header truncated: the file ends inside the version number");
  CHECK(read_error(dir, bytes("\x93NUMPY\x04\x00\x10\x00")) ==
        "unsupported npy format version 4.0 (supported: 1.0, 2.0, 3.0)");
  CHECK(read_error(dir, bytes("\x93NUMPY\x01\x01\x10\x00")) ==
        "unsupported npy format version 1.1 (supported: 1.0, 2.0, 3.0)");
  CHECK(read_error(dir, bytes("\x93NUMPY\x01\x00v")) ==
        "header truncated: the file ends inside the header length");
  CHECK(read_error(dir, bytes("\x93NUMPY\x02\x00v\x00\x00")) ==
        "header truncated: the file ends inside the header length");
  CHECK(read_error(dir, f4_3.substr(0, 100)) ==
        "header truncated: its length is 118 bytes, but only 90 bytes follow the length field");
  // A 4 GiB header length in a tiny file fails before anything is allocated.
  CHECK(read_error(dir, bytes("\x93NUMPY\x02\x00\xff\xff\xff\xff{}")) ==
        "header truncated: its length is 4294967295 bytes, but only 2 bytes follow the length "
        "field");
}

TEST_CASE("npy: unparseable headers say what is wrong", "[npy]") {
  const std::string d = "'descr': '<f4', ";
  const std::string f = "'fortran_order': False, ";
  const std::string s = "'shape': (3,), ";
  CHECK(header_error("{" + d + f + "}") == "the key 'shape' is missing");
  CHECK(header_error("{" + f + s + "}") == "the key 'descr' is missing");
  CHECK(header_error("{" + d + s + "}") == "the key 'fortran_order' is missing");
  CHECK(header_error("{" + d + f + s + "'align': True}") == "unexpected key 'align'");
  CHECK(header_error("{" + d + f + s + d + "}") == "key 'descr' appears twice");
  CHECK(header_error("{" + d + "'fortran_order': 0, " + s + "}") ==
        "expected True or False as the value of 'fortran_order' at offset 34, found '0'");
  CHECK(header_error("{" + d + f + "'shape': [3], }") ==
        "expected a tuple such as (3, 4) as the value of 'shape' at offset 50, found '['");
  CHECK(header_error("{" + d + f + "'shape': (3), }") ==
        "the shape (3) is an int, not a tuple (a 1-tuple is written (3,))");
  CHECK(header_error("{" + d + f + "'shape': (3 4), }") ==
        "expected ',' or ')' in the shape at offset 53, found '4'");
  CHECK(header_error("{" + d + f + "'shape': (3, -1), }") ==
        "the shape has a negative dimension at offset 54");
  CHECK(header_error("{" + d + f + "'shape': (3, x), }") ==
        "expected a dimension (a non-negative integer) in the shape at offset 54, found 'x'");
  CHECK(header_error("{" + d + f + "'shape': (18446744073709551616,), }") ==
        "the shape dimension 18446744073709551616 does not fit in 64 bits");
  CHECK(header_error("{'descr': [('a', '<f4')], " + f + s + "}") ==
        "structured dtypes (a list as 'descr') are not supported");
  CHECK(header_error("{'descr': '<f\\x34', " + f + s + "}") ==
        "escape sequences in strings are not supported (offset 13)");
  CHECK(header_error("{'descr: '<f4'}") == "expected ':' after the key at offset 10, found '<'");
  CHECK(header_error("{'descr': '<f4, }") == "the string at offset 10 has no closing quote");
  CHECK(header_error("{" + d + f + s + "} x") == "unexpected text after the closing '}'");
  CHECK(header_error("{" + d + f + s) ==
        "expected a quoted key or '}' at offset 57, found the end of the header");
  CHECK(header_error("{" + d + f + "'shape': (3,) 'x'}") ==
        "expected ',' or '}' after a value at offset 55, found '''");
  CHECK(header_error("[]") == "expected the header to start with '{' at offset 0, found '['");
  CHECK(header_error("") ==
        "expected the header to start with '{' at offset 1, found the end of the header");
  // The message quotes the header, escaped and without its padding.
  temp_dir dir;
  CHECK(read_error(dir, npy_bytes("{'d\xe9': 1}    ")) ==
        "header is not parseable: unexpected key 'd\\xe9' in header \"{'d\\xe9': 1}\"");
}

TEST_CASE("npy: unsupported arrays are refused with advice", "[npy]") {
  temp_dir dir;
  CHECK(read_error(dir, f4_fortran_header + std::string(24, '\0')) ==
        "Fortran-order arrays are not supported; save with numpy.ascontiguousarray");
  auto with_descr = [&](const std::string& descr) {
    return read_error(
        dir, npy_bytes("{'descr': '" + descr + "', 'fortran_order': False, 'shape': (1,), }") +
                 std::string(8, '\0'));
  };
  CHECK(with_descr(">f4") ==
        "big-endian dtype '>f4' is not supported; convert with array.astype('<f4')");
  CHECK(with_descr(">i8") ==
        "big-endian dtype '>i8' is not supported; convert with array.astype('<i8')");
  CHECK(with_descr("|f4") == "dtype '|f4' has no byte order ('|'), but its elements have 4 bytes");
  CHECK(with_descr("<f2") == "unsupported dtype '<f2' (supported: <f4, <f8, <i4, <u4, <i8, |u1)");
  CHECK(with_descr("|O") == "unsupported dtype '|O' (supported: <f4, <f8, <i4, <u4, <i8, |u1); "
                            "object arrays hold pickled Python objects");
  CHECK(with_descr("<U5") == "unsupported dtype '<U5' (supported: <f4, <f8, <i4, <u4, <i8, |u1)");
  CHECK(with_descr("f4") == "unsupported dtype 'f4' (supported: <f4, <f8, <i4, <u4, <i8, |u1)");
  CHECK(with_descr("float32") ==
        "unsupported dtype 'float32' (supported: <f4, <f8, <i4, <u4, <i8, |u1)");
}

TEST_CASE("npy: the data must match the shape exactly", "[npy]") {
  temp_dir dir;
  const auto header = npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }");
  CHECK(read_valid(dir, header + std::string(48, 'x')).num_elements() == 12);
  CHECK(read_error(dir, header + std::string(40, 'x')) ==
        "data truncated: expected 48 bytes of data for shape (3, 4) float32, file has 40");
  CHECK(read_error(dir, header) ==
        "data truncated: expected 48 bytes of data for shape (3, 4) float32, file has 0");
  CHECK(read_error(dir, header + std::string(52, 'x')) ==
        "trailing data: expected 48 bytes of data for shape (3, 4) float32, file has 52 (is the "
        "shape in the header wrong?)");
  CHECK(read_error(dir, f8_empty + "x") ==
        "trailing data: expected 0 bytes of data for shape (2, 0, 3) float64, file has 1 (is the "
        "shape in the header wrong?)");
}

TEST_CASE("npy: a huge shape fails on its size, before anything is allocated", "[npy]") {
  temp_dir dir;
  // 2^61 bytes: allocating them would throw std::bad_alloc.
  CHECK(read_error(dir, npy_bytes("{'descr': '|u1', 'fortran_order': False, "
                                  "'shape': (2305843009213693952,), }",
                                  "abc")) ==
        "data truncated: expected 2305843009213693952 bytes of data for shape "
        "(2305843009213693952,) uint8, file has 3");
  CHECK(read_error(dir, npy_bytes("{'descr': '<f8', 'fortran_order': False, "
                                  "'shape': (65536, 65536, 4096), }")) ==
        "data truncated: expected 140737488355328 bytes of data for shape (65536, 65536, 4096) "
        "float64, file has 0");
  CHECK(read_error(dir, npy_bytes("{'descr': '<f4', 'fortran_order': False, "
                                  "'shape': (4611686018427387904, 4), }")) ==
        "shape (4611686018427387904, 4) float32 is too large: its size in bytes does not fit in "
        "64 bits");
  CHECK(read_error(dir, npy_bytes("{'descr': '<f4', 'fortran_order': False, "
                                  "'shape': (4294967296, 4294967296), }")) ==
        "shape (4294967296, 4294967296) float32 is too large: its size in bytes does not fit in "
        "64 bits");
  // A zero extent makes the array empty whatever the other extents are.
  CHECK(read_valid(dir, npy_bytes("{'descr': '<f4', 'fortran_order': False, "
                                  "'shape': (4294967296, 4294967296, 0), }"))
            .num_elements() == 0);
}

TEST_CASE("npy: writing replaces the file atomically and names it in errors", "[npy]") {
  temp_dir dir;
  const auto path = dir.file("out.npy");
  write_file(path, "old contents");
  const std::vector<uint32_t> edges{1, 2, 3};
  REQUIRE_FALSE(write_npy<uint32_t>(path, shape_type{3}, edges));
  auto back = read_npy_exact<uint32_t>(path);
  REQUIRE(back);
  CHECK(back->values == edges);
  CHECK(dir.names() == std::vector<std::string>{"out.npy"});

  auto mismatch = write_npy<uint32_t>(path, shape_type{2, 2}, edges);
  CHECK(mismatch == errc::invalid_input);
  CHECK(sprintrt::error_message(mismatch) ==
        "npy file '" + path +
            "': cannot write shape (2, 2) uint32: it needs 16 bytes of data, got 12");
  auto overflow = write_npy(path, dtype::int64, shape_type{1ull << 62, 2}, byte_span{});
  CHECK(overflow == errc::invalid_input);
  CHECK(sprintrt::error_message(overflow) ==
        "npy file '" + path +
            "': cannot write shape (4611686018427387904, 2) int64: its size overflows 64 bits");
  CHECK(read_npy_exact<uint32_t>(path)->values == edges);

  const auto nowhere = dir.file("no/such/dir/x.npy");
  auto no_dir = write_npy<uint32_t>(nowhere, shape_type{3}, edges);
  CHECK(no_dir == errc::io_error);
  auto message = sprintrt::error_message(no_dir);
  const auto pid = std::to_string(::getpid());
  CHECK(starts_with(message, "npy file '" + nowhere + "': cannot create the temporary file '" +
                                 nowhere + ".tmp." + pid + "."));
  CHECK(ends_with(message, "': No such file or directory"));

  std::filesystem::create_directory(dir.file("sub"));
  auto onto_dir = write_npy<uint32_t>(dir.file("sub"), shape_type{3}, edges);
  CHECK(onto_dir == errc::io_error);
  message = sprintrt::error_message(onto_dir);
  CHECK(starts_with(message, "npy file '" + dir.file("sub") + "': cannot rename '" +
                                 dir.file("sub") + ".tmp." + pid + "."));
  CHECK(ends_with(message, "' to it: Is a directory"));
  CHECK(dir.names() == std::vector<std::string>{"out.npy", "sub"});
}

TEST_CASE("npy: shapes are rendered as NumPy prints them", "[npy]") {
  CHECK(npy_shape_string(shape_type{}) == "()");
  CHECK(npy_shape_string(shape_type{3}) == "(3,)");
  CHECK(npy_shape_string(shape_type{3, 4, 0}) == "(3, 4, 0)");
}
