#!/usr/bin/env bash
# Builds the `fuzz` preset (clang, libFuzzer + ASan + UBSan) and runs every fuzz target.
#
#   fuzz/fuzz.sh [--build DIR] [SECONDS] [JOBS] [TARGET...]
#       SECONDS per target (default 20), JOBS targets at a time (default 1), the TARGETs named
#       (default: all). --build DIR: the targets of that configured build tree instead of the fuzz
#       preset's (build/debug-asan, where HEADLAB_FUZZ_PARSERS builds them with coverage in the
#       parser libraries alone: CI's short run, without a build of its own)
#
# Each target starts from a copy of its committed seed corpus (fuzz/corpus/<target>/) in a
# temporary directory, so a run never grows the committed corpus. Inputs longer than 64 KiB are
# not tried (-max_len), one input may take at most 10 s (-timeout) and 2 GiB (-rss_limit_mb,
# which is also the largest single allocation allowed).
# Prints, per target, the executions (libFuzzer's final "Done N runs") and the crashes, and
# exits 1 when any target crashed. A crashing input is kept in <build>/crashes/<target>/
# (build/fuzz/crashes/ by default); reproduce it with   build/fuzz/fuzz/<target> FILE   and shrink
# it with   build/fuzz/fuzz/<target> -minimize_crash=1 -runs=100000 FILE
set -euo pipefail
cd "$(dirname "$0")/.."

build=build/fuzz
if [[ "${1:-}" == --build ]]; then
  [[ -n "${2:-}" && -f "${2:-}/CMakeCache.txt" ]] || { echo "fuzz.sh: --build needs a configured build tree"; exit 2; }
  build=$2
  shift 2
fi
seconds=${1:-20}
jobs=${2:-1}
targets=(fuzz_safetensors fuzz_train_options fuzz_vocabulary fuzz_tsv fuzz_cli_config fuzz_run_dir)
if (( $# > 2 )); then targets=("${@:3}"); fi

if [[ "$build" == build/fuzz ]]; then
  cmake --preset fuzz > /dev/null
  cmake --build --preset fuzz
else
  grep -qE '^HEADLAB_FUZZ(_PARSERS)?:BOOL=ON' "$build/CMakeCache.txt" ||
    { echo "fuzz.sh: $build was configured without HEADLAB_FUZZ or HEADLAB_FUZZ_PARSERS"; exit 2; }
  cmake --build "$build" --target headlab_fuzzers -j 2
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export HEADLAB_THREADS=1
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

# One target: its own corpus copy, its log, its exit status.
run_target() {
  local target=$1 dir=$work/$1
  mkdir -p "$dir/corpus" "$build/crashes/$target"
  cp fuzz/corpus/"$target"/* "$dir/corpus/"
  local status=0
  "$build/fuzz/$target" "$dir/corpus" -max_total_time="$seconds" -max_len=65536 -timeout=10 \
      -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$build/crashes/$target/" \
      > "$dir/log" 2>&1 || status=$?
  echo "$status" > "$dir/status"
}

echo "== fuzzing ${#targets[@]} targets, ${seconds} s each, ${jobs} at a time"
start=$(date +%s)
running=0
for target in "${targets[@]}"; do
  if (( running >= jobs )); then
    wait -n
    running=$((running - 1))
  fi
  run_target "$target" &
  running=$((running + 1))
done
wait

failed=0
printf '%-20s %12s %8s\n' target executions crashes
for target in "${targets[@]}"; do
  log=$work/$target/log
  status=$(cat "$work/$target/status")
  runs=$(sed -n 's/^Done \([0-9]*\) runs.*/\1/p' "$log" | tail -n 1)
  [[ -n "$runs" ]] || runs=$(sed -n 's/^stat::number_of_executed_units: *\([0-9]*\).*/\1/p' "$log" | tail -n 1)
  crashes=0
  if [[ "$status" != 0 ]]; then
    crashes=1  # libFuzzer stops at the first crash
    failed=1
  fi
  printf '%-20s %12s %8s\n' "$target" "${runs:-?}" "$crashes"
  if [[ "$status" != 0 ]]; then
    echo "---- $target exited with status $status; the end of its log:"
    tail -n 40 "$log"
    echo "----"
  fi
done
echo "== fuzzing took $(( $(date +%s) - start )) s"
exit "$failed"
