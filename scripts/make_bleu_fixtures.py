#!/usr/bin/python3
"""Writes tests/fixtures/bleu/: NLTK corpus BLEU-4 reference values for headlab::corpus_bleu.

Run with Debian's NLTK (python3-nltk, 3.8), from anywhere:

    /usr/bin/python3 scripts/make_bleu_fixtures.py

The output is deterministic (fixed seeds). Files:

  cases.json   {"generator", "nltk_version", "cases": [case, ...]}
               case = {
                 "name":         unique, e.g. "random_corpus_seed3",
                 "references":   [[token, ...] per sentence]   (one reference per sentence),
                 "hypotheses":   [[token, ...] per sentence],
                 "bleu":         nltk.translate.bleu_score.corpus_bleu(...) with its defaults,
                 "matches":      [m_1..m_4] clipped n-gram matches summed over the corpus,
                 "totals":       [t_1..t_4] the denominators, summed as corpus_bleu sums them,
                 "precisions":   [m_n / t_n],
                 "brevity_penalty", "hypothesis_length", "reference_length"
               }
               The per-n counts come from nltk's modified_precision, summed over the sentences
               exactly as corpus_bleu sums them; BP from nltk's brevity_penalty and
               closest_ref_length. Floats are written with repr (exact round trip).
  ref.txt, hyp.txt
               a small corpus for the `headlab bleu` CLI test (one tokenized sentence per line);
               the script prints the line the CLI must print (tests/CMakeLists.txt checks it);
               scripts/make_chrf_fixtures.py reads them for the CLI's chrF line.

tests/data/test_bleu.cpp replays cases.json.
"""

import json
import math
import os
import random
import warnings

import nltk
from nltk.translate.bleu_score import brevity_penalty, closest_ref_length, corpus_bleu, modified_precision

OUT_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "tests", "fixtures", "bleu")

WORDS = ["the", "a", "cat", "dog", "sat", "on", "mat", "and", "ran", "to", "house", "big", "small", "red",
         "green", "is", "was", "über", "café", "naïve", "'", ","]


def perturb(rng, reference):
    """A hypothesis with partial overlap: each word is kept, substituted, dropped or doubled."""
    hypothesis = []
    for word in reference:
        r = rng.random()
        if r < 0.65:
            hypothesis.append(word)
        elif r < 0.80:
            hypothesis.append(rng.choice(WORDS))
        elif r < 0.90:
            pass  # dropped
        else:
            hypothesis.extend([word, word])
    if rng.random() < 0.3:
        hypothesis.append(rng.choice(WORDS))
    return hypothesis


def random_corpus(seed, sentences, min_len, max_len):
    rng = random.Random(seed)
    refs = [[rng.choice(WORDS) for _ in range(rng.randint(min_len, max_len))] for _ in range(sentences)]
    hyps = [perturb(rng, ref) for ref in refs]
    return refs, hyps


def split(lines):
    return [line.split() for line in lines]


def make_case(name, refs, hyps):
    assert len(refs) == len(hyps)
    list_of_references = [[ref] for ref in refs]  # one reference per sentence
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # NLTK warns when a precision is 0
        bleu = corpus_bleu(list_of_references, hyps)
    matches, totals = [0] * 4, [0] * 4
    hyp_len, ref_len = 0, 0
    for references, hypothesis in zip(list_of_references, hyps):
        for n in range(1, 5):
            p = modified_precision(references, hypothesis, n)  # an unnormalised Fraction
            matches[n - 1] += p.numerator
            totals[n - 1] += p.denominator
        hyp_len += len(hypothesis)
        ref_len += closest_ref_length(references, len(hypothesis))
    return {
        "name": name,
        "references": refs,
        "hypotheses": hyps,
        "bleu": float(bleu),
        "matches": matches,
        "totals": totals,
        "precisions": [m / t for m, t in zip(matches, totals)],
        "brevity_penalty": float(brevity_penalty(ref_len, hyp_len)),
        "hypothesis_length": hyp_len,
        "reference_length": ref_len,
    }


def cases():
    out = []
    for seed, (sentences, lo, hi) in enumerate([(5, 4, 12), (12, 6, 20), (30, 3, 15), (8, 10, 25)]):
        refs, hyps = random_corpus(1000 + seed, sentences, lo, hi)
        out.append(make_case(f"random_corpus_seed{1000 + seed}", refs, hyps))

    s = split(["the cat sat on the mat", "a dog ran to the big red house"])
    out.append(make_case("perfect_match", s, [list(x) for x in s]))
    out.append(make_case("empty_hypothesis", split(["the cat sat on the mat"]), [[]]))
    out.append(make_case("one_empty_hypothesis_in_corpus",
                         split(["the cat sat on the mat", "a dog ran to the big red house"]),
                         [[], "a dog ran to the big house".split()]))
    out.append(make_case("no_unigram_match", split(["the cat sat on the mat"]), split(["a dog ran"])))
    out.append(make_case("no_4gram_match", split(["the cat sat on the mat today"]),
                         split(["the cat sat in the mat today"])))
    out.append(make_case("hypothesis_longer_bp_1", split(["the cat sat on the mat"]),
                         split(["the cat sat on the red mat today"])))
    out.append(make_case("hypothesis_shorter_bp_below_1", split(["the cat sat on the big red mat today"]),
                         split(["the cat sat on the mat"])))
    out.append(make_case("equal_length_bp_1", split(["the cat sat on the mat"]), split(["the cat sat on a mat"])))
    out.append(make_case("one_word_sentence", split(["cat"]), split(["cat"])))
    out.append(make_case("one_word_sentence_in_corpus",
                         split(["yes", "the cat sat on the mat", "a dog ran to the big red house"]),
                         split(["yes", "the cat sat on the mat", "a dog ran to the house"])))
    out.append(make_case("repeated_words_clipping", split(["the cat is on the mat"]),
                         split(["the the the the the the the"])))
    out.append(make_case("repeated_ngrams_clipping",
                         split(["the cat sat on the mat and the cat sat on the hat"]),
                         split(["the cat sat on the cat sat on the cat sat on the mat"])))
    out.append(make_case("short_hypotheses",
                         split(["the cat", "a dog ran", "the cat sat on the mat"]),
                         split(["the cat", "a dog", "the cat sat on the mat"])))
    out.append(make_case("unicode_tokens", split(["äpfel über straße , naïve café 's", "ß ü ö ä"]),
                         split(["äpfel über strasse , naïve café 's", "ß ü ö ä"])))
    return out


CLI_REFS = [
    "the cat sat on the mat .",
    "a dog ran to the big red house and barked .",
    "it was a small green house near the river .",
    "we don't know where the well-known road goes .",
    "she said that the weather would be fine tomorrow .",
]
CLI_HYPS = [
    "the cat sat on a mat .",
    "a dog ran to the red house and barked loudly .",
    "it was small green house by the river .",
    "we do not know where the well-known road goes .",
    "she said the weather will be fine tomorrow",
]


def main():
    os.makedirs(OUT_DIR, exist_ok=True)
    doc = {"generator": "scripts/make_bleu_fixtures.py", "nltk_version": nltk.__version__, "cases": cases()}
    names = [c["name"] for c in doc["cases"]]
    assert len(names) == len(set(names))
    with open(os.path.join(OUT_DIR, "cases.json"), "w", encoding="utf-8") as f:
        json.dump(doc, f, ensure_ascii=False, indent=1)
        f.write("\n")
    for name, lines in [("ref.txt", CLI_REFS), ("hyp.txt", CLI_HYPS)]:
        with open(os.path.join(OUT_DIR, name), "w", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")
    cli = make_case("cli", split(CLI_REFS), split(CLI_HYPS))
    p = "/".join(f"{100 * x:.1f}" for x in cli["precisions"])
    print(f"{len(doc['cases'])} cases -> {os.path.normpath(OUT_DIR)}/cases.json")
    print(f"headlab bleu --ref ref.txt --hyp hyp.txt must print:\n"
          f"BLEU = {100 * cli['bleu']:.2f}  (1-4 gram precisions {p}, BP {cli['brevity_penalty']:.3f}, "
          f"hyp {cli['hypothesis_length']} / ref {cli['reference_length']} tokens)")
    assert not math.isnan(cli["bleu"])


if __name__ == "__main__":
    main()
