#!/usr/bin/python3
"""Byte-pair encoding (BPE) as headlab's translate task writes and applies it, in plain Python.

bench/translate_twin.py --tokenizer-from RUN reads a headlab run's merges and vocabularies with this
module, so that the PyTorch twin trains on exactly the subword tokens headlab trained on. Nothing
here imports torch (the self-test runs wherever /usr/bin/python3 does).

The files a run writes:

  RUN/bpe.source.txt, RUN/bpe.target.txt      merges: the first line is `#headlab-bpe-merges 1`,
                                              then one merge per line, `LEFT RIGHT` (two symbols,
                                              one space); the line order is the rank (first = 0)
  RUN/vocab.source.txt, RUN/vocab.target.txt  one token per line, line k = id k, starting with
                                              <pad> <s> </s> <unk>

Encoding a sentence: its words are headlab's tokenize() (bench/words.py), and each word is cut on
its own:

  1. symbols = the word's code points, with "</w>" (end of word) glued to the last:
         "hause" -> h a u s e</w>
  2. among the adjacent pairs (s[i], s[i+1]) that are in the merge list, take the one of lowest rank
     and replace its occurrences, left to right and not overlapping, by their concatenation
     (a a a</w> with the merge "a a" -> aa a</w>); repeat until no adjacent pair is a merge
         merges "h a", "ha u", "hau s" -> haus e</w>
  3. pieces: a symbol ending in "</w>" loses it; every other symbol gets "@@" appended
         -> haus@@ e

Decoding pieces back to words: a piece ending in "@@" (and longer than "@@" itself) is glued,
without its "@@", to the piece after it: haus@@ e -> hause. (A hypothesis that stops on such a
piece keeps it as a word, without the "@@".)

Commands:
  /usr/bin/python3 bench/bpe.py --self-test                 hand-checked cases and a round trip
  /usr/bin/python3 bench/bpe.py --merges FILE --file TEXT   each line's pieces, one space apart
                                                            (what `headlab tokenize` prints)
"""
import argparse
import os
import sys
import tempfile

from words import tokenize

MERGES_HEADER = "#headlab-bpe-merges 1"
END_OF_WORD = "</w>"
CONTINUES = "@@"
SPECIALS = ["<pad>", "<s>", "</s>", "<unk>"]
UNK = 3


class BpeFileError(Exception):
    """A merges or vocabulary file that cannot be used; the message names FILE:LINE."""


# ===========================================================================
# Reading a run's files
# ===========================================================================


def read_lines(path):
    """The file's lines without their newline (UTF-8); BpeFileError when it cannot be read."""
    try:
        with open(path, encoding="utf-8", newline="\n") as f:
            lines = f.read().split("\n")
    except (OSError, UnicodeDecodeError) as e:
        raise BpeFileError(f"{path}: cannot be read ({e.__class__.__name__})") from None
    return lines[:-1] if lines[-1] == "" else lines  # "a\nb\n" and "a\nb" are both [a, b]


def read_merges(path):
    """[(left, right)] in rank order, from a merges file (format in the module docstring)."""
    lines = read_lines(path)
    if not lines or lines[0] != MERGES_HEADER:
        raise BpeFileError(f"{path}:1: expected the header line '{MERGES_HEADER}'")
    merges = []
    for number, line in enumerate(lines[1:], 2):
        parts = line.split(" ")
        if len(parts) != 2 or any(not p or any(c.isspace() for c in p) for p in parts):
            raise BpeFileError(f"{path}:{number}: expected 'LEFT RIGHT' (two symbols, one space), got {line!r}")
        merges.append((parts[0], parts[1]))
    return merges


def read_vocab(path):
    """[token] with id = position, from a vocabulary file whose first four lines are the specials."""
    tokens = read_lines(path)
    if tokens[:4] != SPECIALS:
        raise BpeFileError(f"{path}: the first four lines must be {' '.join(SPECIALS)}")
    for number, token in enumerate(tokens, 1):
        if not token or any(c.isspace() for c in token):
            raise BpeFileError(f"{path}:{number}: a token must be non-empty without whitespace, got {token!r}")
    return tokens


def ranks_of(merges):
    """{(left, right): rank}; the first merge has rank 0. A pair listed twice keeps its first rank."""
    ranks = {}
    for rank, pair in enumerate(merges):
        ranks.setdefault(pair, rank)
    return ranks


# ===========================================================================
# Encoding and decoding
# ===========================================================================


def merge_pair(symbols, pair):
    """Every occurrence of pair in symbols, left to right and not overlapping, as one symbol."""
    out, i = [], 0
    while i < len(symbols):
        if i + 1 < len(symbols) and (symbols[i], symbols[i + 1]) == pair:
            out.append(symbols[i] + symbols[i + 1])
            i += 2
        else:
            out.append(symbols[i])
            i += 1
    return out


def encode_word(word, ranks):
    """One word -> its pieces: "hause" -> ["haus@@", "e"] (with the merges of the docstring)."""
    symbols = list(word)
    symbols[-1] += END_OF_WORD
    while len(symbols) > 1:
        present = [ranks[p] for p in zip(symbols, symbols[1:]) if p in ranks]
        if not present:
            break
        best = min(present)
        pair = next(p for p in zip(symbols, symbols[1:]) if ranks.get(p) == best)
        symbols = merge_pair(symbols, pair)
    return [s[: -len(END_OF_WORD)] if s.endswith(END_OF_WORD) else s + CONTINUES for s in symbols]


def encode_sentence(text, ranks):
    """A sentence -> the pieces of its words, in order: "Im Hause." -> im haus@@ e ."""
    return [piece for word in tokenize(text) for piece in encode_word(word, ranks)]


def decode(pieces):
    """Pieces -> words: a piece ending in "@@" (longer than 2) is glued, without it, to the next."""
    words, pending = [], ""
    for piece in pieces:
        if len(piece) > len(CONTINUES) and piece.endswith(CONTINUES):
            pending += piece[: -len(CONTINUES)]
        else:
            words.append(pending + piece)
            pending = ""
    if pending:  # a hypothesis that ended inside a word
        words.append(pending)
    return words


def ids_of(pieces, stoi):
    """Pieces -> ids of a vocabulary ({token: id}); a piece it lacks is <unk> = 3."""
    return [stoi.get(p, UNK) for p in pieces]


# ===========================================================================
# Self-test (a ctest: bench.bpe_py_self_test)
# ===========================================================================


def learn_merges(words, count):
    """The slowest honest BPE learner, only for the self-test: repeat `count` times: count the
    adjacent symbol pairs over all words (each word as often as it occurs), merge the most frequent
    (ties: the smaller pair), everywhere. Returns the merges in the order learned."""
    frequency = {}
    for w in words:
        frequency[w] = frequency.get(w, 0) + 1
    segmented = {w: list(w[:-1]) + [w[-1] + END_OF_WORD] for w in frequency}
    merges = []
    for _ in range(count):
        pairs = {}
        for w, symbols in segmented.items():
            for p in zip(symbols, symbols[1:]):
                pairs[p] = pairs.get(p, 0) + frequency[w]
        if not pairs:
            break
        best = min(pairs, key=lambda p: (-pairs[p], p))
        merges.append(best)
        segmented = {w: merge_pair(symbols, best) for w, symbols in segmented.items()}
    return merges


def self_test():
    failures = []

    def check(what, got, want):
        if got != want:
            failures.append(f"{what}: got {got!r}, want {want!r}")

    # Hand-checked encodings (each worked out on paper from the rule in the docstring).
    ranks = ranks_of([("h", "a"), ("ha", "u"), ("hau", "s"), ("a", "a"), ("m", "ü"), ("s", "e</w>")])
    check("the docstring's example", encode_word("hause", ranks), ["haus@@", "e"])
    check("a merge with the end of a word", encode_word("hase", ranks), ["ha@@", "se"])
    check("left to right, no overlap", encode_word("aaaa", ranks), ["aa@@", "a@@", "a"])
    check("left to right, twice in one pass", encode_word("aaaaa", ranks), ["aa@@", "aa@@", "a"])
    check("one symbol", encode_word("e", ranks), ["e"])
    check("code points, not bytes", encode_word("müde", ranks), ["mü@@", "d@@", "e"])
    check("no merges at all", encode_word("ab", {}), ["a@@", "b"])
    # "b c" (rank 0) goes before "a b" (rank 1), although "a b" comes first in the word.
    check("lowest rank first, not leftmost", encode_word("abcd", ranks_of([("b", "c"), ("a", "b")])), ["a@@", "bc@@", "d"])
    check("a word made whole", encode_word("haus", ranks_of([("h", "a"), ("ha", "u"), ("hau", "s</w>")])), ["haus"])
    check("a sentence: words by tokenize()", encode_sentence("Im Hause, HASE!", ranks),
          ["i@@", "m", "haus@@", "e", ",", "ha@@", "se", "!"])
    check("decode glues @@ pieces", decode(["haus@@", "e", "ist", "x@@", "y@@", "z"]), ["hause", "ist", "xyz"])
    check("decode: '@@' alone is a word", decode(["@@", "a"]), ["@@", "a"])
    check("decode: a dangling @@ piece", decode(["ha@@"]), ["ha"])
    check("decode: nothing", decode([]), [])
    check("ids: unknown -> 3", ids_of(["haus@@", "zz"], {"haus@@": 7}), [7, 3])
    # The learner on paper: l o w</w> (x2), l o w e r</w>, n e w e s t</w> (x2). "l o" and "w e" occur 3
    # times ("l o" is smaller); then "w e" (3); then five pairs occur twice, the smallest is "e we".
    check("the learner", learn_merges(["low", "low", "lower", "newest", "newest"], 3),
          [("l", "o"), ("w", "e"), ("e", "we")])

    # Files: the header and each merge line are checked, and the message names FILE:LINE.
    with tempfile.TemporaryDirectory() as tmp:
        def merges_error(text):
            path = os.path.join(tmp, "bpe.txt")
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
            try:
                read_merges(path)
                return None
            except BpeFileError as e:
                return str(e).replace(path, "FILE")
        check("a good merges file", merges_error(MERGES_HEADER + "\nh a\nha u</w>\n"), None)
        check("no header", merges_error("h a\n"), "FILE:1: expected the header line '#headlab-bpe-merges 1'")
        check("three symbols", merges_error(MERGES_HEADER + "\nh a\nh a b\n"),
              "FILE:3: expected 'LEFT RIGHT' (two symbols, one space), got 'h a b'")
        check("two spaces", merges_error(MERGES_HEADER + "\nh  a\n"),
              "FILE:2: expected 'LEFT RIGHT' (two symbols, one space), got 'h  a'")

    # Round trip on the test split, with merges learned on its own words by the brute-force learner.
    here = os.path.dirname(os.path.abspath(__file__))
    test_tsv = os.path.join(here, "..", "datasets", "de-en", "test.tsv")
    sentences = []
    with open(test_tsv, encoding="utf-8") as f:
        for line in f:
            sentences += line.rstrip("\n").split("\t")
    words = [w for s in sentences for w in tokenize(s)]
    learned = learn_merges(words[:3000], 60)
    ranks = ranks_of(learned)
    broken = [s for s in sentences if decode(encode_sentence(s, ranks)) != tokenize(s)]
    check(f"decode(encode(s)) == tokenize(s) on the {len(sentences)} sides of test.tsv", broken[:3], [])
    pieces = sum(len(encode_sentence(s, ranks)) for s in sentences)
    characters = sum(len(w) for w in words)
    check("the learned merges join characters (pieces < characters)", pieces < characters, True)

    for f in failures:
        print("bpe self-test FAILED: " + f, file=sys.stderr)
    if failures:
        return 1
    print(f"bpe self-test: all checks pass ({len(sentences)} sides of test.tsv round-trip with {len(learned)} "
          f"learned merges: {pieces} pieces for {characters} characters)")
    return 0


# ===========================================================================
# Command line
# ===========================================================================


def main(argv):
    ap = argparse.ArgumentParser(description="headlab's BPE in Python (see the module docstring)")
    ap.add_argument("--self-test", action="store_true", help="run the hand-checked cases and the round trip")
    ap.add_argument("--merges", help="a merges file (bpe.source.txt or bpe.target.txt of a run)")
    ap.add_argument("--file", help="text, one sentence per line: print each line's pieces")
    a = ap.parse_args(argv)
    if a.self_test:
        return self_test()
    if not (a.merges and a.file):
        ap.error("give --self-test, or --merges FILE and --file TEXT")
    try:
        ranks = ranks_of(read_merges(a.merges))
        lines = read_lines(a.file)
    except BpeFileError as e:
        print(f"bpe: {e}", file=sys.stderr)
        return 1
    for line in lines:
        print(" ".join(encode_sentence(line, ranks)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
