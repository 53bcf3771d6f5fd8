"""What every study's measure.py shares (stdlib only): the CPU's name, writing runs.csv and the
held-out text of the lm studies."""
import csv
import os
import subprocess

LM_TEXT = "datasets/kjv/kjv.txt"


def split_held_out(text):
    """(train, valid) as the trainer cuts a text: the last floor(0.1 x characters) characters held out."""
    cut = len(text) - len(text) // 10
    return text[:cut], text[cut:]


def write_held_out(runs, text_path=LM_TEXT):
    """RUNS/valid.txt: the held-out tenth of text_path as the trainer cuts it; returns its path."""
    with open(text_path, encoding="utf-8") as f:
        _, valid = split_held_out(f.read())
    path = os.path.join(runs, "valid.txt")
    with open(path, "w", encoding="utf-8") as f:
        f.write(valid)
    return path


def cpu_model():
    """The first "model name" of /proc/cpuinfo ("AMD EPYC"), or "unknown"."""
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return "unknown"


def write_runs_csv(rows, path):
    """rows (dicts with the same keys, in column order) as a CSV file with a header."""
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]), lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    print(f"wrote {path}: {len(rows)} runs")


def run_seeds(runs):
    """The seeds of the runs in RUNS/runs/<cell>-seed<k>, sorted."""
    return sorted({int(n.rsplit("-seed", 1)[1]) for n in os.listdir(os.path.join(runs, "runs"))})


def heads_rows(headlab, checkpoint, out, flags=()):
    """`headlab heads --checkpoint CHECKPOINT --out OUT --overwrite FLAGS...` on one thread; its heads.csv rows."""
    subprocess.run([headlab, "heads", "--checkpoint", checkpoint, "--out", out, "--overwrite", *flags], check=True,
                   capture_output=True, env=dict(os.environ, HEADLAB_THREADS="1"))
    with open(os.path.join(out, "heads.csv")) as f:
        return list(csv.DictReader(f))


def measure_args(default_out):
    """The command line every measure.py takes: RUNS [--headlab H] [--out DIR]; returns (args, commit),
    commit being the binary's that trained (RUNS/commit.txt)."""
    import argparse
    ap = argparse.ArgumentParser()
    ap.add_argument("runs")
    ap.add_argument("--headlab", default="build/release/apps/headlab")
    ap.add_argument("--out", default=default_out)
    a = ap.parse_args()
    with open(os.path.join(a.runs, "commit.txt")) as f:
        return a, f.read().strip()


def number(text):
    """A CSV field as a float; "" or "nan" (an ungated model's gate) as NaN."""
    return float(text) if text not in ("", "nan") else float("nan")
