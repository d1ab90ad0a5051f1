#include "tests/integration/integration_support.hpp"

#include <signal.h>
#include <stdlib.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <future>
#include <random>
#include <stdexcept>
#include <thread>

#include <caf/exit_reason.hpp>
#include <caf/send.hpp>

#include <boost/asio/post.hpp>
#include <catch2/catch.hpp>

#include <optional>

#include "actors/worker/sprint_worker.hpp"
#include "criterion/corpus.hpp"
#include "criterion/ctc_topology.hpp"
#include "process/child_reaper.hpp"
#include "sim/corpus_criterion.hpp"
#include "tests/support/process_checks.hpp"

namespace sprintrt::test {

namespace {

process::temp_directory make_temp_directory() {
  auto dir = process::temp_directory::make("sprintrt-test");
  if (!dir)
    throw std::runtime_error(render(dir.error()));
  return std::move(*dir);
}

} // namespace

temp_dir::temp_dir() : dir_(make_temp_directory()) {}

std::string corpus_path(const temp_dir& dir) {
  return dir.path() + "/corpus.txt";
}

std::vector<test_segment> write_corpus(const temp_dir& dir, size_t count, uint32_t num_labels,
                                       uint64_t seed) {
  std::mt19937_64 gen{seed};
  std::uniform_int_distribution<uint32_t> label{1, num_labels - 1};
  std::uniform_int_distribution<size_t> length{1, 4};
  std::vector<test_segment> segments;
  for (size_t i = 0; i < count; ++i) {
    test_segment seg{"corpus/rec/seg-" + std::to_string(i), {}};
    size_t n = length(gen);
    for (size_t k = 0; k < n; ++k)
      seg.labels.push_back(label(gen));
    segments.push_back(std::move(seg));
  }
  if (auto err = criterion::write_corpus_file(corpus_path(dir), segments))
    throw std::runtime_error(render(err));
  return segments;
}

sprint_options sim_options(const std::string& corpus, const std::vector<std::string>& params,
                           pipe_framing framing) {
  sprint_options opts;
  opts.sprint_exec_path = SPRINTRT_SPRINT_SIM_PATH;
  auto word = [](std::string text) {
    return config_word{word_piece{word_piece::literal, std::move(text)}};
  };
  opts.sprint_config.push_back(word("--*.corpus=" + corpus));
  opts.sprint_config.push_back(word("--*.topology=ctc"));
  opts.sprint_config.push_back(word(std::string{"--*.framing="} +
                                    (framing == pipe_framing::raw ? "raw" : "length_prefixed")));
  for (const auto& param : params)
    opts.sprint_config.push_back(word("--*." + param));
  opts.framing = framing;
  opts.init_timeout = std::chrono::seconds{20};
  opts.reply_timeout = std::chrono::seconds{20};
  opts.exit_grace = std::chrono::seconds{5};
  return opts;
}

reference_result reference_loss(const std::string& corpus, const std::string& segment,
                                const std::vector<float>& log_posteriors, size_t dim) {
  auto segments = criterion::corpus::from_file(corpus);
  if (!segments)
    throw std::runtime_error(render(segments.error()));
  sim::corpus_criterion crit{std::move(*segments), std::make_shared<criterion::ctc_topology>(0)};
  size_t frames = log_posteriors.size() / dim;
  reference_result result{0, std::vector<float>(log_posteriors.size())};
  Eigen::Map<const criterion::row_matrix_f> lp{
      log_posteriors.data(), static_cast<Eigen::Index>(frames), static_cast<Eigen::Index>(dim)};
  Eigen::Map<criterion::row_matrix_f> es{result.error_signal.data(),
                                         static_cast<Eigen::Index>(frames),
                                         static_cast<Eigen::Index>(dim)};
  auto r = crit.loss_and_error_signal(segment, lp, es);
  if (!r)
    throw std::runtime_error(render(r.error()));
  result.loss = r->loss;
  return result;
}

caf::actor_system_config& test_runtime::make_config(caf::actor_system_config& cfg) {
  cfg.set("scheduler.max-threads", size_t{2});
  return cfg;
}

test_runtime::test_runtime() : system_(make_config(config_)) {}

test_runtime::~test_runtime() {
  shutdown();
}

sprint_worker_actor test_runtime::spawn_worker(sprint_options opts, std::string name) {
  auto worker = detail::spawn_sprint_worker(system_, io_, std::move(opts), std::move(name));
  workers_.push_back(worker);
  return worker;
}

void test_runtime::shutdown() {
  if (shut_down_)
    return;
  shut_down_ = true;
  for (auto& worker : workers_)
    caf::anon_send_exit(worker, caf::exit_reason::user_shutdown);
  workers_.clear();
  system_.await_all_actors_done();
  io_.stop(std::chrono::seconds{5});
}

caf::expected<double> compute(caf::scoped_actor& self, const sprint_worker_actor& worker,
                              const segment_job& job) {
  caf::expected<double> result = make_error(errc::cancelled, "no reply");
  self->request(worker, caf::infinite, compute_atom::value, job)
      .receive([&](double loss) { result = loss; },
               [&](caf::error& err) { result = std::move(err); });
  return result;
}

worker_stats stats_of(caf::scoped_actor& self, const sprint_worker_actor& worker) {
  std::optional<worker_stats> stats;
  caf::error failure;
  self->request(worker, caf::infinite, stats_atom::value)
      .receive([&](worker_stats& s) { stats = s; }, [&](caf::error& err) { failure = err; });
  INFO(render(failure));
  REQUIRE(stats);
  return *stats;
}

caf::expected<segment_fsa> export_fsa(caf::scoped_actor& self, const sprint_worker_actor& worker,
                                      const std::string& text, fsa_source source) {
  caf::expected<segment_fsa> result = make_error(errc::cancelled, "no reply");
  self->request(worker, caf::infinite, fsa_atom::value, fsa_query{source, text})
      .receive([&](segment_fsa& fsa) { result = std::move(fsa); },
               [&](caf::error& err) { result = std::move(err); });
  return result;
}

std::string orthography_of(const std::vector<uint32_t>& labels) {
  std::string text;
  for (auto label : labels)
    text += (text.empty() ? "" : " ") + std::to_string(label);
  return text;
}

void check_same_fsa(const segment_fsa& got, const segment_fsa& want) {
  CHECK(got.num_states == want.num_states);
  CHECK(got.edges == want.edges);
  REQUIRE(got.weights.size() == want.weights.size());
  CHECK(std::memcmp(got.weights.data(), want.weights.data(), want.weights.size() * sizeof(float)) ==
        0);
}

segment_job make_job(const std::string& segment, const std::vector<float>& log_posteriors,
                     size_t dim) {
  size_t frames = log_posteriors.size() / dim;
  segment_job job;
  job.segment = segment;
  job.log_posteriors = {make_storage(log_posteriors), 0, frames, dim, dim};
  job.error_signal = matrix_slice::dense(frames, dim);
  return job;
}

void set_kill_signal(process::io_thread& io, int signal) {
  if (io.stopped())
    return; // nothing would run the change, and no kill comes any more
  std::promise<void> taken;
  boost::asio::post(io.context(), [&io, &taken, signal] {
    io.reaper().set_kill_signal_for_tests(signal);
    taken.set_value();
  });
  taken.get_future().wait();
}

kill_signal_override::~kill_signal_override() {
  set_kill_signal(io_, SIGKILL);
}

void check_reaped_once_killed(pid_t pid) {
  REQUIRE(pid > 0);
  CHECK(::kill(pid, 0) == 0);
  ::kill(pid, SIGKILL);
  CHECK(wait_until_reaped(pid, std::chrono::seconds{5}));
}

bool wait_until_reaped(pid_t pid, std::chrono::milliseconds limit) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  for (;;) {
    auto children = child_processes();
    bool present = std::any_of(children.begin(), children.end(),
                               [pid](const child_info& c) { return c.pid == pid; });
    if (!present)
      return true;
    if (std::chrono::steady_clock::now() >= deadline)
      return false;
    std::this_thread::sleep_for(std::chrono::milliseconds{5});
  }
}

} // namespace sprintrt::test
