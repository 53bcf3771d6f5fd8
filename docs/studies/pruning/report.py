#!/usr/bin/python3
"""From runs.csv and curves.csv (measure.py): summary.csv, comparisons.csv, two charts and the tables of
docs/studies/pruning.md, with the verdict against the recipe's criteria.

  /usr/bin/python3 docs/studies/pruning/report.py [--check]

The comparisons (declared in recipe.ini before the runs): importance minus the mean of the 20 random
orders, paired over the seeds, on the heads kept within 1 BLEU point and on the validation loss at
half the heads pruned; Holm over the two. --check writes nothing and exits 1 naming each output that
differs (ctest docs.study_pruning_tables). SciPy (python3-scipy) for the intervals and the tests.
"""
import csv
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from study_tools import csv_text, curves_chart, fmt, holm, paired, replace_block, t_interval, write_or_check  # noqa: E402

PAGE = os.path.join(HERE, "..", "pruning.md")
METRICS = ["valid_loss", "valid_bleu", "full_bleu", "kept_importance", "kept_random", "loss_half_importance", "loss_half_random",
           "bleu_half_importance", "bleu_half_random"]
# (metric, importance column, random column, confirm side: +1 importance should be larger, -1 smaller, refute within)
COMPARISONS = [("kept heads", "kept_importance", "kept_random", +1, None),
               ("loss at half pruned", "loss_half_importance", "loss_half_random", -1, 0.02)]


def rows(name):
    with open(os.path.join(HERE, name)) as f:
        return list(csv.DictReader(f))


def verdict(side, lo, hi, p_holm, within):
    if within is not None and -within < lo and hi < within:
        return "refuted (inside ±%g)" % within
    if p_holm < 0.05 and ((side > 0 and lo > 0) or (side < 0 and hi < 0)):
        return "confirmed"
    if p_holm < 0.05 and ((side > 0 and hi < 0) or (side < 0 and lo > 0)):
        return "refuted (importance worse)"
    return "unresolved"


def main():
    runs = sorted(rows("runs.csv"), key=lambda r: int(r["seed"]))
    steps = rows("curves.csv")
    col = lambda key: [float(r[key]) for r in runs]
    summary = []
    for m in METRICS:
        n, mean, sd, lo, hi = t_interval(col(m))
        summary.append({"cell": "model", "metric": m, "n": n, "mean": round(mean, 6), "sd": round(sd, 6),
                        "ci95_low": round(lo, 6), "ci95_high": round(hi, 6)})
    tests = [paired(col(a), col(b)) for _, a, b, _, _ in COMPARISONS]
    adjusted = holm([t[5] for t in tests])
    comparisons, table = [], []
    for (name, a, b, side, within), (d, lo, hi, t, df, p), ph in zip(COMPARISONS, tests, adjusted):
        v = verdict(side, lo, hi, ph, within)
        comparisons.append({"comparison": f"importance vs random: {name}", "metric": a, "difference": round(d, 6),
                            "ci95_low": round(lo, 6), "ci95_high": round(hi, 6), "paired_t": round(t, 6), "df": df,
                            "p": round(p, 8), "p_holm": round(ph, 8), "verdict": v})
        table.append(f"| importance minus random: {name} | {d:+.3f} [{lo:+.3f}, {hi:+.3f}] | {t:.2f} ({df}) | "
                     f"{p:.3g} | {ph:.3g} | **{v}** |")
    lines = ["Per seed (20 random orders each; kept = heads pruned before greedy validation BLEU falls by more than 1 "
             "point; loss and BLEU at half the heads pruned, 24 of 48):", "",
             "| seed | validation loss | BLEU | kept, importance | kept, random (mean of 20) | loss at half, importance "
             "| loss at half, random | BLEU at half, importance | BLEU at half, random | random orders with loss at or "
             "below importance's |", "|---|---|---|---|---|---|---|---|---|---|"]
    for r in runs:
        lines.append(f"| {r['seed']} | {float(r['valid_loss']):.3f} | {float(r['full_bleu']):.2f} | {r['kept_importance']} "
                     f"| {float(r['kept_random']):.1f} | {float(r['loss_half_importance']):.3f} | "
                     f"{float(r['loss_half_random']):.3f} | {float(r['bleu_half_importance']):.2f} | "
                     f"{float(r['bleu_half_random']):.2f} | {r['random_loss_at_or_below']} of {r['random_orders']} |")
    lines += ["", "Mean over seeds with its 95% t-interval:", "", "| quantity | mean ± sd | 95% CI |", "|---|---|---|"]
    for s in summary:
        lines.append(f"| {s['metric']} | {fmt(s['mean'], 3)} ± {fmt(s['sd'], 3)} | [{fmt(s['ci95_low'], 3)}, "
                     f"{fmt(s['ci95_high'], 3)}] |")
    lines += ["", "Declared comparisons (paired over the seeds, Holm over the two):", "",
              "| comparison | difference [95% CI] | t (df) | p | p (Holm) | verdict |", "|---|---|---|---|---|---|"] + table
    cpu = runs[0]["cpu"]
    footer = f"{len(runs)} seeds x (importance + 20 random orders); {cpu}, 1 thread a run"
    outputs = {
        os.path.join(HERE, "summary.csv"): csv_text(summary),
        os.path.join(HERE, "comparisons.csv"): csv_text(comparisons),
        os.path.join(HERE, "..", "pruning_loss.svg"): curves_chart(
            "Study 4: validation loss as heads are pruned", "validation loss (nats/token)", steps, "loss", 3.0, 7.0, 0.5,
            footer),
        os.path.join(HERE, "..", "pruning_bleu.svg"): curves_chart(
            "Study 4: greedy validation BLEU as heads are pruned", "BLEU", steps, "bleu", 0, 8, 1, footer),
        PAGE: replace_block(open(PAGE).read(), lines),
    }
    write_or_check(outputs, "pruning.md")


if __name__ == "__main__":
    main()
