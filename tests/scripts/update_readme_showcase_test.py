#!/usr/bin/python3
"""ctest scripts.update_readme_showcase: docs/tools/update_readme_showcase.py on the fixtures of
tests/fixtures/showcase/, against a copy of their small README in a scratch directory.

    update_readme_showcase_test.py SCRIPT FIXTURE_DIR SCRATCH_DIR

Checks: the rewritten README is expected_README.md (only the block between the markers changed,
the first run's beam outputs escaped for a table, the second run named on its own line); a second
run changes nothing and does not even rewrite the file; one run dir drops the second run's line;
and each bad input exits 1 with one line on stderr naming it, leaving the README as it was.
"""
import os
import shutil
import subprocess
import sys

script, fixtures, scratch = sys.argv[1:4]
failures = []


def check(what, ok, detail=""):
    print(("ok     " if ok else "FAILED ") + what + ("" if ok else f": {detail}"))
    if not ok:
        failures.append(what)


def run(*args):
    p = subprocess.run([sys.executable, script, *args], capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


shutil.rmtree(scratch, ignore_errors=True)
os.makedirs(scratch)
readme = os.path.join(scratch, "README.md")
shutil.copyfile(os.path.join(fixtures, "README.md"), readme)
seed1, seed2 = os.path.join(fixtures, "run_seed1"), os.path.join(fixtures, "run_seed2")

rc, out, err = run(seed1, seed2, "--readme", readme)
check("two runs: exit 0", rc == 0, err)
check("two runs: the README is expected_README.md", read(readme) == read(os.path.join(fixtures, "expected_README.md")),
      "diff " + readme + " " + os.path.join(fixtures, "expected_README.md"))

before = os.stat(readme)
rc, out, err = run(seed1, seed2, "--readme", readme)
after = os.stat(readme)
check("again: exit 0, 'already up to date'", rc == 0 and "already up to date" in out, out + err)
check("again: the same bytes", read(readme) == read(os.path.join(fixtures, "expected_README.md")))
check("again: the file is not rewritten", (before.st_ino, before.st_mtime_ns) == (after.st_ino, after.st_mtime_ns))

rc, out, err = run(seed1, "--readme", readme)
text = read(readme)
check("one run: rewritten without the second run's line", rc == 0 and "also decoded" not in text
      and "seed 1, 5044 steps" in text and text.endswith("which is not a marker.\n"), text)

# Bad input: exit 1, one line naming the problem, the README untouched.
no_markers = os.path.join(scratch, "no_markers.md")
with open(no_markers, "w", encoding="utf-8") as f:
    f.write("# no block here\n\nnot <!-- showcase:begin --> a marker\n")
end_first = os.path.join(scratch, "end_first.md")
with open(end_first, "w", encoding="utf-8") as f:
    f.write("<!-- showcase:end -->\n<!-- showcase:begin -->\n")
bad_json = os.path.join(scratch, "bad_json")
os.makedirs(bad_json)
with open(os.path.join(bad_json, "summary.json"), "w", encoding="utf-8") as f:
    f.write('{"showcase": [')
empty_dir = os.path.join(scratch, "empty_run")
os.makedirs(empty_dir)
cases = [
    ("a missing run dir", [os.path.join(scratch, "no_such_run"), "--readme", readme], "no_such_run: not a run directory"),
    ("a run dir without summary.json", [empty_dir, "--readme", readme], "summary.json: not found"),
    ("a summary.json that is not JSON", [bad_json, "--readme", readme], "cannot be read (JSONDecodeError)"),
    ("a summary.json without showcase", [os.path.join(fixtures, "run_without_showcase"), "--readme", readme],
     'summary.json: no "showcase"'),
    ("a later run dir without showcase", [seed1, os.path.join(fixtures, "run_without_showcase"), "--readme", readme],
     'run_without_showcase/summary.json: no "showcase"'),
    ("a README without the markers", [seed1, "--readme", no_markers], "no_markers.md: needs one line <!-- showcase:begin -->"),
    ("a README with the end marker first", [seed1, "--readme", end_first], "end_first.md: needs one line"),
    ("a missing README", [seed1, "--readme", os.path.join(scratch, "nope.md")], "nope.md: cannot be read"),
]
for what, args, message in cases:
    before_text = read(readme)
    rc, out, err = run(*args)
    lines = err.strip().splitlines()
    check(what + ": exit 1 with one line naming it", rc == 1 and len(lines) == 1 and message in lines[0],
          f"exit {rc}, stderr {err!r}")
    check(what + ": the README is unchanged", read(readme) == before_text)
check("no temporary file left beside the README", sorted(os.listdir(scratch)) ==
      sorted(["README.md", "no_markers.md", "end_first.md", "bad_json", "empty_run"]), str(os.listdir(scratch)))

print(f"{len(failures)} failed" if failures else "all passed")
sys.exit(1 if failures else 0)
