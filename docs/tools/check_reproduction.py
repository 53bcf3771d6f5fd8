#!/usr/bin/python3
"""Does a committed study still reproduce? Retrains a few of its runs with this build and compares
their metrics with the committed runs.csv, digit for digit.

  docs/tools/check_reproduction.py RECIPE [RECIPE ...] [--headlab build/release/apps/headlab]
                                   [--cells first,last | --cells NAME,NAME] [--seed S]

For each recipe: `headlab study run RECIPE --runs TMP --emit-jobs JOBS` gives the exact command of
every run (the recipe's [train], the cell's flags, --seed, --threads); the runs of the chosen cells
(default: the first and the last cell) at one seed (default: the recipe's first) are trained, then
`headlab study report RECIPE --runs TMP` writes their runs.csv, whose metric columns are compared
with the committed docs/studies/<name>/runs.csv. Prints per run "same" (every metric identical, or
equal to the digits the committed value was rounded to) or each metric that differs, old and new.

What a difference means: the numbers a run gives depend on the thread count (pinned by the
recipe), headlab's own code, and the machine's arithmetic: the CPU (a virtual machine's "AMD EPYC"
has been a Zen 3, a Zen 4 and a Zen 5), the kernels OpenBLAS picks for it, and the instructions
headlab was compiled for (-march=native). Runs since 2026-12-07 record all three in runs.csv's
arithmetic column. Where the committed run's arithmetic is this machine's, a difference says that a
change since its commit changed the numbers (exit status 1); where it is another, differences are
expected and say nothing (reported, exit status 0); where it is unrecorded, the check cannot tell
(exit status 1, the message says so). Studies whose metrics come from a measure.py (a runs.csv made
by the script) are not checked here: their summary.json fields are not the committed columns.
"""
import argparse
import csv
import os
import shutil
import subprocess
import sys
import tempfile

FIXED_COLUMNS = {"cell", "seed", "steps", "train_seconds", "flags", "threads", "cpu", "arithmetic", "commit"}


def agrees(old, new):
    """The same text, or the same number to the digits the committed value was rounded to (a
    measure.py's round(x, 6))."""
    if old == new:
        return True
    try:
        decimals = len(old.split(".")[1]) if "." in old and "e" not in old.lower() else None
        return decimals is not None and decimals < 15 and round(float(new), decimals) == float(old)
    except ValueError:
        return False


def rows_by_run(path):
    with open(path, newline="") as f:
        return {(r["cell"], r["seed"]): r for r in csv.DictReader(f)}


def study_lines(recipe):
    """The recipe's cell names and its first seed (its [study] section's cell and seeds lines)."""
    names, seed = [], None
    with open(recipe) as f:
        for line in f:
            key, _, value = line.partition("=")
            if key.strip() == "cell" and value.split():
                names.append(value.split()[0])
            elif key.strip() == "seeds" and seed is None:
                seed = value.strip().split(",")[0].strip()
    if seed is None:
        raise SystemExit(f"{recipe}: no seeds line")
    return names, seed


def check(recipe, headlab, chosen, seed):
    committed_csv = os.path.join(os.path.dirname(recipe), "runs.csv")
    committed = rows_by_run(committed_csv)
    names, recipe_seed = study_lines(recipe)
    cells = [names[0], names[-1]] if chosen == "first,last" else chosen.split(",")
    seed = seed or recipe_seed
    work = tempfile.mkdtemp(prefix="headlab_reproduce_")
    try:
        jobs = os.path.join(work, "jobs.txt")
        subprocess.run([headlab, "study", "run", recipe, "--runs", os.path.join(work, "study"), "--emit-jobs", jobs],
                       check=True, capture_output=True)
        wanted = [f"/runs/{cell}-seed{seed} " for cell in dict.fromkeys(cells)]
        lines = [line for line in open(jobs) if any(w in line for w in wanted)]
        if len(lines) != len(wanted):
            raise SystemExit(f"{recipe}: cells {cells} at seed {seed}: not all are runs of this recipe")
        for line in lines:
            subprocess.run(["bash", "-c", line], check=True)
        report = subprocess.run([headlab, "study", "report", recipe, "--runs", os.path.join(work, "study")],
                                capture_output=True, text=True)
        if report.returncode != 0:
            print(f"{recipe}: not checked: study report refused the runs ({report.stderr.strip()[:200]})")
            return True
        fresh = rows_by_run(os.path.join(work, "study", "runs.csv"))
        same = True
        for key, row in sorted(fresh.items()):
            old = committed.get(key)
            if old is None:
                print(f"{recipe}: {key[0]} seed {key[1]}: not in the committed runs.csv")
                same = False
                continue
            metrics = [c for c in row if c not in FIXED_COLUMNS]
            differing = [(c, old.get(c), row[c]) for c in metrics if not agrees(old.get(c) or "", row[c])]
            where = f"{os.path.basename(os.path.dirname(recipe))}: {key[0]} seed {key[1]}"
            then, here = old.get("arithmetic") or "", row.get("arithmetic") or ""
            if not differing:
                print(f"{where}: same ({len(metrics)} metrics; committed at {old.get('commit')} on {old.get('cpu')})")
                continue
            shown = "; ".join(f"{c} {o} -> {n}" for c, o, n in differing)
            partly_unrecorded = then.startswith("unrecorded")  # a checkpoint from before the record, resumed
            if then and then != here and not partly_unrecorded:
                print(f"{where}: differs, as expected on other arithmetic (committed on '{then}', here '{here}'): {shown}")
                continue
            same = False
            why = ("the same arithmetic, so a change since that commit changed the numbers" if then and not partly_unrecorded
                   else "the committed run records no arithmetic for some or all of its steps (runs before 2026-12-07, "
                   f"or resumed from a checkpoint saved before late 2026-12-07), so the CPU under them may have been another; here '{here}'")
            print(f"{where}: DIFFERS from the commit {old.get('commit')} on {old.get('cpu')} ({why}): {shown}")
        return same
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("recipes", nargs="+")
    ap.add_argument("--headlab", default="build/release/apps/headlab")
    ap.add_argument("--cells", default="first,last")
    ap.add_argument("--seed", default="")
    a = ap.parse_args()
    headlab = os.path.abspath(a.headlab)
    results = [check(os.path.abspath(r), headlab, a.cells, a.seed) for r in a.recipes]
    sys.exit(0 if all(results) else 1)


if __name__ == "__main__":
    main()
