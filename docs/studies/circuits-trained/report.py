#!/usr/bin/python3
"""From runs.csv, heads.csv and recall.csv (measure.py): summary.csv, comparisons.csv (none declared:
the header), the chart, the page's tables and the verdict against recipe.ini's criteria (A1, A2, A3, B).

  /usr/bin/python3 docs/studies/circuits-trained/report.py [--check | --judge DIR]

--check writes nothing and exits 1 naming each output that differs (ctest
docs.study_circuits_trained_tables). --judge DIR reads DIR's CSVs instead (a replication's) and
prints the verdict and each criterion as JSON, writing nothing. SciPy (python3-scipy) for the intervals.
"""
import csv
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from study_tools import (csv_text, fmt, judge_exit, replace_block, report_source, strip_chart, t_interval,  # noqa: E402
                         with_reference_line, write_or_check)

PAGE = os.path.join(HERE, "..", "circuits-trained.md")


def main():
    source = report_source(HERE)
    with open(os.path.join(source, "runs.csv")) as f:
        per_run = list(csv.DictReader(f))
    with open(os.path.join(source, "heads.csv")) as f:
        runs = list(csv.DictReader(f))
    with open(os.path.join(source, "recall.csv")) as f:
        recall = list(csv.DictReader(f))
    seeds = sorted({int(r["seed"]) for r in runs})
    per_seed, a3_heads, a3_total = [], 0, 0
    for seed in seeds:
        rows = [r for r in runs if int(r["seed"]) == seed]
        layer0 = [r for r in rows if r["layer"] == "0"]
        layer1 = [r for r in rows if r["layer"] == "1"]
        previous = {r["head"] for r in layer0 if float(r["previous_token"]) > 0.4}
        induction = [r for r in layer1 if float(r["induction"]) > 0.4]
        others = [r for r in layer1 if float(r["induction"]) <= 0.4]
        share_i = sum(float(r["patch_share"]) for r in induction)
        a1 = share_i >= 0.5 and all(float(r["patch_share"]) >= 0.1 for r in induction) and \
            all(float(r["patch_share"]) < 0.1 for r in others)
        direct = float(layer1[0]["answer_logit"]) - float(layer1[0]["constant_term"])
        dla_share = sum(float(r["dla_term"]) for r in layer1) / direct
        a2 = all(float(r["dla_term"]) > 0 for r in induction) and dla_share >= 0.8
        partnered = [r for r in induction if r["k_writer"] in previous]
        a3_heads += len(partnered)
        a3_total += len(induction)
        rec = [r for r in recall if int(r["seed"]) == seed]
        top0 = max(rec, key=lambda r: float(r["slot0_share"]))
        top1 = max(rec, key=lambda r: float(r["slot1_share"]))
        b = top0["head"] != top1["head"] and float(top0["slot0_share"]) >= 0.3 and float(top1["slot1_share"]) >= 0.3
        layer0_max = max(abs(float(r["patch_share"])) for r in layer0)
        per_seed.append({"seed": seed, "induction_heads": len(induction), "previous_heads": len(previous),
                         "share_induction": share_i, "layer0_max_abs_share": layer0_max, "dla_layer1_share": dla_share,
                         "a1": a1, "a2": a2, "a3": f"{len(partnered)}/{len(induction)}",
                         "recall_top0": f'h{top0["head"]} {float(top0["slot0_share"]):.2f}',
                         "recall_top1": f'h{top1["head"]} {float(top1["slot1_share"]):.2f}', "b": b,
                         })

    summary = []  # the recipe's metrics (runs.csv), then the tools' per-seed measures (heads.csv)
    columns = {key: [float(r[key]) for r in per_run] for key in ("repeated_accuracy", "repeated_loss", "first_half_loss")}
    columns.update({key: [s[key] for s in per_seed] for key in ("share_induction", "layer0_max_abs_share", "dla_layer1_share")})
    for key, values in columns.items():
        n, mean, sd, lo, hi = t_interval(values)
        summary.append({"cell": "2-layer", "metric": key, "n": n, "mean": round(mean, 6), "sd": round(sd, 6),
                        "ci95_low": round(lo, 6), "ci95_high": round(hi, 6)})
    count = lambda key: sum(bool(s[key]) for s in per_seed)
    n = len(per_seed)
    if count("a1") == n and count("a2") == n and count("b") == n and a3_heads == a3_total:
        verdict = "confirmed"
    elif n - count("a1") >= 3 or n - count("a2") >= 3:
        verdict = "refuted"
    else:
        verdict = "unresolved (the recipe's \"agreement with the exceptions named\")"
    judge_exit(verdict, [("A1: patching agrees with the probes in every seed", count("a1") == n, f"{count('a1')} of {n} seeds"),
                         ("A2: attribution agrees in every seed", count("a2") == n, f"{count('a2')} of {n} seeds"),
                         ("A3: every induction head's strongest K-writer is a previous-token head", a3_heads == a3_total,
                          f"{a3_heads} of {a3_total} heads"),
                         ("B: recall's two slots have different top heads, each >= 0.3, in every seed", count("b") == n,
                          f"{count('b')} of {n} seeds"),
                         ("refutes: A1 or A2 fails in 3 or more seeds", n - count("a1") >= 3 or n - count("a2") >= 3,
                          f"A1 fails in {n - count('a1')}, A2 in {n - count('a2')} of {n} seeds")])

    by = {r["metric"]: r for r in summary}
    ci = lambda k, d=2: f'{fmt(by[k]["mean"], d)} [{fmt(by[k]["ci95_low"], d)}, {fmt(by[k]["ci95_high"], d)}]'
    lines = ["| seed | induction heads (layer 1) | previous-token heads (layer 0) | their patching share | largest layer-0 share | "
             "layer-1 terms / (logit - constant) | A1 | A2 | A3 (partner is previous-token) | recall slot 0 top | slot 1 top | B |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    yes = lambda v: "yes" if v else "**no**"
    for s in per_seed:
        lines.append(f'| {s["seed"]} | {s["induction_heads"]} | {s["previous_heads"]} | {fmt(s["share_induction"])} | '
                     f'{fmt(s["layer0_max_abs_share"])} | {fmt(s["dla_layer1_share"])} | {yes(s["a1"])} | {yes(s["a2"])} | '
                     f'{s["a3"]} | {s["recall_top0"]} | {s["recall_top1"]} | {yes(s["b"])} |')
    lines += ["", f"Mean [95% CI] over the {n} seeds: the induction heads' patching share {ci('share_induction')}; the layer-1 "
              f"heads' direct terms {ci('dla_layer1_share')} of the answer's logit less the constant term; the largest "
              f"layer-0 share (absolute) {ci('layer0_max_abs_share')}. A1 holds in {count('a1')} of {n} seeds, A2 in "
              f"{count('a2')} of {n}, A3 for {a3_heads} of {a3_total} induction heads, B in {count('b')} of {n}. "
              f"**Verdict: {verdict}.**"]
    page = open(PAGE).read()
    page = replace_block(page, lines)

    cells = [("induction heads", "layer 1", "#1f77b4", [float(r["patch_share"]) for r in runs
                                                      if r["layer"] == "1" and float(r["induction"]) > 0.4]),
             ("other heads", "layer 1", "#7f7f7f", [float(r["patch_share"]) for r in runs
                                                  if r["layer"] == "1" and float(r["induction"]) <= 0.4]),
             ("previous-token", "layer 0", "#2ca02c", [float(r["patch_share"]) for r in runs
                                                      if r["layer"] == "0" and float(r["previous_token"]) > 0.4]),
             ("other heads", "layer 0", "#9467bd", [float(r["patch_share"]) for r in runs
                                                  if r["layer"] == "0" and float(r["previous_token"]) <= 0.4])]
    cells = [c for c in cells if c[3]]  # no layer-1 head outside the induction heads in these seeds
    chart = strip_chart("Recovered share per head, denoising patching, 5 seeds (every head a dot)", "recovered share",
                        cells, -0.4, 0.6, 0.2, "study 17: induction probe, 64 rows; the role labels from headlab heads (> 0.4)")
    chart = with_reference_line(chart, 0.1, -0.4, 0.6, "A1's 0.1")
    write_or_check({os.path.join(HERE, "summary.csv"): csv_text(summary),
                    os.path.join(HERE, "comparisons.csv"): "comparison,metric,difference,ci95_low,ci95_high,t,df,p,p_holm\n",
                    os.path.join(HERE, "..", "circuits_patch_shares.svg"): chart, PAGE: page}, "circuits-trained.md")


if __name__ == "__main__":
    main()
