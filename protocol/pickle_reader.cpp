#include "protocol/pickle_reader.hpp"
#include "protocol/pickle_repr.hpp"

#include <charconv>
#include <cstring>
#include <limits>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/little_endian.hpp"
#include "protocol/pickle_globals.hpp"
#include "protocol/pickle_opcodes.hpp"
#include "protocol/utf8.hpp"

namespace sprintrt::protocol {

namespace {

std::string_view as_text(byte_span bytes) noexcept {
  return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
}

/// The pickle virtual machine: a stack of values, a stack of marks and a memo,
/// executing one instruction at a time. Mirrors CPython's `_Unpickler`,
/// restricted to building values.
class pickle_machine {
public:
  /// Decodes `message`; byte strings share `owner` if given, else are copied.
  pickle_machine(byte_span message, std::shared_ptr<const void> owner)
      : message_(message), owner_(std::move(owner)) {}

  caf::expected<value> run() {
    size_t offset = 0;
    while (offset < message_.size()) {
      auto instr = measure_instruction(message_, offset, std::numeric_limits<size_t>::max());
      if (!instr)
        return std::move(instr.error());
      instr_ = *instr;
      if (!instr_.complete)
        return fail_truncated();
      if (instr_.op->code == op::stop)
        return finish();
      if (auto err = execute())
        return err;
      offset = instr_.end;
    }
    return make_error(errc::truncated, "message ends at offset " + std::to_string(message_.size()) +
                                           " without STOP");
  }

private:
  // -- error helpers ----------------------------------------------------------

  /// An error naming the current opcode and its offset.
  caf::error fail(const std::string& what, errc code = errc::protocol_error) const {
    return make_error(code, std::string{instr_.op->name} + " at offset " +
                                std::to_string(instr_.offset) + ": " + what);
  }

  /// Puts the current opcode and offset in front of an error's message.
  caf::error located(const caf::error& err) const {
    return with_context(
        std::string{instr_.op->name} + " at offset " + std::to_string(instr_.offset), err);
  }

  caf::error fail_truncated() const {
    std::string what = instr_.needed > 0
                           ? "needs " + std::to_string(instr_.needed) + " bytes, " +
                                 std::to_string(message_.size() - instr_.offset) + " left"
                           : "argument cut off by the end of the message";
    return fail(what, errc::truncated);
  }

  // -- stack helpers ----------------------------------------------------------

  /// The number of values above the innermost mark (CPython keeps the part
  /// below a mark out of reach until POP_MARK, and so do we).
  size_t reachable() const noexcept { return stack_.size() - (marks_.empty() ? 0 : marks_.back()); }

  /// Checks that `n` values are reachable.
  caf::error require(size_t n) const {
    if (reachable() < n)
      return fail("needs " + std::to_string(n) + " value(s) on the stack, found " +
                  std::to_string(reachable()));
    return {};
  }

  value pop() {
    auto x = std::move(stack_.back());
    stack_.pop_back();
    return x;
  }

  /// Pops every value above the innermost mark, and the mark.
  caf::expected<value::items> pop_mark() {
    if (marks_.empty())
      return fail("no MARK on the stack");
    size_t begin = marks_.back();
    marks_.pop_back();
    value::items xs(std::make_move_iterator(stack_.begin() + static_cast<ptrdiff_t>(begin)),
                    std::make_move_iterator(stack_.end()));
    stack_.resize(begin);
    return xs;
  }

  /// Checks a container against the limits that keep walks over the result
  /// bounded: nesting depth, and the size of the tree it denotes (sharing
  /// through the memo could otherwise make a few hundred bytes denote 2^60
  /// values).
  caf::error check_limits(const value& x) const {
    if (x.depth() > value::max_depth)
      return fail("containers nested deeper than " + std::to_string(value::max_depth));
    if (x.tree_size() > max_tree_size())
      return fail("the value would expand to more than " + std::to_string(max_tree_size()) +
                  " objects (shared objects referenced too often)");
    return {};
  }

  /// Every reference to an object costs at least one byte of pickle, unless
  /// it repeats a shared container; twice the message size leaves room for
  /// the sharing real pickles do.
  size_t max_tree_size() const noexcept { return 2 * message_.size() + 64; }

  /// The most bytes of strings and byte strings the values of a message may
  /// hold: every one made from an opcode's argument costs its size (at most
  /// the message in all), and so does every one a call makes (_codecs.encode
  /// of a latin-1 string is no longer than the string's UTF-8 in the
  /// message). Twice the message, plus room for tiny messages, keeps real
  /// pickles far inside the bound and stops one that encodes the same
  /// memoized string a thousand times (1 MB of pickle asking for 3 GB).
  size_t max_materialized() const noexcept { return 2 * message_.size() + 4096; }

  /// Counts `n` more bytes of strings or byte strings that a value holds.
  caf::error materialize(size_t n) {
    materialized_ += n;
    if (materialized_ > max_materialized())
      return fail("the values would hold more than " + std::to_string(max_materialized()) +
                  " bytes of strings, twice the message (a string made into bytes too often)");
    return {};
  }

  /// Pushes a container after checking the limits.
  caf::error push_container(value x) {
    if (auto err = check_limits(x))
      return err;
    stack_.push_back(std::move(x));
    return {};
  }

  caf::error push(value x) {
    stack_.push_back(std::move(x));
    return {};
  }

  // -- argument decoding ------------------------------------------------------

  caf::expected<std::string> utf8_argument() {
    auto text = as_text(instr_.arg);
    if (auto err = materialize(text.size()))
      return err;
    if (!is_valid_utf8(text))
      return fail("string is not valid UTF-8");
    return std::string{text};
  }

  /// Parses a decimal line argument (INT, PUT, GET).
  caf::expected<int64_t> decimal_argument() const {
    auto text = as_text(instr_.arg);
    if (!text.empty() && text.front() == '+')
      text.remove_prefix(1);
    int64_t x = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), x);
    if (ec != std::errc{} || end != text.data() + text.size())
      return fail("'" + std::string{as_text(instr_.arg)} + "' is not a 64-bit decimal integer");
    return x;
  }

  /// LONG1: a little-endian two's complement integer of 0 to 255 bytes.
  caf::expected<int64_t> long_argument() const {
    auto bytes = instr_.arg;
    if (bytes.empty())
      return int64_t{0};
    bool negative = (std::to_integer<uint8_t>(bytes[bytes.size() - 1]) & 0x80) != 0;
    // Bytes beyond the eighth must be pure sign extension.
    for (size_t i = 8; i < bytes.size(); ++i)
      if (std::to_integer<uint8_t>(bytes[i]) != (negative ? 0xff : 0x00))
        return fail("integer does not fit in 64 bits");
    size_t n = bytes.size() < 8 ? bytes.size() : 8;
    uint64_t x = read_le(bytes.subspan(0, n));
    if (n < 8 && negative)
      x |= ~uint64_t{0} << (8 * n);
    if (n == 8 && bytes.size() > 8 && ((x >> 63) != 0) != negative)
      return fail("integer does not fit in 64 bits");
    return static_cast<int64_t>(x);
  }

  // -- memo -------------------------------------------------------------------

  caf::error memo_put(int64_t index) {
    if (stack_.empty() || reachable() == 0)
      return fail("nothing on the stack to memoize");
    if (index < 0 || index > std::numeric_limits<uint32_t>::max())
      return fail("memo index " + std::to_string(index) + " out of range");
    memo_[static_cast<uint32_t>(index)] = stack_.back();
    return {};
  }

  caf::error memo_get(int64_t index) {
    auto i = memo_.end();
    if (index >= 0 && index <= std::numeric_limits<uint32_t>::max())
      i = memo_.find(static_cast<uint32_t>(index));
    if (i == memo_.end())
      return fail("memo index " + std::to_string(index) + " was never stored");
    return push(i->second);
  }

  // -- execution --------------------------------------------------------------

  caf::expected<value> finish() {
    if (instr_.end != message_.size())
      return fail(std::to_string(message_.size() - instr_.end) + " trailing byte(s) after STOP");
    if (!marks_.empty())
      return fail("MARK without matching TUPLE/LIST/DICT/APPENDS/SETITEMS");
    if (stack_.size() != 1)
      return fail("the stack holds " + std::to_string(stack_.size()) + " values, expected 1");
    return pop();
  }

  caf::error execute() {
    switch (instr_.op->code) {
    case op::proto: {
      auto version = std::to_integer<int>(instr_.arg[0]);
      if (version < 2 || version > 5)
        return fail("unsupported pickle protocol " + std::to_string(version));
      return {};
    }
    case op::frame: {
      // Frames only group instructions for buffered reading; the whole
      // message is in memory, so we just check the declared size fits.
      auto size = read_le(instr_.arg);
      if (size > message_.size() - instr_.end)
        return fail("frame of " + std::to_string(size) + " bytes, " +
                        std::to_string(message_.size() - instr_.end) + " left",
                    errc::truncated);
      return {};
    }
    case op::mark:
      marks_.push_back(stack_.size());
      return {};
    case op::pop:
      if (reachable() > 0) {
        stack_.pop_back();
        return {};
      }
      if (!marks_.empty()) {
        marks_.pop_back();
        return {};
      }
      return fail("the stack is empty");
    case op::pop_mark:
      if (auto xs = pop_mark(); !xs)
        return xs.error();
      return {};
    case op::memoize:
      return memo_put(static_cast<int64_t>(memo_.size()));
    case op::put:
    case op::get: {
      auto index = decimal_argument();
      if (!index)
        return index.error();
      return instr_.op->code == op::put ? memo_put(*index) : memo_get(*index);
    }
    case op::binput:
    case op::long_binput:
      return memo_put(static_cast<int64_t>(read_le(instr_.arg)));
    case op::binget:
    case op::long_binget:
      return memo_get(static_cast<int64_t>(read_le(instr_.arg)));
    case op::none:
      return push(value{});
    case op::newtrue:
      return push(value::boolean(true));
    case op::newfalse:
      return push(value::boolean(false));
    case op::binint:
      return push(value::integer(static_cast<int32_t>(read_le(instr_.arg))));
    case op::binint1:
    case op::binint2:
      return push(value::integer(static_cast<int64_t>(read_le(instr_.arg))));
    case op::long1: {
      auto x = long_argument();
      if (!x)
        return x.error();
      return push(value::integer(*x));
    }
    case op::int_: {
      // Protocol 0's booleans are "I01" and "I00".
      auto text = as_text(instr_.arg);
      if (text == "01" || text == "00")
        return push(value::boolean(text == "01"));
      auto x = decimal_argument();
      if (!x)
        return x.error();
      return push(value::integer(*x));
    }
    case op::binfloat: {
      // Big-endian IEEE 754 double.
      uint64_t bits = 0;
      for (size_t i = 0; i < 8; ++i)
        bits = (bits << 8) | std::to_integer<uint64_t>(instr_.arg[i]);
      double x;
      std::memcpy(&x, &bits, sizeof(x));
      return push(value::floating(x));
    }
    case op::short_binunicode:
    case op::binunicode:
    case op::binunicode8: {
      auto text = utf8_argument();
      if (!text)
        return text.error();
      return push(value::str(std::move(*text)));
    }
    case op::short_binbytes:
    case op::binbytes:
    case op::binbytes8:
    case op::bytearray8:
      if (auto err = materialize(instr_.arg.size()))
        return err;
      if (owner_)
        return push(value::bytes(bytes_ref::shared(instr_.arg, owner_)));
      return push(value::bytes(
          bytes_ref::own(std::vector<std::byte>(instr_.arg.begin(), instr_.arg.end()))));
    case op::empty_tuple:
      return push(value::tuple({}));
    case op::tuple: {
      auto xs = pop_mark();
      if (!xs)
        return xs.error();
      return push_container(value::tuple(std::move(*xs)));
    }
    case op::tuple1:
    case op::tuple2:
    case op::tuple3: {
      size_t n = instr_.op->code - op::tuple1 + 1;
      if (auto err = require(n))
        return err;
      value::items xs(std::make_move_iterator(stack_.end() - static_cast<ptrdiff_t>(n)),
                      std::make_move_iterator(stack_.end()));
      stack_.resize(stack_.size() - n);
      return push_container(value::tuple(std::move(xs)));
    }
    case op::empty_list:
      return push(value::list({}));
    case op::list: {
      auto xs = pop_mark();
      if (!xs)
        return xs.error();
      return push_container(value::list(std::move(*xs)));
    }
    case op::empty_dict:
      return push(value::dict({}));
    case op::dict: {
      auto xs = pop_mark();
      if (!xs)
        return xs.error();
      if (xs->size() % 2 != 0)
        return fail("odd number of items for a dict");
      stack_.push_back(value::dict({}));
      return set_items_of_top(std::move(*xs));
    }
    case op::append: {
      if (auto err = require(2))
        return err;
      auto x = pop();
      return append_to_top({std::move(x)});
    }
    case op::appends: {
      auto xs = pop_mark();
      if (!xs)
        return xs.error();
      return append_to_top(std::move(*xs));
    }
    case op::setitem: {
      if (auto err = require(3))
        return err;
      auto x = pop();
      auto key = pop();
      return set_items_of_top({std::move(key), std::move(x)});
    }
    case op::setitems: {
      auto xs = pop_mark();
      if (!xs)
        return xs.error();
      if (xs->size() % 2 != 0)
        return fail("odd number of items for SETITEMS");
      return set_items_of_top(std::move(*xs));
    }
    case op::global: {
      auto text = as_text(instr_.arg);
      auto nl = text.find('\n');
      return push_global(text.substr(0, nl), text.substr(nl + 1));
    }
    case op::stack_global: {
      if (auto err = require(2))
        return err;
      auto name = pop();
      auto module = pop();
      if (!module.is(value::kind::str) || !name.is(value::kind::str))
        return fail("module and name must be strings");
      return push_global(module.as_str(), name.as_str());
    }
    case op::reduce: {
      if (auto err = require(2))
        return err;
      auto args = pop();
      auto fn = pop();
      if (!fn.is(value::kind::global))
        return fail("cannot call a " + std::string{to_string(fn.type())});
      if (!args.is(value::kind::tuple))
        return fail("call arguments must be a tuple, got " + repr(args));
      auto result = call_global(fn.as_global(), args.as_items());
      if (!result)
        return located(result.error());
      // Only _codecs.encode makes new bytes; arrays share their bytes.
      if (fn.as_global() == callable::codecs_encode)
        if (auto err = materialize(result->as_bytes().size()))
          return err;
      return push(std::move(*result));
    }
    case op::build: {
      if (auto err = require(2))
        return err;
      auto state = pop();
      if (!stack_.back().is(value::kind::numpy_dtype))
        return fail("BUILD is only supported on numpy.dtype, not on " + repr(stack_.back()));
      return located(build_numpy_dtype(state));
    }
    default:
      return fail("opcode not executable here");
    }
  }

  caf::error push_global(std::string_view module, std::string_view name) {
    auto fn = resolve_global(module, name);
    if (!fn && name == "SharedNumpyArray")
      // RETURNN's own shared memory: a SysV segment any process of the user
      // could change, named by the child. Refused; our own children use the
      // region sprintrt makes (docs/protocol.md section 7).
      return fail("global '" + std::string{module} + " " + std::string{name} +
                  "' is not allowed: sprintrt reads no RETURNN shared-memory arrays "
                  "(EnableAutoNumpySharedMemPickling is never enabled; sprintrt's own children "
                  "share memory through its region, option sharedMemory)");
    if (!fn)
      return fail("global '" + std::string{module} + " " + std::string{name} + "' is not allowed");
    return push(value::global(*fn));
  }

  caf::error append_to_top(value::items xs) {
    if (auto err = require(1))
      return err;
    auto& target = stack_.back();
    if (!target.is(value::kind::list))
      return fail("cannot append to a " + std::string{to_string(target.type())});
    for (auto& x : xs)
      if (!target.append(std::move(x)))
        return fail("appending to a list that is already nested, or to itself");
    return check_limits(target);
  }

  caf::error set_items_of_top(value::items xs) {
    if (auto err = require(1))
      return err;
    auto& target = stack_.back();
    if (!target.is(value::kind::dict))
      return fail("cannot set items of a " + std::string{to_string(target.type())});
    for (size_t i = 0; i < xs.size(); i += 2) {
      if (!xs[i].is_scalar_key())
        return fail("a dict key must be None, bool, int, float, str or bytes, not " +
                    std::string{to_string(xs[i].type())});
      if (!target.set_item(std::move(xs[i]), std::move(xs[i + 1])))
        return fail("setting items of a dict that is already nested, or to itself");
    }
    return check_limits(target);
  }

  byte_span message_;
  std::shared_ptr<const void> owner_;
  instruction instr_;
  std::vector<value> stack_;
  std::vector<size_t> marks_;
  std::unordered_map<uint32_t, value> memo_;
  /// Bytes of strings and byte strings made so far (see `materialize`).
  size_t materialized_ = 0;
};

} // namespace

caf::expected<value> read_pickle(byte_span message) {
  return pickle_machine{message, nullptr}.run();
}

caf::expected<value> read_pickle(std::shared_ptr<const byte_buffer> message) {
  auto bytes = message->bytes();
  return pickle_machine{bytes, std::move(message)}.run();
}

} // namespace sprintrt::protocol
