#!/bin/sh
# Trains a study's grid: every cell of STUDY/grid.txt with seeds 1-5, each run
#   headlab train --config STUDY/recipe.ini <the cell's flags> --seed S --run-dir RUNS/<cell>-seed<S>
# JOBS at a time (default 2), one thread each; a run whose summary.json exists is skipped. The log
# of a run is RUNS/<cell>-seed<S>.log. From the repository root (HEADLAB: the binary, default
# build/release/apps/headlab):
#   docs/studies/run_grid.sh docs/studies/<study> RUNS [JOBS]
# grid.txt: one cell a line, its name then its train flags ("compute-h1 --heads 1 --head-dim 0");
# the flags are plain words (no spaces or quotes inside a value) and split at spaces.
set -eu
study=$1
runs=$2
jobs=${3:-2}
headlab=${HEADLAB:-build/release/apps/headlab}
mkdir -p "$runs"
for seed in 1 2 3 4 5; do
  while read -r cell flags; do
    printf '%s %s %s\n' "$seed" "$cell" "$flags"
  done < "$study/grid.txt"
done | xargs -P "$jobs" -L 1 sh -c '
  runs=$0 headlab=$1 study=$2 seed=$3 cell=$4
  shift 4
  dir="$runs/$cell-seed$seed"
  [ -f "$dir/summary.json" ] && exit 0
  HEADLAB_THREADS=1 "$headlab" train --config "$study/recipe.ini" "$@" \
    --seed "$seed" --run-dir "$dir" --overwrite --progress none > "$runs/$cell-seed$seed.log" 2>&1
' "$runs" "$headlab" "$study"
