#!/usr/bin/env bash
# fuzz/make_fuzz_run_dir_seeds.sh [BUILD_DIR]: the seed inputs of fuzz/fuzz_run_dir.cpp, written
# to fuzz/corpus/fuzz_run_dir/. Each seed is a run directory's metrics.jsonl, the line "--8<--", and
# its checkpoint.safetensors, from a real tiny copy-task run with the options fuzz_run_dir resumes
# with (keep the two in step):
#   finished    trained to step 4, its log as written
#   killed      saved at step 2, its log holding steps 1-3 (a kill between two saves)
#   torn        the log of `finished` with its last line cut in half (a full disk, a kill mid-write)
set -euo pipefail
cd "$(dirname "$0")/.."
hl=${1:-build/release}/apps/headlab
out=fuzz/corpus/fuzz_run_dir
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
tiny=(--task copy --d-model 8 --heads 2 --ff 16 --layers 1 --batch 2 --eval-every 1000 --eval-sequences 2
      --stop-at-perfect=false --progress none)
"$hl" train "${tiny[@]}" --steps 4 --run-dir "$tmp/finished" > /dev/null
"$hl" train "${tiny[@]}" --steps 2 --run-dir "$tmp/killed" > /dev/null
head -n 3 "$tmp/finished/metrics.jsonl" > "$tmp/killed/metrics.jsonl"
mkdir -p "$out"
seed() {  # seed NAME METRICS CHECKPOINT
  { cat "$2"; printf '\n--8<--\n'; cat "$3"; } > "$out/$1"
}
seed finished "$tmp/finished/metrics.jsonl" "$tmp/finished/checkpoint.safetensors"
seed killed "$tmp/killed/metrics.jsonl" "$tmp/killed/checkpoint.safetensors"
head -c -20 "$tmp/finished/metrics.jsonl" > "$tmp/torn.jsonl"
seed torn "$tmp/torn.jsonl" "$tmp/finished/checkpoint.safetensors"
ls -l "$out"
