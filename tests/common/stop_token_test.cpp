#include "sprintrt/stop_token.hpp"

#include <catch2/catch.hpp>

#include <thread>

using sprintrt::stop_source;
using sprintrt::stop_token;

TEST_CASE("a default token never stops") {
  stop_token token;
  CHECK_FALSE(token.stop_possible());
  CHECK_FALSE(token.stop_requested());
}

TEST_CASE("a stop requested on one thread is seen through every token of the source") {
  stop_source source;
  auto first = source.get_token();
  auto copy = source;
  auto second = copy.get_token();
  CHECK(first.stop_possible());
  CHECK_FALSE(first.stop_requested());
  bool was_first = false;
  std::thread requester{[&] { was_first = copy.request_stop(); }};
  requester.join();
  CHECK(was_first);
  CHECK_FALSE(source.request_stop()); // already requested
  CHECK(first.stop_requested());
  CHECK(second.stop_requested());
  CHECK(source.stop_requested());
}

TEST_CASE("a poll hook that returns true requests the stop, and is not asked again") {
  int polls = 0;
  stop_source source{[&] { return ++polls == 3; }};
  auto token = source.get_token();
  CHECK_FALSE(token.stop_requested());
  CHECK_FALSE(token.stop_requested());
  CHECK_FALSE(source.stop_requested()); // the source itself never polls
  CHECK(token.stop_requested());
  CHECK(source.stop_requested());
  CHECK(token.stop_requested());
  CHECK(polls == 3);
}
