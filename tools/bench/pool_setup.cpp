#include "tools/bench/pool_setup.hpp"

#include <stdlib.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <optional>
#include <random>
#include <stdexcept>

#include <caf/actor_system.hpp>
#include <caf/exit_reason.hpp>
#include <caf/send.hpp>

#include "actors/worker/sprint_worker.hpp"
#include "runtime/child_spawn.hpp"
#include "config/sprint_args.hpp"

namespace sprintrt::bench {

bench_corpus write_corpus(const std::vector<sim::corpus_entry>& segments) {
  auto dir = runtime::temp_directory::make("sprintrt-bench");
  if (!dir)
    throw std::runtime_error(render(dir.error()));
  std::string path = dir->path() + "/corpus.txt";
  if (auto err = sim::write_corpus_file(path, segments))
    throw std::runtime_error(render(err));
  return {std::move(*dir), std::move(path)};
}

std::string find_sprint_sim(const std::string& given, const std::string& argv0) {
  std::string path = given;
  if (path.empty()) {
    std::error_code ec;
    auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (ec)
      self = std::filesystem::absolute(argv0, ec);
    path = (self.parent_path() / ".." / "sprint-sim" / "sprint-sim").lexically_normal().string();
  }
  if (auto err = runtime::check_executable(path))
    throw std::runtime_error("sprint-sim not found (" + render(err) +
                             "); build the sprint-sim target or pass --sprint-sim PATH");
  return path;
}

sprint_options sim_options(const std::string& sprint_sim, const std::string& corpus,
                           size_t instances, const std::vector<std::string>& extra) {
  auto word = [](std::string text) {
    return config_word{word_piece{word_piece::literal, std::move(text)}};
  };
  sprint_options opts;
  opts.sprint_exec_path = sprint_sim;
  opts.sprint_config = {word("--*.corpus=" + corpus), word("--*.topology=ctc"),
                        word("--*.framing=length_prefixed")};
  for (const auto& text : extra)
    opts.sprint_config.push_back(word(text));
  opts.num_instances = instances;
  opts.init_timeout = std::chrono::seconds{30};
  opts.reply_timeout = std::chrono::seconds{120};
  opts.exit_grace = std::chrono::seconds{5};
  return opts;
}

std::vector<std::string> config_words(const sprint_options& opts) {
  // The benchmarks' options have no variables: nothing can be unset.
  auto words = config::expand_sprint_config(
      opts, [](const std::string&) -> std::optional<std::string> { return std::nullopt; });
  return words ? std::move(*words) : std::vector<std::string>{};
}

void fill_log_posteriors(float* data, size_t rows, size_t dim, uint64_t seed) {
  std::mt19937_64 gen{seed};
  std::normal_distribution<float> logit{0.0f, 2.0f};
  for (size_t t = 0; t < rows; ++t) {
    float* row = data + t * dim;
    float max = -INFINITY;
    for (size_t d = 0; d < dim; ++d)
      max = std::max(max, row[d] = logit(gen));
    double sum = 0;
    for (size_t d = 0; d < dim; ++d)
      sum += std::exp(row[d] - max);
    const float log_z = max + static_cast<float>(std::log(sum));
    for (size_t d = 0; d < dim; ++d)
      row[d] -= log_z;
  }
}

bench_runtime::bench_runtime() = default;

bench_runtime::~bench_runtime() {
  stop();
}

const sprint_worker_actor& bench_runtime::spawn_worker(const sprint_options& opts) {
  if (!worker_)
    worker_ = spawn_sprint_worker(runtime_.system(), io_, opts, "bench worker");
  return worker_;
}

void bench_runtime::stop() {
  if (stopped_)
    return;
  stopped_ = true;
  // The worker sends its child `exit`; the runtime's shutdown awaits every
  // actor (this worker too) before the io thread reaps what is left.
  if (worker_)
    caf::anon_send_exit(worker_, caf::exit_reason::user_shutdown);
  worker_ = sprint_worker_actor{};
  runtime_.shutdown();
  io_.stop(std::chrono::seconds{5});
}

} // namespace sprintrt::bench
