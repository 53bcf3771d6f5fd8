#!/usr/bin/python3
"""From runs.csv and curves.csv (measure.py): summary.csv, comparisons.csv, the chart of every run's
curves over training, the page's tables and the verdict against the recipe's criteria.

  /usr/bin/python3 docs/studies/induction-phase-change/report.py [--check]

--check writes nothing and exits 1 naming each output that differs (ctest
docs.study_induction_phase_change_tables). SciPy (python3-scipy) for the intervals and the test.
"""
import csv
import html
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from study_tools import csv_text, fmt, holm, replace_block, t_interval, welch, write_or_check  # noqa: E402

PAGE = os.path.join(HERE, "..", "induction-phase-change.md")
CELLS = ["2-layer", "1-layer", "2-layer-fine"]
METRICS = [("repeated_accuracy", "repeated-half accuracy", 3), ("repeated_loss", "repeated-half loss (nats)", 3)]
INTERVAL = 25


def curve_chart(curves, runs):
    """One panel per run: repeated-half loss (black, left axis 0-5 nats), best previous-token score
    of layer 0 (orange) and best induction score of the last layer (blue), 0-1 on the right; the
    loss drop and the induction jump marked."""
    panel_w, panel_h, left, top = 250, 150, 40, 50
    cols, n = 5, len(runs)
    rows = (n + cols - 1) // cols
    width, height = cols * panel_w + 20, rows * (panel_h + 50) + 60
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" font-size="11">',
           f'<text x="{width / 2}" y="18" text-anchor="middle" font-size="14">Every run over training: repeated-half '
           'loss (black, 0-5 nats), best previous-token score of layer 0 (orange) and induction score of the last '
           'layer (blue, 0-1)</text>']
    for k, run in enumerate(runs):
        x0 = 10 + (k % cols) * panel_w + left
        y0 = top + (k // cols) * (panel_h + 50)
        w, h = panel_w - left - 10, panel_h
        pts = [c for c in curves if c["cell"] == run["cell"] and c["seed"] == run["seed"]]
        max_step = max(int(c["step"]) for c in pts)
        sx = lambda s: x0 + w * int(s) / max_step
        out.append(f'<rect x="{x0}" y="{y0}" width="{w}" height="{h}" fill="none" stroke="#ccc"/>')
        out.append(f'<text x="{x0 + w / 2}" y="{y0 - 4}" text-anchor="middle">{html.escape(run["cell"])}, seed {run["seed"]}</text>')
        for key, colour, scale in (("repeated_loss", "#000", 5.0), ("best_previous_token_l0", "#ff7f0e", 1.0),
                                   ("best_induction_last", "#1f77b4", 1.0)):
            path = " ".join(f'{sx(c["step"]):.1f},{y0 + h - h * min(float(c[key]), scale) / scale:.1f}' for c in pts)
            out.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="1.5"/>')
        for key, colour in (("loss_drop_step", "#000"), ("induction_jump_step", "#1f77b4")):
            out.append(f'<line x1="{sx(run[key]):.1f}" x2="{sx(run[key]):.1f}" y1="{y0}" y2="{y0 + h}" stroke="{colour}" '
                       'stroke-dasharray="3 3"/>')
        out.append(f'<text x="{x0}" y="{y0 + h + 14}">0</text><text x="{x0 + w}" y="{y0 + h + 14}" text-anchor="end">'
                   f'{max_step} steps</text>')
    out.append(f'<text x="10" y="{height - 10}" fill="#555">dashed: the loss drop (black) and the induction jump (blue) '
               f'of the run; evaluations every 25 steps (2-layer-fine: every 5, its first 400 steps)</text></svg>')
    return "\n".join(out) + "\n"


def verdict(two):
    close = [abs(int(r["drop_minus_jump"])) <= INTERVAL for r in two]
    prev_first = [r["previous_token_step"] != "" and int(r["previous_token_step"]) <= int(r["induction_jump_step"])
                  for r in two]
    sharp = [r["sharpness"] != "" and float(r["sharpness"]) >= 0.5 for r in two]
    far = sum(abs(int(r["drop_minus_jump"])) > 4 * INTERVAL for r in two)
    gradual = any(r["sharpness"] == "" or float(r["sharpness"]) < 0.25 for r in two)
    if all(close) and all(prev_first) and all(sharp):
        return "confirmed", close, prev_first, sharp
    if far >= 3 or gradual:
        return "refuted", close, prev_first, sharp
    return "unresolved", close, prev_first, sharp


def order_verdict(fine):
    """The 2-layer-fine criterion: does the previous-token score reach 0.4 before the induction score?"""
    before = sum(r["previous_token_step"] != "" and r["induction_formed_step"] != "" and
                 int(r["previous_token_step"]) + 5 <= int(r["induction_formed_step"]) for r in fine)
    not_before = sum(r["induction_formed_step"] != "" and (r["previous_token_step"] == "" or
                     int(r["induction_formed_step"]) <= int(r["previous_token_step"])) for r in fine)
    if before >= 4:
        return "confirmed", before
    if not_before >= 3:
        return "refuted", before
    return "unresolved", before


def main():
    with open(os.path.join(HERE, "runs.csv")) as f:
        runs = list(csv.DictReader(f))
    with open(os.path.join(HERE, "curves.csv")) as f:
        curves = list(csv.DictReader(f))
    by_cell = {c: [r for r in runs if r["cell"] == c] for c in CELLS}
    summary = []
    for cell in CELLS:
        for key, _, _ in METRICS:
            n, mean, sd, a, b = t_interval([float(r[key]) for r in by_cell[cell]])
            summary.append({"cell": cell, "metric": key, "n": n, "mean": round(mean, 6), "sd": round(sd, 6),
                            "ci95_low": round(a, 6), "ci95_high": round(b, 6)})
    diff, lo, hi, t, df, p = welch([float(r["repeated_accuracy"]) for r in by_cell["2-layer"]],
                                   [float(r["repeated_accuracy"]) for r in by_cell["1-layer"]])
    ph = holm([p])[0]
    comparisons = [{"comparison": "2-layer vs 1-layer", "metric": "repeated-half accuracy", "difference": round(diff, 6),
                    "ci95_low": round(lo, 6), "ci95_high": round(hi, 6), "welch_t": round(t, 4), "df": round(df, 3),
                    "p": p, "p_holm": ph, "verdict": "confirmed" if ph < 0.05 and lo > 0.2 else "unresolved"}]
    result, close, prev_first, sharp = verdict(by_cell["2-layer"])

    lines = ["Per run (runs.csv): the events the recipe declares. Steps are evaluation steps (every 25); "
             "the loss drop is the interval with the largest fall of the repeated-half loss, the induction jump the "
             "interval with the largest rise of the best induction score (last layer), previous-token the first "
             "evaluation with a layer-0 previous-token score >= 0.4, sharpness the share of the whole fall of the "
             "loss within two intervals either side of the drop.", "",
             "| cell | seed | loss drop at | fall (nats) | induction jump at | rise | drop - jump | previous-token >= 0.4 at | "
             "induction >= 0.4 at | sharpness | final accuracy |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for cell in CELLS[:2]:
        for r in by_cell[cell]:
            lines.append(f'| {cell} | {r["seed"]} | {r["loss_drop_step"]} | {fmt(float(r["loss_drop"]), 3)} | '
                         f'{r["induction_jump_step"]} | {fmt(float(r["induction_jump"]), 3)} | {r["drop_minus_jump"]} | '
                         f'{r["previous_token_step"] or "never"} | {r["induction_formed_step"] or "never"} | '
                         f'{fmt(float(r["sharpness"]), 2) if r["sharpness"] else "-"} | {fmt(float(r["repeated_accuracy"]), 3)} |')
    order, before = order_verdict(by_cell["2-layer-fine"])
    lines += ["", "2-layer-fine (the same training, evaluated every 5 steps for its first 400 steps): when each "
              "score first reaches 0.4.", "",
              "| seed | previous-token >= 0.4 at | induction >= 0.4 at | induction - previous-token (steps) | "
              "loss drop at | induction jump at |", "|---|---|---|---|---|---|"]
    for r in by_cell["2-layer-fine"]:
        gap = (int(r["induction_formed_step"]) - int(r["previous_token_step"])
               if r["previous_token_step"] != "" and r["induction_formed_step"] != "" else "")
        lines.append(f'| {r["seed"]} | {r["previous_token_step"] or "never"} | {r["induction_formed_step"] or "never"} | '
                     f'{gap} | {r["loss_drop_step"]} | {r["induction_jump_step"]} |')
    lines += ["", "Per cell, 5 seeds, at the end of training (2-layer-fine: at step 400): mean ± sd [95% t-interval] "
              "(summary.csv):", "",
              "| cell | " + " | ".join(label for _, label, _ in METRICS) + " |", "|---|" + "---|" * len(METRICS)]
    for cell in CELLS:
        row = [s for s in summary if s["cell"] == cell]
        lines.append(f"| {cell} | " + " | ".join(
            f'{fmt(s["mean"], d)} ± {fmt(s["sd"], d)} [{fmt(s["ci95_low"], d)}, {fmt(s["ci95_high"], d)}]'
            for (_, _, d), s in zip(METRICS, row)) + " |")
    c = comparisons[0]
    lines += ["", f'The control comparison (comparisons.csv): 2-layer minus 1-layer repeated-half accuracy '
              f'{fmt(c["difference"], 3)} [{fmt(c["ci95_low"], 3)}, {fmt(c["ci95_high"], 3)}], Welch p {c["p"]:.1e}.', "",
              f"**Verdict: {result}.** Criteria (2-layer, 5 seeds): loss drop within one interval of the induction "
              f"jump in {sum(close)} of 5; previous-token head formed no later than the jump in {sum(prev_first)} of 5; "
              f"sharpness >= 0.5 in {sum(sharp)} of 5.", "",
              f"**Verdict on the order (2-layer-fine): {order}.** The previous-token score reaches 0.4 at least one "
              f"evaluation (5 steps) before the induction score in {before} of 5 seeds (confirms at 4 or more; "
              f"refutes when the induction score is first or level in 3 or more)."]
    write_or_check({os.path.join(HERE, "summary.csv"): csv_text(summary),
                    os.path.join(HERE, "comparisons.csv"): csv_text(comparisons),
                    os.path.join(HERE, "..", "induction_phase_change.svg"): curve_chart(curves, runs),
                    PAGE: replace_block(open(PAGE).read(), lines)}, os.path.basename(PAGE))


if __name__ == "__main__":
    main()
