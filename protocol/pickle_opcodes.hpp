#pragma once

/// @file
/// The pickle opcodes sprintrt understands, and how far each instruction
/// extends. Both the reader (which executes instructions) and the scanner
/// (which only finds where a pickle ends, for raw framing) measure
/// instructions here, so the two can never disagree about a message's extent.

#include <cstddef>
#include <cstdint>

#include "common/span.hpp"
#include "sprintrt/error.hpp"

namespace sprintrt::protocol {

/// Opcode bytes, named as in CPython's `pickle.py`.
namespace op {
constexpr uint8_t proto = 0x80;
constexpr uint8_t frame = 0x95;
constexpr uint8_t stop = '.';
constexpr uint8_t mark = '(';
constexpr uint8_t pop = '0';
constexpr uint8_t pop_mark = '1';
constexpr uint8_t memoize = 0x94;
constexpr uint8_t put = 'p';
constexpr uint8_t binput = 'q';
constexpr uint8_t long_binput = 'r';
constexpr uint8_t get = 'g';
constexpr uint8_t binget = 'h';
constexpr uint8_t long_binget = 'j';
constexpr uint8_t none = 'N';
constexpr uint8_t newtrue = 0x88;
constexpr uint8_t newfalse = 0x89;
constexpr uint8_t binint = 'J';
constexpr uint8_t binint1 = 'K';
constexpr uint8_t binint2 = 'M';
constexpr uint8_t long1 = 0x8a;
constexpr uint8_t int_ = 'I';
constexpr uint8_t binfloat = 'G';
constexpr uint8_t short_binunicode = 0x8c;
constexpr uint8_t binunicode = 'X';
constexpr uint8_t binunicode8 = 0x8d;
constexpr uint8_t short_binbytes = 'C';
constexpr uint8_t binbytes = 'B';
constexpr uint8_t binbytes8 = 0x8e;
constexpr uint8_t bytearray8 = 0x96;
constexpr uint8_t empty_tuple = ')';
constexpr uint8_t tuple = 't';
constexpr uint8_t tuple1 = 0x85;
constexpr uint8_t tuple2 = 0x86;
constexpr uint8_t tuple3 = 0x87;
constexpr uint8_t empty_list = ']';
constexpr uint8_t list = 'l';
constexpr uint8_t append = 'a';
constexpr uint8_t appends = 'e';
constexpr uint8_t empty_dict = '}';
constexpr uint8_t dict = 'd';
constexpr uint8_t setitem = 's';
constexpr uint8_t setitems = 'u';
constexpr uint8_t global = 'c';
constexpr uint8_t stack_global = 0x93;
constexpr uint8_t reduce = 'R';
constexpr uint8_t build = 'b';
} // namespace op

/// How an opcode's argument is laid out after the opcode byte.
enum class arg_format : uint8_t {
  /// No argument.
  none,
  /// A fixed number of bytes (`opcode_info::fixed_size`).
  fixed,
  /// A 1-, 4- or 8-byte little-endian unsigned length, then that many bytes.
  length1,
  length4,
  length8,
  /// One line of ASCII text ending in '\n' (PUT, GET, INT).
  line,
  /// Two such lines (GLOBAL: module, then name).
  two_lines,
};

/// What sprintrt knows about one opcode.
struct opcode_info {
  uint8_t code;
  /// CPython's name, e.g. "BINUNICODE".
  const char* name;
  arg_format format;
  /// The argument size for `arg_format::fixed`.
  uint8_t fixed_size;
};

/// Returns the opcode `code`, or null if sprintrt does not accept it.
const opcode_info* find_opcode(uint8_t code) noexcept;

/// The longest text line (INT, PUT, GET, each GLOBAL line) we accept. Real
/// lines are a few dozen characters; the limit stops a peer from making us
/// buffer a "line" forever.
constexpr size_t max_line_length = 256;

/// One instruction of a pickle, measured but not executed.
struct instruction {
  /// The opcode.
  const opcode_info* op = nullptr;
  /// The offset of the opcode byte in the message.
  size_t offset = 0;
  /// Whether the whole instruction is present. When false, only `op`,
  /// `offset` and `needed` are meaningful.
  bool complete = false;
  /// The argument bytes (for line formats: without the final newline; for
  /// `two_lines`: both lines including the newline between them).
  byte_span arg;
  /// The offset just after the instruction.
  size_t end = 0;
  /// For an incomplete instruction: its total size if already known, else 0.
  size_t needed = 0;
};

/// Measures the instruction starting at `offset` (which must be less than
/// `data.size()`). Fails with `protocol_error` for an unknown opcode or a
/// line longer than `max_line_length`, and with `message_too_large` for a
/// declared length that would make the message exceed `max_message_size`.
/// An instruction that runs past the end of `data` is returned incomplete.
caf::expected<instruction> measure_instruction(byte_span data, size_t offset,
                                               size_t max_message_size);

/// Formats an opcode byte for messages: the name if known, else "0x99".
std::string describe_opcode(uint8_t code);

} // namespace sprintrt::protocol
