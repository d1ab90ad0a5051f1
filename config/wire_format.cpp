#include "config/wire_format.hpp"

namespace sprintrt::config {

protocol::framing wire_framing(pipe_framing framing) noexcept {
  return framing == pipe_framing::raw ? protocol::framing::raw : protocol::framing::length_prefixed;
}

protocol::wire_format wire_format_of(const sprint_options& opts) {
  protocol::wire_format format;
  format.framing = wire_framing(opts.framing);
  format.array_module = opts.array_global_module;
  return format;
}

} // namespace sprintrt::config
