#pragma once

/// @file
/// The benchmark families of sprintrt-bench, one registration function per
/// file, and what their files share. BENCHMARKS.md says what each benchmark
/// measures; quick mode shrinks shapes and counts.

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "tools/bench/bench_support.hpp"
#include "tools/bench/bench_world.hpp"
#include "tools/bench/figure_table.hpp"

namespace sprintrt::bench {

// Each registers one family's benchmarks and figures, in the order of main.
void register_codec_benchmarks();              ///< request encode, reply decode
void register_criterion_benchmarks();          ///< sprint-sim's criterion, full sum
void register_sequence_criterion_benchmarks(); ///< MMI, boosted MMI, sMBR
void register_transport_benchmarks();          ///< small segments, one tiny segment
void register_large_benchmarks();              ///< 48 MB segments: time, faults, RSS
void register_batch_benchmarks();              ///< CTC batches over 1, 2 (4) workers
void register_seqtrain_benchmarks();           ///< the sequence-training scheduler
void register_remote_benchmarks();             ///< a large segment to a remote pool
void register_python_benchmarks();             ///< the Python module against C++

/// Registers the store-and-forward echo of a request and a reply of these
/// framed sizes; returns its name.
std::string register_echo(size_t request, size_t reply);

/// `--helper=large-rss FRAMES DIM BATCH`: one large batch in this process;
/// prints its peak RSS increase as JSON. Returns the exit status.
int run_large_rss_helper(const std::vector<std::string>& args);

/// `--helper=remote-echo`: a TCP echo and an echo pool; prints their ports,
/// serves until killed. Returns the exit status.
int run_remote_echo_helper();

} // namespace sprintrt::bench
