// course_provenance.hpp: what `headlab course grade` ran, so that grade.json can be checked:
// the test binary (its path, its SHA-256, whether it is this build's own), the seed and where it
// came from, and the student's work (the commit of the copy's `handout` tag and the SHA-256 of
// `git diff handout -- framework`, the submission.patch of course/student/README.md).
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace headlab::cli {

// The seed the test runs use: --seed when given, else HEADLAB_COURSE_SEED when the environment has
// it (the runs inherit it), else none ("default"). ValueError naming the variable when its value is
// not a whole number from 0 to 10^12.
struct SeedChoice {
  bool set = false;
  std::uint64_t value = 0;
  std::string source = "default";  // "--seed" | "HEADLAB_COURSE_SEED" | "default"
};
SeedChoice resolve_seed(bool seed_given, std::uint64_t seed);

struct GradeProvenance {
  std::string tests_path;      // absolute
  std::string tests_sha256;
  bool foreign_tests = false;  // not BUILD/tests/headlab_tests of this headlab's build
  std::string source_dir;      // the sources the tests were built from ("" when unknown)
  std::string handout_commit;  // "" when unknown (see note)
  std::string diff_sha256;     // of `git diff handout -- framework`; "" when unknown
  std::string note;            // why something is unknown
};

// tests: the binary run; own_tests: this build's own BUILD/tests/headlab_tests.
GradeProvenance grade_provenance(const std::string& tests, const std::string& own_tests);

nlohmann::json provenance_json(const GradeProvenance& p, const SeedChoice& seed);

}  // namespace headlab::cli
