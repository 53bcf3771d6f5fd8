#!/usr/bin/python3
"""The statistics, tables and chart of the head-count-grammar study, from runs.csv alone.

  /usr/bin/python3 docs/studies/head-count-grammar/report.py [--check]     (needs python3-scipy)

Writes, beside this file: summary.csv (per cell and metric: n, mean, sd, 95% t-interval),
comparisons.csv (the recipe's six declared comparisons on exact match: difference, its 95% Welch
interval, Welch's t, df and p, Holm-adjusted p, verdict), ../head_count_grammar_exact.svg (every
seed a dot, the mean with its 95% interval) and the tables of ../head-count-grammar.md between its
<!-- report:begin --> and <!-- report:end --> markers. --check writes nothing and exits 1 naming
each file that differs from what runs.csv gives (ctest docs.study_head_count_grammar_tables): the
page's numbers cannot drift from the raw data. The shared parts: ../study_tools.py.
"""
import csv
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from study_tools import csv_text, fmt, holm, replace_block, strip_chart, t_interval, welch, write_or_check  # noqa: E402

PAGE = os.path.join(HERE, "..", "head-count-grammar.md")
CELL_ORDER = ["compute-h1", "compute-h2", "compute-h4", "compute-h8", "headsize-h1", "headsize-h2", "headsize-h4"]
METRICS = [("exact", "exact match (%)", 100), ("bleu", "BLEU", 1), ("exact_verb_final", "verb-final exact (%)", 100),
           ("exact_v2", "V2 exact (%)", 100), ("best_aer", "best head AER", 1), ("mean_aer_l0", "layer 0 mean AER", 1)]
# The recipe's comparisons (recipe.ini): each cell against h = 8 (compute-h8, which is also the
# fixed-head-size family's h = 8: d = 16), on exact match, Holm over the six.
COMPARISONS = [("compute-h1", "compute-h8"), ("compute-h2", "compute-h8"), ("compute-h4", "compute-h8"),
               ("headsize-h1", "compute-h8"), ("headsize-h2", "compute-h8"), ("headsize-h4", "compute-h8")]


def chart(runs):
    values = [100 * float(r["exact"]) for r in runs]
    lo = min(values + [90.0]) // 5 * 5
    cells = []
    for cell in CELL_ORDER:
        compute = cell.startswith("compute")
        cells.append((f'h = {cell.split("-h")[1]}', "d = 128/h" if compute else "d = 16", "#1f77b4" if compute else "#d62728",
                      [100 * float(r["exact"]) for r in runs if r["cell"] == cell]))
    return strip_chart("Test exact match by head count, grammar corpus (5 seeds; mean and 95% CI)", "exact match (%)",
                       cells, lo, 100.0, 1 if 100.0 - lo <= 10 else 5,
                       "blue: fixed compute (D = 128, d = 128/h); red: fixed head size (d = 16); h = 8 is both. Chance: 0%.")


def main():
    with open(os.path.join(HERE, "runs.csv")) as f:
        runs = list(csv.DictReader(f))
    by_cell = {c: [r for r in runs if r["cell"] == c] for c in CELL_ORDER}
    summary = []
    for cell in CELL_ORDER:
        for key, _, scale in METRICS:
            n, mean, sd, a, b = t_interval([scale * float(r[key]) for r in by_cell[cell]])
            summary.append({"cell": cell, "heads": by_cell[cell][0]["heads"], "head_size": by_cell[cell][0]["head_size"],
                            "metric": key, "n": n, "mean": round(mean, 6), "sd": round(sd, 6),
                            "ci95_low": round(a, 6), "ci95_high": round(b, 6)})
    tests = [welch([100 * float(r["exact"]) for r in by_cell[a]], [100 * float(r["exact"]) for r in by_cell[b]])
             for a, b in COMPARISONS]
    adjusted = holm([t[5] for t in tests])
    comparisons = []
    for (a, b), (diff, lo, hi, t, df, p), ph in zip(COMPARISONS, tests, adjusted):
        if ph < 0.05 and hi < 0:
            verdict = "worse than h = 8"
        elif ph < 0.05 and lo > 0:
            verdict = "better than h = 8"
        elif a == "compute-h1" and lo > -1:  # the recipe's refutation rule is for this comparison only
            verdict = "no drop of 1 point or more"
        else:
            verdict = "unresolved"
        comparisons.append({"comparison": f"{a} vs {b}", "metric": "exact match (%)", "difference": round(diff, 4),
                            "ci95_low": round(lo, 4), "ci95_high": round(hi, 4), "welch_t": round(t, 4),
                            "df": round(df, 3), "p": round(p, 6), "p_holm": round(ph, 6), "verdict": verdict})

    lines = ["Per cell, 5 seeds: mean ± sd [95% t-interval] (summary.csv; normal-theory intervals, which can run "
             "past a metric's range).", "",
             "| cell | h | d | " + " | ".join(label for _, label, _ in METRICS) + " |",
             "|---|---|---|" + "---|" * len(METRICS)]
    for cell in CELL_ORDER:
        row = [s for s in summary if s["cell"] == cell]
        cells = []
        for (key, _, _), s in zip(METRICS, row):
            digits = 3 if "aer" in key else 1
            cells.append(f'{fmt(s["mean"], digits)} ± {fmt(s["sd"], digits)} [{fmt(s["ci95_low"], digits)}, {fmt(s["ci95_high"], digits)}]')
        lines.append(f'| {cell} | {row[0]["heads"]} | {row[0]["head_size"]} | ' + " | ".join(cells) + " |")
    lines += ["", "The declared comparisons, exact match against h = 8 (d = 16), Welch, Holm over the six "
              "(comparisons.csv):", "", "| comparison | difference (points) | 95% CI | Welch t (df) | p | Holm p | verdict |",
              "|---|---|---|---|---|---|---|"]
    for c in comparisons:
        lines.append(f'| {c["comparison"]} | {fmt(c["difference"])} | [{fmt(c["ci95_low"])}, {fmt(c["ci95_high"])}] | '
                     f'{fmt(c["welch_t"])} ({fmt(c["df"], 1)}) | {c["p"]:.4f} | {c["p_holm"]:.4f} | {c["verdict"]} |')
    write_or_check({os.path.join(HERE, "summary.csv"): csv_text(summary),
                    os.path.join(HERE, "comparisons.csv"): csv_text(comparisons),
                    os.path.join(HERE, "..", "head_count_grammar_exact.svg"): chart(runs),
                    PAGE: replace_block(open(PAGE).read(), lines)}, os.path.basename(PAGE))


if __name__ == "__main__":
    main()
