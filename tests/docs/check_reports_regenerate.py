#!/usr/bin/env python3
"""Every committed study report can be made again from its committed runs.csv.

    check_reports_regenerate.py HEADLAB STUDIES_DIR

For each STUDIES_DIR/<name>/ with a report.md (written by `headlab study report`): runs `headlab
study report <name>/recipe.ini --from-csv <name>/runs.csv --out TMP` and compares TMP's report.md
with the committed one byte for byte, and its summary.csv and comparisons.csv field by field: text
exactly, numbers to a relative 1e-9 (the CSVs carry 17 digits, whose last ones differ between an
optimised build and a sanitizer build at -O1). A difference means the
committed statistics or verdicts are not what today's code computes from the committed runs (a
hand edit, or a change to the statistics or the report since): exits 1 naming the file. Stdlib only.
"""
import csv
import filecmp
import math
import os
import shutil
import subprocess
import sys
import tempfile

FILES = ("report.md", "summary.csv", "comparisons.csv")


def same_field(a, b):
    if a == b:
        return True
    try:
        x, y = float(a), float(b)
    except ValueError:
        return False
    return math.isclose(x, y, rel_tol=1e-9, abs_tol=1e-300) or (math.isnan(x) and math.isnan(y))


def same_file(committed, made):
    if committed.endswith(".md"):
        return filecmp.cmp(committed, made, shallow=False)
    with open(committed, newline="") as f:
        a = list(csv.reader(f))
    with open(made, newline="") as f:
        b = list(csv.reader(f))
    return len(a) == len(b) and all(len(r) == len(q) and all(map(same_field, r, q)) for r, q in zip(a, b))


def main():
    headlab, studies = sys.argv[1], sys.argv[2]
    names = sorted(n for n in os.listdir(studies) if os.path.isfile(os.path.join(studies, n, "report.md")))
    failures = []
    work = tempfile.mkdtemp(prefix="headlab_regenerate_")
    try:
        for name in names:
            here, out = os.path.join(studies, name), os.path.join(work, name)
            made = subprocess.run([headlab, "study", "report", os.path.join(here, "recipe.ini"), "--from-csv",
                                   os.path.join(here, "runs.csv"), "--out", out], capture_output=True, text=True)
            if made.returncode != 0:
                failures.append(f"{name}: study report --from-csv failed: {made.stderr.strip()[:300]}")
                continue
            for f in FILES:
                committed = os.path.join(here, f)
                if os.path.exists(committed) and not same_file(committed, os.path.join(out, f)):
                    failures.append(f"{name}/{f}: differs from what `headlab study report --from-csv "
                                    f"{name}/runs.csv` writes today")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for line in failures:
        print(line)
    if failures:
        sys.exit(1)
    print(f"reports: {len(names)} regenerate from their runs.csv")


if __name__ == "__main__":
    main()
