#pragma once

/// @file
/// Where sprintrt's own log records go. The library never logs through
/// spdlog's default logger (which writes to stdout): it logs through one
/// logger of its own, by default named "sprintrt" and writing to stderr, or
/// through the logger an embedding program installs here (an engine's own
/// logger, or one over the engine's sinks), e.g.
///
/// ```cpp
/// sprintrt::set_logger(std::make_shared<spdlog::logger>("sprintrt", engine_sink));
/// ```
///
/// The logger is process-wide, like the children and descriptors it reports
/// on: every runtime in the process logs through it. What a Sprint child
/// prints is logged by the runtime under "sprintrt.child" when a logger of
/// that name is registered with spdlog, and through this logger otherwise.
///
/// Levels: `warn` for what failed and was handled (a segment that failed, a
/// child restarted), `error` for what a caller will see fail, `info` for
/// children started and stopped, `debug` and `trace` for messages. The
/// default logger starts at spdlog's global level of the moment it is made
/// (the first record, or the first runtime) and is not in spdlog's registry,
/// so `spdlog::set_level` does not reach it later: set its level with
/// `sprintrt::logger().set_level(...)`, or install a logger of your own.

#include <memory>

namespace spdlog {
class logger;
} // namespace spdlog

namespace sprintrt {

/// Makes `target` the logger of every later sprintrt log record; a null
/// `target` restores the default (stderr). Thread-safe. sprintrt keeps
/// every logger installed alive until the process ends (a record being
/// written on another thread may still use the one replaced), so install
/// one per program, not one per call.
void set_logger(std::shared_ptr<spdlog::logger> target);

/// Returns the logger sprintrt logs through now. Thread-safe and lock-free
/// (safe in a child after `fork`).
spdlog::logger& logger();

} // namespace sprintrt
