#!/usr/bin/python3
"""PyTorch twin of `headlab train --task translate` (German -> English).

(Over 500 lines on purpose: the twin is one script, with only the torch-free bench/words.py and
bench/bpe.py beside it, so that it runs with nothing but /usr/bin/python3 and Debian's torch, and
reads as one program next to the C++ side.)

The same data pipeline, model, loss, optimiser, schedule, evaluation and decoding as the C++ side,
written with torch.nn so that the two can be compared step for step and second for second
(bench/compare_translate.py runs both). Everything here follows the shared specification:

  data        two-column TSV `german<TAB>english`, UTF-8
  tokens      ASCII + Latin-1 upper-case -> lower-case, split on whitespace, punctuation split off
              (an apostrophe or hyphen between two word characters stays in the word; bench/words.py);
              with --tokenizer-from RUN, those words cut into the BPE pieces of a headlab run
              (its merges bpe.{source,target}.txt; bench/bpe.py)
  vocabulary  per side from the train split: <pad> <s> </s> <unk>, then tokens with count >= min_freq
              by count descending, then token ascending (UTF-8 byte order); with --tokenizer-from,
              the run's vocab.{source,target}.txt (the same ids as headlab's)
  batches     sorted by (len src, len tgt, line), filled while n * max(longest src, longest tgt) <= max_tokens,
              visited in a shuffled order every epoch
  model       post-LN nn.Transformer, d_model 128, 8 heads, ff 512, 2 + 2 layers, dropout 0.1,
              scaled embeddings + sinusoidal positions, generator Linear(d_model, V_tgt)
  training    cross-entropy with label smoothing 0.1 (pad ignored), Adam (0.9, 0.98, 1e-9),
              Noam schedule, gradient clipping at norm 1.0
  evaluation  valid NLL (no smoothing) and greedy valid BLEU every --eval-every steps and at the end;
              the best-BLEU weights are kept; at the end test BLEU and chrF with greedy and beam
              decoding. BLEU and chrF are on words: BPE pieces are joined back first (bpe.decode)

--time-budget counts training steps only: the clock stops during evaluation.

Run (one thread, as the C++ side):
  OPENBLAS_NUM_THREADS=1 /usr/bin/python3 bench/translate_twin.py \
      --train datasets/de-en/small/train.tsv --valid datasets/de-en/small/valid.tsv \
      --test datasets/de-en/small/test.tsv --time-budget 600 --out runs/twin
"""
import os

# One thread everywhere; must be set before numpy/torch load OpenBLAS / OpenMP.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse
import copy
import json
import math
import random
import resource
import statistics
import sys
import time
import warnings

import torch

warnings.filterwarnings("ignore", message="The PyTorch API of nested tensors")
import torch.nn as nn
import torch.nn.functional as F
from nltk.translate.bleu_score import corpus_bleu

# Beside this script (its folder is on sys.path), neither imports torch:
import bpe                   # subword pieces from a headlab run's merges (--tokenizer-from)
from words import tokenize   # headlab's word rule: lower-case, split on whitespace, punctuation apart

PAD, BOS, EOS, UNK = 0, 1, 2, 3
SPECIALS = ["<pad>", "<s>", "</s>", "<unk>"]

# ===========================================================================
# Data: vocabulary, encoding, batches
# ===========================================================================


def read_tsv(path):
    """[(german, english)] from a two-column TSV (UTF-8, an optional byte-order mark, LF or CRLF).
    Each side is stripped of surrounding whitespace; a line must hold exactly one tab."""
    pairs = []
    with open(path, encoding="utf-8-sig", newline="\n") as f:
        for lineno, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if line.endswith("\r"):
                line = line[:-1]
            cols = line.split("\t")
            if len(cols) != 2:
                raise SystemExit(f"{path}:{lineno}: expected german<TAB>english (exactly one tab)")
            de, en = cols[0].strip(" \t\n\v\f\r"), cols[1].strip(" \t\n\v\f\r")
            if not de or not en:
                raise SystemExit(f"{path}:{lineno}: empty side")
            pairs.append((de, en))
    return pairs


class Vocab:
    """Token <-> id: itos[id] is the token; the first four are SPECIALS."""

    def __init__(self, itos):
        self.itos = list(itos)
        self.stoi = {t: i for i, t in enumerate(self.itos)}

    @classmethod
    def build(cls, token_lists, min_freq):
        counts = {}
        for tokens in token_lists:
            for t in tokens:
                counts[t] = counts.get(t, 0) + 1
        kept = [t for t, c in counts.items() if c >= min_freq and t not in SPECIALS]
        kept.sort(key=lambda t: (-counts[t], t.encode("utf-8")))  # count desc, then UTF-8 bytes asc
        return cls(SPECIALS + kept)

    def __len__(self):
        return len(self.itos)

    def ids(self, tokens):
        return [self.stoi.get(t, UNK) for t in tokens]


class Tokenizer:
    """How a sentence becomes tokens: headlab's words (the default), or with --tokenizer-from RUN the
    BPE pieces of a headlab run (its merges and vocabularies, bench/bpe.py), so that both sides train
    on the same subword ids. BLEU and chrF are on words either way: words() turns target tokens back."""

    def __init__(self, run_dir=None):
        self.run_dir = run_dir
        self.vocabs = None  # (source, target) Vocab when they come from the run
        if run_dir is None:
            return
        path = lambda name: os.path.join(run_dir, name)
        try:
            self.ranks = (bpe.ranks_of(bpe.read_merges(path("bpe.source.txt"))),
                          bpe.ranks_of(bpe.read_merges(path("bpe.target.txt"))))
            self.vocabs = (Vocab(bpe.read_vocab(path("vocab.source.txt"))),
                           Vocab(bpe.read_vocab(path("vocab.target.txt"))))
        except bpe.BpeFileError as e:
            raise SystemExit(f"--tokenizer-from {run_dir}: {e}")

    def source(self, text):
        return tokenize(text) if self.run_dir is None else bpe.encode_sentence(text, self.ranks[0])

    def target(self, text):
        return tokenize(text) if self.run_dir is None else bpe.encode_sentence(text, self.ranks[1])

    def words(self, target_tokens):
        return target_tokens if self.run_dir is None else bpe.decode(target_tokens)

    def describe(self):
        if self.run_dir is None:
            return "words"
        return (f"BPE pieces of {self.run_dir} ({len(self.ranks[0])} + {len(self.ranks[1])} merges, "
                f"vocabularies {len(self.vocabs[0])} + {len(self.vocabs[1])})")


class Split:
    """One TSV file, tokenized and encoded. src = ids + [</s>]; tgt = [<s>] + ids + [</s>];
    tgt_words = the reference's words (for BLEU and chrF, whatever the tokens are)."""

    def __init__(self, pairs, src_vocab, tgt_vocab, tokenizer):
        self.raw = pairs
        self.src_tokens = [tokenizer.source(de) for de, _ in pairs]
        self.tgt_tokens = [tokenizer.target(en) for _, en in pairs]
        self.tgt_words = [tokenize(en) for _, en in pairs]
        self.src = [src_vocab.ids(t) + [EOS] for t in self.src_tokens]
        self.tgt = [[BOS] + tgt_vocab.ids(t) + [EOS] for t in self.tgt_tokens]

    def __len__(self):
        return len(self.raw)


def pad_rows(rows):
    """list of id lists -> (B, max len) int64, padded with 0 on the right."""
    out = torch.zeros(len(rows), max(len(r) for r in rows), dtype=torch.long)
    for i, r in enumerate(rows):
        out[i, : len(r)] = torch.tensor(r, dtype=torch.long)
    return out


def token_budget_batches(indices, src, tgt, max_tokens):
    """Sort by (len src, len tgt, index) and cut into batches with n * max(longest src, longest tgt)
    <= max_tokens (counting the pair being added). Returns lists of indices, rows in sorted order."""
    order = sorted(indices, key=lambda i: (len(src[i]), len(tgt[i]), i))
    batches, cur, longest = [], [], 0
    for i in order:
        new_longest = max(longest, len(src[i]), len(tgt[i]))
        if cur and (len(cur) + 1) * new_longest > max_tokens:
            batches.append(cur)
            cur, new_longest = [], max(len(src[i]), len(tgt[i]))
        cur.append(i)
        longest = new_longest
    if cur:
        batches.append(cur)
    return batches


def make_batch(split, idx):
    """-> src (B, S), tgt_in (B, T-1), tgt_out (B, T-1), all int64 padded with 0."""
    src = pad_rows([split.src[i] for i in idx])
    tgt = pad_rows([split.tgt[i] for i in idx])
    return src, tgt[:, :-1], tgt[:, 1:]


# ===========================================================================
# Model
# ===========================================================================


class PositionalEncoding(nn.Module):
    """x (B, T, D) -> dropout(x + PE[:T]); PE(pos, 2i) = sin(pos / 10000^(2i/D)), PE(pos, 2i+1) = cos(...)."""

    def __init__(self, d_model, dropout, max_len=1024):
        super().__init__()
        self.d_model = d_model
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("pe", self._table(max_len), persistent=False)

    def _table(self, length):
        pos = torch.arange(length, dtype=torch.float64).unsqueeze(1)                   # (L, 1)
        div = torch.pow(10000.0, torch.arange(0, self.d_model, 2, dtype=torch.float64) / self.d_model)  # (D/2,)
        pe = torch.zeros(length, self.d_model, dtype=torch.float64)
        pe[:, 0::2] = torch.sin(pos / div)
        pe[:, 1::2] = torch.cos(pos / div)
        return pe.float()                                                               # (L, D)

    def forward(self, x):
        T = x.size(1)
        if T > self.pe.size(0):  # grow on demand (long test sentences)
            self.pe = self._table(2 * T).to(x.device)
        return self.dropout(x + self.pe[:T])


class Translator(nn.Module):
    def __init__(self, v_src, v_tgt, d_model=128, nhead=8, ff=512, layers=2, dropout=0.1, pre_ln=False):
        super().__init__()
        self.d_model = d_model
        self.src_embed = nn.Embedding(v_src, d_model)
        self.tgt_embed = nn.Embedding(v_tgt, d_model)
        self.pos = PositionalEncoding(d_model, dropout)
        # Post-LN (or pre-LN with --pre-ln), ReLU; both stacks end with their own LayerNorm
        # (nn.Transformer builds them), as headlab's do.
        self.transformer = nn.Transformer(
            d_model=d_model, nhead=nhead, num_encoder_layers=layers, num_decoder_layers=layers,
            dim_feedforward=ff, dropout=dropout, activation="relu", batch_first=True, norm_first=pre_ln)
        self.generator = nn.Linear(d_model, v_tgt)
        # Xavier-uniform on every matrix (embeddings included); 1-D parameters keep their defaults.
        for p in self.parameters():
            if p.dim() > 1:
                nn.init.xavier_uniform_(p)

    def encode(self, src):
        """src (B, S) -> memory (B, S, D), src_pad (B, S) bool (true = pad)."""
        src_pad = src.eq(PAD)
        x = self.pos(self.src_embed(src) * math.sqrt(self.d_model))                     # (B, S, D)
        return self.transformer.encoder(x, src_key_padding_mask=src_pad), src_pad

    def decode(self, tgt_in, memory, src_pad):
        """tgt_in (B, T), memory (B, S, D) -> logits (B, T, V_tgt)."""
        T = tgt_in.size(1)
        causal = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)             # (T, T) true = future
        y = self.pos(self.tgt_embed(tgt_in) * math.sqrt(self.d_model))                  # (B, T, D)
        h = self.transformer.decoder(y, memory, tgt_mask=causal, tgt_key_padding_mask=tgt_in.eq(PAD),
                                     memory_key_padding_mask=src_pad)                   # (B, T, D)
        return self.generator(h)

    def forward(self, src, tgt_in):
        memory, src_pad = self.encode(src)
        return self.decode(tgt_in, memory, src_pad)


def noam_lr(step, d_model, factor, warmup):
    """step counts from 1."""
    return factor * d_model ** -0.5 * min(step ** -0.5, step * warmup ** -1.5)


# ===========================================================================
# Decoding
# ===========================================================================


@torch.no_grad()
def greedy_decode(model, src_rows, batch_size=64):
    """src_rows: list of id lists (each ends with </s>). Returns generated id lists (</s> excluded).
    Each sentence stops at </s> or after len(src) + 10 generated tokens."""
    model.eval()
    out = [None] * len(src_rows)
    order = sorted(range(len(src_rows)), key=lambda i: len(src_rows[i]))  # similar lengths together
    for b in range(0, len(order), batch_size):
        idx = order[b: b + batch_size]
        src = pad_rows([src_rows[i] for i in idx])                                     # (B, S)
        memory, src_pad = model.encode(src)                                             # (B, S, D)
        caps = torch.tensor([len(src_rows[i]) + 10 for i in idx])                       # (B,)
        ys = torch.full((len(idx), 1), BOS, dtype=torch.long)                           # (B, 1)
        done = torch.zeros(len(idx), dtype=torch.bool)
        for t in range(int(caps.max())):
            logits = model.decode(ys, memory, src_pad)[:, -1]                           # (B, V)
            nxt = logits.argmax(dim=-1)                                                 # first maximum on ties
            nxt = torch.where(done, torch.full_like(nxt, PAD), nxt)
            ys = torch.cat([ys, nxt.unsqueeze(1)], dim=1)                               # (B, t + 2)
            done |= nxt.eq(EOS) | (t + 1 >= caps)
            if bool(done.all()):
                break
        for r, i in enumerate(idx):
            seq = []
            for tok in ys[r, 1:].tolist():
                if tok in (EOS, PAD):
                    break
                seq.append(tok)
            out[i] = seq[: len(src_rows[i]) + 10]
    return out


@torch.no_grad()
def beam_decode(model, src_rows, beam=4, alpha=0.6, batch_size=16):
    """Beam search with the GNMT length penalty lp(n) = ((5 + n) / 6)^alpha, n = generated tokens
    (including </s>). Sentences are batched: row b * K + k of the decoder input is beam k of sentence b.
    Returns the generated id lists (</s> excluded)."""
    model.eval()
    K = beam
    lp = lambda n: ((5.0 + n) / 6.0) ** alpha
    out = [None] * len(src_rows)
    order = sorted(range(len(src_rows)), key=lambda i: len(src_rows[i]))
    for b0 in range(0, len(order), batch_size):
        idx = order[b0: b0 + batch_size]
        B = len(idx)
        src = pad_rows([src_rows[i] for i in idx])                                     # (B, S)
        memory, src_pad = model.encode(src)                                             # (B, S, D)
        memory = memory.repeat_interleave(K, dim=0)                                     # (B K, S, D)
        src_pad = src_pad.repeat_interleave(K, dim=0)                                   # (B K, S)
        caps = [len(src_rows[i]) + 10 for i in idx]
        # Per sentence: K active beams (token lists without <s>) and raw log-probability sums.
        beams = [[[] for _ in range(K)] for _ in range(B)]
        scores = torch.full((B, K), -math.inf, dtype=torch.float64)
        scores[:, 0] = 0.0                                                              # only beam 0 live at step 0
        finished = [[] for _ in range(B)]                                               # (normalised score, tokens)
        active = [True] * B
        t = 0
        while any(active):
            live = [b for b in range(B) if active[b]]                                   # sentences still searching
            rows = torch.tensor([b * K + k for b in live for k in range(K)])            # (L K,)
            ys = torch.tensor([[BOS] + beams[b][k] for b in live for k in range(K)], dtype=torch.long)  # (L K, t+1)
            logits = model.decode(ys, memory[rows], src_pad[rows])[:, -1]               # (L K, V)
            V = logits.size(1)
            logp = F.log_softmax(logits.double(), dim=-1).view(len(live), K, V)         # (L, K, V) in float64
            cand = (scores[live].unsqueeze(2) + logp).view(len(live), K * V)            # (L, K V) raw sums
            # Top 2K by score; ties -> lower flat index (= lower beam, then lower token). topk does not
            # order ties, so take everything >= the 2K-th value and sort it exactly.
            kth = cand.topk(2 * K, dim=1).values[:, -1]                                 # (L,)
            t += 1
            for r, b in enumerate(live):
                row = cand[r]                                                           # (K V,)
                pos = torch.nonzero(row >= kth[r], as_tuple=False).view(-1).tolist()
                vals = row[pos].tolist()
                ranked = sorted(zip(vals, pos), key=lambda vp: (-vp[0], vp[1]))[: 2 * K]
                new_beams, new_scores = [], []
                for rank, (v, p) in enumerate(ranked):
                    if v == -math.inf:
                        break
                    k, tok = divmod(p, V)
                    if tok == EOS:
                        if rank < K:  # n = generated tokens including </s>
                            finished[b].append((v / lp(len(beams[b][k]) + 1), beams[b][k]))
                    elif len(new_beams) < K:
                        new_beams.append(beams[b][k] + [tok])
                        new_scores.append(v)
                while len(new_beams) < K:  # only with a tiny vocabulary: dead filler beams
                    new_beams.append(list(new_beams[0]) if new_beams else [PAD] * t)
                    new_scores.append(-math.inf)
                beams[b] = new_beams
                scores[b] = torch.tensor(new_scores, dtype=torch.float64)
                # Done when no live beam can beat the best finished hypothesis: log p only falls
                # and lp grows with length, so best live / lp(cap) bounds what it can become.
                best_live = max(new_scores)
                best_done = max((h[0] for h in finished[b]), default=-math.inf)
                if best_live == -math.inf or (finished[b] and best_live / lp(caps[b]) <= best_done):
                    active[b] = False
                elif t >= caps[b]:  # length cap: the active beams finish as they are (n = their length)
                    for seq, v in zip(new_beams, new_scores):
                        if v != -math.inf:
                            finished[b].append((v / lp(len(seq)), seq))
                    active[b] = False
        for b, i in enumerate(idx):
            best = finished[b][0]
            for h in finished[b][1:]:
                if h[0] > best[0]:  # strictly greater: ties keep the earliest finished
                    best = h
            out[i] = best[1]
    return out


def to_strings(ids, vocab):
    return [vocab.itos[i] for i in ids]


def bleu(hyps, refs):
    """corpus BLEU x100 (nltk, default weights, no smoothing) on word lists."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return 100.0 * corpus_bleu([[r] for r in refs], hyps)


def chrf(hyps, refs):
    """corpus chrF x100 (nltk's corpus_chrf: character 1- to 6-grams, beta 3, spaces ignored, the mean
    of the sentence scores) on the same word lists as BLEU; None where this nltk has no chrf_score."""
    try:
        from nltk.translate.chrf_score import corpus_chrf
    except ImportError:
        return None
    return 100.0 * corpus_chrf(refs, hyps)


@torch.no_grad()
def valid_loss(model, batches):
    """Mean token NLL (no label smoothing) over every target token; dropout off."""
    model.eval()
    total, count = 0.0, 0
    for src, tgt_in, tgt_out in batches:
        logits = model(src, tgt_in)                                                     # (B, T, V)
        total += F.cross_entropy(logits.reshape(-1, logits.size(-1)), tgt_out.reshape(-1),
                                 ignore_index=PAD, reduction="sum").item()
        count += int(tgt_out.ne(PAD).sum())
    return total / max(count, 1)


# ===========================================================================
# Main
# ===========================================================================


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--train", required=True)
    ap.add_argument("--valid", required=True)
    ap.add_argument("--test", required=True)
    ap.add_argument("--time-budget", type=float, default=600.0, help="seconds of training steps (evaluation excluded)")
    ap.add_argument("--steps", type=int, default=10**9, help="at most this many steps")
    ap.add_argument("--eval-every", type=int, default=200)
    ap.add_argument("--max-tokens", type=int, default=1024)
    ap.add_argument("--max-len", type=int, default=64)
    ap.add_argument("--min-freq", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--lr-factor", type=float, default=1.0)
    ap.add_argument("--warmup", type=int, default=400)
    # The model and loss (headlab's option names; compare_translate.py passes the headlab run's values).
    ap.add_argument("--d-model", type=int, default=128)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--ff", type=int, default=512)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--dropout", type=float, default=0.1)
    ap.add_argument("--label-smoothing", type=float, default=0.1)
    ap.add_argument("--pre-ln", action="store_true", help="pre-LN layers (norm_first) instead of post-LN")
    ap.add_argument("--beam", type=int, default=4)
    ap.add_argument("--length-penalty", type=float, default=0.6)
    ap.add_argument("--eval-sentences", type=int, default=0, help="valid sentences for the periodic BLEU (0 = all)")
    ap.add_argument("--tokenizer-from", metavar="RUN_DIR",
                    help="train on the BPE pieces of this headlab run (its bpe.{source,target}.txt and "
                         "vocab.{source,target}.txt) instead of words; BLEU and chrF stay on words")
    ap.add_argument("--out", default="runs/twin")
    ap.add_argument("--quiet", action="store_true")
    a = ap.parse_args()

    torch.set_num_threads(1)
    torch.set_num_interop_threads(1)
    torch.manual_seed(a.seed)           # initialisation and dropout
    data_rng = random.Random(a.seed)    # the epoch shuffles
    os.makedirs(a.out, exist_ok=True)
    log = (lambda *s: None) if a.quiet else (lambda *s: print(*s, flush=True))

    # ---- data
    t_load = time.perf_counter()
    train_pairs, valid_pairs, test_pairs = read_tsv(a.train), read_tsv(a.valid), read_tsv(a.test)
    tokenizer = Tokenizer(a.tokenizer_from)
    if tokenizer.vocabs is not None:  # the run's vocabularies: the same ids as headlab's
        src_vocab, tgt_vocab = tokenizer.vocabs
    else:
        src_vocab = Vocab.build((tokenize(de) for de, _ in train_pairs), a.min_freq)
        tgt_vocab = Vocab.build((tokenize(en) for _, en in train_pairs), a.min_freq)
    train, valid, test = (Split(p, src_vocab, tgt_vocab, tokenizer) for p in (train_pairs, valid_pairs, test_pairs))
    keep = [i for i in range(len(train)) if len(train.src[i]) <= a.max_len and len(train.tgt[i]) <= a.max_len]
    train_batches = [make_batch(train, idx) for idx in token_budget_batches(keep, train.src, train.tgt, a.max_tokens)]
    valid_batches = [make_batch(valid, idx)
                     for idx in token_budget_batches(range(len(valid)), valid.src, valid.tgt, a.max_tokens)]
    if not train_batches:
        raise SystemExit(f"{a.train}: no training pair fits --max-len {a.max_len}")
    n_bleu = len(valid) if a.eval_sentences <= 0 else min(a.eval_sentences, len(valid))
    log(f"data: train {len(train)} pairs ({len(train) - len(keep)} longer than {a.max_len} skipped, "
        f"{len(train_batches)} batches), valid {len(valid)}, test {len(test)}; vocab de {len(src_vocab)}, "
        f"en {len(tgt_vocab)}; tokens: {tokenizer.describe()} ({time.perf_counter() - t_load:.1f} s)")

    # ---- model and optimiser
    model = Translator(len(src_vocab), len(tgt_vocab), d_model=a.d_model, nhead=a.heads, ff=a.ff, layers=a.layers,
                       dropout=a.dropout, pre_ln=a.pre_ln)
    n_params = sum(p.numel() for p in model.parameters())
    log(f"model: {'pre' if a.pre_ln else 'post'}-LN transformer d_model {a.d_model}, {a.heads} heads, ff {a.ff}, "
        f"{a.layers}+{a.layers} layers, dropout {a.dropout}, {n_params} parameters")
    opt = torch.optim.Adam(model.parameters(), lr=0.0, betas=(0.9, 0.98), eps=1e-9)

    metrics = open(os.path.join(a.out, "metrics.jsonl"), "w")

    def write(row):
        metrics.write(json.dumps(row) + "\n")
        metrics.flush()

    curve, best = [], None   # best = (bleu, loss, state_dict)

    def evaluate(step, seconds):
        nonlocal best
        t0 = time.perf_counter()
        loss = valid_loss(model, valid_batches)
        hyps = greedy_decode(model, valid.src[:n_bleu])
        b = bleu([tokenizer.words(to_strings(h, tgt_vocab)) for h in hyps], valid.tgt_words[:n_bleu])
        curve.append({"seconds": seconds, "step": step, "valid_loss": loss, "valid_bleu": b})
        write({"step": step, "seconds": seconds, "valid_loss": loss, "valid_bleu": b})
        # Best = highest BLEU; equal BLEU (early on, all 0) falls back to the lower validation loss.
        if best is None or b > best[0] or (b == best[0] and loss < best[1]):
            best = (b, loss, copy.deepcopy(model.state_dict()))
        log(f"step {step:6d}  train {seconds:7.1f} s  valid loss {loss:.4f}  valid BLEU {b:6.2f}  "
            f"(eval {time.perf_counter() - t0:.1f} s)")

    # ---- training: the clock runs only around steps
    step, train_seconds, step_times, order, cpu_seconds = 0, 0.0, [], [], 0.0
    while step < a.steps and train_seconds < a.time_budget:
        if not order:
            order = list(range(len(train_batches)))
            data_rng.shuffle(order)
        src, tgt_in, tgt_out = train_batches[order.pop()]
        t0, c0 = time.perf_counter(), time.process_time()
        model.train()
        logits = model(src, tgt_in)                                                     # (B, T, V)
        loss = F.cross_entropy(logits.view(-1, logits.size(-1)), tgt_out.reshape(-1),
                               ignore_index=PAD, label_smoothing=a.label_smoothing)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        lr = noam_lr(step + 1, model.d_model, a.lr_factor, a.warmup)
        for g in opt.param_groups:
            g["lr"] = lr
        opt.step()
        loss_value = loss.item()
        dt = time.perf_counter() - t0
        cpu_seconds += time.process_time() - c0  # diagnostic only: wall time is what counts
        step += 1
        train_seconds += dt
        step_times.append(dt)
        tokens = int(tgt_out.ne(PAD).sum())
        write({"step": step, "seconds": train_seconds, "loss": loss_value, "lr": lr, "tokens_per_s": tokens / dt})
        if not math.isfinite(loss_value):
            raise SystemExit(f"the loss became {loss_value} at step {step}")
        if step % a.eval_every == 0:
            evaluate(step, train_seconds)
        elif step % 50 == 0:
            log(f"step {step:6d}  train {train_seconds:7.1f} s  loss {loss_value:.4f}  lr {lr:.2e}")
    if not curve or curve[-1]["step"] != step:
        evaluate(step, train_seconds)

    # ---- test with the best-valid-BLEU weights
    best_bleu, best_loss, state = best
    model.load_state_dict(state)
    t0 = time.perf_counter()
    greedy = greedy_decode(model, test.src)
    beam = beam_decode(model, test.src, a.beam, a.length_penalty)
    greedy_s = [tokenizer.words(to_strings(h, tgt_vocab)) for h in greedy]   # words, BPE pieces joined
    beam_s = [tokenizer.words(to_strings(h, tgt_vocab)) for h in beam]
    test_greedy, test_beam = bleu(greedy_s, test.tgt_words), bleu(beam_s, test.tgt_words)
    chrf_greedy, chrf_beam = chrf(greedy_s, test.tgt_words), chrf(beam_s, test.tgt_words)
    chrf_line = ("chrF: skipped, this nltk has no nltk.translate.chrf_score" if chrf_beam is None
                 else f"chrF greedy {chrf_greedy:.2f}  beam {chrf_beam:.2f}")
    log(f"test BLEU greedy {test_greedy:.2f}  beam {test_beam:.2f}; {chrf_line}  ({time.perf_counter() - t0:.1f} s)")

    later = step_times[20:] or step_times
    summary = {
        "side": "pytorch",
        "steps": step,
        "train_seconds": train_seconds,
        "ms_per_step": 1000.0 * statistics.median(later),
        "valid_loss": best_loss,
        "valid_bleu": best_bleu,
        "test_bleu_greedy": test_greedy,
        "test_bleu_beam": test_beam,
        "test_chrf_greedy": chrf_greedy,   # None (null) where nltk has no chrf_score
        "test_chrf_beam": chrf_beam,
        "tokenizer": "word" if a.tokenizer_from is None else "bpe",
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0,
        "parameters": n_params,
        "curve": curve,
        "examples": [{"source": test.raw[i][0], "reference": test.raw[i][1],
                      "greedy": " ".join(greedy_s[i]), "beam": " ".join(beam_s[i])}
                     for i in range(min(3, len(test)))],
    }
    write({"test_bleu_greedy": test_greedy, "test_bleu_beam": test_beam,
           "test_chrf_greedy": chrf_greedy, "test_chrf_beam": chrf_beam})
    metrics.close()
    with open(os.path.join(a.out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1, ensure_ascii=False)
    log(f"steps {step}, {train_seconds:.1f} s of training, {summary['ms_per_step']:.1f} ms/step (median; "
        f"mean process CPU {1000 * cpu_seconds / max(step, 1):.1f} ms/step), "
        f"best valid BLEU {best_bleu:.2f}, peak RSS {summary['peak_rss_mb']:.0f} MB -> {a.out}/summary.json")


if __name__ == "__main__":
    main()
