// Files that are not valid .npy input: each error says what is wrong.

#include "tools/sprintrt/npy_file.hpp"

#include <catch2/catch.hpp>

#include <cstddef>
#include <string>
#include <unistd.h>
#include <vector>

#include "tests/tools/sprintrt/npy_test_support.hpp"

using sprintrt::byte_span;
using sprintrt::span;
using namespace npy_test;

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
