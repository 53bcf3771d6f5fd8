#!/bin/sh
# Trains the 35 runs of recipe.ini into RUNS (default runs/head-count-grammar), JOBS at a time
# (default 2), one thread each; a run whose summary.json exists is skipped. From the repository root:
#   docs/studies/head-count-grammar/run.sh [RUNS] [JOBS]
set -eu
here=docs/studies/head-count-grammar
runs=${1:-runs/head-count-grammar}
jobs=${2:-2}
headlab=${HEADLAB:-build/release/apps/headlab}
mkdir -p "$runs"
# cell name, heads, head size (0 = D / h)
cells='compute-h1 1 0
compute-h2 2 0
compute-h4 4 0
compute-h8 8 0
headsize-h1 1 16
headsize-h2 2 16
headsize-h4 4 16'
for seed in 1 2 3 4 5; do
  printf '%s\n' "$cells" | while read -r cell heads dim; do
    printf '%s %s %s %s\n' "$cell" "$heads" "$dim" "$seed"
  done
done | xargs -P "$jobs" -L 1 sh -c '
  runs=$0 headlab=$1 here=$2 cell=$3 heads=$4 dim=$5 seed=$6
  dir="$runs/$cell-seed$seed"
  [ -f "$dir/summary.json" ] && exit 0
  HEADLAB_THREADS=1 "$headlab" train --config "$here/recipe.ini" --heads "$heads" --head-dim "$dim" \
    --seed "$seed" --run-dir "$dir" --overwrite --progress none > "$runs/$cell-seed$seed.log" 2>&1
' "$runs" "$headlab" "$here"
