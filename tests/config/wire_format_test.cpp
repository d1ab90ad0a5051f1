#include "config/wire_format.hpp"

#include <catch2/catch.hpp>

using namespace sprintrt;

TEST_CASE("the options select the framing and array module of the wire") {
  sprint_options opts;
  auto format = config::wire_format_of(opts);
  CHECK(format.framing == protocol::framing::length_prefixed);
  CHECK(format.array_module == "returnn.util.task_system");
  CHECK(format.max_message_size == protocol::default_max_message_size);

  opts.framing = pipe_framing::raw;
  opts.array_global_module = "TaskSystem";
  format = config::wire_format_of(opts);
  CHECK(format.framing == protocol::framing::raw);
  CHECK(format.array_module == "TaskSystem");
  CHECK(config::wire_framing(pipe_framing::length_prefixed) == protocol::framing::length_prefixed);
}
