#pragma once

/// @file
/// `sprintrt-bench all`: the issues' figures a-g (a-f: issue 10; g: issue 13), each against a
/// baseline measured in the same run. One function per group of figures, each in its own file:
/// transport_figures.cpp (a: a batch of small segments through one worker against the
/// store-and-forward pipe echo; b: one tiny segment through the facade against the raw echo; c:
/// RETURNN's Python parent), large_figures.cpp (d: 48 MB segments, page faults, peak RSS),
/// ctc_figures.cpp (e: a CPU-bound CTC batch over 1 and 2 workers, PyTorch),
/// seqtrain_figures.cpp (f: the sequence-training scheduler's own cost),
/// python_figures.cpp (g: the Python module against the C++ facade).

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "tools/bench/figures.hpp"
#include "tools/bench/pipe_echo.hpp"
#include "tools/bench/pool_setup.hpp"

namespace sprintrt::bench {

/// The options of `all`.
struct all_options {
  /// Few repeats and smaller counts (the smoke test).
  bool quick = false;
  bool json = false;
  bool markdown = false;
  /// Also write the JSON document here.
  std::string json_file;
  /// The figure groups to run (all if empty): a, b, c, d, e, f, g.
  std::vector<std::string> only;
  std::string sprint_sim;
  /// The Python with NumPy (and PyTorch) for the comparison scripts.
  std::string python = "/usr/bin/python3";
  /// The directory of returnn_parent.py, torch_ctc.py and python_module.py.
  std::string scripts;
  /// The directory holding the Python package `sprintrt` (the build tree's
  /// python/).
  std::string python_module;

  /// Returns whether group `letter` runs.
  bool runs(const std::string& letter) const;
};

/// What every group of figures uses.
struct figure_context {
  const all_options& options;
  /// The sprint-sim executable.
  std::string sprint_sim;
  /// This program (for `large-rss` in a fresh process).
  std::string self;
  /// Forked before any thread: the pipe limit with a Sprint child's reading
  /// pattern (whole message in, then the whole reply out).
  pipe_echo& sf_echo;
  /// /bin/cat: the raw streaming echo.
  pipe_echo& cat_echo;
  /// The runtime every pool of the run lives in.
  bench_runtime& live;
};

/// a (and c when `with_returnn`) and b.
std::vector<figure> transport_figures(figure_context& cx, bool small_batch, bool tiny,
                                      bool with_returnn);

/// d.transport, d.faults_parent, d.faults_child, d.peak_rss.
std::vector<figure> large_figures(figure_context& cx);

/// e.speedup, e.serial, e.torch.
std::vector<figure> ctc_figures(figure_context& cx);

/// f.
std::vector<figure> seqtrain_figures(figure_context& cx);

/// g.
std::vector<figure> python_figures(figure_context& cx);

/// Adds the hidden `large-rss` subcommand: one large batch in this fresh
/// process, printing its peak RSS increase as JSON (d.peak_rss runs it).
void add_large_rss_command(CLI::App& app, std::string argv0);

/// Adds the `all` subcommand.
void add_all_bench(CLI::App& app, std::string argv0);

/// The framed size of a `get_loss_and_error_signal` request for `segment`
/// of [frames, dim] as the runtime encodes it.
size_t request_bytes(const std::string& segment, size_t frames, size_t dim);

/// The framed size of its reply ("ok", loss as a Python float, [frames, dim]).
size_t reply_bytes(size_t frames, size_t dim);

/// "T=100, D=40"-style shape text.
std::string shape_text(size_t frames, size_t dim);

} // namespace sprintrt::bench
