#!/usr/bin/env bash
# tests/cli/course_grade.sh HEADLAB HEADLAB_TESTS: what `headlab course grade` records (docs/course.md,
# "Grading"): the test binary's path and SHA-256, whether it is this build's own, the seed and where
# it came from (--seed, an inherited HEADLAB_COURSE_SEED, or none), the handout commit and the
# SHA-256 of `git diff handout -- framework`; a foreign --tests runner is flagged; bad seeds are
# refused, by the CLI and by the task tests themselves.
set -u
hl=$1
own_tests=$2
test_label="course grade provenance"
if ! command -v git > /dev/null; then
  echo "$test_label: SKIP: git is not installed (the handout and diff checks need it)"
  exit 77
fi
work=$(mktemp -d)
grader=
trap '[ -z "$grader" ] || kill "$grader" 2> /dev/null; rm -rf "$work"' EXIT
source "$(dirname "$0")/expect.sh"
json() {  # json FILE PYTHON-EXPRESSION-ON-r
  python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print($2)" "$1"
}

# 1. This build's own tests, default seed: not foreign, the binary's hash.
expect 0 "default seed" env -u HEADLAB_COURSE_SEED "$hl" course grade --out "$work/own.json"
[ "$(json "$work/own.json" 'r["ran"]["tests"]["path"]')" = "$(readlink -f "$own_tests")" ] || fail "the tests' path"
[ "$(json "$work/own.json" 'r["ran"]["tests"]["sha256"]')" = "$(sha256sum "$own_tests" | cut -d' ' -f1)" ] ||
  fail "the tests' SHA-256 is not sha256sum's"
[ "$(json "$work/own.json" 'r["ran"]["tests"]["foreign"]')" = False ] || fail "this build's own tests flagged as foreign"
[ "$(json "$work/own.json" 'r["seed"], r["ran"]["seed_source"]')" = "None default" ] || fail "the default seed"

# 2. An inherited HEADLAB_COURSE_SEED is used and reported; a bad one is refused (exit 2, named).
expect 0 "seed 7 \\(HEADLAB_COURSE_SEED\\)" env HEADLAB_COURSE_SEED=7 "$hl" course status
expect 2 "HEADLAB_COURSE_SEED must be a whole number.*'abc'" env HEADLAB_COURSE_SEED=abc "$hl" course status
expect 2 "HEADLAB_COURSE_SEED must be a whole number" env HEADLAB_COURSE_SEED=-1 "$hl" course grade --out "$work/x.json"
[ ! -e "$work/x.json" ] || fail "a report was written for a refused seed"
# The tests refuse it too, instead of reading 'abc' as 0.
expect 1 "HEADLAB_COURSE_SEED must be a whole number from 0 to 10\\^12, got 'abc'" \
  env HEADLAB_COURSE_SEED=abc "$own_tests" "-tc=task 2.1:*"

# 3. A student copy: sources with a handout tag, a change under framework/, and a fake runner that
#    prints a passing doctest summary in its build: foreign, flagged, with the handout and the diff.
src=$work/copy
mkdir -p "$src/framework" "$src/build/tests"
printf 'int x = 1;\n' > "$src/framework/a.cpp"
git -C "$src" init -q && git -C "$src" add -A &&
  git -C "$src" -c user.name=t -c user.email=t@t commit -qm handout && git -C "$src" tag handout || fail "git setup"
printf 'int x = 2;\n' > "$src/framework/a.cpp"
printf 'CMAKE_HOME_DIRECTORY:INTERNAL=%s\n' "$src" > "$src/build/CMakeCache.txt"
fake=$src/build/tests/headlab_tests
printf '#!/bin/sh\necho "[doctest] test cases: 1 | 1 passed | 0 failed | 0 skipped"\n' > "$fake"
chmod +x "$fake"
expect 0 "WARNING: --tests .* is not this build's test binary.*NOT this build's test binary" \
  "$hl" course grade --seed 5 --tests "$fake" --out "$work/fake.json"
[ "$(json "$work/fake.json" 'r["ran"]["tests"]["foreign"]')" = True ] || fail "a foreign runner not flagged"
[ "$(json "$work/fake.json" 'r["seed"], r["ran"]["seed_source"]')" = "5 --seed" ] || fail "--seed not recorded"
[ "$(json "$work/fake.json" 'r["ran"]["handout_commit"]')" = "$(git -C "$src" rev-parse handout)" ] ||
  fail "the handout commit"
[ "$(json "$work/fake.json" 'r["ran"]["diff_sha256"]')" = "$(git -C "$src" diff handout -- framework | sha256sum | cut -d' ' -f1)" ] ||
  fail "the diff's SHA-256"
# Without a handout tag: said in the note, nothing invented.
git -C "$src" tag -d handout > /dev/null
expect 0 "" "$hl" course grade --tests "$fake" --out "$work/notag.json"
[ "$(json "$work/notag.json" 'r["ran"]["handout_commit"], r["ran"]["diff_sha256"]')" = "None None" ] ||
  fail "a handout or diff without a tag"
json "$work/notag.json" 'r["ran"]["note"]' | grep -q "no \`handout\` tag" || fail "the note does not say the tag is missing"
# 4. One runner, three behaviours by task: 0.1 prints 40 MB and then fails; 0.2 hangs; the rest pass.
cat > "$fake" <<SH
#!/bin/sh
touch "$work/ran"
case "\$1" in
  -ltc) echo "[doctest] unskipped test cases passing the current filters: 2" ;;
  "-tc=task 0.1:*") head -c 40000000 /dev/zero | tr '\\0' x; echo
                    echo "TEST CASE:  task 0.1: the last words"; echo "ERROR: boom"
                    echo "[doctest] test cases: 1 | 0 passed | 1 failed | 0 skipped"; exit 1 ;;
  "-tc=task 0.2:*") echo \$\$ > "$work/hang.pid"; exec sleep 60 ;;
  *) echo "[doctest] test cases: 1 | 1 passed | 0 failed | 0 skipped" ;;
esac
SH
chmod +x "$fake"
# A task past --task-timeout is stopped and fails; the long output is read to its end (its summary
# and last failure kept) with bounded memory.
start=$(date +%s)
expect 0 "" "$hl" course grade --tests "$fake" --task-timeout 2 --out "$work/bounded.json"
[ $(( $(date +%s) - start )) -lt 30 ] || fail "--task-timeout 2 did not stop the hanging task"
json "$work/bounded.json" '[t for t in r["tasks"] if t["task"] == "0.2"][0]["failures"][0]["message"]' |
  grep -q "stopped after 2 s" || fail "the hanging task is not reported as stopped after 2 s"
[ "$(json "$work/bounded.json" '[t for t in r["tasks"] if t["task"] == "0.1"][0]["failures"][0]["case"]')" = \
  "task 0.1: the last words" ] || fail "the failure at the end of 40 MB of output was not read"
# Without --task-timeout a task may take --case-timeout seconds per case it has (the fake lists 2).
expect 0 "" "$hl" course grade --tests "$fake" --case-timeout 1 --out "$work/scaled.json"
json "$work/scaled.json" '[t for t in r["tasks"] if t["task"] == "0.2"][0]["failures"][0]["message"]' |
  grep -q "stopped after 2 s (--case-timeout 1 s x 2 cases)" || fail "the time limit does not scale with the cases"
# An --out that cannot be written is refused before any test runs.
rm -f "$work/ran"
expect 2 "--out: '.*' exists and is a directory" "$hl" course grade --tests "$fake" --out "$work"
expect 2 "--out .*: its directory does not exist" "$hl" course grade --tests "$fake" --out "$work/no/such.json"
[ ! -e "$work/ran" ] || fail "the tests ran before --out was refused"
# SIGTERM while a test runs: forwarded to the test's process group, grading stops, no report.
rm -f "$work/hang.pid" "$work/term.json"
"$hl" course grade --tests "$fake" --out "$work/term.json" > "$work/term.log" 2>&1 &
grader=$!
for _ in $(seq 100); do [ -s "$work/hang.pid" ] && break; sleep 0.1; done
[ -s "$work/hang.pid" ] || fail "the hanging task never started"
kill -TERM "$grader"
wait "$grader"
status=$?
grader=
[ "$status" -eq 143 ] || fail "course grade exited $status after SIGTERM, expected 143"
sleep 0.2
if kill -0 "$(cat "$work/hang.pid")" 2> /dev/null; then fail "the test's process outlived SIGTERM to course grade"; fi
[ ! -e "$work/term.json" ] || fail "a report was written after SIGTERM"
grep -q "stopped by signal 15" "$work/term.log" || fail "no message after SIGTERM"
echo "$test_label: ok"
