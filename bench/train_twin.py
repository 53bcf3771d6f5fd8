#!/usr/bin/python3
"""PyTorch twin of bench_train_step (bench/train_step_bench.cpp): the same three models and step.

    /usr/bin/python3 bench/train_twin.py copy|translate|lm [steps] [warmup] [ftz] [threads=N] [seq=T]
    /usr/bin/python3 bench/train_twin.py baseline

prints one JSON line (side "pytorch"): median ms per step, parameters, peak RSS. The configurations
are the C++ file's, kept equal by hand:
  copy       nn.Transformer d 64, 4 heads, ff 256, 2+2 layers, vocabulary 20, length 10, batch 32
  translate  nn.Transformer d 128, 8 heads, ff 512, 2+2 layers, vocabulary 1000, length 20, batch 64
  lm         nn.TransformerEncoder (causal) d 256, 8 heads, ff 1024, 4 layers, vocabulary 1000, length 128, batch 16
Post-LN, ReLU, dropout 0, embeddings x sqrt(d) + sinusoidal positions, a final LayerNorm per stack,
Linear generator; cross-entropy, Adam (lr 1e-4), no clipping; one fixed random batch.
threads=N: torch.set_num_threads(N), and OPENBLAS_NUM_THREADS / OMP_NUM_THREADS = N (Debian's
PyTorch reaches OpenBLAS through libblas.so.3, which torch.set_num_threads does not limit).
seq=T: T input tokens per sequence (length T + 1) and batch 2048 // T, so B x T stays 2048.
baseline: the peak RSS of importing torch and one trivial backward, nothing else (the memory
every PyTorch process pays before a model exists).
"""
import os
import sys

_threads = next((a.split("=", 1)[1] for a in sys.argv[1:] if a.startswith("threads=")), "1")
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = _threads  # before torch loads OpenBLAS / OpenMP

import json
import math
import resource
import statistics
import time
import warnings

import torch

warnings.filterwarnings("ignore", message="The PyTorch API of nested tensors")
warnings.filterwarnings("ignore", message="enable_nested_tensor is True")
import torch.nn as nn
import torch.nn.functional as F

CONFIGS = {
    "copy": dict(decoder_only=False, d=64, heads=4, ff=256, layers=2, vocab=20, length=10, batch=32),
    "translate": dict(decoder_only=False, d=128, heads=8, ff=512, layers=2, vocab=1000, length=20, batch=64),
    "lm": dict(decoder_only=True, d=256, heads=8, ff=1024, layers=4, vocab=1000, length=128, batch=16),
}


def sinusoidal(length, d):
    pos = torch.arange(length, dtype=torch.float32).unsqueeze(1)
    div = torch.exp(torch.arange(0, d, 2, dtype=torch.float32) * (-math.log(10000.0) / d))
    pe = torch.zeros(length, d)
    pe[:, 0::2] = torch.sin(pos * div)
    pe[:, 1::2] = torch.cos(pos * div)
    return pe


class Seq2Seq(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.d = c["d"]
        self.src_embed = nn.Embedding(c["vocab"], c["d"])
        self.tgt_embed = nn.Embedding(c["vocab"], c["d"])
        self.register_buffer("pe", sinusoidal(c["length"], c["d"]))
        self.transformer = nn.Transformer(c["d"], c["heads"], c["layers"], c["layers"], c["ff"], dropout=0.0,
                                          batch_first=True)
        self.generator = nn.Linear(c["d"], c["vocab"])

    def embed(self, table, ids):
        return table(ids) * math.sqrt(self.d) + self.pe[: ids.shape[1]]

    def forward(self, src, tgt_in):
        mask = self.transformer.generate_square_subsequent_mask(tgt_in.shape[1])
        h = self.transformer(self.embed(self.src_embed, src), self.embed(self.tgt_embed, tgt_in), tgt_mask=mask)
        return self.generator(h)


class DecoderOnly(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.d = c["d"]
        self.embed = nn.Embedding(c["vocab"], c["d"])
        self.register_buffer("pe", sinusoidal(c["length"], c["d"]))
        layer = nn.TransformerEncoderLayer(c["d"], c["heads"], c["ff"], dropout=0.0, batch_first=True)
        self.layers = nn.TransformerEncoder(layer, c["layers"], norm=nn.LayerNorm(c["d"]))
        self.lm_head = nn.Linear(c["d"], c["vocab"])

    def forward(self, ids):
        T = ids.shape[1]
        mask = torch.triu(torch.full((T, T), float("-inf")), diagonal=1)
        x = self.embed(ids) * math.sqrt(self.d) + self.pe[:T]
        return self.lm_head(self.layers(x, mask=mask))


def main():
    args = sys.argv[1:]
    threads = int(_threads)
    torch.set_num_threads(threads)
    torch.manual_seed(1)
    if args and args[0] == "baseline":
        x = torch.ones(4, requires_grad=True)
        (x * 2).sum().backward()
        print(json.dumps({"side": "pytorch", "config": "baseline",
                          "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0}))
        return
    name = args[0]
    plain = [a for a in args[1:] if "=" not in a and a != "ftz"]
    steps = int(plain[0]) if len(plain) > 0 else 20
    warmup = int(plain[1]) if len(plain) > 1 else 3
    ftz = "ftz" in args[1:]  # as bench_train_step's ftz: subnormal floats read and written as 0
    seq = next((int(a.split("=", 1)[1]) for a in args[1:] if a.startswith("seq=")), 0)
    torch.set_flush_denormal(ftz)
    c = dict(CONFIGS[name])
    if seq:
        c["length"], c["batch"] = seq + 1, max(1, 2048 // seq)
    model = DecoderOnly(c) if c["decoder_only"] else Seq2Seq(c)
    model.train()
    opt = torch.optim.Adam(model.parameters(), lr=1e-4)
    src = torch.randint(1, c["vocab"], (c["batch"], c["length"]))
    tgt = torch.randint(1, c["vocab"], (c["batch"], c["length"]))
    inputs, labels = tgt[:, :-1], tgt[:, 1:].reshape(-1)
    times = []
    for s in range(warmup + steps):
        t0 = time.perf_counter()
        opt.zero_grad()
        logits = model(inputs) if c["decoder_only"] else model(src, inputs)
        loss = F.cross_entropy(logits.reshape(-1, c["vocab"]), labels)
        loss.backward()
        opt.step()
        if s >= warmup:
            times.append(1000 * (time.perf_counter() - t0))
    print(json.dumps({"side": "pytorch", "config": name, "flush_denormals": ftz, "threads": threads,
                      "seq": c["length"] - 1, "batch": c["batch"],
                      "ms_per_step": statistics.median(times),
                      "parameters": sum(p.numel() for p in model.parameters()),
                      "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0, "steps": steps}))


if __name__ == "__main__":
    main()
