#!/usr/bin/env python3
"""Measures every finished run of the head-count-grammar recipe into runs.csv (one row a run).

  docs/studies/head-count-grammar/measure.py RUNS [--headlab build/release/apps/headlab]

For each RUNS/runs/<cell>-seed<k>/checkpoint.safetensors (as `headlab study run` trains them; the
final weights, step 800):
  exact        sentence exact match on datasets/grammar-de-en/test.tsv (1 000 pairs), `headlab translate`
               at its options pinned in ../study_runs.py (beam 4, length penalty 0.6: translate's
               defaults, with which this study was measured; not greedy), output tokens against the
               reference's tokens (lower case, punctuation split off, as headlab's tokenizer reads
               this corpus)
  exact_verb_final, exact_v2   the same on the test pairs with a weil/dass/wenn clause, and on
               those that open with a fronted adverb (heute/morgen/jetzt: V2 inversion)
  bleu         corpus BLEU-4 of those outputs (`headlab bleu --tokenize`)
  best_aer     the lowest AER of any cross-attention head (`headlab align`, all 1 000 test pairs)
  mean_aer_l0, mean_aer_l1     AER of the mean over the heads of decoder layer 0 and 1
plus the run's options that vary, its steps, training seconds, the CPU and the commit of the
binary (RUNS/commit.txt, written by the person who ran `headlab study run`).
Written from the repository root; stdlib only.
"""
import argparse
import concurrent.futures
import csv
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from study_runs import cpu_model, tool_command, write_runs_csv  # noqa: E402

TEST = "datasets/grammar-de-en/test.tsv"
CELLS = {  # cell -> (comparison family, heads, head size)
    "compute-h1": ("fixed compute", 1, 128), "compute-h2": ("fixed compute", 2, 64),
    "compute-h4": ("fixed compute", 4, 32), "compute-h8": ("fixed compute", 8, 16),
    "headsize-h1": ("fixed head size", 1, 16), "headsize-h2": ("fixed head size", 2, 16),
    "headsize-h4": ("fixed head size", 4, 16),
}


def tokens(sentence):
    return re.findall(r"\w+|[^\w\s]", sentence.lower())


def run(cmd, stdin=None):
    return subprocess.run(cmd, input=stdin, capture_output=True, text=True, check=True).stdout


def measure(headlab, run_dir, pairs):
    ckpt = os.path.join(run_dir, "checkpoint.safetensors")
    sources = "".join(p[0] + "\n" for p in pairs)
    outputs = run(tool_command(headlab, "translate", "--checkpoint", ckpt), sources).splitlines()
    assert len(outputs) == len(pairs), run_dir
    right = [out.split() == tokens(p[1]) for out, p in zip(outputs, pairs)]
    verb_final = [r for r, p in zip(right, pairs) if {"weil", "dass", "wenn"} & set(tokens(p[0]))]
    v2 = [r for r, p in zip(right, pairs) if tokens(p[0])[0] in ("heute", "morgen", "jetzt")]
    hyp = os.path.join(run_dir, "test.measure.txt")
    with open(hyp, "w") as f:
        f.write("\n".join(outputs) + "\n")
    bleu = run(tool_command(headlab, "bleu", "--tokenize", "--ref", os.path.join(run_dir, "test.ref.measure.txt"),
                            "--hyp", hyp))
    bleu = float(re.search(r"BLEU = ([0-9.]+)", bleu).group(1))
    run(tool_command(headlab, "align", "--checkpoint", ckpt, "--data", TEST, "--out", os.path.join(run_dir, "align"),
                     "--overwrite"))
    with open(os.path.join(run_dir, "align", "alignment.csv")) as f:
        rows = list(csv.DictReader(f))
    heads = [float(r["aer"]) for r in rows if r["head"] != "mean"]
    means = {r["layer"]: float(r["aer"]) for r in rows if r["head"] == "mean"}
    return {
        "exact": sum(right) / len(right), "exact_verb_final": sum(verb_final) / len(verb_final),
        "exact_v2": sum(v2) / len(v2), "n_verb_final": len(verb_final), "n_v2": len(v2), "bleu": bleu,
        "best_aer": min(heads), "mean_aer_l0": means.get("0"), "mean_aer_l1": means.get("1"),
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("runs")
    ap.add_argument("--headlab", default="build/release/apps/headlab")
    ap.add_argument("--out", default="docs/studies/head-count-grammar/runs.csv")
    ap.add_argument("--jobs", type=int, default=2, help="runs measured at once, one thread each")
    a = ap.parse_args()
    with open(TEST, encoding="utf-8") as f:
        pairs = [line.rstrip("\n").split("\t") for line in f]
    commit = open(os.path.join(a.runs, "commit.txt")).read().strip()
    os.environ["HEADLAB_THREADS"] = "1"
    todo = []
    for cell, (family, heads, head_size) in CELLS.items():
        for seed in range(1, 6):
            d = os.path.join(a.runs, "runs", f"{cell}-seed{seed}")
            if not os.path.exists(os.path.join(d, "summary.json")):
                print(f"missing: {d} (not finished)", file=sys.stderr)
                continue
            with open(os.path.join(d, "summary.json")) as f:
                summary = json.load(f)
            ref = os.path.join(d, "test.ref.measure.txt")
            with open(ref, "w") as f:
                f.write("".join(p[1] + "\n" for p in pairs))
            todo.append((cell, family, heads, head_size, seed, d, summary))
    with concurrent.futures.ThreadPoolExecutor(a.jobs) as pool:
        measured = list(pool.map(lambda t: measure(a.headlab, t[5], pairs), todo))
    rows = []
    for (cell, family, heads, head_size, seed, d, summary), m in zip(todo, measured):
        row = {"cell": cell, "family": family, "heads": heads, "head_size": head_size, "seed": seed,
               "steps": summary.get("steps_done", summary.get("steps")),
               "train_seconds": round(summary.get("train_seconds", float("nan")), 1),
               "threads": 1, "cpu": cpu_model(), "arithmetic": summary.get("arithmetic", ""), "commit": commit}
        row.update({k: (round(v, 6) if isinstance(v, float) else v) for k, v in m.items()})
        rows.append(row)
        print(cell, seed, row["exact"], row["bleu"], row["best_aer"], file=sys.stderr)
    write_runs_csv(rows, a.out)


if __name__ == "__main__":
    main()
