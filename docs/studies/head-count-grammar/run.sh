#!/bin/sh
# Trains the 35 runs of recipe.ini (the cells of grid.txt x seeds 1-5) into RUNS (default
# runs/head-count-grammar), JOBS at a time (default 2), one thread each, through ../run_grid.sh; a finished run is
# skipped. From the repository root:
#   docs/studies/head-count-grammar/run.sh [RUNS] [JOBS]
exec docs/studies/run_grid.sh docs/studies/head-count-grammar "${1:-runs/head-count-grammar}" "${2:-2}"
