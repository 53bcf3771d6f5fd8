#!/usr/bin/python3
"""Writes tests/fixtures/chrf/cases.json: NLTK corpus chrF reference values for headlab::corpus_chrf.

Run with Debian's NLTK (python3-nltk, 3.8), from anywhere:

    /usr/bin/python3 scripts/make_chrf_fixtures.py

The output is deterministic (fixed seeds). The file:

  cases.json   {"generator", "nltk_version", "cases": [case, ...]}
               case = {
                 "name":        unique, e.g. "random_corpus_seed2000",
                 "references":  [[token, ...] per sentence]   (one reference per sentence),
                 "hypotheses":  [[token, ...] per sentence],
                 "chrf":        nltk.translate.chrf_score.corpus_chrf(references, hypotheses) with its
                                defaults (min_len=1, max_len=6, beta=3.0, ignore_whitespace=True),
                 "fscores":     [F_1..F_6], each order's F from nltk's chrf_precision_recall_fscore_support,
                                summed over the sentences as corpus_chrf sums them, divided by the
                                number of sentences,
                 "sentences", "hypothesis_characters", "reference_characters"
                                (code points after nltk's _preprocess, summed over the sentences)
               }
               Floats are written with repr (exact round trip).

It also prints the chrF line `headlab bleu` must print for tests/fixtures/bleu/ref.txt and hyp.txt
(written by scripts/make_bleu_fixtures.py; tests/CMakeLists.txt checks it).

tests/data/test_chrf.cpp replays cases.json.
"""

import json
import math
import os
import random

import nltk
from nltk.translate.chrf_score import _preprocess, chrf_precision_recall_fscore_support, corpus_chrf

from make_bleu_fixtures import perturb, split  # this script's folder is on sys.path when it runs

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "tests", "fixtures")
OUT_DIR = os.path.join(FIXTURES, "chrf")
BLEU_DIR = os.path.join(FIXTURES, "bleu")

MIN_LEN, MAX_LEN, BETA = 1, 6, 3.0  # corpus_chrf's defaults, spelled out

WORDS = ["the", "a", "cat", "dog", "sat", "on", "mat", "and", "ran", "to", "house", "big", "small", "red",
         "green", "is", "was", "über", "straße", "café", "naïve", "été", "grüß", "x", "ß", "'", ","]


def misspell(rng, word):
    """The word with one character changed, dropped or doubled (a partial match at the character level)."""
    if len(word) < 2:
        return word + word
    i = rng.randrange(len(word))
    r = rng.random()
    if r < 0.4:
        return word[:i] + rng.choice("aeiouüéß") + word[i + 1:]
    if r < 0.7:
        return word[:i] + word[i + 1:]
    return word[:i] + word[i] + word[i:]


def random_corpus(seed, sentences, min_len, max_len):
    """References drawn from WORDS; hypotheses from make_bleu_fixtures.perturb (words kept, substituted,
    dropped or doubled), then about one word in five misspelt."""
    rng = random.Random(seed)
    refs = [[rng.choice(WORDS) for _ in range(rng.randint(min_len, max_len))] for _ in range(sentences)]
    hyps = [[misspell(rng, w) if rng.random() < 0.2 else w for w in perturb(rng, ref)] for ref in refs]
    return refs, hyps


def make_case(name, refs, hyps):
    assert len(refs) == len(hyps)
    chrf = corpus_chrf(refs, hyps, min_len=MIN_LEN, max_len=MAX_LEN, beta=BETA, ignore_whitespace=True)
    fscores = {n: [] for n in range(MIN_LEN, MAX_LEN + 1)}
    hyp_chars, ref_chars = 0, 0
    for ref, hyp in zip(refs, hyps):
        ref_s, hyp_s = _preprocess(ref, True), _preprocess(hyp, True)
        ref_chars += len(ref_s)
        hyp_chars += len(hyp_s)
        for n in fscores:
            fscores[n].append(chrf_precision_recall_fscore_support(ref_s, hyp_s, n, beta=BETA)[2])
    return {
        "name": name,
        "references": refs,
        "hypotheses": hyps,
        "chrf": float(chrf),
        "fscores": [sum(f) / len(refs) for f in fscores.values()],
        "sentences": len(refs),
        "hypothesis_characters": hyp_chars,
        "reference_characters": ref_chars,
    }


def cases():
    out = []
    for i, (sentences, lo, hi) in enumerate([(5, 3, 10), (12, 5, 18), (30, 1, 12), (8, 10, 25), (3, 1, 3)]):
        refs, hyps = random_corpus(2000 + i, sentences, lo, hi)
        out.append(make_case(f"random_corpus_seed{2000 + i}", refs, hyps))

    s = split(["the cat sat on the mat", "a dog ran to the big red house"])
    out.append(make_case("identical", s, [list(x) for x in s]))
    out.append(make_case("disjoint", split(["aaa bbb", "ccc"]), split(["xyz", "qqq rrr"])))
    out.append(make_case("empty_hypothesis", split(["the cat sat on the mat"]), [[]]))
    out.append(make_case("empty_hypothesis_lines_in_corpus",
                         split(["the cat sat on the mat", "a dog ran to the big red house", "yes indeed"]),
                         [[], "a dog ran to the big house".split(), []]))
    out.append(make_case("empty_reference", [[]], split(["the cat"])))
    out.append(make_case("both_empty", [[]], [[]]))
    out.append(make_case("one_character_words", split(["a b c d e f g", "x y z"]), split(["a b d c e f", "x z y"])))
    out.append(make_case("one_character_sentence", split(["a"]), split(["a"])))
    out.append(make_case("shorter_than_6_characters", split(["ab", "cat", "dogs", "the end"]),
                         split(["ab", "cut", "dogs", "the"])))
    out.append(make_case("tokens_joined_without_spaces", split(["the cat sat"]), [["thecatsat"]]))
    out.append(make_case("repeated_characters_clipping", split(["aa ab"]), split(["aaaaaaaa"])))
    out.append(make_case("hypothesis_longer", split(["the cat sat"]), split(["the big cat sat on the red mat"])))
    out.append(make_case("case_sensitive", split(["The Cat Sat On The Mat"]), split(["the cat sat on the mat"])))
    out.append(make_case("non_ascii_words",
                         split(["über die straße zum café", "grüß gott , ß ü é", "naïve élève"]),
                         split(["uber die strasse zum cafe", "grüß gott , ß ü é", "naive élève"])))
    out.append(make_case("non_ascii_one_character_words", split(["ü ß é", "ü"]), split(["ü é ß", "ü"])))
    out.append(make_case("combining_accent_is_not_precomposed", [["café"]], [["cafe\u0301"]]))
    out.append(make_case("four_byte_characters", [["😀😀", "𝔘"]], [["😀", "𝔘𝔘"]]))
    # NLTK drops every character \s matches, also inside a token; U+200B (zero width space) is not one.
    out.append(make_case("unicode_whitespace_inside_tokens",
                         [["a\u00a0b", "c\u3000d", "e\tf", "g\u2009h"], ["x\u200by"]],
                         [["ab", "cd", "ef", "gh"], ["xy"]]))
    return out


def main():
    os.makedirs(OUT_DIR, exist_ok=True)
    doc = {"generator": "scripts/make_chrf_fixtures.py", "nltk_version": nltk.__version__, "cases": cases()}
    names = [c["name"] for c in doc["cases"]]
    assert len(names) == len(set(names))
    with open(os.path.join(OUT_DIR, "cases.json"), "w", encoding="utf-8") as f:
        json.dump(doc, f, ensure_ascii=False, indent=1)
        f.write("\n")

    # The CLI corpus: the committed BLEU fixture files, split on whitespace as `headlab bleu` does.
    lines = {}
    for name in ["ref.txt", "hyp.txt"]:
        with open(os.path.join(BLEU_DIR, name), encoding="utf-8") as f:
            lines[name] = f.read().splitlines()
    cli = make_case("cli", split(lines["ref.txt"]), split(lines["hyp.txt"]))
    assert not math.isnan(cli["chrf"])
    print(f"{len(doc['cases'])} cases -> {os.path.normpath(OUT_DIR)}/cases.json")
    print(f"headlab bleu --ref ref.txt --hyp hyp.txt (tests/fixtures/bleu) must print as its second line:\n"
          f"chrF = {100 * cli['chrf']:.2f}  (character 1-6 grams, beta 3, as NLTK corpus_chrf)")


if __name__ == "__main__":
    main()
