#pragma once

/// @file
/// What a trainer and a remote pool compare when they connect: the remote
/// interface's version and the Sprint options that decide the results.

#include <string>

#include <caf/error.hpp>

#include "sprintrt/options.hpp"

namespace sprintrt::detail {

/// The options that must be equal on both ends, as canonical JSON: those the
/// option table (config/option_table.cpp) declares `shared`, leaving out
/// those about the local machine and process. A server may run a different
/// number of children with other timeouts; it must run the same Sprint, with
/// the same arguments and protocol settings.
std::string remote_options_key(const sprint_options& opts);

/// Checks a trainer's handshake at the server `server`: the interface
/// version must be this build's, the options key the server's own (the same
/// JSON value, however written). Errors are `invalid_options`, naming each
/// option that differs with both values.
caf::error check_handshake(const std::string& server, const std::string& interface,
                           const std::string& trainer_key, const std::string& server_key);

} // namespace sprintrt::detail
