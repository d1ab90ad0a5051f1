// A large segment to a remote pool and back over loopback, against a raw TCP
// echo of the same bytes, both served by `--helper=remote-echo` (BENCHMARKS.md,
// "Remote pool").

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/io/middleman.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "sprintrt/remote_interface.hpp"
#include "tools/bench/bench.hpp"

namespace sprintrt::bench {

namespace {

[[noreturn]] void fail_errno(const std::string& what) {
  throw std::runtime_error(what + ": " + std::strerror(errno));
}

// A TCP socket and 127.0.0.1 at `port` (0: any).
std::pair<int, sockaddr_in> loopback(uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    fail_errno("socket");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(port);
  return {fd, addr};
}

// Echoes length-prefixed messages on one connection until it closes.
void serve_tcp_echo(int listener) {
  int conn = ::accept(listener, nullptr, nullptr);
  std::vector<char> buffer;
  uint64_t size = 0;
  try {
    while (conn >= 0 && read_fully(conn, reinterpret_cast<char*>(&size), sizeof size, "echo")) {
      buffer.resize(size);
      if (!read_fully(conn, buffer.data(), size, "echo"))
        break;
      write_fully(conn, buffer.data(), size, "echo");
    }
  } catch (const std::exception&) {
    // The trainer side went away: nothing left to echo.
  }
  if (conn >= 0)
    ::close(conn);
}

// The helper process and the connection to its TCP echo.
struct remote_rig {
  remote_rig() : child(spawn_program({world().settings().self, "--helper=remote-echo"})) {
    uint16_t ports[2] = {0, 0};
    const bool got =
        read_fully(child.from_child, reinterpret_cast<char*>(ports), sizeof ports, "ports");
    ::close(child.from_child);
    if (!got || ports[0] == 0 || ports[1] == 0)
      throw std::runtime_error("the remote echo could not listen or publish its pool");
    auto [fd, addr] = loopback(ports[0]);
    conn = fd;
    if (::connect(conn, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0)
      fail_errno("connect to the TCP echo");
    sprint_options opts;
    opts.sprint_exec_path = "/bin/false"; // never started: no local worker
    opts.num_instances = 0;
    opts.remote = {{"127.0.0.1", ports[1]}};
    client = std::make_unique<pool_client>(world().runtime(), opts);
  }

  ~remote_rig() {
    client.reset();
    if (conn >= 0)
      ::close(conn);
    ::kill(child.pid, SIGTERM);
    reap(child.pid);
  }

  child_program child;
  int conn = -1;
  std::unique_ptr<pool_client> client;
};

remote_rig& rig() {
  return world().rig<remote_rig>("remote", [] { return std::make_unique<remote_rig>(); });
}

constexpr size_t dim = 4000;

} // namespace

int run_remote_echo_helper() {
  auto [listener, addr] = loopback(0);
  socklen_t len = sizeof addr;
  if (::bind(listener, reinterpret_cast<sockaddr*>(&addr), len) != 0 ||
      ::listen(listener, 1) != 0 ||
      ::getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len) != 0)
    fail_errno("listen on 127.0.0.1");
  std::thread{[listener = listener] { serve_tcp_echo(listener); }}.detach();
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
        [](fsa_atom, const fsa_query&) { return remote_fsa{}; },
    };
  });
  auto pool_port = system.middleman().publish(echo, 0, "127.0.0.1", true);
  const uint16_t ports[2] = {ntohs(addr.sin_port), pool_port ? *pool_port : uint16_t{0}};
  write_fully(1, reinterpret_cast<const char*>(ports), sizeof ports, "ports");
  ::close(1);
  ::pause(); // until the trainer side kills it
  return 0;
}

void register_remote_benchmarks() {
  const size_t megabytes = world().settings().quick ? 4 : 48;
  const size_t frames = megabytes * 1000 * 1000 / (dim * sizeof(float));
  const size_t bytes = frames * dim * sizeof(float);
  const std::string shape = "MB:" + std::to_string(megabytes);
  const std::string tcp = "baseline/tcp_echo/" + shape;
  add_benchmark(tcp, benchmark::kMillisecond, timing::real, [bytes](bench_state& state) {
    auto& r = rig();
    std::vector<char> out(bytes, 1);
    std::vector<char> in(bytes);
    run_warm(state, [&] {
      uint64_t size = bytes;
      write_fully(r.conn, reinterpret_cast<const char*>(&size), sizeof size, "TCP echo");
      write_fully(r.conn, out.data(), bytes, "TCP echo");
      if (!read_fully(r.conn, in.data(), bytes, "TCP echo"))
        throw std::runtime_error("the TCP echo closed the connection");
    });
  });
  const std::string remote = "remote/pool_echo/" + shape;
  add_benchmark(remote, benchmark::kMillisecond, timing::real, [frames, bytes](bench_state& state) {
    auto& r = rig();
    segment_job job{"bench", matrix_slice::dense(frames, dim), matrix_slice::dense(frames, dim)};
    std::fill(job.log_posteriors.storage->begin(), job.log_posteriors.storage->end(), -1.5f);
    run_warm(state, [&] { unwrap(r.client->compute_segment(job), "remote pool"); });
    if ((*job.error_signal.storage)[bytes / sizeof(float) - 1] != -1.5f)
      throw std::runtime_error("the remote pool's echo came back wrong");
  });
  declare_figure("a " + std::to_string(megabytes) +
                     " MB segment to a remote pool and its error signal back "
                     "over loopback: "
                     "fraction of a raw TCP echo's throughput",
                 "ms/segment", remote, tcp, "baseline/value", ">= 0.5");
}

} // namespace sprintrt::bench
