#include "runtime/child_spawn.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include <spdlog/spdlog.h>

#include "runtime/child_environment.hpp"
#include "runtime/sprint_args.hpp"

namespace sprintrt::runtime {

namespace {

/// The lowest descriptor number the child's pipe ends are moved to in the
/// parent, so that none of them is 0..4 (the child's targets) and the dup2
/// actions cannot clobber each other.
constexpr int first_free_fd = 5;

caf::error system_error(const std::string& what, int err) {
  return make_error(errc::spawn_failed, what + ": " + std::strerror(err));
}

struct pipe_pair {
  unique_fd read;
  unique_fd write;
};

caf::expected<pipe_pair> make_pipe() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0)
    return system_error("pipe2", errno);
  return pipe_pair{unique_fd{fds[0]}, unique_fd{fds[1]}};
}

/// Moves `fd` to a number >= first_free_fd (close-on-exec stays set).
caf::error move_high(unique_fd& fd) {
  if (fd.get() >= first_free_fd)
    return {};
  int high = ::fcntl(fd.get(), F_DUPFD_CLOEXEC, first_free_fd);
  if (high < 0)
    return system_error("fcntl(F_DUPFD_CLOEXEC)", errno);
  fd.reset(high);
  return {};
}

caf::error set_non_blocking(const unique_fd& fd) {
  int flags = ::fcntl(fd.get(), F_GETFL);
  if (flags < 0 || ::fcntl(fd.get(), F_SETFL, flags | O_NONBLOCK) < 0)
    return system_error("fcntl(O_NONBLOCK)", errno);
  return {};
}

/// RAII for the posix_spawn attribute objects.
struct spawn_setup {
  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attr;
  spawn_setup() {
    posix_spawn_file_actions_init(&actions);
    posix_spawnattr_init(&attr);
  }
  ~spawn_setup() {
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
  }
  spawn_setup(const spawn_setup&) = delete;
  spawn_setup& operator=(const spawn_setup&) = delete;
};

} // namespace

caf::error check_executable(const std::string& path) {
  struct stat info;
  if (path.empty())
    return make_error(errc::spawn_failed, "sprintExecPath is empty");
  if (::stat(path.c_str(), &info) != 0)
    return make_error(errc::spawn_failed,
                      "sprintExecPath '" + path + "' does not exist: " + std::strerror(errno));
  if (!S_ISREG(info.st_mode))
    return make_error(errc::spawn_failed, "sprintExecPath '" + path + "' is not a regular file");
  if (::access(path.c_str(), X_OK) != 0)
    return make_error(errc::spawn_failed, "sprintExecPath '" + path + "' is not executable");
  return {};
}

caf::expected<spawned_child> spawn_sprint_child(const sprint_options& opts,
                                                const char* const* parent_environ) {
  if (auto err = check_executable(opts.sprint_exec_path))
    return err;
  auto p2c = make_pipe();
  auto c2p = make_pipe();
  auto output = make_pipe();
  if (!p2c)
    return p2c.error();
  if (!c2p)
    return c2p.error();
  if (!output)
    return output.error();
  for (auto* fd : {&p2c->read, &c2p->write, &output->write})
    if (auto err = move_high(*fd))
      return err;
  for (auto* fd : {&p2c->write, &c2p->read, &output->read})
    if (auto err = set_non_blocking(*fd))
      return err;
  // Larger pipes move large messages in fewer chunks. The kernel may refuse
  // (pipe-max-size); that only costs speed.
  for (int fd : {p2c->write.get(), c2p->read.get()})
    if (::fcntl(fd, F_SETPIPE_SZ, pipe_buffer_size) < 0)
      spdlog::debug("F_SETPIPE_SZ({}) failed: {}", pipe_buffer_size, std::strerror(errno));

  auto env = child_environment(opts.env, parent_environ);
  spawned_child child;
  child.argv = build_sprint_args(opts, child_c2p_fd, child_p2c_fd, environment_lookup(env));

  spawn_setup setup;
  // dup2 clears close-on-exec on the targets; closefrom removes everything
  // else the child inherited, whoever opened it.
  posix_spawn_file_actions_addopen(&setup.actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&setup.actions, output->write.get(), 1);
  posix_spawn_file_actions_adddup2(&setup.actions, output->write.get(), 2);
  posix_spawn_file_actions_adddup2(&setup.actions, c2p->write.get(), child_c2p_fd);
  posix_spawn_file_actions_adddup2(&setup.actions, p2c->read.get(), child_p2c_fd);
  posix_spawn_file_actions_addclosefrom_np(&setup.actions, first_free_fd);
  // The io thread that spawns blocks SIGPIPE, and the trainer may have set
  // dispositions of its own; a child must start with every signal at its
  // default and none blocked, as if started from a shell.
  sigset_t all;
  sigset_t none;
  sigfillset(&all);
  sigemptyset(&none);
  posix_spawnattr_setsigdefault(&setup.attr, &all);
  posix_spawnattr_setsigmask(&setup.attr, &none);
  posix_spawnattr_setflags(&setup.attr, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);

  std::vector<char*> argv;
  for (auto& arg : child.argv)
    argv.push_back(arg.data());
  argv.push_back(nullptr);
  std::vector<char*> envp;
  for (auto& var : env)
    envp.push_back(var.data());
  envp.push_back(nullptr);
  int rc = ::posix_spawn(&child.pid, opts.sprint_exec_path.c_str(), &setup.actions, &setup.attr,
                         argv.data(), envp.data());
  if (rc != 0)
    return system_error("cannot start '" + opts.sprint_exec_path + "'", rc);
  child.to_child = std::move(p2c->write);
  child.from_child = std::move(c2p->read);
  child.output = std::move(output->read);
  // The child's ends close here, as `p2c`, `c2p` and `output` go out of scope:
  // the parent must not hold them, or it would never see EOF.
  return child;
}

} // namespace sprintrt::runtime
