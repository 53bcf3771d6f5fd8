#!/usr/bin/env bash
# tests/cluster/slurm_local.sh HEADLAB [WORK]: a real one-node SLURM cluster on this Debian 12 machine,
# and a study run on it with the array script `headlab study run --emit-slurm` writes, unchanged.
#
#   1. Stands up SLURM without systemd: munged (Debian's munge), then slurmctld and slurmd (Debian's
#      slurm-wlm 22.05) from a slurm.conf in WORK (SLURM_CONF; /etc/slurm is not touched), on ports
#      16817/16818, state, spool, logs and pid files in WORK. With --install (as root) it first
#      apt-get installs slurm-wlm, munge and parallel where missing.
#   2. A tiny pinned recipe (copy task, 2 cells x 2 seeds, one thread a run) is trained locally by
#      `headlab study run`, then as a SLURM array (`sbatch --wait` on the emitted script) into a runs
#      directory whose path holds a space, quotes, '$(...)' and ';', and through GNU parallel.
#   3. Checks: every array task exits 0 and the array honours its throttle and --cpus-per-task; the
#      hostile path executed nothing; `study report` on the SLURM runs and on the parallel runs gives
#      the local run's runs.csv (all but the seconds) and the same comparisons.csv, byte for byte.
#   4. A long sweep's array while it runs: --emit-slurm again leaves both running runs alone (named
#      busy, nothing written or touched); `scontrol requeue` of a task makes its line run again and the
#      run resume from its checkpoint, the first attempt's log kept; a run failing on the cluster is
#      named by `ablate --collect` (exit 1) with its log's last line.
#   5. Stops the daemons by their pid files (never by name), also on failure.
# Prints "slurm_local: ok (N s)" at the end and exits 0; 77 (a skip) where SLURM is not installed and
# --install was not given, or not as root; 1 naming what failed. Opt-in (about a minute); its last
# result is on docs/studies-on-a-cluster.md.
set -u
install=0
if [ "${1:-}" = "--install" ]; then
  install=1
  shift
fi
hl=$(realpath "$1")
work=${2:-$(mktemp -d /tmp/headlab-slurm.XXXXXX)}
start=$(date +%s)
fail() {
  echo "slurm_local: FAIL: $*"
  for log in "$work/slurmctld.log" "$work/slurmd.log"; do [ -f "$log" ] && tail -n 5 "$log"; done
  exit 1
}
skip() {
  echo "slurm_local: skipped: $*"
  exit 77
}
[ "$(id -u)" -eq 0 ] || skip "not root (munged and slurmd need it)"
if ! command -v sbatch > /dev/null || ! command -v munged > /dev/null || ! command -v parallel > /dev/null; then
  [ "$install" -eq 1 ] || skip "slurm-wlm, munge or parallel is missing (rerun with --install)"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq slurm-wlm munge parallel > /dev/null \
    || fail "apt-get install slurm-wlm munge parallel"
fi
case "$work" in *[!A-Za-z0-9_./-]*) fail "WORK must be a plain path (slurm.conf cannot quote): $work" ;; esac
[ -f "$work/slurm.conf" ] && rm -rf "$work"  # this script's own earlier work directory
mkdir -p "$work/state" "$work/spool"

# --- 1. the cluster -------------------------------------------------------------------------------
stop_daemons() {
  for pid_file in "$work/slurmd.pid" "$work/slurmctld.pid"; do
    [ -f "$pid_file" ] && kill "$(cat "$pid_file")" 2> /dev/null
  done
}
trap stop_daemons EXIT
if ! munge -n 2> /dev/null | unmunge > /dev/null 2>&1; then
  install -d -o munge -g munge /run/munge || fail "cannot make /run/munge"
  runuser -u munge -- /usr/sbin/munged || fail "munged did not start"
  sleep 1
  munge -n | unmunge > /dev/null || fail "munge does not round-trip a credential"
fi
node=$(hostname -s)
memory=$(awk '/MemAvailable/ {print int($2 / 1024 * 0.9)}' /proc/meminfo)
export SLURM_CONF=$work/slurm.conf
cat > "$SLURM_CONF" <<EOF
ClusterName=headlab
SlurmctldHost=$node
SlurmctldPort=16817
SlurmdPort=16818
SlurmUser=root
AuthType=auth/munge
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd.pid
SlurmctldLogFile=$work/slurmctld.log
SlurmdLogFile=$work/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
ReturnToService=2
MpiDefault=none
MailProg=/bin/true
NodeName=$node CPUs=$(nproc) RealMemory=$memory State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
slurmctld -f "$SLURM_CONF" || fail "slurmctld did not start"
slurmd -f "$SLURM_CONF" || fail "slurmd did not start"
for _ in $(seq 60); do
  sinfo -h -o %t 2> /dev/null | grep -q idle && break
  sleep 1
done
sinfo -h -o %t | grep -q idle || fail "the node did not come up idle: $(sinfo 2>&1)"
echo "slurm_local: one node up ($(sinfo --version), $(nproc) CPUs)"

# --- 2. the study, locally, on SLURM and through GNU parallel -------------------------------------
export HEADLAB_THREADS=1
recipe=$work/recipe.ini
"$hl" train --task copy --steps 30 --d-model 16 --ff 32 --layers 1 --eval-every 30 --eval-sequences 50 \
  --print-config > "$recipe" || fail "train --print-config"
cat >> "$recipe" <<'EOF'
[study]
title = one head against two, copy task (the SLURM check)
seeds = 1,2
threads = 1
cell = h1 --heads 1
cell = h2 --heads 2
metrics = accuracy:valid_accuracy valid_loss
compare = h2 vs h1 on accuracy | confirm > 0.5 | refute within 0.5
EOF
"$hl" study run "$recipe" --runs "$work/local" -j 2 > "$work/local.log" 2>&1 || fail "the local study (see $work/local.log)"
"$hl" study report "$recipe" --runs "$work/local" > /dev/null || fail "the local report"
odd="$work/a dir \$(touch $work/PWNED); 'q'"
mkdir -p "$odd"
"$hl" study run "$recipe" --runs "$odd/slurm" -j 2 --emit-slurm "$work/array.sh" || fail "--emit-slurm"
grep -q '^#SBATCH --array=0-3%2$' "$work/array.sh" || fail "the array line"
grep -q '^#SBATCH --cpus-per-task=1$' "$work/array.sh" || fail "the --cpus-per-task line"
(cd "$work" && sbatch --wait --parsable "$work/array.sh" > "$work/job_id.txt") || fail "sbatch --wait: a task failed"
job=$(cut -d';' -f1 < "$work/job_id.txt")
echo "slurm_local: array job $job done"
"$hl" study run "$recipe" --runs "$odd/parallel" --emit-jobs "$work/jobs.txt" > /dev/null || fail "--emit-jobs"
parallel -j 2 < "$work/jobs.txt" || fail "GNU parallel: a job failed"

# --- 3. the checks --------------------------------------------------------------------------------
[ ! -e "$work/PWNED" ] || fail "the hostile path's \$(...) was executed"
seeded() { cut -d, -f1-3,5- "$1"; }  # runs.csv without train_seconds
for way in slurm parallel; do
  "$hl" study report "$recipe" --runs "$odd/$way" > /dev/null || fail "the $way report"
  diff <(seeded "$work/local/runs.csv") <(seeded "$odd/$way/runs.csv") || fail "$way: runs.csv differs from the local run"
  cmp "$work/local/comparisons.csv" "$odd/$way/comparisons.csv" || fail "$way: comparisons.csv differs from the local run"
done
echo "slurm_local: the study: 4 array tasks and 4 parallel jobs equal to the local runs"

# --- 4. a sweep while its array runs: emitted again, a task requeued, a failed run collected ------
long=(--task copy --steps 200000 --save-every 50 --d-model 16 --ff 32 --layers 1 --eval-every 200000 --eval-sequences 50)
"$hl" ablate --out "$work/live" --grid heads=1,2 --emit-slurm "$work/live.sbatch" -- "${long[@]}" > /dev/null \
  || fail "ablate --emit-slurm of the long sweep"
live_job=$(cd "$work" && sbatch --parsable "$work/live.sbatch") || fail "sbatch of the long sweep"
live_job=${live_job%%;*}
cancel_live() { scancel "$live_job" 2> /dev/null; }
trap 'cancel_live; stop_daemons' EXIT
run0="$work/live/runs/heads=1,seed=1"
run1="$work/live/runs/heads=2,seed=1"
for _ in $(seq 120); do [ -f "$run0/checkpoint.safetensors" ] && [ -f "$run1/checkpoint.safetensors" ] && break; sleep 0.5; done
[ -f "$run0/checkpoint.safetensors" ] && [ -f "$run1/checkpoint.safetensors" ] || fail "the long array did not start: $(squeue 2>&1)"
# Emitted again while both tasks run: both are left alone, no script is written.
listing=$(stat -c '%n %i' "$run0" "$run1" "$run0/config.ini" "$run1/config.ini")  # removed or rewritten: new inodes
"$hl" ablate --out "$work/live" --grid heads=1,2 --emit-slurm "$work/again.sbatch" -- "${long[@]}" > "$work/again.log" 2>&1 \
  || fail "ablate --emit-slurm during the array: $(cat "$work/again.log")"
[ "$(grep -c '^busy ' "$work/again.log")" -eq 2 ] || fail "the running runs are not named busy: $(cat "$work/again.log")"
[ ! -e "$work/again.sbatch" ] || fail "a script of running runs was written"
[ "$(stat -c '%n %i' "$run0" "$run1" "$run0/config.ini" "$run1/config.ini")" = "$listing" ] \
  || fail "emitting touched a running run"
# Task 0 requeued (SLURM stops it with SIGTERM and starts its line again): the run goes on.
scontrol requeue "${live_job}_0" || fail "scontrol requeue ${live_job}_0"
# (SLURM holds a requeued job back for a while, BeginTime about two minutes on, so that the old
# instance's job credential is revoked before a new one starts. Not the point here: once the old
# instance has saved and exited and the task is pending again, it may start. If SLURM still kills the
# new launch ("Job credential revoked", seen under ASan where the old instance exits slowly), the task
# ends without running; it is requeued again, at most three times.)
requeues=1
settled=0
for _ in $(seq 480); do
  grep -q "^resumed from " "$run0/log.txt" 2> /dev/null && break
  state=$(squeue -h -j "${live_job}_0" -o %t 2> /dev/null)
  if grep -q "^interrupted after step" "$run0/log.txt" 2> /dev/null; then
    settled=$((settled + 1))
    if [ "$state" = PD ] && [ "$settled" -ge 6 ]; then
      scontrol update JobId="${live_job}_0" StartTime=now 2> /dev/null
    elif [ -z "$state" ] || [ "$state" = CD ] || [ "$state" = F ]; then
      [ "$requeues" -lt 4 ] || break
      scontrol requeue "${live_job}_0" 2> /dev/null && requeues=$((requeues + 1)) && settled=0
    fi
  fi
  sleep 0.5
done
grep -q "^resumed from .* at step " "$run0/log.txt" || fail "the requeued task did not resume: $(tail -n 3 "$run0/log.txt"; squeue)"
grep -q "^interrupted after step" "$run0/log.txt" || fail "the requeued task's first log is gone"
cancel_live
for _ in $(seq 60); do [ -z "$(squeue -h -j "$live_job" 2> /dev/null)" ] && break; sleep 0.5; done
# A run that fails on the cluster: --collect exits 1 naming it with its log's last line.
"$hl" ablate --out "$work/fails" --grid heads=1 --emit-slurm "$work/fails.sbatch" -- "${long[@]}" --max-memory 1K \
  > /dev/null || fail "ablate --emit-slurm of the failing run"
(cd "$work" && sbatch --wait "$work/fails.sbatch" > /dev/null 2>&1) && fail "the failing task succeeded"
"$hl" ablate --out "$work/fails" --collect > "$work/fails.log" 2>&1
status=$?
[ "$status" -eq 1 ] || fail "--collect of a failed run exited $status, not 1"
grep -q "heads=1,seed=1: started; its log ends: headlab train: this run needs about" "$work/fails.log" \
  || fail "--collect does not name the failed run with its log: $(cat "$work/fails.log")"
echo "slurm_local: ok ($(( $(date +%s) - start )) s; the study equal to the local runs; a running array left alone by a new --emit-slurm; a requeued task resumed; a failed run named by --collect)"
