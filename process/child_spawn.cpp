#include "process/child_spawn.hpp"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdint>
#include <cstring>

#include <spdlog/spdlog.h>

#include "config/child_environment.hpp"
#include "config/sprint_args.hpp"
#include "sprintrt/logging.hpp"

// The code between clone and execve must not touch sanitizer state (see
// `child_main`).
#if defined(__has_attribute)
#if __has_attribute(no_sanitize)
#define SPRINTRT_UNSANITIZED __attribute__((no_sanitize("address", "undefined")))
#endif
#endif
#ifndef SPRINTRT_UNSANITIZED
#define SPRINTRT_UNSANITIZED
#endif

namespace sprintrt::process {

namespace {

/// The lowest descriptor number the child's descriptors are moved to in the
/// parent, so that none of them is 0..5 (the child's targets) and the dup2
/// actions cannot clobber each other.
constexpr int first_free_fd = child_shared_memory_fd + 1;

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

/// Everything the child does between clone and execve, prepared by the
/// parent: the child shares the parent's memory (CLONE_VM) and may only make
/// async-signal-safe calls, so nothing here is allocated or computed there.
struct exec_plan {
  const char* path = nullptr;
  char* const* argv = nullptr;
  char* const* envp = nullptr;
  /// The descriptors that become the child's 0..4 (and 5, the shared
  /// region, if offered), each >= first_free_fd.
  std::array<int, 6> fds{};
  /// How many of `fds` the child gets: 5, or 6 with a shared region.
  int num_fds = 5;
  /// The parent's pid, read before the clone.
  pid_t parent = -1;
  /// The child writes to the parent's own stdout and stderr (`childOutput`
  /// "inherit"), which may be a terminal.
  bool inherits_output = false;
  /// An upper bound of open descriptor numbers, for closing them one by one
  /// where close_range is missing (Linux before 5.9).
  int max_fd = 0;
  /// Set by the child when a step failed (the parent reads them once the
  /// child has exited: CLONE_VFORK suspends the parent until then, or until
  /// execve succeeded).
  const char* failed_step = nullptr;
  int failed_errno = 0;
};

/// Records the failed step of the child and ends it.
[[noreturn]] SPRINTRT_UNSANITIZED void child_failed(exec_plan& plan, const char* step) {
  plan.failed_step = step;
  plan.failed_errno = errno;
  ::_exit(127);
}

/// The child, from clone to execve. It runs on its own small stack in the
/// parent's memory while the spawning thread waits; sanitizer instrumentation
/// would poison shadow memory for that stack and is turned off.
SPRINTRT_UNSANITIZED int child_main(void* arg) {
  auto& plan = *static_cast<exec_plan*>(arg);
  // dup2 clears close-on-exec on the targets; the sources are all above 4,
  // so no move clobbers another's source.
  for (int target = 0; target < plan.num_fds; ++target)
    if (::dup2(plan.fds[target], target) < 0)
      child_failed(plan, "dup2");
      // Everything else goes, whoever opened it and with whatever flags.
#ifdef SYS_close_range
  if (::syscall(SYS_close_range, plan.num_fds, ~0U, 0) != 0)
#endif
    for (int fd = plan.num_fds; fd < plan.max_fd; ++fd)
      ::close(fd);
  // The spawning io thread blocks SIGPIPE, and the trainer may have set
  // dispositions of its own; the child must start with every signal at its
  // default and none blocked, as if started from a shell. (Ignored signals
  // would survive execve. glibc's two internal signals refuse, harmlessly:
  // they are caught, not ignored, and execve resets them.)
  struct sigaction default_action {};
  default_action.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig)
    if (sig != SIGKILL && sig != SIGSTOP)
      ::sigaction(sig, &default_action, nullptr);
  if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0)
    child_failed(plan, "prctl(PR_SET_PDEATHSIG)");
  // A trainer that died before the prctl sends no signal any more: the child
  // was re-parented, and nobody waits for it.
  if (::getppid() != plan.parent)
    ::_exit(127);
  // A process group of its own: a terminal's Ctrl-C (SIGINT to the
  // foreground group) reaches the trainer only, which stops its children
  // itself instead of seeing them die and resending their work.
  if (::setpgid(0, 0) != 0)
    child_failed(plan, "setpgid");
  // Out of the terminal's foreground group, a write to it (with `stty
  // tostop`) would stop the child with SIGTTOU until replyTimeout: ignored,
  // which execve keeps.
  if (plan.inherits_output) {
    struct sigaction ignore {};
    ignore.sa_handler = SIG_IGN;
    ::sigaction(SIGTTOU, &ignore, nullptr);
  }
  uint64_t no_signals = 0;
  ::syscall(SYS_rt_sigprocmask, SIG_SETMASK, &no_signals, nullptr, sizeof no_signals);
  ::execve(plan.path, plan.argv, plan.envp);
  child_failed(plan, "execve");
}

/// Blocks every signal of the calling thread (glibc's internal ones too,
/// which pthread_sigmask leaves alone) and restores the mask on destruction:
/// no handler of the parent may run in the child while it shares the
/// parent's memory, before the child has reset them all.
class all_signals_blocked {
public:
  all_signals_blocked() {
    uint64_t all = ~uint64_t{0};
    ::syscall(SYS_rt_sigprocmask, SIG_SETMASK, &all, &old_, sizeof old_);
  }
  ~all_signals_blocked() {
    ::syscall(SYS_rt_sigprocmask, SIG_SETMASK, &old_, nullptr, sizeof old_);
  }
  all_signals_blocked(const all_signals_blocked&) = delete;
  all_signals_blocked& operator=(const all_signals_blocked&) = delete;

private:
  uint64_t old_ = 0;
};

/// Starts the child of `plan` and returns its pid, or the failure of the
/// clone or of a step in the child (the child is reaped then).
caf::expected<pid_t> clone_and_exec(exec_plan& plan) {
  // The child runs only until execve, on this stack; the kernel frees its
  // memory map at execve, and ours stays valid until the child is gone.
  constexpr size_t stack_size = 256 * 1024;
  void* stack = ::mmap(nullptr, stack_size, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
  if (stack == MAP_FAILED)
    return system_error("mmap (a stack for the child)", errno);
  pid_t pid = -1;
  int clone_errno = 0;
  {
    all_signals_blocked blocked;
    pid = ::clone(child_main, static_cast<char*>(stack) + stack_size,
                  CLONE_VM | CLONE_VFORK | SIGCHLD, &plan);
    clone_errno = errno;
  }
  ::munmap(stack, stack_size);
  if (pid < 0)
    return system_error("clone", clone_errno);
  if (plan.failed_step == nullptr)
    return pid;
  // The child has exited already (CLONE_VFORK returned without an execve):
  // reap exactly it.
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  std::string what = "cannot start '" + std::string{plan.path} + "'";
  if (std::strcmp(plan.failed_step, "execve") != 0)
    what += ": " + std::string{plan.failed_step};
  return system_error(what, plan.failed_errno);
}

/// Opens /dev/null for the child (close-on-exec, above 4).
caf::expected<unique_fd> open_null(int flags) {
  unique_fd fd{::open("/dev/null", flags | O_CLOEXEC)};
  if (!fd)
    return system_error("open(/dev/null)", errno);
  if (auto err = move_high(fd))
    return err;
  return fd;
}

/// A copy of the parent's own descriptor `fd` (1 or 2) for the child, or
/// /dev/null where the parent has none open.
caf::expected<unique_fd> inherited(int fd) {
  int copy = ::fcntl(fd, F_DUPFD_CLOEXEC, first_free_fd);
  if (copy >= 0)
    return unique_fd{copy};
  if (errno != EBADF)
    return system_error("fcntl(F_DUPFD_CLOEXEC) of descriptor " + std::to_string(fd), errno);
  return open_null(O_WRONLY);
}

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
                                                const char* const* parent_environ,
                                                int shared_memory) {
  if (auto err = check_executable(opts.sprint_exec_path))
    return err;
  // The region's descriptor for the child: a copy above its targets.
  unique_fd region;
  if (shared_memory >= 0) {
    region.reset(::fcntl(shared_memory, F_DUPFD_CLOEXEC, first_free_fd));
    if (!region)
      return system_error("fcntl(F_DUPFD_CLOEXEC) of the shared region", errno);
  }
  auto p2c = make_pipe();
  auto c2p = make_pipe();
  if (!p2c)
    return p2c.error();
  if (!c2p)
    return c2p.error();
  auto in = open_null(O_RDONLY);
  if (!in)
    return in.error();
  // The child's stdout and stderr: one pipe we read, or the parent's own.
  pipe_pair output;
  unique_fd out, err;
  if (opts.child_output.kind == child_output_mode::inherit) {
    auto own_out = inherited(1);
    auto own_err = inherited(2);
    if (!own_out)
      return own_out.error();
    if (!own_err)
      return own_err.error();
    out = std::move(*own_out);
    err = std::move(*own_err);
  } else {
    auto made = make_pipe();
    if (!made)
      return made.error();
    output = std::move(*made);
    if (auto failed = move_high(output.write))
      return failed;
    if (auto failed = set_non_blocking(output.read))
      return failed;
  }
  for (auto* fd : {&p2c->read, &c2p->write})
    if (auto failed = move_high(*fd))
      return failed;
  for (auto* fd : {&p2c->write, &c2p->read})
    if (auto failed = set_non_blocking(*fd))
      return failed;
  // Larger pipes move large messages in fewer chunks. The kernel may refuse
  // (pipe-max-size); that only costs speed.
  for (int fd : {p2c->write.get(), c2p->read.get()})
    if (::fcntl(fd, F_SETPIPE_SZ, pipe_buffer_size) < 0)
      logger().debug("F_SETPIPE_SZ({}) failed: {}", pipe_buffer_size, std::strerror(errno));

  auto env = config::child_environment(opts.env, parent_environ);
  spawned_child child;
  auto args =
      config::build_sprint_args(opts, child_c2p_fd, child_p2c_fd, config::environment_lookup(env),
                                region ? child_shared_memory_fd : -1);
  if (!args)
    return std::move(args.error());
  child.argv = std::move(*args);
  std::vector<char*> argv;
  for (auto& arg : child.argv)
    argv.push_back(arg.data());
  argv.push_back(nullptr);
  std::vector<char*> envp;
  for (auto& var : env)
    envp.push_back(var.data());
  envp.push_back(nullptr);

  exec_plan plan;
  plan.path = opts.sprint_exec_path.c_str();
  plan.argv = argv.data();
  plan.envp = envp.data();
  const int out_fd = output.write ? output.write.get() : out.get();
  const int err_fd = output.write ? output.write.get() : err.get();
  plan.fds = {in->get(), out_fd, err_fd, c2p->write.get(), p2c->read.get(), region.get()};
  plan.num_fds = region ? 6 : 5;
  plan.parent = ::getpid();
  plan.inherits_output = opts.child_output.kind == child_output_mode::inherit;
  rlimit limit{};
  plan.max_fd = ::getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < (1u << 20)
                    ? static_cast<int>(limit.rlim_cur)
                    : 1 << 20;
  auto pid = clone_and_exec(plan);
  if (!pid)
    return pid.error();
  child.pid = *pid;
  child.to_child = std::move(p2c->write);
  child.from_child = std::move(c2p->read);
  child.output = std::move(output.read);
  // The child's ends close here, as they go out of scope: the parent must
  // not hold them, or it would never see EOF.
  return child;
}

} // namespace sprintrt::process
