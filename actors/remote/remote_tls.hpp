#pragma once

/// @file
/// Why a connection to a remote pool cannot or did not work, as far as TLS
/// explains it: shared by the remote worker and `sprintrt doctor`.

#include <string>

#include <caf/fwd.hpp>

#include "sprintrt/options.hpp"

namespace sprintrt::detail {

/// Why TLS with `tls` cannot work in `system` (empty if it can, or if no
/// TLS is asked for): CAF 0.17 sets TLS up once per actor system, and its
/// OpenSSL session throws on its network thread (ending the process) when
/// a file cannot be read, so both are checked before each connection.
std::string tls_problem(caf::actor_system& system, const tls_files& tls);

/// What a failed connection with `err` most likely means, given this end's
/// `tls` (CAF does not say): with TLS, an untrusted certificate or a server
/// without TLS; without TLS, a server that uses it (CAF reports only that
/// the peer disconnected during the handshake). Empty when nothing is known.
std::string connect_failure_hint(const tls_files& tls, const caf::error& err);

} // namespace sprintrt::detail
