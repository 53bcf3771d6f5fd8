#!/usr/bin/env python3
"""Builds datasets/grammar-de-en: German -> English sentence pairs from a small grammar, each with its
gold word alignment, deterministic from a seed. A corpus where the right answer is known: which
English word every German word becomes, and where the word order changes.

    python3 datasets/grammar-de-en/build_grammar.py [--out DIR] [--seed N] [--check]

writes into DIR (default datasets/grammar-de-en):
    train.tsv valid.tsv test.tsv   drawn from one distribution, no German sentence in two splits
    gen_long.tsv                   two subordinate clauses in a row: longer than any training sentence
    gen_combo.tsv                  combinations training never shows: "Pferd" (horse) as the subject
                                   of a subordinate clause, "schwarz" (black) with "Katze" (cat)
each line `german<TAB>english<TAB>alignment`, the alignment in the Pharaoh format ("0-0 1-1 2-3":
source token index - target token index, 0-based) over the tokens of headlab's tokenizer (lower-case;
punctuation its own token). --check builds into a temporary folder and compares with DIR.

The phenomena (docs/grammar-corpus.md shows an example of each): article gender and case
(der/die/das/den/dem -> the, ein/eine/einen/einem -> a), adjective endings after the definite and
the indefinite article and without one, plural agreement of the verb, V2 inversion after a fronted
adverb, verb-final subordinate clauses (weil, dass, wenn), the perfect (hat/ist ... gesehen) and
modal verbs (kann, muss ... sehen) with the verb at the end, separable verbs (kommt ... an, ruft ...
an), negation (nicht -> does not, kein -> no), yes/no questions (does ...?), prepositional phrases
with the dative (mit, hinter), and verbs with a dative object (hilft).
"""
import argparse
import filecmp
import os
import random
import re
import sys
import tempfile

# ---- The lexicon -----------------------------------------------------------------------------
# Nouns: gender, singular, plural, dative plural, English singular and plural.
ANIMATE = [
    ("m", "Hund", "Hunde", "Hunden", "dog", "dogs"),
    ("m", "Mann", "Männer", "Männern", "man", "men"),
    ("m", "Lehrer", "Lehrer", "Lehrern", "teacher", "teachers"),
    ("m", "Vogel", "Vögel", "Vögeln", "bird", "birds"),
    ("m", "Koch", "Köche", "Köchen", "cook", "cooks"),
    ("m", "Freund", "Freunde", "Freunden", "friend", "friends"),
    ("f", "Katze", "Katzen", "Katzen", "cat", "cats"),
    ("f", "Frau", "Frauen", "Frauen", "woman", "women"),
    ("f", "Schwester", "Schwestern", "Schwestern", "sister", "sisters"),
    ("f", "Maus", "Mäuse", "Mäusen", "mouse", "mice"),
    ("f", "Ärztin", "Ärztinnen", "Ärztinnen", "doctor", "doctors"),
    ("n", "Kind", "Kinder", "Kindern", "child", "children"),
    ("n", "Pferd", "Pferde", "Pferden", "horse", "horses"),
    ("n", "Mädchen", "Mädchen", "Mädchen", "girl", "girls"),
    ("n", "Lamm", "Lämmer", "Lämmern", "lamb", "lambs"),
]
PLACES = [
    ("n", "Haus", "house"), ("m", "Baum", "tree"), ("f", "Tür", "door"), ("m", "Zaun", "fence"),
    ("f", "Mauer", "wall"), ("n", "Auto", "car"),
]
# Adjectives: German stem, English.
ADJECTIVES = [("groß", "big"), ("klein", "small"), ("alt", "old"), ("jung", "young"), ("müde", "tired"),
              ("schnell", "fast"), ("schwarz", "black"), ("weiß", "white"), ("laut", "loud"), ("leise", "quiet")]
# Intransitive verbs: infinitive, 3rd singular, participle, auxiliary, English base, 3rd sg, participle.
INTRANSITIVE = [
    ("schlafen", "schläft", "geschlafen", "hat", "sleep", "sleeps", "slept"),
    ("laufen", "läuft", "gelaufen", "ist", "run", "runs", "run"),
    ("singen", "singt", "gesungen", "hat", "sing", "sings", "sung"),
    ("spielen", "spielt", "gespielt", "hat", "play", "plays", "played"),
    ("warten", "wartet", "gewartet", "hat", "wait", "waits", "waited"),
    ("lachen", "lacht", "gelacht", "hat", "laugh", "laughs", "laughed"),
]
# Transitive verbs (accusative object).
TRANSITIVE = [
    ("sehen", "sieht", "gesehen", "hat", "see", "sees", "seen"),
    ("finden", "findet", "gefunden", "hat", "find", "finds", "found"),
    ("lieben", "liebt", "geliebt", "hat", "love", "loves", "loved"),
    ("hören", "hört", "gehört", "hat", "hear", "hears", "heard"),
    ("füttern", "füttert", "gefüttert", "hat", "feed", "feeds", "fed"),
    ("suchen", "sucht", "gesucht", "hat", "seek", "seeks", "sought"),
]
# Verbs with a dative object.
DATIVE_VERBS = [("helfen", "hilft", "geholfen", "hat", "help", "helps", "helped"),
                ("folgen", "folgt", "gefolgt", "ist", "follow", "follows", "followed")]
# Separable verbs: prefix, infinitive, 3rd sg stem, transitive?, English base, 3rd sg.
SEPARABLE = [("an", "ankommen", "kommt", False, "arrive", "arrives"),
             ("an", "anrufen", "ruft", True, "call", "calls"),
             ("ab", "abholen", "holt", True, "collect", "collects")]
MODALS = [("kann", "können", "can"), ("muss", "müssen", "must")]
ADVERBS = [("heute", "today"), ("morgen", "tomorrow"), ("jetzt", "now")]
CONJUNCTIONS = [("weil", "because"), ("dass", "that"), ("wenn", "if")]
MAIN_FOR_DASS = [("weiß", "wissen", "knows", "know"), ("glaubt", "glauben", "believes", "believe"),
                 ("sagt", "sagen", "says", "say")]

DEFINITE = {("m", "nom"): "der", ("m", "acc"): "den", ("m", "dat"): "dem", ("f", "nom"): "die", ("f", "acc"): "die",
            ("f", "dat"): "der", ("n", "nom"): "das", ("n", "acc"): "das", ("n", "dat"): "dem"}
INDEFINITE = {("m", "nom"): "ein", ("m", "acc"): "einen", ("m", "dat"): "einem", ("f", "nom"): "eine",
              ("f", "acc"): "eine", ("f", "dat"): "einer", ("n", "nom"): "ein", ("n", "acc"): "ein", ("n", "dat"): "einem"}
KEIN = {k: "k" + v for k, v in INDEFINITE.items()}  # ein -> kein, einen -> keinen
# Adjective endings: after the definite article (weak), the indefinite one (mixed), and none (strong, plural only).
WEAK = {("m", "nom"): "e", ("m", "acc"): "en", ("m", "dat"): "en", ("f", "nom"): "e", ("f", "acc"): "e",
        ("f", "dat"): "en", ("n", "nom"): "e", ("n", "acc"): "e", ("n", "dat"): "en"}
MIXED = {("m", "nom"): "er", ("m", "acc"): "en", ("m", "dat"): "en", ("f", "nom"): "e", ("f", "acc"): "e",
         ("f", "dat"): "en", ("n", "nom"): "es", ("n", "acc"): "es", ("n", "dat"): "en"}
PLURAL_DEFINITE = {"nom": "die", "acc": "die", "dat": "den"}
PLURAL_WEAK = "en"
PLURAL_STRONG = {"nom": "e", "acc": "e", "dat": "en"}

HELD_OUT_SUBORDINATE_SUBJECT = "Pferd"        # never the subject of a subordinate clause in training
HELD_OUT_ADJECTIVE_NOUN = ("schwarz", "Katze")  # never together in training


def inflect(stem, ending):
    """groß + en -> großen; müde + en -> müden (a stem ending in e takes the ending without its e)."""
    if stem.endswith("e") and ending.startswith("e"):
        return stem + ending[1:]
    return stem + ending


# ---- Sentences as aligned tokens -----------------------------------------------------------
# A side is a list of (word, link) with link an int shared by the German and English words that
# translate each other, or None (no counterpart: the comma, "does").

class Links:
    def __init__(self):
        self.n = 0

    def new(self):
        self.n += 1
        return self.n


def noun_phrase(rng, links, case, noun=None, plural=None, article=None, adjective=None, allow_adjective=True):
    """A German and an English noun phrase: ([(word, link)], [(word, link)], noun entry)."""
    noun = noun or rng.choice(ANIMATE)
    gender, sg, pl, dat_pl, en_sg, en_pl = noun
    plural = rng.random() < 0.3 if plural is None else plural
    article = article or rng.choice(["def", "def", "indef"])
    if adjective is None and allow_adjective and rng.random() < 0.35:
        adjective = rng.choice(ADJECTIVES)
    de, en = [], []
    if article == "def":
        a = links.new()
        de.append((PLURAL_DEFINITE[case] if plural else DEFINITE[(gender, case)], a))
        en.append(("the", a))
    elif article == "indef" and not plural:
        a = links.new()
        de.append((INDEFINITE[(gender, case)], a))
        en.append(("a", a))
    elif article == "kein":
        a = links.new()
        de.append(("keine" if plural and case != "dat" else ("keinen" if plural else KEIN[(gender, case)]), a))
        en.append(("no", a))
    if adjective:
        j = links.new()
        if article == "def":
            ending = PLURAL_WEAK if plural else WEAK[(gender, case)]
        elif article == "kein":
            ending = PLURAL_WEAK if plural else MIXED[(gender, case)]
        else:  # indefinite: mixed in the singular, strong in the plural (no article)
            ending = PLURAL_STRONG[case] if plural else MIXED[(gender, case)]
        de.append((inflect(adjective[0], ending), j))
        en.append((adjective[1], j))
    n = links.new()
    de.append(((dat_pl if case == "dat" else pl) if plural else sg, n))
    en.append((en_pl if plural else en_sg, n))
    if en[0][0] == "a" and en[1][0][0] in "aeiou":
        en[0] = ("an", en[0][1])
    return de, en, plural


def place_phrase(rng, links):
    """hinter dem Haus -> behind the house (a dative place)."""
    gender, noun, en_noun = rng.choice(PLACES)
    p, a, n = links.new(), links.new(), links.new()
    return [("hinter", p), (DEFINITE[(gender, "dat")], a), (noun, n)], [("behind", p), ("the", a), (en_noun, n)]


def verb_forms(verb, plural):
    inf, third, participle, aux, en_base, en_third, en_participle = verb
    return {"de": inf if plural else third, "en": en_base if plural else en_third, "inf": inf, "participle": participle,
            "aux": ("sind" if aux == "ist" else "haben") if plural else aux, "en_aux": "have" if plural else "has",
            "en_base": en_base, "en_participle": en_participle, "en_do": "do" if plural else "does"}


def clause(rng, links, subordinate, form=None, subject=None):
    """One clause: (German tokens in main-clause order or verb-final, English tokens, form name)."""
    form = form or rng.choice(["intransitive", "transitive", "dative", "perfect", "modal", "separable",
                               "negation", "kein", "with"])
    subj_de, subj_en, plural = noun_phrase(rng, links, "nom", noun=subject)
    de_front, de_verb_final, en = list(subj_de), [], list(subj_en)
    # de_front: what stands before the finite verb in a main clause (the subject); de_mid: after it;
    # in a subordinate clause the finite verb goes last (after any non-finite verb).
    finite, de_mid, de_end = None, [], []
    if form in ("intransitive", "with", "place"):
        v = verb_forms(rng.choice(INTRANSITIVE), plural)
        f = links.new()
        finite = (v["de"], f)
        en.append((v["en"], f))
        if form == "with":
            obj_de, obj_en, _ = noun_phrase(rng, links, "dat", allow_adjective=False)
            w = links.new()
            de_mid = [("mit", w)] + obj_de
            en += [("with", w)] + obj_en
        elif rng.random() < 0.3:
            pde, pen = place_phrase(rng, links)
            de_mid, en = pde, en + pen
    elif form in ("transitive", "kein", "negation"):
        v = verb_forms(rng.choice(TRANSITIVE), plural)
        f = links.new()
        article = "kein" if form == "kein" else rng.choice(["def", "def", "indef"])
        if form == "negation":
            article = "def"
        obj_de, obj_en, _ = noun_phrase(rng, links, "acc", article=article)
        finite = (v["de"], f)
        if form == "negation":
            neg = links.new()
            en += [(v["en_do"], None), ("not", neg), (v["en_base"], f)] + obj_en
            de_mid = obj_de + [("nicht", neg)]
        else:
            en += [(v["en"], f)] + obj_en
            de_mid = obj_de
    elif form == "dative":
        v = verb_forms(rng.choice(DATIVE_VERBS), plural)
        f = links.new()
        obj_de, obj_en, _ = noun_phrase(rng, links, "dat")
        finite = (v["de"], f)
        en += [(v["en"], f)] + obj_en
        de_mid = obj_de
    elif form == "perfect":
        verbs = TRANSITIVE + INTRANSITIVE
        v = verb_forms(rng.choice(verbs), plural)
        aux, part = links.new(), links.new()
        finite = (v["aux"], aux)
        en += [(v["en_aux"], aux), (v["en_participle"], part)]
        if v["inf"] in [t[0] for t in TRANSITIVE]:
            obj_de, obj_en, _ = noun_phrase(rng, links, "acc")
            de_mid, en = obj_de, en + obj_en
        de_end = [(v["participle"], part)]
    elif form == "modal":
        modal, modal_pl, en_modal = rng.choice(MODALS)
        v = verb_forms(rng.choice(TRANSITIVE), plural)
        m, inf = links.new(), links.new()
        finite = (modal_pl if plural else modal, m)
        obj_de, obj_en, _ = noun_phrase(rng, links, "acc")
        en += [(en_modal, m), (v["en_base"], inf)] + obj_en
        de_mid, de_end = obj_de, [(v["inf"], inf)]
    elif form == "separable":
        prefix, inf, third, transitive, en_base, en_third = rng.choice(SEPARABLE)
        f = links.new()
        stem_pl = inf[len(prefix):]
        finite = (stem_pl if plural else third, f)
        en.append((en_base if plural else en_third, f))
        if transitive:
            obj_de, obj_en, _ = noun_phrase(rng, links, "acc")
            de_mid, en = obj_de, en + obj_en
        if subordinate:  # verb-final: the prefix joins the verb again ("ankommt")
            finite = (prefix + finite[0], f)
        else:
            de_end = [(prefix, f)]
    else:
        raise ValueError(form)
    if subordinate:
        de = de_front + de_mid + de_end + [finite]
    else:
        de = de_front + [finite] + de_mid + de_end
    return de, en, form, plural


def sentence(rng, kind, held_out_ok):
    """One pair of aligned token lists for a sentence kind."""
    links = Links()
    if kind == "simple":
        de, en, _, _ = clause(rng, links, subordinate=False)
    elif kind == "v2":  # a fronted adverb: the finite verb stays second, the subject follows it
        adv_de, adv_en = rng.choice(ADVERBS)
        a = links.new()
        body_de, body_en, _, _ = clause(rng, links, subordinate=False,
                                        form=rng.choice(["intransitive", "transitive", "perfect", "modal"]))
        # split the main clause at its finite verb: [subject ...] [finite] [rest]
        finite_at = first_finite(body_de)
        de = [(adv_de, a), body_de[finite_at]] + body_de[:finite_at] + body_de[finite_at + 1:]
        en = [(adv_en, a)] + body_en
    elif kind == "question":
        body_de, body_en, form, plural = clause(rng, links, subordinate=False, form=rng.choice(["intransitive", "transitive"]))
        finite_at = first_finite(body_de)
        de = [body_de[finite_at]] + body_de[:finite_at] + body_de[finite_at + 1:]
        # English: does + subject + base form
        verb_at = next(i for i, (w, l) in enumerate(body_en) if l == body_de[finite_at][1])
        base = [t for t in INTRANSITIVE + TRANSITIVE if t[5] == body_en[verb_at][0] or t[4] == body_en[verb_at][0]][0][4]
        en = [("do" if plural else "does", None)] + body_en[:verb_at] + [(base, body_en[verb_at][1])] + body_en[verb_at + 1:]
        return finish(de, en, "?")
    elif kind in ("subordinate", "long"):
        first_conj = rng.choice(CONJUNCTIONS)
        if first_conj[0] == "dass":  # dass needs a main verb of saying or knowing: "weiß, dass ..."
            subj_de, subj_en, plural = noun_phrase(rng, links, "nom")
            say, say_pl, en_say, en_say_pl = rng.choice(MAIN_FOR_DASS)
            f = links.new()
            de, en = subj_de + [(say_pl if plural else say, f)], subj_en + [(en_say_pl if plural else en_say, f)]
        else:
            main_de, main_en, _, _ = clause(rng, links, subordinate=False, form=rng.choice(["intransitive", "transitive"]))
            de, en = list(main_de), list(main_en)
        for k in range(2 if kind == "long" else 1):
            conj_de, conj_en = first_conj if k == 0 else rng.choice([c for c in CONJUNCTIONS if c[0] != "dass"])
            subject = None
            if not held_out_ok:
                while subject is None or subject[1] == HELD_OUT_SUBORDINATE_SUBJECT:
                    subject = rng.choice(ANIMATE)
            c = links.new()
            sub_de, sub_en, _, _ = clause(rng, links, subordinate=True, subject=subject)
            de += [(",", None), (conj_de, c)] + sub_de
            en += [(conj_en, c)] + sub_en
    elif kind == "combo":  # what training never shows
        if rng.random() < 0.5:
            main_de, main_en, _, _ = clause(rng, links, subordinate=False, form="intransitive")
            conj_de, conj_en = rng.choice([c for c in CONJUNCTIONS if c[0] != "dass"])
            c = links.new()
            horse = next(n for n in ANIMATE if n[1] == HELD_OUT_SUBORDINATE_SUBJECT)
            sub_de, sub_en, _, _ = clause(rng, links, subordinate=True, subject=horse)
            de = main_de + [(",", None), (conj_de, c)] + sub_de
            en = main_en + [(conj_en, c)] + sub_en
        else:
            cat = next(n for n in ANIMATE if n[1] == HELD_OUT_ADJECTIVE_NOUN[1])
            black = next(a for a in ADJECTIVES if a[0] == HELD_OUT_ADJECTIVE_NOUN[0])
            subj_de, subj_en, plural = noun_phrase(rng, links, "nom", noun=cat, adjective=black)
            v = verb_forms(rng.choice(INTRANSITIVE), plural)
            f = links.new()
            de = subj_de + [(v["de"], f)]
            en = subj_en + [(v["en"], f)]
    else:
        raise ValueError(kind)
    return finish(de, en, ".")


def first_finite(main_clause_de):
    """The index of the finite verb of a main clause: the first word after the subject noun."""
    nouns = {n[1] for n in ANIMATE} | {n[2] for n in ANIMATE}
    for i, (w, _) in enumerate(main_clause_de):
        if w in nouns:
            return i + 1
    raise ValueError(main_clause_de)


def finish(de, en, mark):
    de = de + [(mark, "end")]
    en = en + [(mark, "end")]
    return de, en


def render(tokens):
    """Tokens -> a sentence: the first letter capitalised, punctuation glued to the word before it."""
    text = ""
    for i, (w, _) in enumerate(tokens):
        if i == 0:
            w = w[0].upper() + w[1:]
        text += w if (i == 0 or w in ",.?") else " " + w
    return text


def alignment(de, en):
    links = []
    for i, (_, a) in enumerate(de):
        for j, (_, b) in enumerate(en):
            if a is not None and a == b:
                links.append(f"{i}-{j}")
    return " ".join(links)


def line_of(pair):
    de, en = pair
    return f"{render(de)}\t{render(en)}\t{alignment(de, en)}"


def has_held_out_combination(de):
    words = [w for w, _ in de]
    black_cat = any(w.startswith("schwarz") for w in words) and any(w in ("Katze", "Katzen") for w in words) and \
        any(words[i].startswith("schwarz") and words[i + 1] in ("Katze", "Katzen") for i in range(len(words) - 1))
    return black_cat


def build(seed):
    rng = random.Random(seed)
    kinds = ["simple"] * 4 + ["v2"] * 2 + ["question"] * 2 + ["subordinate"] * 3
    seen, pairs = set(), []
    while len(pairs) < 22000:
        pair = sentence(rng, rng.choice(kinds), held_out_ok=False)
        if has_held_out_combination(pair[0]):
            continue
        german = render(pair[0])
        if german in seen:
            continue
        seen.add(german)
        pairs.append(pair)
    train, valid, test = pairs[:20000], pairs[20000:21000], pairs[21000:22000]
    longest = max(len(de) for de, _ in train)
    long_pairs, combo = [], []
    while len(long_pairs) < 300:
        pair = sentence(rng, "long", held_out_ok=False)
        german = render(pair[0])
        if len(pair[0]) > longest and german not in seen and not has_held_out_combination(pair[0]):
            seen.add(german)
            long_pairs.append(pair)
    while len(combo) < 300:
        pair = sentence(rng, "combo", held_out_ok=True)
        german = render(pair[0])
        if german not in seen:
            seen.add(german)
            combo.append(pair)
    return {"train": train, "valid": valid, "test": test, "gen_long": long_pairs, "gen_combo": combo}


def write(out_dir, splits):
    os.makedirs(out_dir, exist_ok=True)
    for name, pairs in splits.items():
        with open(os.path.join(out_dir, name + ".tsv"), "w", encoding="utf-8", newline="\n") as f:
            for pair in pairs:
                f.write(line_of(pair) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=os.path.join("datasets", "grammar-de-en"))
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--check", action="store_true", help="build into a temporary folder and compare with --out")
    a = ap.parse_args()
    splits = build(a.seed)
    if not a.check:
        write(a.out, splits)
        print("grammar-de-en: " + ", ".join(f"{k} {len(v)}" for k, v in splits.items()) + f" pairs in {a.out}")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        write(tmp, splits)
        differ = [n for n in splits if not filecmp.cmp(os.path.join(tmp, n + ".tsv"), os.path.join(a.out, n + ".tsv"),
                                                      shallow=False)]
    if differ:
        print("grammar-de-en: differs from a fresh build: " + ", ".join(differ))
        return 1
    print("grammar-de-en: the committed splits equal a fresh build")
    return 0


if __name__ == "__main__":
    sys.exit(main())
