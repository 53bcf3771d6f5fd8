#!/usr/bin/python3
"""From runs.csv (measure.py): summary.csv, comparisons.csv, three charts against the learning rate,
the tables of part C of docs/studies/gate-sink-lr.md and its verdict against the recipe's criteria.

  /usr/bin/python3 docs/studies/gate-sink-lr-rate/report.py [--check]

--check writes nothing and exits 1 naming each output that differs (ctest docs.study_gate_lr_tables).
SciPy (python3-scipy) for the intervals and the tests.
"""
import csv
import math
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from study_tools import (csv_text, fmt, holm, log_x_chart, paired, replace_block, t_interval,  # noqa: E402
                         with_reference_line, write_or_check)

PAGE = os.path.join(HERE, "..", "gate-sink-lr.md")
GATES = ("none", "headwise", "elementwise")
COLOURS = {"none": "#1f77b4", "headwise": "#ff7f0e", "elementwise": "#2ca02c"}
METRICS = ["repeated_accuracy", "repeated_loss", "loss_spikes", "max_loss_jump", "diverged", "gate_second_half_l1"]
CHANCE = 1 / 62  # the 62 data tokens
OPEN = 0.1       # a mean gate below this is called closed


def value(r, key):
    return None if r[key] in ("", "nan") else float(r[key])


def failure_edge(rates, mean_acc):
    """The smallest rate above the best one whose mean accuracy is below half the best (None: not in the grid)."""
    best = max(rates, key=lambda lr: mean_acc[lr])
    for lr in rates:
        if lr > best and mean_acc[lr] < mean_acc[best] / 2:
            return best, lr
    return best, None


def sensitivity(rows, rates):
    """Wortsman et al. 2023: mean over the rates of min(L(lr), L0) - L*, a diverged run counting L0."""
    l0 = statistics.fmean(float(r["first_step_loss"]) for r in rows)
    loss = {float(r["lr"]): (value(r, "repeated_loss") if r["diverged"] == "0" else None) for r in rows}
    capped = [min(loss[lr], l0) if loss[lr] is not None else l0 for lr in rates]
    return statistics.fmean(capped) - min(capped)


def main():
    with open(os.path.join(HERE, "runs.csv")) as f:
        runs = list(csv.DictReader(f))
    rates = sorted({float(r["lr"]) for r in runs})
    seeds = sorted({int(r["seed"]) for r in runs})
    cell = lambda g, lr: [r for r in runs if r["gate"] == g and float(r["lr"]) == lr]

    summary = []
    for g in GATES:
        for lr in rates:
            for key in METRICS:
                values = [value(r, key) for r in cell(g, lr)]
                values = [v for v in values if v is not None]
                if not values:
                    continue
                n, mean, sd, a, b = t_interval(values)
                summary.append({"cell": cell(g, lr)[0]["cell"], "metric": key, "n": n, "mean": round(mean, 6),
                                "sd": round(sd, 6), "ci95_low": round(a, 6), "ci95_high": round(b, 6)})

    # Per gate: mean accuracy per rate (a diverged run counts 0), best rate, failure edge; the
    # sensitivity per seed.
    mean_acc, edge, best, sens = {}, {}, {}, {}
    for g in GATES:
        mean_acc[g] = {lr: statistics.fmean(value(r, "repeated_accuracy") or 0.0 for r in cell(g, lr)) for lr in rates}
        best[g], edge[g] = failure_edge(rates, mean_acc[g])
        sens[g] = [sensitivity([r for r in runs if r["gate"] == g and int(r["seed"]) == s], rates) for s in seeds]
    tests = [paired(sens[g], sens["none"]) for g in GATES[1:]]
    p_holm = holm([t[5] for t in tests])
    comparisons = []
    for g, t, ph in zip(GATES[1:], tests, p_holm):
        diff, lo, hi, tt, df, p = t
        comparisons.append({"comparison": f"{g} vs none, lr sensitivity", "metric": "lr_sensitivity (paired by seed)",
                            "difference": round(diff, 6), "ci95_low": round(lo, 6), "ci95_high": round(hi, 6),
                            "t": round(tt, 4), "df": df, "p": p, "p_holm": ph})

    lines = [f"Per gate and rate, {len(seeds)} seeds: mean ± sd of the repeated-half accuracy and loss after the last "
             "step, the loss spikes per run, the runs that diverged and the mean gate of layers.1 on second-half "
             f"queries (summary.csv; every run in runs.csv). Chance accuracy {fmt(CHANCE, 3)}.", "",
             "| gate | lr | accuracy | loss (nats) | spikes | diverged | gate, 2nd half |", "|---|---|---|---|---|---|---|"]
    for g in GATES:
        for lr in rates:
            rows = cell(g, lr)
            acc = [v for v in (value(r, "repeated_accuracy") for r in rows) if v is not None]
            loss = [v for v in (value(r, "repeated_loss") for r in rows) if v is not None]
            gate = [v for v in (value(r, "gate_second_half_l1") for r in rows) if v is not None]
            sd = lambda v: statistics.stdev(v) if len(v) > 1 else float("nan")
            lines.append(f"| {g} | {lr:g} | {fmt(statistics.fmean(acc), 4)} ± {fmt(sd(acc), 4)} | "
                         f"{fmt(statistics.fmean(loss), 3)} ± {fmt(sd(loss), 3)} | "
                         f"{fmt(statistics.fmean(int(r['loss_spikes']) for r in rows), 1)} | "
                         f"{sum(r['diverged'] == '1' for r in rows)}/{len(rows)} | "
                         f"{fmt(statistics.fmean(gate), 3) if gate else '-'} |")
    lines += ["", "Per gate: the best rate (highest mean accuracy), the failure edge (the smallest rate above it "
              "where the mean accuracy falls below half the best; a diverged run counts 0) and the learning-rate "
              "sensitivity, mean [95% CI] over the seeds (each seed's own sweep):", "",
              "| gate | best rate | best accuracy | failure edge | lr sensitivity (nats) |", "|---|---|---|---|---|"]
    for g in GATES:
        n, m, sd, lo, hi = t_interval(sens[g])
        lines.append(f"| {g} | {best[g]:g} | {fmt(mean_acc[g][best[g]], 4)} | "
                     f"{'beyond 0.256' if edge[g] is None else format(edge[g], 'g')} | "
                     f"{fmt(m, 3)} [{fmt(lo, 3)}, {fmt(hi, 3)}] |")
    lines += ["", "Sensitivity, gated minus ungated (comparisons.csv; paired by seed, Holm over the two gates):", "",
              "| comparison | difference | 95% CI | t | p | Holm p |", "|---|---|---|---|---|---|"]
    for c in comparisons:
        lines.append(f'| {c["comparison"]} | {fmt(c["difference"], 3)} | [{fmt(c["ci95_low"], 3)}, {fmt(c["ci95_high"], 3)}] | '
                     f'{fmt(c["t"], 2)} | {c["p"]:.3g} | {c["p_holm"]:.3g} |')
    lines.append("")
    for g in GATES[1:]:
        wins = [lr for lr in rates if mean_acc[g][lr] > mean_acc["none"][lr] + 0.05]
        gate_at = {lr: statistics.fmean(v for v in (value(r, "gate_second_half_l1") for r in cell(g, lr)) if v is not None)
                   if any(value(r, "gate_second_half_l1") is not None for r in cell(g, lr)) else 0.0 for lr in rates}
        real_wins = [lr for lr in wins if mean_acc[g][lr] >= 2 * CHANCE and gate_at[lr] > OPEN]
        e_g = edge[g] if edge[g] is not None else 2 * rates[-1]
        e_n = edge["none"] if edge["none"] is not None else 2 * rates[-1]
        equal_best = mean_acc[g][best[g]] >= mean_acc["none"][best["none"]] - 0.02
        if edge[g] is None and edge["none"] is None:
            result = "unresolved (no failure edge inside the grid for either)"
        elif e_g >= 2 * e_n and equal_best and len(real_wins) == len(wins):
            result = "confirmed"
        elif e_g <= e_n or (wins and not real_wins):
            result = "refuted"
        else:
            result = "unresolved"
        lines.append(f"**Verdict, {g} gate: {result}.** Failure edge "
                     f"{'beyond 0.256' if edge[g] is None else format(edge[g], 'g')} against ungated "
                     f"{'beyond 0.256' if edge['none'] is None else format(edge['none'], 'g')} "
                     f"(ratio {fmt(e_g / e_n, 2)}; confirms at >= 2); best accuracy {fmt(mean_acc[g][best[g]], 4)} at "
                     f"{best[g]:g} against {fmt(mean_acc['none'][best['none']], 4)} at {best['none']:g} "
                     f"({'equal within 0.02' if equal_best else 'lower by more than 0.02'}); rates where it wins by "
                     f"> 0.05: {', '.join(f'{lr:g}' for lr in wins) or 'none'}"
                     + (f", of which with accuracy >= 2x chance and the gate open: {', '.join(f'{lr:g}' for lr in real_wins) or 'none'}"
                        if wins else "") + ".")
        lines.append("")
    lines.pop()

    per_seed = lambda key, g: {lr: [value(r, key) for r in cell(g, lr)] for lr in rates}
    footer = f"constant rate after 200 warm-up steps, Adam, no clipping, 1500 steps; {len(seeds)} seeds a dot each; line: mean"
    acc_chart = log_x_chart("Repeated-half accuracy against the learning rate, per gate", "repeated-half accuracy",
                            [(g, COLOURS[g], per_seed("repeated_accuracy", g)) for g in GATES], 0.0, 1.0, 0.1, footer)
    acc_chart = with_reference_line(acc_chart, CHANCE, 0.0, 1.0, f"chance {CHANCE:.3f}", colour="#555", width=760 - 110,
                                    height=380, bottom=60)
    spikes_chart = log_x_chart("Loss spikes per run against the learning rate", "steps > 0.5 nats above the last 20",
                               [(g, COLOURS[g], {lr: [float(v) for v in vs] for lr, vs in per_seed("loss_spikes", g).items()})
                                for g in GATES],
                               0.0, max(10.0, math.ceil(max(float(r["loss_spikes"]) for r in runs) / 10) * 10), 10.0, footer)
    gate_chart = log_x_chart("Mean gate of layers.1 on second-half queries against the learning rate", "mean sigmoid gate",
                             [(g, COLOURS[g], per_seed("gate_second_half_l1", g)) for g in GATES[1:]], 0.0, 1.0, 0.1,
                             f"{len(seeds)} seeds a dot each; line: mean; the recipe calls a gate below 0.1 closed")
    write_or_check({os.path.join(HERE, "summary.csv"): csv_text(summary),
                    os.path.join(HERE, "comparisons.csv"): csv_text(comparisons),
                    os.path.join(HERE, "..", "gate_lr_accuracy.svg"): acc_chart,
                    os.path.join(HERE, "..", "gate_lr_spikes.svg"): spikes_chart,
                    os.path.join(HERE, "..", "gate_lr_gate.svg"): gate_chart,
                    PAGE: replace_block(open(PAGE).read(), lines, "C")}, os.path.basename(PAGE))


if __name__ == "__main__":
    main()
