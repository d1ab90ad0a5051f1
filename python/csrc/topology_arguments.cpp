#include "topology_arguments.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "criterion/ctc_topology.hpp"
#include "criterion/hmm_topology.hpp"
#include "sprintrt/error.hpp"

namespace sprintrt::python {

namespace py = pybind11;

std::unique_ptr<criterion::topology> make_topology(const std::string& name, int64_t blank_index,
                                                   const py::dict& hmm) {
  if (name == "ctc") {
    if (blank_index < 0 || blank_index > UINT32_MAX)
      throw py::value_error("blank_index must be a class index >= 0, got " +
                            std::to_string(blank_index));
    if (!hmm.empty())
      throw py::value_error("the hmm_* options apply to topology 'hmm' only");
    return std::make_unique<criterion::ctc_topology>(static_cast<uint32_t>(blank_index));
  }
  if (name != "hmm")
    throw py::value_error("topology must be 'ctc' or 'hmm', got '" + name + "'");
  criterion::hmm_options options;
  for (const auto& [key, value] : hmm) {
    const auto option = key.cast<std::string>();
    if (option == "silence_index") {
      if (!value.is_none())
        options.silence_index = value.cast<uint32_t>();
      continue;
    }
    float* cost = option == "loop_cost"            ? &options.loop_cost
                  : option == "forward_cost"       ? &options.forward_cost
                  : option == "silence_loop_cost"  ? &options.silence_loop_cost
                  : option == "silence_entry_cost" ? &options.silence_entry_cost
                  : option == "silence_exit_cost"  ? &options.silence_exit_cost
                                                   : nullptr;
    if (cost == nullptr)
      throw py::value_error("unknown HMM option '" + option +
                            "' (loop_cost, forward_cost, silence_index, silence_loop_cost, "
                            "silence_entry_cost, silence_exit_cost)");
    *cost = value.cast<float>();
  }
  auto topology = criterion::hmm_topology::make(options);
  if (!topology)
    throw py::value_error(error_message(topology.error()));
  return std::make_unique<criterion::hmm_topology>(std::move(*topology));
}

std::vector<uint32_t> to_labels(const std::vector<int64_t>& labels, const std::string& owner) {
  std::vector<uint32_t> out;
  out.reserve(labels.size());
  for (size_t i = 0; i < labels.size(); ++i) {
    if (labels[i] < 0 || labels[i] >= UINT32_MAX)
      throw py::value_error(owner + ": label number " + std::to_string(i + 1) + " is " +
                            std::to_string(labels[i]) + ", not a label index >= 0");
    out.push_back(static_cast<uint32_t>(labels[i]));
  }
  return out;
}

} // namespace sprintrt::python
