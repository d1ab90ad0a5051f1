#include "tools/bench/bench.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <exception>

#include <caf/exit_reason.hpp>
#include <caf/send.hpp>

#include "actors/worker/sprint_worker.hpp"
#include "criterion/ctc_topology.hpp"
#include "criterion/random_posteriors.hpp"

extern char** environ;

namespace sprintrt::bench {

namespace {

int failures = 0;
bench_world* current = nullptr;

nlohmann::json& figures() {
  static nlohmann::json all = nlohmann::json::array();
  return all;
}

// A fresh pipe, both ends close-on-exec (a child gets only what is dup2'ed).
void open_pipe(int fds[2], int size) {
  if (::pipe2(fds, O_CLOEXEC) != 0)
    throw std::runtime_error(std::string{"pipe2: "} + std::strerror(errno));
  if (size > 0)
    ::fcntl(fds[1], F_SETPIPE_SZ, size);
}

// An error whose message starts with "skipped: ", which figures.py and the
// smoke test read as a figure that cannot be measured here.
void skip(bench_state& state, const std::string& reason) {
  state.SkipWithError(("skipped: " + reason).c_str());
}

} // namespace

// --- Errors, registration, figures.

[[noreturn]] void throw_error(const std::string& what, const caf::error& err) {
  throw std::runtime_error(what + ": " + render(err));
}

benchmark::internal::Benchmark* add_benchmark(const std::string& name, benchmark::TimeUnit unit,
                                              timing clock,
                                              std::function<void(bench_state&)> body) {
  auto* b = benchmark::RegisterBenchmark(name.c_str(), [body](bench_state& state) {
    try {
      body(state);
    } catch (const std::exception& e) {
      ++failures;
      state.SkipWithError(e.what());
    }
  });
  if (clock == timing::real)
    b->UseRealTime();
  if (clock == timing::manual)
    b->UseManualTime();
  // Beside the mean, median and deviation: the figures' ranges.
  using xs = const std::vector<double>&;
  return b->Unit(unit)
      ->ComputeStatistics("min", [](xs x) { return *std::min_element(x.begin(), x.end()); })
      ->ComputeStatistics("max", [](xs x) { return *std::max_element(x.begin(), x.end()); });
}

int benchmark_failures() {
  return failures;
}

void declare_figure(std::string title, std::string unit, std::string value, std::string baseline,
                    std::string ratio, std::string target, std::string on, bool python) {
  figures().push_back({{"title", std::move(title)},
                       {"unit", std::move(unit)},
                       {"value", std::move(value)},
                       {"baseline", std::move(baseline)},
                       {"ratio", std::move(ratio)},
                       {"target", std::move(target)},
                       {"on", std::move(on)},
                       {"python", python}});
}

void publish_figures() {
  benchmark::AddCustomContext("figures", figures().dump());
}

// --- Shapes, corpora, sprint-sim, random data.

std::string shape_name(const size_list& sizes) {
  std::string name;
  for (const auto& [letter, n] : sizes)
    name += (name.empty() ? "" : "/") + letter + ":" + std::to_string(n);
  return name;
}

std::string shape_text(const size_list& sizes) {
  std::string text;
  for (const auto& [letter, n] : sizes)
    text += (text.empty() ? "" : ", ") + letter + "=" + std::to_string(n);
  return text;
}

std::vector<std::string> numbered(const std::string& prefix, size_t count) {
  std::vector<std::string> names;
  for (size_t i = 0; i < count; ++i)
    names.push_back(prefix + std::to_string(i));
  return names;
}

bench_corpus write_corpus(const std::vector<criterion::corpus_entry>& segments) {
  auto dir = process::temp_directory::make("sprintrt-bench");
  if (!dir)
    throw_error("temporary directory", dir.error());
  std::string path = dir->path() + "/corpus.txt";
  check(criterion::write_corpus_file(path, segments), "corpus file");
  return {std::move(*dir), std::move(path)};
}

sprint_options sim_options(const std::string& corpus, size_t instances,
                           const std::vector<std::string>& extra) {
  sprint_options opts;
  opts.sprint_exec_path = world().settings().sprint_sim;
  for (const auto& text : std::vector<std::string>{"--*.corpus=" + corpus, "--*.topology=ctc",
                                                   "--*.framing=length_prefixed"})
    opts.sprint_config.push_back(config_word{word_piece{word_piece::literal, text}});
  for (const auto& text : extra)
    opts.sprint_config.push_back(config_word{word_piece{word_piece::literal, text}});
  opts.num_instances = instances;
  opts.init_timeout = std::chrono::seconds{30};
  opts.reply_timeout = std::chrono::seconds{120};
  opts.exit_grace = std::chrono::seconds{5};
  return opts;
}

sim::corpus_criterion load_criterion(const std::string& corpus, sim::criterion_kind kind) {
  return sim::corpus_criterion{unwrap(criterion::corpus::from_file(corpus), "corpus"),
                               std::make_shared<criterion::ctc_topology>(0), kind};
}

std::vector<uint32_t> alignable_labels(size_t count, size_t dim, size_t frames, std::mt19937& rng) {
  std::uniform_int_distribution<uint32_t> label{1, static_cast<uint32_t>(dim - 1)};
  for (;;) {
    std::vector<uint32_t> labels(count);
    size_t needed = count;
    for (size_t i = 0; i < count; ++i) {
      labels[i] = label(rng);
      needed += i > 0 && labels[i] == labels[i - 1];
    }
    if (needed <= frames)
      return labels;
  }
}

batch random_batch(const std::vector<int64_t>& lengths, const std::vector<std::string>& tags,
                   size_t dim, uint64_t seed) {
  const auto frames = static_cast<size_t>(*std::max_element(lengths.begin(), lengths.end()));
  batch b;
  b.log_posteriors = tensor::zeros({frames, tags.size(), dim});
  criterion::fill_random_log_posteriors(b.log_posteriors.data(), frames * tags.size(), dim, seed);
  b.seq_lengths = lengths;
  b.tags = tags;
  return b;
}

std::vector<float> compute_reusing(const pool_client& client, const batch& data, tensor& reuse) {
  batch b{data.log_posteriors, data.seq_lengths, data.tags, std::move(reuse), false};
  auto result = unwrap(client.compute(std::move(b)), "batch");
  reuse = std::move(result.error_signal);
  return std::move(result.loss);
}

// --- The run's state.

bench_world::bench_world(bench_settings settings) : settings_(std::move(settings)) {
  current = this;
}

bench_world::~bench_world() {
  stop();
  current = nullptr;
}

sprint_runtime& bench_world::runtime() {
  if (!runtime_)
    runtime_ = std::make_unique<sprint_runtime>();
  return *runtime_;
}

const sprint_worker_actor& bench_world::direct_worker(const sprint_options& opts) {
  if (!worker_) {
    auto& rt = runtime();
    worker_io_ = std::make_unique<process::io_thread>();
    worker_ = detail::spawn_sprint_worker(rt.system(), *worker_io_, opts, "bench worker");
  }
  return worker_;
}

void bench_world::stop() {
  // Every pool stops its workers first: a rig's helper process (the remote
  // echo) then ends without a worker noticing.
  if (runtime_)
    runtime_->stop_pools();
  while (!rigs_.empty())
    rigs_.pop_back();
  // The worker sends its child `exit`; the runtime's shutdown awaits every
  // actor (this worker too) before the io thread reaps what is left.
  if (worker_)
    caf::anon_send_exit(worker_, caf::exit_reason::user_shutdown);
  worker_ = sprint_worker_actor{};
  if (runtime_)
    runtime_->shutdown();
  if (worker_io_)
    worker_io_->stop(std::chrono::seconds{5});
  runtime_.reset();
  worker_io_.reset();
}

bench_world& world() {
  if (!current)
    throw std::logic_error("sprintrt-bench: no bench_world");
  return *current;
}

// --- Other programs.

child_program spawn_program(const std::vector<std::string>& argv, bool piped_stdin, int pipe_size) {
  int in[2] = {-1, -1};
  int out[2];
  open_pipe(out, pipe_size);
  try {
    if (piped_stdin)
      open_pipe(in, pipe_size);
  } catch (...) {
    ::close(out[0]);
    ::close(out[1]);
    throw;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  // dup2 clears close-on-exec on the targets; every other end closes at exec.
  if (piped_stdin)
    posix_spawn_file_actions_adddup2(&actions, in[0], 0);
  else
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out[1], 1);
  std::vector<char*> args;
  for (const auto& arg : argv)
    args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);
  child_program child{-1, in[1], out[0]};
  const int rc =
      ::posix_spawn(&child.pid, argv.at(0).c_str(), &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  for (int fd : {in[0], out[1], rc != 0 ? in[1] : -1, rc != 0 ? out[0] : -1})
    if (fd >= 0)
      ::close(fd);
  if (rc != 0)
    throw std::runtime_error("cannot start " + argv[0] + ": " + std::strerror(rc));
  return child;
}

int reap(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

nlohmann::json run_json(const std::vector<std::string>& argv, const std::string& what) {
  const auto child = spawn_program(argv);
  std::string text;
  char buffer[65536];
  for (ssize_t n; (n = ::read(child.from_child, buffer, sizeof buffer)) != 0;)
    if (n > 0)
      text.append(buffer, static_cast<size_t>(n));
    else if (errno != EINTR)
      break;
  ::close(child.from_child);
  const int status = reap(child.pid);
  while (!text.empty() && (text.back() == '\n' || text.back() == ' '))
    text.pop_back();
  const std::string last = text.substr(text.rfind('\n') + 1);
  if (status != 0)
    throw std::runtime_error(what + " failed (exit status " + std::to_string(status) +
                             "); its last line: " + last);
  auto document = nlohmann::json::parse(last, nullptr, false);
  if (document.is_discarded() || !document.is_object())
    throw std::runtime_error(what + " printed no JSON object on its last line: " + last);
  return document;
}

std::optional<nlohmann::json> run_script(bench_state& state, const std::string& needs,
                                         const std::string& script,
                                         const std::vector<std::string>& args) {
  const auto& s = world().settings();
  if (::access(s.python.c_str(), X_OK) != 0) {
    skip(state, "no " + needs + " (no " + s.python + ")");
    return {};
  }
  std::vector<std::string> argv{s.python, s.scripts + "/" + script};
  argv.insert(argv.end(), args.begin(), args.end());
  auto document = run_json(argv, s.scripts + "/" + script);
  if (document.contains("skipped")) {
    skip(state, document.at("skipped").get<std::string>());
    return {};
  }
  return document;
}

void replay_samples(bench_state& state, const nlohmann::json& samples, double unit) {
  if (samples.empty())
    throw std::runtime_error("the script reported no sample");
  size_t i = 0;
  for (auto _ : state)
    state.SetIterationTime(samples.at(i++ % samples.size()).get<double>() * unit);
}

void write_fully(int fd, const char* data, size_t n, const std::string& what) {
  while (n > 0) {
    ssize_t k = ::write(fd, data, n);
    if (k < 0 && errno == EINTR)
      continue;
    if (k <= 0)
      throw std::runtime_error(what + ": write: " + std::strerror(errno));
    data += k;
    n -= static_cast<size_t>(k);
  }
}

bool read_fully(int fd, char* data, size_t n, const std::string& what) {
  while (n > 0) {
    ssize_t k = ::read(fd, data, n);
    if (k < 0 && errno == EINTR)
      continue;
    if (k < 0)
      throw std::runtime_error(what + ": read: " + std::strerror(errno));
    if (k == 0)
      return false;
    data += k;
    n -= static_cast<size_t>(k);
  }
  return true;
}

} // namespace sprintrt::bench
