"""What every study's report.py shares: the statistics (SciPy), CSV text, the strip chart (every seed
a dot, the mean and its 95% interval) and writing or checking the outputs.

Imported by docs/studies/<study>/report.py (run with Debian's /usr/bin/python3 and python3-scipy).
Without SciPy the import exits 77 (a skip), or 1 when HEADLAB_REQUIRE_SCIPY=1 (CI).
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


def t_interval(values):
    """n, mean, sd and the 95% t-interval of the mean (NaN sd and interval for n = 1)."""
    n = len(values)
    mean = statistics.fmean(values)
    sd = statistics.stdev(values) if n > 1 else float("nan")
    half = stats.t.ppf(0.975, n - 1) * sd / math.sqrt(n) if n > 1 else float("nan")
    return n, mean, sd, mean - half, mean + half


def welch(a, b):
    """mean(a) - mean(b), its 95% Welch interval, t, df and the two-sided p."""
    va, vb = statistics.variance(a) / len(a), statistics.variance(b) / len(b)
    diff = statistics.fmean(a) - statistics.fmean(b)
    se = math.sqrt(va + vb)
    if se == 0:
        return diff, diff, diff, (0.0 if diff == 0 else math.copysign(math.inf, diff)), len(a) + len(b) - 2, \
            (1.0 if diff == 0 else 0.0)
    df = (va + vb) ** 2 / (va ** 2 / (len(a) - 1) + vb ** 2 / (len(b) - 1))
    t = diff / se
    p = 2 * stats.t.sf(abs(t), df)
    half = stats.t.ppf(0.975, df) * se
    return diff, diff - half, diff + half, t, df, p


def paired(a, b):
    """mean(a - b) over pairs, its 95% t-interval, t, df and the two-sided p."""
    d = [x - y for x, y in zip(a, b)]
    n, mean, sd, lo, hi = t_interval(d)
    if sd == 0:
        return mean, lo, hi, (0.0 if mean == 0 else math.copysign(math.inf, mean)), n - 1, (1.0 if mean == 0 else 0.0)
    t = mean / (sd / math.sqrt(n))
    return mean, lo, hi, t, n - 1, 2 * stats.t.sf(abs(t), n - 1)


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


def svg_axes(title, y_label, lo, hi, tick, y, x_from, x_to, width, height, top, bottom):
    """The opening of a chart: the title, horizontal grid lines with their labels from lo to hi every
    tick (y maps a value to its pixel), and the rotated y label; the caller appends and closes."""
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" font-size="12">',
           f'<text x="{width / 2}" y="20" text-anchor="middle" font-size="14">{html.escape(title)}</text>']
    t = lo
    while t <= hi + 1e-9:
        out.append(f'<line x1="{x_from}" x2="{x_to}" y1="{y(t):.1f}" y2="{y(t):.1f}" stroke="#ddd"/>'
                   f'<text x="{x_from - 6}" y="{y(t) + 4:.1f}" text-anchor="end">{t:g}</text>')
        t += tick
    mid = (top + height - bottom) / 2
    out.append(f'<text x="16" y="{mid}" transform="rotate(-90 16 {mid})" text-anchor="middle">{html.escape(y_label)}</text>')
    return out


def strip_chart(title, y_label, cells, lo, hi, tick, footer, width=760, height=360):
    """cells: [(label, sublabel, colour, values)]; every value a dot, the mean a bar, its 95% CI a line."""
    left, top, bottom = 70, 40, 70
    y = lambda v: top + (hi - v) / (hi - lo) * (height - top - bottom)
    step = (width - left - 20) / len(cells)
    out = svg_axes(title, y_label, lo, hi, tick, y, left, width - 20, width, height, top, bottom)
    for k, (label, sublabel, colour, values) in enumerate(cells):
        xs = left + step * (k + 0.5)
        if not values:
            continue
        n, mean, sd, a, b = t_interval(values)
        for j, v in enumerate(sorted(values)):
            out.append(f'<circle cx="{xs - 12 + 6 * j:.1f}" cy="{y(v):.1f}" r="3" fill="{colour}" fill-opacity="0.6">'
                       f'<title>{html.escape(label)}: {v:.3g}</title></circle>')
        if n > 1:
            out.append(f'<line x1="{xs + 22:.1f}" x2="{xs + 22:.1f}" y1="{y(min(b, hi)):.1f}" y2="{y(max(a, lo)):.1f}" '
                       f'stroke="{colour}" stroke-width="2"/>')
        out.append(f'<line x1="{xs + 14:.1f}" x2="{xs + 30:.1f}" y1="{y(mean):.1f}" y2="{y(mean):.1f}" stroke="{colour}" stroke-width="3"/>')
        out.append(f'<text x="{xs:.1f}" y="{height - bottom + 18}" text-anchor="middle">{html.escape(label)}</text>'
                   f'<text x="{xs:.1f}" y="{height - bottom + 34}" text-anchor="middle" fill="{colour}">{html.escape(sublabel)}</text>')
    out.append(f'<text x="{left}" y="{height - 12}" fill="#555">{html.escape(footer)}</text></svg>')
    return "\n".join(out) + "\n"


def with_reference_line(svg, value, lo, hi, label, colour="#d62728", width=760, height=360, left=70, top=40, bottom=70):
    """A dashed horizontal line at `value` on strip_chart's axis (a baseline or a threshold), labelled."""
    y = top + (hi - value) / (hi - lo) * (height - top - bottom)
    line = (f'<line x1="{left}" x2="{width - 20}" y1="{y:.1f}" y2="{y:.1f}" stroke="{colour}" stroke-dasharray="5 4"/>'
            f'<text x="{width - 22}" y="{y - 4:.1f}" text-anchor="end" fill="{colour}">{html.escape(label)}</text>')
    return svg.replace("</svg>", line + "</svg>")


def with_off_axis_note(svg, text, colour="#d62728", width=760, height=360, bottom=70):
    """A note at the bottom right of strip_chart's plot: for a baseline that lies below the axis."""
    note = (f'<text x="{width - 22}" y="{height - bottom - 6}" text-anchor="end" fill="{colour}">'
            f'{html.escape(text)}</text>')
    return svg.replace("</svg>", note + "</svg>")


def log_x_chart(title, y_label, series, lo, hi, tick, footer, width=760, height=380, left=70, top=40, bottom=60,
                right=130):
    """series: [(label, colour, {x: [one value a seed]})] on a log2 x axis: every seed a dot (spread a
    little sideways by series), the mean over seeds a line; a value None (a run with no number) is skipped."""
    xs = sorted({x for _, _, points in series for x in points})
    lx = lambda x: math.log2(x)
    x0, x1 = lx(xs[0]), lx(xs[-1])
    px = lambda x: left + (lx(x) - x0) / (x1 - x0) * (width - left - right)
    py = lambda v: top + (hi - min(max(v, lo), hi)) / (hi - lo) * (height - top - bottom)
    out = svg_axes(title, y_label, lo, hi, tick, py, left, width - right, width, height, top, bottom)
    label = out.pop()  # the y label after the x ticks, as this chart always drew them
    for x in xs:
        out.append(f'<text x="{px(x):.1f}" y="{height - bottom + 16}" text-anchor="middle">{x:g}</text>')
    out.append(label)
    for k, (label, colour, points) in enumerate(series):
        shift = (k - (len(series) - 1) / 2) * 5
        means = []
        for x in xs:
            values = [v for v in points.get(x, []) if v is not None]
            for v in values:
                out.append(f'<circle cx="{px(x) + shift:.1f}" cy="{py(v):.1f}" r="3" fill="{colour}" fill-opacity="0.55">'
                           f'<title>{html.escape(label)} at {x:g}: {v:.3g}</title></circle>')
            if values:
                means.append((px(x) + shift, py(statistics.fmean(values))))
        out.append(f'<polyline fill="none" stroke="{colour}" stroke-width="2" points="'
                   + " ".join(f"{a:.1f},{b:.1f}" for a, b in means) + '"/>')
        out.append(f'<text x="{width - right + 8}" y="{top + 16 * (k + 1)}" fill="{colour}">{html.escape(label)}</text>')
    out.append(f'<text x="{left}" y="{height - 12}" fill="#555">{html.escape(footer)}</text></svg>')
    return "\n".join(out) + "\n"


def curves_chart(title, y_label, steps, key, lo, hi, tick, footer, width=760, height=380):
    """Every pruning curve of every run: random orders as thin grey lines, the importance order of
    each seed as a coloured line; key is "loss" or "bleu"; x is the fraction of heads pruned."""
    left, top, bottom, right = 70, 40, 60, 150
    px = lambda f: left + f * (width - left - right)
    py = lambda v: top + (hi - min(max(v, lo), hi)) / (hi - lo) * (height - top - bottom)
    colours = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd"]
    out = svg_axes(title, y_label, lo, hi, tick, py, left, width - right, width, height, top, bottom)
    for f in (0, 0.25, 0.5, 0.75, 1.0):
        out.append(f'<text x="{px(f):.1f}" y="{height - bottom + 16}" text-anchor="middle">{f:.0%}</text>')
    out.append(f'<text x="{(left + width - right) / 2}" y="{height - bottom + 32}" text-anchor="middle">heads pruned</text>')
    lines = {}
    for s in steps:
        lines.setdefault((s["seed"], s["order"]), []).append((float(s["fraction"]), float(s[key])))
    seeds = sorted({seed for seed, _ in lines}, key=int)
    for (seed, order), pts in lines.items():  # random orders first, underneath
        if order != "importance":
            out.append('<polyline fill="none" stroke="#999" stroke-opacity="0.35" stroke-width="1" points="'
                       + " ".join(f"{px(f):.1f},{py(v):.1f}" for f, v in pts) + '"/>')
    for k, seed in enumerate(seeds):
        colour = colours[k % len(colours)]
        out.append(f'<polyline fill="none" stroke="{colour}" stroke-width="2" points="'
                   + " ".join(f"{px(f):.1f},{py(v):.1f}" for f, v in lines[(seed, "importance")]) + '"/>')
        out.append(f'<text x="{width - right + 8}" y="{top + 16 * (k + 1)}" fill="{colour}">importance, seed {seed}</text>')
    out.append(f'<text x="{width - right + 8}" y="{top + 16 * (len(seeds) + 1)}" fill="#777">random orders</text>')
    out.append(f'<text x="{left}" y="{height - 12}" fill="#555">{html.escape(footer)}</text></svg>')
    return "\n".join(out) + "\n"


def replace_block(page_text, lines, name=""):
    """The page with the lines between <!-- report:begin[ NAME] --> and <!-- report:end[ NAME] --> replaced."""
    tag = f" {name}" if name else ""
    begin, end = f"<!-- report:begin{tag} -->", f"<!-- report:end{tag} -->"
    return page_text[: page_text.index(begin) + len(begin)] + "\n" + "\n".join(lines) + "\n" + page_text[page_text.index(end):]


def write_or_check(outputs, page_name):
    """outputs: {path: text}. With --check on the command line: exit 1 naming each file that differs."""
    if "--check" in sys.argv[1:]:
        stale = [p for p, text in outputs.items() if not os.path.exists(p) or open(p).read() != text]
        for p in stale:
            print(f"{os.path.relpath(p)}: differs from what runs.csv gives (rerun report.py)")
        if not stale:
            print(f"the tables of {page_name}, summary.csv, comparisons.csv and the chart agree with runs.csv")
        sys.exit(1 if stale else 0)
    for p, text in outputs.items():
        with open(p, "w") as f:
            f.write(text)
    print(f"wrote summary.csv, comparisons.csv, the chart and the tables of {page_name}")


def report_source(here):
    """Where a report.py reads its CSVs: DIR of `--judge DIR` (another set of runs measured by the
    study's measure.py, as docs/tools/replicate_verdicts.py --measure makes), else its own folder."""
    args = sys.argv[1:]
    if "--judge" not in args:
        return here
    at = args.index("--judge")
    if at + 1 >= len(args) or not os.path.isdir(args[at + 1]):
        raise SystemExit("--judge DIR: give the directory of a measure.py's CSVs")
    return args[at + 1]


def judge_exit(verdict, criteria):
    """With `--judge DIR`: print the verdict against the recipe's criteria as one JSON object and exit 0,
    writing nothing; otherwise return. criteria: [(name, holds, measured)], e.g. ("S: a layers.1 head
    >= 0.5 on <s> in >= 4 of 5 seeds", True, "4 of 5 seeds")."""
    if "--judge" not in sys.argv[1:]:
        return
    import json
    print(json.dumps({"verdict": verdict, "criteria": [{"criterion": name, "holds": bool(holds), "measured": measured}
                                                       for name, holds, measured in criteria]}))
    sys.exit(0)
