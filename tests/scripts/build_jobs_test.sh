#!/usr/bin/env bash
# scripts/build_jobs.sh: HEADLAB_JOBS taken or refused; a memory cgroup's room (v2 and v1, the
# process's own cgroup or a parent) caps the count at one per 2 GiB, a cgroup without a limit does
# not, a cgroup path that climbs out of the mount is not read. Prints "build_jobs: N checks passed".
set -u
script=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failed=0 checks=0
expect() {  # expect NAME WANTED_OUTPUT WANTED_STATUS -- COMMAND...
  local name=$1 want=$2 want_status=$3
  shift 4
  local got status
  got=$("$@" 2>&1)
  status=$?
  checks=$((checks + 1))
  if [ "$status" != "$want_status" ] || [[ "$got" != $want ]]; then
    echo "FAIL $name: got '$got' (exit $status), wanted '$want' (exit $want_status)"
    failed=$((failed + 1))
  fi
}
plain=$(HEADLAB_CGROUP_FILES=$tmp/none:$tmp/none "$script")  # no cgroup file: cores and MemAvailable
expect jobs_given 3 0 -- env HEADLAB_JOBS=3 "$script"
expect jobs_leading_zero "*no leading 0*" 2 -- env HEADLAB_JOBS=03 "$script"
expect jobs_not_a_number "*whole number*" 2 -- env HEADLAB_JOBS=two "$script"

mkdir -p "$tmp/v2/job/step"
echo "0::/job/step" > "$tmp/self_v2"
echo max > "$tmp/v2/job/step/memory.max"
echo 4096 > "$tmp/v2/job/step/memory.current"
echo 3221225472 > "$tmp/v2/job/memory.max"       # 3 GiB
echo 1073741824 > "$tmp/v2/job/memory.current"   # 1 GiB used: 2 GiB of room, one job
expect v2_parent_limit 1 0 -- env HEADLAB_CGROUP_FILES="$tmp/self_v2:$tmp/v2" "$script"
echo 5000 > "$tmp/v2/job/memory.max"             # below its usage: full, still one job
expect v2_full 1 0 -- env HEADLAB_CGROUP_FILES="$tmp/self_v2:$tmp/v2" "$script"
echo max > "$tmp/v2/job/memory.max"
expect v2_no_limit "$plain" 0 -- env HEADLAB_CGROUP_FILES="$tmp/self_v2:$tmp/v2" "$script"

mkdir -p "$tmp/v1/memory/docker/x"
printf '12:cpu,cpuacct:/docker/x\n5:memory:/docker/x\n' > "$tmp/self_v1"
echo 9223372036854771712 > "$tmp/v1/memory/docker/x/memory.limit_in_bytes"  # v1's "no limit"
expect v1_no_limit "$plain" 0 -- env HEADLAB_CGROUP_FILES="$tmp/self_v1:$tmp/v1" "$script"
echo 1073741824 > "$tmp/v1/memory/docker/memory.limit_in_bytes"
expect v1_parent_limit 1 0 -- env HEADLAB_CGROUP_FILES="$tmp/self_v1:$tmp/v1" "$script"

echo 1000 > "$tmp/v2/memory.max"
echo "0::/../.." > "$tmp/self_out"
expect climbs_out "$plain" 0 -- env HEADLAB_CGROUP_FILES="$tmp/self_out:$tmp/v2" "$script"
[ "$failed" = 0 ] && echo "build_jobs: $checks checks passed"
exit "$failed"
