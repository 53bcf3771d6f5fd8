#!/usr/bin/env python3
"""Study 2's baseline: a count bigram of the English side, which never reads the German.

The translation model's validation loss is the mean -ln p(y_t | y_<t, source) over every target
token of the validation pairs, </s> included. A model that learns nothing from the source can still
learn English: this script gives the loss of the simplest such model, a bigram of the target ids,
p(y_t | y_{t-1}) with add-0.1 smoothing over the ids a model can predict (every id but <pad> and
<s>), counted on the training pairs' targets, with y_0 = <s> (the smoothing of study 14's
character bigram). The ids are the trainer's own: it trains the recipe's model for one step to get
its vocabulary (words of min frequency 2 from the training file, independent of the seed and the
cell), then reads every target through `headlab tokenize --ids`. It prints the bigram's and a
unigram's loss and writes baseline.csv next to this script. From the repository root; stdlib only.
--check writes nothing and exits 1 when baseline.csv, or the recipe's `baseline =` line (the
chart's dashed line), differs from a fresh count (ctest docs.study_head_count_baseline).

    python3 docs/studies/head-count/baseline.py [--headlab build/release/apps/headlab] [--check]
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

HERE = os.path.dirname(os.path.abspath(__file__))
RECIPE = os.path.join(HERE, "recipe.ini")
PAD, BOS, EOS = 0, 1, 2  # Vocabulary's specials (<unk> is 3: a word like any other here)


def recipe_files():
    """The train and valid TSV files named in the recipe's [train] section."""
    files = {}
    with open(RECIPE, encoding="utf-8") as f:
        for line in f:
            key, _, value = line.strip().partition("=")
            if key in ("train", "valid"):
                files[key] = value.strip().strip('"')
    return files["train"], files["valid"]


def target_ids(headlab, checkpoint, tsv, work):
    """[[ids of each pair's target], ...] as the checkpoint's target vocabulary reads them."""
    sentences = os.path.join(work, os.path.basename(tsv) + ".en")
    with open(tsv, encoding="utf-8") as f, open(sentences, "w", encoding="utf-8") as out:
        for line in f:
            out.write(line.rstrip("\n").split("\t")[1] + "\n")
    text = subprocess.run([headlab, "tokenize", "--checkpoint", checkpoint, "--side", "target", "--ids",
                           "--file", sentences], check=True, capture_output=True, text=True).stdout
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
    ap.add_argument("--headlab", default="build/release/apps/headlab")
    ap.add_argument("--check", action="store_true", help="compare with baseline.csv and the recipe; write nothing")
    a = ap.parse_args()
    train_tsv, valid_tsv = recipe_files()
    with tempfile.TemporaryDirectory() as work:
        run = os.path.join(work, "run")
        subprocess.run([a.headlab, "train", "--config", RECIPE, "--steps", "1", "--run-dir", run, "--threads", "1"],
                       check=True, capture_output=True)
        with open(os.path.join(run, "summary.json"), encoding="utf-8") as f:
            vocab = int(json.load(f)["vocab_target"])
        checkpoint = os.path.join(run, "checkpoint.safetensors")
        train = target_ids(a.headlab, checkpoint, train_tsv, work)
        valid = target_ids(a.headlab, checkpoint, valid_tsv, work)
    bigram, unigram, tokens = bigram_and_unigram_loss(train, valid, vocab)
    rows = [{"baseline": "bigram", "valid_loss": f"{bigram:.4f}", "tokens": tokens, "vocab_target": vocab,
             "smoothing": "add-0.1"},
            {"baseline": "unigram", "valid_loss": f"{unigram:.4f}", "tokens": tokens, "vocab_target": vocab,
             "smoothing": "add-0.1"}]
    out = io.StringIO(newline="")
    w = csv.DictWriter(out, fieldnames=list(rows[0]), lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    path = os.path.join(HERE, "baseline.csv")
    if a.check:
        with open(path, encoding="utf-8") as f:
            same_csv = f.read() == out.getvalue()
        line = f"baseline = {bigram:.3f} "
        with open(RECIPE, encoding="utf-8") as f:
            same_recipe = any(l.startswith(line) for l in f)
        if not (same_csv and same_recipe):
            print(f"baseline: a fresh count gives bigram {bigram:.4f}, unigram {unigram:.4f}; "
                  + ("" if same_csv else "baseline.csv differs; ")
                  + ("" if same_recipe else f"the recipe has no line starting '{line}'"))
            sys.exit(1)
        print(f"baseline: bigram {bigram:.4f} agrees with baseline.csv and the recipe")
        return
    with open(path, "w", encoding="utf-8", newline="") as f:
        f.write(out.getvalue())
    print(f"English-side count bigram: {bigram:.4f} nats/token, unigram {unigram:.4f}, over {tokens} validation "
          f"tokens (target vocabulary {vocab}); wrote baseline.csv")


if __name__ == "__main__":
    main()
