#!/usr/bin/python3
"""From runs.csv and heads.csv (measure.py): summary.csv, comparisons.csv, two charts, the tables of
part A of docs/studies/gate-sink-lr.md and its verdict against the recipe's criteria.

  /usr/bin/python3 docs/studies/gate-sink-lr-sink/report.py [--check]

--check writes nothing and exits 1 naming each output that differs (ctest docs.study_gate_sink_tables).
SciPy (python3-scipy) for the intervals and the tests.
"""
import csv
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from study_tools import (csv_text, fmt, holm, replace_block, strip_chart, t_interval, welch,  # noqa: E402
                         with_reference_line, write_or_check)

PAGE = os.path.join(HERE, "..", "gate-sink-lr.md")
GATES = ("none", "headwise", "elementwise")
GATED = GATES[1:]
COLOURS = {"none": "#1f77b4", "headwise": "#ff7f0e", "elementwise": "#2ca02c"}
TWICE_UNIFORM = 0.305  # the recipe's threshold: 2 x 0.152, uniform causal attention on queries 1..16
SUMMARY_KEYS = ["repeated_accuracy", "repeated_loss", "first_half_loss", "accuracy_1000", "sink_first_half_max_l0",
                "sink_first_half_max_l1", "gate_first_half_l1", "gate_second_half_l1", "induction_gate_second_half",
                "max_logit_l0", "max_logit_l1", "max_residual_l0", "max_residual_l1"]


def welch_row(label, metric, a, b, p_holm):
    diff, lo, hi, t, df, p = welch(a, b)
    return {"comparison": label, "metric": metric, "difference": round(diff, 6), "ci95_low": round(lo, 6),
            "ci95_high": round(hi, 6), "welch_t": round(t, 4), "df": round(df, 3), "p": p, "p_holm": p_holm}


def main():
    with open(os.path.join(HERE, "runs.csv")) as f:
        runs = list(csv.DictReader(f))
    with open(os.path.join(HERE, "heads.csv")) as f:
        heads = list(csv.DictReader(f))
    col = lambda gate, key: [float(r[key]) for r in runs if r["cell"] == gate]
    summary = []
    for gate in GATES:
        for key in SUMMARY_KEYS:
            values = col(gate, key)
            if any(v != v for v in values):  # NaN: the gate columns of the ungated cell
                continue
            n, mean, sd, a, b = t_interval(values)
            summary.append({"cell": gate, "metric": key, "n": n, "mean": round(mean, 6), "sd": round(sd, 6),
                            "ci95_low": round(a, 6), "ci95_high": round(b, 6)})
    by = {(r["cell"], r["metric"]): r for r in summary}

    # The recipe's declared comparisons (as `headlab study report` computes them: Welch, Holm over the
    # two), then the sink's (G: Welch, Holm over the two gates).
    acc = [welch(col(g, "repeated_accuracy"), col("none", "repeated_accuracy")) for g in GATED]
    acc_holm = holm([w[5] for w in acc])
    sink = [welch(col(g, "sink_first_half_max_l1"), col("none", "sink_first_half_max_l1")) for g in GATED]
    sink_holm = holm([w[5] for w in sink])
    comparisons = [welch_row(f"{g} vs none", "repeated_accuracy", col(g, "repeated_accuracy"),
                             col("none", "repeated_accuracy"), acc_holm[k]) for k, g in enumerate(GATED)]
    comparisons += [welch_row(f"G: {g} vs none, layers.1 sink", "sink_first_half_max_l1", col(g, "sink_first_half_max_l1"),
                              col("none", "sink_first_half_max_l1"), sink_holm[k]) for k, g in enumerate(GATED)]

    # The verdict per gate, against the recipe's criteria.
    n_seeds = len(col("none", "repeated_accuracy"))
    ungated_sink = sum(v > TWICE_UNIFORM for v in col("none", "sink_first_half_max_l1"))
    verdicts = {}
    for k, g in enumerate(GATED):
        kept = sum(v > TWICE_UNIFORM for v in col(g, "sink_first_half_max_l1"))
        open_seeds = sum(v > 0.1 for v in col(g, "induction_gate_second_half"))
        acc_lo, acc_hi = acc[k][1], acc[k][2]
        part_g = kept <= n_seeds - 4 and ungated_sink >= 4 and sink_holm[k] < 0.05
        part_o = open_seeds >= 4 and acc_lo > -0.02
        if part_g and part_o:
            result = "confirmed"
        elif kept >= 3 or (kept <= n_seeds - 4 and (open_seeds < n_seeds - 1 or acc_hi < -0.02)):
            result = "refuted"
        else:
            result = "unresolved"
        verdicts[g] = (result, kept, open_seeds, part_g, part_o, acc_lo)

    lines = ["Per run (runs.csv): repeated-half accuracy (the trainer's 256 held-out sequences), the largest "
             "first-half sink mass of layers.1 (queries 1..16; uniform attention gives "
             f"{fmt(float(runs[0]['sink_uniform_first_half']), 3)}) with its head, the mean gate of layers.1 on first- "
             "and second-half queries, the induction head's gate on second-half queries, the largest attention logit "
             "and the largest residual activation of layers.1.", "",
             "| gate | seed | accuracy | layers.1 sink (head) | layers.1 gate, 1st / 2nd half | induction head's gate, "
             "2nd half | max logit l1 | max residual l1 |", "|---|---|---|---|---|---|---|---|"]
    for r in runs:
        gated = r["cell"] != "none"
        lines.append(f'| {r["cell"]} | {r["seed"]} | {fmt(float(r["repeated_accuracy"]), 4)} | '
                     f'{fmt(float(r["sink_first_half_max_l1"]), 3)} ({r["sink_head_l1"]}) | '
                     + (f'{fmt(float(r["gate_first_half_l1"]), 3)} / {fmt(float(r["gate_second_half_l1"]), 3)} | '
                        f'{fmt(float(r["induction_gate_second_half"]), 3)} (head {r["induction_head_l1"]}) | ' if gated
                        else "- | - | ")
                     + f'{fmt(float(r["max_logit_l1"]), 1)} | {fmt(float(r["max_residual_l1"]), 1)} |')
    lines += ["", f"Per gate, {n_seeds} seeds: mean ± sd [95% t-interval] (summary.csv):", "",
              "| gate | accuracy | layers.1 sink | layers.1 gate, 2nd half | max logit l1 | max residual l1 |",
              "|---|---|---|---|---|---|"]
    cellfmt = lambda s, d: f'{fmt(s["mean"], d)} ± {fmt(s["sd"], d)} [{fmt(s["ci95_low"], d)}, {fmt(s["ci95_high"], d)}]'
    for g in GATES:
        gate_cell = cellfmt(by[(g, "gate_second_half_l1")], 3) if (g, "gate_second_half_l1") in by else "-"
        lines.append(f"| {g} | {cellfmt(by[(g, 'repeated_accuracy')], 4)} | {cellfmt(by[(g, 'sink_first_half_max_l1')], 3)} | "
                     f"{gate_cell} | {cellfmt(by[(g, 'max_logit_l1')], 1)} | {cellfmt(by[(g, 'max_residual_l1')], 1)} |")
    lines += ["", "Tests (comparisons.csv; Welch, Holm over the two gates within each metric):", "",
              "| comparison | metric | difference | 95% CI | t | df | p | Holm p |", "|---|---|---|---|---|---|---|---|"]
    for c in comparisons:
        lines.append(f'| {c["comparison"]} | {c["metric"]} | {fmt(c["difference"], 4)} | [{fmt(c["ci95_low"], 4)}, '
                     f'{fmt(c["ci95_high"], 4)}] | {fmt(c["welch_t"], 2)} | {fmt(c["df"], 1)} | {c["p"]:.3g} | {c["p_holm"]:.3g} |')
    lines.append("")
    for g in GATED:
        result, kept, open_seeds, part_g, part_o, acc_lo = verdicts[g]
        lines.append(f"**Verdict, {g} gate: {result}.** G: a layers.1 head above 2x uniform ({TWICE_UNIFORM}) in "
                     f"{kept} of {n_seeds} gated seeds against {ungated_sink} of {n_seeds} ungated "
                     f"({'holds' if part_g else 'fails'}); O: the induction head's gate on second-half queries above 0.1 "
                     f"in {open_seeds} of {n_seeds} seeds, accuracy difference's CI from {fmt(acc_lo, 4)} "
                     f"({'holds' if part_o else 'fails'}).")
        lines.append("")
    lines.pop()

    sink_cells = [(g, "largest head", COLOURS[g], col(g, "sink_first_half_max_l1")) for g in GATES]
    sink_cells += [(g, "all 4 heads", COLOURS[g],
                    [float(h["sink_first_half"]) for h in heads if h["cell"] == g and h["layer"] == "1"]) for g in GATES]
    sink_chart = with_reference_line(
        strip_chart("Attention on <s> from first-half queries 1..16, layers.1, per gate (every seed a dot)",
                    "sink mass", sink_cells, 0.0, 1.0, 0.1,
                    "dashed: uniform causal attention on the same queries (0.152); 64 probe sequences, 5 seeds"),
        0.152, 0.0, 1.0, "uniform 0.152")
    gate_cells = []
    for g in GATED:
        gate_cells.append((g, "1st-half queries", COLOURS[g],
                           [float(h["gate_first_half"]) for h in heads if h["cell"] == g and h["layer"] == "1"]))
        gate_cells.append((g, "2nd-half queries", COLOURS[g],
                           [float(h["gate_second_half"]) for h in heads if h["cell"] == g and h["layer"] == "1"]))
    gate_chart = with_reference_line(
        strip_chart("Mean gate of every layers.1 head on first- and second-half queries (every head of every seed a dot)",
                    "mean sigmoid gate", gate_cells, 0.0, 1.0, 0.1,
                    "dashed: 0.1, below which the recipe calls a gate closed; 5 seeds x 4 heads"),
        0.1, 0.0, 1.0, "closed below 0.1")
    write_or_check({os.path.join(HERE, "summary.csv"): csv_text(summary),
                    os.path.join(HERE, "comparisons.csv"): csv_text(comparisons),
                    os.path.join(HERE, "..", "gate_sink_mass.svg"): sink_chart,
                    os.path.join(HERE, "..", "gate_sink_gates.svg"): gate_chart,
                    PAGE: replace_block(open(PAGE).read(), lines, "A")}, os.path.basename(PAGE))


if __name__ == "__main__":
    main()
