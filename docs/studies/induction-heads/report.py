#!/usr/bin/python3
"""The statistics, tables and chart of study 1 (induction heads), from runs.csv alone.

  /usr/bin/python3 docs/studies/induction-heads/report.py [--check]     (needs python3-scipy)

Writes, beside this file: summary.csv (per cell and metric: n, mean, sd, 95% t-interval),
comparisons.csv (the recipe's two declared comparisons on repeated-half accuracy: difference, its
95% Welch interval, t, df, p, Holm-adjusted p, verdict), ../induction_heads_accuracy.svg (every seed
a dot, the mean and its 95% interval, chance 1/62) and the tables of ../induction-heads.md between
its report markers. --check writes nothing and exits 1 naming each file that differs (ctest
docs.study_induction_heads_tables). The shared parts: ../study_tools.py.
"""
import csv
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from study_tools import (csv_text, fmt, holm, replace_block, strip_chart, t_interval, welch, with_reference_line,  # noqa: E402
                         write_or_check)

PAGE = os.path.join(HERE, "..", "induction-heads.md")
CELLS = ["2-layer", "1-layer", "1-layer-wide"]
METRICS = [("repeated_accuracy", "repeated-half accuracy", 3), ("repeated_loss", "repeated-half loss (nats)", 3),
           ("first_half_loss", "first-half loss (nats)", 3), ("best_previous_token_l0", "best previous-token, layer 0", 2),
           ("best_induction_last", "best induction, last layer", 2), ("max_sink_mass", "largest sink mass", 2)]
COMPARISONS = [("2-layer", "1-layer"), ("2-layer", "1-layer-wide")]
CHANCE = 1 / 62  # a uniform guess over the 62 symbols


def main():
    with open(os.path.join(HERE, "runs.csv")) as f:
        runs = list(csv.DictReader(f))
    by_cell = {c: [r for r in runs if r["cell"] == c] for c in CELLS}
    summary = []
    for cell in CELLS:
        for key, _, _ in METRICS:
            n, mean, sd, a, b = t_interval([float(r[key]) for r in by_cell[cell]])
            summary.append({"cell": cell, "layers": by_cell[cell][0]["layers"], "head_size": by_cell[cell][0]["head_size"],
                            "metric": key, "n": n, "mean": round(mean, 6), "sd": round(sd, 6),
                            "ci95_low": round(a, 6), "ci95_high": round(b, 6)})
    tests = [welch([float(r["repeated_accuracy"]) for r in by_cell[a]], [float(r["repeated_accuracy"]) for r in by_cell[b]])
             for a, b in COMPARISONS]
    adjusted = holm([t[5] for t in tests])
    comparisons = []
    for (a, b), (diff, lo, hi, t, df, p), ph in zip(COMPARISONS, tests, adjusted):
        if ph < 0.05 and lo > 0.2:
            verdict = "two layers far better"
        elif lo > -0.05 and hi < 0.05:
            verdict = "no difference (within 0.05)"
        else:
            verdict = "unresolved"
        comparisons.append({"comparison": f"{a} vs {b}", "metric": "repeated-half accuracy", "difference": round(diff, 6),
                            "ci95_low": round(lo, 6), "ci95_high": round(hi, 6), "welch_t": round(t, 4),
                            "df": round(df, 3), "p": p, "p_holm": ph, "verdict": verdict})
    circuit = {cell: (sum(int(r["previous_token_heads_l0"]) > 0 for r in by_cell[cell]),
                      sum(int(r["induction_heads_last"]) > 0 for r in by_cell[cell])) for cell in CELLS}

    lines = ["Per cell, 5 seeds: mean ± sd [95% t-interval] (summary.csv; normal-theory intervals, which can "
             "run past a metric's range); the uniform baseline of the sink "
             f"mass on this probe is {float(runs[0]['sink_uniform']):.3f}.", "",
             "| cell | layers | head size | parameters | " + " | ".join(label for _, label, _ in METRICS) + " |",
             "|---|---|---|---|" + "---|" * len(METRICS)]
    for cell in CELLS:
        row = [s for s in summary if s["cell"] == cell]
        cells = [f'{fmt(s["mean"], d)} ± {fmt(s["sd"], d)} [{fmt(s["ci95_low"], d)}, {fmt(s["ci95_high"], d)}]'
                 for (_, _, d), s in zip(METRICS, row)]
        lines.append(f'| {cell} | {row[0]["layers"]} | {row[0]["head_size"]} | {by_cell[cell][0]["parameters"]} | '
                     + " | ".join(cells) + " |")
    lines += ["", "Seeds with a previous-token head (> 0.4) in layer 0 and with an induction head (> 0.4) in the "
              "last layer:", "", "| cell | previous-token head | induction head |", "|---|---|---|"]
    for cell in CELLS:
        lines.append(f"| {cell} | {circuit[cell][0]} of {len(by_cell[cell])} | {circuit[cell][1]} of {len(by_cell[cell])} |")
    lines += ["", "The declared comparisons, repeated-half accuracy, Welch, Holm over the two (comparisons.csv):", "",
              "| comparison | difference | 95% CI | Welch t (df) | p | Holm p | verdict |", "|---|---|---|---|---|---|---|"]
    for c in comparisons:
        lines.append(f'| {c["comparison"]} | {fmt(c["difference"], 3)} | [{fmt(c["ci95_low"], 3)}, {fmt(c["ci95_high"], 3)}] | '
                     f'{fmt(c["welch_t"])} ({fmt(c["df"], 1)}) | {c["p"]:.2e} | {c["p_holm"]:.2e} | {c["verdict"]} |')
    colours = {"2-layer": "#1f77b4", "1-layer": "#d62728", "1-layer-wide": "#ff7f0e"}
    chart = strip_chart("Repeated-half accuracy, induction task (5 seeds; mean and 95% CI)", "accuracy on r_2..r_k",
                        [(c, f"{by_cell[c][0]['parameters']} params", colours[c],
                          [float(r["repeated_accuracy"]) for r in by_cell[c]]) for c in CELLS],
                        0.0, 1.0, 0.1, f"chance (a uniform guess over 62 symbols): {CHANCE:.3f}", width=560)
    chart = with_reference_line(chart, CHANCE, 0.0, 1.0, f"chance {CHANCE:.3f}", colour="#555", width=560)
    write_or_check({os.path.join(HERE, "summary.csv"): csv_text(summary),
                    os.path.join(HERE, "comparisons.csv"): csv_text(comparisons),
                    os.path.join(HERE, "..", "induction_heads_accuracy.svg"): chart,
                    PAGE: replace_block(open(PAGE).read(), lines)}, os.path.basename(PAGE))


if __name__ == "__main__":
    main()
