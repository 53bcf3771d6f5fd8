"""A SIGINT that reaches a sweep's runs while they are still starting is an interruption, not a failure.

    python3 ablate_sigint_while_starting.py HEADLAB OUT_DIR

Starts `headlab ablate` with two runs at a time in its own process group and, as soon as it prints
that the second run started, sends SIGINT to the group, as Ctrl-C in a terminal does: that child is
then still loading (before `train` sets its handlers), so the signal ends it by default. The sweep
must exit 130 without a FAILED line, and the same command again must finish both runs.
"""
import os
import shutil
import signal
import subprocess
import sys

headlab, out = sys.argv[1], sys.argv[2]
shutil.rmtree(out, ignore_errors=True)
command = [headlab, "ablate", "--out", out, "--grid", "heads=1,2", "-j", "2", "--",
           "--steps", "100000", "--eval-every", "100000", "--time-budget", "2", "--d-model", "16",
           "--ff", "32", "--layers", "1", "--eval-sequences", "20"]
sweep = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
lines = []
for raw in sweep.stdout:
    line = raw.decode()
    lines.append(line)
    if line.startswith("start  heads=2"):
        os.killpg(sweep.pid, signal.SIGINT)
        break
lines += [raw.decode() for raw in sweep.stdout]
status = sweep.wait()
print("".join(lines), end="")
print("first sweep: exit %d" % status)
if status != 130:
    sys.exit("expected exit 130 after SIGINT")
if any("FAILED" in line for line in lines):
    sys.exit("a run stopped by the passed-on SIGINT was reported as FAILED")
again = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
print(again.stdout.decode(), end="")
if again.returncode != 0 or "All 2 runs finished" not in again.stdout.decode():
    sys.exit("the rerun did not finish both runs (exit %d)" % again.returncode)
print("STOPPED WHILE STARTING, THEN FINISHED")
