// One batch through pool_client and sprint-sim, from an installed sprintrt.
//
// usage: consumer SPRINT_SIM WORK_DIR
//
// The batch is a single CTC segment of one frame with the label 1 over two
// classes (0 is the blank), so its results are known exactly: the only path
// emits label 1, so the loss is -log p(1) and the error signal (softmax minus
// the label occupancy) is (p(0), p(1) - 1). Then the same loss in-process
// through sprintrt::fsa_loss over a two-state FSA that emits label 1: its
// gradient with respect to the log-probabilities is (0, -1).

#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>

#include <sprintrt/fsa_loss.hpp>
#include <sprintrt/pool_client.hpp>
#include <sprintrt/sprint_runtime.hpp>
#include <sprintrt/version.hpp>

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: consumer SPRINT_SIM WORK_DIR\n");
    return 2;
  }
  std::string sim = argv[1], dir = argv[2];
  std::ofstream{dir + "/corpus.txt"} << "seg-1\t1\n";
  auto opts = sprintrt::parse_options(R"({"sprintExecPath": ")" + sim +
                                      R"(", "sprintConfigStr": ["--*.corpus=)" + dir +
                                      R"(/corpus.txt", "--*.topology=ctc"]})");
  if (!opts) {
    std::fprintf(stderr, "options: %s\n", sprintrt::render(opts.error()).c_str());
    return 1;
  }
  sprintrt::sprint_runtime runtime;
  sprintrt::pool_client pool{runtime, *opts};
  const float p0 = 0.25f, p1 = 0.75f;
  auto log_posteriors = sprintrt::tensor::from_vector({std::log(p0), std::log(p1)}, {1, 1, 2});
  if (!log_posteriors)
    return 1;
  auto result = pool.compute({*log_posteriors, {1}, {"seg-1"}, {}});
  if (!result) {
    std::fprintf(stderr, "compute: %s\n", sprintrt::render(result.error()).c_str());
    return 1;
  }
  const float* signal = result->error_signal.data();
  std::printf("sprintrt %s: loss %.6f, error signal (%.6f, %.6f)\n", sprintrt::version,
              result->loss[0], signal[0], signal[1]);
  bool exact = std::fabs(result->loss[0] + std::log(p1)) < 1e-5 &&
               std::fabs(signal[0] - p0) < 1e-5 && std::fabs(signal[1] - (p1 - 1)) < 1e-5;

  const int64_t edges[] = {0, 1, 1, 0}; // from, to, emission, sequence
  const double weights[] = {0.0};
  const int64_t start_end[] = {0, 1};
  const int64_t lengths[] = {1};
  const sprintrt::fsa_batch_view fsa{edges, 1, weights, start_end, 1, 2};
  double loss = 0;
  float gradient[2] = {};
  auto counts =
      sprintrt::fsa_loss(log_posteriors->data(), 1, 1, 2, lengths, fsa, {}, &loss, gradient);
  if (!counts) {
    std::fprintf(stderr, "fsa_loss: %s\n", sprintrt::render(counts.error()).c_str());
    return 1;
  }
  std::printf("fsa_loss: loss %.6f, gradient (%.6f, %.6f)\n", loss, gradient[0], gradient[1]);
  exact =
      exact && std::fabs(loss + std::log(p1)) < 1e-6 && gradient[0] == 0.0f && gradient[1] == -1.0f;
  return exact ? 0 : 1;
}
