#!/usr/bin/python3
"""How headlab's threads wait: ms per training step on an idle machine and beside a busy process.

    /usr/bin/python3 bench/wait_policy.py [--bench build/release/bench/bench_train_step]
                                          [--other LABEL=PATH] [--configs copy,translate,lm]
                                          [--repeat 3] [--spin-us 0,50,1000] [--out FILE.md]

For each configuration of bench_train_step (bench/train_step_bench.cpp) it runs one training step
loop at --threads 1 and at every core (the default of the command line), first on an idle machine
and then beside one busy process (a shell loop pinned to the last core with taskset, as a compile
job or another run would be), --repeat times each, alternating the binaries. Reported: the median
ms/step, and the ratio "every core / one thread" in each condition: above 1 means the default is
slower than --threads 1. --other adds a second binary (e.g. a build of an earlier commit) measured
in the same way and the same run; --spin-us also measures this build's idle cost at each spin
budget (HEADLAB_SPIN_US: how long a waiting thread spins before it sleeps; 0 = at once).
"""
import argparse
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from compare_train import cpu_name, run_json  # noqa: E402

STEPS = {"copy": (200, 10), "translate": (30, 3), "lm": (6, 2)}


def busy_process(cores):
    """A shell loop that never ends, pinned to the last core."""
    return subprocess.Popen(["taskset", "-c", str(cores - 1), "sh", "-c", "while :; do :; done"])


def step_ms(bench, config, threads, spin_us=None):
    steps, warmup = STEPS[config]
    if spin_us is not None:
        os.environ["HEADLAB_SPIN_US"] = str(spin_us)
    try:
        return run_json([bench, config, str(steps), str(warmup), f"threads={threads}"], threads)["ms_per_step"]
    finally:
        os.environ.pop("HEADLAB_SPIN_US", None)


def spread(values):
    """median [min - max]"""
    return f"{statistics.median(values):.2f} [{min(values):.2f} - {max(values):.2f}]"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bench", default=os.path.join(os.path.dirname(HERE), "build/release/bench/bench_train_step"))
    ap.add_argument("--other", action="append", default=[], help="LABEL=PATH of another bench_train_step")
    ap.add_argument("--configs", default="copy,translate,lm")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--spin-us", default="", help="spin budgets to measure idle, e.g. 0,50,1000")
    ap.add_argument("--out")
    a = ap.parse_args()
    cores = os.cpu_count() or 1
    binaries = [("this build", a.bench)] + [tuple(o.split("=", 1)) for o in a.other]
    configs = a.configs.split(",")
    started = time.time()
    ms = {}  # (label, config, condition, threads) -> [ms]
    for condition in ("idle", "beside one busy process"):
        busy = busy_process(cores) if condition != "idle" else None
        try:
            for r in range(a.repeat):
                order = binaries if r % 2 == 0 else binaries[::-1]
                for config in configs:
                    for label, path in order:
                        for threads in (1, cores):
                            ms.setdefault((label, config, condition, threads), []).append(
                                step_ms(path, config, threads))
        finally:
            if busy:
                busy.kill()
                busy.wait()
    spins = {}
    for us in [int(s) for s in a.spin_us.split(",") if s]:
        for config in configs:
            spins[(config, us)] = statistics.median(step_ms(a.bench, config, cores, us) for _ in range(a.repeat))

    lines = [f"# How threads wait: {cpu_name()}, {cores} cores, {a.repeat} repetitions "
             f"({time.time() - started:.0f} s)", "",
             f"ms per training step (bench_train_step), median [min - max] of the repetitions; 'ratio' = "
             f"{cores} threads / 1 thread, of the medians (above 1: the default is slower than --threads 1).", "",
             "| binary | config | condition | 1 thread | %d threads | ratio |" % cores, "|---|---|---|---|---|---|"]
    for label, _ in binaries:
        for config in configs:
            for condition in ("idle", "beside one busy process"):
                one, all_ = ms[(label, config, condition, 1)], ms[(label, config, condition, cores)]
                lines.append(f"| {label} | {config} | {condition} | {spread(one)} | {spread(all_)} | "
                             f"{statistics.median(all_) / statistics.median(one):.2f} |")
    if spins:
        budgets = sorted({us for _, us in spins})
        lines += ["", f"This build at {cores} threads, idle, by spin budget (HEADLAB_SPIN_US, ms per step):", "",
                  "| config | " + " | ".join(f"{us} us" for us in budgets) + " |",
                  "|---|" + "---|" * len(budgets)]
        for config in configs:
            lines.append(f"| {config} | " + " | ".join(f"{spins[(config, us)]:.2f}" for us in budgets) + " |")
    text = "\n".join(lines) + "\n"
    print(text, end="")
    if a.out:
        with open(a.out, "w", encoding="utf-8") as f:
            f.write(text)


if __name__ == "__main__":
    main()
