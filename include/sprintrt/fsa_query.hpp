#pragma once

/// @file
/// What an FSA export asks for: a segment of the worker's corpus or an
/// orthography.

#include <cstdint>
#include <string>

namespace sprintrt {

/// What an FSA export names: a segment of the worker's corpus (RASR's
/// `export_allophone_state_fsa_by_segment_name`) or a word sequence given
/// directly (`export_allophone_state_fsa_by_orthography`).
enum class fsa_source : uint8_t { segment_name, orthography };

/// One FSA export request: a segment name or an orthography, by `source`.
struct fsa_query {
  /// How `text` is looked up.
  fsa_source source = fsa_source::segment_name;
  /// The segment name or the orthography (for sprint-sim, the label
  /// sequence as in its corpus file: "3 17 5").
  std::string text;
};

/// Returns "segment_name" or "orthography" (anything else: "unknown").
inline std::string to_string(fsa_source source) {
  switch (source) {
  case fsa_source::segment_name:
    return "segment_name";
  case fsa_source::orthography:
    return "orthography";
  }
  return "unknown";
}

/// Returns "segment 'x'" or "orthography 'x'": how errors name a query.
inline std::string describe(const fsa_query& query) {
  return (query.source == fsa_source::orthography ? "orthography '" : "segment '") + query.text +
         "'";
}

/// CAF inspection of `fsa_query` (the source as its underlying byte).
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, fsa_query& x) {
  return f(x.source, x.text);
}

} // namespace sprintrt
