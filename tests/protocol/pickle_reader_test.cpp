#include "protocol/pickle_reader.hpp"

#include <catch2/catch.hpp>

#include <string>

#include "protocol/ndarray_access.hpp"
#include "tests/support/golden_vectors.hpp"

using namespace sprintrt::protocol;
using sprintrt::errc;
using sprintrt::render;
using sprintrt::test::bytes;
using sprintrt::test::bytes_of;
using sprintrt::test::concat;
using sprintrt::test::encode_bomb;
using kind = value::kind;

namespace {

std::vector<std::byte> from_hex(std::string_view hex) {
  std::vector<std::byte> result;
  for (size_t i = 0; i + 1 < hex.size(); i += 2)
    result.push_back(static_cast<std::byte>(std::stoi(std::string{hex.substr(i, 2)}, nullptr, 16)));
  return result;
}

caf::expected<value> read(const std::vector<std::byte>& message) {
  return read_pickle(bytes_of(message));
}

/// Expects decoding to fail with `code` and a message containing `text`.
void check_error(const std::vector<std::byte>& message, errc code, const std::string& text) {
  auto x = read(message);
  REQUIRE_FALSE(x);
  INFO(render(x.error()));
  CHECK(x.error() == code);
  CHECK(render(x.error()).find(text) != std::string::npos);
}

/// The object CPython pickled below, at protocols 2 to 5:
/// (1, -2, 300, 70000, -70000, 2**40, -2**63, 'aä', b'xy', None, True, False,
///  2.5, [1, 'x'], {'k': 3, 'j': [None]}, (), ((1,),))
value python_object() {
  return value::tuple({
      value::integer(1),
      value::integer(-2),
      value::integer(300),
      value::integer(70000),
      value::integer(-70000),
      value::integer(int64_t{1} << 40),
      value::integer(std::numeric_limits<int64_t>::min()),
      value::str("a\xc3\xa4"),
      value::bytes(bytes_ref::copy_of("xy")),
      value{},
      value::boolean(true),
      value::boolean(false),
      value::floating(2.5),
      value::list({value::integer(1), value::str("x")}),
      value::dict(
          {{value::str("k"), value::integer(3)}, {value::str("j"), value::list({value{}})}}),
      value::tuple({}),
      value::tuple({value::tuple({value::integer(1)})}),
  });
}

// Written by CPython 3.11's pure-Python pickler (pickle._Pickler), as RETURNN does.
const char* python_pickles[] = {
    // protocol 2: bytes as _codecs.encode(str, 'latin1'), BINPUT memo
    "8002284b014afeffffff4d2c014a701101004a90eefeff8a060000000000018a080000000000000080580300000061"
    "c3"
    "a47100635f636f646563730a656e636f64650a710158020000007879710258060000006c6174696e31710386710452"
    "71054e88894740040000000000005d7106284b015801000000787107657d71082858010000006b71094b0358010000"
    "006a710a5d710b4e6175294b0185710c85710d74710e2e",
    // protocol 3: BINBYTES
    "8003284b014afeffffff4d2c014a701101004a90eefeff8a060000000000018a080000000000000080580300000061"
    "c3"
    "a471004302787971014e88894740040000000000005d7102284b015801000000787103657d71042858010000006b71"
    "054b0358010000006a71065d71074e6175294b0185710885710974710a2e",
    // protocol 4: FRAME, SHORT_BINUNICODE, MEMOIZE
    "8004956400000000000000284b014afeffffff4d2c014a701101004a90eefeff8a060000000000018a080000000000"
    "00"
    "00808c0361c3a49443027879944e88894740040000000000005d94284b018c017894657d94288c016b944b038c016a"
    "94"
    "5d944e6175294b018594859474942e",
    // protocol 5
    "8005956400000000000000284b014afeffffff4d2c014a701101004a90eefeff8a060000000000018a080000000000"
    "00"
    "00808c0361c3a49443027879944e88894740040000000000005d94284b018c017894657d94288c016b944b038c016a"
    "94"
    "5d944e6175294b018594859474942e",
};

} // namespace

TEST_CASE("CPython's pickles of every supported type decode at protocols 2 to 5") {
  for (const char* hex : python_pickles) {
    auto x = read(from_hex(hex));
    INFO(hex);
    REQUIRE(x);
    CHECK(*x == python_object());
  }
}

TEST_CASE("protocol 0 text opcodes INT and PUT decode") {
  // pickle.dumps((1, True), protocol=0)
  auto x = read(bytes("(I1\nI01\ntp0\n."));
  REQUIRE(x);
  CHECK(*x == value::tuple({value::integer(1), value::boolean(true)}));
}

TEST_CASE("b'' at protocol 2 is a call of __builtin__.bytes()") {
  auto x = read(from_hex("8002635f5f6275696c74696e5f5f0a62797465730a7100295271012e"));
  REQUIRE(x);
  CHECK(*x == value::bytes(bytes_ref{}));
}

TEST_CASE("a memoized list is shared, as in Python") {
  // l = [1]; pickle.dumps((l, l), protocol=4)
  auto x = read(from_hex("8004950a000000000000005d944b0161680086942e"));
  REQUIRE(x);
  auto expected_list = value::list({value::integer(1)});
  CHECK(*x == value::tuple({expected_list, expected_list}));
}

TEST_CASE("decoding a span copies array data out of the message") {
  const auto& v = sprintrt::test::golden("c2p_loss_reply");
  auto message = v.pickle();
  auto x = read_pickle(message);
  REQUIRE(x);
  const auto& a = x->as_items()[2].as_ndarray();
  CHECK(a.data.owned());
  bool inside = a.data.data() >= message.data() && a.data.data() < message.data() + message.size();
  CHECK_FALSE(inside);
  CHECK(element<float>(a, 0) == Approx(-0.3579701781272888));
}

TEST_CASE("decoding a shared buffer shares it instead of copying") {
  const auto& v = sprintrt::test::golden("c2p_loss_reply");
  auto buffer = std::make_shared<byte_buffer>();
  buffer->append(v.pickle());
  const std::byte* first = buffer->data();
  {
    auto x = read_pickle(std::shared_ptr<const byte_buffer>{buffer});
    REQUIRE(x);
    const auto& a = x->as_items()[2].as_ndarray();
    CHECK(a.data.data() >= first);
    CHECK(a.data.data() + a.data.size() <= first + buffer->size());
    CHECK(buffer.use_count() == 2); // the array's share
    CHECK(element<float>(a, 0) == Approx(-0.3579701781272888));
  }
  // Without values referring to it, the buffer is ours again (to recycle).
  CHECK(buffer.use_count() == 1);
}

TEST_CASE("LONG1 covers the whole int64 range and rejects wider integers") {
  auto long1 = [](std::vector<std::byte> payload) {
    auto n = static_cast<int>(payload.size());
    return concat({bytes({0x80, 2, 0x8a, n}), payload, bytes({'.'})});
  };
  auto check_value = [&](std::vector<std::byte> payload, int64_t expected) {
    auto x = read(long1(std::move(payload)));
    REQUIRE(x);
    CHECK(x->as_int() == expected);
  };
  check_value({}, 0);
  check_value(bytes({0xff}), -1);
  check_value(bytes({0x80, 0x00}), 128);
  check_value(bytes({0, 0, 0, 0, 0, 0, 0, 0x80}), std::numeric_limits<int64_t>::min());
  check_value(bytes({0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f}),
              std::numeric_limits<int64_t>::max());
  // Nine bytes that are only sign extension still fit.
  check_value(bytes({0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, 0x00}),
              std::numeric_limits<int64_t>::max());
  check_error(long1(bytes({0, 0, 0, 0, 0, 0, 0, 0, 1})), errc::protocol_error,
              "does not fit in 64 bits");
  check_error(long1(bytes({0, 0, 0, 0, 0, 0, 0, 0x80, 0})), errc::protocol_error,
              "does not fit in 64 bits");
}

TEST_CASE("numpy scalars and dtypes decode through the whitelisted globals") {
  const auto& v = sprintrt::test::golden("c2p_loss_reply_np_float32");
  auto x = read_pickle(v.pickle());
  REQUIRE(x);
  const auto& loss = x->as_items()[1];
  REQUIRE(loss.is(kind::numpy_scalar));
  CHECK(loss.as_numpy_scalar().type == dtype::float32);
  CHECK(loss.as_numpy_scalar().to_double() == 2.5);
}

TEST_CASE("globals outside the whitelist are refused with name and offset") {
  check_error(concat({bytes({0x80, 2}), bytes("cos\nsystem\n"), bytes({')', 'R', '.'})}),
              errc::protocol_error, "GLOBAL at offset 2: global 'os system' is not allowed");
  check_error(concat({bytes({0x80, 4, 0x8c, 8}), bytes("builtins"), bytes({0x8c, 4}), bytes("eval"),
                      bytes({0x93, '.'})}),
              errc::protocol_error, "STACK_GLOBAL at offset 18: global 'builtins eval'");
  // A whitelisted module with another name is still refused.
  check_error(concat({bytes({0x80, 2}), bytes("cnumpy\nload\n"), bytes({'.'})}),
              errc::protocol_error, "'numpy load' is not allowed");
  // RETURNN's shared-memory arrays, with the reason.
  check_error(concat({bytes({0x80, 2}), bytes("creturnn.util.task_system\nSharedNumpyArray\n"),
                      bytes({'.'})}),
              errc::protocol_error,
              "'returnn.util.task_system SharedNumpyArray' is not allowed: sprintrt reads no "
              "RETURNN shared-memory arrays");
}

TEST_CASE("unknown opcodes are named with their offset") {
  check_error(bytes({0x80, 2, 'N', 0xff, '.'}), errc::protocol_error,
              "unknown opcode 0xff at offset 3");
  // Legitimate CPython opcodes outside our subset are refused, too.
  check_error(bytes({0x80, 2, 'S', '\'', 'a', '\'', '\n', '.'}), errc::protocol_error,
              "unknown opcode 0x53 at offset 2");
}

TEST_CASE("bad memo indices are errors") {
  check_error(bytes({0x80, 2, 'h', 5, '.'}), errc::protocol_error,
              "BINGET at offset 2: memo index 5 was never stored");
  check_error(bytes({0x80, 2, 'j', 1, 0, 0, 0, '.'}), errc::protocol_error,
              "LONG_BINGET at offset 2: memo index 1 was never stored");
  check_error(bytes("g-1\n."), errc::protocol_error, "GET at offset 0: memo index -1");
  check_error(bytes({0x80, 2, 0x94, '.'}), errc::protocol_error, "nothing on the stack");
}

TEST_CASE("counts larger than the rest of the message are truncation, not allocation") {
  // BINBYTES claiming 4 GiB - 16 bytes in a 12-byte message.
  check_error(bytes({0x80, 3, 'B', 0xf0, 0xff, 0xff, 0xff, 'a', 'b', 'c', '.'}), errc::truncated,
              "BINBYTES at offset 2: needs 4294967285 bytes, 9 left");
  check_error(bytes({0x80, 4, 0x8d, 0, 0, 0, 0, 0, 0, 0, 0x40, '.'}), errc::truncated,
              "BINUNICODE8 at offset 2");
  check_error(bytes({0x80, 4, 0x95, 0xff, 0, 0, 0, 0, 0, 0, 0, 'N', '.'}), errc::truncated,
              "FRAME at offset 2: frame of 255 bytes, 2 left");
  check_error(bytes({0x80, 2, 'N'}), errc::truncated, "without STOP");
}

TEST_CASE("array shapes must match their data exactly, without overflow") {
  auto array_pickle = [](std::vector<std::byte> shape_ops) {
    return concat({bytes({0x80, 2}),
                   bytes("creturnn.util.task_system\nmake_numpy_ndarray_fromstring\n"),
                   bytes({'C', 8, 0, 0, 0, 0, 0, 0, 0, 0}), bytes({'X', 7, 0, 0, 0}),
                   bytes("float32"), shape_ops, bytes({0x87, 'R', '.'})});
  };
  auto ok = read(array_pickle(bytes({'K', 2, 0x85})));
  REQUIRE(ok);
  CHECK(ok->as_ndarray().shape == std::vector<size_t>{2});
  check_error(array_pickle(bytes({'K', 3, 0x85})), errc::protocol_error,
              "does not match its 8 data bytes");
  // 2**62 * 2**62 elements would overflow a naive product to 0.
  auto huge = bytes({0x8a, 8, 0, 0, 0, 0, 0, 0, 0, 0x40});
  check_error(array_pickle(concat({huge, huge, bytes({0x86})})), errc::protocol_error,
              "does not match its 8 data bytes");
  check_error(array_pickle(bytes({'J', 0xff, 0xff, 0xff, 0xff, 0x85})), errc::protocol_error,
              "is not a tuple of non-negative ints");
}

TEST_CASE("calls are checked for their arguments") {
  auto scalar_call = [](std::vector<std::byte> raw) {
    return concat({bytes({0x80, 2}), bytes("cnumpy.core.multiarray\nscalar\ncnumpy\ndtype\n"),
                   bytes({'X', 2, 0, 0, 0}), bytes("f4"), bytes({0x89, 0x88, 0x87, 'R'}),
                   bytes({'(',  'K',  3,    'X',  1,   0,    0,    0,    '>',  'N', 'N', 'N', 'J',
                          0xff, 0xff, 0xff, 0xff, 'J', 0xff, 0xff, 0xff, 0xff, 'K', 0,   't', 'b'}),
                   raw, bytes({0x86, 'R', '.'})});
  };
  check_error(scalar_call(bytes({'C', 4, 0, 0, 0x20, 0x40})), errc::protocol_error,
              "byte order '>'");
  check_error(bytes({0x80, 2,   'c', '_', 'c',  'o', 'd', 'e', 'c',  's', '\n', 'e', 'n',
                     'c',  'o', 'd', 'e', '\n', 'X', 1,   0,   0,    0,   'a',  'X', 5,
                     0,    0,   0,   'u', 't',  'f', '-', '8', 0x86, 'R', '.'}),
              errc::protocol_error, "only latin1 is allowed");
  check_error(bytes({0x80, 2, 'N', ')', 'R', '.'}), errc::protocol_error,
              "REDUCE at offset 4: cannot call a NoneType");
  check_error(bytes({0x80, 2, 'N', 'N', 'b', '.'}), errc::protocol_error,
              "BUILD is only supported on numpy.dtype");
}

TEST_CASE("stack discipline is enforced") {
  check_error(bytes({0x80, 2, 0x85, '.'}), errc::protocol_error,
              "TUPLE1 at offset 2: needs 1 value(s) on the stack, found 0");
  // A MARK hides what is below it, as in CPython.
  check_error(bytes({0x80, 2, 'N', '(', 0x85, '.'}), errc::protocol_error, "found 0");
  check_error(bytes({0x80, 2, 't', '.'}), errc::protocol_error, "no MARK");
  check_error(bytes({0x80, 2, 'N', 'N', '.'}), errc::protocol_error, "holds 2 values");
  check_error(bytes({0x80, 2, '(', 'N', '.'}), errc::protocol_error, "MARK without matching");
  check_error(bytes({0x80, 2, 'N', '.', 'N'}), errc::protocol_error,
              "1 trailing byte(s) after STOP");
  check_error(bytes({0x80, 2, 'N', 'a', '.'}), errc::protocol_error, "needs 2 value(s)");
  check_error(bytes({0x80, 2, 'N', 'N', 'a', '.'}), errc::protocol_error,
              "cannot append to a NoneType");
  check_error(bytes({0x80, 9, 'N', '.'}), errc::protocol_error, "unsupported pickle protocol 9");
  // POP removes the value, or the mark when nothing is above it.
  auto x = read(bytes({0x80, 2, '(', '0', 'K', 7, '0', 'K', 8, '.'}));
  REQUIRE(x);
  CHECK(x->as_int() == 8);
}

TEST_CASE("recursive and overly deep structures are refused") {
  // l = []; l.append(l)
  check_error(bytes({0x80, 2, ']', 'q', 0, 'h', 0, 'a', '.'}), errc::protocol_error,
              "appending to a list that is already nested, or to itself");
  // 65 nested lists, each appended into its parent after completion.
  std::vector<std::byte> deep = bytes({0x80, 2});
  for (int i = 0; i < 65; ++i)
    deep.push_back(std::byte{']'});
  for (int i = 0; i < 64; ++i)
    deep.push_back(std::byte{'a'});
  deep.push_back(std::byte{'.'});
  check_error(deep, errc::protocol_error, "nested deeper than 64");
  // 64 levels are fine.
  std::vector<std::byte> ok = bytes({0x80, 2});
  for (int i = 0; i < 64; ++i)
    ok.push_back(std::byte{']'});
  for (int i = 0; i < 63; ++i)
    ok.push_back(std::byte{'a'});
  ok.push_back(std::byte{'.'});
  auto x = read(ok);
  REQUIRE(x);
  CHECK(x->depth() == 64);
}

TEST_CASE("strings must be UTF-8 and lines must be short") {
  check_error(bytes({0x80, 2, 'X', 1, 0, 0, 0, 0xff, '.'}), errc::protocol_error,
              "BINUNICODE at offset 2: string is not valid UTF-8");
  std::vector<std::byte> long_line = bytes("I");
  for (int i = 0; i < 300; ++i)
    long_line.push_back(std::byte{'1'});
  check_error(long_line, errc::protocol_error, "line longer than 256 bytes");
  check_error(bytes("I12x\n."), errc::protocol_error, "'12x' is not a 64-bit decimal integer");
}

TEST_CASE("sharing cannot make a short pickle denote an exponentially large value") {
  // t0 = (); t(i+1) = (t(i), t(i)) through the memo: 60 levels in ~250 bytes
  // would be 2^60 values to compare, print or convert.
  std::vector<std::byte> msg = bytes({0x80, 4, ')', 0x94});
  for (int i = 0; i < 60; ++i) {
    msg.push_back(std::byte{'h'});
    msg.push_back(static_cast<std::byte>(i));
    msg.push_back(std::byte{'h'});
    msg.push_back(static_cast<std::byte>(i));
    msg.push_back(std::byte{0x86});
    msg.push_back(std::byte{0x94});
  }
  msg.push_back(std::byte{'.'});
  check_error(msg, errc::protocol_error, "the value would expand to more than");
  // A few levels of honest sharing are fine.
  std::vector<std::byte> small = bytes({0x80, 4, ')', 0x94, '0', 'h', 0, 'h', 0, 0x86, '.'});
  auto x = read(small);
  REQUIRE(x);
  CHECK(x->tree_size() == 3);
}

TEST_CASE("strings made into bytes again and again cannot outgrow the message") {
  // 64 KiB of text encoded 40 times would hold 2.5 MB from a 64 KiB message
  // (the 1 MiB x 3000 version of this asked for 3 GB).
  check_error(encode_bomb(64 * 1024, 40), errc::protocol_error,
              "bytes of strings, twice the message");
  // Encoding it once is what a protocol-2 pickle of bytes does.
  auto once = read(encode_bomb(64 * 1024, 1));
  REQUIRE(once);
  REQUIRE(once->as_items().size() == 1);
  CHECK(once->as_items()[0].as_bytes().size() == 64 * 1024);
}

TEST_CASE("dict keys must be scalars, and duplicates replace in place") {
  // {(): 1}
  check_error(bytes({0x80, 2, '}', '(', ')', 'K', 1, 'u', '.'}), errc::protocol_error,
              "a dict key must be None, bool, int, float, str or bytes, not tuple");
  // {'a': 1, 'b': 2, 'a': 3} -> {'a': 3, 'b': 2}
  auto x = read(bytes({0x80, 2,   '}', '(',  0x8c, 1,   'a', 'K', 1,   0x8c, 1,
                       'b',  'K', 2,   0x8c, 1,    'a', 'K', 3,   'u', '.'}));
  REQUIRE(x);
  REQUIRE(x->as_dict().size() == 2);
  CHECK(x->as_dict()[0].first.as_str() == "a");
  CHECK(x->as_dict()[0].second.as_int() == 3);
  CHECK(x->as_dict()[1].second.as_int() == 2);
  CHECK(x->tree_size() == 5);
}
