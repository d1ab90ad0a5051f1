#include "sim/fault_injection.hpp"

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "protocol/pickle_reader.hpp"

using namespace sprintrt::sim;
using sprintrt::errc;
namespace protocol = sprintrt::protocol;

namespace {

protocol::command loss(const std::string& segment) {
  return protocol::loss_command{segment, 1, {}, std::nullopt};
}

protocol::command fsa(const std::string& segment) {
  return protocol::fsa_command{segment};
}

const protocol::command init = protocol::init_command{"SprintSubprocessInstance", 1};
const protocol::command exit_request = protocol::exit_command{};

/// Runs `requests` through an injector for `options`, returning the actions.
std::vector<fault_action> actions(fault_options options,
                                  const std::vector<protocol::command>& requests) {
  fault_injector faults{std::move(options)};
  std::vector<fault_action> result;
  for (const auto& request : requests)
    result.push_back(faults.on_request(request));
  return result;
}

constexpr auto serve = fault_action::serve;

} // namespace

TEST_CASE("fault kinds have the option spellings") {
  for (auto kind :
       {fault_kind::none, fault_kind::crash, fault_kind::hang, fault_kind::garbage,
        fault_kind::exit_at_start, fault_kind::no_init_reply, fault_kind::bad_version}) {
    INFO(to_string(kind));
    CHECK(parse_fault_kind(to_string(kind)) == kind);
  }
  CHECK(std::string{to_string(fault_kind::exit_at_start)} == "exit-at-start");
  CHECK_FALSE(parse_fault_kind("exit_at_start"));
  CHECK(counts_requests(fault_kind::garbage));
  CHECK_FALSE(counts_requests(fault_kind::bad_version));
  CHECK(std::string{to_string(fault_action::garbage)} == "garbage");
}

TEST_CASE("without faults every request is served") {
  fault_injector faults{fault_options{}};
  CHECK_FALSE(faults.exits_at_start());
  CHECK(faults.init_reply_version() == 1);
  CHECK(actions({}, {init, loss("a"), fsa("a"), exit_request}) ==
        std::vector<fault_action>{serve, serve, serve, serve});
}

TEST_CASE("crash and hang fire on the request after `after` loss/FSA requests") {
  for (auto kind : {fault_kind::crash, fault_kind::hang}) {
    INFO(to_string(kind));
    const auto fired = kind == fault_kind::crash ? fault_action::crash : fault_action::hang;
    fault_options options;
    options.kind = kind;
    options.after = 2;
    // init and exit do not count.
    CHECK(actions(options, {init, loss("a"), exit_request, fsa("b"), loss("c")}) ==
          std::vector<fault_action>{serve, serve, serve, serve, fired});
    options.after = 0;
    CHECK(actions(options, {init, fsa("a")}) == std::vector<fault_action>{serve, fired});
  }
}

TEST_CASE("garbage fires once, then serving resumes") {
  fault_options options;
  options.kind = fault_kind::garbage;
  options.after = 1;
  fault_injector faults{options};
  CHECK(faults.on_request(loss("a")) == serve);
  CHECK(faults.on_request(loss("b")) == fault_action::garbage);
  CHECK(faults.on_request(loss("c")) == serve);
  CHECK(faults.on_request(fsa("d")) == serve);
  CHECK(faults.served() == 3);
}

TEST_CASE("the crash segment crashes whenever it is requested") {
  fault_options options;
  options.crash_segment = "bad";
  CHECK(actions(options, {loss("a"), fsa("bad")}) ==
        std::vector<fault_action>{serve, fault_action::crash});
  CHECK(actions(options, {loss("bad")}) == std::vector<fault_action>{fault_action::crash});
  // Also before a counting fault would fire.
  options.kind = fault_kind::hang;
  options.after = 5;
  CHECK(actions(options, {loss("a"), loss("bad")}) ==
        std::vector<fault_action>{serve, fault_action::crash});
}

TEST_CASE("the start and init faults") {
  fault_options options;
  options.kind = fault_kind::exit_at_start;
  CHECK(fault_injector{options}.exits_at_start());
  options.kind = fault_kind::no_init_reply;
  CHECK(actions(options, {init, loss("a")}) ==
        std::vector<fault_action>{fault_action::hang, serve});
  options.kind = fault_kind::bad_version;
  fault_injector bad_version{options};
  CHECK(bad_version.init_reply_version() == 2);
  CHECK(bad_version.on_request(init) == serve);
}

TEST_CASE("requested_segment names the segment of loss and FSA requests only") {
  CHECK(requested_segment(loss("x")) == std::string_view{"x"});
  CHECK(requested_segment(fsa("y")) == std::string_view{"y"});
  CHECK_FALSE(requested_segment(init));
  CHECK_FALSE(requested_segment(exit_request));
}

TEST_CASE("the garbage reply is framed but is not a pickle") {
  protocol::byte_buffer out;
  append_garbage_reply(out, protocol::framing::length_prefixed);
  protocol::frame_decoder decoder{protocol::framing::length_prefixed};
  REQUIRE_FALSE(decoder.feed(out.bytes()));
  auto message = decoder.next();
  REQUIRE(message);
  auto decoded = protocol::read_pickle(message->bytes());
  REQUIRE_FALSE(decoded);
  CHECK(decoded.error() == errc::protocol_error);
  // Without a length prefix the reader fails on the first byte already.
  protocol::byte_buffer raw;
  append_garbage_reply(raw, protocol::framing::raw);
  CHECK(raw.size() + 4 == out.size());
  protocol::frame_decoder raw_decoder{protocol::framing::raw};
  CHECK(raw_decoder.feed(raw.bytes()) == errc::protocol_error);
}

TEST_CASE("the newer fault kinds have option spellings and count requests") {
  for (auto kind : {fault_kind::oversized_prefix, fault_kind::wrong_shape, fault_kind::random}) {
    INFO(to_string(kind));
    CHECK(parse_fault_kind(to_string(kind)) == kind);
  }
  CHECK(counts_requests(fault_kind::oversized_prefix));
  CHECK(counts_requests(fault_kind::wrong_shape));
  CHECK_FALSE(counts_requests(fault_kind::random)); // no fault-after: a rate
}

TEST_CASE("wrong-shape fires on the next loss request, serving FSA requests before it") {
  fault_options options;
  options.kind = fault_kind::wrong_shape;
  options.after = 1;
  CHECK(actions(options, {loss("a"), fsa("b"), loss("c"), loss("d")}) ==
        std::vector<fault_action>{serve, serve, fault_action::wrong_shape, serve});
}

TEST_CASE("random faults come at their rate, of every kind, from their seed") {
  fault_options options;
  options.kind = fault_kind::random;
  options.rate = 0.25;
  options.seed = 7;
  std::vector<protocol::command> requests;
  for (int i = 0; i < 8000; ++i)
    requests.push_back(i % 4 == 3 ? fsa("f") : loss("l"));
  auto drawn = actions(options, requests);
  std::map<fault_action, size_t> counts;
  for (size_t i = 0; i < drawn.size(); ++i) {
    ++counts[drawn[i]];
    if (i % 4 == 3)
      CHECK(drawn[i] != fault_action::wrong_shape); // FSA requests: never
  }
  // 2000 faults expected; 5 sigma is about 190.
  const size_t faults = drawn.size() - counts[serve];
  CHECK(faults > 1800);
  CHECK(faults < 2200);
  for (auto kind :
       {fault_action::slow, fault_action::crash, fault_action::hang, fault_action::garbage,
        fault_action::oversized_prefix, fault_action::bomb, fault_action::wrong_shape})
    CHECK(counts[kind] > 100);
  // The same seed draws the same faults; init and exit are never faulted.
  CHECK(actions(options, requests) == drawn);
  CHECK(actions(options, {init, exit_request}) == std::vector<fault_action>{serve, serve});
  options.rate = 0;
  auto none = actions(options, requests);
  CHECK(std::count(none.begin(), none.end(), serve) == static_cast<ptrdiff_t>(none.size()));
}

TEST_CASE("the shared-memory faults fire on loss requests through the region only") {
  const protocol::command shared =
      protocol::loss_command{"s", 1, {}, protocol::shared_array{0, 1, 4}};
  fault_options outside;
  outside.kind = fault_kind::shm_outside;
  outside.after = 1;
  CHECK(actions(outside, {loss("a"), loss("b"), fsa("c"), shared, shared, shared}) ==
        std::vector<fault_action>{serve, serve, serve, fault_action::shm_outside, serve, serve});
  fault_options scribble;
  scribble.kind = fault_kind::shm_scribble;
  CHECK(actions(scribble, {loss("a"), shared, fsa("b"), shared}) ==
        std::vector<fault_action>{serve, fault_action::shm_scribble, serve,
                                  fault_action::shm_scribble});
  for (auto kind : {fault_kind::shm_shrink, fault_kind::shm_claim}) {
    fault_options options;
    options.kind = kind;
    CHECK(actions(options, {init, shared, loss("a")}) ==
          std::vector<fault_action>{serve, serve, serve});
    const fault_injector faults{options};
    CHECK(faults.shrinks_region() == (kind == fault_kind::shm_shrink));
    CHECK(faults.claims_region() == (kind == fault_kind::shm_claim));
  }
  for (const char* name : {"shm-outside", "shm-scribble", "shm-shrink", "shm-claim"})
    CHECK(to_string(*parse_fault_kind(name)) == std::string{name});
  CHECK(counts_requests(fault_kind::shm_outside));
  CHECK_FALSE(counts_requests(fault_kind::shm_scribble));
}
