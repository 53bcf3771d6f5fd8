#!/usr/bin/env python3
"""Checks `headlab study report --from-csv` against the statistics a study's report.py computed
with SciPy (an independent implementation) from the same runs.csv.

    check_study_statistics.py STUDY_DIR REPORT_DIR

STUDY_DIR holds the committed summary.csv and comparisons.csv (SciPy, rounded as report.py rounds);
REPORT_DIR the C++ report's. Every (cell, metric) and comparison both have must agree to the
rounding of the committed file (a metric the page shows in % is matched at 100x). Prints the number
of values compared; exits 1 naming each value that differs. Stdlib only.
"""
import csv
import math
import os
import sys


def rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def close(ours, theirs, scale, rel, absolute):
    if theirs == "" or ours == "":
        return theirs == ours or (theirs in ("", "nan") and ours in ("", "nan"))
    a, b = scale * float(ours), float(theirs)
    if math.isinf(a) or math.isinf(b):
        return a == b
    return abs(a - b) <= absolute * max(1.0, scale) + rel * abs(b)


def main():
    study, report = sys.argv[1], sys.argv[2]
    problems, compared = [], 0
    theirs = {(r["cell"], r["metric"]): r for r in rows(os.path.join(study, "summary.csv"))}
    scales = {}
    for r in rows(os.path.join(report, "summary.csv")):
        t = theirs.get((r["cell"], r["metric"]))
        if t is None:
            continue
        if r["metric"] not in scales:  # 1, or 100 where the page shows a fraction in %
            m = float(r["mean"])
            scales[r["metric"]] = 100 if abs(100 * m - float(t["mean"])) < abs(m - float(t["mean"])) else 1
        for key in ("mean", "sd", "ci95_low", "ci95_high"):
            compared += 1
            if not close(r[key], t[key], scales[r["metric"]], 1e-6, 1e-6):
                problems.append(f"{r['cell']} {r['metric']} {key}: {r[key]} here, {t[key]} from SciPy")
        if int(r["n"]) != int(t["n"]):
            problems.append(f"{r['cell']} {r['metric']} n: {r['n']} here, {t['n']} from SciPy")
    committed = rows(os.path.join(study, "comparisons.csv"))
    # one comparison may be made on several metrics (A vs B on loss, A vs B on sink mass): match the
    # pair where the committed file names the same metric, else the comparison's name alone
    by_pair = {(r["comparison"], r.get("metric")): r for r in committed}
    theirs = {r["comparison"]: r for r in committed}
    for r in rows(os.path.join(report, "comparisons.csv")):
        t = by_pair.get((r["comparison"], r["metric"]), theirs.get(r["comparison"]))
        if t is None:
            problems.append(f"comparison {r['comparison']}: not in {study}/comparisons.csv")
            continue
        scale = scales.get(r["metric"], 1)
        checks = [("difference", "difference", scale, 1e-4, 1e-4), ("ci95_low", "ci95_low", scale, 1e-4, 1e-4),
                  ("ci95_high", "ci95_high", scale, 1e-4, 1e-4), ("welch_t", "welch_t", 1, 1e-4, 1e-4),
                  ("df", "df", 1, 1e-3, 1e-3), ("p", "p", 1, 1e-6, 1e-6), ("p_holm", "p_holm", 1, 1e-6, 1e-6)]
        for ours_key, their_key, s, rel, absolute in checks:
            compared += 1
            if not close(r[ours_key], t[their_key], s, rel, absolute):
                problems.append(f"{r['comparison']} {ours_key}: {r[ours_key]} here, {t[their_key]} from SciPy")
    for p in problems:
        print(p)
    if compared == 0:
        print(f"{study}: nothing to compare")
        sys.exit(1)
    print(f"{os.path.basename(os.path.normpath(study))}: {compared} values agree with SciPy's"
          if not problems else f"{len(problems)} of {compared} values differ")
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
