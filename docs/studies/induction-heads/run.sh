#!/bin/sh
# Trains the 15 runs of recipe.ini into RUNS (default runs/induction-heads), JOBS at a time
# (default 2), one thread each; a run whose summary.json exists is skipped. From the repository root:
#   docs/studies/induction-heads/run.sh [RUNS] [JOBS]
set -eu
here=docs/studies/induction-heads
runs=${1:-runs/induction-heads}
jobs=${2:-2}
headlab=${HEADLAB:-build/release/apps/headlab}
mkdir -p "$runs"
# cell name, layers, head size (0 = d_model / heads)
cells='2-layer 2 0
1-layer 1 0
1-layer-wide 1 32'
for seed in 1 2 3 4 5; do
  printf '%s\n' "$cells" | while read -r cell layers dim; do
    printf '%s %s %s %s\n' "$cell" "$layers" "$dim" "$seed"
  done
done | xargs -P "$jobs" -L 1 sh -c '
  runs=$0 headlab=$1 here=$2 cell=$3 layers=$4 dim=$5 seed=$6
  dir="$runs/$cell-seed$seed"
  [ -f "$dir/summary.json" ] && exit 0
  HEADLAB_THREADS=1 "$headlab" train --config "$here/recipe.ini" --layers "$layers" --head-dim "$dim" \
    --seed "$seed" --run-dir "$dir" --overwrite --progress none > "$runs/$cell-seed$seed.log" 2>&1
' "$runs" "$headlab" "$here"
