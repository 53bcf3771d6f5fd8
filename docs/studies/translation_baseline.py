#!/usr/bin/env python3
"""A translation study's baseline: a count bigram of the English side, which never reads the German.

The translation model's validation loss is the mean -ln p(y_t | y_<t, source) over every target
token of the validation pairs, </s> included. A model that learns nothing from the source can still
learn English: this script gives the loss of the simplest such model, a bigram of the target ids,
p(y_t | y_{t-1}) with add-0.1 smoothing over the ids a model can predict (every id but <pad> and
<s>), counted on the targets of the training pairs the trainer keeps (those within --max-len),
with y_0 = <s> (the smoothing of study 14's character bigram). The ids are the trainer's own: it
trains the recipe's model for one step to get its vocabularies (words or BPE pieces from the
training file, independent of the seed and the cell), then reads every sentence through `headlab
tokenize --ids`. It prints the bigram's and a unigram's loss and writes baseline.csv next to the
recipe. From the repository root; stdlib only. --check writes nothing and exits 1 when
baseline.csv, or a `baseline = ` line of the recipe naming a bigram (the chart's dashed line, where
the chart is of the validation loss), differs from a fresh count (ctest docs.study_*_baseline).
`headlab tokenize` refuses a sentence that cannot fit --max-len, so a recipe whose training file has
pairs the trainer skips stops here with headlab's message (both studies' corpora have none).

    python3 docs/studies/translation_baseline.py docs/studies/head-count/recipe.ini [--headlab PATH] [--check]
"""
import argparse
import csv
import io
import json
import math
import os
import subprocess
import sys
import tempfile
from collections import Counter

from study_runs import tool_command  # this folder (the script's own, first on sys.path)

PAD, BOS, EOS = 0, 1, 2  # Vocabulary's specials (<unk> is 3: a word like any other here)


def recipe_train_options(recipe):
    """The recipe's [train] section as {key: value} (quotes taken off)."""
    options, section = {}, ""
    with open(recipe, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if line.startswith("["):
                section = line
            elif section == "[train]" and "=" in line:
                key, _, value = line.partition("=")
                options[key.strip()] = value.strip().strip('"')
    return options


def run(args):
    """args run to the end; on failure, headlab's own message and exit status 1."""
    try:
        done = subprocess.run(args, capture_output=True, text=True)
    except OSError as e:
        sys.exit(f"translation_baseline: cannot run {args[0]}: {e.strerror}")
    if done.returncode != 0:
        tool = next(a for a in args[1:] if a in ("train", "tokenize"))  # after the pinned global options
        sys.exit(f"translation_baseline: {args[0]} {tool} failed ({done.returncode}): {done.stderr.strip()}")
    return done.stdout


def side_ids(headlab, checkpoint, tsv, column, side, work):
    """[[ids of each pair's sentence in `column`], ...] as the checkpoint's `side` vocabulary reads them."""
    sentences = os.path.join(work, f"{os.path.basename(tsv)}.{side}")
    with open(tsv, encoding="utf-8") as f, open(sentences, "w", encoding="utf-8") as out:
        for line in f:
            out.write(line.rstrip("\n").split("\t")[column] + "\n")
    text = run(tool_command(headlab, "tokenize", "--checkpoint", checkpoint, "--side", side, "--ids", "--file", sentences))
    return [[int(t) for t in line.split()] for line in text.splitlines()]


def bigram_and_unigram_loss(train, valid, vocab, alpha=0.1):
    """Mean -ln p over valid's predicted tokens (each target's ids, then </s>): the add-alpha bigram
    p(b | a) and the add-alpha unigram p(b), counted on train; v = vocab - 2 outcomes."""
    pairs, firsts, unigrams = Counter(), Counter(), Counter()
    for ids in train:
        seq = [BOS] + ids + [EOS]
        pairs.update(zip(seq, seq[1:]))
        firsts.update(seq[:-1])
        unigrams.update(seq[1:])
    v = vocab - 2
    n_unigram = sum(unigrams.values())
    bigram = unigram = 0.0
    count = 0
    for ids in valid:
        seq = [BOS] + ids + [EOS]
        for a, b in zip(seq, seq[1:]):
            bigram -= math.log((pairs[(a, b)] + alpha) / (firsts[a] + alpha * v))
            unigram -= math.log((unigrams[b] + alpha) / (n_unigram + alpha * v))
            count += 1
    return bigram / count, unigram / count, count


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("recipe")
    ap.add_argument("--headlab", default="build/release/apps/headlab")
    ap.add_argument("--check", action="store_true", help="compare with baseline.csv and the recipe; write nothing")
    a = ap.parse_args()
    options = recipe_train_options(a.recipe)
    if options.get("task") != "translate" or not options.get("valid"):
        sys.exit(f"{a.recipe}: not a translate recipe with a valid file")
    max_len = int(options["max-len"])
    with tempfile.TemporaryDirectory() as work:
        run_dir = os.path.join(work, "run")
        # one step for the vocabularies (built from the training file alone); no test set, one sentence scored
        run([a.headlab, "train", "--config", a.recipe, "--steps", "1", "--run-dir", run_dir, "--threads", "1",
             "--test", "", "--eval-sentences", "1"])
        with open(os.path.join(run_dir, "summary.json"), encoding="utf-8") as f:
            vocab = int(json.load(f)["vocab_target"])
        checkpoint = os.path.join(run_dir, "checkpoint.safetensors")
        sources = side_ids(a.headlab, checkpoint, options["train"], 0, "source", work)
        targets = side_ids(a.headlab, checkpoint, options["train"], 1, "target", work)
        valid = side_ids(a.headlab, checkpoint, options["valid"], 1, "target", work)
    # the trainer keeps a pair whose source + </s> and <s> + target + </s> fit --max-len
    train = [t for s_, t in zip(sources, targets) if len(s_) + 1 <= max_len and len(t) + 2 <= max_len]
    bigram, unigram, tokens = bigram_and_unigram_loss(train, valid, vocab)
    rows = [{"baseline": name, "valid_loss": f"{loss:.4f}", "tokens": tokens, "vocab_target": vocab,
             "training_pairs": len(train), "smoothing": "add-0.1"} for name, loss in (("bigram", bigram), ("unigram", unigram))]
    out = io.StringIO(newline="")
    w = csv.DictWriter(out, fieldnames=list(rows[0]), lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    path = os.path.join(os.path.dirname(os.path.abspath(a.recipe)), "baseline.csv")
    if a.check:
        with open(path, encoding="utf-8") as f:
            same_csv = f.read() == out.getvalue()
        line = f"baseline = {bigram:.3f} "
        with open(a.recipe, encoding="utf-8") as f:
            drawn = [l for l in f if l.startswith("baseline =") and "bigram" in l]
        same_recipe = all(l.startswith(line) and f", {bigram:.3f} " in l for l in drawn)  # value and label
        if not (same_csv and same_recipe):
            print(f"baseline: a fresh count gives bigram {bigram:.4f}, unigram {unigram:.4f}; "
                  + ("" if same_csv else "baseline.csv differs; ")
                  + ("" if same_recipe else f"the recipe's bigram line does not start '{line}' "
                                            f"or its label does not say {bigram:.3f}"))
            sys.exit(1)
        print(f"baseline: bigram {bigram:.4f} agrees with baseline.csv and the recipe")
        return
    with open(path, "w", encoding="utf-8", newline="") as f:
        f.write(out.getvalue())
    print(f"English-side count bigram: {bigram:.4f} nats/token, unigram {unigram:.4f}, over {tokens} validation "
          f"tokens (target vocabulary {vocab}, {len(train)} training pairs); wrote {os.path.relpath(path)}")


if __name__ == "__main__":
    main()
