// `sprintrt-bench remote`: what the network path of a remote pool costs for
// large segments, against what loopback TCP allows.
//
// Both sides move the same bytes (a segment's log-posteriors out, an error
// signal of the same size back) between two processes over 127.0.0.1:
// - raw: a forked child that reads a length-prefixed message whole from a
//   TCP socket and writes it back (store and forward, as a server does);
// - remote pool: a trainer's pool whose only worker is a remote pool, in a
//   forked child that publishes an echo pool through CAF's middleman (it
//   answers every segment with its own log-posteriors as the error signal,
//   so no Sprint computation is timed). The timed path is the trainer's:
//   the pool, the remote worker copying the segment out of its slice, CAF's
//   serialization (raw bytes), BASP over TCP, the server's deserialization,
//   the reply the same way back, and the copy into the caller's slice.
// Throughput counts the bytes of both directions per round trip.

#include "tools/bench/remote_bench.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/io/middleman.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <nlohmann/json.hpp>

#include "sprintrt/pool_client.hpp"
#include "sprintrt/remote_interface.hpp"
#include "sprintrt/sprint_runtime.hpp"
#include "tools/bench/bench_support.hpp"

namespace sprintrt::bench {

namespace {

struct remote_bench_options {
  bench_options common;
  size_t megabytes = 48;
};

[[noreturn]] void fail_errno(const std::string& what) {
  throw std::runtime_error(what + ": " + std::strerror(errno));
}

void write_all(int fd, const char* data, size_t size) {
  write_fully(fd, data, size, "remote bench");
}

bool read_all(int fd, char* data, size_t size) {
  return read_fully(fd, data, size, "remote bench");
}

/// A forked child process, killed and reaped on destruction.
struct forked_child {
  pid_t pid = -1;
  ~forked_child() {
    if (pid > 0) {
      ::kill(pid, SIGTERM);
      ::waitpid(pid, nullptr, 0);
    }
  }
};

/// Listens on 127.0.0.1 (any port); returns the socket and the port.
std::pair<int, uint16_t> listen_loopback() {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    fail_errno("socket");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), len) != 0 || ::listen(fd, 1) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0)
    fail_errno("listen on 127.0.0.1");
  return {fd, ntohs(addr.sin_port)};
}

/// The raw baseline's child: echoes length-prefixed messages on one
/// connection until it closes.
[[noreturn]] void raw_echo_child(int listener) {
  int conn = ::accept(listener, nullptr, nullptr);
  std::vector<char> buffer;
  uint64_t size = 0;
  while (conn >= 0 && read_all(conn, reinterpret_cast<char*>(&size), sizeof size)) {
    buffer.resize(size);
    if (!read_all(conn, buffer.data(), size))
      break;
    write_all(conn, buffer.data(), size);
  }
  ::_exit(0);
}

/// The remote pool's child: publishes an echo pool and serves until killed.
[[noreturn]] void echo_pool_child(int port_pipe) {
  caf::actor_system_config config;
  config.set("scheduler.max-threads", size_t{2});
  config.load<caf::io::middleman>();
  add_remote_message_types(config);
  caf::actor_system system{config};
  auto echo = system.spawn([]() -> remote_pool_actor::behavior_type {
    return {
        [](hello_atom, const std::string&, const std::string&) { return uint64_t{1}; },
        [](compute_atom, remote_segment& segment) {
          return remote_loss{0.0, std::move(segment.log_posteriors)};
        },
        [](fsa_atom, const std::string&) { return remote_fsa{}; },
    };
  });
  auto port = system.middleman().publish(echo, 0, "127.0.0.1", true);
  uint16_t value = port ? *port : 0;
  write_all(port_pipe, reinterpret_cast<const char*>(&value), sizeof value);
  ::close(port_pipe);
  ::pause();
  ::_exit(0);
}

void run_remote_bench(const remote_bench_options& options) {
  const size_t dim = 4000;
  const size_t frames = options.megabytes * 1000 * 1000 / (dim * sizeof(float));
  const size_t bytes = frames * dim * sizeof(float);

  // Both children are forked before this process starts any thread.
  auto [listener, raw_port] = listen_loopback();
  forked_child raw_child;
  raw_child.pid = ::fork();
  if (raw_child.pid == 0)
    raw_echo_child(listener);
  ::close(listener);
  int port_pipe[2];
  if (::pipe(port_pipe) != 0)
    fail_errno("pipe");
  forked_child pool_child;
  pool_child.pid = ::fork();
  if (pool_child.pid == 0) {
    ::close(port_pipe[0]);
    echo_pool_child(port_pipe[1]);
  }
  ::close(port_pipe[1]);
  uint16_t pool_port = 0;
  bool got_port = read_all(port_pipe[0], reinterpret_cast<char*>(&pool_port), sizeof pool_port);
  ::close(port_pipe[0]);
  if (!got_port || pool_port == 0)
    throw std::runtime_error("the echo pool could not be published");

  // Raw: one connection, the same bytes each way.
  int conn = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(raw_port);
  if (::connect(conn, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0)
    fail_errno("connect to the raw echo");
  std::vector<char> out(bytes, 1), in(bytes);
  auto raw = measure(options.common.repeat, [&] {
    uint64_t size = bytes;
    write_all(conn, reinterpret_cast<const char*>(&size), sizeof size);
    write_all(conn, out.data(), bytes);
    if (!read_all(conn, in.data(), bytes))
      throw std::runtime_error("the raw echo closed the connection");
  });
  ::close(conn);

  // The remote pool, through the trainer's pool and its remote worker.
  sprint_options opts;
  opts.sprint_exec_path = "/bin/false"; // never started: no local worker
  opts.num_instances = 0;
  opts.remote = {{"127.0.0.1", pool_port}};
  sprint_runtime rt;
  pool_client client{rt, opts};
  auto job =
      segment_job{"bench", matrix_slice::dense(frames, dim), matrix_slice::dense(frames, dim)};
  std::fill(job.log_posteriors.storage->begin(), job.log_posteriors.storage->end(), -1.5f);
  auto remote = measure(options.common.repeat, [&] {
    auto loss = client.compute_segment(job);
    if (!loss)
      throw std::runtime_error("remote pool: " + render(loss.error()));
  });
  if ((*job.error_signal.storage)[bytes / sizeof(float) - 1] != -1.5f)
    throw std::runtime_error("the remote pool's echo came back wrong");
  rt.shutdown();

  double moved = 2.0 * static_cast<double>(bytes);
  double raw_mbs = megabytes_per_second(moved, raw.median_us);
  double remote_mbs = megabytes_per_second(moved, remote.median_us);
  std::vector<nlohmann::json> rows{
      {{"path", "raw TCP echo"},
       {"median_ms", raw.median_us / 1000},
       {"mb_per_s", raw_mbs},
       {"ratio", 1.0}},
      {{"path", "remote pool"},
       {"median_ms", remote.median_us / 1000},
       {"mb_per_s", remote_mbs},
       {"ratio", remote_mbs / raw_mbs}},
  };
  report(options.common, "remote",
         "a " + std::to_string(bytes / 1000000) +
             " MB segment to a remote pool and its error "
             "signal back, over loopback (target: ratio >= 0.5); " +
             machine_load(),
         {{"path", "path", 14},
          {"median_ms", "median ms", 10},
          {"mb_per_s", "MB/s", 8},
          {"ratio", "ratio", 6}},
         rows);
}

} // namespace

void add_remote_bench(CLI::App& app) {
  auto options = std::make_shared<remote_bench_options>();
  options->common.repeat = 5;
  auto* command = app.add_subcommand(
      "remote", "large segments through a remote pool over loopback, against a raw TCP echo");
  add_common_options(*command, options->common);
  command->add_option("--megabytes", options->megabytes, "the segment's size")
      ->capture_default_str();
  command->callback([options] { run_remote_bench(*options); });
}

} // namespace sprintrt::bench
