#!/usr/bin/env bash
# course/check_course.sh [BUILD_DIR]: the checks of course mode (docs/course.md), run by .ci/run.
#
#  0. the task markers in framework/ agree with course/tasks.txt, every task has its page with the
#     required sections linked from the student README, course/student_copy.txt and course/traps.txt
#     are valid, and the would-be copy has no reference line and no twin of a region
#     (make_student_copy.py --check);
#  a. on the reference build (BUILD_DIR, default build/release), for every task X:
#       HEADLAB_BLANK_TASKS=X  headlab_tests -tc="task X:*"   runs cases, and every one fails naming TASK X;
#       HEADLAB_BLANK_TASKS=X  the "task Y:*" cases of every task Y that does not depend on X pass;
#     the same for the instructor's hidden tests (course/grading/, headlab_grading_tests);
#     with nothing blanked every task case passes, with the default seed and another HEADLAB_COURSE_SEED;
#     with every task blanked (HEADLAB_BLANK_TASKS=all) the @no-task-tests cases still pass;
#     `headlab course grade --instructor` gives every task its points (JSON checked);
#  b. the student copy, written to build/course-student/src and built in build/course-student/build
#     (the headlab_tests target only): no HEADLAB_TASK or BEGIN/END markers (of tasks or of their
#     fast twins) left in framework/, no
#     compiler warning in its sources, every task's cases fail with NotImplemented, the @no-task-tests
#     cases pass; it has the student README (not the instructor's), every task page, the flash_attention
#     stub, and none of the instructor-only files (course/student_copy.txt); `headlab course grade` on
#     its tests gives 0 points, every task "not started" or "waiting for" a prerequisite;
#  c. the traps (course/traps.txt, the mutation suite: 3+ wrong answers per task): the copy with the
#     trapped tasks and their prerequisites filled in
#     with the reference (make_student_copy.py --with-traps) passes their cases, and each deliberately
#     wrong answer (HEADLAB_COURSE_TRAP=<name>) fails its task's cases. The copy is then written back.
# HEADLAB_COURSE_STUDENT_DIR puts the student copy and its build elsewhere; they are kept, so a rerun
# rebuilds only what changed.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(./scripts/build_jobs.sh)  # compiler processes at once: HEADLAB_JOBS, or one per core
build=${1:-build/release}
tests=$build/tests/headlab_tests
hidden=$build/course/grading/headlab_grading_tests
cli=$build/apps/headlab
student=${HEADLAB_COURSE_STUDENT_DIR:-build/course-student}
export HEADLAB_THREADS=1
start=$(date +%s)
failures=0
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}

# each_in_parallel FUNCTION ARG...: FUNCTION ARG for every ARG, $jobs at a time (HEADLAB_THREADS=1:
# one core each), each one's output kept apart and printed in ARG order once all have ended; every
# "FAIL:" line of theirs counts as a failure here (their `fail` ran in a subshell), and so does a
# job stopped by a failing command (set -e holds in each job: it writes its .done file only at its end).
each_in_parallel() {
  local fn=$1 dir i=0 j arg
  shift
  dir=$(mktemp -d)
  for arg in "$@"; do
    { "$fn" "$arg"; : > "$dir/$i.done"; } > "$dir/$i" 2>&1 &
    i=$((i + 1))
    while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
  done
  wait || true
  for ((j = 0; j < i; j++)); do
    cat "$dir/$j"
    failures=$((failures + $(grep -c '^FAIL:' "$dir/$j" || true)))
    [ -f "$dir/$j.done" ] || fail "$fn '${*:j+1:1}' stopped early: a command in it failed (its output is above)"
  done
  rm -rf "$dir"
}

# "N P F" from doctest's last summary line "[doctest] test cases: N | P passed | F failed | ..."
summary() {
  local s
  s=$(sed -n 's/.*test cases: *\([0-9]*\) | *\([0-9]*\) passed | *\([0-9]*\) failed.*/\1 \2 \3/p' | tail -n 1)
  echo "${s:-0 0 0}"
}

for bin in "$tests" "$hidden" "$cli"; do
  if [ ! -x "$bin" ]; then
    echo "check_course: $bin not found; build the reference first (cmake --build --preset release)"
    exit 2
  fi
done

echo "-- 0. markers"
python3 course/make_student_copy.py --check
mapfile -t task_lines < <(python3 course/make_student_copy.py --tasks)
no_task_filter=$(python3 course/make_student_copy.py --no-task-tests)
declare -A prereqs
ids=()
for line in "${task_lines[@]}"; do
  IFS=$'\t' read -r id _title deps <<< "$line"
  ids+=("$id")
  prereqs[$id]=" $deps "
done
echo "   ${#ids[@]} tasks: ${ids[*]}"

echo "-- a. reference build ($build), one task blanked at a time (task tests, then the hidden ones)"
# blank_one BINARY X: with X blanked, X's cases fail naming it and every case of a task not depending on it passes.
blank_one() {
  local bin=$1 x=$2 out rc n passed failed own filter count y
  out=$(HEADLAB_BLANK_TASKS=$x "$bin" "-tc=task $x:*" 2>&1) && rc=0 || rc=$?
  read -r n passed _ <<< "$(summary <<< "$out")"
  own="$n"
  if [ "$rc" -eq 0 ] || [ "$n" -lt 1 ] || [ "$passed" -ne 0 ]; then
    fail "$(basename "$bin"): task $x blanked: its cases should all fail (exit $rc, $n cases, $passed passed)"
  elif ! grep -q "TASK $x (.*) is not implemented yet" <<< "$out"; then
    fail "$(basename "$bin"): task $x blanked: its cases failed without naming TASK $x"
    tail -n 20 <<< "$out"
  fi
  filter="" count=0
  for y in "${ids[@]}"; do
    if [ "$y" != "$x" ] && [[ "${prereqs[$y]}" != *" $x "* ]]; then
      filter+="${filter:+,}task $y:*"
      count=$((count + 1))
    fi
  done
  n=0
  if [ -n "$filter" ]; then
    out=$(HEADLAB_BLANK_TASKS=$x "$bin" "-tc=$filter" 2>&1) && rc=0 || rc=$?
    read -r n _ failed <<< "$(summary <<< "$out")"
    if [ "$rc" -ne 0 ] || [ "$failed" -ne 0 ] || [ "$n" -lt "$count" ]; then
      fail "$(basename "$bin"): task $x blanked: the cases of the $count tasks that do not depend on it should pass ($n run, $failed failed)"
      grep -E "TEST CASE:|ERROR:|threw exception" <<< "$out" | head -n 20 || true
    fi
  fi
  printf '   %-4s blanked: %2s own case(s) fail naming it; %3s cases of the %2s tasks not depending on it pass (%s)\n' \
    "$x" "$own" "$n" "$count" "$(basename "$bin")"
}
blank_task() {
  blank_one "$tests" "$1"
  blank_one "$hidden" "$1"
}
each_in_parallel blank_task "${ids[@]}"
# Task 0.2 is the student's gradcheck: the gradient tasks must not need it (their tests check by themselves).
for y in 0.3 0.4 0.5 0.6 0.7 3.1 4.1; do
  if [[ "${prereqs[$y]}" == *" 0.2 "* ]]; then fail "task $y lists 0.2 (the student's gradcheck) as a prerequisite"; fi
done
# Graders run the task cases with a seed of their own (docs/course.md): they must pass with any.
for course_seed in 0 20261129; do
  for bin in "$tests" "$hidden"; do
    out=$(HEADLAB_COURSE_SEED=$course_seed "$bin" "-tc=task *" 2>&1) && rc=0 || rc=$?
    read -r n _ failed <<< "$(summary <<< "$out")"
    if [ "$rc" -ne 0 ] || [ "$n" -lt "${#ids[@]}" ]; then
      fail "nothing blanked, HEADLAB_COURSE_SEED=$course_seed: every task case of $(basename "$bin") should pass ($n run, $failed failed)"
      grep -E "TEST CASE:|ERROR:|threw exception" <<< "$out" | head -n 20 || true
    else
      echo "   none blanked, HEADLAB_COURSE_SEED=$course_seed: all $n task cases of $(basename "$bin") pass"
    fi
  done
done
out=$(HEADLAB_BLANK_TASKS=all "$tests" "-tc=$no_task_filter" 2>&1) && rc=0 || rc=$?
read -r n _ failed <<< "$(summary <<< "$out")"
if [ "$rc" -ne 0 ] || [ "$n" -lt 1 ]; then
  fail "every task blanked: the @no-task-tests cases ($no_task_filter) should pass ($n run, $failed failed)"
  grep -E "TEST CASE:|ERROR:|threw exception" <<< "$out" | head -n 20 || true
else
  echo "   all  blanked: the $n @no-task-tests cases pass"
fi
# check_grade FILE WANT: the JSON of `headlab course grade` (WANT = full: every task its points;
# zero: no points, every task not started or waiting for a prerequisite).
check_grade() {
  python3 - "$1" "$2" "${#ids[@]}" <<'PY'
import json, sys
path, want, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
r = json.load(open(path))
problems = []
if len(r["tasks"]) != count:
    problems.append(f"{len(r['tasks'])} tasks in the report, {count} in course/tasks.txt")
for t in r["tasks"]:
    for key in ("task", "title", "status", "points", "max_points", "seed", "cases", "passed", "failures"):
        if key not in t:
            problems.append(f"task {t.get('task')}: no '{key}'")
    if want == "full" and (t["points"] != t["max_points"] or t["status"] != "pass" or t["failures"]):
        problems.append(f"task {t['task']}: {t['status']}, {t['points']}/{t['max_points']}: {t['failures'][:1]}")
    if want == "zero" and (t["points"] != 0 or not (t["status"] == "not started" or t["status"].startswith("waiting for"))
                           or not t["failures"]):
        problems.append(f"task {t['task']}: {t['status']}, {t['points']} points")
if want == "full" and r["points"] != r["max_points"]:
    problems.append(f"total {r['points']} of {r['max_points']}")
if want == "zero" and r["points"] != 0:
    problems.append(f"total {r['points']}")
# Nothing done: a task with prerequisites waits for all of them (transitively, in table order),
# whichever blank its tests reach first; one without is not started.
if want == "zero":
    import subprocess
    deps = {}
    for line in subprocess.run(["python3", "course/make_student_copy.py", "--tasks"], capture_output=True,
                               text=True, check=True).stdout.splitlines():
        tid, _title, direct = line.split("\t")
        deps[tid] = direct.split()
    order = list(deps)
    for t in r["tasks"]:
        closure, stack = set(), list(deps[t["task"]])
        while stack:
            d = stack.pop()
            if d not in closure:
                closure.add(d)
                stack.extend(deps[d])
        want_status = "waiting for " + " ".join(sorted(closure, key=order.index)) if closure else "not started"
        if t["status"] != want_status:
            problems.append(f"task {t['task']}: status '{t['status']}', expected '{want_status}'")
ran = r.get("ran", {})
for key in ("tests", "seed_source", "handout_commit", "diff_sha256", "note", "what_counts"):
    if key not in ran:
        problems.append(f"no ran.{key} in the report")
for p in problems:
    print("   " + p)
sys.exit(1 if problems else 0)
PY
}
grade_json=$(mktemp)
if ! "$cli" course grade --instructor --seed 20261129 --out "$grade_json" > "$grade_json.log" 2>&1; then
  cat "$grade_json.log"
  fail "headlab course grade --instructor failed on the reference"
elif ! check_grade "$grade_json" full; then
  fail "headlab course grade --instructor: the reference should get every point"
else
  echo "   headlab course grade --instructor --seed 20261129: $(tail -n 2 "$grade_json.log" | head -n 1)"
fi
echo "   part a: $(( $(date +%s) - start )) s"

echo "-- b. the student copy ($student)"
b_start=$(date +%s)
python3 course/make_student_copy.py --out "$student/src"
# (headlab/core/task_marker.hpp documents the marker syntax itself, so it is left out of the search.)
if grep -rnE --exclude=task_marker.hpp 'HEADLAB_TASK\("|// (BEGIN|END) (FAST TWIN OF )?TASK' "$student/src/framework"; then
  fail "the student copy still has task markers in framework/"
fi
# What the copy holds, and what it must not (course/student_copy.txt).
if ! cmp -s course/student/README.md "$student/src/README.md"; then fail "the student copy's README is not course/student/README.md"; fi
for x in "${ids[@]}"; do
  [ -f "$student/src/course/tasks/$x.md" ] || fail "the student copy has no course/tasks/$x.md"
done
cmp -s course/student/flash_attention_stub.cpp "$student/src/framework/attention/kernels/flash_attention.cpp" ||
  fail "the student copy's flash_attention.cpp is not the stub (course/student/flash_attention_stub.cpp)"
for f in course/make_student_copy.py course/check_course.sh docs/course.md course/grading course/traps.txt \
         course/student_copy.txt course/student .ci tests/attention/test_flash_attention.cpp; do
  if [ -e "$student/src/$f" ]; then fail "the student copy has the instructor-only $f"; fi
done
if grep -rqn "TODO: write it here (see docs" "$student/src/framework"; then fail "a blanked region of the student copy points to the instructor docs"; fi
echo "   README, $(ls "$student/src/course/tasks" | wc -l) task pages and the flash_attention stub are in; the instructor-only files are not"
# Release without -march=native and at -O1: the student copy is only built to be tested here.
cmake -S "$student/src" -B "$student/build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="-O1 -DNDEBUG" \
  -DHEADLAB_BUILD_BENCH=OFF > "$student/configure.log" 2>&1 || { cat "$student/configure.log"; exit 1; }
if ! cmake --build "$student/build" --target headlab_tests -j "$jobs" > "$student/build.log" 2>&1; then
  tail -n 60 "$student/build.log"
  fail "the student copy does not build (log: $student/build.log)"
  echo "== check_course: $failures failure(s)"
  exit 1
fi
# Warnings in the copy's own sources (what a blanked region could cause: unused variables or
# helpers, a missing return) fail the check, and so does any other (a student's first build shows
# none from third-party headers: headlab/core/simd_intrinsics.hpp).
src_abs=$(cd "$student/src" && pwd)
warnings=$(grep -cE "^$src_abs/[^ ]*:[0-9]+:[0-9]+: warning:" "$student/build.log" || true)
others=$(grep -cE "^[^ ]+:[0-9]+:[0-9]+: warning:" "$student/build.log" || true)
if [ "$warnings" -ne 0 ]; then
  grep -A3 "^$src_abs/.*warning:" "$student/build.log" | head -n 40
  fail "the student copy builds with $warnings warning(s) in its sources (log: $student/build.log)"
fi
if [ "$others" -ne "$warnings" ]; then
  grep -B2 -A3 "warning:" "$student/build.log" | head -n 40
  fail "the student copy builds with $((others - warnings)) warning(s) from outside its sources (log: $student/build.log)"
fi
echo "   built in $(( $(date +%s) - b_start )) s, $warnings warnings in its sources ($others in all)"
student_tests=$student/build/tests/headlab_tests
for x in "${ids[@]}"; do
  out=$("$student_tests" "-tc=task $x:*" 2>&1) && rc=0 || rc=$?
  read -r n passed _ <<< "$(summary <<< "$out")"
  if [ "$rc" -eq 0 ] || [ "$n" -lt 1 ] || [ "$passed" -ne 0 ]; then
    fail "student copy: the cases of task $x should all fail (exit $rc, $n cases, $passed passed)"
  elif [ "$(grep -c "is not implemented yet" <<< "$out")" -lt "$n" ]; then
    fail "student copy: the cases of task $x should fail with NotImplemented"
    tail -n 20 <<< "$out"
  fi
  printf '   %-4s: %s case(s) fail with NotImplemented\n' "$x" "$n"
done
out=$("$student_tests" "-tc=$no_task_filter" 2>&1) && rc=0 || rc=$?
read -r n _ failed <<< "$(summary <<< "$out")"
if [ "$rc" -ne 0 ] || [ "$n" -lt 1 ]; then
  fail "student copy: the @no-task-tests cases should pass ($n run, $failed failed)"
  grep -E "TEST CASE:|ERROR:|threw exception" <<< "$out" | head -n 20 || true
else
  echo "   the $n @no-task-tests cases ($no_task_filter) pass"
fi

# The CLI is the reference's (the course command has no task in it): graded on the copy's tests.
if ! "$cli" course grade --tests "$student_tests" --out "$grade_json" > "$grade_json.log" 2>&1; then
  cat "$grade_json.log"
  fail "headlab course grade failed on the student copy"
elif ! check_grade "$grade_json" zero; then
  fail "headlab course grade: the student copy should get no point"
else
  echo "   headlab course grade on the copy's tests: $(tail -n 2 "$grade_json.log" | head -n 1)"
fi

echo "-- c. traps (course/traps.txt): each deliberately wrong answer fails its task"
c_start=$(date +%s)
python3 course/make_student_copy.py --out "$student/src" --with-traps
if ! cmake --build "$student/build" --target headlab_tests -j "$jobs" > "$student/build-traps.log" 2>&1; then
  tail -n 60 "$student/build-traps.log"
  fail "the student copy with the traps does not build (log: $student/build-traps.log)"
else
  mapfile -t trap_lines < <(python3 course/make_student_copy.py --traps)
  filter=""
  for line in "${trap_lines[@]}"; do
    IFS=$'\t' read -r _name task deps <<< "$line"
    for y in $task $deps; do [[ ",$filter," == *",task $y:*,"* ]] || filter+="${filter:+,}task $y:*"; done
  done
  out=$("$student_tests" "-tc=$filter" 2>&1) && rc=0 || rc=$?
  read -r n _ failed <<< "$(summary <<< "$out")"
  if [ "$rc" -ne 0 ] || [ "$n" -lt 1 ]; then
    fail "no trap on: the reference in the copy should pass the cases of the trapped tasks ($n run, $failed failed)"
    grep -E "TEST CASE:|ERROR:|threw exception" <<< "$out" | head -n 20 || true
  else
    echo "   no trap on: the $n cases of the trapped tasks and their prerequisites pass"
  fi
  # The mutation table: task, wrong answer, the task's own cases that catch it (doctest names every
  # failing case "TEST CASE:  task X: ..."; a crash is reported the same way). Also kept in
  # $student/mutants.md (docs/course.md shows the last one).
  table=$student/mutants.md
  {
    echo "| task | wrong answer (course/traps.txt) | caught by (the task's own cases that fail) |"
    echo "|---|---|---|"
  } > "$table"
  # A wrong answer can corrupt the heap so that the crash handler itself deadlocks (seen once: a
  # crash inside malloc, then doctest's signal handler waiting on malloc's lock): each trapped run is
  # stopped after trap_limit seconds (a task's cases take under a second on the reference; 30 s leaves
  # a slow machine room), and a hang counts as caught, as a grader's time limit would report it.
  trap_limit=${HEADLAB_COURSE_TRAP_TIMEOUT:-30}
  rows=$(mktemp -d)  # rows/<i>: trap i's line of the table
  # run_trap "I<TAB>LINE": trap line I of course/traps.txt on; its task's cases must fail.
  run_trap() {
    local i name task rc out n passed failed cases
    IFS=$'\t' read -r i name task _ <<< "$1"
    out=$( (HEADLAB_COURSE_TRAP=$name timeout -k 10 "$trap_limit" "$student_tests" "-tc=task $task:*" 2>&1; exit $?) 2> /dev/null) && rc=0 || rc=$?
    read -r n passed failed <<< "$(summary <<< "$out")"
    cases=$(sed -n "s/^TEST CASE: *task $task: //p" <<< "$out" | sort -u | cut -c1-60 | paste -sd ';' | sed 's/;/; /g; s/|/\\|/g')
    if [ "$rc" -eq 0 ]; then
      fail "trap $name: the cases of task $task pass with this wrong answer"
      echo "| $task | $name | **NOT CAUGHT** |" > "$rows/$i"
    else
      [ "$rc" -gt 128 ] && cases="$cases (crashed: signal $((rc - 128)))"
      [ "$rc" -eq 124 ] && cases="$cases (hung: stopped after $trap_limit s)"
      printf '   %-4s %-36s caught by: %s\n' "$task" "$name" "${cases:-exit $rc}"
      echo "| $task | $name | ${cases:-exit $rc} |" > "$rows/$i"
    fi
  }
  numbered=()
  for i in "${!trap_lines[@]}"; do numbered+=("$i"$'\t'"${trap_lines[$i]}"); done
  each_in_parallel run_trap "${numbered[@]}"
  for i in "${!trap_lines[@]}"; do
    [ -f "$rows/$i" ] && cat "$rows/$i" >> "$table" || echo "| ? | ${trap_lines[$i]%%$'\t'*} | **NO RESULT** |" >> "$table"
  done
  rm -rf "$rows"
  caught=$(( ${#trap_lines[@]} - $(grep -c 'NOT CAUGHT\|NO RESULT' "$table" || true) ))
  echo "   $caught of ${#trap_lines[@]} wrong answers caught by their own task's cases (table: $table)"
  # docs/course.md shows the table: it must list every wrong answer (rerun and copy $table there).
  for line in "${trap_lines[@]}"; do
    IFS=$'\t' read -r name _task _deps <<< "$line"
    grep -q "| $name |" docs/course.md || fail "docs/course.md (Traps) does not list the wrong answer $name: copy $table there"
  done
  for x in "${ids[@]}"; do
    count=$(awk -F'\t' -v t="$x" '$2 == t' <<< "$(printf '%s\n' "${trap_lines[@]}")" | wc -l)
    [ "$count" -ge 3 ] || fail "task $x has $count wrong answers in course/traps.txt (3 or more wanted)"
  done
  # The student's gradcheck (task 0.2) rescues no other task: every trap again, with 0.2's traps on.
  gradcheck_traps=""
  for line in "${trap_lines[@]}"; do
    IFS=$'\t' read -r name task _deps <<< "$line"
    [ "$task" = 0.2 ] && gradcheck_traps+=",$name"
  done
  # run_trap_with_gradcheck_traps LINE: (in a subshell: a wrong answer may crash the binary, and bash
  # would report it here)
  run_trap_with_gradcheck_traps() {
    local name task
    IFS=$'\t' read -r name task _ <<< "$1"
    [ "$task" = 0.2 ] && return 0
    if (HEADLAB_COURSE_TRAP=$name$gradcheck_traps timeout -k 10 "$trap_limit" "$student_tests" "-tc=task $task:*" > /dev/null 2>&1; exit $?) 2> /dev/null; then
      fail "trap $name with$gradcheck_traps: the cases of task $task pass"
    fi
  }
  each_in_parallel run_trap_with_gradcheck_traps "${trap_lines[@]}"
  echo "   every trap fails its task also with task 0.2's traps on (${gradcheck_traps#,})"
fi
python3 course/make_student_copy.py --out "$student/src" > /dev/null  # the student copy again (its build is rebuilt next time)
echo "   part c: $(( $(date +%s) - c_start )) s"
rm -f "$grade_json" "$grade_json.log"

if [ "$failures" -ne 0 ]; then
  echo "== check_course: $failures failure(s) in $(( $(date +%s) - start )) s"
  exit 1
fi
echo "== check_course passed in $(( $(date +%s) - start )) s"
