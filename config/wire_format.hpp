#pragma once

/// @file
/// The wire format a set of options selects. The public options name the
/// framing with their own enum (public headers do not include the protocol
/// library); this is the one place that maps it onto the codec's types.

#include "protocol/framing.hpp"
#include "protocol/messages.hpp"
#include "sprintrt/options.hpp"

namespace sprintrt::config {

/// Returns the codec's framing for the options' `framing`.
protocol::framing wire_framing(pipe_framing framing) noexcept;

/// Returns the format messages to and from a child of `opts` use: its
/// framing and array-constructor module, and the default maximum size.
protocol::wire_format wire_format_of(const sprint_options& opts);

} // namespace sprintrt::config
