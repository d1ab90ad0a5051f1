#include "criterion/denominator.hpp"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <unistd.h>

#include <catch2/catch.hpp>

#include "criterion/ctc_topology.hpp"
#include "criterion/sequence_engine.hpp"
#include "tests/support/criterion_test_support.hpp"

using namespace sprintrt::criterion;
using sprintrt::errc;
using sprintrt::error_message;
using test::unwrap;

namespace {

// A denominator file in the temporary directory, removed at the end of the test.
class temp_file {
public:
  explicit temp_file(const std::string& contents) {
    char name[] = "/tmp/sprintrt_denominator_test_XXXXXX";
    const int fd = ::mkstemp(name);
    REQUIRE(fd >= 0);
    ::close(fd);
    path_ = name;
    std::ofstream{path_} << contents;
  }
  ~temp_file() { std::remove(path_.c_str()); }
  const std::string& path() const { return path_; }

private:
  std::string path_;
};

corpus three_segments() {
  return unwrap(corpus::from_string("a\t1 2\nb\t2\nc\t\n", "train.txt"));
}

/// The error of reading `contents` as the denominator file of three_segments(),
/// with the file's name replaced by FILE.
std::string error_of(const std::string& contents) {
  temp_file file{contents};
  auto result = denominator::from_file(file.path(), three_segments(), ctc_topology{0}, 1.0);
  if (result)
    FAIL("reading succeeded: " << contents);
  CHECK(result.error() == errc::invalid_input);
  auto message = error_message(result.error());
  message.replace(message.find(file.path()), file.path().size(), "FILE");
  return message;
}

/// log Z of `graph` over `scores`.
double log_total(const wfsa& graph, const row_matrix_d& scores) {
  sequence_engine engine;
  return engine.run(graph, scores);
}

} // namespace

TEST_CASE("a denominator file's hypotheses are a segment's denominator, the reference included") {
  temp_file file{"# competing hypotheses\n"
                 "a\t2 1\t0.5\n"
                 "a\t1 2\t0.25\r\n"
                 "\n"
                 "b\t1 1\n"};
  const corpus segments = three_segments();
  const ctc_topology ctc{0};
  const auto den = unwrap(denominator::from_file(file.path(), segments, ctc, 2.0));
  CHECK(den.description() == "hypotheses of '" + file.path() + "' (3 lines for 2 segments)");
  std::mt19937 rng{41};
  const row_matrix_d scores = test::random_log_posteriors(4, 3, rng).cast<double>();
  const auto z = [&](std::vector<uint32_t> labels, double cost) {
    return std::exp(log_total(to_wfsa(unwrap(ctc.build("h", labels)), cost), scores));
  };
  // a: "2 1" and the reference "1 2" with the file's cost, scaled by 2.
  const auto a = unwrap(den.lookup("a"));
  CHECK(a.reference_cost == 0.5);
  CHECK(a.max_emission == 2);
  CHECK(log_total(*a.graph, scores) ==
        Approx(std::log(z({2, 1}, 1.0) + z({1, 2}, 0.5))).epsilon(1e-12));
  // b: "1 1" and the reference at cost 0.
  const auto b = unwrap(den.lookup("b"));
  CHECK(b.reference_cost == 0);
  CHECK(log_total(*b.graph, scores) == Approx(std::log(z({1, 1}, 0) + z({2}, 0))).epsilon(1e-12));
  // c: no lines, only its (empty) reference.
  const auto c = unwrap(den.lookup("c"));
  CHECK(log_total(*c.graph, scores) == Approx(std::log(z({}, 0))).epsilon(1e-12));
  auto unknown = den.lookup("d");
  REQUIRE_FALSE(unknown);
  CHECK(unknown.error() == errc::unknown_segment);
  CHECK(error_message(unknown.error()) ==
        "unknown segment 'd': it has no denominator, not being in the corpus");
}

TEST_CASE("a bad denominator file is refused, naming file, line and what was wrong") {
  CHECK(error_of("a\t1\nno tab here\n") ==
        "denominator file 'FILE' line 2: expected NAME<TAB>labels[<TAB>cost], got 'no tab here'");
  CHECK(error_of("a\t1 x\n") ==
        "denominator file 'FILE' line 1: label number 2 of the hypothesis of segment 'a' is 'x', "
        "not a non-negative integer");
  CHECK(error_of("\n\nb\t1\tcheap\n") == "denominator file 'FILE' line 3: the cost 'cheap' of "
                                         "segment 'b' is not a finite number");
  CHECK(error_of("b\t1\tinf\n") == "denominator file 'FILE' line 1: the cost 'inf' of segment "
                                   "'b' is not a finite number");
  CHECK(error_of("z\t1\n") ==
        "denominator file 'FILE' line 1: segment 'z' is not in the corpus 'train.txt'");
  CHECK(error_of("a\t1 0 2\n") == "denominator file 'FILE' line 1: the hypothesis of segment "
                                  "'a': label number 2 is 0, the CTC blank index");
  CHECK(error_of("a\t2  1\na\t1\na\t2 1\t3\n") ==
        "denominator file 'FILE' line 3: segment 'a' lists the sequence '2 1' again (first on "
        "line 1)");
  auto missing =
      denominator::from_file("/nonexistent/den.txt", three_segments(), ctc_topology{0}, 1);
  REQUIRE_FALSE(missing);
  CHECK(missing.error() == errc::io_error);
  CHECK(error_message(missing.error()) == "cannot open denominator file '/nonexistent/den.txt'");
}

TEST_CASE("a reference the topology refuses fails that segment only") {
  temp_file file{"ok\t2\n"};
  const auto segments = unwrap(corpus::from_string("ok\t1\nbad\t0 1\n"));
  const auto den = unwrap(denominator::from_file(file.path(), segments, ctc_topology{0}, 1.0));
  CHECK(den.lookup("ok"));
  auto bad = den.lookup("bad");
  REQUIRE_FALSE(bad);
  CHECK(error_message(bad.error()) == "segment 'bad': label number 1 is 0, the CTC blank index");
}

TEST_CASE("the label-lm denominator is one graph for every segment, with each reference's cost") {
  const corpus segments = three_segments();
  const label_lm_options options{2, 1.0};
  const auto lm = unwrap(label_lm::estimate(segments, options));
  const auto den = unwrap(denominator::from_label_lm(segments, ctc_topology{0}, options, 0.5));
  CHECK(den.description() == "label 2-gram over 2 labels (add-1 smoothing)");
  const auto a = unwrap(den.lookup("a"));
  const auto c = unwrap(den.lookup("c"));
  CHECK(a.graph == c.graph);
  CHECK(a.reference_cost == 0.5 * lm.cost(std::vector<uint32_t>{1, 2}));
  CHECK(c.reference_cost == 0.5 * lm.cost(std::vector<uint32_t>{}));
  denominator_options named;
  named.source = "label-lm";
  named.lm = options;
  CHECK(named.is_label_lm());
  CHECK(unwrap(denominator::make(named, segments, ctc_topology{0}, 0.5)).description() ==
        den.description());
  auto blank_in_corpus = denominator::from_label_lm(unwrap(corpus::from_string("x\t0 1\n")),
                                                    ctc_topology{0}, options, 1);
  REQUIRE_FALSE(blank_in_corpus);
  CHECK(error_message(blank_in_corpus.error()) == "label-lm: label 0 is the CTC blank index");
}
