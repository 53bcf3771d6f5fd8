#!/usr/bin/env bash
# tests/cli/study.sh HEADLAB SOURCE WORK CASE [RECIPES]: `headlab study` end to end (tests/cli/study.cmake runs
# one CASE per test, each a few seconds):
#   pipeline   a tiny pinned copy-task recipe (2 cells x 2 seeds): study run -j 2, its rerun skips
#              every run, study report writes runs.csv (4 rows), summary.csv, comparisons.csv with a
#              verdict, report.md, chart.svg; a recipe changed since refuses the runs it trained
#   unpinned   a recipe with one [train] line removed is refused, naming the option, before any run;
#              outputs that are inputs or devices, a file as --runs, a report of nothing are refused;
#              quick runs are reported only with --quick, and marked
#   cluster    the same study into a directory whose path holds a space, quotes, '$(...)' and ';':
#              the --emit-jobs file (run by GNU parallel where installed, else bash) and the SLURM
#              array (run task by task with bash) execute nothing but the runs, and give the same
#              numbers as the local run (all but the seconds)
#   quick      the --quick form of every committed recipe in docs/studies runs and reports (RECIPES:
#              "all", the default, or one study's name: the sanitizer builds run one)
#   scipy      study report --from-csv on each committed runs.csv gives the statistics its
#              report.py computed with SciPy (tests/docs/check_study_statistics.py)
# Prints "study CASE: ok" at the end; any failure prints why and exits 1.
set -u
hl=$1
src=$2
work=$3
case_name=$4
only=${5:-all}  # quick: "all" recipes, or the one named (the sanitizer builds)
export HEADLAB_THREADS=1
rm -rf "$work"
mkdir -p "$work"

test_label="study $case_name"
. "$(dirname "$0")/expect.sh"
# A pinned recipe at $1: every option of a tiny copy model, then the [study] section.
write_recipe() {
  "$hl" train --task copy --steps 30 --d-model 16 --ff 32 --layers 1 --eval-every 30 --eval-sequences 50 \
    --print-config > "$1" || fail "train --print-config"
  cat >> "$1" <<'EOF'
[study]
title = one head against two, copy task
seeds = 1,2
threads = 1
cell = h1 --heads 1
cell = h2 --heads 2
metrics = accuracy:valid_accuracy valid_loss
compare = h2 vs h1 on accuracy | confirm > 0.5 | refute within 0.5
quick = --steps 10 --eval-every 10
EOF
}
# runs.csv without its train_seconds column: what a seed fixes.
seeded() { cut -d, -f1-3,5- "$1"; }

case "$case_name" in
pipeline)
  write_recipe "$work/recipe.ini"
  expect 0 "study: 4 runs, 4 to run, 2 at a time.*then: headlab study report" \
    "$hl" study run "$work/recipe.ini" --runs "$work/runs" -j 2
  [ "$(find "$work/runs/runs" -name summary.json | wc -l)" -eq 4 ] || fail "not 4 finished runs"
  expect 0 "skipping 4 finished runs" "$hl" study run "$work/recipe.ini" --runs "$work/runs"
  expect 0 "h2 vs h1 \| accuracy \|.*\*\*(confirmed|refuted|unresolved)\*\*.*wrote runs.csv" \
    "$hl" study report "$work/recipe.ini" --runs "$work/runs" --commit abc123
  [ "$(wc -l < "$work/runs/runs.csv")" -eq 5 ] || fail "runs.csv is not a header and 4 rows"
  head -n 1 "$work/runs/runs.csv" | grep -q "^cell,seed,steps,train_seconds,flags,threads,cpu,commit,arithmetic,accuracy,valid_loss$" \
    || fail "runs.csv header: $(head -n 1 "$work/runs/runs.csv")"
  grep -q "^h1,1,30,.*,--heads 1,1,.*,abc123,[^,]*; OpenBLAS[^,]* kernels [^,]*; [^,]* for [^,]*," "$work/runs/runs.csv" || fail "runs.csv row of h1 seed 1 (with its arithmetic)"
  [ "$(wc -l < "$work/runs/summary.csv")" -eq 5 ] || fail "summary.csv is not 2 cells x 2 metrics"
  grep -q "^h2 vs h1,accuracy,2,2," "$work/runs/comparisons.csv" || fail "comparisons.csv"
  [ "$(grep -c 'class="seed"' "$work/runs/chart.svg")" -eq 4 ] || fail "chart.svg does not draw the 4 seeds"
  # The recipe changed since (another learning-rate factor): its finished runs are refused.
  sed -i 's/^lr-factor=.*/lr-factor=0.25/' "$work/recipe.ini"
  expect 2 "trained with other options than this plan gives it.*runs/h1-seed1: from another sweep: lr-factor=0.5 there, lr-factor=0.25" \
    "$hl" study run "$work/recipe.ini" --runs "$work/runs"
  ;;
unpinned)
  write_recipe "$work/recipe.ini"
  cp "$work/recipe.ini" "$work/pinned.ini"
  sed -i '/^ff=/d' "$work/recipe.ini"
  expect 2 "does not pin 1 option\(s\) \(ff\)" "$hl" study run "$work/recipe.ini" --runs "$work/runs"
  [ ! -e "$work/runs" ] || fail "the runs directory was made"
  # Outputs that are inputs, devices or files where a directory belongs: refused, nothing written.
  expect 2 "--emit-jobs: .*is also an input" "$hl" study run "$work/pinned.ini" --runs "$work/runs" \
    --emit-jobs "$work/pinned.ini"
  expect 2 "--emit-slurm: '/dev/null' exists and is" "$hl" study run "$work/pinned.ini" --runs "$work/runs" \
    --emit-slurm /dev/null
  echo "my notes" > "$work/notes.txt"  # another program's file: kept (it was replaced)
  expect 2 "--emit-jobs: .*notes.txt' exists and is not a jobs file headlab wrote" "$hl" study run "$work/pinned.ini" \
    --runs "$work/runs" --emit-jobs "$work/notes.txt"
  expect 2 "--emit-slurm: .*notes.txt' exists and is not a SLURM script headlab wrote" "$hl" study run \
    "$work/pinned.ini" --runs "$work/runs" --emit-slurm "$work/notes.txt"
  [ "$(cat "$work/notes.txt")" = "my notes" ] || fail "the notes were replaced"
  expect 2 "--runs '.*pinned.ini': exists and is not a directory" "$hl" study run "$work/pinned.ini" \
    --runs "$work/pinned.ini"
  [ ! -e "$work/runs" ] || fail "a refused run made the runs directory"
  expect 2 "no runs/ directory there" "$hl" study report "$work/pinned.ini" --runs "$work"
  [ ! -e "$work/runs.csv" ] || fail "a refused report wrote runs.csv"
  # The quick runs are not reported as the recipe's, only with --quick, marked as such.
  "$hl" study run "$work/pinned.ini" --runs "$work/quick" --quick > /dev/null || fail "the quick runs"
  expect 2 "trained with other options than the recipe gives .*steps=10 there, steps=30.*report them with --quick" \
    "$hl" study report "$work/pinned.ini" --runs "$work/quick"
  expect 0 "Quick form.*not a result" "$hl" study report "$work/pinned.ini" --runs "$work/quick" --quick
  # A FIFO as a run's summary.json: the run counts as unfinished, nothing blocks.
  rm "$work/quick/runs/h1-seed1/summary.json" && mkfifo "$work/quick/runs/h1-seed1/summary.json"
  expect 0 "Not finished .*h1-seed1" timeout 20 "$hl" study report "$work/pinned.ini" --runs "$work/quick" --quick
  # A run that started and saved nothing (a task killed early): the emitted jobs start it afresh.
  rm -f "$work/quick/runs/h1-seed1/summary.json" "$work/quick/runs/h1-seed1/checkpoint.safetensors" \
    "$work/quick/runs/h1-seed1/best.safetensors"
  expect 0 "wrote 1 jobs" "$hl" study run "$work/pinned.ini" --runs "$work/quick" --quick --emit-jobs "$work/jobs.txt"
  bash "$work/jobs.txt" || fail "the job of a started run failed"
  [ -f "$work/quick/runs/h1-seed1/summary.json" ] || fail "the started run did not finish"
  expect 2 "--runs: an empty path" "$hl" study run "$work/pinned.ini" --runs ""
  # Values whose range no chart can draw: refused before anything is written (the chart is drawn first).
  printf 'cell,seed,accuracy,valid_loss\nh1,1,1e308,1\nh1,2,1e308,1\nh2,1,-1e308,1\nh2,2,-1e308,1\n' > "$work/huge.csv"
  expect 2 "span more than a double holds" "$hl" study report "$work/pinned.ini" --from-csv "$work/huge.csv" \
    --out "$work/huge"
  [ ! -e "$work/huge" ] || fail "a refused report made its --out directory"
  # A runs.csv of a header alone: refused (it wrote a report of n = 0 everywhere).
  printf 'cell,seed,accuracy,valid_loss\n' > "$work/header_only.csv"
  expect 2 "--from-csv .*header_only.csv': no run in it" "$hl" study report "$work/pinned.ini" \
    --from-csv "$work/header_only.csv" --out "$work/empty_report"
  [ ! -e "$work/empty_report" ] || fail "a refused report made its --out directory"
  # An --out folder that is someone else's: its report.md is replaced only with --overwrite.
  printf 'cell,seed,accuracy,valid_loss\nh1,1,0.5,1\nh1,2,0.6,1\nh2,1,0.7,1\nh2,2,0.8,1\n' > "$work/small.csv"
  mkdir -p "$work/notes" && echo "my notes" > "$work/notes/report.md"
  expect 2 "--out .*notes' holds report.md already .*give --overwrite" "$hl" study report "$work/pinned.ini" \
    --from-csv "$work/small.csv" --out "$work/notes"
  grep -q "^my notes$" "$work/notes/report.md" || fail "a refused report replaced report.md"
  expect 0 "wrote summary.csv" "$hl" study report "$work/pinned.ini" --from-csv "$work/small.csv" --out "$work/notes" --overwrite
  # A spreadsheet's byte-order mark is dropped ("no column 'cell'" before); a NUL byte is refused
  # naming its line (it reached report.md).
  printf '\357\273\277' > "$work/bom.csv" && cat "$work/small.csv" >> "$work/bom.csv"
  expect 0 "wrote summary.csv" "$hl" study report "$work/pinned.ini" --from-csv "$work/bom.csv" --out "$work/bom_report"
  printf 'cell,seed,accuracy,valid_loss\nh1,1,0.5,1\nh1\000,2,0.6,1\n' > "$work/nul.csv"
  expect 2 "nul.csv'?:3: holds a NUL byte" "$hl" study report "$work/pinned.ini" --from-csv "$work/nul.csv" --out "$work/nul_report"
  # A measured study's documented command: --from-csv DIR/runs.csv --out DIR (refused as "runs.csv is
  # also an input" before, though --from-csv writes no runs.csv).
  mkdir -p "$work/own" && cp "$work/pinned.ini" "$work/own/recipe.ini" && cp "$work/small.csv" "$work/own/runs.csv"
  expect 0 "wrote summary.csv" "$hl" study report "$work/own/recipe.ini" --from-csv "$work/own/runs.csv" --out "$work/own"
  # Its own folders (the recipe's, the runs'): replaced as before.
  expect 0 "wrote summary.csv" "$hl" study report "$work/pinned.ini" --from-csv "$work/small.csv" --out "$work"
  expect 0 "wrote summary.csv" "$hl" study report "$work/pinned.ini" --from-csv "$work/small.csv" --out "$work"
  ;;
cluster)
  write_recipe "$work/recipe.ini"
  "$hl" study run "$work/recipe.ini" --runs "$work/local" -j 2 > /dev/null || fail "the local study"
  "$hl" study report "$work/recipe.ini" --runs "$work/local" > /dev/null || fail "the local report"
  odd="$work/a dir \$(touch $work/PWNED); 'q' \"x\""
  mkdir -p "$odd"
  cp "$work/recipe.ini" "$odd/recipe.ini"
  expect 0 "wrote 4 jobs" "$hl" study run "$odd/recipe.ini" --runs "$odd/jobs" --emit-jobs "$work/jobs.txt"
  if command -v parallel > /dev/null; then
    parallel -j 2 < "$work/jobs.txt" || fail "parallel ran the jobs with an error"
  else
    while IFS= read -r line; do bash -c "$line" || fail "a job failed: $line"; done < "$work/jobs.txt"
  fi
  expect 0 "wrote a SLURM array of 4 tasks" "$hl" study run "$odd/recipe.ini" --runs "$odd/slurm" -j 2 \
    --emit-slurm "$work/array.sh"
  grep -q "^#SBATCH --cpus-per-task=1$" "$work/array.sh" || fail "no --cpus-per-task in the array"
  grep -q "^#SBATCH --array=0-3%2$" "$work/array.sh" || fail "no throttled array line"
  for task in 0 1 2 3; do SLURM_ARRAY_TASK_ID=$task bash "$work/array.sh" || fail "array task $task"; done
  [ ! -e "$work/PWNED" ] || fail "a path's \$(...) was executed"
  for way in jobs slurm; do
    "$hl" study report "$odd/recipe.ini" --runs "$odd/$way" > /dev/null || fail "the $way report"
    diff <(seeded "$work/local/runs.csv") <(seeded "$odd/$way/runs.csv") || fail "the $way runs differ from the local ones"
    cmp "$work/local/comparisons.csv" "$odd/$way/comparisons.csv" || fail "the $way comparisons differ"
  done
  ;;
quick)
  cd "$src" || fail "no source directory"
  for recipe in docs/studies/*/recipe.ini; do
    name=$(basename "$(dirname "$recipe")")
    [ "$only" = all ] || [ "$only" = "$name" ] || continue
    "$hl" study run "$recipe" --quick --runs "$work/$name" -j 2 > "$work/$name.log" 2>&1 \
      || { cat "$work/$name.log"; fail "the quick runs of $recipe"; }
    runs=$(find "$work/$name/runs" -name summary.json | wc -l)
    cells=$(grep -c '^cell *=' "$recipe")
    seeds=$(grep '^seeds *=' "$recipe" | sed 's/^[^=]*=//' | tr ',' '\n' | grep -c '[0-9]')
    [ "$seeds" -gt 2 ] && seeds=2  # --quick: the first two seeds
    [ "$runs" -eq $((cells * seeds)) ] || fail "$recipe: $runs finished quick runs, expected $((cells * seeds))"
    # The metrics a run's summary.json holds are reported; those measured by measure.py come from runs.csv.
    if "$hl" study report "$recipe" --runs "$work/$name" --quick > "$work/$name.report" 2>&1; then
      grep -q "wrote runs.csv" "$work/$name.report" || fail "$recipe: no report"
    else
      grep -q "has no number" "$work/$name.report" || { cat "$work/$name.report"; fail "$recipe: report"; }
      "$hl" study report "$recipe" --from-csv "$(dirname "$recipe")/runs.csv" --out "$work/$name-csv" > /dev/null \
        || fail "$recipe: report from its runs.csv"
    fi
    echo "quick $name: $runs runs"
  done
  ;;
scipy)
  cd "$src" || fail "no source directory"
  for study in docs/studies/*/; do
    [ -f "$study/recipe.ini" ] || continue
    name=$(basename "$study")
    # a recipe written before its runs (its page says so) has no runs.csv yet
    [ -f "$study/runs.csv" ] || { echo "scipy $name: not run yet"; continue; }
    "$hl" study report "$study/recipe.ini" --from-csv "$study/runs.csv" --out "$work/$name" > /dev/null \
      || fail "report of $study"
    python3 tests/docs/check_study_statistics.py "$study" "$work/$name" || fail "$name: the statistics differ"
  done
  ;;
*)
  fail "unknown case $case_name"
  ;;
esac
echo "study $case_name: ok"
