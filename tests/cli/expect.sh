# tests/cli/expect.sh: what the CLI test scripts share (sourced by ablate_cluster.sh and study.sh).
# The script sets $test_label ("study pipeline") and $work (a scratch directory) first.

# fail WHY...: prints "<label>: FAIL: WHY" (the ctest FAIL pattern) and exits 1.
fail() {
  echo "$test_label: FAIL: $*"
  exit 1
}
# expect STATUS PATTERN COMMAND...: COMMAND exits with STATUS and its output matches PATTERN (grep -E,
# on the whole output: .* spans lines).
expect() {
  local want=$1 pattern=$2 status
  shift 2
  "$@" > "$work/out.txt" 2>&1
  status=$?
  cat "$work/out.txt"
  [ "$status" -eq "$want" ] || fail "exit status $status, expected $want: $*"
  grep -Ezq -- "$pattern" "$work/out.txt" || fail "output does not match /$pattern/: $*"
}
