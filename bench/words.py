"""headlab's word rule (framework/data/include/headlab/data/text.hpp), in Python and without torch.

bench/translate_twin.py tokenizes its corpus with it, and bench/bpe.py splits a sentence into the
words it then cuts into subword pieces. datasets/de-en/build_de_en.py keeps its own copy (it is meant to
run alone); the rule is the same and datasets/de-en/MANIFEST.md states it:

  1. lower-case ASCII A-Z and the Latin-1 upper-case letters (nothing else)
  2. split on the six C whitespace characters
  3. in each chunk, runs of word characters are words; any other character is a token of its own,
     except an apostrophe or hyphen between two word characters, which stays inside the word
"""
import re


# Lower-casing: ASCII A-Z and the Latin-1 upper-case letters U+00C0..U+00DE except U+00D7 (the
# multiplication sign) move up by 0x20. Nothing else changes (str.lower() would touch far more).
_LOWER = {c: c + 0x20 for c in range(ord("A"), ord("Z") + 1)}
_LOWER.update({c: c + 0x20 for c in range(0xC0, 0xDF) if c != 0xD7})

# Whitespace: the C locale's isspace() set (space, \t, \n, \v, \f, \r). str.split() would also split
# on Unicode spaces such as U+00A0, which the C++ side keeps as word characters.
_WHITESPACE = re.compile("[ \t\n\v\f\r]+")


def is_word_char(ch):
    """ASCII letters, ASCII digits and every non-ASCII code point."""
    o = ord(ch)
    return o >= 0x80 or ("a" <= ch <= "z") or ("A" <= ch <= "Z") or ("0" <= ch <= "9")


def tokenize(text):
    """"Don't go, well-known 'X'!" -> ["don't", "go", ",", "well-known", "'", "x", "'", "!"]"""
    tokens = []
    for chunk in _WHITESPACE.split(text.translate(_LOWER)):
        word = []
        n = len(chunk)
        for i, ch in enumerate(chunk):
            if is_word_char(ch):
                word.append(ch)
            elif ch in "'-" and 0 < i < n - 1 and is_word_char(chunk[i - 1]) and is_word_char(chunk[i + 1]):
                word.append(ch)  # inside a word: don't, well-known
            else:
                if word:
                    tokens.append("".join(word))
                    word = []
                tokens.append(ch)  # any other character is a token of its own
        if word:
            tokens.append("".join(word))
    return tokens

