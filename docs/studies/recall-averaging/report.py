#!/usr/bin/python3
"""The per-head blocks of docs/studies/recall-averaging.md from heads.csv and share.csv (measure.py
wrote them with runs.csv; `headlab study report --from-csv runs.csv` wrote summary.csv,
comparisons.csv, chart.svg and report.md, the page's main block, checked by ctest
docs.study_recall_averaging_block).

  /usr/bin/python3 docs/studies/recall-averaging/report.py [--check]

Blocks: "share", the single head's p_a / (p_a + p_b) over all its queries (5 seeds pooled), in five
bands, per form and V; "split", per cell of h >= 2 and seed, the largest mass any head puts on key a
and on key b, the heads' mean focus (weight on the key each prefers, query by query) and whether two
different heads read key a and key b (>= 0.8 each). --check writes nothing and
exits 1 naming each output that differs (ctest docs.study_recall_averaging_tables).
"""
import csv
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from study_tools import replace_block, write_or_check  # noqa: E402

PAGE = os.path.join(HERE, "..", "recall-averaging.md")
BANDS = ((0.0, 0.2, "< 0.2"), (0.2, 0.4, "0.2-0.4"), (0.4, 0.6, "0.4-0.6"), (0.6, 0.8, "0.6-0.8"), (0.8, 1.01, ">= 0.8"))
READS = 0.8


def rows(name):
    with open(os.path.join(HERE, name)) as f:
        return list(csv.DictReader(f))


def main():
    share, heads, runs = rows("share.csv"), rows("heads.csv"), rows("runs.csv")
    accuracy = {(r["cell"], r["seed"]): float(r["answer_accuracy"]) for r in runs}
    lines = ["| cell | queries | " + " | ".join(b[2] for b in BANDS) + " |", "|---|---|" + "---|" * len(BANDS)]
    for cell in dict.fromkeys(r["cell"] for r in share):
        counts = [0] * len(BANDS)
        for r in share:
            if r["cell"] != cell:
                continue
            mid = (float(r["bin_low"]) + float(r["bin_high"])) / 2
            counts[next(i for i, b in enumerate(BANDS) if b[0] <= mid < b[1])] += int(r["queries"])
        total = sum(counts)
        lines.append(f"| {cell} | {total} | " + " | ".join(f"{c / total:.2f}" for c in counts) + " |")
    split = ["| cell | seed | accuracy | heads on key a (>= 0.8) | heads on key b (>= 0.8) | largest mass_a | largest mass_b | mean focus | split |",
             "|---|---|---|---|---|---|---|---|---|"]
    for cell in dict.fromkeys(r["cell"] for r in heads):
        if "-h1-" in cell:
            continue
        for seed in dict.fromkeys(r["seed"] for r in heads if r["cell"] == cell):
            mine = [r for r in heads if r["cell"] == cell and r["seed"] == seed]
            on_a = [r["head"] for r in mine if float(r["mass_a"]) >= READS]
            on_b = [r["head"] for r in mine if float(r["mass_b"]) >= READS]
            splits = any(x != y for x in on_a for y in on_b)
            split.append(f"| {cell} | {seed} | {accuracy[(cell, seed)]:.3f} | {', '.join(on_a) or '-'} | "
                         f"{', '.join(on_b) or '-'} | {max(float(r['mass_a']) for r in mine):.2f} | "
                         f"{max(float(r['mass_b']) for r in mine):.2f} | "
                         f"{sum(float(r['focus']) for r in mine) / len(mine):.2f} | {'yes' if splits else 'no'} |")
    page = replace_block(replace_block(open(PAGE).read(), lines, "share"), split, "split")
    write_or_check({PAGE: page}, "recall-averaging.md")


if __name__ == "__main__":
    main()
