#include "protocol/messages.hpp"

#include <catch2/catch.hpp>

#include <cmath>

#include "protocol/ndarray_access.hpp"
#include "protocol/pickle_reader.hpp"
#include "tests/support/golden_vectors.hpp"
#include "tools/sprintrt/value_json.hpp"

using namespace sprintrt::protocol;
using sprintrt::errc;
using sprintrt::error_message;
using sprintrt::render;
using sprintrt::cli::from_json;
using sprintrt::cli::to_json;
using sprintrt::test::golden;

namespace {

/// Takes the single framed message in `wire` out of its frame and decodes it.
value unframe(const byte_buffer& wire, framing f) {
  frame_decoder decoder{f};
  REQUIRE_FALSE(decoder.feed(wire.bytes()));
  auto msg = decoder.next();
  REQUIRE(msg);
  REQUIRE_FALSE(decoder.next());
  auto x = read_pickle(std::make_shared<const byte_buffer>(std::move(*msg)));
  REQUIRE(x);
  return *x;
}

value golden_value(const std::string& name) {
  auto x = read_pickle(golden(name).pickle());
  REQUIRE(x);
  return *x;
}

/// The golden posteriors: seg-1's log_posteriors[3, 4] from p2c_loss_request.
std::vector<float> golden_posteriors() {
  auto cmd = decode_command(golden_value("p2c_loss_request"));
  REQUIRE(cmd);
  const auto& lp = std::get<loss_command>(*cmd).log_posteriors;
  std::vector<float> result(lp.num_elements());
  REQUIRE(copy_rows(lp, result.data(), lp.shape[1]));
  return result;
}

std::string error_text(const caf::error& err) {
  return render(err);
}

} // namespace

TEST_CASE("the golden commands decode to typed commands") {
  auto init = decode_command(golden_value("p2c_init"));
  REQUIRE(init);
  CHECK(std::get<init_command>(*init).client_name == "SprintSubprocessInstance");
  CHECK(std::get<init_command>(*init).version == 1);
  for (auto name :
       {"p2c_loss_request", "p2c_loss_request_np_int32_len", "legacy_p2c_loss_request"}) {
    INFO(name);
    auto cmd = decode_command(golden_value(name));
    REQUIRE(cmd);
    const auto& loss = std::get<loss_command>(*cmd);
    CHECK(loss.segment_name == "corpus/rec/seg-1");
    CHECK(loss.frames == 3);
    CHECK(loss.log_posteriors.shape == std::vector<size_t>{3, 4});
    CHECK(element<float>(loss.log_posteriors, 0) == Approx(-3.7735252380371094));
  }
  // An older parent sent the segment name as bytes.
  auto bytes_name = decode_command(golden_value("p2c_loss_request_bytes_name"));
  REQUIRE(bytes_name);
  CHECK(std::get<loss_command>(*bytes_name).segment_name == "corpus/rec/seg-2");
  auto fsa = decode_command(golden_value("p2c_fsa_request"));
  REQUIRE(fsa);
  CHECK(std::get<fsa_command>(*fsa).text == "corpus/rec/seg-1");
  CHECK(std::get<fsa_command>(*fsa).source == sprintrt::fsa_source::segment_name);
  auto by_orthography = decode_command(golden_value("p2c_fsa_by_orthography_request"));
  REQUIRE(by_orthography);
  CHECK(std::get<fsa_command>(*by_orthography).text == "1 2");
  CHECK(std::get<fsa_command>(*by_orthography).source == sprintrt::fsa_source::orthography);
  auto exit = decode_command(golden_value("p2c_exit"));
  REQUIRE(exit);
  CHECK(std::holds_alternative<exit_command>(*exit));
}

TEST_CASE("our commands decode to the same values as the golden ones") {
  auto lp = golden_posteriors();
  for (auto f : {framing::length_prefixed, framing::raw}) {
    wire_format fmt{f};
    byte_buffer wire;
    REQUIRE_FALSE(encode_init_command(wire, fmt));
    CHECK(unframe(wire, f) == golden_value("p2c_init"));
    wire.clear();
    REQUIRE_FALSE(encode_loss_command(wire, fmt, "corpus/rec/seg-1", 3, 4, lp.data(), 4));
    CHECK(unframe(wire, f) == golden_value("p2c_loss_request"));
    wire.clear();
    REQUIRE_FALSE(encode_fsa_command(wire, fmt, "corpus/rec/seg-1"));
    CHECK(unframe(wire, f) == golden_value("p2c_fsa_request"));
    wire.clear();
    REQUIRE_FALSE(encode_fsa_command(wire, fmt, "1 2", sprintrt::fsa_source::orthography));
    CHECK(unframe(wire, f) == golden_value("p2c_fsa_by_orthography_request"));
    wire.clear();
    REQUIRE_FALSE(encode_exit_command(wire, fmt));
    CHECK(unframe(wire, f) == golden_value("p2c_exit"));
  }
}

TEST_CASE("a segment of a time-major batch is sent from its strided rows") {
  // Batch [T=3, B=2, D=4]: segment b=1 holds golden_posteriors, b=0 junk.
  auto lp = golden_posteriors();
  std::vector<float> batch(3 * 2 * 4, 99.0f);
  for (size_t t = 0; t < 3; ++t)
    for (size_t d = 0; d < 4; ++d)
      batch[(t * 2 + 1) * 4 + d] = lp[t * 4 + d];
  byte_buffer wire;
  REQUIRE_FALSE(encode_loss_command(wire, {}, "corpus/rec/seg-1", 3, 4, batch.data() + 4, 8));
  CHECK(unframe(wire, framing::length_prefixed) == golden_value("p2c_loss_request"));
}

TEST_CASE("the golden replies decode to typed replies") {
  auto init = decode_init_reply(golden_value("c2p_init_ok"));
  REQUIRE(init);
  CHECK(init->child_name == "SprintControl");
  CHECK(init->version == 1);
  CHECK_FALSE(check_protocol_version(*init));
  auto newer = check_protocol_version({"SprintControl", 2});
  CHECK(newer == errc::invalid_message);
  CHECK(error_message(newer) == "the child speaks protocol version 2, expected 1");
  for (auto name : {"c2p_loss_reply", "legacy_c2p_loss_reply"}) {
    auto loss = decode_loss_reply(golden_value(name), 3, 4);
    REQUIRE(loss);
    CHECK(loss->loss == 12.375);
    CHECK(element<float>(loss->error_signal, 11) == Approx(-0.11667224019765854));
  }
  auto np_loss = decode_loss_reply(golden_value("c2p_loss_reply_np_float32"), 3, 4);
  REQUIRE(np_loss);
  CHECK(np_loss->loss == 2.5);
  auto skipped = decode_loss_reply(golden_value("c2p_loss_reply_skipped"), 3, 4);
  REQUIRE(skipped);
  CHECK(std::isinf(skipped->loss));
  auto large = decode_loss_reply(golden_value("c2p_loss_reply_large"), 500, 211);
  REQUIRE(large);
  CHECK(large->loss == -0.5);
  for (auto name : {"c2p_fsa_reply", "legacy_c2p_fsa_reply"}) {
    auto fsa = decode_fsa_reply(golden_value(name));
    REQUIRE(fsa);
    CHECK(fsa->num_states == 3);
    CHECK(fsa->num_edges == 4);
    std::vector<uint32_t> edges(12);
    REQUIRE(copy_rows(fsa->edges, edges.data(), 12));
    CHECK(edges == std::vector<uint32_t>{0, 0, 1, 1, 0, 1, 1, 2, 0, 1, 1, 2});
    CHECK(element<float>(fsa->weights, 3) == 0.9f);
  }
}

TEST_CASE("an exception reply becomes a child_exception error carrying the child's message") {
  auto x = decode_loss_reply(golden_value("c2p_exception"), 3, 4);
  REQUIRE_FALSE(x);
  CHECK(x.error() == errc::child_exception);
  CHECK(sprintrt::error_message(x.error()) ==
        "'PythonControl' object has no attribute '_handle_cmd_bogus'");
  CHECK(decode_init_reply(golden_value("c2p_exception")).error() == errc::child_exception);
  CHECK(decode_fsa_reply(golden_value("c2p_exception")).error() == errc::child_exception);
}

TEST_CASE("our replies decode to what we encoded") {
  std::vector<float> es{0.5f, -0.5f, 0.25f, -0.25f, 1.0f, -1.0f};
  for (auto f : {framing::length_prefixed, framing::raw}) {
    wire_format fmt{f, std::string{legacy_array_module}};
    byte_buffer wire;
    REQUIRE_FALSE(encode_init_reply(wire, fmt, "sprint-sim"));
    auto init = decode_init_reply(unframe(wire, f));
    REQUIRE(init);
    CHECK(init->child_name == "sprint-sim");
    CHECK(init->version == 1);
    for (auto encoding : {loss_encoding::python_float, loss_encoding::numpy_float32}) {
      wire.clear();
      REQUIRE_FALSE(encode_loss_reply(wire, fmt, 7.25, 3, 2, es.data(), encoding));
      auto loss = decode_loss_reply(unframe(wire, f), 3, 2);
      REQUIRE(loss);
      CHECK(loss->loss == 7.25);
      std::vector<float> got(6);
      REQUIRE(copy_rows(loss->error_signal, got.data(), 2));
      CHECK(got == es);
    }
    wire.clear();
    std::vector<uint32_t> edges{0, 1, 1, 2, 5, 6};
    std::vector<float> weights{0.5f, 1.5f};
    REQUIRE_FALSE(encode_fsa_reply(wire, fmt, 3, edges, weights));
    auto fsa = decode_fsa_reply(unframe(wire, f));
    REQUIRE(fsa);
    CHECK(fsa->num_states == 3);
    CHECK(fsa->num_edges == 2);
    CHECK(element<uint32_t>(fsa->edges, 5) == 6);
    wire.clear();
    REQUIRE_FALSE(encode_exception_reply(wire, fmt, "unknown segment 'x'"));
    auto ex = decode_fsa_reply(unframe(wire, f));
    CHECK(sprintrt::error_message(ex.error()) == "unknown segment 'x'");
    // The reply by orthography is the same; its errors name its command.
    wire.clear();
    REQUIRE_FALSE(encode_fsa_reply(wire, fmt, 3, edges, weights));
    auto by_orthography = decode_fsa_reply(unframe(wire, f), sprintrt::fsa_source::orthography);
    REQUIRE(by_orthography);
    CHECK(by_orthography->num_states == 3);
    CHECK(element<uint32_t>(by_orthography->edges, 5) == 6);
    CHECK(element<float>(by_orthography->weights, 1) == 1.5f);
  }
}

TEST_CASE("malformed commands are invalid messages that say what was wrong") {
  auto check = [](const value& message, const std::string& text) {
    auto x = decode_command(message);
    REQUIRE_FALSE(x);
    CHECK(x.error() == errc::invalid_message);
    INFO(error_text(x.error()));
    CHECK(error_text(x.error()).find(text) != std::string::npos);
  };
  auto lp = [](dtype type, std::vector<size_t> shape) {
    size_t n = 1;
    for (auto s : shape)
      n *= s;
    return value::array(
        ndarray{type, shape, bytes_ref::own(std::vector<std::byte>(n * item_size(type)))});
  };
  auto loss_cmd = [](value frames, value posteriors) {
    return value::tuple({value::str("get_loss_and_error_signal"), value::str("seg"),
                         std::move(frames), std::move(posteriors)});
  };
  check(value::tuple({}), "expected a non-empty tuple");
  check(value::str("init"), "expected a non-empty tuple");
  check(value::tuple({value::str("bogus")}), "unknown command 'bogus'");
  check(value::tuple({value::integer(1)}), "command name must be a str");
  check(value::tuple({value::str("init"), value::str("x")}), "init expects");
  check(value::tuple({value::str("exit"), value{}}), "exit takes no arguments");
  check(loss_cmd(value::integer(3), lp(dtype::float64, {3, 4})), "must be float32, got float64");
  check(loss_cmd(value::integer(2), lp(dtype::float32, {3, 4})),
        "has shape [3, 4], expected [2, 4]");
  check(loss_cmd(value::integer(0), lp(dtype::float32, {0, 4})), "seg_len must be a positive int");
  check(loss_cmd(value::integer(3), lp(dtype::float32, {12})), "must be a 2-d numpy array");
  check(loss_cmd(value::integer(3), lp(dtype::float32, {3, 0})), "have no classes");
  check(value::tuple({value::str("export_allophone_state_fsa_by_segment_name"), value::str("")}),
        "expects (segment_name: str)");
  check(value::tuple({value::str("export_allophone_state_fsa_by_orthography"), value::str("")}),
        "export_allophone_state_fsa_by_orthography expects (orthography: str)");
  check(value::tuple({value::str("export_allophone_state_fsa_by_orthography"), value::integer(3)}),
        "export_allophone_state_fsa_by_orthography expects (orthography: str), got");
  check(value::tuple({value::str("export_allophone_state_fsa_by_orthography"), value::str("a"),
                      value::str("b")}),
        "export_allophone_state_fsa_by_orthography expects (orthography: str)");
  check(value::tuple({value::str("export_allophone_state_fsa_by_orthography")}),
        "export_allophone_state_fsa_by_orthography expects (orthography: str)");
}

TEST_CASE("malformed replies are invalid messages that say what was wrong") {
  auto ok3 = [](value a, value b) {
    return value::tuple({value::str("ok"), std::move(a), std::move(b)});
  };
  auto es = [](std::vector<size_t> shape) {
    return value::array(ndarray{dtype::float32, shape,
                                bytes_ref::own(std::vector<std::byte>(shape[0] * shape[1] * 4))});
  };
  auto check = [](caf::error err, const std::string& text) {
    CHECK(err == errc::invalid_message);
    INFO(error_text(err));
    CHECK(error_text(err).find(text) != std::string::npos);
  };
  check(decode_loss_reply(ok3(value::floating(1), es({2, 4})), 3, 4).error(),
        "has shape [2, 4], expected [3, 4]");
  check(decode_loss_reply(ok3(value::str("x"), es({3, 4})), 3, 4).error(), "loss must be a number");
  // A NaN or -inf loss fails the segment, not the child.
  auto nan_loss = decode_loss_reply(ok3(value::floating(std::nan("")), es({3, 4})), 3, 4);
  CHECK(nan_loss.error() == errc::child_exception);
  CHECK(error_text(nan_loss.error()).find("loss is NaN") != std::string::npos);
  auto minus_inf = decode_loss_reply(ok3(value::floating(-INFINITY), es({3, 4})), 3, 4);
  CHECK(minus_inf.error() == errc::child_exception);
  CHECK(error_text(minus_inf.error()).find("loss is -inf") != std::string::npos);
  // The same check for a loss that never was a reply (the in-process
  // simulation's), and +inf (a skipped segment) is a loss.
  CHECK(check_reply_loss(std::nan("")).error() == errc::child_exception);
  CHECK(check_reply_loss(-INFINITY).error() == errc::child_exception);
  CHECK(*check_reply_loss(INFINITY) == INFINITY);
  CHECK(loss_as_sent(0.1, loss_encoding::numpy_float32) == static_cast<double>(0.1f));
  CHECK(loss_as_sent(0.1, loss_encoding::python_float) == 0.1);
  check(decode_fsa_reply(
            value::tuple({value::str("ok"), value::integer(int64_t{1} << 32), value::integer(0),
                          value::array(ndarray{dtype::uint32, {0}, {}}),
                          value::array(ndarray{dtype::float32, {0}, {}})}))
            .error(),
        "num_states must be an int in 1..2^32-1");
  check(decode_loss_reply(value::tuple({value::str("fine"), value{}, value{}}), 3, 4).error(),
        "must start with 'ok' or 'exception'");
  check(decode_loss_reply(value::tuple({value::str("ok"), value::floating(1)}), 3, 4).error(),
        "must have 3 items");
  check(decode_init_reply(ok3(value::integer(1), value::integer(1))).error(),
        "reply to init must be");
  // An FSA whose edge points past its last state.
  std::vector<uint32_t> edges{0, 3, 0};
  std::vector<float> weights{0.0f};
  byte_buffer wire;
  REQUIRE_FALSE(encode_fsa_reply(wire, {}, 3, edges, weights));
  check(decode_fsa_reply(unframe(wire, framing::length_prefixed)).error(),
        "edge 0 has to state 3, but there are only 3 states");
  check(
      decode_fsa_reply(ok3(value::integer(1), value::integer(1)), sprintrt::fsa_source::orthography)
          .error(),
      "reply to export_allophone_state_fsa_by_orthography must have 5 items");
}

TEST_CASE("encoders refuse names Python could not decode and mismatched FSAs") {
  byte_buffer wire;
  float lp[4] = {};
  CHECK(encode_loss_command(wire, {}, "bad\xff", 1, 4, lp, 4) == errc::invalid_input);
  CHECK(encode_fsa_command(wire, {}, "bad\xff") == errc::invalid_input);
  auto bad_orthography = encode_fsa_command(wire, {}, "bad\xff", sprintrt::fsa_source::orthography);
  CHECK(bad_orthography == errc::invalid_input);
  CHECK(sprintrt::error_message(bad_orthography) == "orthography is not valid UTF-8");
  std::vector<uint32_t> edges{0, 1};
  std::vector<float> weights{0.0f};
  CHECK(encode_fsa_reply(wire, {}, 2, edges, weights) == errc::invalid_input);
  CHECK(wire.empty());
  // An exception message is made decodable rather than refused.
  REQUIRE_FALSE(encode_exception_reply(wire, {}, "segment 'bad\xff' is unknown"));
  auto x = decode_init_reply(unframe(wire, framing::length_prefixed));
  CHECK(sprintrt::error_message(x.error()) == "segment 'bad?' is unknown");
}

TEST_CASE("a message above the wire format's maximum is refused when encoded") {
  wire_format fmt;
  fmt.max_message_size = 100;
  std::vector<float> lp(100, 0.0f);
  byte_buffer wire;
  CHECK(encode_loss_command(wire, fmt, "seg", 10, 10, lp.data(), 10) == errc::message_too_large);
  CHECK(wire.empty());
}

TEST_CASE("an exception reply that names the requested segment as unknown is unknown_segment") {
  byte_buffer wire;
  REQUIRE_FALSE(encode_exception_reply(wire, {}, "unknown segment 'a/b': not in corpus 'c'"));
  auto reply = decode_loss_reply(unframe(wire, framing::length_prefixed), 1, 1);
  REQUIRE_FALSE(reply);
  REQUIRE(reply.error() == errc::child_exception);
  auto unknown = classify_segment_error(reply.error(), "a/b");
  CHECK(unknown == errc::unknown_segment);
  CHECK(error_message(unknown) == "unknown segment 'a/b': not in corpus 'c'");
  // Another segment named, the words elsewhere, or another code: unchanged.
  CHECK(classify_segment_error(reply.error(), "a") == errc::child_exception);
  auto later = sprintrt::make_error(errc::child_exception, "KeyError: unknown segment 'a/b'");
  CHECK(classify_segment_error(later, "a/b") == errc::child_exception);
  auto failed = sprintrt::make_error(errc::child_failed, "unknown segment 'a/b'");
  CHECK(classify_segment_error(failed, "a/b") == errc::child_failed);
  CHECK(unknown_segment_text("x") == "unknown segment 'x'");
}
