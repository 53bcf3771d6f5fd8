#!/usr/bin/python3
"""From gate-sink-lr-lm-rate/runs.csv (the selection runs, as `headlab study report` writes them) and
runs.csv (measure.py): summary.csv, comparisons.csv, a chart, the tables of part D of
docs/studies/gate-sink-lr.md and its verdict against the recipe's criteria.

  /usr/bin/python3 docs/studies/gate-sink-lr-lm-loss/report.py [--check]

--check writes nothing and exits 1 naming each output that differs (ctest docs.study_gate_lm_loss_tables).
SciPy (python3-scipy) for the intervals and the tests.
"""
import csv
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from study_tools import (csv_text, fmt, holm, paired, replace_block, strip_chart, t_interval, welch,  # noqa: E402
                         write_or_check)

PAGE = os.path.join(HERE, "..", "gate-sink-lr.md")
GATES = ("none", "headwise", "elementwise")
COLOURS = {"none": "#1f77b4", "headwise": "#ff7f0e", "elementwise": "#2ca02c"}
KEYS = ["valid_loss", "valid_bits_per_char", "gate_mean", "loss_spikes"]


def rows(path):
    with open(path) as f:
        return list(csv.DictReader(f))


def main():
    selection = rows(os.path.join(HERE, "..", "gate-sink-lr-lm-rate", "runs.csv"))
    runs = rows(os.path.join(HERE, "runs.csv"))
    bigram = float(rows(os.path.join(HERE, "..", "text-head-roles", "runs.csv"))[0]["bigram_loss"])
    col = lambda g, key: [float(r[key]) for r in sorted(runs, key=lambda r: int(r["seed"])) if r["cell"] == g]
    summary = []
    for g in GATES:
        for key in KEYS:
            if any(r[key] == "" for r in runs if r["cell"] == g):
                continue
            n, mean, sd, a, b = t_interval(col(g, key))
            summary.append({"cell": g, "metric": key, "n": n, "mean": round(mean, 6), "sd": round(sd, 6),
                            "ci95_low": round(a, 6), "ci95_high": round(b, 6)})
    # The recipe's declared comparisons, as `headlab study report` computes them with `test = paired`:
    # Welch's and the paired test both reported, Holm over the paired p of the two.
    tests = [(g, welch(col(g, "valid_loss"), col("none", "valid_loss")), paired(col(g, "valid_loss"), col("none", "valid_loss")))
             for g in GATES[1:]]
    p_holm = holm([p[5] for _, _, p in tests])
    comparisons = []
    for (g, w, p), ph in zip(tests, p_holm):
        comparisons.append({"comparison": f"{g} vs none", "metric": "valid_loss", "difference": round(w[0], 6),
                            "ci95_low": round(w[1], 6), "ci95_high": round(w[2], 6), "welch_t": round(w[3], 4),
                            "df": round(w[4], 3), "p": w[5], "paired_ci95_low": round(p[1], 6),
                            "paired_ci95_high": round(p[2], 6), "paired_t": round(p[3], 4), "paired_p": p[5],
                            "test": "paired", "p_holm": ph})

    lines = ["Selection (gate-sink-lr-lm-rate, seed 11, not one of the five): the held-out loss after 2000 steps per gate and "
             "rate; the lowest per gate is its rate below.", "",
             "| gate | lr 0.001 | lr 0.002 | lr 0.004 | chosen |", "|---|---|---|---|---|"]
    chosen = {}
    for g in GATES:
        mine = {float(r["flags"].split("--lr ")[1].split()[0]): float(r["valid_loss"]) for r in selection
                if r["cell"].startswith(g + "-")}
        chosen[g] = min(mine, key=mine.get)
        lines.append(f"| {g} | " + " | ".join(fmt(mine[lr], 4) for lr in sorted(mine)) + f" | {chosen[g]:g} |")
    lines += ["", "Per run at the chosen rate (runs.csv): held-out loss (nats/char), loss spikes, the mean gate "
              f"over every head and query. A count bigram gives {fmt(bigram, 3)} on the same text (study 14).", "",
              "| gate | lr | seed 1 | seed 2 | seed 3 | seed 4 | seed 5 | mean ± sd [95% CI] | mean gate |",
              "|---|---|---|---|---|---|---|---|---|"]
    by = {(r["cell"], r["metric"]): r for r in summary}
    for g in GATES:
        s = by[(g, "valid_loss")]
        gate = by.get((g, "gate_mean"))
        lr = sorted({r["lr"] for r in runs if r["cell"] == g})
        lines.append(f"| {g} | {', '.join(lr)} | " + " | ".join(fmt(v, 4) for v in col(g, "valid_loss"))
                     + f' | {fmt(s["mean"], 4)} ± {fmt(s["sd"], 4)} [{fmt(s["ci95_low"], 4)}, {fmt(s["ci95_high"], 4)}] | '
                     + (fmt(gate["mean"], 3) if gate else "-") + " |")
    lines += ["", "Gated minus ungated, paired by seed (comparisons.csv; Holm over the two gates; Welch's beside it):", "",
              "| comparison | difference | paired 95% CI | paired t | paired p | Holm p | Welch p |",
              "|---|---|---|---|---|---|---|"]
    for c in comparisons:
        lines.append(f'| {c["comparison"]} | {fmt(c["difference"], 4)} | [{fmt(c["paired_ci95_low"], 4)}, '
                     f'{fmt(c["paired_ci95_high"], 4)}] | {fmt(c["paired_t"], 2)} | {c["paired_p"]:.3g} | '
                     f'{c["p_holm"]:.3g} | {c["p"]:.3g} |')
    lines.append("")
    for c, g in zip(comparisons, GATES[1:]):
        lo, hi = c["paired_ci95_low"], c["paired_ci95_high"]
        open_gate = min(col(g, "gate_mean")) > 0.1
        if hi < 0 and c["p_holm"] < 0.05 and open_gate:
            result = "confirmed"
        elif lo > 0 or (-0.01 <= lo and hi <= 0.01) or (hi < 0 and not open_gate):
            result = "refuted"
        else:
            result = "unresolved"
        lines.append(f"**Verdict, {g} gate: {result}.** Paired difference {fmt(c['difference'], 4)} nats/char, 95% CI "
                     f"[{fmt(lo, 4)}, {fmt(hi, 4)}], Holm p {c['p_holm']:.3g}; the gate "
                     f"{'open' if open_gate else 'closed'} (every seed's mean gate {'>' if open_gate else 'not >'} 0.1).")
        lines.append("")
    lines.pop()
    chart = strip_chart("Held-out loss of the character lm at each gate's chosen rate (every seed a dot)",
                        "nats per character", [(g, f"lr {chosen[g]:g}", COLOURS[g], col(g, "valid_loss")) for g in GATES],
                        1.30, 1.45, 0.01, f"2000 steps, 5 seeds; bar: mean, line: 95% CI; a count bigram: {bigram:.3f}")
    write_or_check({os.path.join(HERE, "summary.csv"): csv_text(summary),
                    os.path.join(HERE, "comparisons.csv"): csv_text(comparisons),
                    os.path.join(HERE, "..", "gate_lm_loss.svg"): chart,
                    PAGE: replace_block(open(PAGE).read(), lines, "D")}, os.path.basename(PAGE))


if __name__ == "__main__":
    main()
