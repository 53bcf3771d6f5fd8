// course_provenance.cpp: the seed, the test binary's hash and the student's diff for grade.json
// (course_provenance.hpp).
#include "course_provenance.hpp"

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "child_process.hpp"
#include "headlab/core/errors.hpp"
#include "headlab/core/sha256.hpp"
#include "headlab/core/user_input.hpp"

namespace headlab::cli {
namespace {

namespace fs = std::filesystem;

constexpr int kGitTimeoutSeconds = 60;
constexpr std::size_t kMaxDiffBytes = std::size_t(64) << 20;

// git's stdout only (its warnings are not the diff), up to kMaxDiffBytes; a Ctrl-C stops grading.
Run run_git(const std::string& git, const std::vector<std::string>& args) {
  RunOutput keep;
  keep.head_bytes = kMaxDiffBytes;
  keep.tail_bytes = 0;
  keep.stderr_too = false;
  const Run run = run_process(git, args, {"LC_ALL=C"}, kGitTimeoutSeconds, keep);
  if (run.stopped_by_signal != 0) throw StoppedBySignal{run.stopped_by_signal};
  return run;
}

bool is_commit_id(const std::string& s) {
  return s.size() == 40 && s.find_first_not_of("0123456789abcdef") == std::string::npos;
}
constexpr std::uint64_t kMaxSeed = 1000000000000ULL;

// The source directory a CMake build directory was configured from (its CMakeCache.txt).
std::string configured_source_dir(const fs::path& build) {
  std::ifstream cache(build / "CMakeCache.txt");
  const std::string key = "CMAKE_HOME_DIRECTORY:INTERNAL=";
  for (std::string line; std::getline(cache, line);) {
    if (line.rfind(key, 0) == 0) return line.substr(key.size());
  }
  return "";
}

}  // namespace

SeedChoice resolve_seed(bool seed_given, std::uint64_t seed) {
  SeedChoice choice;
  if (seed_given) {
    choice = {true, seed, "--seed"};
  } else if (const char* env = std::getenv("HEADLAB_COURSE_SEED"); env && *env) {  // empty: unset
    try {
      choice = {true, parse_whole_number(env, 0, kMaxSeed), "HEADLAB_COURSE_SEED"};
    } catch (const ValueError&) {
      throw ValueError("HEADLAB_COURSE_SEED must be a whole number from 0 to " + std::to_string(kMaxSeed) + ", got " +
                       quote_clipped(env) + " (unset it, or give --seed)");
    }
  }
  return choice;
}

GradeProvenance grade_provenance(const std::string& tests, const std::string& own_tests) {
  GradeProvenance p;
  std::error_code ec;
  const fs::path canonical = fs::weakly_canonical(tests, ec);
  p.tests_path = ec ? fs::absolute(tests).string() : canonical.string();
  p.tests_sha256 = sha256_file_hex(p.tests_path);
  const fs::path own = fs::weakly_canonical(own_tests, ec);
  p.foreign_tests = ec || own.string() != p.tests_path;
  // BUILD/tests/headlab_tests: BUILD's CMakeCache.txt names the sources.
  p.source_dir = configured_source_dir(fs::path(p.tests_path).parent_path().parent_path());
  const std::string git = find_in_path("git");
  if (p.source_dir.empty()) {
    p.note = "no CMakeCache.txt above " + p.tests_path + ": the sources (and so the handout and the diff) are unknown";
  } else if (git.empty()) {
    p.note = "git is not installed: the handout commit and the diff are unknown";
  } else {
    const Run tag = run_git(git, {"-C", p.source_dir, "rev-parse", "--verify", "-q", "handout^{commit}"});
    const std::string commit = tag.output.substr(0, tag.output.find('\n'));
    if (tag.exit_code != 0 || !is_commit_id(commit)) {
      p.note = "no `handout` tag in " + p.source_dir + " (course/student/README.md, step 1, makes it)";
    } else {
      p.handout_commit = commit;
      const Run diff = run_git(git, {"-C", p.source_dir, "diff", "--no-color", "--no-ext-diff", "handout", "--",
                                     "framework"});
      if (diff.exit_code != 0 || diff.timed_out) {
        p.note = "git diff handout -- framework failed in " + p.source_dir;
      } else if (diff.dropped_bytes > 0) {
        p.note = "the diff against handout is over " + std::to_string(kMaxDiffBytes >> 20) + " MiB: not hashed";
      } else {
        p.diff_sha256 = sha256_hex(diff.output);
      }
    }
  }
  return p;
}

nlohmann::json provenance_json(const GradeProvenance& p, const SeedChoice& seed) {
  auto or_null = [](const std::string& s) { return s.empty() ? nlohmann::json(nullptr) : nlohmann::json(s); };
  nlohmann::json j;
  j["tests"] = {{"path", p.tests_path}, {"sha256", p.tests_sha256}, {"foreign", p.foreign_tests}};
  j["seed_source"] = seed.source;
  j["handout_commit"] = or_null(p.handout_commit);
  j["diff_sha256"] = or_null(p.diff_sha256);
  j["sources"] = or_null(p.source_dir);
  j["note"] = or_null(p.note);
  j["what_counts"] = "a self-check: the instructor's grade (a fresh copy, this diff, a hidden seed and extra cases) is the grade";
  return j;
}

}  // namespace headlab::cli
