#!/usr/bin/python3
"""headlab vs PyTorch on German -> English translation, for the same wall-clock training budget.

Command (from the repository root, after a release build and datasets/de-en/build_de_en.py):

    /usr/bin/python3 bench/compare_translate.py                      # 600 s per side, about 25 min in all
    /usr/bin/python3 bench/compare_translate.py --budget 120 --out runs/compare_translate_120
    /usr/bin/python3 bench/compare_translate.py --repeat 2           # H P, then P H (alternating order)
    /usr/bin/python3 bench/compare_translate.py --twin-only          # rerun PyTorch, reuse OUT/headlab
    /usr/bin/python3 bench/compare_translate.py --report-only        # only re-render the report from OUT

What runs: first `BUILD/apps/headlab train --task translate ...`, then bench/translate_twin.py (the
same data, tokenizer, vocabulary, batches, model, loss, optimiser, schedule, evaluation and decoding,
written with torch.nn), one after the other, never in parallel, both on one thread
(HEADLAB_THREADS=1 for headlab, OPENBLAS_NUM_THREADS=1 and torch.set_num_threads(1) for the twin). Both get the same --train,
--valid, --test, --time-budget, --eval-every and --seed. When headlab trained on subword tokens
(`tokenizer=bpe` in OUT/headlab/config.ini), the twin also gets `--tokenizer-from OUT/headlab`: the
same BPE merges and vocabularies, so the same ids. Each writes RUN/summary.json; this script
reads the two and writes OUT/comparison.md (printed too) and OUT/bleu_vs_time.svg.

What "budget" counts: seconds spent in training steps only (forward, loss, backward, clipping,
optimiser step; the twin builds its padded batches once before training). The clock stops while a
side evaluates (valid loss and greedy valid BLEU every --eval-every steps) and for the final test
decoding, so a side that evaluates slowly is not penalised, and the wall time of a run is the budget
plus its evaluations. Each side stops at the first step that brings its training clock to the budget
or beyond.

What is measured: steps done in the budget; ms/step (median of the step times after the first 20;
both sides cut the same batches and every epoch visits each once, but in an order shuffled by each
side's own random generator, so step k is not the same batch on both sides); valid loss (mean token
NLL without label smoothing) and valid BLEU of the best-valid-BLEU checkpoint; test BLEU (greedy, and
beam 4 with length penalty 0.6) and test chrF of that checkpoint; peak resident memory (ru_maxrss);
valid BLEU against training seconds. BLEU is nltk's corpus_bleu x100 on the lower-cased words on both
sides (BPE pieces joined back into words first), chrF nltk's corpus_chrf x100 on the same words
(summary.json keys test_chrf_greedy / test_chrf_beam; "-" where a side has none).
Timings on a shared 2-vCPU machine vary by tens of percent between runs: compare the sides within one
run, and use --repeat for a spread.
"""
import argparse
import datetime
import html
import json
import math
import os
import statistics
import subprocess
import sys
import time

from compare_train import cpu_name  # the machine line of the report

HERE = os.path.dirname(os.path.abspath(__file__))
SIDES = ("headlab", "pytorch")


# ===========================================================================
# Running the two sides
# ===========================================================================


def run_logged(cmd, log_path, env, label):
    """Runs cmd, copying its output to log_path and (prefixed) to our stdout. Returns the exit status."""
    print(f"[{label}] $ {' '.join(cmd)}", flush=True)
    t0 = time.time()
    with open(log_path, "w") as log:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, text=True,
                                errors="replace")
        for line in proc.stdout:
            log.write(line)
            log.flush()
            print(f"[{label}] {line}", end="", flush=True)
        rc = proc.wait()
    print(f"[{label}] exit {rc} after {time.time() - t0:.0f} s wall", flush=True)
    return rc


def run_config(run_dir):
    """{key: value} of RUN/config.ini (`key=value` under [train], values maybe quoted; comment,
    section and blank lines skipped); {} when the run has none."""
    path = os.path.join(run_dir, "config.ini")
    if not os.path.isfile(path):
        return {}
    config = {}
    with open(path, encoding="utf-8-sig") as f:
        for line in f:
            line = line.strip()
            if not line or line[0] in "#;[" or "=" not in line:
                continue
            key, value = (part.strip() for part in line.split("=", 1))
            if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
                value = value[1:-1]
            config[key] = value
    return config


def twin_tokenizer_args(a):
    """["--tokenizer-from", HEADLAB_RUN] when the headlab run trained on BPE (`tokenizer=bpe` in its
    config.ini), so that the twin trains on the same merges and vocabularies; [] for words. Every
    round has the same --seed, so round 1's run (always run before the twin's first round) serves."""
    run_dir = run_dir_for(a.out, "headlab", 1)
    config = run_config(run_dir)
    if config.get("tokenizer") != "bpe":
        return []
    if config.get("seed") != str(a.seed):
        sys.exit(f"compare_translate: {run_dir}/config.ini has seed={config.get('seed')}, this comparison "
                 f"--seed {a.seed}: its BPE files are not this seed's (rerun headlab, or pass its --seed)")
    return ["--tokenizer-from", run_dir]


# headlab's config.ini keys the twin reads with the same meaning (translate_twin.py's flags).
TWIN_MIRRORS = ["d-model", "heads", "ff", "layers", "dropout", "label-smoothing", "lr-factor", "warmup",
                "max-tokens", "max-len", "beam", "length-penalty", "eval-sentences"]


def twin_model_args(a):
    """The headlab run's model, loss, schedule and decoding as twin flags (its config.ini), so that
    the twin trains what headlab trained whatever headlab's defaults or extra flags were."""
    config = run_config(run_dir_for(a.out, "headlab", 1))
    if not config:
        return []
    args = []
    for key in TWIN_MIRRORS:
        if key in config:
            args += [f"--{key}", config[key]]
    if config.get("pre-ln") == "true":
        args.append("--pre-ln")
    return args


def side_command(side, a, run_dir):
    files = {k: os.path.join(a.data, f"{k}.tsv") for k in ("train", "valid", "test")}
    common = ["--train", files["train"], "--valid", files["valid"], "--test", files["test"],
              "--time-budget", str(a.budget), "--eval-every", str(a.eval_every), "--seed", str(a.seed),
              "--steps", "1000000000"]  # the budget ends the run, not a step count
    if side == "headlab":
        exe = os.path.join(a.build, "apps", "headlab")
        # --select bleu: the twin keeps its best-BLEU weights too (headlab's default is valid_loss).
        return [exe, "train", "--task", "translate"] + common + ["--select", "bleu", "--progress", "none",
                                                                  "--run-dir", run_dir] + a.headlab_args
    return ([a.python, os.path.join(HERE, "translate_twin.py")] + common + twin_tokenizer_args(a) + twin_model_args(a)
            + ["--out", run_dir])


def run_dir_for(out, side, round_):
    return os.path.join(out, side if round_ == 1 else f"{side}-{round_}")


def run_all(a):
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", HEADLAB_THREADS="1")
    sides = [s for s in SIDES if not ((s == "headlab" and a.twin_only) or (s == "pytorch" and a.headlab_only))]
    if "headlab" in sides:
        exe = os.path.join(a.build, "apps", "headlab")
        if not os.access(exe, os.X_OK):
            sys.exit(f"compare_translate: {exe} not found (build the release preset, or pass --build / --twin-only)")
    for k in ("train", "valid", "test"):
        if not os.path.isfile(os.path.join(a.data, f"{k}.tsv")):
            sys.exit(f"compare_translate: {a.data}/{k}.tsv not found (run datasets/de-en/build_de_en.py)")
    failed = []
    for r in range(1, a.repeat + 1):
        order = sides if r % 2 == 1 else sides[::-1]  # alternate who goes first
        for side in order:
            d = run_dir_for(a.out, side, r)
            os.makedirs(d, exist_ok=True)
            stale = os.path.join(d, "summary.json")
            if os.path.exists(stale):
                os.remove(stale)
            label = side if a.repeat == 1 else f"{side} #{r}"
            if run_logged(side_command(side, a, d), os.path.join(d, "log.txt"), env, label) != 0:
                failed.append(label)
    return failed


# ===========================================================================
# Report
# ===========================================================================


def load_runs(out):
    """{side: [summary, ...]} from OUT/<side>[-N]/summary.json, in round order."""
    runs = {s: [] for s in SIDES}
    for side in SIDES:
        r = 1
        while r == 1 or os.path.isdir(run_dir_for(out, side, r)):
            p = os.path.join(run_dir_for(out, side, r), "summary.json")
            if os.path.exists(p):
                with open(p) as f:
                    runs[side].append(json.load(f))
            r += 1
    return runs


def fmt(x, digits=2):
    if x is None:
        return "-"
    if isinstance(x, int):
        return str(x)
    if isinstance(x, float) and not math.isfinite(x):
        return str(x)
    return f"{x:.{digits}f}"


def median_of(runs, key):
    vals = [r[key] for r in runs if r.get(key) is not None]
    return statistics.median(vals) if vals else None


def md_table(header, rows):
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(out)


# (label, key, digits, ratio?)
METRICS = [
    ("steps", "steps", 0, True),
    ("training seconds", "train_seconds", 1, False),
    ("ms/step (median)", "ms_per_step", 1, True),
    ("parameters", "parameters", 0, False),
    ("valid loss (NLL/token)", "valid_loss", 4, False),
    ("valid BLEU", "valid_bleu", 2, False),
    ("test BLEU greedy", "test_bleu_greedy", 2, False),
    ("test BLEU beam", "test_bleu_beam", 2, False),
    ("test chrF greedy", "test_chrf_greedy", 2, False),
    ("test chrF beam", "test_chrf_beam", 2, False),
    ("peak RSS (MB)", "peak_rss_mb", 0, True),
]


def summary_table(runs):
    present = [s for s in SIDES if runs[s]]
    both = len(present) == 2
    many = any(len(runs[s]) > 1 for s in present)
    header = ["", *[f"{s} (median of {len(runs[s])})" if many else s for s in present]]
    if both:
        header.append("headlab / pytorch")
    rows = []
    for label, key, digits, ratio in METRICS:
        vals = [median_of(runs[s], key) for s in present]
        cells = [label] + [("-" if v is None else (f"{v:.0f}" if digits == 0 else fmt(float(v), digits))) for v in vals]
        if both:
            h, p = vals
            cells.append(f"{h / p:.2f}" if ratio and h is not None and p else "")
        rows.append(cells)
    return md_table(header, rows)


def per_run_table(runs):
    rows = []
    for side in SIDES:
        for i, r in enumerate(runs[side], 1):
            rows.append([side, i, r["steps"], fmt(r["ms_per_step"], 1), fmt(r["valid_loss"], 4), fmt(r["valid_bleu"]),
                         fmt(r["test_bleu_greedy"]), fmt(r["test_bleu_beam"]), fmt(r.get("test_chrf_beam")),
                         fmt(r["peak_rss_mb"], 0)])
    return md_table(["side", "run", "steps", "ms/step", "valid loss", "valid BLEU", "test greedy", "test beam",
                     "test chrF beam", "peak RSS MB"], rows)


def last_at_or_before(curve, t):
    best = None
    for point in curve:
        if point["seconds"] <= t + 1e-9:
            best = point
    return best


def time_marks(runs, every):
    end = max((p["seconds"] for s in SIDES for r in runs[s] for p in r.get("curve", [])), default=0.0)
    marks, t = [], every
    while t <= end + 1e-9:
        marks.append(t)
        t += every
    return marks


def bleu_by_time_table(runs, every):
    """First run of each side; at each mark the last evaluation at or before it: BLEU (step)."""
    present = [s for s in SIDES if runs[s]]
    header = ["training seconds"] + [f"{s} valid BLEU (step)" for s in present]
    rows = []
    for t in time_marks(runs, every):
        row = [f"{t:g}"]
        for s in present:
            p = last_at_or_before(runs[s][0].get("curve", []), t)
            row.append("-" if p is None else f"{p['valid_bleu']:.2f} ({p['step']})")
        rows.append(row)
    row = ["end"]
    for s in present:
        c = runs[s][0].get("curve", [])
        row.append("-" if not c else f"{c[-1]['valid_bleu']:.2f} ({c[-1]['step']}, {c[-1]['seconds']:.0f} s)")
    rows.append(row)
    return md_table(header, rows)


def examples_section(runs):
    out = []
    present = [s for s in SIDES if runs[s]]
    if not present:
        return ""
    base = runs[present[0]][0].get("examples", [])
    for i, ex in enumerate(base):
        out.append(f"{i + 1}. source: {ex['source']}  \n   reference: {ex['reference']}  ")
        for s in present:
            exs = runs[s][0].get("examples", [])
            if i < len(exs):
                out.append(f"   {s} greedy: {exs[i]['greedy']}  \n   {s} beam: {exs[i]['beam']}  ")
    return "\n".join(out)


# ---------------------------------------------------------------------------
# SVG: valid BLEU against training seconds, one line per side
# ---------------------------------------------------------------------------

COLOURS = {"headlab": "#1f77b4", "pytorch": "#d62728"}


def nice_step(span, target=6):
    raw = span / target if span > 0 else 1
    mag = 10 ** math.floor(math.log10(raw))
    for m in (1, 2, 2.5, 5, 10):
        if raw <= m * mag:
            return m * mag
    return 10 * mag


def svg_chart(runs, title):
    W, H, L, R, T, B = 640, 380, 60, 20, 40, 50
    curves = {s: runs[s][0].get("curve", []) for s in SIDES if runs[s]}
    xs = [p["seconds"] for c in curves.values() for p in c] or [1.0]
    ys = [p["valid_bleu"] for c in curves.values() for p in c] or [1.0]
    x_step = nice_step(max(xs))
    x_max = max(x_step, math.ceil(max(xs) / x_step) * x_step)
    y_step = nice_step(max(max(ys), 1.0), 5)
    y_max = max(y_step, math.ceil(max(ys) / y_step) * y_step)
    px = lambda x: L + (W - L - R) * x / x_max
    py = lambda y: H - B - (H - T - B) * y / y_max
    e = []
    e.append(f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" '
             f'font-family="sans-serif" font-size="12">')
    e.append(f'<rect width="{W}" height="{H}" fill="white"/>')
    e.append(f'<text x="{W / 2}" y="22" text-anchor="middle" font-size="14">{html.escape(title)}</text>')
    y = 0.0
    while y <= y_max + 1e-9:  # horizontal grid + y labels
        e.append(f'<line x1="{L}" y1="{py(y):.1f}" x2="{W - R}" y2="{py(y):.1f}" stroke="#ddd"/>')
        e.append(f'<text x="{L - 6}" y="{py(y) + 4:.1f}" text-anchor="end">{y:g}</text>')
        y += y_step
    x = 0.0
    while x <= x_max + 1e-9:  # x ticks + labels
        e.append(f'<line x1="{px(x):.1f}" y1="{H - B}" x2="{px(x):.1f}" y2="{H - B + 4}" stroke="#333"/>')
        e.append(f'<text x="{px(x):.1f}" y="{H - B + 18}" text-anchor="middle">{x:g}</text>')
        x += x_step
    e.append(f'<line x1="{L}" y1="{H - B}" x2="{W - R}" y2="{H - B}" stroke="#333"/>')
    e.append(f'<line x1="{L}" y1="{T}" x2="{L}" y2="{H - B}" stroke="#333"/>')
    e.append(f'<text x="{(L + W - R) / 2}" y="{H - 12}" text-anchor="middle">training seconds (evaluation excluded)</text>')
    e.append(f'<text transform="translate(16 {(T + H - B) / 2}) rotate(-90)" text-anchor="middle">valid BLEU</text>')
    for i, (side, c) in enumerate(curves.items()):
        col = COLOURS[side]
        pts = " ".join(f"{px(p['seconds']):.1f},{py(p['valid_bleu']):.1f}" for p in c)
        if pts:
            e.append(f'<polyline points="{pts}" fill="none" stroke="{col}" stroke-width="2"/>')
            e += [f'<circle cx="{px(p["seconds"]):.1f}" cy="{py(p["valid_bleu"]):.1f}" r="2.5" fill="{col}"/>' for p in c]
        ly = T + 8 + 18 * i
        e.append(f'<line x1="{L + 12}" y1="{ly}" x2="{L + 36}" y2="{ly}" stroke="{col}" stroke-width="2"/>')
        e.append(f'<text x="{L + 42}" y="{ly + 4}">{side}</text>')
    e.append("</svg>")
    return "\n".join(e) + "\n"


def report(a, runs):
    present = [s for s in SIDES if runs[s]]
    if not present:
        sys.exit(f"compare_translate: no summary.json under {a.out}/{{headlab,pytorch}}")
    parts = ["# Translation de->en: headlab vs PyTorch, same training-time budget", "",
             f"Data {a.data}; budget {a.budget:g} s of training steps per side (evaluation excluded); "
             f"eval every {a.eval_every} steps; seed {a.seed}; one thread (HEADLAB_THREADS=1 and "
             f"OPENBLAS_NUM_THREADS=1). Ratio column: headlab / pytorch (ms/step below 1 = headlab faster).", "",
             f"Machine: {cpu_name()}, {os.cpu_count()} cores seen by the OS; {datetime.date.today().isoformat()}; "
             "command: `/usr/bin/python3 bench/compare_translate.py " + " ".join(sys.argv[1:]) + "`", "",
             summary_table(runs), ""]
    if any(len(runs[s]) > 1 for s in SIDES):
        parts += ["Per run:", "", per_run_table(runs), ""]
    parts += ["Valid BLEU by training time (last evaluation at or before each mark; first run of each side):", "",
              bleu_by_time_table(runs, a.mark), ""]
    ex = examples_section(runs)
    if ex:
        parts += ["First test sentences (best checkpoint):", "", ex, ""]
    if not a.no_svg:
        with open(os.path.join(a.out, "bleu_vs_time.svg"), "w") as f:
            f.write(svg_chart(runs, "valid BLEU vs training seconds (de->en)"))
        parts += ["![valid BLEU vs training seconds](bleu_vs_time.svg)", ""]
    text = "\n".join(parts)
    with open(os.path.join(a.out, "comparison.md"), "w") as f:
        f.write(text)
    print(text)
    print(f"\nwritten: {a.out}/comparison.md" + ("" if a.no_svg else f", {a.out}/bleu_vs_time.svg"))


def main():
    ap = argparse.ArgumentParser(description="headlab vs PyTorch translation for the same training-time budget",
                                 epilog="see the module docstring for what is measured")
    ap.add_argument("--budget", type=float, default=600, help="seconds of training steps per side")
    ap.add_argument("--build", default="build/release", help="build directory holding apps/headlab")
    ap.add_argument("--data", default="datasets/de-en/small", help="directory with train/valid/test.tsv")
    ap.add_argument("--eval-every", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=1, help="rounds; even rounds run pytorch first")
    ap.add_argument("--mark", type=float, default=60, help="seconds between rows of the BLEU-by-time table")
    ap.add_argument("--python", default="/usr/bin/python3", help="interpreter with torch and nltk")
    side = ap.add_mutually_exclusive_group()
    side.add_argument("--headlab-only", action="store_true", help="run only headlab (reuse OUT/pytorch if there)")
    side.add_argument("--twin-only", action="store_true", help="run only the PyTorch twin (reuse OUT/headlab if there)")
    side.add_argument("--report-only", action="store_true", help="run nothing; re-render from OUT")
    ap.add_argument("--no-svg", action="store_true")
    ap.add_argument("--out", default="runs/compare_translate")
    ap.add_argument("headlab_args", nargs="*", metavar="-- HEADLAB_FLAGS",
                    help="extra `headlab train` flags after --; the twin mirrors the run's config.ini")
    a = ap.parse_args()
    if a.repeat < 1:
        ap.error("--repeat must be >= 1")
    os.makedirs(a.out, exist_ok=True)
    failed = [] if a.report_only else run_all(a)
    report(a, load_runs(a.out))
    if failed:
        sys.exit("compare_translate: failed: " + ", ".join(failed) + " (see log.txt in its run directory)")


if __name__ == "__main__":
    main()
