#!/usr/bin/env bash
# Builds the fuzz targets (clang, libFuzzer + ASan + UBSan) and runs every one.
#
#   fuzz/fuzz.sh [--build DIR] [SECONDS] [JOBS] [TARGET...]
#       SECONDS per target (default 20), JOBS targets at a time (default 1), the TARGETs named
#       (default: all). The targets come from the fuzz preset (build/fuzz, coverage everywhere),
#       or with --build DIR (first) from that configured build tree: build/debug-asan, whose
#       HEADLAB_FUZZ_PARSERS gives coverage to the parser libraries alone (CI's short run, on the
#       objects the sanitizer suite already built)
#
# Each target starts from a copy of its committed seed corpus (fuzz/corpus/<target>/) in a
# temporary directory, so a run never grows the committed corpus. Inputs longer than 64 KiB are
# not tried (-max_len), one input may take at most 10 s (-timeout) and 2 GiB (-rss_limit_mb,
# which is also the largest single allocation allowed).
# Prints, per target, the executions (libFuzzer's final "Done N runs") and the crashes, and
# exits 1 when any target crashed. A crashing input is kept in BUILD/crashes/<target>/ (BUILD is
# build/fuzz or the --build DIR); reproduce it with   BUILD/fuzz/<target> FILE   and shrink it with
#   BUILD/fuzz/<target> -minimize_crash=1 -runs=100000 FILE
set -euo pipefail

build=
if [[ "${1:-}" == --build ]]; then  # DIR as the caller named it, before the cd below
  if [[ -z "${2:-}" || ! -f "${2:-}/CMakeCache.txt" ]]; then
    echo "fuzz.sh: --build needs a configured build tree (a directory with a CMakeCache.txt)" >&2
    exit 2
  fi
  build=$(cd "$2" && pwd)
  shift 2
fi
cd "$(dirname "$0")/.."
seconds=${1:-20}
jobs=${2:-1}
for number in "$seconds" "$jobs"; do
  [[ "$number" =~ ^[1-9][0-9]*$ ]] || { echo "fuzz.sh: SECONDS and JOBS must be whole numbers above 0, not '$number'" >&2; exit 2; }
done
targets=(fuzz_safetensors fuzz_train_options fuzz_vocabulary fuzz_tsv fuzz_cli_config fuzz_run_dir)
if (( $# > 2 )); then targets=("${@:3}"); fi

if [[ -z "$build" ]]; then
  build=build/fuzz
  cmake --preset fuzz > /dev/null
  cmake --build --preset fuzz
else
  if ! grep -qiE '^HEADLAB_FUZZ(_PARSERS)?:BOOL=(ON|TRUE|YES|Y|1)$' "$build/CMakeCache.txt"; then
    echo "fuzz.sh: $build was configured without HEADLAB_FUZZ or HEADLAB_FUZZ_PARSERS" >&2
    exit 2
  fi
  cmake --build "$build" --target headlab_fuzzers
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
