#pragma once

/// @file
/// The benchmark families of sprintrt-bench, one registration function per
/// file (named after it), and what each family file uses. Each registers
/// its benchmarks under names that say what they measure ("codec/...",
/// "sim/...", "pool/...", "seqtrain/...", "remote/...", "python/..." and the
/// "baseline/..." they are compared with) and declares the figures that pair
/// them (figure_table.hpp). Shapes and counts shrink in quick mode.
/// BENCHMARKS.md says what each benchmark measures.

#include <cstddef>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "tools/bench/bench_support.hpp"
#include "tools/bench/bench_world.hpp"
#include "tools/bench/figure_table.hpp"

namespace sprintrt::bench {

/// The parent's request encode and reply decode against memcpy.
void register_codec_benchmarks();

/// The simulated Sprint's criterion and full-sum passes against
/// log_softmax + exp.
void register_criterion_benchmarks();

/// The simulated Sprint's MMI, boosted MMI and sMBR against its full-sum.
void register_sequence_criterion_benchmarks();

/// Small segments through one child, against the pipe echoes.
void register_transport_benchmarks();

/// 48 MB segments: throughput, page faults, peak RSS.
void register_large_benchmarks();

/// CPU-bound CTC batches over 1, 2 (and 4) workers, in-process and PyTorch.
void register_batch_benchmarks();

/// The sequence-training scheduler: its cost per sequence and its overlap.
void register_seqtrain_benchmarks();

/// A large segment through a remote pool against a TCP echo.
void register_remote_benchmarks();

/// The Python module against the C++ facade.
void register_python_benchmarks();

/// Registers the store-and-forward pipe echo of a request and a reply of
/// these framed sizes; returns its name.
std::string register_echo(size_t request, size_t reply);

/// `--helper=large-rss FRAMES DIM BATCH`: one large batch in this fresh
/// process; prints its peak RSS increase as JSON. Returns the exit status.
int run_large_rss_helper(const std::vector<std::string>& args);

/// `--helper=remote-echo`: a TCP echo and a published echo pool; prints
/// their ports, serves until killed. Returns the exit status.
int run_remote_echo_helper();

} // namespace sprintrt::bench
