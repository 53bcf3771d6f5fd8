#!/usr/bin/env bash
# The memory estimate of `headlab train` (headlab/train/memory_estimate.hpp) against the peak RSS
# of the same run, for runs that stress each of its parts: wide models (parameters, Adam, the
# checkpoint save), long sequences (attention weights), big evaluations, the tiled kernel, the
# decoder-only model and the translation corpus. Each run trains a few steps with evaluations and
# saves; a --resume of it reads the checkpoint back.
#
#   bench/memory_estimate.sh [BUILD_DIR]     (default build/release; ROWS=TEXT: only the runs
#                                            whose label holds TEXT)
#
# Prints a Markdown table: the estimate (what `--max-memory 1` reports), the measured peak
# resident set (GNU time's %M) and estimate / peak. The estimate must be above the peak (it is an
# upper bound: a run it lets through fits) and should be within about 2x of it.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/release}
bin=$build/apps/headlab
[[ -x $bin ]] || { echo "no $bin; build first (cmake --build --preset release)" >&2; exit 2; }
[[ -x /usr/bin/time ]] || { echo "needs GNU time (apt-get install time)" >&2; exit 2; }
export HEADLAB_THREADS=1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
small=datasets/de-en/small

# The estimate in MB, from the refusal `--max-memory 1` gives ("needs about 1.1 GB (..."). For
# translate that is the check before the corpus is read (vocabularies of 4); a second probe with
# a limit just above it reaches the check with the corpus's vocabularies and reports that one.
refusal_mb() {
  { "$bin" train "$@" 2>&1 || true; } |
    sed -n 's/.*needs about \([0-9.]*\) \([MG]\)B.*/\1 \2/p' |
    awk '{ print ($2 == "G") ? $1 * 1024 : $1 }'
}
estimate_mb() {
  local first second
  first=$(refusal_mb "$@" --max-memory 1)
  if [[ " $* " == *" translate "* ]]; then
    second=$(refusal_mb "$@" --max-memory "$(echo "$first + 0.1" | bc -l)M" --run-dir "$work/probe")
    rm -rf "$work/probe"
    [[ -n $second ]] && first=$second
  fi
  echo "$first"
}

# Peak RSS in MB of one command; fails the script when the command fails.
peak_mb() {
  local log=$work/log
  if ! /usr/bin/time -f 'peak-rss-kb %M' "$@" > "$log" 2>&1; then
    echo "failed: $*" >&2
    tail -n 5 "$log" >&2
    exit 1
  fi
  sed -n 's/^peak-rss-kb //p' "$log" | awk '{ printf "%.1f", $1 / 1024 }'
}

printf '| %-48s | %9s | %9s | %6s |\n' "run (a few steps, evaluations, saves)" "estimate" "peak RSS" "ratio"
printf '|%s|%s|%s|%s|\n' "$(printf -- '-%.0s' {1..50})" "-----------" "-----------" "--------"
measure() {
  local label=$1
  shift
  [[ -z ${ROWS:-} || $label == *$ROWS* ]] || return 0
  local run=$work/run
  rm -rf "$run"
  local est rss
  est=$(estimate_mb "$@")
  rss=$(peak_mb "$bin" train "$@" --progress none --run-dir "$run")
  printf '| %-48s | %6s MB | %6s MB | %5.2fx |\n' "$label" "$est" "$rss" "$(echo "$est / $rss" | bc -l)"
  if [[ ${RESUME:-0} == 1 ]]; then
    local more=$(( $(sed -n "s/^steps=//p" "$run/config.ini") + 2 ))
    rss=$(peak_mb "$bin" train --config "$run/config.ini" --run-dir "$run" --resume --steps "$more" --progress none)
    printf '| %-48s | %6s MB | %6s MB | %5.2fx |\n' "  the same, --resume" "$est" "$rss" "$(echo "$est / $rss" | bc -l)"
  fi
}

few="--steps 4 --eval-every 2 --save-every 2"
measure "copy, defaults" $few
measure "copy, length 64, batch 64" $few --length 64 --batch 64
measure "copy, length 64, batch 64, 200 eval sequences" $few --length 64 --batch 64 --eval-sequences 200
measure "copy, length 128, batch 32, 200 eval sequences" $few --length 128 --batch 32 --eval-sequences 200 --heads 8
measure "  the same, tiled attention" $few --length 128 --batch 32 --eval-sequences 200 --heads 8 --tiled-attention
measure "copy, d 256, ff 1024, 4 layers, 8 heads" $few --d-model 256 --ff 1024 --layers 4 --heads 8
RESUME=1 measure "copy, d 512, ff 2048, 8 heads, 1 eval sequence" $few --d-model 512 --ff 2048 --heads 8 --eval-sequences 1
measure "copy, d 512, ff 2048, 8 heads, batch 256" $few --d-model 512 --ff 2048 --heads 8 --batch 256 --eval-sequences 100
measure "induction, defaults" $few --task induction
measure "induction, length 64, d 256, 8 heads" $few --task induction --length 64 --d-model 256 --heads 8
RESUME=1 measure "translate (small/), defaults" $few --task translate --train $small/train.tsv --valid $small/valid.tsv --eval-sentences 50
measure "translate (small/), 4096 tokens, d 256" $few --task translate --train $small/train.tsv --valid $small/valid.tsv --eval-sentences 50 --max-tokens 4096 --d-model 256 --ff 1024
