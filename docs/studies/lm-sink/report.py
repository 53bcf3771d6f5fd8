#!/usr/bin/python3
"""From runs.csv, curves.csv and control.csv (measure.py): summary.csv, the chart of every head's
sink over training, the page's tables and the verdict against the recipe's criteria.

  /usr/bin/python3 docs/studies/lm-sink/report.py [--check | --judge DIR]

--check writes nothing and exits 1 naming each output that differs (ctest docs.study_lm_sink_tables).
--judge DIR reads DIR's CSVs instead (a replication's) and prints the verdict and each criterion as
JSON, writing nothing.
SciPy (python3-scipy) for the intervals.
"""
import csv
import html
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from study_tools import csv_text, fmt, judge_exit, replace_block, report_source, t_interval, write_or_check  # noqa: E402

PAGE = os.path.join(HERE, "..", "lm-sink.md")
CONDITIONS = [("full", "full attention")] + [(f"w16s{k}", f"window 16 + {k} sink{'s' if k != 1 else ''}") for k in range(5)]
COLOURS = ["#1f77b4", "#d62728", "#2ca02c"]


def rows(name):
    with open(os.path.join(report_source(HERE), name)) as f:
        return list(csv.DictReader(f))


def curve_chart(curves, uniform, width=760, height=380, left=70, top=40, bottom=60, right=20):
    """Every head's attention on <s> over training (thin), the largest head of each seed (thick)."""
    steps = sorted({int(c["step"]) for c in curves})
    hi = 0.2 if max(float(c["sink_mass"]) for c in curves) <= 0.18 else 1.0  # the axis a reader can see
    x = lambda s: left + (width - left - right) * s / steps[-1]
    y = lambda v: top + (hi - v) / hi * (height - top - bottom)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" font-size="12">',
           f'<text x="{width / 2}" y="20" text-anchor="middle" font-size="14">Attention on &lt;s&gt; from every query over '
           'training: every head (thin), the largest per seed (thick)</text>']
    for t in range(6):
        v = hi * t / 5
        out.append(f'<line x1="{left}" x2="{width - right}" y1="{y(v):.1f}" y2="{y(v):.1f}" stroke="#ddd"/>'
                   f'<text x="{left - 6}" y="{y(v) + 4:.1f}" text-anchor="end">{v:.2g}</text>')
    for s in steps[1::2]:
        out.append(f'<text x="{x(s):.1f}" y="{height - bottom + 16}" text-anchor="middle">{s}</text>')
    out.append(f'<text x="{width / 2}" y="{height - bottom + 34}" text-anchor="middle">training step</text>')
    mid = (top + height - bottom) / 2
    out.append(f'<text x="16" y="{mid}" transform="rotate(-90 16 {mid})" text-anchor="middle">attention on &lt;s&gt;</text>')
    seeds = sorted({c["seed"] for c in curves}, key=int)
    for k, (seed, colour) in enumerate(zip(seeds, COLOURS)):
        mine = [c for c in curves if c["seed"] == seed]
        for head in sorted({(c["layer"], c["head"]) for c in mine}):
            pts = sorted((int(c["step"]), float(c["sink_mass"])) for c in mine if (c["layer"], c["head"]) == head)
            out.append('<polyline points="' + " ".join(f"{x(s):.1f},{y(v):.1f}" for s, v in pts) +
                       f'" fill="none" stroke="{colour}" stroke-opacity="0.35" stroke-width="1"/>')
        top_pts = [(s, max(float(c["sink_mass"]) for c in mine if int(c["step"]) == s)) for s in steps]
        out.append('<polyline points="' + " ".join(f"{x(s):.1f},{y(v):.1f}" for s, v in top_pts) +
                   f'" fill="none" stroke="{colour}" stroke-width="2.5"><title>seed {html.escape(seed)}</title></polyline>')
        out.append(f'<text x="{width - right - 4}" y="{top + 16 + 16 * k}" text-anchor="end" fill="{colour}">seed {seed}: '
                   f'largest head at the end {top_pts[-1][1]:.3f}</text>')
    out.append(f'<line x1="{left}" x2="{width - right}" y1="{y(uniform):.1f}" y2="{y(uniform):.1f}" stroke="#888" '
               f'stroke-dasharray="5 4"/><text x="{left + 4}" y="{y(uniform) - 4:.1f}" fill="#888">uniform {uniform:.3f}</text>')
    out.append(f'<text x="{left}" y="{height - 6}" fill="#555">256 held-out windows of 64 characters with &lt;s&gt; first; '
               f'a checkpoint every 250 steps; the axis stops at {hi:g}</text></svg>')
    return "\n".join(out) + "\n"


def verdict(runs):
    """The verdict and the per-criterion seed counts: a head >= 0.5 on <s> (sink), the window
    costing > 0.1 (hurts), one sink within 0.02 of full (restores), a head above 2x uniform (above),
    the window costing <= 0.02 (cheap)."""
    sink = sum(float(r["max_head_sink"]) >= 0.5 for r in runs)
    above = sum(float(r["max_head_sink"]) > 2 * float(r["uniform"]) for r in runs)
    hurts = sum(float(r["loss_w16s0"]) - float(r["loss_full"]) > 0.1 for r in runs)
    restores = sum(float(r["loss_w16s1"]) - float(r["loss_full"]) <= 0.02 for r in runs)
    cheap = sum(float(r["loss_w16s0"]) - float(r["loss_full"]) <= 0.02 for r in runs)
    n = len(runs)
    if sink == n and hurts == n and restores == n:
        result = "confirmed"
    elif above == 0 or cheap == n:
        result = "refuted"
    else:
        result = "unresolved"
    return result, sink, hurts, restores, above, cheap


def main():
    runs, curves, control = rows("runs.csv"), rows("curves.csv"), rows("control.csv")
    summary = []
    keys = ["valid_loss", "valid_bits_per_char", "sink_mass", "max_head_sink"] + [f"loss_{c}" for c, _ in CONDITIONS]
    for key in keys:
        n, mean, sd, a, b = t_interval([float(r[key]) for r in runs])
        summary.append({"cell": "bos", "metric": key, "n": n, "mean": round(mean, 6), "sd": round(sd, 6),
                        "ci95_low": round(a, 6), "ci95_high": round(b, 6)})
    for name, _ in CONDITIONS:
        n, mean, sd, a, b = t_interval([float(r[f"loss_{name}"]) for r in control])
        summary.append({"cell": "control (study 14, no <s>)", "metric": f"loss_{name}", "n": n, "mean": round(mean, 6),
                        "sd": round(sd, 6), "ci95_low": round(a, 6), "ci95_high": round(b, 6)})
    result, sink, hurts, restores, above, cheap = verdict(runs)
    n = len(runs)
    judge_exit(result, [("a head >= 0.5 on <s> at step 3000 in every seed", sink == n, f"{sink} of {n} seeds"),
                        ("the window of 16 without sinks costs > 0.1 nats/char in every seed", hurts == n,
                         f"{hurts} of {n} seeds"),
                        ("one sink brings the loss within 0.02 of full in every seed", restores == n,
                         f"{restores} of {n} seeds"),
                        ("refutes: no head above 2x uniform on <s> in any seed", above == 0, f"above in {above} of {n} seeds"),
                        ("refutes: the window without sinks costs <= 0.02 nats/char in every seed", cheap == n,
                         f"{cheap} of {n} seeds")])
    uniform = float(runs[0]["uniform"])

    lines = ["Per run (runs.csv): the largest head's attention on `<s>` from every query at step 3000 (uniform "
             f"attention: {fmt(uniform, 4)}), the first kept step at which some head reaches 0.3, the mean over "
             "every head and layer (the trainer's `sink_mass`) and the validation loss.", "",
             "| seed | largest head (layer.head) | appears at step | mean over heads | valid loss (nats/char) |",
             "|---|---|---|---|---|"]
    for r in runs:
        lines.append(f'| {r["seed"]} | {fmt(float(r["max_head_sink"]), 3)} ({r["max_head"]}) | '
                     f'{r["sink_appears_step"] or "never"} | {fmt(float(r["sink_mass"]), 3)} | {fmt(float(r["valid_loss"]), 3)} |')
    lines += ["", "StreamingLLM's table: the loss on every window of the held-out text (nats/char) under each "
              "attention, set at evaluation, for these models and for study 14's (the same model trained "
              "without `<s>`, the control).", "",
              "| attention | " + " | ".join(f"seed {r['seed']}" for r in runs) + " | mean | control: " +
              " | ".join(f"seed {r['seed']}" for r in control) + " |",
              "|---|" + "---|" * (len(runs) + 1 + len(control))]
    for name, label in CONDITIONS:
        mean = next(s for s in summary if s["cell"] == "bos" and s["metric"] == f"loss_{name}")["mean"]
        lines.append(f"| {label} | " + " | ".join(fmt(float(r[f'loss_{name}']), 3) for r in runs) + f" | {fmt(mean, 3)} | " +
                     " | ".join(fmt(float(r[f'loss_{name}']), 3) for r in control) + " |")
    lines += ["", f"**Verdict: {result}.** A head >= 0.5 on `<s>` at step 3000 in {sink} of {len(runs)} seeds; the "
              f"window without sinks costs more than 0.1 nats/char in {hurts} of {len(runs)}; one sink brings it "
              f"within 0.02 of full in {restores} of {len(runs)} (confirms at all three on each; refutes when no head "
              "passes 2x uniform or the window costs at most 0.02 in every seed)."]
    write_or_check({os.path.join(HERE, "summary.csv"): csv_text(summary),
                    os.path.join(HERE, "comparisons.csv"): "comparison,metric,difference,ci95_low,ci95_high,welch_t,df,p,p_holm\n",
                    os.path.join(HERE, "..", "lm_sink_curves.svg"): curve_chart(curves, uniform),
                    PAGE: replace_block(open(PAGE).read(), lines)}, os.path.basename(PAGE))


if __name__ == "__main__":
    main()
