#!/usr/bin/python3
"""From runs.csv and stats.csv (measure.py): summary.csv, comparisons.csv, the chart, the page's
tables and the verdict against bench-recipe.ini's criteria.

  /usr/bin/python3 docs/studies/free-lunch/report.py [--check]

--check writes nothing and exits 1 naming each output that differs (ctest
docs.study_free_lunch_tables). SciPy and NumPy (python3-scipy) for the intervals, tests and the fit.
"""
import csv
import math
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from study_tools import csv_text, fmt, holm, replace_block, t_interval, welch, write_or_check  # noqa: E402
import numpy as np  # noqa: E402  (after study_tools: it skips without SciPy, which brings NumPy)

PAGE = os.path.join(HERE, "..", "free-lunch.md")
D = 128
COLOURS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd"]


def chart(seqs, heads, cells):
    """ms/step against h (log2 axis), one series per T, each repeat a dot, the means joined; log y."""
    width, height, left, right, top, bottom = 720, 400, 70, 150, 40, 60
    all_ms = [v for vals in cells.values() for v in vals]
    lo, hi = math.log10(min(all_ms) * 0.8), math.log10(max(all_ms) * 1.25)
    x = lambda h: left + (width - left - right) * math.log2(h) / math.log2(max(heads))
    y = lambda ms: top + (height - top - bottom) * (hi - math.log10(ms)) / (hi - lo)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" font-size="12">',
           f'<text x="{width / 2}" y="20" text-anchor="middle" font-size="14">One attention layer, forward + backward, '
           f'D = {D}, 2048 tokens a step, 1 thread</text>']
    for tick in (5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000):
        if lo <= math.log10(tick) <= hi:
            out.append(f'<line x1="{left}" x2="{width - right}" y1="{y(tick):.1f}" y2="{y(tick):.1f}" stroke="#ddd"/>'
                       f'<text x="{left - 6}" y="{y(tick) + 4:.1f}" text-anchor="end">{tick}</text>')
    for h in heads:
        out.append(f'<text x="{x(h):.1f}" y="{height - bottom + 18}" text-anchor="middle">{h}</text>')
    out.append(f'<text x="{(left + width - right) / 2}" y="{height - bottom + 38}" text-anchor="middle">heads h (head size {D}/h)</text>')
    out.append(f'<text x="16" y="{height / 2}" transform="rotate(-90 16 {height / 2})" text-anchor="middle">ms per step (log)</text>')
    for k, t in enumerate(seqs):
        colour = COLOURS[k % len(COLOURS)]
        means = [(h, sum(cells[(t, h)]) / len(cells[(t, h)])) for h in heads]
        # The claim's baseline: the fewest heads' mean (h = 1 in the recipe), the time it predicts at every h.
        out.append(f'<line x1="{left}" x2="{width - right}" y1="{y(means[0][1]):.1f}" y2="{y(means[0][1]):.1f}" '
                   f'stroke="{colour}" stroke-width="1" stroke-dasharray="5,4" stroke-opacity="0.6"/>')
        out.append('<polyline fill="none" stroke="%s" stroke-width="1.5" points="%s"/>'
                   % (colour, " ".join(f"{x(h):.1f},{y(m):.1f}" for h, m in means)))
        for h in heads:
            for j, v in enumerate(cells[(t, h)]):
                out.append(f'<circle cx="{x(h) - 4 + 4 * j:.1f}" cy="{y(v):.1f}" r="2.5" fill="{colour}" fill-opacity="0.7">'
                           f'<title>T {t}, h {h}: {v:.1f} ms</title></circle>')
        out.append(f'<text x="{width - right + 8}" y="{y(means[-1][1]) + 4:.1f}" fill="{colour}">T = {t}</text>')
    out.append(f'<text x="8" y="{height - 8}" fill="#555">every process a dot (3 a cell); lines join the means; '
               f'dashed: h = {heads[0]}, the time the claim predicts for every h</text></svg>')
    return "\n".join(out) + "\n"


def main():
    with open(os.path.join(HERE, "runs.csv")) as f:
        runs = list(csv.DictReader(f))
    with open(os.path.join(HERE, "stats.csv")) as f:
        stats = list(csv.DictReader(f))
    seqs = sorted({int(r["seq"]) for r in runs})
    heads = sorted({int(r["heads"]) for r in runs})
    cells = {(t, h): [float(r["ms"]) for r in runs if int(r["seq"]) == t and int(r["heads"]) == h] for t in seqs for h in heads}
    summary = []
    for t in seqs:
        for h in heads:
            n, mean, sd, a, b = t_interval(cells[(t, h)])
            summary.append({"seq": t, "heads": h, "n": n, "mean_ms": round(mean, 4), "sd_ms": round(sd, 4),
                            "ci95_low": round(a, 4), "ci95_high": round(b, 4)})
    mean = {(s["seq"], s["heads"]): s["mean_ms"] for s in summary}
    tests = [welch(cells[(t, heads[-1])], cells[(t, heads[0])]) for t in seqs]
    adjusted = holm([x[5] for x in tests])
    comparisons = []
    for t, (diff, lo, hi, tt, df, p), ph in zip(seqs, tests, adjusted):
        ratio = mean[(t, heads[-1])] / mean[(t, heads[0])]
        spread = max(mean[(t, h)] for h in heads) / min(mean[(t, h)] for h in heads) - 1
        comparisons.append({"comparison": f"T {t}: h {heads[-1]} vs h {heads[0]}", "metric": "ms/step",
                            "difference": round(diff, 4), "ci95_low": round(lo, 4), "ci95_high": round(hi, 4),
                            "welch_t": round(tt, 4), "df": round(df, 3), "p": p, "p_holm": ph, "ratio": round(ratio, 4),
                            "spread_over_h": round(spread, 4)})
    # The fit over the cell means: ms = a + b T + c h T (tokens per step fixed).
    design = np.array([[1.0, t, h * t] for t in seqs for h in heads])
    target = np.array([mean[(t, h)] for t in seqs for h in heads])
    (a, b, c), *_ = np.linalg.lstsq(design, target, rcond=None)
    residual = float(np.max(np.abs(design @ np.array([a, b, c]) - target) / target))
    crossover = {}
    for h in (heads[0], 8):
        line = np.polyfit(seqs, [mean[(t, h)] for t in seqs], 1)  # ms = slope T + intercept
        crossover[h] = line[1] / line[0]
    flat_params = len({s["parameters"] for s in stats}) == 1
    flat_flops = all(len({s["forward_flops"] for s in stats if s["seq"] == str(t)}) == 1 for t in seqs)
    formulas = all(s["parameters"] == s["parameters_formula"] and s["forward_flops"] == s["forward_flops_formula"]
                   for s in stats)
    refuted = any(c_["p_holm"] < 0.05 and c_["ratio"] > 1.10 for c_ in comparisons)
    confirmed = all(c_["spread_over_h"] <= 0.10 for c_ in comparisons)
    verdict = "confirmed" if confirmed else "refuted" if refuted else "unresolved"

    lines = [f"`headlab stats` for every (h, T): parameters {stats[0]['parameters']} at every h "
             f"({'equal' if flat_params else 'NOT equal'} across h; 4 D^2 + 4 D = {stats[0]['parameters_formula']}), "
             f"forward FLOPs per sequence {'equal across h at each T' if flat_flops else 'NOT equal across h'} "
             f"and {'equal to' if formulas else 'NOT equal to'} 8 T D^2 + 4 T^2 D (stats.csv).", "",
             "Milliseconds per step, mean ± sd of 3 processes (each the median of 20 steps), and the ratio to one head "
             "(summary.csv):", "", "| T | " + " | ".join(f"h = {h} (d {D // h})" for h in heads) + " | h = 32 / h = 1 |",
             "|---|" + "---|" * (len(heads) + 1)]
    for t, c_ in zip(seqs, comparisons):
        lines.append(f"| {t} | " + " | ".join(
            f"{fmt(mean[(t, h)], 1)} ± {fmt(next(s['sd_ms'] for s in summary if s['seq'] == t and s['heads'] == h), 1)}"
            for h in heads) + f" | {fmt(c_['ratio'], 2)} |")
    lines += ["", f"The declared comparisons, h = {heads[-1]} minus h = {heads[0]} (ms), Welch, Holm over the {len(seqs)} "
              "sequence lengths (comparisons.csv):", "",
              "| T | difference [95% CI] | Welch t (df) | Holm p | spread over h, (max - min) / min |", "|---|---|---|---|---|"]
    for t, c_ in zip(seqs, comparisons):
        lines.append(f"| {t} | {fmt(c_['difference'], 1)} [{fmt(c_['ci95_low'], 1)}, {fmt(c_['ci95_high'], 1)}] | "
                     f"{fmt(c_['welch_t'])} ({fmt(c_['df'], 1)}) | {c_['p_holm']:.1e} | {fmt(100 * c_['spread_over_h'], 0)}% |")
    lines += ["", f"Fit over the {len(target)} cell means, ms = a + b T + c h T: a = {a:.2f} ms, b = {b:.4f} ms per "
              f"token of T, c = {c:.5f} ms per head and token of T (largest relative residual {100 * residual:.0f}%). "
              f"At T = 1024 the c term is {c * 1024:.1f} ms per head: {100 * c * 1024 * heads[-1] / mean[(1024, heads[-1])]:.0f}% "
              f"of the h = {heads[-1]} step.", "",
              f"Crossover (the T-proportional part of the step equals the rest, ms = a + b T over T): "
              f"T* = {crossover[heads[0]]:.0f} at h = 1, {crossover[8]:.0f} at h = 8; the FLOP formula's T = 2 D = {2 * D}.", "",
              f"**Verdict: {verdict}.** " + ("Every h within 10% of one head at every T." if confirmed else
                                             f"h = {heads[-1]} is more than 10% slower than h = {heads[0]} with Holm "
                                             f"p < 0.05 at {sum(c_['p_holm'] < 0.05 and c_['ratio'] > 1.10 for c_ in comparisons)} "
                                             f"of {len(seqs)} T ({min(c_['ratio'] for c_ in comparisons):.1f}x to "
                                             f"{max(c_['ratio'] for c_ in comparisons):.1f}x)."
                                             if refuted else "Neither criterion is met.")]
    write_or_check({os.path.join(HERE, "summary.csv"): csv_text(summary),
                    os.path.join(HERE, "comparisons.csv"): csv_text(comparisons),
                    os.path.join(HERE, "..", "free_lunch_ms.svg"): chart(seqs, heads, cells),
                    PAGE: replace_block(open(PAGE).read(), lines)}, os.path.basename(PAGE))


if __name__ == "__main__":
    main()
