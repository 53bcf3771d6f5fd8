#!/usr/bin/python3
"""Two builds of bench_train_step (or any program that prints bench_train_step's JSON line), timed in
alternating pairs, so that a slow minute of a shared machine falls on both sides.

    /usr/bin/python3 bench/ab_pairs.py OLD NEW PAIRS [ARGS...]
    e.g. bench/ab_pairs.py /tmp/bench_before build/release/bench/bench_train_step 8 translate 20 3 threads=1

Pair i runs OLD then NEW when i is odd, NEW then OLD when even. Prints each pair's ms per step and
NEW / OLD, then the median ratio and in how many pairs NEW was faster.
"""
import json
import statistics
import subprocess
import sys


def ms_per_step(program, args):
    try:
        done = subprocess.run([program] + args, capture_output=True, text=True)
    except OSError as e:
        sys.exit(f"ab_pairs: cannot run {program}: {e.strerror}")
    if done.returncode != 0:
        sys.exit(f"ab_pairs: {program} exited {done.returncode}: {done.stderr.strip()[-500:]}")
    try:
        return float(json.loads(done.stdout.strip().splitlines()[-1])["ms_per_step"])
    except (IndexError, ValueError, KeyError, TypeError):
        sys.exit(f"ab_pairs: {program} printed no JSON line with ms_per_step")


def main():
    if len(sys.argv) < 4 or not sys.argv[3].isdigit() or int(sys.argv[3]) < 1:
        sys.exit("usage: ab_pairs.py OLD NEW PAIRS [ARGS...]  (PAIRS a whole number >= 1)")
    old, new, pairs, args = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:]
    ratios, faster = [], 0
    for i in range(1, pairs + 1):
        if i % 2:
            a = ms_per_step(old, args)
            b = ms_per_step(new, args)
        else:
            b = ms_per_step(new, args)
            a = ms_per_step(old, args)
        ratios.append(b / a)
        faster += b < a
        print(f"pair {i}: old {a:.3f} ms, new {b:.3f} ms, new / old {b / a:.3f}", flush=True)
    print(f"median new / old {statistics.median(ratios):.4f}; new faster in {faster} of {pairs}")


if __name__ == "__main__":
    main()
