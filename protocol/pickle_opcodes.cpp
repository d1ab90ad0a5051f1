#include "protocol/pickle_opcodes.hpp"

#include <array>
#include <cstring>
#include <string>

#include "common/little_endian.hpp"

namespace sprintrt::protocol {

namespace {

// clang-format off
constexpr std::array<opcode_info, 46> opcodes{{
  {op::proto,            "PROTO",            arg_format::fixed,     1},
  {op::frame,            "FRAME",            arg_format::fixed,     8},
  {op::stop,             "STOP",             arg_format::none,      0},
  {op::mark,             "MARK",             arg_format::none,      0},
  {op::pop,              "POP",              arg_format::none,      0},
  {op::pop_mark,         "POP_MARK",         arg_format::none,      0},
  {op::memoize,          "MEMOIZE",          arg_format::none,      0},
  {op::put,              "PUT",              arg_format::line,      0},
  {op::binput,           "BINPUT",           arg_format::fixed,     1},
  {op::long_binput,      "LONG_BINPUT",      arg_format::fixed,     4},
  {op::get,              "GET",              arg_format::line,      0},
  {op::binget,           "BINGET",           arg_format::fixed,     1},
  {op::long_binget,      "LONG_BINGET",      arg_format::fixed,     4},
  {op::none,             "NONE",             arg_format::none,      0},
  {op::newtrue,          "NEWTRUE",          arg_format::none,      0},
  {op::newfalse,         "NEWFALSE",         arg_format::none,      0},
  {op::binint,           "BININT",           arg_format::fixed,     4},
  {op::binint1,          "BININT1",          arg_format::fixed,     1},
  {op::binint2,          "BININT2",          arg_format::fixed,     2},
  {op::long1,            "LONG1",            arg_format::length1,   0},
  {op::int_,             "INT",              arg_format::line,      0},
  {op::binfloat,         "BINFLOAT",         arg_format::fixed,     8},
  {op::short_binunicode, "SHORT_BINUNICODE", arg_format::length1,   0},
  {op::binunicode,       "BINUNICODE",       arg_format::length4,   0},
  {op::binunicode8,      "BINUNICODE8",      arg_format::length8,   0},
  {op::short_binbytes,   "SHORT_BINBYTES",   arg_format::length1,   0},
  {op::binbytes,         "BINBYTES",         arg_format::length4,   0},
  {op::binbytes8,        "BINBYTES8",        arg_format::length8,   0},
  {op::bytearray8,       "BYTEARRAY8",       arg_format::length8,   0},
  {op::empty_tuple,      "EMPTY_TUPLE",      arg_format::none,      0},
  {op::tuple,            "TUPLE",            arg_format::none,      0},
  {op::tuple1,           "TUPLE1",           arg_format::none,      0},
  {op::tuple2,           "TUPLE2",           arg_format::none,      0},
  {op::tuple3,           "TUPLE3",           arg_format::none,      0},
  {op::empty_list,       "EMPTY_LIST",       arg_format::none,      0},
  {op::list,             "LIST",             arg_format::none,      0},
  {op::append,           "APPEND",           arg_format::none,      0},
  {op::appends,          "APPENDS",          arg_format::none,      0},
  {op::empty_dict,       "EMPTY_DICT",       arg_format::none,      0},
  {op::dict,             "DICT",             arg_format::none,      0},
  {op::setitem,          "SETITEM",          arg_format::none,      0},
  {op::setitems,         "SETITEMS",         arg_format::none,      0},
  {op::global,           "GLOBAL",           arg_format::two_lines, 0},
  {op::stack_global,     "STACK_GLOBAL",     arg_format::none,      0},
  {op::reduce,           "REDUCE",           arg_format::none,      0},
  {op::build,            "BUILD",            arg_format::none,      0},
}};
// clang-format on

// A too-large std::array would silently add zero entries: opcode 0x00, no name.
static_assert([] {
  for (const auto& info : opcodes)
    if (info.name == nullptr)
      return false;
  return true;
}());

/// A 256-entry lookup table from opcode byte to its info (or null).
struct opcode_table {
  std::array<const opcode_info*, 256> by_code{};
  opcode_table() {
    for (const auto& info : opcodes)
      by_code[info.code] = &info;
  }
};

/// Finds the newline ending a line that starts at `from`; npos if absent.
size_t find_newline(byte_span data, size_t from) noexcept {
  const void* nl = std::memchr(data.data() + from, '\n', data.size() - from);
  return nl == nullptr ? std::string::npos
                       : static_cast<size_t>(static_cast<const std::byte*>(nl) - data.data());
}

} // namespace

const opcode_info* find_opcode(uint8_t code) noexcept {
  static const opcode_table table;
  return table.by_code[code];
}

std::string describe_opcode(uint8_t code) {
  if (auto info = find_opcode(code))
    return info->name;
  static constexpr char hex[] = "0123456789abcdef";
  return std::string{"opcode 0x"} + hex[code >> 4] + hex[code & 0xf];
}

caf::expected<instruction> measure_instruction(byte_span data, size_t offset,
                                               size_t max_message_size) {
  auto code = std::to_integer<uint8_t>(data[offset]);
  auto info = find_opcode(code);
  if (info == nullptr)
    return make_error(errc::protocol_error,
                      "unknown " + describe_opcode(code) + " at offset " + std::to_string(offset));
  instruction result;
  result.op = info;
  result.offset = offset;
  size_t arg_begin = offset + 1;
  size_t available = data.size() - arg_begin;
  // Sets the argument when `size` bytes are present, else marks incomplete.
  auto take = [&](uint64_t size) -> caf::expected<instruction> {
    if (arg_begin > max_message_size || size > max_message_size - arg_begin)
      return make_error(errc::message_too_large, std::string{info->name} + " at offset " +
                                                     std::to_string(offset) + " declares " +
                                                     std::to_string(size) +
                                                     " bytes, more than the maximum message size " +
                                                     std::to_string(max_message_size));
    result.needed = arg_begin + size - offset;
    if (size > available)
      return result;
    result.complete = true;
    result.arg = data.subspan(arg_begin, size);
    result.end = arg_begin + size;
    return result;
  };
  // Sets the argument to `lines` newline-terminated lines if present.
  auto take_lines = [&](int lines) -> caf::expected<instruction> {
    size_t pos = arg_begin;
    for (int i = 0; i < lines; ++i) {
      size_t nl = find_newline(data, pos);
      size_t line_length = (nl == std::string::npos ? data.size() : nl) - pos;
      if (line_length > max_line_length)
        return make_error(errc::protocol_error, std::string{info->name} + " at offset " +
                                                    std::to_string(offset) + ": line longer than " +
                                                    std::to_string(max_line_length) + " bytes");
      if (nl == std::string::npos)
        return result;
      pos = nl + 1;
    }
    result.complete = true;
    result.arg = data.subspan(arg_begin, pos - 1 - arg_begin);
    result.end = pos;
    return result;
  };
  // Reads an n-byte length prefix, then takes that many bytes.
  auto take_prefixed = [&](size_t prefix_size) -> caf::expected<instruction> {
    if (available < prefix_size)
      return result;
    uint64_t size = read_le(data.subspan(arg_begin, prefix_size));
    arg_begin += prefix_size;
    available -= prefix_size;
    return take(size);
  };
  switch (info->format) {
  case arg_format::none:
    return take(0);
  case arg_format::fixed:
    return take(info->fixed_size);
  case arg_format::length1:
    return take_prefixed(1);
  case arg_format::length4:
    return take_prefixed(4);
  case arg_format::length8:
    return take_prefixed(8);
  case arg_format::line:
    return take_lines(1);
  case arg_format::two_lines:
    return take_lines(2);
  }
  return make_error(errc::protocol_error, "unreachable argument format");
}

} // namespace sprintrt::protocol
