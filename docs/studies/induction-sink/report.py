#!/usr/bin/python3
"""From runs.csv and heads.csv (measure.py): summary.csv, comparisons.csv, the two charts, the page's
tables and the verdict against the recipe's criteria.

  /usr/bin/python3 docs/studies/induction-sink/report.py [--check | --judge DIR]

--check writes nothing and exits 1 naming each output that differs (ctest
docs.study_induction_sink_tables). --judge DIR reads DIR's runs.csv and heads.csv instead (a
replication's) and prints the verdict and each criterion as JSON, writing nothing. SciPy (python3-scipy) for the intervals and the tests.
"""
import csv
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from study_tools import (csv_text, fmt, holm, judge_exit, paired, replace_block, report_source, strip_chart,  # noqa: E402
                         t_interval, with_off_axis_note, with_reference_line, write_or_check)

PAGE = os.path.join(HERE, "..", "induction-sink.md")
CONDITIONS = [("full", "full attention"), ("w17", "window 17, no sink"), ("w17s1", "window 17 + 1 sink")]
UNIFORM_FIRST_HALF = 0.152  # the recipe's number: mean of 1 / (i + 1) over i = 1..16


def main():
    source = report_source(HERE)
    with open(os.path.join(source, "runs.csv")) as f:
        runs = list(csv.DictReader(f))
    with open(os.path.join(source, "heads.csv")) as f:
        heads = list(csv.DictReader(f))
    col = lambda key: [float(r[key]) for r in runs]
    summary = []  # one cell (2-layer): the recipe's metrics (the trainer's evaluation), then measure.py's
    keys = ["repeated_accuracy", "repeated_loss", "first_half_loss"]
    keys += [f"{metric}_{name}" for name, _ in CONDITIONS for metric in ("accuracy", "loss")]
    keys += ["sink_first_half_max_l0", "sink_first_half_max_l1"]
    for key in keys:
        n, mean, sd, a, b = t_interval(col(key))
        summary.append({"cell": "2-layer", "metric": key, "n": n, "mean": round(mean, 6), "sd": round(sd, 6),
                        "ci95_low": round(a, 6), "ci95_high": round(b, 6)})
    by_metric = {r["metric"]: r for r in summary}

    # The two declared tests (Holm over both), then the same differences on the loss (described, not tested).
    d_test = paired(col("accuracy_full"), col("accuracy_w17"))
    r_test = paired(col("accuracy_w17s1"), col("accuracy_w17"))
    p_holm = holm([d_test[5], r_test[5]])
    comparisons = []
    for label, test, ph in (("D: full vs w17", d_test, p_holm[0]), ("R: w17+1 vs w17", r_test, p_holm[1])):
        diff, lo, hi, t, df, p = test
        comparisons.append({"comparison": label, "metric": "repeated-half accuracy (paired)", "difference": round(diff, 6),
                            "ci95_low": round(lo, 6), "ci95_high": round(hi, 6), "t": round(t, 4), "df": df, "p": p,
                            "p_holm": ph})
    loss_d = paired(col("loss_w17"), col("loss_full"))
    loss_r = paired(col("loss_w17"), col("loss_w17s1"))

    # The verdict, against the recipe's criteria.
    s_seeds = sum(float(r["sink_first_half_max_l1"]) >= 0.5 for r in runs)
    any_above_2x = sum(max(float(r["sink_first_half_max_l0"]), float(r["sink_first_half_max_l1"])) > 2 * UNIFORM_FIRST_HALF
                       for r in runs)
    drop = statistics.fmean(col("accuracy_full")) - statistics.fmean(col("accuracy_w17"))
    regained = statistics.fmean(col("accuracy_w17s1")) - statistics.fmean(col("accuracy_w17"))
    part_s = s_seeds >= 4
    part_d = p_holm[0] < 0.05 and d_test[1] > 0
    part_r = p_holm[1] < 0.05 and drop > 0 and regained >= 0.9 * drop
    harmless = -0.02 <= d_test[1] and d_test[2] <= 0.02
    if part_s and part_d and part_r:
        result = "confirmed"
    elif any_above_2x <= 2 or harmless:
        result = "refuted"
    else:
        result = "unresolved"
    judge_exit(result, [("S: a layers.1 head >= 0.5 on <s> (first-half queries) in >= 4 of 5 seeds", part_s,
                         f"{s_seeds} of {len(runs)} seeds"),
                        ("D: full minus w17 accuracy > 0 (Holm p < 0.05, CI above 0)", part_d,
                         f"{fmt(d_test[0], 4)} [{fmt(d_test[1], 4)}, {fmt(d_test[2], 4)}], Holm p {p_holm[0]:.3f}"),
                        ("R: w17+1 minus w17 > 0 (Holm p < 0.05), >= 90% of the drop regained", part_r,
                         f"{fmt(regained, 4)} of {fmt(drop, 4)}, Holm p {p_holm[1]:.3f}"),
                        ("refutes: a head above 2x uniform in <= 2 seeds", any_above_2x <= 2,
                         f"{any_above_2x} of {len(runs)} seeds"),
                        ("refutes: the CI of full minus w17 inside [-0.02, 0.02]", harmless,
                         f"[{fmt(d_test[1], 4)}, {fmt(d_test[2], 4)}]")])

    lines = ["Per run (runs.csv): repeated-half accuracy on 1000 held-out sequences under each attention, and the "
             "largest first-half sink mass of each layer (queries 1..16; uniform attention gives "
             f"{fmt(float(runs[0]['sink_uniform_first_half']), 3)}) with its head, the largest attention logit and "
             "the largest residual activation of the layer.", "",
             "| seed | full | window 17 | window 17 + 1 sink | layer 0 sink (head) | layer 1 sink (head) | "
             "max logit l0 / l1 | max residual l0 / l1 |", "|---|---|---|---|---|---|---|---|"]
    for r in runs:
        lines.append(f'| {r["seed"]} | {fmt(float(r["accuracy_full"]), 4)} | {fmt(float(r["accuracy_w17"]), 4)} | '
                     f'{fmt(float(r["accuracy_w17s1"]), 4)} | {fmt(float(r["sink_first_half_max_l0"]), 3)} ({r["sink_head_l0"]}) | '
                     f'{fmt(float(r["sink_first_half_max_l1"]), 3)} ({r["sink_head_l1"]}) | '
                     f'{fmt(float(r["max_logit_l0"]), 1)} / {fmt(float(r["max_logit_l1"]), 1)} | '
                     f'{fmt(float(r["max_residual_l0"]), 1)} / {fmt(float(r["max_residual_l1"]), 1)} |')
    lines += ["", "Per condition, 5 seeds: mean ± sd [95% t-interval] (summary.csv):", "",
              "| attention | repeated-half accuracy | repeated-half loss (nats) |", "|---|---|---|"]
    for name, label in CONDITIONS:
        acc, loss = by_metric[f"accuracy_{name}"], by_metric[f"loss_{name}"]
        lines.append(f"| {label} | " + " | ".join(
            f'{fmt(s["mean"], 4)} ± {fmt(s["sd"], 4)} [{fmt(s["ci95_low"], 4)}, {fmt(s["ci95_high"], 4)}]'
            for s in (acc, loss)) + " |")
    lines += ["", "The declared tests (comparisons.csv; paired over seeds, Holm over the two):", "",
              "| comparison | difference in accuracy | 95% CI | t (df 4) | p | Holm p |", "|---|---|---|---|---|---|"]
    for c in comparisons:
        lines.append(f'| {c["comparison"]} | {fmt(c["difference"], 4)} | [{fmt(c["ci95_low"], 4)}, {fmt(c["ci95_high"], 4)}] | '
                     f'{fmt(c["t"], 2)} | {c["p"]:.3f} | {c["p_holm"]:.3f} |')
    lines += ["", f"Described, not tested (the recipe declared accuracy): the window without a sink raises the "
              f"repeated-half loss by {fmt(loss_d[0], 4)} nats [{fmt(loss_d[1], 4)}, {fmt(loss_d[2], 4)}] (paired p "
              f"{loss_d[5]:.3f}); one sink takes back {fmt(loss_r[0], 4)} [{fmt(loss_r[1], 4)}, {fmt(loss_r[2], 4)}] of it.",
              "",
              f"**Verdict: {result}.** S (a layers.1 head >= 0.5 on `<s>` for first-half queries): {s_seeds} of 5 seeds "
              f"({'holds' if part_s else 'fails'}). D (the window without a sink lowers accuracy, Holm p < 0.05, CI above 0): "
              f"{'holds' if part_d else 'does not hold'} (Holm p {p_holm[0]:.3f}). R (one sink restores at least 90% of "
              f"the drop, Holm p < 0.05): {'holds' if part_r else 'does not hold'} (mean drop {fmt(drop, 4)}, regained "
              f"{fmt(regained, 4)}, Holm p {p_holm[1]:.3f}). Refuting conditions: a head above 2x uniform in "
              f"{any_above_2x} of 5 seeds (refutes at 2 or fewer); the CI of the drop "
              f"[{fmt(d_test[1], 4)}, {fmt(d_test[2], 4)}] {'inside' if harmless else 'not inside'} [-0.02, 0.02]."]

    acc_chart = with_off_axis_note(strip_chart("Repeated-half accuracy under each attention, scored without retraining (every seed a dot)",
                            "repeated-half accuracy", [(label, name, colour, col(f"accuracy_{name}")) for (name, label), colour
                                                       in zip(CONDITIONS, ("#1f77b4", "#d62728", "#2ca02c"))],
                            0.9, 1.0, 0.02, "the 2-layer induction model of study 1, 1000 held-out sequences of 33 tokens, "
                            "5 seeds; bar: mean, line: 95% CI"),
        "below this axis: chance 1/62 = 0.016; study 1's 1-layer model (no induction head) 0.246")
    sink_cells = [(f"layer {layer}, every head", "4 heads x 5 seeds", colour,
                   [float(h["sink_first_half"]) for h in heads if int(h["layer"]) == layer])
                  for layer, colour in ((0, "#ff7f0e"), (1, "#1f77b4"))]
    sink_cells += [(f"layer {layer}, largest", "per seed", colour, col(f"sink_first_half_max_l{layer}"))
                   for layer, colour in ((0, "#ff7f0e"), (1, "#1f77b4"))]
    sink_chart = with_reference_line(
        strip_chart("Attention on <s> from first-half queries 1..16, per head (every head of every seed a dot)",
                    "sink mass", sink_cells, 0.0, 1.0, 0.1,
                    "dashed: uniform causal attention on the same queries (0.152); 64 probe sequences"),
        UNIFORM_FIRST_HALF, 0.0, 1.0, "uniform 0.152")
    write_or_check({os.path.join(HERE, "summary.csv"): csv_text(summary),
                    os.path.join(HERE, "comparisons.csv"): csv_text(comparisons),
                    os.path.join(HERE, "..", "induction_sink_accuracy.svg"): acc_chart,
                    os.path.join(HERE, "..", "induction_sink_mass.svg"): sink_chart,
                    PAGE: replace_block(open(PAGE).read(), lines)}, os.path.basename(PAGE))


if __name__ == "__main__":
    main()
