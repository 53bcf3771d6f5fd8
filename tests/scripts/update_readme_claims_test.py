#!/usr/bin/env python3
"""Tests docs/tools/update_readme_claims.py on write-ups made here: the table in claims.txt order,
the write-ups of a claim in study order, --check seeing a changed verdict, each bad input refused.

    update_readme_claims_test.py SCRIPT WORK_DIR          prints "all passed"
"""
import os
import shutil
import subprocess
import sys

script, work = sys.argv[1], sys.argv[2]
shutil.rmtree(work, ignore_errors=True)
studies = os.path.join(work, "studies")
os.makedirs(studies)
readme = os.path.join(work, "README.md")


def write(path, text):
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def run(*extra):
    p = subprocess.run([sys.executable, script, "--readme", readme, "--studies", studies, *extra],
                       capture_output=True, text=True)
    return p.returncode, p.stdout + p.stderr


def expect(condition, what):
    if not condition:
        print("FAIL:", what)
        sys.exit(1)


write(os.path.join(studies, "claims.txt"), "# comment\nb-claim | Claim B\na-claim | Claim A\n")
write(os.path.join(studies, "two.md"), "# Study 2: two\n<!-- claim a-claim (text): A from two -->\n")
write(os.path.join(studies, "one.md"), "# Study 1: one\n<!-- claim a-claim: A from one -->\n"
      "<!-- claim b-claim (toy): B from one -->\n")
write(readme, "intro\n<!-- claims:begin -->\nold\n<!-- claims:end -->\nend\n")
status, out = run()
expect(status == 0, f"a first run: {out}")
text = open(readme, encoding="utf-8").read()
rows = [line for line in text.splitlines() if line.startswith("| Claim")]
expect(rows == ["| Claim B | [study 1](studies/one.md) (toy) | B from one |",
                "| Claim A | [study 1](studies/one.md), [study 2](studies/two.md) (text) | A from one; A from two |"],
       f"the rows: {rows}")
expect(text.startswith("intro\n") and text.endswith("\nend\n"), "the text around the markers kept")
expect(run("--check")[0] == 0, "--check on an up-to-date table")
write(os.path.join(studies, "two.md"), "# Study 2: two\n<!-- claim a-claim (text): A changed -->\n")
expect(run("--check")[0] == 1, "--check did not see a changed verdict")
write(os.path.join(studies, "two.md"), "# Study 2: two\n<!-- claim c-claim: C -->\n")
status, out = run()
expect(status == 1 and "two.md:2: claim 'c-claim' is not in claims.txt" in out, f"an unknown key: {out}")
write(os.path.join(studies, "two.md"), "# Study 2: two\n")
write(os.path.join(studies, "claims.txt"), "a-claim | Claim A\nb-claim | Claim B\nc-claim | Claim C\n")
status, out = run()
expect(status == 1 and "no write-up states a verdict on 'c-claim'" in out, f"a claim nobody states: {out}")
write(os.path.join(studies, "claims.txt"), "a-claim Claim A\n")
status, out = run()
expect(status == 1 and "claims.txt:1: expected 'KEY | claim'" in out, f"a malformed claims.txt: {out}")
print("all passed")
