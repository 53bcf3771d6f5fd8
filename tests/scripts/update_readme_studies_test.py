#!/usr/bin/python3
"""ctest scripts.update_readme_studies: docs/tools/update_readme_studies.py on write-ups made here.

    update_readme_studies_test.py SCRIPT SCRATCH_DIR

Checks: the README's block becomes one bullet per write-up in study order (study 2's file sorts
first by name), the text around the block is kept, a second run does not rewrite the file, and
each bad input (no markers, a bad title, two studies with one number, a README without its
markers) exits 1 with one line naming the file, leaving the README as it was.
"""
import os
import shutil
import subprocess
import sys

script, scratch = sys.argv[1:3]
failures = []


def check(what, ok, detail=""):
    print(("ok     " if ok else "FAILED ") + what + ("" if ok else f": {detail}"))
    if not ok:
        failures.append(what)


def write(path, text):
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def run(readme, studies):
    p = subprocess.run([sys.executable, script, "--readme", readme, "--studies", studies], capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


shutil.rmtree(scratch, ignore_errors=True)
studies = os.path.join(scratch, "docs", "studies")
os.makedirs(studies)
readme = os.path.join(scratch, "README.md")
write(os.path.join(studies, "alpha.md"), "# Study 2: heads\n\nintro\n<!-- summary:begin -->\nTwo heads\nbeat one.\n<!-- summary:end -->\nrest\n")
write(os.path.join(studies, "beta.md"), "# Study 1: gates\n<!-- summary:begin -->\nGates halve the sink.\n<!-- summary:end -->\n")
write(readme, "# Top\n\nbefore\n<!-- studies:begin -->\nold text\n<!-- studies:end -->\nafter\n")

rc, out, err = run(readme, studies)
expected = ("# Top\n\nbefore\n"
            "<!-- studies:begin (docs/tools/update_readme_studies.py writes this list from docs/studies/*.md) -->\n"
            "- **[Study 1: gates](docs/studies/beta.md)** Gates halve the sink.\n"
            "- **[Study 2: heads](docs/studies/alpha.md)** Two heads beat one.\n"
            "<!-- studies:end -->\nafter\n")
check("first run: exit 0", rc == 0, err)
check("first run: one bullet per study, in study order, the rest kept", read(readme) == expected, repr(read(readme)))
before = os.stat(readme).st_mtime_ns
rc, out, err = run(readme, studies)
check("second run: exit 0 and up to date", rc == 0 and "up to date" in out, out + err)
check("second run: the file is not rewritten", os.stat(readme).st_mtime_ns == before)


def refused(what, setup, words):
    write(readme, expected)
    undo = setup()
    rc, out, err = run(readme, studies)
    lines = err.strip().splitlines()
    check(what + ": exit 1, one line naming it", rc == 1 and len(lines) == 1 and words in err, f"rc {rc}, {err!r}")
    check(what + ": the README is unchanged", read(readme) == expected)
    undo()


def replace_file(path, text):
    def setup():
        old = read(path)
        write(path, text)
        return lambda: write(path, old)
    return setup


alpha = os.path.join(studies, "alpha.md")
refused("a write-up without its markers", replace_file(alpha, "# Study 2: heads\nno markers\n"), "alpha.md: needs one")
refused("a write-up with a bad title", replace_file(alpha, "# Heads\n<!-- summary:begin -->\nx\n<!-- summary:end -->\n"),
        "alpha.md:1: the first line")
refused("an empty summary", replace_file(alpha, "# Study 2: heads\n<!-- summary:begin -->\n\n<!-- summary:end -->\n"),
        "alpha.md: the summary between the markers is empty")
refused("two studies with one number",
        replace_file(alpha, "# Study 1: heads\n<!-- summary:begin -->\nx\n<!-- summary:end -->\n"), "share a study number")


def readme_without_markers():
    write(readme, "# Top\nno markers\n")
    rc, out, err = run(readme, studies)
    check("a README without markers: exit 1 naming it", rc == 1 and "README.md: needs one" in err, err)
    check("a README without markers: unchanged", read(readme) == "# Top\nno markers\n")


readme_without_markers()

write(readme, "# Top\n<!-- studies:begin -->\nstale\n<!-- studies:end -->\n")
p = subprocess.run([sys.executable, script, "--readme", readme, "--studies", studies, "--check"], capture_output=True, text=True)
check("--check on a stale README: exit 1, nothing written", p.returncode == 1 and "out of date" in p.stderr and "stale" in read(readme),
      p.stderr)
write(readme, expected)
p = subprocess.run([sys.executable, script, "--readme", readme, "--studies", studies, "--check"], capture_output=True, text=True)
check("--check on a current README: exit 0", p.returncode == 0, p.stderr)
print("all passed" if not failures else f"{len(failures)} failed")
sys.exit(1 if failures else 0)
