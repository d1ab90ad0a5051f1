// `sprintrt serve`: a worker pool on this machine, published through CAF's
// middleman for trainers on other machines (their option `remote`).

#include <cerrno>
#include <csignal>
#include <cstring>
#include <fstream>
#include <iostream>

#include <caf/actor_system.hpp>
#include <caf/io/middleman.hpp>
#include <caf/openssl/publish.hpp>
#include <netdb.h>
#include <nlohmann/json.hpp>
#include <pthread.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <unistd.h>

#include "actors/remote/remote_server.hpp"
#include "sprintrt/sprint_runtime.hpp"
#include "tools/sprintrt/commands.hpp"

namespace sprintrt::cli {

namespace {

struct serve_options {
  std::string config;
  uint16_t port = 0;
  std::string bind = "127.0.0.1";
  bool insecure = false;
  tls_files tls;
  std::string port_file;
  bool json_output = false;
};

int fail(const std::string& what) {
  std::cerr << "sprintrt serve: " << what << "\n";
  return 1;
}

/// Why listening on `address`:`port` fails, from the system itself (CAF
/// says only "tcp socket creation failed"): a plain socket is bound there
/// and closed again. Empty if it can be bound.
std::string bind_failure(const std::string& address, uint16_t port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* found = nullptr;
  if (int status = ::getaddrinfo(address.c_str(), std::to_string(port).c_str(), &hints, &found);
      status != 0)
    return "cannot resolve the address: " + std::string{::gai_strerror(status)};
  std::string why;
  for (auto* info = found; info != nullptr; info = info->ai_next) {
    int fd = ::socket(info->ai_family, info->ai_socktype | SOCK_CLOEXEC, info->ai_protocol);
    if (fd < 0) {
      why = std::strerror(errno);
      continue;
    }
    int reuse = 1; // as CAF's own listening sockets
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &reuse, sizeof reuse);
    int status = ::bind(fd, info->ai_addr, info->ai_addrlen);
    int error = errno;
    ::close(fd);
    if (status == 0) {
      why.clear();
      break;
    }
    why = error == EADDRINUSE ? "the port is in use (another process listens there; pick another "
                                "--port, or 0 for any free one)"
                              : std::strerror(error);
  }
  ::freeaddrinfo(found);
  return why;
}

/// Whether `address` can only be reached from this machine.
bool is_loopback(const std::string& address) {
  return address == "localhost" || address == "::1" || address.rfind("127.", 0) == 0;
}

int run(const serve_options& cli) {
  auto opts = load_options(cli.config);
  if (!opts)
    return fail(render(opts.error()));
  if (!opts->remote.empty())
    return fail(cli.config + ": a server runs its own children: its options may not name "
                             "remote pools ('remote')");
  if (opts->num_instances == 0)
    return fail(cli.config + ": a server needs at least one worker ('numInstances')");
  const auto& tls = cli.tls;
  bool some_tls = !tls.certificate.empty() || !tls.key.empty() || !tls.ca.empty();
  if (some_tls && (tls.certificate.empty() || tls.key.empty() || tls.ca.empty()))
    return fail("TLS needs all of --tls-cert, --tls-key and --tls-ca");
  for (const auto& file : {tls.certificate, tls.key, tls.ca})
    if (!file.empty() && ::access(file.c_str(), R_OK) != 0)
      return fail("cannot read " + file + ": " + std::strerror(errno));
  if (!is_loopback(cli.bind) && tls.empty() && !cli.insecure)
    return fail("--bind " + cli.bind +
                " would let other machines in without TLS: give "
                "--tls-cert, --tls-key and --tls-ca, or --insecure on a network you trust");
  // SIGINT and SIGTERM wait for the main thread: blocked here, before any
  // other thread starts, so every thread inherits the mask (children get an
  // empty mask and default dispositions when they are spawned).
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  sprint_runtime::settings settings;
  settings.tls = tls;
  sprint_runtime rt{settings};
  auto pool = rt.pool(*opts);
  auto server = sprintrt::detail::spawn_remote_server(rt.system(), pool, opts->num_instances, *opts,
                                                      "sprintrt serve");
  auto port = tls.empty()
                  ? rt.system().middleman().publish(server, cli.port, cli.bind.c_str(), true)
                  : caf::openssl::publish(server, cli.port, cli.bind.c_str(), true);
  if (!port) {
    auto why = bind_failure(cli.bind, cli.port);
    return fail("cannot listen on " + cli.bind + ":" + std::to_string(cli.port) + ": " +
                (why.empty() ? rt.system().render(port.error()) : why));
  }
  spdlog::info("sprintrt serve: {} workers for {} listening on {}:{}{}", opts->num_instances,
               cli.config, cli.bind, *port, tls.empty() ? "" : " (TLS)");
  if (!cli.port_file.empty()) {
    // Written whole under another name, then renamed: a reader never sees
    // half of it.
    std::string partial = cli.port_file + ".partial";
    std::ofstream{partial} << *port << "\n";
    if (std::rename(partial.c_str(), cli.port_file.c_str()) != 0)
      return fail("cannot write --port-file " + cli.port_file + ": " + std::strerror(errno));
  }
  if (cli.json_output)
    std::cout << nlohmann::json{{"bind", cli.bind},
                                {"port", *port},
                                {"workers", opts->num_instances}}
                     .dump()
              << std::endl;
  else
    std::cout << "listening on " << cli.bind << ":" << *port << std::endl;
  int signal = 0;
  sigwait(&stop_signals, &signal);
  // A second signal ends the process at once, if stopping gets stuck (the
  // children then see their pipes close and exit).
  pthread_sigmask(SIG_UNBLOCK, &stop_signals, nullptr);
  spdlog::info("sprintrt serve: {}: stopping the workers", strsignal(signal));
  rt.system().middleman().unpublish(server, *port);
  caf::anon_send_exit(server, caf::exit_reason::user_shutdown);
  rt.shutdown();
  return 0;
}

} // namespace

void add_serve_command(CLI::App& app, int& exit_code) {
  auto cli = std::make_shared<serve_options>();
  auto* cmd = app.add_subcommand(
      "serve", "Run a worker pool for trainers on other machines (their option 'remote'); "
               "SIGINT or SIGTERM stops it and its children");
  cmd->add_option("--config", cli->config,
                  "Options JSON file (RETURNN's sprint_opts), the trainers' own")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("--port", cli->port, "TCP port to listen on (0: any free one, see --port-file)")
      ->required();
  cmd->add_option("--bind", cli->bind, "Address to listen on")->capture_default_str();
  cmd->add_flag("--insecure", cli->insecure,
                "Allow an address other machines can reach, without TLS");
  cmd->add_option("--tls-cert", cli->tls.certificate,
                  "TLS: this server's certificate (PEM); trainers must trust its CA");
  cmd->add_option("--tls-key", cli->tls.key, "TLS: its private key (PEM, unencrypted)");
  cmd->add_option("--tls-ca", cli->tls.ca,
                  "TLS: the CA that trainers' certificates must be signed by (PEM)");
  cmd->add_option("--port-file", cli->port_file, "Write the port listened on to this file");
  cmd->add_flag("--json", cli->json_output, "Print where it listens as one JSON line");
  cmd->callback([cli, &exit_code, &app] {
    // Connections are what a server has to say: at least info, unless the
    // user chose a level.
    if (app.get_option("--log-level")->count() == 0)
      spdlog::set_level(spdlog::level::info);
    exit_code = run(*cli);
  });
}

} // namespace sprintrt::cli
