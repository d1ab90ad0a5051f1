#pragma once

/// @file
/// What the npy tests share: files NumPy wrote (as bytes), and helpers that
/// write a file, read it back and return the array or the error message.

#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "process/temp_directory.hpp"
#include "tools/sprintrt/npy_file.hpp"

namespace npy_test {

using sprintrt::errc;
using sprintrt::protocol::dtype;
using namespace sprintrt::cli;

using shape_type = std::vector<size_t>;

/// A fresh directory that is removed with everything in it.
struct temp_dir {
  sprintrt::process::temp_directory dir = make_directory();
  std::string path = dir.path();

  static sprintrt::process::temp_directory make_directory() {
    auto made = sprintrt::process::temp_directory::make("npy_test");
    if (!made)
      FAIL(sprintrt::render(made.error()));
    return std::move(*made);
  }

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
inline std::string bytes(const char (&literal)[N]) {
  return std::string(literal, N - 1);
}

inline void write_file(const std::string& path, const std::string& content) {
  std::ofstream out{path, std::ios::binary};
  out << content;
  REQUIRE(out.good());
}

inline bool starts_with(const std::string& text, const std::string& prefix) {
  return text.compare(0, prefix.size(), prefix) == 0;
}

inline bool ends_with(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

inline std::string read_file(const std::string& path) {
  std::ifstream in{path, std::ios::binary};
  return {std::istreambuf_iterator<char>{in}, std::istreambuf_iterator<char>{}};
}

/// A version 1.0 npy file with the header `dict` (not padded) and `data`.
inline std::string npy_bytes(const std::string& dict, const std::string& data = "") {
  std::string header = dict + "\n";
  return bytes("\x93NUMPY\x01") + '\0' + static_cast<char>(header.size() & 0xff) +
         static_cast<char>(header.size() >> 8) + header + data;
}

/// Reads `content` from a file and returns the array, which must be valid.
inline npy_array read_valid(const temp_dir& dir, const std::string& content) {
  write_file(dir.file("in.npy"), content);
  auto array = read_npy(dir.file("in.npy"));
  if (!array)
    FAIL(sprintrt::render(array.error()));
  return std::move(*array);
}

/// The message of the error that reading `content` gives, without the
/// "npy file '<path>': " prefix (checked too).
inline std::string read_error(const temp_dir& dir, const std::string& content,
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
inline std::string header_error(const std::string& dict) {
  temp_dir dir;
  auto message = read_error(dir, npy_bytes(dict));
  const std::string prefix = "header is not parseable: ";
  REQUIRE(starts_with(message, prefix));
  auto end = message.find(" in header \"");
  REQUIRE(end != std::string::npos);
  return message.substr(prefix.size(), end - prefix.size());
}

template <class T>
inline std::vector<T> values(const npy_array& array) {
  auto result = values_as<T>(array);
  if (!result)
    FAIL(sprintrt::render(result.error()));
  return *result;
}

template <class T>
inline std::string conversion_error(const npy_array& array) {
  auto result = values_as<T>(array);
  REQUIRE_FALSE(result);
  CHECK(result.error() == errc::invalid_input);
  return sprintrt::error_message(result.error());
}

inline npy_array make_array(dtype type, shape_type shape, std::string data) {
  npy_array array{type, std::move(shape), {}};
  for (char c : data)
    array.data.push_back(static_cast<std::byte>(c));
  return array;
}

// Files and headers written by NumPy 1.24.2 with numpy.save(f, array) or, for
// version=..., numpy.lib.format.write_array(f, array, version=...). Generated
// once with /usr/bin/python3; the tests do not need Python.
// numpy.array([1.5, -2.0, 3.25], dtype='<f4')
inline const std::string f4_3 =
    bytes("\x93NUMPY\x01\x00v\x00{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }         "
          "        "
          "                                           \n\x00\x00\xc0?\x00\x00\x00\xc0\x00\x00P@");
// numpy.array(7, dtype='<i8')
inline const std::string i8_0d =
    bytes("\x93NUMPY\x01\x00v\x00{'descr': '<i8', 'fortran_order': False, 'shape': (), }           "
          "        "
          "                                           \n\x07\x00\x00\x00\x00\x00\x00\x00");
// numpy.zeros((2, 0, 3), '<f8')
inline const std::string f8_empty =
    bytes("\x93NUMPY\x01\x00v\x00{'descr': '<f8', 'fortran_order': False, "
          "'shape': (2, 0, 3), }            "
          "                                           \n");
// numpy.array([0, 255, 7], dtype=numpy.uint8)
inline const std::string u1_3 =
    bytes("\x93NUMPY\x01\x00v\x00{'descr': '|u1', 'fortran_order': False, "
          "'shape': (3,), }                 "
          "                                           \n\x00\xff\x07");
// numpy.array([5, 3], dtype='<i8')
inline const std::string i8_len = bytes(
    "\x93NUMPY\x01\x00v\x00{'descr': '<i8', 'fortran_order': False, 'shape': (2,), }               "
    "  "
    "                                           \n\x05\x00\x00\x00\x00\x00\x00\x00\x03\x00\x00\x00"
    "\x00\x00\x00\x00");
// numpy.array([5, -3], dtype='<i4')
inline const std::string i4_len =
    bytes("\x93NUMPY\x01\x00v\x00{'descr': '<i4', 'fortran_order': False, 'shape': (2,), }         "
          "        "
          "                                           \n\x05\x00\x00\x00\xfd\xff\xff\xff");
// numpy.array([[1, 2], [3, 4000000000]], dtype='<u4')
inline const std::string u4_2x2 = bytes(
    "\x93NUMPY\x01\x00v\x00{'descr': '<u4', 'fortran_order': False, 'shape': (2, 2), }             "
    "  "
    "                                           \n\x01\x00\x00\x00\x02\x00\x00\x00\x03\x00\x00\x00"
    "\x00(k\xee");
// numpy.array([1, -2, 3, 4], dtype='<i4'), version=(2, 0)
inline const std::string i4_v2 =
    bytes("\x93NUMPY\x02\x00t\x00\x00\x00{'descr': '<i4', 'fortran_order': "
          "False, 'shape': (4,), }         "
          "                                                 "
          "\n\x01\x00\x00\x00\xfe\xff\xff\xff\x03\x00\x00"
          "\x00\x04\x00\x00\x00");
// numpy.array([9, 10], dtype='<u4'), version=(3, 0)
inline const std::string u4_v3 =
    bytes("\x93NUMPY\x03\x00t\x00\x00\x00{'descr': '<u4', 'fortran_order': False, 'shape': (2,), } "
          "        "
          "                                                 \n\x09\x00\x00\x00\n\x00\x00\x00");
// numpy.zeros((3, 4), '<f4'), first 128 bytes
inline const std::string f4_3x4_header =
    bytes("\x93NUMPY\x01\x00v\x00{'descr': '<f4', 'fortran_order': "
          "False, 'shape': (3, 4), }               "
          "                                           \n");
// numpy.zeros((2, 3, 4), '<f4'), first 128 bytes
inline const std::string f4_2x3x4_header =
    bytes("\x93NUMPY\x01\x00v\x00{'descr': '<f4', 'fortran_order': "
          "False, 'shape': (2, 3, 4), }            "
          "                                           \n");
// numpy.zeros((1000000, 2), '<f4'), first 128 bytes
inline const std::string f4_1000000x2_header =
    bytes("\x93NUMPY\x01\x00v\x00{'descr': '<f4', 'fortran_order': False, 'shape': (1000000, 2), } "
          "        "
          "                                           \n");
// numpy.zeros((1,) * 13 + (100,), '|u1'), first 192 bytes: the header text
// ends exactly at a multiple of 64, so NumPy pads with 64 more spaces.
inline const std::string u1_14d_header =
    bytes("\x93NUMPY\x01\x00\xb6\x00{'descr': '|u1', "
          "'fortran_order': False, 'shape': (1, 1, 1, 1, 1, 1, 1,"
          " 1, 1, 1, 1, 1, 1, 100), }                                "
          "                                      "
          "              \n");
// numpy.asfortranarray(numpy.zeros((2, 3), '<f4')), first 128 bytes
inline const std::string f4_fortran_header =
    bytes("\x93NUMPY\x01\x00v\x00{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }        "
          "        "
          "                                           \n");

inline const dtype all_dtypes[] = {dtype::float32, dtype::float64, dtype::int32,
                                   dtype::uint32,  dtype::int64,   dtype::uint8};

} // namespace npy_test
