#pragma once

/// @file
/// The Levenshtein distance between two sequences: what the option parser
/// uses to suggest the key a user probably meant, and the demo to count label
/// errors.

#include <algorithm>
#include <cstddef>
#include <functional>
#include <vector>

namespace sprintrt {

/// Returns the fewest insertions, deletions and substitutions that turn `a`
/// into `b`; `same(x, y)` says whether two elements are equal (e.g. ignoring
/// case). Keeps one row of the dynamic program: O(|a| |b|) time, O(|b|) space.
template <class Sequence, class Equal = std::equal_to<>>
size_t edit_distance(const Sequence& a, const Sequence& b, Equal same = {}) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j)
    row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    // row[j] holds the distance of a[0, i-1) to b[0, j) until overwritten;
    // `diagonal` the one of a[0, i-1) to b[0, j-1).
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t substitute = diagonal + (same(a[i - 1], b[j - 1]) ? 0 : 1);
      diagonal = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, substitute});
    }
  }
  return row[b.size()];
}

} // namespace sprintrt
