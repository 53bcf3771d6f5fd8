#!/bin/sh
# tests/course/tutorial_blank.sh TUTORIAL: a tutorial that reaches a blank task (here 2.1, blanked
# with HEADLAB_BLANK_TASKS as the student copy blanks it) stops with exit code 3 and one message
# naming the region and its page, never "terminate called" (course/course.cpp).
out=$(HEADLAB_BLANK_TASKS=2.1 "$1" 2>&1)
rc=$?
if [ "$rc" -ne 3 ]; then
  echo "FAIL: exit $rc, expected 3"; printf '%s\n' "$out" | tail -n 5; exit 1
fi
want="TASK 2.1 (scaled dot-product attention) is not implemented yet: fill in the region marked TASK 2.1 in framework/attention/sdpa.cpp (see course/tasks/2.1.md)"
if ! printf '%s\n' "$out" | grep -qF "$want"; then
  echo "FAIL: the message is not there: $want"; printf '%s\n' "$out" | tail -n 5; exit 1
fi
if printf '%s\n' "$out" | grep -q "terminate called"; then
  echo "FAIL: terminate called"; exit 1
fi
echo "ok: exit 3, $want"
