#!/usr/bin/env bash
# Prints how many compiler or test processes to run at once on this machine: $HEADLAB_JOBS when
# set, else one per core, at most one per 2 GiB of available memory (a heavy xtensor file needs
# about 1.5 GiB to compile), at least 1. Used by quickstart.sh, .ci/run and the check scripts.
set -euo pipefail
if [ -n "${HEADLAB_JOBS:-}" ]; then
  case "$HEADLAB_JOBS" in
    ''|*[!0-9]*|0*) echo "build_jobs.sh: HEADLAB_JOBS must be a whole number from 1 (no leading 0), not '$HEADLAB_JOBS'" >&2; exit 2 ;;
  esac
  echo "$HEADLAB_JOBS"
  exit 0
fi
cores=$(nproc 2>/dev/null || echo 1)
available_kib=$(awk '/^MemAvailable:/ {print $2}' /proc/meminfo 2>/dev/null || true)
jobs=$cores
if [ -n "$available_kib" ]; then
  by_memory=$(( available_kib / (2 * 1024 * 1024) ))
  (( by_memory < jobs )) && jobs=$by_memory
fi
(( jobs < 1 )) && jobs=1
echo "$jobs"
