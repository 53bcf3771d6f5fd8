#!/usr/bin/env bash
# tests/cli/ablate_cluster.sh HEADLAB WORK CASE: `headlab ablate` sweeps run elsewhere, as a cluster
# would run them (tests/cli/ablate_cluster.cmake runs one CASE per test):
#   slurm     --emit-slurm writes an array of 4 tasks; bash runs each task by SLURM_ARRAY_TASK_ID,
#             in a sweep directory whose path holds a space, quotes, {} and a '$'; each task makes
#             exactly its run; the --emit-jobs file of the same sweep runs line by line as GNU
#             parallel would (parallel itself when installed)
#   collect   the tasks' run directories moved to two "node" folders are collected into the same
#             summary.csv as the sweep run by ablate in one directory (equal numbers but the
#             seconds); a copy of the sweep's runs split over two folders collects byte-identical
#             summary.csv, summary.md and chart.svg
#   refuse    a missing directory, the same directory twice, a run of another grid, a run with
#             other flags and a run finished twice are refused, naming the run and the directory,
#             and write nothing; a missing and an unfinished run are named in the summary
#   restart   a job line run again continues its run (a requeued or preempted task) and keeps the log;
#             re-emitting leaves a running run alone; a failed run's log keeps every attempt;
#             a finished run of other options is refused by the sweep and not counted by --collect;
#             --out on a directory that is not a sweep; the SLURM resource flags
# Prints "ablate_cluster CASE: ok" at the end; any failure prints why and exits 1.
set -u
hl=$1
work=$2
case_name=$3
export HEADLAB_THREADS=1
train=(--task copy --steps 30 --d-model 16 --ff 32 --layers 1 --eval-every 30 --eval-sequences 50)
grid=(--grid heads=1,2 --seeds 1,2)
# The plan's order: task i of the array runs run i.
runs=("heads=1,seed=1" "heads=1,seed=2" "heads=2,seed=1" "heads=2,seed=2")

test_label="ablate_cluster $case_name"
. "$(dirname "$0")/expect.sh"
# How many runs of sweep directory $1 are finished (have a summary.json).
finished_runs() { find "$1/runs" -name summary.json 2> /dev/null | wc -l; }
# summary.csv without the columns of timings (train_seconds_*): the numbers a seed fixes.
seeded_columns() {
  python3 - "$1" <<'EOF'
import csv, sys
rows = list(csv.reader(open(sys.argv[1])))
keep = [i for i, name in enumerate(rows[0]) if "seconds" not in name]
for row in rows:
    print(",".join(row[i] for i in keep))
EOF
}

rm -rf "$work"
mkdir -p "$work"

case $case_name in
slurm)
  w="$work/a dir with 'quotes', {} and \$HOME"  # {}: GNU parallel's replacement string
  out="$w/sweep"
  mkdir -p "$w"
  expect 0 "wrote a SLURM array of 4 tasks \(0-3\)" \
    "$hl" ablate --out "$out" "${grid[@]}" -j 2 --emit-slurm "$w/array.sbatch" --emit-jobs "$w/jobs.txt" -- "${train[@]}"
  script="$w/array.sbatch"
  [ "$(head -n 1 "$script")" = "#!/bin/bash" ] || fail "the script does not start with #!/bin/bash"
  [ "$(grep -c '^#SBATCH --array=0-3%2$' "$script")" -eq 1 ] || fail "no '#SBATCH --array=0-3%2' (4 runs, -j 2)"
  grep -q '^#SBATCH --job-name=headlab-sweep$' "$script" || fail "no job name"
  # The path holds a space: the task output goes to the submit directory, one file per job and task.
  grep -q '^#SBATCH --output=headlab-ablate-%A_%a.out$' "$script" || fail "no --output with %A_%a"
  bash -n "$script" || fail "bash -n: the script does not parse"
  [ "$(wc -l < "$w/jobs.txt")" -eq 4 ] || fail "jobs.txt has not 4 lines"
  [ "$(finished_runs "$out")" -eq 0 ] || fail "emitting ran something"
  # Without SLURM, and with an id outside the array: refused, nothing runs.
  expect 2 "SLURM_ARRAY_TASK_ID is not set" env -u SLURM_ARRAY_TASK_ID bash "$script"
  expect 2 "SLURM_ARRAY_TASK_ID=4 is not a task of this array \(0-3\)" env SLURM_ARRAY_TASK_ID=4 bash "$script"
  # Each task makes exactly its own run, in any order.
  done_count=0
  for id in 2 0 3 1; do
    SLURM_ARRAY_TASK_ID=$id bash "$script" || fail "task $id exited $?"
    done_count=$((done_count + 1))
    [ -f "$out/runs/${runs[$id]}/summary.json" ] || fail "task $id did not make ${runs[$id]}"
    [ "$(finished_runs "$out")" -eq "$done_count" ] || fail "after task $id: $(finished_runs "$out") runs, expected $done_count"
  done
  expect 0 "All 4 runs finished" "$hl" ablate --out "$out" --collect
  # A plain path: the task output goes next to the runs, into a directory that exists.
  expect 0 "wrote a SLURM array of 4 tasks" "$hl" ablate --out "$work/plain" "${grid[@]}" --emit-slurm "$work/plain.sbatch" -- "${train[@]}"
  grep -qx "#SBATCH --output=$work/plain/slurm/%A_%a.out" "$work/plain.sbatch" || fail "no --output in the sweep directory"
  grep -qx "#SBATCH --array=0-3" "$work/plain.sbatch" || fail "no --array=0-3 without -j"
  [ -d "$work/plain/slurm" ] || fail "$work/plain/slurm was not made (sbatch does not make it)"
  # Without --threads each task uses its machine's default ($HEADLAB_THREADS, set above, is the
  # environment's, which sbatch passes on); with --threads every task gets that count.
  if grep -q -- ' --threads ' "$work/plain.sbatch"; then fail "a --threads that was not given"; fi
  expect 0 "wrote a SLURM array of 4 tasks" "$hl" --threads 3 ablate --out "$work/threads" "${grid[@]}" --emit-slurm "$work/threads.sbatch" -- "${train[@]}"
  [ "$(grep -c -- ' --threads 3 train ' "$work/threads.sbatch")" -eq 4 ] || fail "not 4 tasks with --threads 3 train"
  # The jobs file of another such sweep, one line at a time as GNU parallel runs it ($SHELL -c LINE).
  expect 0 "wrote 4 jobs" "$hl" ablate --out "$w/lines" "${grid[@]}" --emit-jobs "$w/lines.txt" -- "${train[@]}"
  if command -v parallel > /dev/null; then
    parallel -j 2 < "$w/lines.txt" || fail "parallel < lines.txt failed"
  else
    while IFS= read -r line; do bash -c "$line" || fail "a line of lines.txt failed: $line"; done < "$w/lines.txt"
  fi
  [ "$(finished_runs "$w/lines")" -eq 4 ] || fail "the jobs file made $(finished_runs "$w/lines") runs, not 4"
  ;;

collect)
  # The reference: the sweep run by ablate in one directory.
  expect 0 "All 4 runs finished" "$hl" ablate --out "$work/one" "${grid[@]}" -j 2 -- "${train[@]}"
  # The same sweep on "two nodes": each task's run directory ends up on the disk of node (id % 2).
  expect 0 "wrote a SLURM array" "$hl" ablate --out "$work/cluster" "${grid[@]}" --emit-slurm "$work/cluster.sbatch" -- "${train[@]}"
  mkdir -p "$work/node0" "$work/node1"
  for id in 0 1 2 3; do
    SLURM_ARRAY_TASK_ID=$id bash "$work/cluster.sbatch" || fail "task $id exited $?"
    mv "$work/cluster/runs/${runs[$id]}" "$work/node$((id % 2))/" || fail "no run directory from task $id"
  done
  [ "$(finished_runs "$work/cluster")" -eq 0 ] || fail "runs left in the sweep directory"
  expect 0 "collected 4 finished of 4 runs from 2 directories.*All 4 runs finished" \
    "$hl" ablate --out "$work/cluster" --collect "$work/node0" "$work/node1"
  seeded_columns "$work/one/summary.csv" > "$work/one.csv"
  seeded_columns "$work/cluster/summary.csv" > "$work/cluster.csv"
  grep -q valid_loss_mean "$work/one.csv" || fail "no valid_loss_mean in the reference"
  diff "$work/one.csv" "$work/cluster.csv" || fail "the collected numbers differ from the sweep run in one directory"
  # The very runs of the reference, split over a folder of runs and a copy of a sweep directory (runs/).
  mkdir -p "$work/split/sweep" "$work/split/a" "$work/split/b/runs"
  cp "$work/one/sweep.json" "$work/split/sweep/"
  cp -r "$work/one/runs/${runs[0]}" "$work/one/runs/${runs[3]}" "$work/split/a/"
  cp -r "$work/one/runs/${runs[1]}" "$work/one/runs/${runs[2]}" "$work/split/b/runs/"
  expect 0 "collected 4 finished of 4 runs" "$hl" ablate --out "$work/split/sweep" --collect "$work/split/a" "$work/split/b"
  for f in summary.csv summary.md chart.svg; do
    cmp "$work/one/$f" "$work/split/sweep/$f" || fail "$f collected from the split copy differs from the sweep's"
  done
  # One run directory given as itself.
  mkdir -p "$work/single"
  cp "$work/one/sweep.json" "$work/single/"
  expect 1 "collected 1 finished of 4 runs from 1 directory.*Missing or failed: 3 of 4.*3 of 4 runs are not finished" \
    "$hl" ablate --out "$work/single" --collect "$work/one/runs/${runs[2]}"
  ;;

refuse)
  expect 0 "All 4 runs finished" "$hl" ablate --out "$work/one" "${grid[@]}" -j 2 -- "${train[@]}"
  mkdir -p "$work/to" "$work/a"
  cp "$work/one/sweep.json" "$work/to/"
  cp -r "$work/one/runs/${runs[0]}" "$work/one/runs/${runs[1]}" "$work/a/"
  # The summary is written only by a collection that is accepted.
  no_summary() { [ ! -e "$work/to/summary.csv" ] || fail "summary.csv written by a refused --collect"; }
  expect 2 "--collect '$work/nowhere': no such directory" "$hl" ablate --out "$work/to" --collect "$work/a" "$work/nowhere"
  no_summary
  expect 2 "the directory '$work/a/' is given twice" "$hl" ablate --out "$work/to" --collect "$work/a" "$work/a/"
  no_summary
  # A run of another grid (heads=4) among the runs.
  expect 0 "All 1 runs finished" "$hl" ablate --out "$work/other" --grid heads=4 -- "${train[@]}"
  mkdir -p "$work/mixed"
  cp -r "$work/other/runs/heads=4,seed=1" "$work/one/runs/${runs[2]}" "$work/mixed/"
  expect 2 "'$work/mixed/heads=4,seed=1': not a run of this sweep \(its grid is heads=1,2 with seeds 1,2" \
    "$hl" ablate --out "$work/to" --collect "$work/a" "$work/mixed"
  no_summary
  # A run named like one of the sweep, trained with other flags (20 steps, not 30).
  mkdir -p "$work/renamed"
  "$hl" train --task copy --steps 20 --d-model 16 --ff 32 --layers 1 --eval-every 20 --eval-sequences 50 \
    --heads 2 --seed 2 --progress none --run-dir "$work/renamed/${runs[3]}" > /dev/null || fail "the 20-step run failed"
  expect 2 "'$work/renamed/heads=2,seed=2': from another sweep: .*steps=20 there, steps=30 in this sweep" \
    "$hl" ablate --out "$work/to" --collect "$work/a" "$work/renamed"
  no_summary
  # The same run finished in two places.
  mkdir -p "$work/again"
  cp -r "$work/one/runs/${runs[1]}" "$work/again/"
  expect 2 "run heads=1,seed=2 is finished in 2 places: '$work/a/heads=1,seed=2' and '$work/again/heads=1,seed=2'; keep one" \
    "$hl" ablate --out "$work/to" --collect "$work/a" "$work/again"
  no_summary
  # Accepted: an unfinished copy beside a finished one (said so), a run only started, a run missing.
  mkdir -p "$work/partial/${runs[1]}" "$work/partial/${runs[2]}"
  echo "killed" > "$work/partial/${runs[1]}/log.txt"
  echo "killed" > "$work/partial/${runs[2]}/log.txt"
  # --collect exits 1 when runs are missing, naming each with the last line of its log.
  expect 1 "note: not read: '$work/partial/heads=1,seed=2' \(started\); heads=1,seed=2 is read from '$work/a/heads=1,seed=2'.*collected 2 finished of 4 runs.*Missing or failed: 2 of 4 runs are not finished: \`heads=2,seed=1\` \(started, in '$work/partial/heads=2,seed=1'\), \`heads=2,seed=2\` \(not found in the 2 directories\).*2 of 4 runs are not finished \(the summary holds the others\):.*  heads=2,seed=1: started, in '$work/partial/heads=2,seed=1'; its log ends: killed.*  heads=2,seed=2: not found in the 2 directories" \
    "$hl" ablate --out "$work/to" --collect "$work/a" "$work/partial"
  grep -q '^1,2,' "$work/to/summary.csv" || fail "the cell heads=1 has not n=2"
  grep -q '^2,0,' "$work/to/summary.csv" || fail "the cell heads=2 has not n=0"
  ;;

restart)
  # Every emitted line can run again: a task stopped (SIGTERM, as SLURM preempts) and run again
  # continues from its checkpoint, and its log keeps both attempts.
  long=(--task copy --steps 50000 --save-every 50 --d-model 16 --ff 32 --layers 1 --eval-every 50000 --eval-sequences 50)
  expect 0 "wrote 2 jobs" "$hl" ablate --out "$work/s" --grid heads=1,2 --emit-jobs "$work/jobs.txt" -- "${long[@]}"
  grep -q -- "^mkdir -p .* && { cd $PWD && .* train .* --resume-or-start; } >> .*/log.txt 2>&1$" "$work/jobs.txt" \
    || fail "a job line that does not cd, continue its run and append to its log: $(head -n 1 "$work/jobs.txt")"
  line0=$(head -n 1 "$work/jobs.txt")
  run0="$work/s/runs/heads=1,seed=1"
  bash -c "$line0" &
  task=$!
  trap '[ -f "$run0/.lock" ] && kill -TERM "$(cat "$run0/.lock")" 2> /dev/null' EXIT  # also after a FAIL
  for _ in $(seq 100); do [ -f "$run0/checkpoint.safetensors" ] && break; sleep 0.1; done
  [ -f "$run0/checkpoint.safetensors" ] || fail "the first task saved no checkpoint"
  # Emitting again while it runs: the run is left alone (not emitted, its directory untouched).
  before=$(stat -c '%n %i' "$run0" "$run0/config.ini" "$run0/log.txt")  # removed or rewritten: new inodes
  expect 0 "busy   heads=1,seed=1: process [0-9]+ holds its directory.*wrote 1 jobs" \
    "$hl" ablate --out "$work/s" --grid heads=1,2 --emit-jobs "$work/again.txt" -- "${long[@]}"
  [ "$(wc -l < "$work/again.txt")" -eq 1 ] && grep -q "heads=2,seed=1" "$work/again.txt" || fail "the running run was emitted"
  [ "$(stat -c '%n %i' "$run0" "$run0/config.ini" "$run0/log.txt")" = "$before" ] \
    || fail "emitting touched the running run's directory"
  # Preempted, then requeued: the same line continues the run.
  kill -TERM "$(cat "$run0/.lock")"; wait $task  # the lock holds the run's pid
  grep -q '"interrupted": false' "$run0/summary.json" && fail "the run finished before it was stopped (make it longer)"
  bash -c "$line0" &
  task=$!
  for _ in $(seq 300); do grep -q "^resumed from " "$run0/log.txt" && break; sleep 0.1; done
  grep -q "^resumed from .* at step " "$run0/log.txt" || fail "the requeued run did not resume: $(tail -n 3 "$run0/log.txt")"
  grep -q "interrupted after step" "$run0/log.txt" || fail "the first attempt's log is gone"
  kill -TERM "$(cat "$run0/.lock")"; wait $task  # (it would take a while to finish)
  # A failed run's log is kept: each attempt appends to it.
  expect 1 "FAILED heads=1,seed=1" "$hl" ablate --out "$work/f" --grid heads=1 -- "${train[@]}" --max-memory 1K
  expect 1 "FAILED heads=1,seed=1" "$hl" ablate --out "$work/f" --grid heads=1 -- "${train[@]}" --max-memory 1K
  [ "$(grep -c "max-memory" "$work/f/runs/heads=1,seed=1/log.txt")" -eq 2 ] || fail "the log does not hold both failures"
  expect 1 "1 of 1 runs are not finished.*heads=1,seed=1: started; its log ends: headlab train: this run needs about" \
    "$hl" ablate --out "$work/f" --collect
  # A finished run of other options in the sweep's runs/ is refused by the sweep, and not counted by --collect.
  expect 0 "All 2 runs finished" "$hl" ablate --out "$work/o" --grid heads=1,2 -- "${train[@]}"
  rm -rf "$work/o/runs/heads=2,seed=1"
  "$hl" train --task copy --steps 20 --d-model 16 --ff 32 --layers 1 --eval-every 20 --eval-sequences 50 \
    --heads 2 --seed 1 --progress none --run-dir "$work/o/runs/heads=2,seed=1" > /dev/null || fail "the 20-step run"
  before=$(cat "$work/o/runs/heads=2,seed=1/summary.json")
  expect 2 "1 run directory holds a run trained with other options.*heads=2,seed=1: from another sweep: .*steps=20 there, steps=30 in this sweep" \
    "$hl" ablate --out "$work/o" --grid heads=1,2 -- "${train[@]}"
  [ "$(cat "$work/o/runs/heads=2,seed=1/summary.json")" = "$before" ] || fail "the refused sweep changed the run"
  expect 1 "heads=2,seed=1: from another sweep: .*steps=20 there" "$hl" ablate --out "$work/o" --collect
  grep -q '^2,0,' "$work/o/summary.csv" || fail "the run from another sweep was counted"
  # --out on a directory that is not a sweep but holds what a sweep writes: refused, left as it was.
  mkdir -p "$work/mine" && echo "my numbers" > "$work/mine/summary.csv"
  expect 2 "not a sweep directory \(no sweep.json\) but it holds summary.csv" \
    "$hl" ablate --out "$work/mine" --grid heads=1 -- "${train[@]}"
  [ "$(cat "$work/mine/summary.csv")" = "my numbers" ] || fail "summary.csv of a directory that is not a sweep changed"
  # The SLURM resources go into the script; outside --emit-slurm or with a value SLURM cannot take: refused.
  expect 0 "wrote a SLURM array" "$hl" ablate --out "$work/r" --grid heads=1,2 --emit-slurm "$work/r.sbatch" \
    --cpus-per-task 2 --time 1:00:00 --mem 2G --partition debug --account lab -- "${train[@]}"
  for want in "--cpus-per-task=2" "--time=1:00:00" "--mem=2G" "--partition=debug" "--account=lab"; do
    grep -qx -- "#SBATCH $want" "$work/r.sbatch" || fail "no #SBATCH $want"
  done
  grep -qx 'export HEADLAB_THREADS="${SLURM_CPUS_PER_TASK:-2}"' "$work/r.sbatch" || fail "the runs do not use SLURM's cores"
  expect 2 "go into the script of --emit-slurm" "$hl" ablate --out "$work/r2" --grid heads=1 --time 1:00:00 -- "${train[@]}"
  expect 2 "--mem '2G --wrap=x': not a value SLURM takes" "$hl" ablate --out "$work/r2" --grid heads=1 \
    --emit-slurm "$work/r2.sbatch" --mem "2G --wrap=x" -- "${train[@]}"
  [ ! -e "$work/r2.sbatch" ] || fail "a refused script was written"
  ;;

*)
  fail "unknown case (slurm, collect, refuse or restart)"
  ;;
esac
echo "ablate_cluster $case_name: ok"
