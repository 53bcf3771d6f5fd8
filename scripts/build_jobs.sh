#!/usr/bin/env bash
# Prints how many compiler or test processes to run at once on this machine: $HEADLAB_JOBS when
# set, else one per core, at most one per 2 GiB of available memory (a heavy xtensor file needs
# about 1.5 GiB to compile; a cgroup's limit counts), at least 1. Used by quickstart.sh, .ci/run and the check scripts.
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
# Less when this process's memory cgroup or a parent of it (a container's limit, a SLURM job's --mem)
# leaves less room: limit - usage (v2: memory.max, memory.current; v1: memory.limit_in_bytes,
# memory.usage_in_bytes; "max", v1's 2^63 or no file: no limit there). As framework/train's
# available_memory() reads it; HEADLAB_CGROUP_FILES=SELF:ROOT reads other files (a test's).
self_cgroup=/proc/self/cgroup cgroup_root=/sys/fs/cgroup
if [ -n "${HEADLAB_CGROUP_FILES:-}" ]; then
  self_cgroup=${HEADLAB_CGROUP_FILES%%:*} cgroup_root=${HEADLAB_CGROUP_FILES#*:}
fi
if [ -r "$self_cgroup" ]; then
  while IFS=: read -r id controllers path; do
    if [ "$id" = 0 ] && [ -z "$controllers" ]; then
      base=$cgroup_root limit_file=memory.max usage_file=memory.current
    elif [[ ",$controllers," == *,memory,* ]]; then
      base=$cgroup_root/memory limit_file=memory.limit_in_bytes usage_file=memory.usage_in_bytes
    else
      continue
    fi
    case "$path" in *..*) continue ;; esac  # a path that climbs out of the mount: not read
    while :; do
      dir=$base${path%/}
      limit=$(cat "$dir/$limit_file" 2>/dev/null || true)
      usage=$(cat "$dir/$usage_file" 2>/dev/null || true)
      [[ "$usage" =~ ^[0-9]+$ ]] || usage=0
      if [[ "$limit" =~ ^[0-9]+$ ]] && (( ${#limit} < 19 )); then  # below 10^18: a limit
        room_kib=$(( limit > usage ? (limit - usage) / 1024 : 0 ))
        if [ -z "$available_kib" ] || (( room_kib < available_kib )); then available_kib=$room_kib; fi
      fi
      [ -n "$path" ] && [ "$path" != / ] || break
      path=${path%/*}
    done
  done < "$self_cgroup"
fi
jobs=$cores
if [ -n "$available_kib" ]; then
  by_memory=$(( available_kib / (2 * 1024 * 1024) ))
  (( by_memory < jobs )) && jobs=$by_memory
fi
(( jobs < 1 )) && jobs=1
echo "$jobs"
