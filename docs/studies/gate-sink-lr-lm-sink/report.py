#!/usr/bin/python3
"""From runs.csv and heads.csv (measure.py): summary.csv, comparisons.csv, a chart, the tables of
part B of docs/studies/gate-sink-lr.md and its verdict against the recipe's criteria.

  /usr/bin/python3 docs/studies/gate-sink-lr-lm-sink/report.py [--check]

--check writes nothing and exits 1 naming each output that differs (ctest docs.study_gate_lm_sink_tables).
SciPy (python3-scipy) for the intervals.
"""
import csv
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from study_tools import (csv_text, fmt, replace_block, strip_chart, t_interval, with_reference_line,  # noqa: E402
                         write_or_check)

PAGE = os.path.join(HERE, "..", "gate-sink-lr.md")
GATES = ("none", "headwise", "elementwise")
COLOURS = {"none": "#1f77b4", "headwise": "#ff7f0e", "elementwise": "#2ca02c"}
KEYS = ["valid_loss", "valid_bits_per_char", "sink_mass", "max_head_sink", "gate_mean", "max_logit", "max_residual",
        "loss_full", "loss_w16s0", "loss_w16s1"]
COMPARISONS_HEADER = "comparison,metric,difference,ci95_low,ci95_high,welch_t,df,p,p_holm\n"  # none declared


def main():
    with open(os.path.join(HERE, "runs.csv")) as f:
        runs = list(csv.DictReader(f))
    with open(os.path.join(HERE, "heads.csv")) as f:
        heads = list(csv.DictReader(f))
    col = lambda g, key: [float(r[key]) for r in runs if r["cell"] == g]
    summary = []
    for g in GATES:
        for key in KEYS:
            values = col(g, key)
            if any(v != v for v in values):
                continue
            n, mean, sd, a, b = t_interval(values)
            summary.append({"cell": g, "metric": key, "n": n, "mean": round(mean, 6), "sd": round(sd, 6),
                            "ci95_low": round(a, 6), "ci95_high": round(b, 6)})
    uniform = float(runs[0]["uniform"])
    threshold = 2 * uniform
    n_seeds = len(col("none", "valid_loss"))
    with_sink = {g: sum(v >= threshold for v in col(g, "max_head_sink")) for g in GATES}

    lines = ["Per run (runs.csv): the largest head's attention on `<s>` from every query (256 held-out windows; "
             f"uniform attention {fmt(uniform, 4)}), its gate, the mean gate over every head, the largest attention "
             "logit and residual activation, and the held-out loss (nats/char) with full attention, a window of 16 "
             "and the window with `<s>` kept as 1 sink.", "",
             "| gate | seed | largest head on `<s>` (layer.head) | its gate | mean gate | max logit | max residual | "
             "full | window 16 | window 16 + 1 sink |", "|---|---|---|---|---|---|---|---|---|---|"]
    for r in runs:
        gated = r["cell"] != "none"
        lines.append(f'| {r["cell"]} | {r["seed"]} | {fmt(float(r["max_head_sink"]), 3)} ({r["max_head"]}) | '
                     f'{fmt(float(r["max_head_gate"]), 3) if gated else "-"} | {fmt(float(r["gate_mean"]), 3) if gated else "-"} | '
                     f'{fmt(float(r["max_logit"]), 1)} | {fmt(float(r["max_residual"]), 1)} | {fmt(float(r["loss_full"]), 3)} | '
                     f'{fmt(float(r["loss_w16s0"]), 3)} | {fmt(float(r["loss_w16s1"]), 3)} |')
    lines += ["", f"Per gate, {n_seeds} seeds, mean ± sd (summary.csv has the 95% intervals): ", "",
              "| gate | valid loss | largest head on `<s>` | max logit | max residual |", "|---|---|---|---|---|"]
    by = {(r["cell"], r["metric"]): r for r in summary}
    for g in GATES:
        cell = lambda key, d: f'{fmt(by[(g, key)]["mean"], d)} ± {fmt(by[(g, key)]["sd"], d)}'
        lines.append(f"| {g} | {cell('valid_loss', 3)} | {cell('max_head_sink', 3)} | {cell('max_logit', 1)} | "
                     f"{cell('max_residual', 1)} |")
    lines.append("")
    if with_sink["none"] < 2:
        lines.append(f"**Verdict: unresolved (no sink to remove).** The ungated lm has a head at or above 2x uniform "
                     f"({fmt(threshold, 3)}) in {with_sink['none']} of {n_seeds} seeds (the recipe needs 2): there is "
                     f"nothing for a gate to remove; gated: {with_sink['headwise']} (headwise), "
                     f"{with_sink['elementwise']} (elementwise) of {n_seeds}.")
    else:
        for g in GATES[1:]:
            open_gate = min(col(g, "gate_mean")) > 0.1
            result = ("confirmed" if with_sink[g] <= 1 and open_gate else
                      "refuted" if with_sink[g] >= 2 else "unresolved")
            lines.append(f"**Verdict, {g} gate: {result}.** A head >= {fmt(threshold, 3)} on `<s>` in {with_sink[g]} of "
                         f"{n_seeds} gated seeds against {with_sink['none']} ungated; mean gate "
                         f"{'above' if open_gate else 'not above'} 0.1 in every seed.")

    cells = [(g, "every head", COLOURS[g], [float(h["sink_mass"]) for h in heads if h["cell"] == g]) for g in GATES]
    cells += [(g, "largest head", COLOURS[g], col(g, "max_head_sink")) for g in GATES]
    chart = with_reference_line(
        strip_chart("Attention on <s> from every query, character lm with <s> first, per gate (every head a dot)",
                    "attention on <s>", cells, 0.0, 0.2, 0.02,
                    f"dashed: uniform causal attention ({uniform:.4f}); 256 held-out windows of 64, 3000 steps, 3 seeds"),
        uniform, 0.0, 0.2, f"uniform {uniform:.3f}")
    write_or_check({os.path.join(HERE, "summary.csv"): csv_text(summary),
                    os.path.join(HERE, "comparisons.csv"): COMPARISONS_HEADER,
                    os.path.join(HERE, "..", "gate_lm_sink.svg"): chart,
                    PAGE: replace_block(open(PAGE).read(), lines, "B")}, os.path.basename(PAGE))


if __name__ == "__main__":
    main()
