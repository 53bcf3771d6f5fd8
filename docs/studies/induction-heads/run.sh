#!/bin/sh
# Trains the 15 runs of recipe.ini (the cells of grid.txt x seeds 1-5) into RUNS (default
# runs/induction-heads), JOBS at a time (default 2), one thread each, through ../run_grid.sh; a finished run is
# skipped. From the repository root:
#   docs/studies/induction-heads/run.sh [RUNS] [JOBS]
exec docs/studies/run_grid.sh docs/studies/induction-heads "${1:-runs/induction-heads}" "${2:-2}"
