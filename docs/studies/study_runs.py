"""What every study's measure.py shares (stdlib only): the CPU's name and writing runs.csv."""
import csv


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
