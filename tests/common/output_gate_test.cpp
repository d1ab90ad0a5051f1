// The output gate: writes run while it is open and never after `close` has
// returned, and `close` waits for a write under way.

#include "sprintrt/output_gate.hpp"

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <future>
#include <thread>

using namespace sprintrt;

TEST_CASE("an open gate runs writes, a closed one refuses them") {
  output_gate gate;
  int writes = 0;
  CHECK(gate.write_if_open([&] { ++writes; }));
  CHECK(gate.write_if_open([&] { ++writes; }));
  CHECK_FALSE(gate.closed());
  gate.close();
  CHECK(gate.closed());
  CHECK_FALSE(gate.write_if_open([&] { ++writes; }));
  CHECK(writes == 2);
  gate.close(); // idempotent
  CHECK(gate.closed());
}

TEST_CASE("close waits for the write under way to finish") {
  using namespace std::chrono_literals;
  output_gate gate;
  std::atomic<bool> write_done{false};
  std::promise<void> writing;
  std::thread writer{[&] {
    gate.write_if_open([&] {
      writing.set_value();
      std::this_thread::sleep_for(100ms);
      write_done = true;
    });
  }};
  writing.get_future().wait();
  gate.close();
  // Had close not waited, the write would still be sleeping.
  CHECK(write_done);
  writer.join();
}
