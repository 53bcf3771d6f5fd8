#!/usr/bin/env python3
"""Checks datasets/grammar-de-en (tests/CMakeLists.txt: data.grammar_corpus).

    grammar_corpus_test.py REPO

1. The builder is deterministic: two builds give the same bytes, and they equal the committed files.
2. No German sentence is in two splits.
3. Every alignment link is within both sides' tokens (headlab's tokenizer: lower-case, whitespace
   split, each punctuation character its own token), and every token of both sides is linked except
   the German comma and the English "do"/"does" of questions and negations.
Prints one line per problem and exits 1, or "grammar corpus: ... all checks pass".
"""
import os
import re
import subprocess
import sys
import tempfile

SPLITS = ["train", "valid", "test", "gen_long", "gen_combo"]
UNLINKED = {("de", ","), ("en", "do"), ("en", "does")}


def tokens(text):
    return re.findall(r"\w+|[^\w\s]", text.lower())


def main():
    repo = sys.argv[1]
    builder = os.path.join(repo, "datasets", "grammar-de-en", "build_grammar.py")
    committed = os.path.join(repo, "datasets", "grammar-de-en")
    problems = []
    with tempfile.TemporaryDirectory() as a, tempfile.TemporaryDirectory() as b:
        for out in (a, b):
            subprocess.run([sys.executable, builder, "--out", out], check=True, capture_output=True)
        for name in SPLITS:
            first = open(os.path.join(a, name + ".tsv"), "rb").read()
            if first != open(os.path.join(b, name + ".tsv"), "rb").read():
                problems.append(f"{name}.tsv: two builds differ")
            if first != open(os.path.join(committed, name + ".tsv"), "rb").read():
                problems.append(f"{name}.tsv: the committed file differs from a fresh build")
    where = {}
    links = 0
    for name in SPLITS:
        for number, line in enumerate(open(os.path.join(committed, name + ".tsv"), encoding="utf-8"), 1):
            german, english, alignment = line.rstrip("\n").split("\t")
            if german in where:
                problems.append(f"{name}.tsv:{number}: also in {where[german]}")
            where[german] = f"{name}.tsv:{number}"
            de, en = tokens(german), tokens(english)
            linked_de, linked_en = set(), set()
            for link in alignment.split():
                i, j = (int(x) for x in link.split("-"))
                links += 1
                if i >= len(de) or j >= len(en):
                    problems.append(f"{name}.tsv:{number}: link {link} outside {len(de)} / {len(en)} tokens")
                linked_de.add(i)
                linked_en.add(j)
            for side, toks, linked in (("de", de, linked_de), ("en", en, linked_en)):
                for k, t in enumerate(toks):
                    if k not in linked and (side, t) not in UNLINKED:
                        problems.append(f"{name}.tsv:{number}: {side} token {k} '{t}' has no link")
    for p in problems[:20]:
        print(p)
    if problems:
        print(f"{len(problems)} problems")
        return 1
    print(f"grammar corpus: {len(where)} distinct German sentences in {len(SPLITS)} splits, {links} links; "
          "deterministic, committed = built, no overlap, links in range: all checks pass")
    return 0


if __name__ == "__main__":
    sys.exit(main())
