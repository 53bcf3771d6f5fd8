#!/usr/bin/python3
"""From runs.csv and heads.csv (measure.py): summary.csv, the chart of every head's role scores,
the page's tables and the verdict per role against the recipe's criteria.

  /usr/bin/python3 docs/studies/text-head-roles/report.py [--check | --judge DIR]

--check writes nothing and exits 1 naming each output that differs (ctest
docs.study_text_head_roles_tables). --judge DIR reads DIR's runs.csv and heads.csv instead (a
replication's) and prints the verdict and each criterion as JSON, writing nothing. SciPy (python3-scipy) for the intervals.
"""
import csv
import math
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from study_tools import (csv_text, fmt, judge_exit, replace_block, report_source, strip_chart, t_interval,  # noqa: E402
                         with_reference_line, write_or_check)

PAGE = os.path.join(HERE, "..", "text-head-roles.md")
ROLES = [("previous_token", "previous-token"), ("delimiter", "delimiter")]
CONTEXT = 64


def role_verdict(best_per_seed):
    if all(b > 0.4 for b in best_per_seed):
        return "confirmed"
    if sum(b < 0.2 for b in best_per_seed) >= 2:
        return "refuted"
    return "unresolved"


def main():
    source = report_source(HERE)
    with open(os.path.join(source, "runs.csv")) as f:
        runs = list(csv.DictReader(f))
    with open(os.path.join(source, "heads.csv")) as f:
        heads = list(csv.DictReader(f))
    uniform_entropy = sum(math.log(i + 1) for i in range(CONTEXT)) / CONTEXT  # mean over rows of ln(visible keys)
    summary = []
    for key in ("valid_loss", "valid_bits_per_char", "sink_mass", "best_previous_token", "best_delimiter"):
        n, mean, sd, a, b = t_interval([float(r[key]) for r in runs])
        summary.append({"cell": "default", "metric": key, "n": n, "mean": round(mean, 6), "sd": round(sd, 6),
                        "ci95_low": round(a, 6), "ci95_high": round(b, 6)})
    best = {role: [float(r[f"best_{role}"]) for r in runs] for role, _ in ROLES}  # the best head per seed
    verdicts = {role: role_verdict(best[role]) for role, _ in ROLES}
    both = ("confirmed" if all(v == "confirmed" for v in verdicts.values()) else
            "refuted" if any(v == "refuted" for v in verdicts.values()) else "unresolved")
    judge_exit(both, [criterion for role, label in ROLES for criterion in (
        (f"{label}: the best head above 0.4 in every seed", verdicts[role] == "confirmed",
         ", ".join(fmt(b, 3) for b in best[role])),
        (f"refutes {label}: the best head below 0.2 in 2 or more seeds", verdicts[role] == "refuted",
         f"{sum(b < 0.2 for b in best[role])} of {len(runs)} seeds"))])

    u_prev = float(runs[0]["uniform_previous_token"])
    lines = ["Per head, on 256 windows of 64 characters of the held-out text (heads.csv). Uniform causal attention "
             f"gives {fmt(u_prev, 4)} on the previous token and on the first position, "
             f"{fmt(float(runs[0]['uniform_delimiter']), 4)} on the latest delimiter, and an entropy of "
             f"{fmt(uniform_entropy, 2)} nats; **bold**: above 0.4.", "",
             "| seed | layer | head | previous-token | delimiter | entropy (nats) | first-position (sink) |",
             "|---|---|---|---|---|---|---|"]
    bold = lambda v: f"**{fmt(v, 3)}**" if v > 0.4 else fmt(v, 3)
    for h in heads:
        lines.append(f'| {h["seed"]} | {h["layer"]} | {h["head"]} | {bold(float(h["previous_token"]))} | '
                     f'{bold(float(h["delimiter"]))} | {fmt(float(h["entropy"]), 2)} | {bold(float(h["sink_mass"]))} |')
    lines += ["", "Per run (runs.csv): heads above 0.4 on each role, the best head's score, and the validation loss "
              "beside a count bigram on the same split.", "",
              "| seed | previous-token heads | best | delimiter heads | best | valid loss (nats/char) | bigram | "
              "sink mass (all heads) |", "|---|---|---|---|---|---|---|---|"]
    for r in runs:
        lines.append(f'| {r["seed"]} | {r["previous_token_heads"]} of 8 | {fmt(float(r["best_previous_token"]), 3)} | '
                     f'{r["delimiter_heads"]} of 8 | {fmt(float(r["best_delimiter"]), 3)} | {fmt(float(r["valid_loss"]), 3)} | '
                     f'{fmt(float(r["bigram_loss"]), 3)} | {fmt(float(r["sink_mass"]), 3)} |')
    loss = next(s for s in summary if s["metric"] == "valid_loss")
    lines += ["", f'Validation loss, 3 seeds: {fmt(loss["mean"], 3)} ± {fmt(loss["sd"], 3)} nats/char '
              f'[{fmt(loss["ci95_low"], 3)}, {fmt(loss["ci95_high"], 3)}], against the count bigram\'s '
              f'{fmt(float(runs[0]["bigram_loss"]), 3)} (summary.csv).', ""]
    for role, label in ROLES:
        lines.append(f"**{label}: {verdicts[role]}.** The best head per seed: " + ", ".join(fmt(b, 3) for b in best[role]) +
                     " (confirms when all three are above 0.4; refutes when two or more stay below 0.2).")
        lines.append("")
    lines.append(f"**Verdict on C6 (both roles recur in every seed): {both}.**")

    cells = [(label, "every head, 3 seeds", colour, [float(h[role]) for h in heads])
             for (role, label), colour in zip(ROLES, ("#1f77b4", "#2ca02c"))]
    cells.append(("first position (sink)", "every head, 3 seeds", "#ff7f0e", [float(h["sink_mass"]) for h in heads]))
    chart = strip_chart("Role scores of every head of three character lms, on held-out text (every head a dot)",
                        "score (attention weight)", cells, 0.0, 1.0, 0.1,
                        "grey dashed: uniform causal attention on the previous token and the first position (on the latest delimiter: 0.049); red dashed: 0.4")
    chart = with_reference_line(chart, u_prev, 0.0, 1.0, f"uniform {fmt(u_prev, 3)}", "#888")
    chart = with_reference_line(chart, 0.4, 0.0, 1.0, "0.4", "#d62728")
    no_comparisons = "comparison,metric,difference,ci95_low,ci95_high,welch_t,df,p,p_holm\n"  # one cell: none declared
    write_or_check({os.path.join(HERE, "summary.csv"): csv_text(summary),
                    os.path.join(HERE, "comparisons.csv"): no_comparisons,
                    os.path.join(HERE, "..", "text_head_roles.svg"): chart,
                    PAGE: replace_block(open(PAGE).read(), lines)}, os.path.basename(PAGE))


if __name__ == "__main__":
    main()
