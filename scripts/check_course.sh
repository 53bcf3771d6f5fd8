#!/usr/bin/env bash
# scripts/check_course.sh [BUILD_DIR]: the checks of course mode (docs/course.md), run by .ci/run.
#
#  0. the task markers in framework/ agree with course/tasks.txt (make_student_copy.py --check);
#  a. on the reference build (BUILD_DIR, default build/release), for every task X:
#       HEADLAB_BLANK_TASKS=X  headlab_tests -tc="task X:*"   runs cases, and every one fails naming TASK X;
#       HEADLAB_BLANK_TASKS=X  the "task Y:*" cases of every task Y that does not depend on X pass;
#     with nothing blanked every task case passes, with the default seed and another HEADLAB_COURSE_SEED;
#     and with every task blanked (HEADLAB_BLANK_TASKS=all) the @no-task-tests cases still pass;
#  b. the student copy, written to build/course-student/src and built in build/course-student/build
#     (the headlab_tests target only): no HEADLAB_TASK or BEGIN/END markers (of tasks or of their
#     fast twins) left in framework/, no
#     compiler warning in its sources, every task's cases fail with NotImplemented, the @no-task-tests
#     cases pass.
# HEADLAB_COURSE_STUDENT_DIR puts the student copy and its build elsewhere; they are kept, so a rerun
# rebuilds only what changed.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/release}
tests=$build/tests/headlab_tests
student=${HEADLAB_COURSE_STUDENT_DIR:-build/course-student}
export OPENBLAS_NUM_THREADS=1
start=$(date +%s)
failures=0
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}

# "N P F" from doctest's last summary line "[doctest] test cases: N | P passed | F failed | ..."
summary() {
  local s
  s=$(sed -n 's/.*test cases: *\([0-9]*\) | *\([0-9]*\) passed | *\([0-9]*\) failed.*/\1 \2 \3/p' | tail -n 1)
  echo "${s:-0 0 0}"
}

if [ ! -x "$tests" ]; then
  echo "check_course: $tests not found; build the reference first (cmake --build --preset release)"
  exit 2
fi

echo "-- 0. markers"
python3 scripts/make_student_copy.py --check
mapfile -t task_lines < <(python3 scripts/make_student_copy.py --tasks)
no_task_filter=$(python3 scripts/make_student_copy.py --no-task-tests)
declare -A prereqs
ids=()
for line in "${task_lines[@]}"; do
  IFS=$'\t' read -r id _title deps <<< "$line"
  ids+=("$id")
  prereqs[$id]=" $deps "
done
echo "   ${#ids[@]} tasks: ${ids[*]}"

echo "-- a. reference build ($build), one task blanked at a time"
for x in "${ids[@]}"; do
  out=$(HEADLAB_BLANK_TASKS=$x "$tests" "-tc=task $x:*" 2>&1) && rc=0 || rc=$?
  read -r n passed _ <<< "$(summary <<< "$out")"
  own="$n"
  if [ "$rc" -eq 0 ] || [ "$n" -lt 1 ] || [ "$passed" -ne 0 ]; then
    fail "task $x blanked: its cases should all fail (exit $rc, $n cases, $passed passed)"
  elif ! grep -q "TASK $x (.*) is not implemented yet" <<< "$out"; then
    fail "task $x blanked: its cases failed without naming TASK $x"
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
    out=$(HEADLAB_BLANK_TASKS=$x "$tests" "-tc=$filter" 2>&1) && rc=0 || rc=$?
    read -r n _ failed <<< "$(summary <<< "$out")"
    if [ "$rc" -ne 0 ] || [ "$failed" -ne 0 ] || [ "$n" -lt "$count" ]; then
      fail "task $x blanked: the cases of the $count tasks that do not depend on it should pass ($n run, $failed failed)"
      grep -E "TEST CASE:|ERROR:|threw exception" <<< "$out" | head -n 20 || true
    fi
  fi
  printf '   %-4s blanked: %s own case(s) fail naming it; %3s cases of the %2s tasks not depending on it pass\n' \
    "$x" "$own" "$n" "$count"
done
# Graders run the task cases with a seed of their own (docs/course.md): they must pass with any.
for course_seed in 0 20261129; do
  out=$(HEADLAB_COURSE_SEED=$course_seed "$tests" "-tc=task *" 2>&1) && rc=0 || rc=$?
  read -r n _ failed <<< "$(summary <<< "$out")"
  if [ "$rc" -ne 0 ] || [ "$n" -lt "${#ids[@]}" ]; then
    fail "nothing blanked, HEADLAB_COURSE_SEED=$course_seed: every task case should pass ($n run, $failed failed)"
    grep -E "TEST CASE:|ERROR:|threw exception" <<< "$out" | head -n 20 || true
  else
    echo "   none blanked, HEADLAB_COURSE_SEED=$course_seed: all $n task cases pass"
  fi
done
out=$(HEADLAB_BLANK_TASKS=all "$tests" "-tc=$no_task_filter" 2>&1) && rc=0 || rc=$?
read -r n _ failed <<< "$(summary <<< "$out")"
if [ "$rc" -ne 0 ] || [ "$n" -lt 1 ]; then
  fail "every task blanked: the @no-task-tests cases ($no_task_filter) should pass ($n run, $failed failed)"
  grep -E "TEST CASE:|ERROR:|threw exception" <<< "$out" | head -n 20 || true
else
  echo "   all  blanked: the $n @no-task-tests cases pass"
fi
echo "   part a: $(( $(date +%s) - start )) s"

echo "-- b. the student copy ($student)"
b_start=$(date +%s)
python3 scripts/make_student_copy.py --out "$student/src"
# (headlab/core/task_marker.hpp documents the marker syntax itself, so it is left out of the search.)
if grep -rnE --exclude=task_marker.hpp 'HEADLAB_TASK\("|// (BEGIN|END) (FAST TWIN OF )?TASK' "$student/src/framework"; then
  fail "the student copy still has task markers in framework/"
fi
# Release without -march=native and at -O1: the student copy is only built to be tested here.
cmake -S "$student/src" -B "$student/build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="-O1 -DNDEBUG" \
  -DHEADLAB_BUILD_BENCH=OFF > "$student/configure.log" 2>&1 || { cat "$student/configure.log"; exit 1; }
if ! cmake --build "$student/build" --target headlab_tests -j 2 > "$student/build.log" 2>&1; then
  tail -n 60 "$student/build.log"
  fail "the student copy does not build (log: $student/build.log)"
  echo "== check_course: $failures failure(s)"
  exit 1
fi
# Warnings in the copy's own sources (what a blanked region could cause: unused variables or
# helpers, a missing return) fail the check; others (system headers) are only counted.
src_abs=$(cd "$student/src" && pwd)
warnings=$(grep -c "^$src_abs/.*warning:" "$student/build.log" || true)
others=$(grep -c "warning:" "$student/build.log" || true)
if [ "$warnings" -ne 0 ]; then
  grep -A3 "^$src_abs/.*warning:" "$student/build.log" | head -n 40
  fail "the student copy builds with $warnings warning(s) in its sources (log: $student/build.log)"
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

if [ "$failures" -ne 0 ]; then
  echo "== check_course: $failures failure(s) in $(( $(date +%s) - start )) s"
  exit 1
fi
echo "== check_course passed in $(( $(date +%s) - start )) s"
