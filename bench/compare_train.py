#!/usr/bin/python3
"""headlab against PyTorch, one training step of three models, side by side, at each thread count.

    /usr/bin/python3 bench/compare_train.py [--threads 1,2] [--repeat 3] [--steps 20] [--min-seconds 2]
                                            [--warmup 3]
                                            [--configs copy,translate,lm] [--seq-lens 128,256,512,1024]
                                            [--bench build/release/bench/bench_train_step] [--out FILE.md]
                                            [--flush-denormals]

For every repetition, thread count and configuration it runs headlab's bench_train_step (the default
attention: heads read in place where the layer allows, else composed; and the tiled kernel) and the
PyTorch twin (bench/train_twin.py), each in its own process at that thread count (headlab:
threads=N; PyTorch: torch.set_num_threads(N) and OPENBLAS_NUM_THREADS=N), alternating which side
goes first. Reported, per configuration:
- median ms/step of each side over the repetitions (each a median over --steps steps, or more for
  a fast model: as many as headlab's single-thread step needs to fill --min-seconds, timed once
  before the comparison, so a 9 ms copy step is not read from 20 steps on a noisy machine);
- PyTorch / headlab at the same thread count, and headlab at its default (every core) against
  PyTorch at whichever count was fastest for it;
- headlab's GFLOP/s (3 x forward FLOPs per step) as a fraction of the "limit": the rate of the
  model's own matrix products, run alone the way the kernels run them, measured in the same run
  at the same thread count (bench_train_step gemm-rate); and sgemm 512^3 for reference;
- peak RSS as measured and net of each side's baseline (an empty headlab process; PyTorch's import
  plus a trivial backward);
- with --seq-lens: the lm configuration at T input tokens and batch 2048 / T (B x T fixed), default
  and tiled against PyTorch, at every thread count.
--flush-denormals runs both sides with subnormal floats flushed to zero.
--busy-neighbour also runs headlab (default attention) at the first and the last thread count beside
one busy process (a shell loop pinned to the last core, as a compile job or another run would be), --repeat
times, alternating. With more than one thread count, the report ends with the targets of the issue
"every core for small models" (1 -> N scaling, default against PyTorch's best, the busy neighbour,
the single-thread share of the limit), each measured value beside its target.
"""
import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TWIN = os.path.join(HERE, "train_twin.py")


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown CPU"


def run_json(cmd, threads):
    env = dict(os.environ, OPENBLAS_NUM_THREADS=str(threads), OMP_NUM_THREADS=str(threads),
               HEADLAB_THREADS=str(threads))
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env).stdout
    return json.loads(out.strip().splitlines()[-1])


def med(runs, key="ms_per_step"):
    return statistics.median(r[key] for r in runs)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--threads", default="1", help="thread counts, e.g. 1,2 (the last is headlab's default here "
                    "when it equals the machine's cores)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--min-seconds", type=float, default=2.0,
                    help="at least this long a repetition of headlab's single-thread step (more steps for fast models)")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--configs", default="copy,translate,lm")
    ap.add_argument("--seq-lens", default="", help="lm sweep at B x T = 2048, e.g. 128,256,512,1024")
    ap.add_argument("--bench", default=os.path.join(os.path.dirname(HERE), "build/release/bench/bench_train_step"))
    ap.add_argument("--out", help="also write the Markdown report here")
    ap.add_argument("--flush-denormals", action="store_true", help="both sides flush subnormal floats to zero")
    ap.add_argument("--busy-neighbour", action="store_true", help="also time headlab beside one busy process")
    a = ap.parse_args()
    if not os.path.exists(a.bench):
        sys.exit(f"compare_train: {a.bench} not found; build it first: cmake --build --preset release")
    counts = [int(t) for t in a.threads.split(",")]
    configs = [c for c in a.configs.split(",") if c]
    seqs = [int(t) for t in a.seq_lens.split(",") if t]
    ftz = ["ftz"] if a.flush_denormals else []
    started = time.time()
    # cells[(config, seq, threads, side)] = [json, ...]; seq 0 = the configuration's own length
    cells, rates, sgemm = {}, {}, {}
    jobs = [(c, 0) for c in configs] + [("lm", s) for s in seqs]

    # steps[(config, seq)]: --steps, or more when headlab's 1-thread step is fast (a 3-step timing)
    steps = {}
    for c, s in jobs:
        seq = [f"seq={s}"] if s else []
        ms = run_json([a.bench, c, "3", "1", "threads=1"] + seq, 1)["ms_per_step"]
        steps[(c, s)] = max(a.steps, int(a.min_seconds * 1000 / max(ms, 1e-3)) + 1)

    def add(key, res):
        cells.setdefault(key, []).append(res)

    for r in range(a.repeat):
        for t in counts:
            sgemm.setdefault(t, []).append(run_json([a.bench, "sgemm", "512", f"threads={t}"], t)["gflops"])
            for c, s in jobs:
                seq = [f"seq={s}"] if s else []
                rates.setdefault((c, s, t), []).append(
                    run_json([a.bench, "gemm-rate", c, f"threads={t}"] + seq, t)["gflops"])
                n = str(steps[(c, s)])
                sides = [("headlab", [a.bench, c, n, str(a.warmup), f"threads={t}"] + seq + ftz),
                         ("pytorch", ["/usr/bin/python3", TWIN, c, n, str(a.warmup), f"threads={t}"] + seq + ftz),
                         ("tiled", [a.bench, c, n, str(a.warmup), "flash", f"threads={t}"] + seq + ftz)]
                if r % 2:
                    sides.reverse()
                for side, cmd in sides:
                    res = run_json(cmd, t)
                    add((c, s, t, side), res)
                    print(f"  repeat {r + 1} {c:9s} T={s or '-':<5} threads {t} {side:8s} "
                          f"{res['ms_per_step']:9.2f} ms/step", file=sys.stderr)
    busy = {}  # busy[(config, threads)] = [ms, ...], headlab (default attention) beside one busy process
    if a.busy_neighbour:
        ends = sorted({counts[0], max(counts)})
        neighbour = subprocess.Popen(["taskset", "-c", str((os.cpu_count() or 1) - 1), "sh", "-c", "while :; do :; done"])
        try:
            for r in range(a.repeat):
                for c in configs:
                    for t in (ends if r % 2 == 0 else ends[::-1]):
                        res = run_json([a.bench, c, str(steps[(c, 0)]), str(a.warmup), f"threads={t}"] + ftz, t)
                        busy.setdefault((c, t), []).append(res["ms_per_step"])
                        print(f"  repeat {r + 1} {c:9s} beside a busy process, threads {t} "
                              f"{res['ms_per_step']:9.2f} ms/step", file=sys.stderr)
        finally:
            neighbour.kill()
            neighbour.wait()
    base_ours = run_json([a.bench, "baseline"], 1)["peak_rss_mb"]
    base_theirs = run_json(["/usr/bin/python3", TWIN, "baseline"], 1)["peak_rss_mb"]

    cores = os.cpu_count()
    default_t = max(counts)
    lines = [f"Machine: {cpu_name()}, {cores} cores seen by the OS; {datetime.date.today().isoformat()}; "
             f"{time.time() - started:.0f} s for the whole comparison.",
             "Command: `/usr/bin/python3 bench/compare_train.py " + " ".join(sys.argv[1:]) + "`",
             "",
             ("Subnormal floats flushed to zero on both sides. " if a.flush_denormals else "") +
             f"Medians over {a.repeat} alternating repetitions (after {a.warmup} warm-up steps each) of "
             + ", ".join(f"{c}{f' T={s}' if s else ''} {steps[(c, s)]}" for c, s in jobs) + " steps. "
             "sgemm 512^3 in the same run: " +
             ", ".join(f"{statistics.median(sgemm[t]):.0f} GFLOP/s at {t} thread{'s' if t > 1 else ''}" for t in counts) +
             ". \"limit\" = the model's own matrix products alone at that thread count (bench_train_step gemm-rate).",
             ""]
    for t in counts:
        lines += [f"### {t} thread{'s' if t > 1 else ''} each side", "",
                  "| config | headlab ms/step | tiled ms/step | PyTorch ms/step | PyTorch / headlab | PyTorch / tiled | "
                  "headlab GFLOP/s | of limit (default / tiled) | limit GFLOP/s |",
                  "|---|---|---|---|---|---|---|---|---|"]
        for c, s in jobs:
            o, ti, p = (med(cells[(c, s, t, k)]) for k in ("headlab", "tiled", "pytorch"))
            flops = cells[(c, s, t, "headlab")][0]["flops_per_step"]
            lim = statistics.median(rates[(c, s, t)])
            name = c if not s else f"lm T={s} B={cells[(c, s, t, 'headlab')][0]['batch']}"
            lines.append(f"| {name} | {o:.2f} | {ti:.2f} | {p:.2f} | **{p / o:.2f}x** | **{p / ti:.2f}x** | "
                         f"{flops / (o * 1e6):.1f} | {100 * flops / (o * 1e6) / lim:.0f}% / "
                         f"{100 * flops / (ti * 1e6) / lim:.0f}% | {lim:.0f} |")
        lines.append("")
    if len(counts) > 1:
        lines += [f"### Scaling and best counts", "",
                  "| config | headlab 1 -> " + str(default_t) + " threads | tiled 1 -> " + str(default_t) +
                  " | PyTorch best count | headlab at " + str(default_t) + " vs PyTorch at its best |",
                  "|---|---|---|---|---|"]
        for c, s in jobs:
            name = c if not s else f"lm T={s}"
            o1, on = med(cells[(c, s, counts[0], "headlab")]), med(cells[(c, s, default_t, "headlab")])
            t1, tn = med(cells[(c, s, counts[0], "tiled")]), med(cells[(c, s, default_t, "tiled")])
            best_t = min(counts, key=lambda t: med(cells[(c, s, t, "pytorch")]))
            pb = med(cells[(c, s, best_t, "pytorch")])
            best_ours = min(on, tn)
            lines.append(f"| {name} | **{o1 / on:.2f}x** | {t1 / tn:.2f}x | {best_t} ({pb:.2f} ms) | "
                         f"**{pb / on:.2f}x** default, {pb / tn:.2f}x tiled |")
        lines.append("")
    if busy:
        lo, hi = counts[0], max(counts)
        lines += ["### Beside one busy process (headlab, default attention)", "",
                  f"| config | {lo} thread ms/step | {hi} threads ms/step | {hi} / {lo} (above 1: the default is slower) |",
                  "|---|---|---|---|"]
        for c in configs:
            m1, mn = statistics.median(busy[(c, lo)]), statistics.median(busy[(c, hi)])
            lines.append(f"| {c} | {m1:.2f} | {mn:.2f} | **{mn / m1:.2f}** |")
        lines.append("")
    if len(counts) > 1:
        lo, hi = counts[0], default_t
        targets = []  # (what, measured, target, higher is better, unit)

        def speedup(c, side):
            return med(cells[(c, 0, lo, side)]) / med(cells[(c, 0, hi, side)])

        def of_limit(c):
            flops = cells[(c, 0, lo, "headlab")][0]["flops_per_step"]
            return 100 * flops / (med(cells[(c, 0, lo, "headlab")]) * 1e6) / statistics.median(rates[(c, 0, lo)])

        for c, goal in (("copy", 1.6), ("translate", 1.7), ("lm", 1.8)):
            if c in configs:
                targets.append((f"{c}: headlab {lo} -> {hi} threads", speedup(c, "headlab"), goal, True, "x"))
        if "lm" in configs:
            targets.append((f"lm: tiled {lo} -> {hi} threads", speedup("lm", "tiled"), 1.6, True, "x"))
        for c, goal in (("copy", 3.0), ("translate", 2.2), ("lm", 2.2)):
            if c in configs:
                pb = min(med(cells[(c, 0, t, "pytorch")]) for t in counts)
                targets.append((f"{c}: headlab at {hi} against PyTorch at its best", pb / med(cells[(c, 0, hi, "headlab")]),
                                goal, True, "x"))
        for c in configs:
            if busy:
                ratio = statistics.median(busy[(c, hi)]) / statistics.median(busy[(c, lo)])
                targets.append((f"{c}: beside a busy process, {hi} threads / {lo}", ratio, 1.0, False, ""))
        for c, goal in (("copy", 80), ("translate", 80), ("lm", 88)):
            if c in configs and lo == 1:
                targets.append((f"{c}: at 1 thread, of the matrix-product limit", of_limit(c), goal, True, "%"))
        lines += ["### Targets", "", "| target | measured | goal | met |", "|---|---|---|---|"]
        for what, value, goal, higher, unit in targets:
            met = value >= goal if higher else value <= goal
            sign = ">=" if higher else "<="
            lines.append(f"| {what} | {value:.2f}{unit} | {sign} {goal:g}{unit} | {'yes' if met else '**no**'} |")
        lines.append("")
    lines += ["### Peak memory (RSS, MB) at 1 thread", "",
              f"Baselines: an empty headlab process {base_ours:.0f} MB; PyTorch's import and a trivial backward "
              f"{base_theirs:.0f} MB.", "",
              "| config | headlab | PyTorch | ratio | headlab net | PyTorch net | net ratio |",
              "|---|---|---|---|---|---|---|"]
    for c, s in jobs:
        name = c if not s else f"lm T={s}"
        ro = max(x["peak_rss_mb"] for x in cells[(c, s, counts[0], "headlab")])
        rt = max(x["peak_rss_mb"] for x in cells[(c, s, counts[0], "pytorch")])
        no, nt = ro - base_ours, rt - base_theirs
        net_ratio = f"**{no / nt:.2f}**" if nt > 0 else "-"
        lines.append(f"| {name} | {ro:.0f} | {rt:.0f} | {ro / rt:.2f} | {no:.0f} | {nt:.0f} | {net_ratio} |")
    report = "\n".join(lines)
    print(report)
    if a.out:
        with open(a.out, "w") as f:
            f.write(report + "\n")


if __name__ == "__main__":
    main()
