#pragma once

/// @file
/// The request loop of `sprint-sim`: reads framed messages from the parent's
/// pipe, lets the fault injector decide about each request, has the protocol
/// service answer it and writes the reply back, until `exit`, end of input,
/// or a fault ends the process.

#include <cstddef>
#include <optional>
#include <string>

#include "protocol/byte_buffer.hpp"
#include "protocol/framing.hpp"
#include "sim/fault_injection.hpp"
#include "sim/sprint_service.hpp"
#include "sim/sprint_sim_exit.hpp"

namespace sprintrt::sim_tool {

/// Serves one parent over two blocking pipe ends. One request at a time, as
/// the protocol demands; buffers are kept between requests.
class pipe_server {
public:
  /// A server reading requests from `p2c_fd` and writing replies to `c2p_fd`.
  /// Both must stay open and both references valid while it runs.
  pipe_server(int p2c_fd, int c2p_fd, sim::sprint_service& service, sim::fault_injector& faults);

  /// Serves until the process must end; returns its exit status: `ok` after
  /// `exit`, `failure` at end of input or on a pipe error, `framing_error`
  /// when the input is not framed messages, `crash` for an injected crash.
  /// Hang faults never return.
  sim::sprint_sim_exit run();

private:
  // Handles the complete messages the decoder holds, in order; returns the
  // exit status if the process must end now.
  std::optional<sim::sprint_sim_exit> handle_pending();

  // Handles one complete message; returns the exit status if the process
  // must end now.
  std::optional<sim::sprint_sim_exit> handle(protocol::byte_buffer&& message);

  // Decides about and answers one decoded message, filling `reply_`.
  std::optional<sim::sprint_sim_exit> answer(const protocol::value& message, size_t number);

  // The `shm-shrink` fault, on the first request through the region.
  void try_to_shrink(const protocol::shared_array& reference);

  // The `shm-scribble` fault: writes NaN over the error signal of request
  // `number` (in `scribble_`) while the parent reads it.
  void scribble_after_reply(size_t number);

  int p2c_fd_;
  int c2p_fd_;
  sim::sprint_service& service_;
  sim::fault_injector& faults_;
  protocol::frame_decoder decoder_;
  protocol::byte_buffer reply_;
  /// What the current request is, for the debug log line.
  std::string description_;
  /// Messages received so far.
  size_t requests_ = 0;
  /// Whether `shm-shrink` has tried.
  bool shrink_tried_ = false;
  /// The error signal to scribble over after the reply (`shm-scribble`).
  std::optional<protocol::shared_array> scribble_;
};

} // namespace sprintrt::sim_tool
