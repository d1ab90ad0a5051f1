#include "actors/remote/remote_tls.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/sec.hpp>

namespace sprintrt::detail {

std::string tls_problem(caf::actor_system& system, const tls_files& tls) {
  if (tls.empty())
    return {};
  const auto& config = system.config();
  if (!system.has_openssl_manager() || config.openssl_certificate != tls.certificate ||
      config.openssl_key != tls.key || config.openssl_cafile != tls.ca)
    return "remoteTls asks for TLS with certificate '" + tls.certificate + "', key '" + tls.key +
           "' and CA '" + tls.ca + "', but the runtime was made with " +
           (system.has_openssl_manager() ? "other TLS files" : "no TLS") +
           " (CAF 0.17 sets TLS up once per process: make the runtime with "
           "runtime_settings_for(options))";
  for (const auto& file : {tls.certificate, tls.key, tls.ca})
    if (::access(file.c_str(), R_OK) != 0)
      return "remoteTls: cannot read '" + file + "': " + std::strerror(errno);
  return {};
}

std::string connect_failure_hint(const tls_files& tls, const caf::error& err) {
  if (!tls.empty())
    return " (with TLS, a refused connection usually means that one end does not trust the "
           "other's certificate (each must be signed by a CA the other end names), or that "
           "the server does not use TLS)";
  if (err == caf::sec::disconnect_during_handshake)
    return " (the server closed the connection before CAF's handshake: it most likely "
           "expects TLS, which this end does not use; give the options remoteTls, or run "
           "the server with --insecure)";
  return "";
}

} // namespace sprintrt::detail
