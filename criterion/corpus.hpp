#pragma once

/// @file
/// A corpus: segment names mapped to label sequences (what the simulated
/// Sprint serves and what the denominators are keyed by), read from a text
/// file with one segment per line.

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/span.hpp"
#include "sprintrt/error.hpp"

namespace sprintrt::criterion {

/// Segment names and their label sequences, in file order.
///
/// Format, one segment per line: `NAME<TAB>LABELS`, where LABELS are
/// non-negative decimal integers (up to 2^32-1) separated by spaces or tabs.
/// - Lines that are empty or only white space, and lines whose first character
///   is '#', are skipped. A trailing '\r' (a file written on Windows) is ignored.
/// - The name is everything before the first TAB; it must be non-empty and
///   contain no space (a space there usually means the TAB is missing).
/// - The label list may be empty (`NAME<TAB>`): a segment without labels, which
///   CTC aligns to blanks only and the HMM to silence only.
/// - A name may appear only once.
/// Errors are `invalid_input` and name the source (file name), the line number
/// and what was wrong; duplicates name both lines.
class corpus {
public:
  /// An empty corpus.
  corpus() = default;

  /// Reads the corpus file at `path` (an `io_error` if it cannot be opened).
  static caf::expected<corpus> from_file(const std::string& path);

  /// Reads a corpus from `in`; `source` names it in messages (a file name).
  static caf::expected<corpus> from_stream(std::istream& in, std::string source);

  /// Reads a corpus from `text`; `source` names it in messages.
  static caf::expected<corpus> from_string(std::string_view text, std::string source = "<string>");

  /// Returns the labels of `segment`, or an `unknown_segment` error naming
  /// it ("unknown segment 'x': not in corpus ...": the words a simulated
  /// child's exception reply must begin with, docs/protocol.md section 4).
  /// The span stays valid as long as the corpus is neither changed nor
  /// destroyed.
  caf::expected<span<const uint32_t>> labels(std::string_view segment) const;

  /// Returns whether the corpus has `segment`.
  bool contains(std::string_view segment) const;

  /// Returns the number of segments.
  size_t size() const noexcept { return names_.size(); }

  /// Returns the segment names in file order (Sprint's corpus order).
  const std::vector<std::string>& segment_names() const noexcept { return names_; }

  /// Returns the source the corpus was read from.
  const std::string& source() const noexcept { return source_; }

private:
  struct labels_range {
    size_t offset;
    size_t count;
  };

  std::string source_;
  std::vector<std::string> names_;
  /// Per segment (parallel to `names_`): where its labels are in `labels_`.
  std::vector<labels_range> ranges_;
  /// All segments' labels, back to back.
  std::vector<uint32_t> labels_;
  /// Segment name to index; `std::less<>` allows lookups by string_view.
  std::map<std::string, size_t, std::less<>> index_;
};

/// Appends the labels of `text`, a label list as a corpus line writes it
/// (non-negative decimal integers separated by spaces or tabs; none at all
/// is an empty list), to `out`. Returns what is wrong, naming `owner` ("label
/// number 2 of segment 'x' is 'y', not a non-negative integer"), or an empty
/// string; on an error `out` may hold the labels before the bad one.
std::string append_labels(std::string_view text, std::string_view owner,
                          std::vector<uint32_t>& out);

/// One segment as a corpus file lists it: its name and its labels.
struct corpus_entry {
  std::string name;
  std::vector<uint32_t> labels;
};

/// Writes `entries` to the file at `path` (replacing it) in the format
/// `corpus` reads: one `NAME<TAB>LABELS` line per entry, labels separated by
/// one space. Returns an `io_error` naming the file if it cannot be written.
caf::error write_corpus_file(const std::string& path, span<const corpus_entry> entries);

} // namespace sprintrt::criterion
