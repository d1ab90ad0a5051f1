#include "protocol/shared_array.hpp"

#include <catch2/catch.hpp>

#include <string>
#include <variant>

#include "protocol/framing.hpp"
#include "protocol/messages.hpp"
#include "protocol/pickle_reader.hpp"

using namespace sprintrt::protocol;
using sprintrt::errc;
using sprintrt::error_message;

namespace {

/// Writes `write`'s one value as a pickle and reads it back.
template <class Write>
value round_trip(Write&& write) {
  auto buffer = std::make_shared<byte_buffer>();
  pickle_writer writer{*buffer};
  writer.begin();
  write(writer);
  writer.end();
  auto x = read_pickle(std::shared_ptr<const byte_buffer>{buffer});
  REQUIRE(x);
  return *x;
}

value unframe(const byte_buffer& wire) {
  frame_decoder decoder{framing::length_prefixed};
  REQUIRE_FALSE(decoder.feed(wire.bytes()));
  auto msg = decoder.next();
  REQUIRE(msg);
  auto x = read_pickle(std::make_shared<const byte_buffer>(std::move(*msg)));
  REQUIRE(x);
  return *x;
}

/// ("sprintrt_shm", offset, dtype, (rows, cols)) written item by item.
value reference(int64_t offset, std::string dtype, int64_t rows, int64_t cols) {
  return round_trip([&](pickle_writer& w) {
    w.begin_tuple(4);
    w.str(shared_memory_tag);
    w.integer(offset);
    w.str(dtype);
    w.begin_tuple(2);
    w.integer(rows);
    w.integer(cols);
    w.end_tuple(2);
    w.end_tuple(4);
  });
}

} // namespace

TEST_CASE("a reference reads back as written") {
  auto x = round_trip([](pickle_writer& w) { write_shared_array(w, {8192, 1000, 12001}); });
  CHECK(is_shared_array(x));
  auto back = read_shared_array(x, "test", 1000, 12001);
  REQUIRE(back);
  CHECK(back->offset == 8192);
  CHECK(back->rows == 1000);
  CHECK(back->cols == 12001);
  CHECK(back->bytes() == uint64_t{1000} * 12001 * 4);
  // 0 takes any positive extent.
  CHECK(read_shared_array(x, "test", 0, 0));
}

TEST_CASE("a reference that is not exactly what it must be is refused, naming the problem") {
  auto problem = [](const value& x, size_t rows = 3, size_t cols = 4) {
    auto read = read_shared_array(x, "the error signal", rows, cols);
    REQUIRE_FALSE(read);
    CHECK(read.error() == errc::invalid_message);
    CHECK_THAT(error_message(read.error()), Catch::StartsWith("the error signal: "));
    return error_message(read.error());
  };
  CHECK_THAT(problem(reference(-4, "float32", 3, 4)),
             Catch::Contains("offset must be an int >= 0"));
  CHECK_THAT(problem(reference(0, "float64", 3, 4)), Catch::Contains("dtype must be 'float32'"));
  CHECK_THAT(problem(reference(0, "float32", 0, 4)), Catch::Contains("two positive ints"));
  CHECK_THAT(problem(reference(0, "float32", 3, -1)), Catch::Contains("two positive ints"));
  CHECK_THAT(problem(reference(0, "float32", 4, 4)), Catch::Contains("must be (3, 4)"));
  CHECK_THAT(problem(reference(0, "float32", int64_t{1} << 31, 4), 0, 4),
             Catch::Contains("too large"));
  CHECK_THAT(problem(reference(0, "float32", int64_t{1} << 30, int64_t{1} << 30), 0, 0),
             Catch::Contains("too large"));
  auto three = round_trip([](pickle_writer& w) {
    w.begin_tuple(3);
    w.str(shared_memory_tag);
    w.integer(0);
    w.str("float32");
    w.end_tuple(3);
  });
  CHECK_THAT(problem(three), Catch::Contains("must be ('sprintrt_shm'"));
  auto other_tag = round_trip([](pickle_writer& w) {
    w.begin_tuple(1);
    w.str("SharedNumpyArray");
    w.end_tuple(1);
  });
  CHECK_FALSE(is_shared_array(other_tag));
  problem(other_tag);
}

TEST_CASE("a loss command and its reply through the shared region") {
  wire_format format;
  byte_buffer wire;
  REQUIRE_FALSE(encode_loss_command(wire, format, "seg-1", shared_array{4096, 3, 4}));
  auto command = decode_command(unframe(wire));
  REQUIRE(command);
  const auto& loss = std::get<loss_command>(*command);
  CHECK(loss.segment_name == "seg-1");
  CHECK(loss.frames == 3);
  REQUIRE(loss.shared_posteriors);
  CHECK(loss.shared_posteriors->offset == 4096);
  CHECK(loss.shared_posteriors->cols == 4);
  CHECK(loss.log_posteriors.shape.empty());

  byte_buffer reply;
  REQUIRE_FALSE(encode_loss_reply(reply, format, 1.5, shared_array{4096, 3, 4}));
  auto decoded = decode_loss_reply(unframe(reply), 3, 4, true);
  REQUIRE(decoded);
  CHECK(decoded->loss == 1.5);
  REQUIRE(decoded->shared_error_signal);
  CHECK(decoded->shared_error_signal->offset == 4096);

  // The form must be the one the request had.
  auto as_array = decode_loss_reply(unframe(reply), 3, 4, false);
  REQUIRE_FALSE(as_array);
  CHECK(as_array.error() == errc::invalid_message);
  byte_buffer array_reply;
  const float zeros[12] = {};
  REQUIRE_FALSE(encode_loss_reply(array_reply, format, 0.0, 3, 4, zeros));
  auto not_shared = decode_loss_reply(unframe(array_reply), 3, 4, true);
  REQUIRE_FALSE(not_shared);
  CHECK_THAT(error_message(not_shared.error()), Catch::Contains("('sprintrt_shm', offset"));
  // A reference of another shape is no answer to this request.
  byte_buffer wrong;
  REQUIRE_FALSE(encode_loss_reply(wrong, format, 0.0, shared_array{4096, 4, 4}));
  CHECK_FALSE(decode_loss_reply(unframe(wrong), 3, 4, true));
}

TEST_CASE("a command's reference must have seg_len rows") {
  auto command = round_trip([](pickle_writer& w) {
    w.begin_tuple(4);
    w.str(loss_command_name);
    w.str("seg-1");
    w.integer(5);
    write_shared_array(w, {0, 3, 4});
    w.end_tuple(4);
  });
  auto decoded = decode_command(command);
  REQUIRE_FALSE(decoded);
  CHECK_THAT(error_message(decoded.error()),
             Catch::Contains("get_loss_and_error_signal for 'seg-1': log_posteriors") &&
                 Catch::Contains("must be (5, D)"));
}

TEST_CASE("an init reply accepts the region with a fourth item, and nothing else there") {
  wire_format format;
  byte_buffer plain;
  REQUIRE_FALSE(encode_init_reply(plain, format, "sprint-sim"));
  auto three = decode_init_reply(unframe(plain));
  REQUIRE(three);
  CHECK_FALSE(three->shared_memory);

  byte_buffer accepting;
  REQUIRE_FALSE(encode_init_reply(accepting, format, "sprint-sim", protocol_version, true));
  auto four = decode_init_reply(unframe(accepting));
  REQUIRE(four);
  CHECK(four->shared_memory);
  CHECK(four->child_name == "sprint-sim");
  CHECK(four->version == protocol_version);

  auto other = round_trip([](pickle_writer& w) {
    w.begin_tuple(4);
    w.str("ok");
    w.str("child");
    w.integer(1);
    w.str("EnableAutoNumpySharedMemPickling");
    w.end_tuple(4);
  });
  auto refused = decode_init_reply(other);
  REQUIRE_FALSE(refused);
  CHECK_THAT(error_message(refused.error()),
             Catch::Contains("a fourth item must be 'sprintrt_shm'"));
}
