#!/usr/bin/python3
"""Study 8 rechecked: Welch tests with Holm's correction on the numbers the page reports.

  /usr/bin/python3 docs/studies/head-count-full-corpus/first-run/recheck.py [--check]

Study 8's first run (2026-12-02) predates the recipes: its run directories are gone, so there is no runs.csv. What is left
is the page's own table: cells.csv transcribes its mean ± sd (n = 3, rounded as printed) and
seeds_3000.csv the per-seed BLEU it lists for the 3000-step runs. The six comparisons below are
chosen after the fact (post hoc), to put a p-value on what the page claims; Welch's test from
summary statistics (scipy.stats.ttest_ind_from_stats) is exact given mean, sd and n, up to the
rounding of the printed numbers. Writes comparisons.csv and the block of the page between
"<!-- report:begin recheck -->" and "<!-- report:end recheck -->"; --check writes nothing and exits 1 when they differ.
"""
import csv
import math
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(os.path.dirname(HERE)))
from study_tools import csv_text, holm, replace_block, welch, write_or_check  # noqa: E402
from scipy import stats  # noqa: E402

PAGE = os.path.join(HERE, "..", "..", "head-count-full-corpus.md")
# (steps, cell a, cell b, metric, what the page claims)
COMPARISONS = [
    (1500, "compute-h1", "compute-h8", "test_bleu", "one head is worst at fixed compute"),
    (1500, "compute-h1", "compute-h8", "valid_loss", "one head is worst at fixed compute"),
    (1500, "headsize-h1", "compute-h16", "test_bleu", "one 16-wide head against the best fixed-compute cell"),
    (1500, "headsize-h1", "compute-h8", "test_bleu", "one 16-wide head against the default 8 heads of 16"),
    (3000, "compute-h1", "compute-h8", "test_bleu", "one head still worst at 3000 steps"),
    (3000, "compute-h1", "compute-h8", "valid_loss", "one head still worst at 3000 steps"),
]


def from_summary(a, b):
    """Welch from (mean, sd, n) pairs: difference, 95% CI, t, df, p."""
    (ma, sa, na), (mb, sb, nb) = a, b
    va, vb = sa ** 2 / na, sb ** 2 / nb
    df = (va + vb) ** 2 / (va ** 2 / (na - 1) + vb ** 2 / (nb - 1))
    t, p = stats.ttest_ind_from_stats(ma, sa, na, mb, sb, nb, equal_var=False)
    half = stats.t.ppf(0.975, df) * math.sqrt(va + vb)
    return ma - mb, ma - mb - half, ma - mb + half, t, df, p


def main():
    with open(os.path.join(HERE, "cells.csv")) as f:
        cells = {(int(r["run"]), r["cell"], r["metric"]): (float(r["mean"]), float(r["sd"]), int(r["n"]))
                 for r in csv.DictReader(f)}
    with open(os.path.join(HERE, "seeds_3000.csv")) as f:
        seeds = list(csv.DictReader(f))
    tests = []
    for steps, a, b, metric, _ in COMPARISONS:
        if (steps, a, metric) in cells:
            tests.append(from_summary(cells[(steps, a, metric)], cells[(steps, b, metric)]))
        else:  # the per-seed values the page lists
            values = lambda cell: [float(r[metric]) for r in seeds if r["cell"] == cell]
            tests.append(welch(values(a), values(b)))
    adjusted = holm([t[5] for t in tests])
    rows = []
    for (steps, a, b, metric, claim), (diff, lo, hi, t, df, p), ph in zip(COMPARISONS, tests, adjusted):
        rows.append({"steps": steps, "comparison": f"{a} vs {b}", "metric": metric, "claim": claim,
                     "difference": round(diff, 4), "ci95_low": round(lo, 4), "ci95_high": round(hi, 4),
                     "welch_t": round(t, 3), "df": round(df, 2), "p": round(p, 5), "p_holm": round(ph, 5)})
    lines = ["Rechecked (recheck.py, post hoc, from this page's own numbers: cells.csv and seeds_3000.csv; Welch, "
             "Holm over the six):", "",
             "| steps | comparison | metric | difference [95% CI] | Welch t (df) | p | Holm p |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f'| {r["steps"]} | {r["comparison"]} | {r["metric"]} | {r["difference"]:.2f} '
                     f'[{r["ci95_low"]:.2f}, {r["ci95_high"]:.2f}] | {r["welch_t"]:.2f} ({r["df"]:.1f}) | '
                     f'{r["p"]:.4f} | {r["p_holm"]:.4f} |')
    write_or_check({os.path.join(HERE, "comparisons.csv"): csv_text(rows),
                    PAGE: replace_block(open(PAGE).read(), lines, "recheck")}, os.path.basename(PAGE))


if __name__ == "__main__":
    main()
