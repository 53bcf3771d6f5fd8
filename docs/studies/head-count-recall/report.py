#!/usr/bin/python3
"""The statistics, tables and chart of study 5 (head count on recall), from runs.csv alone.

  /usr/bin/python3 docs/studies/head-count-recall/report.py [--check]     (needs python3-scipy)

Writes, beside this file: summary.csv (per cell and metric: n, mean, sd, 95% t-interval),
comparisons.csv (the recipe's four declared comparisons on answer accuracy: difference, its 95%
Welch interval, t, df, p, Holm-adjusted p, verdict), ../head_count_recall_accuracy.svg (every seed a
dot, the mean and its 95% interval) and the tables of ../head-count-recall.md between its report
markers. --check writes nothing and exits 1 naming each file that differs (ctest
docs.study_head_count_recall_tables). The shared parts: ../study_tools.py.
"""
import csv
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from study_tools import (csv_text, fmt, holm, replace_block, strip_chart, t_interval, welch, with_reference_line,  # noqa: E402
                         write_or_check)

PAGE = os.path.join(HERE, "..", "head-count-recall.md")
CELLS = ["compute-h1", "compute-h2", "compute-h4", "compute-h8", "compute-h16",
         "headsize-h1", "headsize-h2", "headsize-h8", "headsize-h16"]
METRICS = [("answer_accuracy", "answer accuracy"), ("value_accuracy", "value accuracy"), ("valid_loss", "validation loss")]
# (cell, against, what it tests)
COMPARISONS = [("compute-h1", "compute-h4", "one head (averaging)"), ("compute-h8", "compute-h4", "d = 2 (low rank)"),
               ("compute-h16", "compute-h4", "d = 1 (low rank)"), ("headsize-h1", "compute-h4", "one head of 4")]


def main():
    with open(os.path.join(HERE, "runs.csv")) as f:
        runs = list(csv.DictReader(f))
    by_cell = {c: [r for r in runs if r["cell"] == c] for c in CELLS}
    summary = []
    for cell in CELLS:
        for key, _ in METRICS:
            n, mean, sd, a, b = t_interval([float(r[key]) for r in by_cell[cell]])
            summary.append({"cell": cell, "heads": by_cell[cell][0]["heads"], "head_size": by_cell[cell][0]["head_size"],
                            "metric": key, "n": n, "mean": round(mean, 6), "sd": round(sd, 6),
                            "ci95_low": round(a, 6), "ci95_high": round(b, 6)})
    tests = [welch([float(r["answer_accuracy"]) for r in by_cell[a]], [float(r["answer_accuracy"]) for r in by_cell[b]])
             for a, b, _ in COMPARISONS]
    adjusted = holm([t[5] for t in tests])
    comparisons = []
    for (a, b, what), (diff, lo, hi, t, df, p), ph in zip(COMPARISONS, tests, adjusted):
        if ph < 0.05 and hi < -0.05:
            verdict = "worse than h = 4, d = 4"
        elif lo > -0.02 and hi < 0.02:
            verdict = "no difference (within 0.02)"
        else:
            verdict = "unresolved"
        comparisons.append({"comparison": f"{a} vs {b}", "tests": what, "metric": "answer accuracy",
                            "difference": round(diff, 6), "ci95_low": round(lo, 6), "ci95_high": round(hi, 6),
                            "welch_t": round(t, 4), "df": round(df, 3), "p": p, "p_holm": ph, "verdict": verdict})
    lines = ["Per cell, seeds 1-5: mean ± sd [95% t-interval] (summary.csv; normal-theory intervals, which can "
             "run past a metric's range). Chance: 1/256 of answers. "
             "h = 4 is both variants' d = 4 cell.", "",
             "| cell | h | d | parameters | FLOPs / token | " + " | ".join(label for _, label in METRICS) + " |",
             "|---|---|---|---|---|" + "---|" * len(METRICS)]
    for cell in CELLS:
        row = [s for s in summary if s["cell"] == cell]
        first = by_cell[cell][0]
        cells = [f'{fmt(s["mean"], 3)} ± {fmt(s["sd"], 3)} [{fmt(s["ci95_low"], 3)}, {fmt(s["ci95_high"], 3)}]' for s in row]
        lines.append(f'| {cell} | {first["heads"]} | {first["head_size"]} | {first["parameters"]} | {first["flops_per_token"]} | '
                     + " | ".join(cells) + " |")
    lines += ["", "Per seed (answer accuracy, seeds 1-5): " + "; ".join(
        f'{c} ' + " ".join(fmt(float(r["answer_accuracy"]), 3) for r in by_cell[c]) for c in CELLS) + ".",
              "", "The declared comparisons, answer accuracy against h = 4, d = 4, Welch, Holm over the four "
              "(comparisons.csv):", "", "| comparison | tests | difference | 95% CI | Welch t (df) | p | Holm p | verdict |",
              "|---|---|---|---|---|---|---|---|"]
    for c in comparisons:
        lines.append(f'| {c["comparison"]} | {c["tests"]} | {fmt(c["difference"], 3)} | [{fmt(c["ci95_low"], 3)}, '
                     f'{fmt(c["ci95_high"], 3)}] | {fmt(c["welch_t"])} ({fmt(c["df"], 1)}) | {c["p"]:.2e} | '
                     f'{c["p_holm"]:.2e} | {c["verdict"]} |')
    chart = strip_chart("Answer accuracy by head count, recall (5 seeds; mean and 95% CI)", "answer accuracy",
                        [(f'h = {c.split("-h")[1]}', "d = 16/h" if c.startswith("compute") else "d = 4",
                          "#1f77b4" if c.startswith("compute") else "#d62728",
                          [float(r["answer_accuracy"]) for r in by_cell[c]]) for c in CELLS],
                        0.0, 1.0, 0.1, "blue: fixed compute (d_model 16); red: fixed head size 4; h = 4, d = 4 is both. "
                        "Chance: 1/256.", width=860)
    chart = with_reference_line(chart, 1 / 256, 0.0, 1.0, "chance 1/256", colour="#555", width=860)
    write_or_check({os.path.join(HERE, "summary.csv"): csv_text(summary),
                    os.path.join(HERE, "comparisons.csv"): csv_text(comparisons),
                    os.path.join(HERE, "..", "head_count_recall_accuracy.svg"): chart,
                    PAGE: replace_block(open(PAGE).read(), lines)}, os.path.basename(PAGE))


if __name__ == "__main__":
    main()
