#!/usr/bin/env python3
"""Prunes every finished run of study 4's recipe and writes runs.csv (one row a run) and curves.csv
(every step of every pruning order of every run).

  docs/studies/pruning/measure.py RUNS [--headlab build/release/apps/headlab]

For each RUNS/runs/model-seed<k>: `headlab prune --random-orders 20` on checkpoint.safetensors, one
thread, over the 179 validation pairs (into RUN/prune; a finished prune is read again, not redone),
and from its prune.csv the numbers docs/studies/prune_study.py describes. Stdlib only; from the
repository root.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from prune_study import measure_main  # noqa: E402

if __name__ == "__main__":
    measure_main("docs/studies/pruning")
