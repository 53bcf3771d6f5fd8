#!/usr/bin/python3
"""headlab against PyTorch, one training step of three models, side by side, single-threaded.

    /usr/bin/python3 bench/compare_train.py [--repeat 3] [--steps 20] [--warmup 3] [--configs copy,translate,lm]
                                            [--bench build/release/bench/bench_train_step] [--out FILE.md]
                                            [--flush-denormals]

For every repetition and configuration it runs headlab's bench_train_step and the PyTorch twin
(bench/train_twin.py) one after the other, alternating which goes first, each in its own process
with one thread (OPENBLAS_NUM_THREADS=1, torch.set_num_threads(1)), and an sgemm calibration
(512^3) at the start of each repetition. Per configuration it prints the median over repetitions of
each side's median ms/step, the ratio PyTorch / headlab, headlab's GFLOP/s (3 x forward FLOPs per
step) and that as a fraction of the sgemm GFLOP/s measured in the same run, and both peak RSS.
headlab runs twice per configuration: with the composed attention (the readable reference, the
default) and with the tiled kernel (`AttentionConfig::flash`, bench_train_step's `flash` argument).
--flush-denormals runs both sides with subnormal floats flushed to zero (headlab::set_flush_denormal,
torch.set_flush_denormal): these post-LN models saturate some softmax rows from the first step, and
arithmetic on the resulting subnormals is slow on x86 for both libraries.
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def run_json(cmd):
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env).stdout
    return json.loads(out.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--configs", default="copy,translate,lm")
    ap.add_argument("--bench", default=os.path.join(os.path.dirname(HERE), "build/release/bench/bench_train_step"))
    ap.add_argument("--out", help="also write the Markdown report here")
    ap.add_argument("--flush-denormals", action="store_true", help="both sides flush subnormal floats to zero")
    a = ap.parse_args()
    if not os.path.exists(a.bench):
        sys.exit(f"compare_train: {a.bench} not found; build it first: cmake --build --preset release")
    configs = a.configs.split(",")
    ours = {c: [] for c in configs}
    tiled = {c: [] for c in configs}
    theirs = {c: [] for c in configs}
    sgemm = []
    started = time.time()
    for r in range(a.repeat):
        sgemm.append(run_json([a.bench, "sgemm", "512"])["gflops"])
        for c in configs:
            ftz = ["ftz"] if a.flush_denormals else []
            sides = [("headlab", [a.bench, c, str(a.steps), str(a.warmup)] + ftz),
                     ("pytorch", ["/usr/bin/python3", os.path.join(HERE, "train_twin.py"), c, str(a.steps), str(a.warmup)]
                      + ftz),
                     ("tiled", [a.bench, c, str(a.steps), str(a.warmup), "flash"] + ftz)]
            if r % 2:
                sides.reverse()
            for side, cmd in sides:
                res = run_json(cmd)
                {"headlab": ours, "pytorch": theirs, "tiled": tiled}[side][c].append(res)
                print(f"  repeat {r + 1} {c:9s} {side:8s} {res['ms_per_step']:8.2f} ms/step", file=sys.stderr)
    peak = statistics.median(sgemm)
    lines = [("Subnormal floats flushed to zero on both sides. " if a.flush_denormals else "") +
             f"Single thread, medians over {a.repeat} alternating repetitions of {a.steps} steps "
             f"(after {a.warmup} warm-up steps); sgemm 512^3 in the same run: {peak:.1f} GFLOP/s "
             f"(each repetition: {', '.join(f'{g:.0f}' for g in sgemm)}).",
             "",
             "| config | headlab ms/step | PyTorch ms/step | PyTorch / headlab | headlab GFLOP/s | of sgemm | "
             "headlab RSS MB | PyTorch RSS MB | RSS ratio | ms/step per repetition (headlab/PyTorch) |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    rows = [(c, "", ours[c]) for c in configs] + [(c, " (tiled attention)", tiled[c]) for c in configs]
    for c, label, runs in rows:
        o = statistics.median(x["ms_per_step"] for x in runs)
        t = statistics.median(x["ms_per_step"] for x in theirs[c])
        flops = runs[0]["flops_per_step"]
        gf = flops / (o * 1e6)
        ro = max(x["peak_rss_mb"] for x in runs)
        rt = max(x["peak_rss_mb"] for x in theirs[c])
        spread = " ".join(f"{x['ms_per_step']:.1f}/{y['ms_per_step']:.1f}" for x, y in zip(runs, theirs[c]))
        lines.append(f"| {c}{label} | {o:.2f} | {t:.2f} | **{t / o:.2f}x** | {gf:.1f} | {100 * gf / peak:.0f}% | "
                     f"{ro:.0f} | {rt:.0f} | {ro / rt:.2f} | {spread} |")
    lines += ["", f"Machine: {platform.processor() or platform.machine()}, {os.cpu_count()} vCPUs; "
              f"{time.time() - started:.0f} s for the whole comparison.",
              "Command: `/usr/bin/python3 bench/compare_train.py " + " ".join(sys.argv[1:]) + "`"]
    report = "\n".join(lines)
    print(report)
    if a.out:
        with open(a.out, "w") as f:
            f.write(report + "\n")


if __name__ == "__main__":
    main()
