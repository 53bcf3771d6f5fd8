#!/usr/bin/python3
"""Do a study's verdicts survive a rerun? Trains a recipe's every run again with this build, on this
machine, and sets each declared comparison's new estimate, interval and verdict beside the committed
ones.

  docs/tools/replicate_verdicts.py RECIPE [RECIPE ...] --runs DIR [--out DIR] [--jobs 2]
                                   [--set KEY=VALUE ...] [--headlab build/release/apps/headlab] [--quick]

For each recipe (docs/studies/<name>/recipe.ini): `headlab study run RECIPE --runs DIR/<name> -j JOBS`
(finished runs are kept, so a stopped replication goes on), `headlab study report RECIPE --runs
DIR/<name>` (the new runs.csv and comparisons.csv, in DIR/<name>), and `headlab study report RECIPE
--from-csv docs/studies/<name>/runs.csv` (the committed runs through the same C++ statistics and the
recipe's criteria, so both sides are judged alike). Prints one line per comparison; with --out, writes
OUT/<name>/{runs,comparisons}.csv (the replication's raw data) and OUT/verdicts.csv (study,
comparison, committed and replicated difference, 95% CI, Holm p, verdict, same verdict or not; rows
of other studies already in it are kept).

--set KEY=VALUE changes one pinned [train] option of every recipe for the rerun (a copy of the recipe
in DIR/<name>.recipe.ini is run; the committed one is untouched): `--set heads-in-place=true` reruns
studies made with the composed attention steps through the in-place heads, the same formula summed
in another order, which asks the same question as another CPU would.

What it settles: the committed numbers were made at one commit on one machine's arithmetic (the
CPU, OpenBLAS's kernels, the instructions headlab was compiled for; runs.csv's cpu and arithmetic
columns). A rerun at another commit or on another machine trains other models from the same seeds, as
a small perturbation would. A verdict that holds on both is not an artefact of one machine's
rounding; one that flips was near its bound, and the page must say so. Only the recipe's declared
comparisons on its summary.json metrics are replicated here: criteria a study's measure.py adds (a
probe's head scores, a pruning curve) are not.
"""
import argparse
import csv
import os
import shutil
import subprocess
import sys
import tempfile

FIELDS = ["study", "comparison", "metric", "committed_difference", "committed_ci95", "committed_p_holm",
          "committed_verdict", "replicated_difference", "replicated_ci95", "replicated_p_holm",
          "replicated_verdict", "same_verdict"]


def comparisons(path):
    with open(path, newline="") as f:
        return {r["comparison"] + " on " + r["metric"]: r for r in csv.DictReader(f)}


def interval(row):
    """The interval the verdict used: paired where the test was paired, else Welch's."""
    paired = row.get("test") == "paired"
    low, high = (row["paired_ci95_low"], row["paired_ci95_high"]) if paired else (row["ci95_low"], row["ci95_high"])
    return f"[{float(low):+.4f}, {float(high):+.4f}]"


def with_options(recipe, settings, path):
    """A copy of RECIPE at PATH with each KEY=VALUE of settings replacing its [train] line KEY=..."""
    lines, section, seen = [], "", set()
    with open(recipe) as f:
        for line in f:
            stripped = line.strip()
            if stripped.startswith("["):
                section = stripped
            key = stripped.partition("=")[0].strip()
            if section == "[train]" and key in settings and not stripped.startswith("#"):
                line, seen = f"{key}={settings[key]}\n", seen | {key}
            lines.append(line)
    missing = set(settings) - seen
    if missing:
        raise SystemExit(f"{recipe}: --set {', '.join(sorted(missing))}: not a pinned [train] option of this recipe")
    with open(path, "w") as f:
        f.writelines(lines)
    return path


def replicate(recipe, headlab, runs_root, jobs, quick, settings):
    name = os.path.basename(os.path.dirname(os.path.abspath(recipe)))
    runs = os.path.join(runs_root, name)
    committed_runs_csv = os.path.join(os.path.dirname(os.path.abspath(recipe)), "runs.csv")
    if settings:
        os.makedirs(runs_root, exist_ok=True)
        recipe = with_options(recipe, settings, os.path.join(runs_root, name + ".recipe.ini"))
    run = [headlab, "study", "run", recipe, "--runs", runs, "-j", str(jobs)] + (["--quick"] if quick else [])
    subprocess.run(run, check=True, stdout=subprocess.DEVNULL)
    subprocess.run([headlab, "study", "report", recipe, "--runs", runs] + (["--quick"] if quick else []),
                   check=True, stdout=subprocess.DEVNULL)
    committed_dir = tempfile.mkdtemp(prefix="headlab_committed_")
    try:
        subprocess.run([headlab, "study", "report", recipe, "--from-csv", committed_runs_csv, "--out", committed_dir],
                       check=True, stdout=subprocess.DEVNULL)
        old = comparisons(os.path.join(committed_dir, "comparisons.csv"))
    finally:
        shutil.rmtree(committed_dir, ignore_errors=True)
    new = comparisons(os.path.join(runs, "comparisons.csv"))
    rows = []
    for key, n in new.items():
        o = old.get(key)
        rows.append({"study": name, "comparison": n["comparison"], "metric": n["metric"],
                     "committed_difference": f"{float(o['difference']):+.4f}" if o else "",
                     "committed_ci95": interval(o) if o else "", "committed_p_holm": o["p_holm"] if o else "",
                     "committed_verdict": o["verdict"] if o else "not in the committed runs",
                     "replicated_difference": f"{float(n['difference']):+.4f}", "replicated_ci95": interval(n),
                     "replicated_p_holm": n["p_holm"], "replicated_verdict": n["verdict"],
                     "same_verdict": "yes" if o and o["verdict"] == n["verdict"] else "no"})
    return name, runs, rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("recipes", nargs="+")
    ap.add_argument("--runs", required=True, help="where the replication's runs go (DIR/<study name>)")
    ap.add_argument("--out", default="", help="where to write the replication's CSVs and verdicts.csv")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--headlab", default="build/release/apps/headlab")
    ap.add_argument("--quick", action="store_true", help="the recipes' --quick form (a test of this script)")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="change this pinned [train] option for the rerun (repeatable)")
    a = ap.parse_args()
    headlab = os.path.abspath(a.headlab)
    settings = {}
    for item in a.set:
        key, eq, value = item.partition("=")
        if not eq or not key.strip():
            raise SystemExit(f"--set {item!r}: give KEY=VALUE")
        settings[key.strip()] = value.strip()
    every = []
    for recipe in a.recipes:
        name, runs, rows = replicate(recipe, headlab, os.path.abspath(a.runs), a.jobs, a.quick, settings)
        for r in rows:
            print(f"{name}: {r['comparison']} on {r['metric']}: committed {r['committed_difference']} "
                  f"{r['committed_ci95']} {r['committed_verdict']}; replicated {r['replicated_difference']} "
                  f"{r['replicated_ci95']} {r['replicated_verdict']}"
                  + ("" if r["same_verdict"] == "yes" else "  <- VERDICT DIFFERS"))
        every += rows
        if a.out:
            os.makedirs(os.path.join(a.out, name), exist_ok=True)
            for f in ("runs.csv", "comparisons.csv"):
                shutil.copyfile(os.path.join(runs, f), os.path.join(a.out, name, f))
    if a.out:
        # Rows of studies replicated by an earlier call into the same --out are kept.
        path, done = os.path.join(a.out, "verdicts.csv"), {r["study"] for r in every}
        if os.path.exists(path):
            with open(path, newline="") as f:
                every = [r for r in csv.DictReader(f) if r["study"] not in done] + every
        with open(path, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=FIELDS, lineterminator="\n")
            w.writeheader()
            w.writerows(every)
    sys.exit(0 if all(r["same_verdict"] == "yes" for r in every) else 1)


if __name__ == "__main__":
    main()
