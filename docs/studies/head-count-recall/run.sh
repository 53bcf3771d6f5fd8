#!/bin/sh
# Trains the 45 runs of recipe.ini (the cells of grid.txt x seeds 1-5) into RUNS (default
# runs/head-count-recall), JOBS at a time (default 2), one thread each, through ../run_grid.sh; a finished run is
# skipped. From the repository root:
#   docs/studies/head-count-recall/run.sh [RUNS] [JOBS]
exec docs/studies/run_grid.sh docs/studies/head-count-recall "${1:-runs/head-count-recall}" "${2:-2}"
