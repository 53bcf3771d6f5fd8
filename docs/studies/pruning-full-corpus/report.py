#!/usr/bin/python3
"""From runs.csv and curves.csv (measure.py): summary.csv, comparisons.csv, two charts and the tables of
docs/studies/pruning-full-corpus.md, with the verdict against the recipe's criteria.

  /usr/bin/python3 docs/studies/pruning-full-corpus/report.py [--check]

One trained model, so the test is the importance order's rank among the 20 random orders (declared in
recipe.ini before the run): p = (1 + the random orders at least as good) / 21, one-sided. Confirms:
the loss at half the heads pruned below all 20 random orders' (p = 1/21) and the heads kept within 1
BLEU point at or above 19 of them; refutes: that loss at or above the random orders' median. The 95%
t-interval of the 20 random orders' values is given beside them. --check writes nothing and exits 1
naming each output that differs (ctest docs.study_pruning_full_corpus_tables).
"""
import csv
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from study_tools import csv_text, curves_chart, fmt, replace_block, t_interval, write_or_check  # noqa: E402
from prune_study import order_numbers  # noqa: E402

PAGE = os.path.join(HERE, "..", "pruning-full-corpus.md")


def rows(name):
    with open(os.path.join(HERE, name)) as f:
        return list(csv.DictReader(f))


def main():
    run = rows("runs.csv")[0]
    steps = rows("curves.csv")
    per_order = {}
    for s in steps:
        per_order.setdefault(s["order"], []).append((int(s["pruned"]), float(s["fraction"]), float(s["loss"]),
                                                     float(s["bleu"])))
    imp = order_numbers(per_order["importance"])
    rnd = [order_numbers(c) for o, c in per_order.items() if o.startswith("random")]
    summary, lines = [], []
    for metric in ("valid_loss", "valid_bleu", "test_bleu"):  # the recipe's metrics: one run, no interval
        summary.append({"cell": "model", "metric": metric, "n": 1, "mean": float(run[metric]), "sd": "",
                        "ci95_low": "", "ci95_high": ""})
    for k, name in enumerate(("kept", "loss_half", "bleu_half")):
        n, mean, sd, lo, hi = t_interval([r[k] for r in rnd])
        summary.append({"cell": "random orders", "metric": name, "n": n, "mean": round(mean, 6), "sd": round(sd, 6),
                        "ci95_low": round(lo, 6), "ci95_high": round(hi, 6)})
        summary.append({"cell": "importance", "metric": name, "n": 1, "mean": imp[k], "sd": "", "ci95_low": "",
                        "ci95_high": ""})
    loss_p = (1 + sum(r[1] <= imp[1] for r in rnd)) / (len(rnd) + 1)
    kept_p = (1 + sum(r[0] >= imp[0] for r in rnd)) / (len(rnd) + 1)
    median_loss = statistics.median(r[1] for r in rnd)
    kept_at_or_above = sum(r[0] <= imp[0] for r in rnd)  # random orders that keep no more heads than importance
    if loss_p < 0.05 and kept_at_or_above >= 19:
        verdict = "confirmed"
    elif imp[1] >= median_loss:
        verdict = "refuted"
    else:
        verdict = "unresolved"
    comparisons = [{"comparison": "importance vs 20 random orders: loss at half pruned", "metric": "loss_half",
                    "importance": imp[1], "random_median": round(median_loss, 6), "p_rank": round(loss_p, 6),
                    "verdict": verdict},
                   {"comparison": "importance vs 20 random orders: kept heads", "metric": "kept",
                    "importance": imp[0], "random_median": statistics.median(r[0] for r in rnd),
                    "p_rank": round(kept_p, 6), "verdict": verdict}]
    lines += [f"The model, as `prune` reads it (the last step's weights): validation loss "
              f"{per_order['importance'][0][2]:.3f}, greedy validation BLEU {float(run['full_bleu']):.2f} over 1 275 "
              f"sentences; at the best step {float(run['valid_loss']):.3f} and test BLEU "
              f"{float(run['test_bleu']):.2f} (greedy, 1 299 sentences), "
              f"{run['steps']} steps, {float(run['train_seconds']) / 60:.1f} min of training on {run['cpu']}.", "",
              "| quantity | importance order | 20 random orders: mean ± sd [95% CI] | median | random orders at least "
              "as good | p (rank) |", "|---|---|---|---|---|---|"]
    for k, name, label, better in ((0, "kept", "heads pruned with BLEU within 1 point", ">="),
                                   (1, "loss_half", "validation loss at half pruned (24 of 48)", "<="),
                                   (2, "bleu_half", "BLEU at half pruned", ">=")):
        vals = [r[k] for r in rnd]
        n, mean, sd, lo, hi = t_interval(vals)
        good = sum((v >= imp[k]) if better == ">=" else (v <= imp[k]) for v in vals)
        lines.append(f"| {label} | {imp[k]:.3f} | {mean:.3f} ± {sd:.3f} [{lo:.3f}, {hi:.3f}] | "
                     f"{statistics.median(vals):.3f} | {good} of {len(vals)} | {(1 + good) / (len(vals) + 1):.3f} |")
    lines += ["", f"Verdict against the recipe's criteria: **{verdict}** (loss at half pruned: importance "
              f"{imp[1]:.3f}, random median {median_loss:.3f}, p {loss_p:.3f}; kept heads {imp[0]} against a random "
              f"median of {fmt(statistics.median(r[0] for r in rnd), 1)})."]
    footer = f"1 model x (importance + {len(rnd)} random orders); {run['cpu']}, 1 thread"
    outputs = {
        os.path.join(HERE, "summary.csv"): csv_text(summary),
        os.path.join(HERE, "comparisons.csv"): csv_text(comparisons),
        os.path.join(HERE, "..", "pruning_full_corpus_loss.svg"): curves_chart(
            "Study 7: validation loss as heads are pruned", "validation loss (nats/token)", steps, "loss", 3.0, 7.0,
            0.5, footer),
        os.path.join(HERE, "..", "pruning_full_corpus_bleu.svg"): curves_chart(
            "Study 7: greedy validation BLEU as heads are pruned", "BLEU", steps, "bleu", 0, 4, 0.5, footer),
        PAGE: replace_block(open(PAGE).read(), lines),
    }
    write_or_check(outputs, "pruning-full-corpus.md")


if __name__ == "__main__":
    main()
