#!/usr/bin/env bash
# tests/robustness/soak_kill9.sh BUILD_DIR [KILLS]: kill -9 soak of `headlab train` (issue 16).
#
# Trains a small copy-task run with a checkpoint every 5 steps, kills it with SIGKILL at random
# moments at least KILLS times (default 20), each time starting it again with --resume (afresh
# while no checkpoint exists yet), until it finishes (if it finishes before KILLS kills, the killed
# run starts again from scratch with shorter delays, at most 5 times); it first trains the same run
# without interruption. Passes when the two final checkpoint.safetensors are byte-identical and the killed
# run's metrics.jsonl has exactly one line per step 1..N (no duplicates, no gaps, no torn line).
# Exits 1 on failure; prints the figures either way. SOAK_STEPS (default 300) and SOAK_DIR (default:
# a new temporary directory, removed on success) can be set in the environment.
set -u
BUILD=${1:?usage: tests/robustness/soak_kill9.sh BUILD_DIR [KILLS]}
KILLS=${2:-20}
STEPS=${SOAK_STEPS:-300}
HL=$BUILD/apps/headlab
[ -x "$HL" ] || { echo "soak: no headlab binary at $HL" >&2; exit 2; }
WORK=${SOAK_DIR:-$(mktemp -d /tmp/headlab_soak.XXXXXX)}
rm -rf "$WORK/straight" "$WORK/killed"
mkdir -p "$WORK"
export HEADLAB_THREADS=1  # resume is bit-exact on one thread
OPTS=(train --task copy --d-model 16 --heads 2 --ff 32 --layers 1 --batch 4 --steps "$STEPS" --save-every 5
      --eval-every 50 --eval-sequences 4 --stop-at-perfect=false --progress none)

fail() { echo "soak: FAILED: $*" >&2; echo "soak: the runs are in $WORK" >&2; exit 1; }

# The uninterrupted run; its time sets how long the killed run may live between kills.
start=$(date +%s.%N)
"$HL" "${OPTS[@]}" --run-dir "$WORK/straight" > "$WORK/straight.log" 2>&1 || fail "the uninterrupted run failed (see $WORK/straight.log)"
seconds=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { print b - a }')
# Kills at uniformly random times in [0, T / KILLS]: a life trains T / (2 KILLS) on average, so the
# run needs about twice KILLS lives; after KILLS kills it is left to finish.
max_delay=$(awk -v t="$seconds" -v k="$KILLS" 'BEGIN { print t / k }')
echo "soak: uninterrupted run of $STEPS steps took ${seconds} s; killing at random moments up to ${max_delay} s"

kills=0 starts=0 resumes=0 to_cut=0 torn=0 attempts=0
RUN=$WORK/killed
while :; do
  # Killed before its first save: nothing to continue, start afresh.
  mode=()
  if [ -f "$RUN/checkpoint.safetensors" ]; then
    mode=(--resume)
    resumes=$((resumes + 1))
    # What the resume must cut: the lines logged after the checkpoint's step, and a torn last line.
    saved=$(head -c 1000000 "$RUN/checkpoint.safetensors" | grep -ao '"step":"[0-9]*"' | tail -1 | grep -o '[0-9][0-9]*')
    ahead=$(grep -o '"step":[0-9]*' "$RUN/metrics.jsonl" | cut -d: -f2 | awk -v s="${saved:-0}" '$1 > s' | wc -l)
    to_cut=$((to_cut + ahead))
    if [ -s "$RUN/metrics.jsonl" ] && [ "$(tail -c 1 "$RUN/metrics.jsonl" | od -An -c | tr -d ' ')" != '\n' ]; then
      torn=$((torn + 1))
    fi
  else
    rm -rf "$RUN"
  fi
  "$HL" "${OPTS[@]}" --run-dir "$RUN" "${mode[@]}" >> "$WORK/killed.log" 2>&1 &
  pid=$!
  starts=$((starts + 1))
  if [ "$kills" -lt "$KILLS" ]; then
    sleep "$(awk -v m="$max_delay" -v r="$RANDOM" 'BEGIN { printf "%.3f", m * r / 32767 }')"
    kill -9 "$pid" 2> /dev/null
  fi
  { wait "$pid"; } 2> /dev/null  # no "Killed" line from the shell
  status=$?
  if [ "$status" -eq 137 ]; then kills=$((kills + 1)); continue; fi
  [ "$status" -eq 0 ] || fail "start $starts exited with status $status (see $WORK/killed.log)"
  [ "$kills" -lt "$KILLS" ] || break  # finished after its KILLS kills
  # It outran the kills (a loaded machine makes the timing noisy): again from scratch, killing sooner.
  attempts=$((attempts + 1))
  [ "$attempts" -le 5 ] || fail "the run finished before $KILLS kills in 5 attempts"
  max_delay=$(awk -v m="$max_delay" 'BEGIN { print m / 2 }')
  echo "soak: finished after only $kills kills; again from scratch, killing at moments up to ${max_delay} s"
  rm -rf "$RUN"
  kills=0 starts=0 resumes=0 to_cut=0 torn=0
done

lines=$(wc -l < "$RUN/metrics.jsonl")
steps_logged=$(grep -o '"step":[0-9]*' "$RUN/metrics.jsonl" | cut -d: -f2)
unique=$(printf '%s\n' "$steps_logged" | sort -n | uniq | wc -l)
echo "soak: $kills kills by SIGKILL, $starts starts ($resumes with --resume, finding $to_cut metrics lines after the checkpoint and $torn torn last lines to cut); metrics.jsonl: $lines lines, $unique distinct steps, for $STEPS steps"
cmp "$WORK/straight/checkpoint.safetensors" "$RUN/checkpoint.safetensors" ||
  fail "the final checkpoints differ"
[ "$steps_logged" = "$(seq 1 "$STEPS")" ] ||
  fail "metrics.jsonl does not hold exactly one line per step 1..$STEPS in order"
[ "$lines" -eq "$STEPS" ] || fail "metrics.jsonl has $lines lines, not $STEPS"
leftovers=$(find "$RUN" -name '*.tmp.*' | wc -l)
[ "$leftovers" -eq 0 ] || fail "$leftovers temporary files left in $RUN"
echo "soak: PASSED: final checkpoints byte-identical ($(wc -c < "$RUN/checkpoint.safetensors") bytes), one metrics line per step"
[ -n "${SOAK_DIR:-}" ] || rm -rf "$WORK"
