"""What every study's measure.py shares (stdlib only): the CPU's name, writing runs.csv, the
held-out text of the lm studies, and the pinned options of the headlab tools they measure with
(PINNED_TOOL_OPTIONS, tool_command)."""
import csv
import os
import subprocess

LM_TEXT = "datasets/kjv/kjv.txt"


# Every option of every headlab tool a study script measures with that can change what is measured,
# pinned at the tool's default of the day it was pinned (2026-12-07, from `headlab TOOL --help`), as
# a recipe pins every option of `headlab train`: a default changed later cannot change a study's
# numbers when it is measured again. tool_command puts each one on the command line; an option the
# study gives itself keeps the study's value. A value is a string (given as --option VALUE), True or
# False (a flag: given when True), or None: left off unless the study gives it, because leaving it
# off is the behaviour the study measures (--window/--sinks: the checkpoint's own attention; --data:
# the run's own --valid file, or given by the study) and no value says the same.
# tests/docs/check_tool_pins.py (ctest docs.study_tool_options_pinned) fails when a tool has an option
# that is in neither this table nor NOT_PINNED_OPTIONS (a new option must be pinned here), when a
# pinned option is gone, or when a study script calls headlab without tool_command.
PINNED_GLOBAL_OPTIONS = {  # before the tool's name: `headlab --threads 1 heads ...`
    "--threads": "1",  # one thread: the same seed and count give the same numbers (HEADLAB_THREADS=1 too)
    "--flush-denormals": False,
}
PINNED_TOOL_OPTIONS = {
    "heads": {"--probe-sequences": "64", "--block": "0", "--text": None, "--seed": "1", "--sink-queries": "all",
              "--window": None, "--sinks": None},
    "patch": {"--rows": "64", "--seed": "1", "--slot": "0", "--data": None, "--noise": False},
    "attribute": {"--rows": "64", "--seed": "1", "--slot": "0", "--data": None},
    "composition": {},  # reads the weights alone
    "prune": {"--step": "0.1", "--seed": "1", "--random-orders": "5", "--sequences": "0", "--data": None,
              "--importance-split": False, "--single-heads": False},
    "eval": {"--sequences": "1000", "--data": None, "--beam": "1", "--length-penalty": None, "--window": None,
             "--sinks": None},
    "align": {"--data": None, "--count": "0", "--query-step": "predict"},
    "translate": {"--beam": "4", "--length-penalty": "0.6", "--strict": False, "--extra-tokens": "10"},
    "bleu": {"--tokenize": False},
    "stats": {"--d-model": "512", "--heads": "8", "--kv-heads": "0", "--head-dim": "0", "--gate": "none",
              "--no-bias": False, "--window": "0", "--sinks": "0", "--rope": False, "--latent-dim": "0",
              "--rope-dim": "0", "--seq-len": "128", "--layers": "1"},
    "tokenize": {"--side": "source"},  # translation_baseline.py; the default is not in --help (commands.hpp)
}
# Options the tool refuses for a checkpoint of another task (eval: "--beam is not read for ..."): given
# only for these tasks, so tool_command needs task= for these tools.
TASK_OPTIONS = {
    "eval": {"--sequences": ("copy", "induction", "recall"), "--beam": ("translate",),
             "--length-penalty": ("translate",)},
}
# Options that exclude one another: the study's --text drops the pinned --block.
EXCLUSIVE_OPTIONS = {"heads": [("--block", "--text")]}
# Options that cannot change a number measured, so not pinned: {tool or "*" (every tool): {option: why}}.
NOT_PINNED_OPTIONS = {
    "*": {"--help": "prints the help", "--checkpoint": "the model measured: the study's input",
          "--run-dir": "the model measured: the study's input", "--out": "where the files go",
          "--overwrite": "replaces an earlier run's files", "--max-memory": "refuses a probe, never changes one",
          "--dump-json": "an extra output file", "--json": "the form of the output, not its numbers"},
    "heads": {"--input": "the input of attention_maps.svg only, not of heads.csv's scores"},
    "bleu": {"--ref": "an input file the study names", "--hyp": "an input file the study names"},
    "tokenize": {"--merges": "an input file (the study gives --checkpoint)", "--file": "the input sentences",
                 "--ids": "ids or pieces printed: the form of the output"},
}


def tool_command(headlab, tool, *args, task=None):
    """The command of one measurement with every option explicit: HEADLAB, the PINNED_GLOBAL_OPTIONS,
    TOOL, each option of PINNED_TOOL_OPTIONS[TOOL] that ARGS do not give, then ARGS: the study's own
    arguments ("--checkpoint", path, "--probe-sequences", "256", ...), whose values win; task (the
    checkpoint's task: "induction", "lm", ...) is needed for a tool of TASK_OPTIONS."""
    if tool not in PINNED_TOOL_OPTIONS:
        raise ValueError(f"tool_command: headlab {tool} has no pinned options (PINNED_TOOL_OPTIONS)")
    args = [str(a) for a in args]
    given = {a.split("=", 1)[0] for a in args if a.startswith("--")}
    for pair in EXCLUSIVE_OPTIONS.get(tool, []):
        if given & set(pair):
            given |= set(pair)
    by_task = TASK_OPTIONS.get(tool, {})
    if by_task and task is None:
        raise ValueError(f"tool_command: headlab {tool}'s options depend on the checkpoint's task: give task=")

    def spelled(options):
        out = []
        for option, value in options.items():
            if option in given or value is None or value is False:
                continue
            if option in by_task and task not in by_task[option]:
                continue
            out.extend([option] if value is True else [option, value])
        return out

    return [headlab, *spelled(PINNED_GLOBAL_OPTIONS), tool, *spelled(PINNED_TOOL_OPTIONS[tool]), *args]


def split_held_out(text):
    """(train, valid) as the trainer cuts a text: the last floor(0.1 x characters) characters held out."""
    cut = len(text) - len(text) // 10
    return text[:cut], text[cut:]


def write_held_out(runs, text_path=LM_TEXT):
    """RUNS/valid.txt: the held-out tenth of text_path as the trainer cuts it; returns its path."""
    with open(text_path, encoding="utf-8") as f:
        _, valid = split_held_out(f.read())
    path = os.path.join(runs, "valid.txt")
    with open(path, "w", encoding="utf-8") as f:
        f.write(valid)
    return path


def cpu_model():
    """The first "model name" of /proc/cpuinfo ("AMD EPYC"), or "unknown"."""
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return "unknown"


def write_runs_csv(rows, path):
    """rows (dicts with the same keys, in column order) as a CSV file with a header."""
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]), lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    print(f"wrote {path}: {len(rows)} runs")


def run_seeds(runs):
    """The seeds of the runs in RUNS/runs/<cell>-seed<k>, sorted."""
    return sorted({int(n.rsplit("-seed", 1)[1]) for n in os.listdir(os.path.join(runs, "runs"))})


def heads_rows(headlab, checkpoint, out, flags=()):
    """`headlab heads --checkpoint CHECKPOINT --out OUT --overwrite FLAGS...` (its options pinned:
    tool_command) on one thread; its heads.csv rows."""
    subprocess.run(tool_command(headlab, "heads", "--checkpoint", checkpoint, "--out", out, "--overwrite", *flags),
                   check=True, capture_output=True, env=dict(os.environ, HEADLAB_THREADS="1"))
    with open(os.path.join(out, "heads.csv")) as f:
        return list(csv.DictReader(f))


def measure_args(default_out, extra=()):
    """The command line every measure.py takes: RUNS [--headlab H] [--out DIR], plus a study's own
    inputs (extra: (name, argparse keywords) pairs, e.g. ("recall_runs", {"help": "study 5's runs"}));
    returns (args, commit), commit being the binary's that trained (RUNS/commit.txt)."""
    import argparse
    ap = argparse.ArgumentParser()
    ap.add_argument("runs")
    for name, keywords in extra:
        ap.add_argument(name, **keywords)
    ap.add_argument("--headlab", default="build/release/apps/headlab")
    ap.add_argument("--out", default=default_out)
    a = ap.parse_args()
    with open(os.path.join(a.runs, "commit.txt")) as f:
        return a, f.read().strip()


def number(text):
    """A CSV field as a float; "" or "nan" (an ungated model's gate) as NaN."""
    return float(text) if text not in ("", "nan") else float("nan")
