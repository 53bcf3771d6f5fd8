#!/usr/bin/python3
"""Study 6's charts and per-seed table from runs.csv (which `headlab study report` wrote, with
summary.csv, comparisons.csv and report.md, the page's block checked by ctest
docs.study_gate_lr_sweep_block).

  /usr/bin/python3 docs/studies/gate-lr-sweep/report.py [--check]

Writes the three charts of docs/studies/gate-lr-sweep.md (held-out loss, loss spikes and first-token
mass against the peak rate; every seed a dot, the mean a line; the count bigram's loss and uniform
attention's first-token mass as dashed lines) and the page's per-seed block at lr 0.5. --check writes
nothing and exits 1 naming each output that differs (ctest docs.study_gate_lr_sweep_tables).
"""
import csv
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from study_tools import log_x_chart, replace_block, with_reference_line, write_or_check  # noqa: E402

PAGE = os.path.join(HERE, "..", "gate-lr-sweep.md")
GATES = ("none", "headwise", "elementwise")
COLOURS = {"none": "#1f77b4", "headwise": "#ff7f0e", "elementwise": "#2ca02c"}
BIGRAM = 2.283  # nats/char, a count bigram on the same held-out tenth (study 14's runs.csv)
UNIFORM_SINK = 0.059  # uniform causal attention's mass on the first of 64 positions, queries 1..63


def main():
    with open(os.path.join(HERE, "runs.csv")) as f:
        runs = list(csv.DictReader(f))
    lr = lambda r: float(r["cell"].split("-lr")[1])
    seeds = sorted({int(r["seed"]) for r in runs})
    footer = f"{len(runs)} runs, {len(seeds)} seeds a cell, 300 steps; {runs[0]['cpu']}, 1 thread a run"
    geometry = dict(width=760, height=380, left=70, top=40, bottom=60)

    charts = {}
    for metric, title, y_label, lo, hi, tick, ref, ref_label in (
            ("valid_loss", "Held-out loss against the peak learning rate", "nats/char", 1.9, 3.1, 0.1, BIGRAM,
             f"count bigram {BIGRAM}"),
            ("loss_spikes", "Loss spikes against the peak learning rate", "steps > 0.5 nats above the last 20", 0, 70,
             10, None, None),
            ("sink_mass", "First-position attention against the peak learning rate", "mass on position 0", 0, 0.14,
             0.02, UNIFORM_SINK, f"uniform {UNIFORM_SINK}")):
        points = {g: {} for g in GATES}
        for r in runs:
            gate = r["cell"].split("-lr")[0]
            points[gate].setdefault(lr(r), []).append(float(r[metric]) if r[metric] not in ("", "nan") else None)
        svg = log_x_chart(f"Study 6: {title}", y_label, [(g, COLOURS[g], points[g]) for g in GATES], lo, hi, tick,
                          footer)
        if ref is not None:
            svg = with_reference_line(svg, ref, lo, hi, ref_label, **geometry)
        charts[os.path.join(HERE, "..", f"gate_lr_{metric}.svg")] = svg
    lines = [f"| gate | valid loss (seeds {' / '.join(map(str, seeds))}) | loss spikes | max loss jump (nats) |",
             "|---|---|---|---|"]
    for g in GATES:
        cell = sorted((r for r in runs if r["cell"] == f"{g}-lr0.5"), key=lambda r: int(r["seed"]))
        lines.append(f"| {g} | " + " / ".join(f"{float(r['valid_loss']):.3f}" for r in cell) + " | "
                     + " / ".join(str(int(float(r["loss_spikes"]))) for r in cell) + " | "
                     + " / ".join(f"{float(r['max_loss_jump']):.2f}" for r in cell) + " |")
    outputs = dict(charts)
    outputs[PAGE] = replace_block(open(PAGE).read(), lines, "seeds")
    write_or_check(outputs, "gate-lr-sweep.md")


if __name__ == "__main__":
    main()
