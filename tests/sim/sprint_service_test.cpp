#include "sim/sprint_service.hpp"

#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>

#include "criterion/ctc_topology.hpp"
#include "protocol/ndarray_access.hpp"
#include "protocol/pickle_reader.hpp"
#include "protocol/pickle_writer.hpp"
#include "protocol/utf8.hpp"
#include "sprintrt/output_gate.hpp"
#include "tests/support/criterion_test_support.hpp"
#include "tests/support/golden_vectors.hpp"

using namespace sprintrt::criterion;
using namespace sprintrt::sim;
using sprintrt::errc;
using sprintrt::error_message;
using test::unwrap;
namespace protocol = sprintrt::protocol;

namespace {

/// The segments of the golden vectors (seg-1, seg-2: 3 frames of 4 classes)
/// and one whose label is beyond 4 classes.
constexpr const char* corpus_text = "corpus/rec/seg-1\t1 2\n"
                                    "corpus/rec/seg-2\t3\n"
                                    "corpus/rec/wide\t7\n";

corpus_criterion make_criterion() {
  return corpus_criterion{unwrap(corpus::from_string(corpus_text)),
                          std::make_shared<ctc_topology>(0)};
}

sprint_service make_service(const service_options& options) {
  return sprint_service{make_criterion(), options};
}

sprint_service make_service() {
  static const service_options defaults;
  return make_service(defaults);
}

/// Takes the single framed message in `wire` out of its frame and decodes it.
protocol::value unframe(const protocol::byte_buffer& wire, protocol::framing framing) {
  protocol::frame_decoder decoder{framing};
  REQUIRE_FALSE(decoder.feed(wire.bytes()));
  auto message = decoder.next();
  REQUIRE(message);
  REQUIRE_FALSE(decoder.next());
  REQUIRE(decoder.partial_bytes() == 0);
  return unwrap(
      protocol::read_pickle(std::make_shared<const protocol::byte_buffer>(std::move(*message))));
}

/// Encodes a command with `encode`, then decodes it as the child would.
template <class Encode>
protocol::command command_from(Encode&& encode) {
  protocol::byte_buffer wire;
  protocol::wire_format format;
  REQUIRE_FALSE(encode(wire, format));
  return unwrap(protocol::decode_command(unframe(wire, format.framing)));
}

protocol::command loss_request(const std::string& segment, const row_matrix_f& log_posteriors) {
  return command_from([&](protocol::byte_buffer& out, const protocol::wire_format& format) {
    return protocol::encode_loss_command(out, format, segment, log_posteriors.rows(),
                                         log_posteriors.cols(), log_posteriors.data(),
                                         log_posteriors.cols());
  });
}

protocol::command fsa_request(const std::string& segment) {
  return command_from([&](protocol::byte_buffer& out, const protocol::wire_format& format) {
    return protocol::encode_fsa_command(out, format, segment);
  });
}

protocol::command orthography_request(const std::string& orthography) {
  return command_from([&](protocol::byte_buffer& out, const protocol::wire_format& format) {
    return protocol::encode_fsa_command(out, format, orthography,
                                        sprintrt::fsa_source::orthography);
  });
}

/// Handles `request`, which must be answered, and returns the decoded reply.
protocol::value reply_to(sprint_service& service, const protocol::command& request) {
  protocol::byte_buffer out;
  REQUIRE(service.handle(request, out) == service_action::reply);
  return unframe(out, service.options().wire.framing);
}

/// The message of the exception reply to `request`.
std::string exception_reply(sprint_service& service, const protocol::command& request) {
  auto reply = protocol::decode_init_reply(reply_to(service, request));
  REQUIRE_FALSE(reply);
  REQUIRE(reply.error() == errc::child_exception);
  return error_message(reply.error());
}

std::vector<float> floats_of(const protocol::ndarray& a) {
  std::vector<float> result(a.num_elements());
  REQUIRE(protocol::copy_rows(a, result.data(), a.shape.empty() ? 1 : a.shape.back()));
  return result;
}

template <class T>
std::vector<T> elements_of(const protocol::ndarray& a) {
  std::vector<T> result(a.num_elements());
  for (size_t i = 0; i < result.size(); ++i)
    result[i] = protocol::element<T>(a, i);
  return result;
}

/// Checks a loss reply against the criterion called directly, bit for bit.
void check_against_criterion(const protocol::value& reply, const std::string& segment,
                             const row_matrix_f& log_posteriors) {
  const auto rows = static_cast<size_t>(log_posteriors.rows());
  const auto cols = static_cast<size_t>(log_posteriors.cols());
  const auto decoded = unwrap(protocol::decode_loss_reply(reply, rows, cols));
  auto direct = make_criterion();
  row_matrix_f expected(log_posteriors.rows(), log_posteriors.cols());
  const auto result = unwrap(direct.loss_and_error_signal(segment, log_posteriors, expected));
  CHECK(decoded.loss == result.loss);
  const auto got = floats_of(decoded.error_signal);
  REQUIRE(got.size() == rows * cols);
  CHECK(std::memcmp(got.data(), expected.data(), got.size() * sizeof(float)) == 0);
}

/// A loss command over `bytes` as float32 [frames, dim], not copied.
protocol::command loss_over(const std::string& segment, const std::byte* bytes, size_t frames,
                            size_t dim) {
  protocol::ndarray array{protocol::dtype::float32,
                          {frames, dim},
                          protocol::bytes_ref::unowned({bytes, frames * dim * sizeof(float)})};
  return protocol::loss_command{segment, frames, std::move(array), std::nullopt};
}

} // namespace

TEST_CASE("the service answers init with its name and version 1") {
  auto service = make_service();
  const auto reply = unwrap(protocol::decode_init_reply(
      reply_to(service, protocol::init_command{"SprintSubprocessInstance", 1})));
  CHECK(reply.child_name == "sprint-sim");
  CHECK(reply.version == 1);
  service_options options;
  options.child_name = "sim-3";
  options.init_reply_version = 2;
  auto other = make_service(options);
  const auto other_reply = unwrap(protocol::decode_init_reply(
      reply_to(other, protocol::init_command{"SprintSubprocessInstance", 1})));
  CHECK(other_reply.child_name == "sim-3");
  CHECK(other_reply.version == 2);
}

TEST_CASE("an init of another protocol version is answered, with a warning") {
  test::log_capture log;
  auto service = make_service();
  const auto reply =
      unwrap(protocol::decode_init_reply(reply_to(service, protocol::init_command{"p", 7})));
  CHECK(reply.version == 1);
  const auto messages = log.messages();
  REQUIRE(messages.size() == 1);
  CHECK(messages[0].find("asks for protocol version 7") != std::string::npos);
}

TEST_CASE("the loss and error signal are exactly the criterion's") {
  auto service = make_service();
  std::mt19937 rng{41};
  const std::pair<const char*, int> cases[] = {
      {"corpus/rec/seg-1", 5}, {"corpus/rec/seg-2", 3}, {"corpus/rec/seg-1", 9}};
  for (auto [segment, frames] : cases) {
    INFO(segment << " over " << frames << " frames");
    const auto log_posteriors = test::random_log_posteriors(frames, 4, rng);
    const auto reply = reply_to(service, loss_request(segment, log_posteriors));
    check_against_criterion(reply, segment, log_posteriors);
    CHECK(std::isfinite(unwrap(protocol::decode_loss_reply(reply, frames, 4)).loss));
  }
}

TEST_CASE("aligned posteriors are used in place, unaligned ones copied, with equal results") {
  std::mt19937 rng{42};
  const auto log_posteriors = test::random_log_posteriors(6, 4, rng);
  const size_t size = 6 * 4 * sizeof(float);
  std::vector<float> aligned(log_posteriors.data(), log_posteriors.data() + 24);
  std::vector<std::byte> unaligned_storage(size + 1);
  std::memcpy(unaligned_storage.data() + 1, log_posteriors.data(), size);
  const auto in_place =
      loss_over("corpus/rec/seg-1", reinterpret_cast<const std::byte*>(aligned.data()), 6, 4);
  const auto copied = loss_over("corpus/rec/seg-1", unaligned_storage.data() + 1, 6, 4);
  REQUIRE(protocol::aligned_data<float>(std::get<protocol::loss_command>(in_place).log_posteriors));
  REQUIRE_FALSE(
      protocol::aligned_data<float>(std::get<protocol::loss_command>(copied).log_posteriors));
  auto service = make_service();
  check_against_criterion(reply_to(service, in_place), "corpus/rec/seg-1", log_posteriors);
  check_against_criterion(reply_to(service, copied), "corpus/rec/seg-1", log_posteriors);

  SECTION("a warmed-up service answers without allocating") {
    protocol::byte_buffer out;
    for (const auto* request : {&in_place, &copied}) {
      out.clear();
      REQUIRE(service.handle(*request, out) == service_action::reply);
      out.clear();
      const size_t before = test::allocation_count();
      service.handle(*request, out);
      CHECK(test::allocation_count() == before);
      CHECK(out.size() > size);
    }
  }
}

TEST_CASE("the loss can be sent as a numpy.float32, replies in raw framing for old parents") {
  service_options options;
  options.loss_encoding = protocol::loss_encoding::numpy_float32;
  options.wire.framing = protocol::framing::raw;
  options.wire.array_module = std::string{protocol::legacy_array_module};
  auto service = make_service(options);
  std::mt19937 rng{43};
  const auto log_posteriors = test::random_log_posteriors(4, 4, rng);
  protocol::byte_buffer out;
  REQUIRE(service.handle(loss_request("corpus/rec/seg-1", log_posteriors), out) ==
          service_action::reply);
  const std::string text{reinterpret_cast<const char*>(out.data()), out.size()};
  CHECK(text.find("TaskSystem\nmake_numpy_ndarray_fromstring\n") != std::string::npos);
  const auto reply = unframe(out, protocol::framing::raw);
  const auto& items = reply.as_items();
  REQUIRE(items.size() == 3);
  CHECK(items[1].is(protocol::value::kind::numpy_scalar));
  const auto decoded = unwrap(protocol::decode_loss_reply(reply, 4, 4));
  auto direct = make_criterion();
  row_matrix_f error_signal(4, 4);
  const auto result =
      unwrap(direct.loss_and_error_signal("corpus/rec/seg-1", log_posteriors, error_signal));
  CHECK(decoded.loss == static_cast<double>(static_cast<float>(result.loss)));
}

TEST_CASE("a segment too short for its labels is skipped: loss inf, zero error signal") {
  auto service = make_service();
  // CTC needs two frames for the labels 1 2.
  const row_matrix_f log_posteriors = row_matrix_f::Constant(1, 4, std::log(0.25f));
  const auto reply = unwrap(protocol::decode_loss_reply(
      reply_to(service, loss_request("corpus/rec/seg-1", log_posteriors)), 1, 4));
  CHECK(reply.loss == std::numeric_limits<double>::infinity());
  CHECK(floats_of(reply.error_signal) == std::vector<float>(4, 0.0f));
}

TEST_CASE("the FSA export is the criterion's FSA") {
  auto service = make_service();
  for (auto segment : {"corpus/rec/seg-1", "corpus/rec/seg-2"}) {
    INFO(segment);
    const auto reply = unwrap(protocol::decode_fsa_reply(reply_to(service, fsa_request(segment))));
    const auto expected = unwrap(make_criterion().segment_fsa(segment));
    CHECK(reply.num_states == expected.num_states());
    CHECK(reply.num_edges == expected.num_edges());
    const auto flat = expected.flat_edges();
    CHECK(elements_of<uint32_t>(reply.edges) == std::vector<uint32_t>(flat.begin(), flat.end()));
    const auto weights = expected.weights();
    CHECK(elements_of<float>(reply.weights) == std::vector<float>(weights.begin(), weights.end()));
  }
}

TEST_CASE("the FSA of an orthography is the FSA of the segment with its labels") {
  auto service = make_service();
  // seg-1 has the labels 1 2, seg-2 the label 3; spaces and tabs separate
  // labels as in the corpus file.
  for (auto [orthography, segment] :
       {std::pair{"1 2", "corpus/rec/seg-1"}, std::pair{" 1\t 2 ", "corpus/rec/seg-1"},
        std::pair{"3", "corpus/rec/seg-2"}}) {
    INFO(orthography);
    const auto by_orthography = unwrap(protocol::decode_fsa_reply(
        reply_to(service, orthography_request(orthography)), sprintrt::fsa_source::orthography));
    const auto by_name =
        unwrap(protocol::decode_fsa_reply(reply_to(service, fsa_request(segment))));
    CHECK(by_orthography.num_states == by_name.num_states);
    CHECK(by_orthography.num_edges == by_name.num_edges);
    CHECK(elements_of<uint32_t>(by_orthography.edges) == elements_of<uint32_t>(by_name.edges));
    CHECK(elements_of<float>(by_orthography.weights) == elements_of<float>(by_name.weights));
  }
  // A label sequence no segment has: CTC over 2 5 2 (blank 0) has 2 * 3 + 1
  // states and the final state.
  const auto other = unwrap(protocol::decode_fsa_reply(
      reply_to(service, orthography_request("2 5 2")), sprintrt::fsa_source::orthography));
  const auto expected = unwrap(ctc_topology{0}.build("2 5 2", std::vector<uint32_t>{2, 5, 2}));
  CHECK(other.num_states == expected.num_states());
  const auto flat = expected.flat_edges();
  CHECK(elements_of<uint32_t>(other.edges) == std::vector<uint32_t>(flat.begin(), flat.end()));
}

TEST_CASE("a malformed orthography is an exception naming it, and serving goes on") {
  auto service = make_service();
  CHECK(exception_reply(service, orthography_request("1 x 2")) ==
        "label number 2 of orthography '1 x 2' is 'x', not a non-negative integer");
  CHECK(exception_reply(service, orthography_request("1 -2")) ==
        "label number 2 of orthography '1 -2' is '-2', not a non-negative integer");
  CHECK(exception_reply(service, orthography_request("4294967296")) ==
        "label number 1 of orthography '4294967296' is 4294967296, larger than 4294967295");
  CHECK(exception_reply(service, orthography_request("HELLO WORLD")) ==
        "label number 1 of orthography 'HELLO WORLD' is 'HELLO', not a non-negative integer");
  CHECK(exception_reply(service, orthography_request("1 0 2")) ==
        "orthography '1 0 2': label number 2 is 0, the CTC blank index");
  // Still serving.
  const auto reply = unwrap(protocol::decode_fsa_reply(
      reply_to(service, orthography_request("1 2")), sprintrt::fsa_source::orthography));
  CHECK(reply.num_states == unwrap(make_criterion().segment_fsa("corpus/rec/seg-1")).num_states());
}

TEST_CASE("failures are answered with exception replies, and serving goes on") {
  auto service = make_service();
  std::mt19937 rng{44};
  auto log_posteriors = test::random_log_posteriors(4, 4, rng);
  CHECK(exception_reply(service, loss_request("corpus/rec/nope", log_posteriors)) ==
        "unknown segment 'corpus/rec/nope': not in corpus '<string>' (3 segments)");
  CHECK(exception_reply(service, fsa_request("corpus/rec/gone")) ==
        "unknown segment 'corpus/rec/gone': not in corpus '<string>' (3 segments)");
  CHECK(exception_reply(service, loss_request("corpus/rec/wide", log_posteriors)) ==
        "segment 'corpus/rec/wide': label 7 (emitted by FSA edge 1) is not a class of the "
        "log-posteriors, which have 4 columns");
  auto with_nan = log_posteriors;
  with_nan(2, 1) = std::numeric_limits<float>::quiet_NaN();
  CHECK(exception_reply(service, loss_request("corpus/rec/seg-1", with_nan)) ==
        "segment 'corpus/rec/seg-1': log-posterior at frame 2, index 1 is NaN (only finite "
        "values and -inf are valid)");
  // A hand-made command that decode_command would have refused.
  std::vector<float> six(6);
  auto bad_frames = std::get<protocol::loss_command>(
      loss_over("corpus/rec/seg-1", reinterpret_cast<const std::byte*>(six.data()), 2, 3));
  bad_frames.frames = 3;
  CHECK(exception_reply(service, bad_frames) ==
        "get_loss_and_error_signal for 'corpus/rec/seg-1': log_posteriors must be float32 "
        "[seg_len, D]");
  // Still serving.
  check_against_criterion(reply_to(service, loss_request("corpus/rec/seg-1", log_posteriors)),
                          "corpus/rec/seg-1", log_posteriors);
}

TEST_CASE("unknown commands and malformed messages are answered with exceptions") {
  auto service = make_service();
  auto message_reply = [&](const protocol::value& message) {
    protocol::byte_buffer out;
    REQUIRE(service.handle(message, out) == service_action::reply);
    auto reply = protocol::decode_init_reply(unframe(out, protocol::framing::length_prefixed));
    REQUIRE_FALSE(reply);
    REQUIRE(reply.error() == errc::child_exception);
    return error_message(reply.error());
  };
  using protocol::value;
  CHECK(message_reply(value::tuple({value::str("bogus"), value::integer(1)})) ==
        "unknown command 'bogus'");
  CHECK(message_reply(value::tuple({value::str("init")})).find("init expects") == 0);
  CHECK(message_reply(value::integer(3)).find("command: expected a non-empty tuple") == 0);
  // A body that is not a pickle at all.
  auto not_a_pickle = protocol::read_pickle(sprintrt::test::bytes({0xff, 0x2e}));
  REQUIRE_FALSE(not_a_pickle);
  protocol::byte_buffer out;
  service.reply_error(not_a_pickle.error(), out);
  auto reply = protocol::decode_init_reply(unframe(out, protocol::framing::length_prefixed));
  REQUIRE_FALSE(reply);
  CHECK(error_message(reply.error()) == error_message(not_a_pickle.error()));
  // The service still answers.
  CHECK(unwrap(protocol::decode_init_reply(
                   reply_to(service, protocol::init_command{"SprintSubprocessInstance", 1})))
            .version == 1);
}

TEST_CASE("exit is not answered") {
  auto service = make_service();
  protocol::byte_buffer out;
  CHECK(service.handle(protocol::exit_command{}, out) == service_action::exit);
  CHECK(out.empty());
}

TEST_CASE("the golden commands of the real parent get sensible replies") {
  using sprintrt::test::golden;
  for (auto name : {"p2c_init", "p2c_loss_request", "p2c_loss_request_bytes_name",
                    "p2c_loss_request_np_int32_len", "legacy_p2c_loss_request", "p2c_fsa_request",
                    "p2c_fsa_by_orthography_request", "p2c_exit"}) {
    INFO(name);
    const auto& vector = golden(name);
    service_options options;
    options.wire.framing = vector.framing;
    auto service = make_service(options);
    const auto message = unwrap(protocol::read_pickle(vector.pickle()));
    const auto request = unwrap(protocol::decode_command(message));
    if (std::holds_alternative<protocol::exit_command>(request)) {
      protocol::byte_buffer out;
      CHECK(service.handle(message, out) == service_action::exit);
      continue;
    }
    const auto reply = reply_to(service, request);
    if (std::holds_alternative<protocol::init_command>(request)) {
      CHECK(unwrap(protocol::decode_init_reply(reply)).version == 1);
    } else if (const auto* loss = std::get_if<protocol::loss_command>(&request)) {
      row_matrix_f log_posteriors(3, 4);
      REQUIRE(protocol::copy_rows(loss->log_posteriors, log_posteriors.data(), 4));
      check_against_criterion(reply, loss->segment_name, log_posteriors);
      const auto decoded = unwrap(protocol::decode_loss_reply(reply, 3, 4));
      CHECK(std::isfinite(decoded.loss));
      CHECK(decoded.loss > 0);
    } else {
      // Both name seg-1: by its name, and by its labels "1 2".
      const auto& fsa = std::get<protocol::fsa_command>(request);
      CHECK(fsa.text ==
            (fsa.source == sprintrt::fsa_source::orthography ? "1 2" : "corpus/rec/seg-1"));
      const auto decoded = unwrap(protocol::decode_fsa_reply(reply, fsa.source));
      const auto expected = unwrap(make_criterion().segment_fsa("corpus/rec/seg-1"));
      CHECK(decoded.num_states == expected.num_states());
      const auto flat = expected.flat_edges();
      CHECK(elements_of<uint32_t>(decoded.edges) ==
            std::vector<uint32_t>(flat.begin(), flat.end()));
    }
  }
  // The bytes name is seg-2's.
  const auto bytes_name = unwrap(protocol::decode_command(
      unwrap(protocol::read_pickle(golden("p2c_loss_request_bytes_name").pickle()))));
  CHECK(std::get<protocol::loss_command>(bytes_name).segment_name == "corpus/rec/seg-2");
}

TEST_CASE("describe names the command, the segment and the shape") {
  std::mt19937 rng{46};
  CHECK(describe(loss_request("a/1", test::random_log_posteriors(2, 3, rng))) ==
        "get_loss_and_error_signal 'a/1' [2 x 3]");
  CHECK(describe(protocol::fsa_command{"b"}) == "export_allophone_state_fsa_by_segment_name 'b'");
  CHECK(describe(protocol::fsa_command{"1 2", sprintrt::fsa_source::orthography}) ==
        "export_allophone_state_fsa_by_orthography '1 2'");
  CHECK(describe(protocol::init_command{"p", 1}) == "init 'p' version 1");
  CHECK(describe(protocol::exit_command{}) == "exit");
}

TEST_CASE("with criterion zero the loss reply is loss 0 and a full-size zero error signal") {
  const service_options defaults;
  sprint_service service{corpus_criterion{unwrap(corpus::from_string(corpus_text)),
                                          std::make_shared<ctc_topology>(0), criterion_kind::zero},
                         defaults};
  std::mt19937 rng{45};
  const auto log_posteriors = test::random_log_posteriors(7, 5, rng);
  // A known segment, one not in the corpus, and one whose label is beyond 5
  // classes: no FSA is looked at.
  for (auto segment : {"corpus/rec/seg-1", "corpus/rec/unknown", "corpus/rec/wide"}) {
    INFO(segment);
    const auto reply = reply_to(service, loss_request(segment, log_posteriors));
    const auto decoded = unwrap(protocol::decode_loss_reply(reply, 7, 5));
    CHECK(decoded.loss == 0.0);
    CHECK(decoded.error_signal.shape == std::vector<size_t>{7, 5});
    CHECK(floats_of(decoded.error_signal) == std::vector<float>(35, 0.0f));
  }
  // The reply has the size of a real one.
  protocol::byte_buffer zero_reply;
  REQUIRE(service.handle(loss_request("corpus/rec/seg-1", log_posteriors), zero_reply) ==
          service_action::reply);
  auto real = make_service();
  protocol::byte_buffer real_reply;
  REQUIRE(real.handle(loss_request("corpus/rec/seg-1", log_posteriors), real_reply) ==
          service_action::reply);
  CHECK(zero_reply.size() == real_reply.size());
  // The input is still checked, and FSAs still come from the corpus.
  auto with_nan = log_posteriors;
  with_nan(0, 0) = std::numeric_limits<float>::quiet_NaN();
  CHECK(exception_reply(service, loss_request("corpus/rec/unknown", with_nan)) ==
        "segment 'corpus/rec/unknown': log-posterior at frame 0, index 0 is NaN (only finite "
        "values and -inf are valid)");
  CHECK(unwrap(protocol::decode_fsa_reply(reply_to(service, fsa_request("corpus/rec/seg-2"))))
            .num_states == unwrap(make_criterion().segment_fsa("corpus/rec/seg-2")).num_states());
}

namespace {

/// Column `column` of a [frames, 3, 4] buffer as a strided job: its
/// posteriors `log_posteriors`, its error signal into a buffer of -1.
sprintrt::segment_job strided_job(const std::string& segment, const row_matrix_f& log_posteriors,
                                  size_t column) {
  const auto frames = static_cast<size_t>(log_posteriors.rows());
  auto input = sprintrt::make_storage(frames * 3 * 4, 0.0f);
  for (size_t t = 0; t < frames; ++t)
    std::memcpy(input->data() + (t * 3 + column) * 4, log_posteriors.row(t).data(),
                4 * sizeof(float));
  auto output = sprintrt::make_storage(frames * 3 * 4, -1.0f);
  return {segment, {input, column * 4, frames, 4, 12}, {output, column * 4, frames, 4, 12}};
}

} // namespace

TEST_CASE("answer computes a strided job bit for bit as the protocol's reply") {
  std::mt19937 rng{43};
  const auto log_posteriors = test::random_log_posteriors(5, 4, rng);
  for (auto encoding :
       {protocol::loss_encoding::python_float, protocol::loss_encoding::numpy_float32}) {
    service_options options;
    options.loss_encoding = encoding;
    auto service = make_service(options);
    auto job = strided_job("corpus/rec/seg-1", log_posteriors, 1);
    auto loss = service.answer(job);
    REQUIRE(loss);
    const auto reply = unwrap(protocol::decode_loss_reply(
        reply_to(service, loss_request("corpus/rec/seg-1", log_posteriors)), 5, 4));
    CHECK(std::memcmp(&*loss, &reply.loss, sizeof(double)) == 0);
    const auto expected = floats_of(reply.error_signal);
    std::vector<float> written;
    for (size_t t = 0; t < 5; ++t)
      written.insert(written.end(), job.error_signal.row(t), job.error_signal.row(t) + 4);
    CHECK(std::memcmp(written.data(), expected.data(), expected.size() * sizeof(float)) == 0);
    // The other columns are left alone.
    CHECK(job.error_signal.storage->data()[0] == -1.0f);
    CHECK(job.error_signal.storage->data()[4 * 12 + 2 * 4 + 3] == -1.0f);
  }
}

TEST_CASE("answer fails as the protocol's exception reply, and writes nothing when closed") {
  auto service = make_service();
  std::mt19937 rng{44};
  const auto log_posteriors = test::random_log_posteriors(3, 4, rng);
  auto unknown = service.answer(strided_job("corpus/rec/none", log_posteriors, 0));
  REQUIRE_FALSE(unknown);
  // The exception reply's words that the parent reads as an unknown segment.
  CHECK(unknown.error() == errc::unknown_segment);
  CHECK(error_message(unknown.error()) ==
        exception_reply(service, loss_request("corpus/rec/none", log_posteriors)));
  auto job = strided_job("corpus/rec/seg-2", log_posteriors, 2);
  job.gate = std::make_shared<sprintrt::output_gate>();
  job.gate->close();
  auto closed = service.answer(job);
  REQUIRE_FALSE(closed);
  CHECK(closed.error() == errc::cancelled);
  CHECK(job.error_signal.storage->to_vector() == std::vector<float>(3 * 3 * 4, -1.0f));
  // Text Python could not decode is replaced, as in the exception reply.
  auto not_utf8 = service.answer(strided_job("corpus/rec/\xff", log_posteriors, 0));
  REQUIRE_FALSE(not_utf8);
  CHECK(not_utf8.error() == errc::child_exception);
  CHECK(error_message(not_utf8.error()).find("'corpus/rec/?'") != std::string::npos);
  CHECK(protocol::is_valid_utf8(error_message(not_utf8.error())));
  auto fsa = service.answer(sprintrt::fsa_query{sprintrt::fsa_source::segment_name, "nope"});
  REQUIRE_FALSE(fsa);
  CHECK(fsa.error() == errc::unknown_segment);
  CHECK(error_message(fsa.error()) == exception_reply(service, fsa_request("nope")));
}

TEST_CASE("answer exports the automaton the protocol's reply carries") {
  auto service = make_service();
  for (auto query : {sprintrt::fsa_query{sprintrt::fsa_source::segment_name, "corpus/rec/seg-1"},
                     sprintrt::fsa_query{sprintrt::fsa_source::orthography, "1 2"}}) {
    INFO(query.text);
    auto fsa = service.answer(query);
    REQUIRE(fsa);
    const auto reply = unwrap(protocol::decode_fsa_reply(reply_to(
        service, query.source == sprintrt::fsa_source::orthography ? orthography_request(query.text)
                                                                   : fsa_request(query.text))));
    CHECK(fsa->num_states == reply.num_states);
    CHECK(fsa->edges == elements_of<uint32_t>(reply.edges));
    CHECK(fsa->weights == elements_of<float>(reply.weights));
  }
}

// -- through the shared region (docs/protocol.md section 7) ---------------------

namespace {

/// A region as the parent makes it, holding `log_posteriors` at `offset`.
sprintrt::shared_region region_with(const row_matrix_f& log_posteriors, uint64_t offset) {
  auto region = unwrap(sprintrt::shared_region::create("sprint_service_test"));
  const size_t bytes = static_cast<size_t>(log_posteriors.size()) * sizeof(float);
  REQUIRE_FALSE(region.grow(offset + bytes));
  std::memcpy(unwrap(region.view(offset, bytes, 4)), log_posteriors.data(), bytes);
  return region;
}

protocol::command shared_loss_request(const std::string& segment, size_t frames, size_t dim,
                                      uint64_t offset) {
  return command_from([&](protocol::byte_buffer& out, const protocol::wire_format& format) {
    return protocol::encode_loss_command(out, format, segment,
                                         protocol::shared_array{offset, frames, dim});
  });
}

} // namespace

TEST_CASE("a loss request through the shared region is answered in place, bit for bit as "
          "through the pipe") {
  std::mt19937 rng{7};
  const auto log_posteriors = test::random_log_posteriors(3, 4, rng);
  const uint64_t offset = 4096;
  auto region = region_with(log_posteriors, offset);
  auto service = make_service();
  service.use_shared_region(&region);
  auto init = unwrap(protocol::decode_init_reply(reply_to(
      service, command_from([](protocol::byte_buffer& out, const protocol::wire_format& format) {
        return protocol::encode_init_command(out, format);
      }))));
  CHECK(init.shared_memory);

  auto reply = unwrap(protocol::decode_loss_reply(
      reply_to(service, shared_loss_request("corpus/rec/seg-1", 3, 4, offset)), 3, 4, true));
  REQUIRE(reply.shared_error_signal);
  CHECK(reply.shared_error_signal->offset == offset);

  auto piped = make_service();
  auto expected = unwrap(protocol::decode_loss_reply(
      reply_to(piped, loss_request("corpus/rec/seg-1", log_posteriors)), 3, 4));
  CHECK(reply.loss == expected.loss);
  const auto want = floats_of(expected.error_signal);
  CHECK(std::memcmp(unwrap(region.view(offset, 48, 4)), want.data(), 48) == 0);
}

TEST_CASE("a shared request without a region, or outside it, gets an exception naming it") {
  std::mt19937 rng{7};
  const auto log_posteriors = test::random_log_posteriors(3, 4, rng);
  auto none = make_service();
  CHECK_FALSE(unwrap(protocol::decode_init_reply(
                         reply_to(none, command_from([](protocol::byte_buffer& out,
                                                        const protocol::wire_format& format) {
                                    return protocol::encode_init_command(out, format);
                                  }))))
                  .shared_memory);
  CHECK_THAT(exception_reply(none, shared_loss_request("corpus/rec/seg-1", 3, 4, 0)),
             Catch::Contains("'corpus/rec/seg-1'") && Catch::Contains("none was offered"));

  auto region = region_with(log_posteriors, 0);
  auto service = make_service();
  service.use_shared_region(&region);
  const uint64_t end = region.size();
  CHECK_THAT(exception_reply(service, shared_loss_request("corpus/rec/seg-1", 3, 4, end)),
             Catch::Contains("at offset " + std::to_string(end)) &&
                 Catch::Contains("outside the region"));
  CHECK_THAT(exception_reply(service, shared_loss_request("corpus/rec/seg-1", 3, 4, 2)),
             Catch::Contains("not aligned"));
  // The service keeps serving.
  CHECK(protocol::decode_loss_reply(
      reply_to(service, shared_loss_request("corpus/rec/seg-1", 3, 4, 0)), 3, 4, true));
}
