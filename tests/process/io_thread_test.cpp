// The io thread outlives a handler that throws, and stops cleanly.

#include "process/io_thread.hpp"

#include <catch2/catch.hpp>

#include <chrono>
#include <future>
#include <stdexcept>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

using namespace sprintrt::process;

TEST_CASE("a handler that throws neither terminates the process nor stops the io thread") {
  io_thread io;
  std::promise<void> thrown;
  boost::asio::post(io.context(), [&] {
    thrown.set_value();
    throw std::runtime_error("a handler's bug");
  });
  REQUIRE(thrown.get_future().wait_for(std::chrono::seconds{10}) == std::future_status::ready);
  // The next handler still runs.
  std::promise<void> after;
  boost::asio::post(io.context(), [&] { after.set_value(); });
  CHECK(after.get_future().wait_for(std::chrono::seconds{10}) == std::future_status::ready);
  io.stop();
  CHECK(io.stopped());
}
