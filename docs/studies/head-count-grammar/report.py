#!/usr/bin/python3
"""The statistics, tables and chart of the head-count-grammar study, from runs.csv alone.

  /usr/bin/python3 docs/studies/head-count-grammar/report.py [--check]     (needs python3-scipy)

Writes, beside this file: summary.csv (per cell and metric: n, mean, sd, 95% t-interval),
comparisons.csv (the recipe's six declared comparisons on exact match: difference, its 95% Welch
interval, Welch's t, df and p, Holm-adjusted p, verdict), exact_match.svg (every seed a dot, the
mean with its 95% interval) and the tables of ../head-count-grammar.md between its
<!-- report:begin --> and <!-- report:end --> markers. --check writes nothing and exits 1 naming
each file that differs from what runs.csv gives (ctest docs.study_head_count_grammar_tables): the
page's numbers cannot drift from the raw data. Without SciPy it exits 77 (a skip), or 1 when
HEADLAB_REQUIRE_SCIPY=1 (CI).
"""
import csv
import html
import io
import math
import os
import statistics
import sys

try:
    from scipy import stats
except ImportError:
    print("skipped: python3-scipy is missing (scripts/setup.sh --with-scipy)")
    sys.exit(1 if os.environ.get("HEADLAB_REQUIRE_SCIPY") == "1" else 77)

HERE = os.path.dirname(os.path.abspath(__file__))
PAGE = os.path.join(HERE, "..", "head-count-grammar.md")
CELL_ORDER = ["compute-h1", "compute-h2", "compute-h4", "compute-h8", "headsize-h1", "headsize-h2", "headsize-h4"]
METRICS = [("exact", "exact match (%)", 100), ("bleu", "BLEU", 1), ("exact_verb_final", "verb-final exact (%)", 100),
           ("exact_v2", "V2 exact (%)", 100), ("best_aer", "best head AER", 1), ("mean_aer_l0", "layer 0 mean AER", 1)]
# The recipe's comparisons (recipe.ini): each cell against h = 8 (compute-h8, which is also the
# fixed-head-size family's h = 8: d = 16), on exact match, Holm over the six.
COMPARISONS = [("compute-h1", "compute-h8"), ("compute-h2", "compute-h8"), ("compute-h4", "compute-h8"),
               ("headsize-h1", "compute-h8"), ("headsize-h2", "compute-h8"), ("headsize-h4", "compute-h8")]


def t_interval(values):
    n = len(values)
    mean = statistics.fmean(values)
    sd = statistics.stdev(values) if n > 1 else float("nan")
    half = stats.t.ppf(0.975, n - 1) * sd / math.sqrt(n) if n > 1 else float("nan")
    return n, mean, sd, mean - half, mean + half


def welch(a, b):
    """Difference mean(a) - mean(b), its 95% Welch interval, t, df and the two-sided p."""
    va, vb = statistics.variance(a) / len(a), statistics.variance(b) / len(b)
    diff = statistics.fmean(a) - statistics.fmean(b)
    se = math.sqrt(va + vb)
    df = (va + vb) ** 2 / (va ** 2 / (len(a) - 1) + vb ** 2 / (len(b) - 1))
    t = diff / se
    p = 2 * stats.t.sf(abs(t), df)
    half = stats.t.ppf(0.975, df) * se
    return diff, diff - half, diff + half, t, df, p


def holm(ps):
    order = sorted(range(len(ps)), key=lambda i: ps[i])
    adjusted, running = [0.0] * len(ps), 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (len(ps) - rank) * ps[i]))
        adjusted[i] = running
    return adjusted


def fmt(v, digits=2):
    return "" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.{digits}f}"


def csv_text(rows):
    out = io.StringIO()
    w = csv.DictWriter(out, fieldnames=list(rows[0]), lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    return out.getvalue()


def chart(runs):
    """Exact match per cell: every seed a dot, the mean a bar, its 95% interval a line."""
    width, height, left, top, bottom = 760, 360, 70, 40, 70
    values = [100 * float(r["exact"]) for r in runs]
    lo = min(values + [90.0]) // 5 * 5
    hi = 100.0
    y = lambda v: top + (hi - v) / (hi - lo) * (height - top - bottom)
    step = (width - left - 20) / len(CELL_ORDER)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" font-size="12">',
           f'<text x="{width / 2}" y="20" text-anchor="middle" font-size="14">Test exact match by head count, '
           'grammar corpus (5 seeds; mean and 95% CI)</text>']
    tick = lo
    while tick <= hi + 1e-9:
        out.append(f'<line x1="{left}" x2="{width - 20}" y1="{y(tick):.1f}" y2="{y(tick):.1f}" stroke="#ddd"/>'
                   f'<text x="{left - 6}" y="{y(tick) + 4:.1f}" text-anchor="end">{tick:g}</text>')
        tick += 1 if hi - lo <= 10 else 5
    out.append(f'<text x="16" y="{(top + height - bottom) / 2}" transform="rotate(-90 16 {(top + height - bottom) / 2})" '
               'text-anchor="middle">exact match (%)</text>')
    for k, cell in enumerate(CELL_ORDER):
        xs = left + step * (k + 0.5)
        cell_values = [100 * float(r["exact"]) for r in runs if r["cell"] == cell]
        if not cell_values:
            continue
        n, mean, sd, a, b = t_interval(cell_values)
        colour = "#1f77b4" if cell.startswith("compute") else "#d62728"
        for j, v in enumerate(sorted(cell_values)):
            out.append(f'<circle cx="{xs - 12 + 6 * j:.1f}" cy="{y(v):.1f}" r="3" fill="{colour}" fill-opacity="0.6">'
                       f'<title>{html.escape(cell)}: {v:.1f}</title></circle>')
        if n > 1:
            out.append(f'<line x1="{xs + 22:.1f}" x2="{xs + 22:.1f}" y1="{y(min(b, hi)):.1f}" y2="{y(max(a, lo)):.1f}" '
                       f'stroke="{colour}" stroke-width="2"/>')
        out.append(f'<line x1="{xs + 14:.1f}" x2="{xs + 30:.1f}" y1="{y(mean):.1f}" y2="{y(mean):.1f}" stroke="{colour}" stroke-width="3"/>')
        heads, size = cell.split("-h")[1], ("d = 128/h" if cell.startswith("compute") else "d = 16")
        out.append(f'<text x="{xs:.1f}" y="{height - bottom + 18}" text-anchor="middle">h = {heads}</text>'
                   f'<text x="{xs:.1f}" y="{height - bottom + 34}" text-anchor="middle" fill="{colour}">{size}</text>')
    out.append(f'<text x="{left}" y="{height - 12}" fill="#555">blue: fixed compute (D = 128, d = 128/h); red: fixed '
               'head size (d = 16); h = 8 is both. Chance: 0%.</text></svg>')
    return "\n".join(out) + "\n"


def main():
    with open(os.path.join(HERE, "runs.csv")) as f:
        runs = list(csv.DictReader(f))
    by_cell = {c: [r for r in runs if r["cell"] == c] for c in CELL_ORDER}
    summary = []
    for cell in CELL_ORDER:
        for key, _, scale in METRICS:
            n, mean, sd, a, b = t_interval([scale * float(r[key]) for r in by_cell[cell]])
            summary.append({"cell": cell, "heads": by_cell[cell][0]["heads"], "head_size": by_cell[cell][0]["head_size"],
                            "metric": key, "n": n, "mean": round(mean, 6), "sd": round(sd, 6),
                            "ci95_low": round(a, 6), "ci95_high": round(b, 6)})

    tests = [welch([100 * float(r["exact"]) for r in by_cell[a]], [100 * float(r["exact"]) for r in by_cell[b]])
             for a, b in COMPARISONS]
    adjusted = holm([t[5] for t in tests])
    comparisons = []
    for (a, b), (diff, lo, hi, t, df, p), ph in zip(COMPARISONS, tests, adjusted):
        if ph < 0.05 and hi < 0:
            verdict = "worse than h = 8"
        elif ph < 0.05 and lo > 0:
            verdict = "better than h = 8"
        elif lo > -1:
            verdict = "no drop of 1 point or more"
        else:
            verdict = "unresolved"
        comparisons.append({"comparison": f"{a} vs {b}", "metric": "exact match (%)", "difference": round(diff, 4),
                            "ci95_low": round(lo, 4), "ci95_high": round(hi, 4), "welch_t": round(t, 4),
                            "df": round(df, 3), "p": round(p, 6), "p_holm": round(ph, 6), "verdict": verdict})

    lines = ["Per cell, 5 seeds: mean ± sd [95% t-interval] (summary.csv).", "",
             "| cell | h | d | " + " | ".join(label for _, label, _ in METRICS) + " |",
             "|---|---|---|" + "---|" * len(METRICS)]
    for cell in CELL_ORDER:
        row = [s for s in summary if s["cell"] == cell]
        cells = []
        for (key, _, _), s in zip(METRICS, row):
            digits = 3 if "aer" in key else 1
            cells.append(f'{fmt(s["mean"], digits)} ± {fmt(s["sd"], digits)} [{fmt(s["ci95_low"], digits)}, {fmt(s["ci95_high"], digits)}]')
        lines.append(f'| {cell} | {row[0]["heads"]} | {row[0]["head_size"]} | ' + " | ".join(cells) + " |")
    lines += ["", "The declared comparisons, exact match against h = 8 (d = 16), Welch, Holm over the six "
              "(comparisons.csv):", "", "| comparison | difference (points) | 95% CI | Welch t (df) | p | Holm p | verdict |",
              "|---|---|---|---|---|---|---|"]
    for c in comparisons:
        lines.append(f'| {c["comparison"]} | {fmt(c["difference"])} | [{fmt(c["ci95_low"])}, {fmt(c["ci95_high"])}] | '
                     f'{fmt(c["welch_t"])} ({fmt(c["df"], 1)}) | {c["p"]:.4f} | {c["p_holm"]:.4f} | {c["verdict"]} |')
    text = open(PAGE).read()
    begin, end = "<!-- report:begin -->", "<!-- report:end -->"
    text = text[: text.index(begin) + len(begin)] + "\n" + "\n".join(lines) + "\n" + text[text.index(end):]
    outputs = {os.path.join(HERE, "summary.csv"): csv_text(summary),
               os.path.join(HERE, "comparisons.csv"): csv_text(comparisons),
               os.path.join(HERE, "..", "head_count_grammar_exact.svg"): chart(runs), PAGE: text}
    if "--check" in sys.argv[1:]:
        stale = [path for path, content in outputs.items()
                 if not os.path.exists(path) or open(path).read() != content]
        for path in stale:
            print(f"{os.path.relpath(path)}: differs from what runs.csv gives (rerun report.py)")
        if not stale:
            print(f"the tables of {os.path.basename(PAGE)}, summary.csv, comparisons.csv and the chart agree with runs.csv")
        sys.exit(1 if stale else 0)
    for path, content in outputs.items():
        with open(path, "w") as f:
            f.write(content)
    print(f"wrote summary.csv, comparisons.csv, the chart and the tables of {os.path.basename(PAGE)}")


if __name__ == "__main__":
    main()
