#!/usr/bin/python3
"""Builds a small German->English parallel corpus from the Ding dictionary.

(Over 500 lines on purpose: the whole corpus build, from the dictionary to the checksummed splits,
is one script so that datasets/de-en/MANIFEST.md can name a single command that remakes it.)

The source is the Debian package trans-de-en (Ding, by Frank Richter, TU Chemnitz,
GPL-2+), installed as /usr/share/trans/de-en. Each of its ~206 000 lines reads

    GERMAN :: ENGLISH

where ` | ` separates aligned sub-entries (the same count on both sides), `;`
separates alternatives, and markup such as {f}, [ugs.], <variant>, (optional
words) and /ABBR/ is sprinkled in. Many sub-entries are real example sentences
("Es war dunkel geworden. :: Darkness had come.") or multi-word phrases; this
script keeps those and writes them as tab-separated files:

    datasets/de-en/{train,valid,test}.tsv          the full, filtered corpus
    datasets/de-en/small/{train,valid,test}.tsv    a closed-vocabulary subset
    datasets/de-en/MANIFEST.md                     provenance, filters, counts

and checks datasets/de-en/showcase.txt, which it does not write: hand-written sentences for the
the translation page's examples, none of whose German sides may be a German side of the splits (--check-showcase
does only that check).

Run it from anywhere with only the Python standard library:

    /usr/bin/python3 datasets/de-en/build_de_en.py [--source PATH] [--out DIR]

The output is deterministic: the same source gives byte-identical files. The
train/valid/test split is decided by a hash of each group's content, so adding
unrelated lines to the dictionary does not move existing pairs between splits.

The tokenizer below (lower_case + tokenize) is the rule the C++ side implements
too; keep both in step if you change it.
"""

import argparse
import collections
import hashlib
import heapq
import os
import re
import sys

DEFAULT_SOURCE = "/usr/share/trans/de-en"
DEFAULT_OUT = os.path.join("datasets", "de-en")
SOURCE_PACKAGE = "trans-de-en"
SOURCE_VERSION = "1.9-6"
SOURCE_COPYRIGHT_FILE = "/usr/share/doc/trans-de-en/copyright"
# Hand-written showcase pairs (not from Ding), beside the splits in the output directory.
SHOWCASE_FILE = "showcase.txt"

# A sub-entry with more alternatives than this on either side gives no pairs.
MAX_ALTERNATIVES = 3
# Length filter, in tokens (see tokenize), applied to each side separately.
MIN_TOKENS = 3
MAX_TOKENS = 12
# Allowed ratio (German tokens / English tokens).
MIN_RATIO = 0.5
MAX_RATIO = 2.0

# Fixed fractions of the sentence-only groups that go to valid and test. They
# are constants (not "1000 / total") so that a group's split never depends on
# how many other lines the dictionary has.
VALID_FRACTION = 0.08
TEST_FRACTION = 0.08

# Closed-vocabulary subset: at most SMALL_VOCAB tokens per side (see closed_vocabulary).
SMALL_VOCAB = 2000
# At most this many sentence pairs in small/valid and small/test.
SMALL_EVAL_CAP = 500
# If the full train file would be larger than this, it is capped (see write_outputs).
MAX_FULL_TRAIN_BYTES = 4_000_000

# ---------------------------------------------------------------------------
# Character normalisation
# ---------------------------------------------------------------------------

# Typographic characters and their ASCII replacements.
TYPOGRAPHIC_MAP = {
    "\u2019": "'",  # ’ right single quotation mark
    "\u2018": "'",  # ‘ left single quotation mark
    "\u201a": "'",  # ‚ single low-9 quotation mark
    "\u00b4": "'",  # ´ acute accent
    "`": "'",
    "\u201c": '"',  # “
    "\u201d": '"',  # ”
    "\u201e": '"',  # „
    "\u00bb": '"',  # »
    "\u00ab": '"',  # «
    "\u2013": "-",  # – en dash
    "\u2014": "-",  # — em dash
    "\u2010": "-",  # ‐ hyphen
    "\u2011": "-",  # ‑ non-breaking hyphen
    "\u00a0": " ",  # no-break space
    "\u202f": " ",  # narrow no-break space
    "\u2009": " ",  # thin space
    "\t": " ",
}

# The whitespace characters the tokenizer splits on (C's isspace in the "C" locale).
WHITESPACE = " \t\n\v\f\r"


def normalise_typography(text):
    """Replaces typographic quotes, dashes and spaces by ASCII ones."""
    pieces = []
    for ch in text:
        pieces.append(TYPOGRAPHIC_MAP.get(ch, ch))
    return "".join(pieces)


def collapse_whitespace(text):
    """Turns every run of whitespace into one space and trims both ends."""
    return " ".join(split_on_whitespace(text))


def is_latin1_letter(ch):
    """True for the letters of Latin-1 Supplement: U+00C0..U+00FF except × and ÷."""
    code = ord(ch)
    return 0xC0 <= code <= 0xFF and code not in (0xD7, 0xF7)


def has_only_allowed_characters(text):
    """True if every character is printable ASCII or a Latin-1 letter (ä, ß, é, ...)."""
    for ch in text:
        if 0x20 <= ord(ch) <= 0x7E:
            continue
        if is_latin1_letter(ch):
            continue
        return False
    return True


# ---------------------------------------------------------------------------
# Tokenization (the C++ side implements exactly the same rule)
# ---------------------------------------------------------------------------


def lower_case(text):
    """Lower-cases ASCII A-Z and Latin-1 upper-case letters (U+00C0..U+00DE except U+00D7).

    Each of those maps to its code point + 0x20 (A->a, Ä->ä, É->é). Nothing else
    changes: no str.lower(), so the rule is easy to reproduce in C++.
    """
    pieces = []
    for ch in text:
        code = ord(ch)
        if 0x41 <= code <= 0x5A:
            code += 0x20
        elif 0xC0 <= code <= 0xDE and code != 0xD7:
            code += 0x20
        pieces.append(chr(code))
    return "".join(pieces)


def split_on_whitespace(text):
    """Splits on runs of WHITESPACE, dropping empty chunks."""
    chunks = []
    current = []
    for ch in text:
        if ch in WHITESPACE:
            if current:
                chunks.append("".join(current))
                current = []
        else:
            current.append(ch)
    if current:
        chunks.append("".join(current))
    return chunks


def is_word_char(ch):
    """Word characters: ASCII letters, ASCII digits and every non-ASCII code point."""
    code = ord(ch)
    if code >= 0x80:
        return True
    return ch.isascii() and ch.isalnum()


def tokenize_chunk(chunk):
    """Splits one whitespace-free chunk into word tokens and one-character tokens.

    An apostrophe or hyphen stays inside a word when the characters on both
    sides of it are word characters ("don't", "well-known"); any other
    non-word character is a token of its own.
    """
    tokens = []
    word = []
    for i, ch in enumerate(chunk):
        if is_word_char(ch):
            word.append(ch)
            continue
        inside_word = (
            ch in "'-"
            and i > 0
            and i + 1 < len(chunk)
            and is_word_char(chunk[i - 1])
            and is_word_char(chunk[i + 1])
        )
        if inside_word:
            word.append(ch)
            continue
        if word:
            tokens.append("".join(word))
            word = []
        tokens.append(ch)
    if word:
        tokens.append("".join(word))
    return tokens


def tokenize(text):
    """The corpus tokenizer: lower_case, split on whitespace, then tokenize_chunk.

    Example: "Don't go, well-known 'X'!" -> don't go , well-known ' x ' !
    """
    tokens = []
    for chunk in split_on_whitespace(lower_case(text)):
        tokens.extend(tokenize_chunk(chunk))
    return tokens


def side_key(text):
    """The normalised form of one side, used for dedupe and grouping."""
    return " ".join(tokenize(text))


# ---------------------------------------------------------------------------
# Parsing the dictionary
# ---------------------------------------------------------------------------

# Innermost bracketed parts; stripped repeatedly so nested brackets go too.
BRACKET_PATTERNS = [
    re.compile(r"\{[^{}]*\}"),  # grammar tags: {f}, {vt}, {prp; +Dat.}
    re.compile(r"\[[^\[\]]*\]"),  # labels: [ugs.], [Br.], [zool.]
    re.compile(r"<[^<>]*>"),  # spelling variants: <eelsmoking business>
    re.compile(r"\([^()]*\)"),  # optional words and explanations
]
# An abbreviation like /AGB/ or /z. B./: starts after whitespace, no spaces just
# inside the slashes, followed by whitespace, ';', '|' or the end.
ABBREVIATION_PATTERN = re.compile(r"(?<!\S)/[^\s/](?:[^/]*[^\s/])?/(?=[\s;|]|$)")
BRACKET_CHARS = "{}[]<>()"


def strip_markup(text):
    """Removes {..}, [..], <..>, (..) parts and /ABBR/ abbreviations."""
    text = ABBREVIATION_PATTERN.sub(" ", text)
    changed = True
    while changed:
        changed = False
        for pattern in BRACKET_PATTERNS:
            stripped = pattern.sub(" ", text)
            if stripped != text:
                text = stripped
                changed = True
    return text


def tidy_punctuation(text):
    """Collapses whitespace and tidies up what stripping markup leaves behind.

    Removes spaces before , . ! ? ; : and turns a doubled full stop ".." (not
    part of "...") into one.
    """
    text = collapse_whitespace(text)
    text = re.sub(r" +([,.!?;:])", r"\1", text)
    return re.sub(r"(?<!\.)\.\.(?!\.)", ".", text)


def split_alternatives(sub_entry):
    """Strips markup from a sub-entry and returns its ';'-separated alternatives."""
    cleaned = strip_markup(sub_entry)
    alternatives = []
    for part in cleaned.split(";"):
        part = tidy_punctuation(part)
        if part:
            alternatives.append(part)
    return alternatives


def pair_alternatives(german_alternatives, english_alternatives):
    """Pairs the alternatives of one aligned sub-entry.

    In Ding, the alternatives on one side of a sub-entry are synonyms, and each
    of them translates the other side as a whole: there is no positional
    alignment ("Abendbrot essen; zu Abend essen :: to have supper; to have
    dinner"). So every German alternative is paired with every English one,
    but only when each side has at most MAX_ALTERNATIVES alternatives: long
    lists are looser clusters (regional, slang and technical variants) and
    would flood the corpus with near-duplicates of one entry.
    """
    if not 1 <= len(german_alternatives) <= MAX_ALTERNATIVES:
        return []
    if not 1 <= len(english_alternatives) <= MAX_ALTERNATIVES:
        return []
    pairs = []
    for german in german_alternatives:
        for english in english_alternatives:
            pairs.append((german, english))
    return pairs


def parse_line(line):
    """Returns the candidate (german, english) pairs of one dictionary line."""
    line = line.rstrip("\n")
    if not line or line.startswith("#"):
        return []
    line = normalise_typography(line)
    sides = line.split(" :: ")
    if len(sides) != 2:
        return []
    german_subs = sides[0].split(" | ")
    english_subs = sides[1].split(" | ")
    if len(german_subs) != len(english_subs):
        return []
    pairs = []
    for german_sub, english_sub in zip(german_subs, english_subs):
        german_alternatives = split_alternatives(german_sub)
        english_alternatives = split_alternatives(english_sub)
        pairs.extend(pair_alternatives(german_alternatives, english_alternatives))
    return pairs


# ---------------------------------------------------------------------------
# Filters
# ---------------------------------------------------------------------------

# Dictionary placeholders: etw. (etwas), jd./jdn./jdm./jds. (jemand), sth., sb.,
# sb.'s, so. (someone). Matched as whole words followed by a full stop.
PLACEHOLDER_PATTERN = re.compile(
    r"(?<![A-Za-z\u00c0-\u00ff'])(etw|jd|jdn|jdm|jds|sth|sb|so)\.", re.IGNORECASE
)
PLACEHOLDER_WORDS = {"sb's", "sth's"}


def has_placeholder(text):
    """True if the text contains a dictionary placeholder such as etw., jdn. or sb.

    "so." counts as the placeholder "someone" except at the very end of the text,
    where it is the word "so" ending a sentence ("I think so.").
    """
    for match in PLACEHOLDER_PATTERN.finditer(text):
        is_so = match.group(1).lower() == "so"
        at_end = match.end() == len(text)
        if is_so and at_end:
            continue
        return True
    for token in tokenize(text):
        if token in PLACEHOLDER_WORDS:
            return True
    return False


def is_quoted(text):
    """True if the whole text is in quotes, as for titles: "Der Zauberlehrling"."""
    return len(text) >= 2 and text[0] in "\"'" and text[-1] in "\"'"


def is_sentence(text):
    """A side looks like a sentence if it starts upper-case and ends with . ! or ?"""
    first = text[0]
    starts_upper = ("A" <= first <= "Z") or (is_latin1_letter(first) and lower_case(first) != first)
    return starts_upper and text[-1] in ".!?"


def rejection_reason(german, english):
    """Returns why a pair is dropped, or None if it is kept.

    The reasons (in the order they are checked) are also the filter list in the
    MANIFEST, so keep the two in step.
    """
    for side in (german, english):
        if has_placeholder(side):
            return "placeholder (etw., jdn., sth., sb., ...)"
    for side in (german, english):
        if "/" in side:
            return "slash left after markup stripping"
        if any(ch.isdigit() for ch in side):
            return "digit"
        if any(ch in BRACKET_CHARS for ch in side):
            return "unbalanced bracket left after markup stripping"
        if "..." in side or "\u2026" in side:
            return "ellipsis (template, not text)"
        if "~" in side:
            return "tilde (cross-reference)"
        if is_quoted(side):
            return "whole side in quotes (title of a work or a sign)"
        if not has_only_allowed_characters(side):
            return "character outside ASCII and Latin-1 letters"
    german_tokens = tokenize(german)
    english_tokens = tokenize(english)
    for tokens in (german_tokens, english_tokens):
        if not MIN_TOKENS <= len(tokens) <= MAX_TOKENS:
            return "length outside %d..%d tokens" % (MIN_TOKENS, MAX_TOKENS)
    ratio = len(german_tokens) / len(english_tokens)
    if not MIN_RATIO <= ratio <= MAX_RATIO:
        return "token ratio outside %.1f..%.1f" % (MIN_RATIO, MAX_RATIO)
    if german_tokens == english_tokens:
        return "identical sides (untranslated)"
    if is_sentence(german) != is_sentence(english):
        return "only one side is a sentence (gloss or explanation)"
    return None


# ---------------------------------------------------------------------------
# Building the pair list
# ---------------------------------------------------------------------------


class Pair:
    """One kept pair: raw (normalised) text, normalised keys and its kind."""

    def __init__(self, german, english):
        self.german = german
        self.english = english
        self.german_key = side_key(german)
        self.english_key = side_key(english)
        self.kind = "sentence" if is_sentence(german) else "phrase"

    def line(self):
        """The TSV line, without the newline."""
        return self.german + "\t" + self.english

    def hash(self):
        """sha256 of the TSV line, used to order output files."""
        return sha256_text(self.line())


def sha256_text(text):
    """Hex sha256 of a UTF-8 string."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def sha256_file(path):
    """Hex sha256 of a file's bytes."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def read_source(path):
    """Returns the dictionary's lines; exits with a clear message if it is missing."""
    if not os.path.isfile(path):
        sys.exit(
            "error: dictionary not found at %s\n"
            "install Debian package trans-de-en (apt-get install trans-de-en) "
            "or pass --source PATH" % path
        )
    with open(path, encoding="utf-8") as f:
        return f.readlines()


def extract_pairs(lines):
    """Parses and filters all lines; returns (kept pairs, candidate count, drop counts)."""
    kept = []
    candidates = 0
    dropped = collections.Counter()
    for line in lines:
        for german, english in parse_line(line):
            candidates += 1
            reason = rejection_reason(german, english)
            if reason is None:
                kept.append(Pair(german, english))
            else:
                dropped[reason] += 1
    return kept, candidates, dropped


def dedupe(pairs):
    """Keeps one pair per (German key, English key); the smallest raw line wins.

    Choosing the smallest line (not the first seen) makes the result independent
    of the order of the dictionary's lines.
    """
    best = {}
    for pair in pairs:
        key = (pair.german_key, pair.english_key)
        if key not in best or pair.line() < best[key].line():
            best[key] = pair
    return list(best.values())


# ---------------------------------------------------------------------------
# Leak-free split
# ---------------------------------------------------------------------------


class UnionFind:
    """Disjoint sets over hashable items (path halving, union by size)."""

    def __init__(self):
        self.parent = {}
        self.size = {}

    def find(self, item):
        """Returns the representative of item's set, adding item if new."""
        if item not in self.parent:
            self.parent[item] = item
            self.size[item] = 1
        while self.parent[item] != item:
            self.parent[item] = self.parent[self.parent[item]]
            item = self.parent[item]
        return item

    def union(self, a, b):
        """Merges the sets of a and b."""
        root_a = self.find(a)
        root_b = self.find(b)
        if root_a == root_b:
            return
        if self.size[root_a] < self.size[root_b]:
            root_a, root_b = root_b, root_a
        self.parent[root_b] = root_a
        self.size[root_a] += self.size[root_b]


def group_pairs(pairs):
    """Groups pairs that share a German or an English side (transitively)."""
    sets = UnionFind()
    for pair in pairs:
        sets.union("de:" + pair.german_key, "en:" + pair.english_key)
    groups = collections.defaultdict(list)
    for pair in pairs:
        groups[sets.find("de:" + pair.german_key)].append(pair)
    return list(groups.values())


def group_position(group):
    """A number in [0, 1) from the sha256 of the group's sorted TSV lines."""
    lines = sorted(pair.line() for pair in group)
    digest = sha256_text("\n".join(lines))
    return int(digest[:16], 16) / float(1 << 64)


def choose_split(group):
    """valid, test or train for a whole group.

    Only groups made of sentence pairs alone may go to valid or test; every
    group with a phrase pair is train.
    """
    if any(pair.kind != "sentence" for pair in group):
        return "train"
    position = group_position(group)
    if position < VALID_FRACTION:
        return "valid"
    if position < VALID_FRACTION + TEST_FRACTION:
        return "test"
    return "train"


def split_pairs(pairs):
    """Returns {"train": [...], "valid": [...], "test": [...]}, each sorted by pair hash."""
    splits = {"train": [], "valid": [], "test": []}
    for group in group_pairs(pairs):
        splits[choose_split(group)].extend(group)
    for name in splits:
        splits[name].sort(key=lambda pair: (pair.hash(), pair.line()))
    return splits


# ---------------------------------------------------------------------------
# Closed-vocabulary subset
# ---------------------------------------------------------------------------


def token_counts(pairs, side):
    """Counter of tokens on one side ("german" or "english") of the pairs."""
    counts = collections.Counter()
    for pair in pairs:
        counts.update(tokenize(getattr(pair, side)))
    return counts


def pair_token_set(pair):
    """The distinct tokens of a pair, tagged with their side: {("de", "ich"), ("en", "i"), ...}."""
    tokens = set()
    for token in tokenize(pair.german):
        tokens.add(("de", token))
    for token in tokenize(pair.english):
        tokens.add(("en", token))
    return tokens


def closed_vocabulary(pairs, size):
    """Chooses at most `size` tokens per side so that many pairs use only those tokens.

    Greedy pruning: start with every token of the pairs. While a side has more
    than `size` tokens, remove the token of such a side that occurs in the
    fewest remaining pairs (ties: German first, then the smaller token string),
    and remove the pairs that contain it. Removing those pairs lowers the counts
    of their other tokens, which then become cheaper to remove. Compared with simply taking the `size`
    most frequent tokens, this keeps about 1.5 times as many pairs, because it
    does not keep frequent tokens whose pairs all die for other reasons.

    Returns (German vocabulary, English vocabulary) as sets of tokens, both
    exactly the tokens of the surviving pairs.
    """
    tokens_of_pair = [pair_token_set(pair) for pair in pairs]
    pairs_with_token = collections.defaultdict(list)
    for index, tokens in enumerate(tokens_of_pair):
        for token in tokens:
            pairs_with_token[token].append(index)
    count = {token: len(indices) for token, indices in pairs_with_token.items()}
    alive = [True] * len(pairs)
    vocabulary_size = collections.Counter(side for side, _ in count)

    # One min-heap of (count, token) per side. Counts only go down; an entry
    # whose count is out of date is skipped when it comes to the top.
    heaps = {"de": [], "en": []}
    for token, token_count in count.items():
        heaps[token[0]].append((token_count, token))
    for heap in heaps.values():
        heapq.heapify(heap)

    def cheapest(side):
        """The side's (count, token) with the lowest current count."""
        heap = heaps[side]
        while heap[0][1] not in count or heap[0][0] != count[heap[0][1]]:
            heapq.heappop(heap)
        return heap[0]

    while vocabulary_size["de"] > size or vocabulary_size["en"] > size:
        over_budget = [side for side in ("de", "en") if vocabulary_size[side] > size]
        _, token = min(cheapest(side) for side in over_budget)
        del count[token]
        vocabulary_size[token[0]] -= 1
        for index in pairs_with_token[token]:
            if not alive[index]:
                continue
            alive[index] = False
            for other in tokens_of_pair[index]:
                if other in count:
                    count[other] -= 1
                    heapq.heappush(heaps[other[0]], (count[other], other))

    german_vocabulary = set()
    english_vocabulary = set()
    for index, tokens in enumerate(tokens_of_pair):
        if not alive[index]:
            continue
        for side, token in tokens:
            if side == "de":
                german_vocabulary.add(token)
            else:
                english_vocabulary.add(token)
    return german_vocabulary, english_vocabulary


def within_vocabulary(pair, german_vocab, english_vocab):
    """True if every token of both sides is in the given vocabularies."""
    for token in tokenize(pair.german):
        if token not in german_vocab:
            return False
    for token in tokenize(pair.english):
        if token not in english_vocab:
            return False
    return True


def small_subset(splits):
    """The closed-vocabulary subset of the full splits.

    The vocabularies come from the full train split only (closed_vocabulary
    with SMALL_VOCAB tokens per side). Train keeps every train pair inside
    them; valid and test keep their in-vocabulary sentence pairs, at most
    SMALL_EVAL_CAP each (the first ones in file order). Pairs never change
    split, so there is no leakage.
    """
    german_vocab, english_vocab = closed_vocabulary(splits["train"], SMALL_VOCAB)
    subset = {}
    for name, pairs in splits.items():
        kept = [p for p in pairs if within_vocabulary(p, german_vocab, english_vocab)]
        if name != "train":
            kept = kept[:SMALL_EVAL_CAP]
        subset[name] = kept
    return subset


# ---------------------------------------------------------------------------
# Statistics
# ---------------------------------------------------------------------------


def vocabulary_size(counts, min_frequency):
    """Number of tokens seen at least min_frequency times."""
    return sum(1 for count in counts.values() if count >= min_frequency)


def unknown_rate(train_counts, test_pairs, side, min_frequency):
    """Share of test tokens (one side) not seen min_frequency times in train."""
    total = 0
    unknown = 0
    for pair in test_pairs:
        for token in tokenize(getattr(pair, side)):
            total += 1
            if train_counts[token] < min_frequency:
                unknown += 1
    if total == 0:
        return 0.0
    return unknown / total


def split_statistics(splits):
    """Counts, vocabulary sizes and unknown rates for one set of splits."""
    stats = {"counts": {}, "vocab": {}, "unk": {}}
    for name, pairs in splits.items():
        sentences = sum(1 for p in pairs if p.kind == "sentence")
        stats["counts"][name] = (len(pairs), sentences, len(pairs) - sentences)
    for side in ("german", "english"):
        counts = token_counts(splits["train"], side)
        stats["vocab"][side] = (vocabulary_size(counts, 1), vocabulary_size(counts, 2))
        stats["unk"][side] = (
            unknown_rate(counts, splits["test"], side, 2),
            unknown_rate(counts, splits["test"], side, 1),
        )
    return stats


# ---------------------------------------------------------------------------
# Output
# ---------------------------------------------------------------------------


def write_tsv(path, pairs):
    """Writes pairs as UTF-8 `german<TAB>english` lines with a trailing newline."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        for pair in pairs:
            f.write(pair.line() + "\n")


def tsv_size(pairs):
    """Bytes the pairs take as a TSV file."""
    return sum(len(pair.line().encode("utf-8")) + 1 for pair in pairs)


def cap_train(pairs):
    """The first pairs in hash order that fit in MAX_FULL_TRAIN_BYTES; all if they fit."""
    kept = []
    size = 0
    for pair in pairs:
        size += len(pair.line().encode("utf-8")) + 1
        if size > MAX_FULL_TRAIN_BYTES:
            break
        kept.append(pair)
    return kept


def read_tsv_germans(path):
    """[(line number, German side)] of a `german<TAB>english` file; exits naming FILE:LINE on a bad line."""
    germans = []
    with open(path, encoding="utf-8", newline="\n") as f:
        for number, line in enumerate(f, 1):
            columns = line.rstrip("\n").split("\t")
            if len(columns) != 2 or not columns[0].strip() or not columns[1].strip():
                sys.exit("error: %s:%d: expected german<TAB>english" % (path, number))
            germans.append((number, columns[0].strip()))
    return germans


def showcase_overlaps(out_dir):
    """(showcase pairs, overlaps): each overlap says which showcase line is, case-insensitively,
    the German side of which line of which split. Exits when showcase.txt is missing."""
    showcase_path = os.path.join(out_dir, SHOWCASE_FILE)
    if not os.path.isfile(showcase_path):
        sys.exit("error: %s not found" % showcase_path)
    showcase = read_tsv_germans(showcase_path)
    wanted = {german.lower(): number for number, german in showcase}
    overlaps = []
    for relative in ("train.tsv", "valid.tsv", "test.tsv",
                     "small/train.tsv", "small/valid.tsv", "small/test.tsv"):
        for number, german in read_tsv_germans(os.path.join(out_dir, relative)):
            if german.lower() in wanted:
                overlaps.append("%s:%d: '%s' is the German side of %s:%d"
                                % (SHOWCASE_FILE, wanted[german.lower()], german, relative, number))
    return len(showcase), overlaps


def check_showcase(out_dir):
    """Prints the result of showcase_overlaps; returns the exit status (1 on any overlap)."""
    count, overlaps = showcase_overlaps(out_dir)
    for overlap in overlaps:
        print("error: " + overlap, file=sys.stderr)
    if overlaps:
        return 1
    print("%s: %d pairs, no German side is one of train/valid/test.tsv or small/*.tsv"
          % (SHOWCASE_FILE, count))
    return 0


def source_header(lines):
    """The dictionary's leading '#' lines, without the '# ' prefix."""
    header = []
    for line in lines:
        if not line.startswith("#"):
            break
        header.append(line[1:].strip())
    return header


def copyright_licence_text():
    """The 'License: GPL-2+' paragraph of the Debian copyright file, if present."""
    if not os.path.isfile(SOURCE_COPYRIGHT_FILE):
        return None
    with open(SOURCE_COPYRIGHT_FILE, encoding="utf-8") as f:
        paragraphs = f.read().split("\n\n")
    for paragraph in paragraphs:
        if paragraph.startswith("License: GPL-2+"):
            return paragraph.strip()
    return None


def format_table(header, rows):
    """A Markdown table."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in rows:
        lines.append("| " + " | ".join(str(cell) for cell in row) + " |")
    return "\n".join(lines)


def statistics_section(title, stats, train_note):
    """MANIFEST text for one set of splits."""
    count_rows = []
    for name in ("train", "valid", "test"):
        total, sentences, phrases = stats["counts"][name]
        count_rows.append((name, total, sentences, phrases))
    vocab_rows = []
    unk_rows = []
    for side in ("german", "english"):
        vocab_rows.append((side, stats["vocab"][side][0], stats["vocab"][side][1]))
        unk_2, unk_1 = stats["unk"][side]
        unk_rows.append((side, "%.2f%%" % (100 * unk_2), "%.2f%%" % (100 * unk_1)))
    parts = [
        "### " + title,
        "",
        train_note,
        "",
        format_table(("split", "pairs", "sentence pairs", "phrase pairs"), count_rows),
        "",
        "Vocabulary of train (distinct tokens):",
        "",
        format_table(("side", "min freq 1", "min freq 2"), vocab_rows),
        "",
        "Unknown-token rate of test against train (token level):",
        "",
        format_table(("side", "unk at min freq 2", "unk at min freq 1"), unk_rows),
        "",
    ]
    return "\n".join(parts)


def write_manifest(path, info):
    """Writes MANIFEST.md from the collected build information."""
    header_lines = "\n".join("    " + line for line in info["header"])
    licence = info["licence"] or "License: GPL-2+ (see /usr/share/common-licenses/GPL-2)"
    licence_lines = "\n".join("    " + line for line in licence.splitlines())
    drop_rows = sorted(info["dropped"].items(), key=lambda item: (-item[1], item[0]))
    file_rows = [(name, size, digest) for name, size, digest in info["files"]]
    text = MANIFEST_TEMPLATE.format(
        package=SOURCE_PACKAGE,
        version=SOURCE_VERSION,
        source_sha256=info["source_sha256"],
        version_line=info["version_line"],
        header_lines=header_lines,
        licence_lines=licence_lines,
        command=info["command"],
        max_alternatives=MAX_ALTERNATIVES,
        min_tokens=MIN_TOKENS,
        max_tokens=MAX_TOKENS,
        min_ratio=MIN_RATIO,
        max_ratio=MAX_RATIO,
        valid_fraction=VALID_FRACTION,
        test_fraction=TEST_FRACTION,
        small_vocab=SMALL_VOCAB,
        small_eval_cap=SMALL_EVAL_CAP,
        max_train_bytes=MAX_FULL_TRAIN_BYTES,
        lines=info["line_count"],
        candidates=info["candidates"],
        kept=info["kept"],
        unique=info["unique"],
        groups=info["groups"],
        drop_table=format_table(("reason", "candidate pairs dropped"), drop_rows),
        full_section=statistics_section("Full set (`train.tsv`, `valid.tsv`, `test.tsv`)",
                                        info["full_stats"], info["full_note"]),
        small_section=statistics_section("Small set (`small/`)", info["small_stats"],
                                         info["small_note"]),
        file_table=format_table(("file", "bytes", "sha256"), file_rows),
        total_bytes=info["total_bytes"],
        small_eval_share=info["small_eval_share"],
        showcase=SHOWCASE_FILE,
    )
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write(text)


MANIFEST_TEMPLATE = """\
# de-en: a German->English corpus extracted from the Ding dictionary

Generated by `datasets/de-en/build_de_en.py`; do not edit by hand. Rebuild with:

    {command}

## Source

- Debian package **{package} {version}** (upstream: Ding, https://dict.tu-chemnitz.de/),
  file `/usr/share/trans/de-en`, sha256 `{source_sha256}`.
- Upstream version line: `{version_line}`
- Header of the source file:

{header_lines}

## Licence

The dictionary is Copyright (c) Frank Richter, TU Chemnitz, 1995-2023, and is
licensed under the GNU General Public License, version 2 or (at your option) any
later version. The files in this directory are extracted from it and are
therefore a derivative work under the same licence (GPL-2+), except
`{showcase}` (see below). Credit for all
translations goes to Frank Richter and the Ding contributors at TU Chemnitz.
The full licence text is in `/usr/share/common-licenses/GPL-2` on Debian systems
and at https://www.gnu.org/licenses/old-licenses/gpl-2.0.html. The Debian
package states (`/usr/share/doc/trans-de-en/copyright`):

{licence_lines}

## Format

`train.tsv`, `valid.tsv`, `test.tsv` (and the same under `small/`): UTF-8, one
pair per line, `german<TAB>english`, each file ending in a newline. The text is
normalised (see below) but not tokenized. Lines are ordered by the sha256 of the
line, which looks random but is deterministic.

## Extraction

1. Lines starting with `#` are skipped. Typographic characters become ASCII:
   ' for U+2019 U+2018 U+201A U+00B4 and backtick; " for U+201C U+201D U+201E
   U+00BB U+00AB; - for U+2013 U+2014 U+2010 U+2011; a space for U+00A0 U+202F
   U+2009 and tab.
2. The line is split at ` :: ` into German and English; each side is split at
   ` | ` into sub-entries. Lines whose sides have different sub-entry counts are
   skipped. Sub-entry i of German is aligned with sub-entry i of English.
3. Markup is stripped from each sub-entry: `{{..}}` grammar tags, `[..]` labels,
   `<..>` spelling variants, `(..)` optional words and explanations (innermost
   first, repeatedly, so nesting goes too) and `/ABBR/` abbreviations (a slash
   after whitespace, no space just inside either slash, followed by whitespace,
   `;`, `|` or the end). Whitespace is collapsed and spaces left before
   `, . ! ? ; :` are removed; a doubled full stop `..` becomes `.`.
4. The sub-entry is split at `;` into alternatives. **Pairing rule: every
   German alternative is paired with every English alternative of the same
   sub-entry, but only if neither side has more than {max_alternatives} alternatives; a
   sub-entry with more gives no pairs.** In Ding, the
   alternatives of one side are synonyms that each translate the other side as
   a whole; they are not aligned by position (`Abendbrot essen; zu Abend essen
   :: to have supper; to have dinner`), so positional pairing of equal counts
   would assert an alignment that does not exist, while pairing only 1:1
   sub-entries throws away most example sentences that come with a British and
   an American rendering. Long lists are looser clusters (regional, slang and
   technical variants) and would flood the corpus with near-duplicates of one
   entry, hence the limit. Pairs from one sub-entry share sides, so the split
   below keeps them together (no leakage between near-duplicates).

## Filters (in the order applied; first match drops the pair)

- either side contains a dictionary placeholder: `etw.`, `jd.`, `jdn.`, `jdm.`,
  `jds.`, `sth.`, `sb.`, `sb.'s`, `so.` (whole word followed by a full stop, any
  case; `so.` at the very end of a side is the word "so" ending a sentence and
  is allowed);
- a slash `/` remains; a digit; a bracket `{{}}[]<>()` remains (unbalanced markup);
- an ellipsis (`...` or U+2026): such entries are templates, not text;
- a tilde `~` (Ding's cross-reference marker);
- a side entirely in quotes (`"Der Zauberlehrling"`): titles of works and
  signs, usually translated freely or not at all;
- a character that is neither printable ASCII (U+0020..U+007E) nor a Latin-1
  letter (U+00C0..U+00FF except U+00D7 and U+00F7);
- fewer than {min_tokens} or more than {max_tokens} tokens on either side;
- token ratio German/English outside {min_ratio}..{max_ratio};
- both sides tokenize identically (untranslated names and loans);
- exactly one side looks like a sentence (such pairs are mostly glosses).

A side *looks like a sentence* when it starts with an upper-case letter (A-Z
or Latin-1 upper case) and ends with `.`, `!` or `?`. A **sentence pair** has
both sides like that; every other kept pair is a **phrase pair**.

Duplicates (same tokenized German and same tokenized English) are merged,
keeping the smallest raw line, so the result does not depend on line order.

## Tokenization (exactly the rule of the C++ side)

1. Lower-case: ASCII A-Z -> a-z, and U+00C0..U+00DE except U+00D7 -> code point
   + 0x20 (Ä->ä, É->é). Nothing else changes (no Unicode lower-casing; ß stays).
2. Split on whitespace (space, tab, newline, vertical tab, form feed, carriage
   return).
3. Within a chunk, word characters are ASCII letters, ASCII digits and every
   non-ASCII code point. Every other character is a one-character token, except
   an apostrophe `'` or hyphen `-` whose previous and next characters are both
   word characters: it stays inside the word.

Example: `Don't go, well-known 'X'!` -> `don't go , well-known ' x ' !`

## Split (no leakage)

Pairs that share a German side or an English side (compared as the
space-joined token string) are put in one group, transitively (union-find).
Each group goes to one split as a whole. A group made only of sentence pairs
goes to valid if x < {valid_fraction}, to test if {valid_fraction} <= x < {valid_fraction} + {test_fraction},
else to train, where x is the first 64 bits of the sha256 of the group's
sorted TSV lines (joined by newlines), divided by 2^64. Groups with a
phrase pair always go to train. So valid and test are sentence pairs only, and
a group keeps its split when unrelated lines are added to the dictionary.

## Small subset (`small/`)

A closed vocabulary of at most {small_vocab} tokens per side is chosen on the
full train split alone, by greedy pruning: start with every train token; while
a side has more than {small_vocab} tokens, remove the token of such a side that
occurs in the fewest remaining train pairs (ties: German first, then the
smaller token string) together with those pairs. (This keeps about 1.5 times as many pairs as taking the
{small_vocab} most frequent tokens.) `small/train.tsv` holds every full train
pair whose tokens are all in the vocabulary; `small/valid.tsv` and
`small/test.tsv` hold such pairs of the full valid and test splits (at most
{small_eval_cap} each, the first in file order). Pairs never change split, so
there is no leakage. This is the default corpus of the tutorial: small enough
to train a d_model 128, 8 heads, ff 512, 2+2 layer model on one CPU core in
minutes. Dictionary vocabulary is very spread out (most pairs contain at least
one rare word), so only {small_eval_share} of the full valid and test sentence
pairs fit in a vocabulary of this size; the small valid and test sets are
correspondingly small.

## Showcase sentences (`{showcase}`)

`{showcase}` is not from Ding and not written by this script: its everyday
German sentences (greetings, time, weather, food, travel, feelings, questions,
negation, past tense) and their English references were written by hand for
headlab, in the same `german<TAB>english` format. It is never trained on, nor
used for validation or test BLEU: a translation run decodes it so that a
person can judge the output (`docs/tools/update_readme_showcase.py` puts it in
docs/translation.md). No German side of it is, case-insensitively, the German side of a
line of `train.tsv`, `valid.tsv`, `test.tsv` or `small/*.tsv`: this script
checks that after every build, and `/usr/bin/python3 datasets/de-en/build_de_en.py
--check-showcase` checks only that (a ctest runs it).

## Counts

- source lines: {lines}
- candidate pairs (after pairing alternatives, before filters): {candidates}
- kept after filters: {kept}; after dedupe: {unique}; groups: {groups}

{drop_table}

{full_section}
{small_section}
## Files

{file_table}

Total of the TSV files: {total_bytes} bytes.
"""


# ---------------------------------------------------------------------------
# Main
# ---------------------------------------------------------------------------


def eval_share(splits, small):
    """Share of full valid+test pairs that are in small valid+test, as "12.3%"."""
    full = len(splits["valid"]) + len(splits["test"])
    kept = len(small["valid"]) + len(small["test"])
    return "%.1f%%" % (100.0 * kept / max(full, 1))


def parse_arguments(argv):
    """Command-line options."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", default=DEFAULT_SOURCE,
                        help="Ding dictionary file (default: %(default)s)")
    parser.add_argument("--out", default=DEFAULT_OUT,
                        help="output directory (default: %(default)s)")
    parser.add_argument("--check-showcase", action="store_true",
                        help="only check that no German side of OUT/%s is one of OUT's splits"
                        % SHOWCASE_FILE)
    return parser.parse_args(argv)


def rebuild_command(args):
    """The command line recorded in the MANIFEST."""
    command = "/usr/bin/python3 datasets/de-en/build_de_en.py"
    if args.source != DEFAULT_SOURCE:
        command += " --source " + args.source
    if args.out != DEFAULT_OUT:
        command += " --out " + args.out
    return command


def print_statistics(title, stats):
    """Prints counts, vocabulary sizes and unknown rates."""
    print(title)
    for name in ("train", "valid", "test"):
        total, sentences, phrases = stats["counts"][name]
        print("  %-5s %6d pairs (%d sentence, %d phrase)" % (name, total, sentences, phrases))
    for side in ("german", "english"):
        vocab_1, vocab_2 = stats["vocab"][side]
        unk_2, unk_1 = stats["unk"][side]
        print("  %-7s vocab %d (min freq 1), %d (min freq 2); test unk %.2f%% (min freq 2), "
              "%.2f%% (min freq 1)" % (side, vocab_1, vocab_2, 100 * unk_2, 100 * unk_1))


def main(argv):
    args = parse_arguments(argv)
    if args.check_showcase:
        return check_showcase(args.out)
    lines = read_source(args.source)
    header = source_header(lines)

    pairs, candidates, dropped = extract_pairs(lines)
    unique = dedupe(pairs)
    groups = group_pairs(unique)
    splits = split_pairs(unique)
    small = small_subset(splits)

    full_stats = split_statistics(splits)
    small_stats = split_statistics(small)

    full_files = dict(splits)
    full_note = "All pairs that passed the filters."
    if tsv_size(splits["train"]) > MAX_FULL_TRAIN_BYTES:
        full_files["train"] = cap_train(splits["train"])
        full_note = ("`train.tsv` is capped to the first %d of %d train pairs (hash order, at "
                     "most %d bytes); the statistics below are for the uncapped split."
                     % (len(full_files["train"]), len(splits["train"]), MAX_FULL_TRAIN_BYTES))
    small_note = "Closed vocabulary of %d tokens per side." % SMALL_VOCAB

    written = []
    for name in ("train", "valid", "test"):
        written.append((name + ".tsv", full_files[name]))
    for name in ("train", "valid", "test"):
        written.append(("small/" + name + ".tsv", small[name]))
    file_rows = []
    total_bytes = 0
    for relative, file_pairs in written:
        path = os.path.join(args.out, relative)
        write_tsv(path, file_pairs)
        size = os.path.getsize(path)
        total_bytes += size
        file_rows.append(("`" + relative + "`", size, "`" + sha256_file(path) + "`"))

    version_line = next((line for line in header if line.startswith("Version")), "unknown")
    info = {
        "header": header,
        "licence": copyright_licence_text(),
        "source_sha256": sha256_file(args.source),
        "version_line": version_line,
        "command": rebuild_command(args),
        "line_count": len(lines),
        "candidates": candidates,
        "kept": len(pairs),
        "unique": len(unique),
        "groups": len(groups),
        "dropped": dropped,
        "full_stats": full_stats,
        "full_note": full_note,
        "small_stats": small_stats,
        "small_note": small_note,
        "files": file_rows,
        "total_bytes": total_bytes,
        "small_eval_share": eval_share(splits, small),
    }
    manifest_path = os.path.join(args.out, "MANIFEST.md")
    write_manifest(manifest_path, info)

    print("source: %s (%d lines)" % (args.source, len(lines)))
    print("candidate pairs %d, kept %d, unique %d, groups %d"
          % (candidates, len(pairs), len(unique), len(groups)))
    print_statistics("full:", full_stats)
    print_statistics("small (vocabulary %d per side):" % SMALL_VOCAB, small_stats)
    print("wrote %d bytes of TSV and %s" % (total_bytes, manifest_path))
    if os.path.isfile(os.path.join(args.out, SHOWCASE_FILE)):
        return check_showcase(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
