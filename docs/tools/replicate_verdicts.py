#!/usr/bin/python3
"""Do a study's verdicts survive a rerun? Trains a recipe's every run again with this build, on this
machine, and sets each declared comparison's new estimate, interval and verdict beside the committed
ones.

  docs/tools/replicate_verdicts.py RECIPE [RECIPE ...] --runs DIR [--out DIR] [--jobs 2] [--measure]
                                   [--set KEY=VALUE ...] [--headlab build/release/apps/headlab] [--quick]

For each recipe (docs/studies/<name>/recipe.ini): `headlab study run RECIPE --runs DIR/<name> -j JOBS`
(finished runs are kept, so a stopped replication goes on), `headlab study report RECIPE --runs
DIR/<name>` (the new runs.csv and comparisons.csv, in DIR/<name>), and `headlab study report RECIPE
--from-csv docs/studies/<name>/runs.csv` (the committed runs through the same C++ statistics and the
recipe's criteria, so both sides are judged alike). Prints one line per comparison; with --out, writes
OUT/<name>/{runs,comparisons}.csv (the replication's raw data) and OUT/verdicts.csv (study,
comparison, committed and replicated difference, 95% CI, Holm p, verdict, same verdict or not; rows
of other studies already in it are kept) and OUT/verdicts.md (the same as a Markdown table).

--measure: for studies whose metrics come from a measure.py (a probe's head scores, a pruning
curve: the recipe's `metrics` beyond summary.json), the study's measure.py (MEASURE_SCRIPTS names the
one a recipe shares) measures the new runs into DIR/<name>/runs.csv, as it measured the committed
ones, and `headlab study report RECIPE --from-csv DIR/<name>/runs.csv` judges them. The measure.py
must take the common command line (RUNS --headlab H --out DIR: study_runs.measure_args), plus the
runs of another study it reads (MEASURE_INPUTS: that study is replicated first, in the same call);
the replication writes DIR/<name>/commit.txt (this checkout's commit; kept when a rerun into the same
--runs finds it, the runs having been trained by that call) for it. A study whose criteria
are in its report.py (a count of seeds, a share regained: studies 13, 14, 15, 17, which declare no
comparison between cells) is judged by `report.py --judge DIR/<name>` and `report.py --judge
docs/studies/<name>`: each criterion (holds or not, what was measured) and the page's verdict,
committed beside replicated.

--set KEY=VALUE changes one pinned [train] option of every recipe for the rerun (a copy of the recipe
in DIR/<name>.recipe.ini is run; the committed one is untouched): `--set heads-in-place=true` reruns
studies made with the composed attention steps through the in-place heads, the same formula summed
in another order, which asks the same question as another CPU would.

What it settles: the committed numbers were made at one commit on one machine's arithmetic (the
CPU, OpenBLAS's kernels, the instructions headlab was compiled for; runs.csv's cpu and arithmetic
columns). A rerun at another commit or on another machine trains other models from the same seeds, as
a small perturbation would. A verdict that holds on both is not an artefact of one machine's
rounding; one that flips was near its bound, and the page must say so. Only the recipe's declared
comparisons are replicated here (with --measure, those on a measure.py's metrics too, and the
criteria of a report.py that has --judge): criteria a study's page adds in prose only (a band of
random orders) are not.
"""
import argparse
import csv
import json
import os
import shutil
import subprocess
import sys
import tempfile

# A recipe measured by another study's measure.py (study 21's two parts share one).
MEASURE_SCRIPTS = {"ensemble-robustness-gap": "ensemble-robustness-drop/measure.py"}
# A measure.py that reads another study's runs too: its arguments after RUNS, "{}" standing for that
# study's replicated runs (DIR/<study>).
MEASURE_INPUTS = {"circuits-trained": ("head-count-recall", ["{}"]),
                  "lm-sink": ("text-head-roles", ["--control", "{}"])}

FIELDS = ["study", "comparison", "metric", "committed_difference", "committed_ci95", "committed_p_holm",
          "committed_verdict", "replicated_difference", "replicated_ci95", "replicated_p_holm",
          "replicated_verdict", "same_verdict"]


def comparisons(path):
    with open(path, newline="") as f:
        return {r["comparison"] + " on " + r["metric"]: r for r in csv.DictReader(f)}


def number(text, form="{:+.4f}"):
    """A CSV number as shown, or "—" where the statistics had too few runs (an empty field)."""
    try:
        return form.format(float(text))
    except (TypeError, ValueError):
        return "—"


def interval(row):
    """The interval the verdict used: paired where the test was paired, else Welch's."""
    paired = row.get("test") == "paired"
    low, high = (row["paired_ci95_low"], row["paired_ci95_high"]) if paired else (row["ci95_low"], row["ci95_high"])
    return f"[{number(low)}, {number(high)}]"


def with_options(recipe, settings, path):
    """A copy of RECIPE at PATH with each KEY=VALUE of settings replacing its [train] line KEY=..."""
    lines, section, seen = [], "", set()
    with open(recipe) as f:
        for line in f:
            stripped = line.strip()
            if stripped.startswith("["):
                section = stripped.replace(" ", "")
            key = stripped.partition("=")[0].strip()
            if section == "[train]" and key in settings and not stripped.startswith("#"):
                line, seen = f"{key}={settings[key]}\n", seen | {key}
            lines.append(line)
    missing = set(settings) - seen
    if missing:
        raise SystemExit(f"{recipe}: --set {', '.join(sorted(missing))}: not a pinned [train] option of this recipe")
    if path:
        with open(path, "w") as f:
            f.writelines(lines)
    return path


def committed_comparisons(headlab, recipe, committed_runs_csv):
    """The recipe's declared comparisons on the committed runs, through `study report --from-csv`."""
    out = tempfile.mkdtemp(prefix="headlab_committed_")
    try:
        subprocess.run([headlab, "study", "report", recipe, "--from-csv", committed_runs_csv, "--out", out],
                       check=True, stdout=subprocess.DEVNULL)
        return comparisons(os.path.join(out, "comparisons.csv"))
    finally:
        shutil.rmtree(out, ignore_errors=True)


def measure_script(here, name):
    """The measure.py of study folder `here`, checked to take the common command line (SystemExit
    otherwise); "" when the study has none."""
    script = os.path.join(os.path.dirname(here), MEASURE_SCRIPTS.get(name, os.path.join(name, "measure.py")))
    if not os.path.isfile(script):
        return ""  # its metrics are the runs' own (summary.json): reported as without --measure
    with open(script) as f:
        if "measure_args(" not in f.read():
            raise SystemExit(f"{name}: --measure: {script} does not take the common command line "
                             "(RUNS --headlab H --out DIR, study_runs.measure_args); measure this study by hand")
    return script


def judge(report, folder):
    """`report.py --judge FOLDER`: {"verdict": ..., "criteria": [{"criterion", "holds", "measured"}]}."""
    out = subprocess.run([sys.executable, report, "--judge", folder], check=True, stdout=subprocess.PIPE, text=True)
    return json.loads(out.stdout)


def criteria_rows(name, old, new):
    """One row per criterion of a report.py and one for the page's verdict, committed beside replicated."""
    rows = []
    state = lambda c: "holds" if c["holds"] else "does not hold"
    if [c["criterion"] for c in old["criteria"]] != [c["criterion"] for c in new["criteria"]]:
        raise SystemExit(f"{name}: report.py --judge named other criteria for the replication than for the "
                         "committed runs; cannot set them side by side")
    for o, n in zip(old["criteria"], new["criteria"]):
        rows.append({"study": name, "comparison": o["criterion"], "metric": "report.py criterion",
                     "committed_difference": o["measured"], "committed_ci95": "", "committed_p_holm": "",
                     "committed_verdict": state(o), "replicated_difference": n["measured"], "replicated_ci95": "",
                     "replicated_p_holm": "", "replicated_verdict": state(n),
                     "same_verdict": "yes" if o["holds"] == n["holds"] else "no"})
    rows.append({"study": name, "comparison": "the page's verdict", "metric": "report.py verdict",
                 "committed_difference": "", "committed_ci95": "", "committed_p_holm": "",
                 "committed_verdict": old["verdict"], "replicated_difference": "", "replicated_ci95": "",
                 "replicated_p_holm": "", "replicated_verdict": new["verdict"],
                 "same_verdict": "yes" if old["verdict"] == new["verdict"] else "no"})
    return rows


def plan(recipe, headlab, runs_root, out_root, settings, measure, earlier):
    """What one recipe's replication needs, checked before any run trains: SystemExit otherwise.
    earlier: the names of the studies listed before this one."""
    here = os.path.realpath(os.path.dirname(os.path.abspath(recipe)))
    name = os.path.basename(here)
    script = measure_script(here, name) if measure else ""
    inputs = []
    if script and name in MEASURE_INPUTS:
        other, args = MEASURE_INPUTS[name]
        if other not in earlier:
            raise SystemExit(f"{name}: --measure: its measure.py reads {other}'s runs too; list "
                             f"docs/studies/{other}/recipe.ini before it")
        inputs = [a.format(os.path.join(runs_root, other)) for a in args]
    report = os.path.join(here, "report.py")
    has_judge = script and os.path.isfile(report) and "judge_exit(" in open(report).read()
    runs = os.path.join(runs_root, name)
    for what, path in (("--runs", runs), ("--out", os.path.join(out_root, name) if out_root else "")):
        if path and os.path.realpath(path) == here:
            raise SystemExit(f"{recipe}: {what} would put the replication into the study's own folder "
                             "(its committed runs.csv and comparisons.csv); give another directory")
    if out_root and os.path.realpath(out_root) == os.path.realpath(runs_root):
        raise SystemExit("--out and --runs are one directory; give --out another (the replication's CSVs are "
                         "copied there from the runs)")
    with_options(recipe, settings, None)  # every --set key is pinned by this recipe
    committed_runs_csv = os.path.join(here, "runs.csv")
    committed = committed_comparisons(headlab, recipe, committed_runs_csv)
    try:
        criteria = judge(report, here) if has_judge else None
    except subprocess.CalledProcessError as e:  # report.py's own message is printed above
        raise SystemExit(f"{name}: report.py --judge on the committed CSVs exited {e.returncode}")
    return {"recipe": recipe, "name": name, "runs": runs, "committed": committed, "measure": script,
            "measure_inputs": inputs, "criteria": criteria, "report": report}


def this_commit():
    """This checkout's short commit, "+changes" when its tracked files differ from it; "unrecorded" outside git."""
    git = ["git", "-C", os.path.dirname(os.path.abspath(__file__))]
    try:
        commit = subprocess.run(git + ["rev-parse", "--short", "HEAD"], check=True, capture_output=True,
                                text=True).stdout.strip()
        changed = subprocess.run(git + ["status", "--porcelain", "--untracked-files=no"], check=True,
                                 capture_output=True, text=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unrecorded"
    return commit + ("+changes" if changed else "")


def replicate(p, headlab, runs_root, jobs, quick, settings):
    recipe, name, runs = p["recipe"], p["name"], p["runs"]
    if settings:
        os.makedirs(runs_root, exist_ok=True)
        recipe = with_options(recipe, settings, os.path.join(runs_root, name + ".recipe.ini"))
    run = [headlab, "study", "run", recipe, "--runs", runs, "-j", str(jobs)] + (["--quick"] if quick else [])
    subprocess.run(run, check=True, stdout=subprocess.DEVNULL)
    if p["measure"]:  # the study's metrics, measured as the committed runs were
        commit_file = os.path.join(runs, "commit.txt")
        if not os.path.exists(commit_file):  # kept from the call that trained the runs (a rerun only measures)
            with open(commit_file, "w") as f:
                f.write(this_commit() + "\n")
        subprocess.run([sys.executable, p["measure"], runs, *p["measure_inputs"], "--headlab", headlab, "--out", runs],
                       check=True, stdout=subprocess.DEVNULL)
        if p["committed"]:
            subprocess.run([headlab, "study", "report", recipe, "--from-csv", os.path.join(runs, "runs.csv"), "--out",
                            runs, "--overwrite"], check=True, stdout=subprocess.DEVNULL)  # a rerun reports again
    else:
        subprocess.run([headlab, "study", "report", recipe, "--runs", runs] + (["--quick"] if quick else []),
                       check=True, stdout=subprocess.DEVNULL)
    rows = criteria_rows(name, p["criteria"], judge(p["report"], runs)) if p["criteria"] else []
    if not p["committed"]:
        return rows
    old, new = p["committed"], comparisons(os.path.join(runs, "comparisons.csv"))
    for key, n in new.items():
        o = old.get(key)
        rows.append({"study": name, "comparison": n["comparison"], "metric": n["metric"],
                     "committed_difference": number(o["difference"]) if o else "",
                     "committed_ci95": interval(o) if o else "",
                     "committed_p_holm": number(o["p_holm"], "{:.3g}") if o else "",
                     "committed_verdict": o["verdict"] if o else "not in the committed runs",
                     "replicated_difference": number(n["difference"]), "replicated_ci95": interval(n),
                     "replicated_p_holm": number(n["p_holm"], "{:.3g}"), "replicated_verdict": n["verdict"],
                     "same_verdict": "yes" if o and o["verdict"] == n["verdict"] else "no"})
    return rows


def write_outputs(out, name, runs, every, measured):
    """measured: every CSV the study's measure.py wrote is raw data (heads.csv, recall.csv, ...)."""
    os.makedirs(os.path.join(out, name), exist_ok=True)
    names = sorted(f for f in os.listdir(runs) if f.endswith(".csv")) if measured else ["runs.csv", "comparisons.csv"]
    for f in names:
        shutil.copyfile(os.path.join(runs, f), os.path.join(out, name, f))
    # Rows of studies replicated by an earlier call into the same --out are kept.
    path, done = os.path.join(out, "verdicts.csv"), {r["study"] for r in every}
    kept = []
    if os.path.exists(path):
        with open(path, newline="") as f:
            kept = [r for r in csv.DictReader(f) if r["study"] not in done]
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS, lineterminator="\n")
        w.writeheader()
        w.writerows(kept + every)
    with open(os.path.join(out, "verdicts.md"), "w") as f:
        f.write(markdown(kept + every))


def judged_by_report(row):
    """A row of a report.py's criteria (or its verdict), not a declared comparison."""
    return row["metric"].startswith("report.py")


def label(row):
    """"2-layer vs 1-layer on repeated_accuracy"; a report.py's criterion as it is named there."""
    return f"{row['comparison']} ({row['metric']})" if judged_by_report(row) else f"{row['comparison']} on {row['metric']}"


def side(row, which):
    """One side of a row as shown: "+0.7349 [+0.7143, +0.7556], confirmed" or "5 of 5 seeds, holds"."""
    measured = f"{row[which + '_difference']} {row[which + '_ci95']}".strip()
    return ", ".join(x for x in (measured, row[which + "_verdict"]) if x)


def markdown(rows):
    """verdicts.csv as a Markdown table under a "# title" line (a page shows it without the title)."""
    declared = [r for r in rows if not judged_by_report(r)]
    judged = [r for r in rows if judged_by_report(r)]
    keep = lambda some: sum(r["same_verdict"] == "yes" for r in some)
    counts = []
    if declared or not judged:
        counts.append(f"{keep(declared)} of {len(declared)} declared comparisons keep their verdict.")
    if judged:
        counts.append(f"{keep(judged)} of {len(judged)} criteria of a report.py and page verdicts keep theirs.")
    out = ["# Replicated verdicts", "", " ".join(counts), "",
           "| study | comparison | committed: difference [95% CI], verdict | replicated: difference [95% CI], verdict | same |",
           "|---|---|---|---|---|"]
    for r in rows:
        out.append(f"| {r['study']} | {label(r)} | {side(r, 'committed')} | {side(r, 'replicated')} | {r['same_verdict']} |")
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("recipes", nargs="+")
    ap.add_argument("--runs", required=True, help="where the replication's runs go (DIR/<study name>)")
    ap.add_argument("--out", default="", help="where to write the replication's CSVs and verdicts.csv")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--headlab", default="build/release/apps/headlab")
    ap.add_argument("--quick", action="store_true", help="the recipes' --quick form (a test of this script)")
    ap.add_argument("--measure", action="store_true",
                    help="measure the new runs with the study's measure.py and judge its runs.csv")
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
    plans = []
    for r in a.recipes:
        plans.append(plan(r, headlab, os.path.abspath(a.runs), os.path.abspath(a.out) if a.out else "", settings,
                          a.measure, [p["name"] for p in plans]))
    for p in plans:
        if not p["committed"] and not p["criteria"]:
            print(f"{p['name']}: the recipe declares no comparison (and no report.py --judge with --measure): "
                  "nothing to replicate (skipped)")
    every = []
    for p in [p for p in plans if p["committed"] or p["criteria"]]:
        try:
            rows = replicate(p, headlab, os.path.abspath(a.runs), a.jobs, a.quick, settings)
        except subprocess.CalledProcessError as e:  # its own message is printed above
            hint = "" if a.measure else " (a study whose metrics come from its measure.py needs --measure)"
            raise SystemExit(f"{p['name']}: {os.path.basename(e.cmd[0])} {e.cmd[1]} {e.cmd[2]} exited {e.returncode}"
                             + hint)
        for r in rows:
            print(f"{p['name']}: {label(r)}: committed {side(r, 'committed')}; replicated {side(r, 'replicated')}"
                  + ("" if r["same_verdict"] == "yes" else "  <- VERDICT DIFFERS"))
        every += rows
        if a.out:  # after each study: a later failure keeps what is done
            write_outputs(a.out, p["name"], p["runs"], every, bool(p["measure"]))
    sys.exit(0 if all(r["same_verdict"] == "yes" for r in every) else 1)


if __name__ == "__main__":
    main()
