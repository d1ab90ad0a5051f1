#pragma once

/// @file
/// The topology arguments `sprintrt.torch`'s graph builders share
/// (numerators and denominators): sprint-sim's `--*.topology`,
/// `--*.blank-index` and `--*.hmm-*` as Python values, and label sequences
/// as label ids. Both throw `ValueError` naming what was wrong.

#include <pybind11/pybind11.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "criterion/topology.hpp"

namespace sprintrt::python {

/// The topology `name` ("ctc" or "hmm") with blank `blank_index` (CTC) or
/// the HMM options in `hmm` (keys `loop_cost`, `forward_cost`,
/// `silence_index`, `silence_loop_cost`, `silence_entry_cost`,
/// `silence_exit_cost`); throws `ValueError`.
std::unique_ptr<criterion::topology> make_topology(const std::string& name, int64_t blank_index,
                                                   const pybind11::dict& hmm);

/// `labels` as label ids; throws `ValueError` naming `owner` for a negative
/// or too large one.
std::vector<uint32_t> to_labels(const std::vector<int64_t>& labels, const std::string& owner);

} // namespace sprintrt::python
