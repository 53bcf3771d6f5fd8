#!/usr/bin/python3
"""Golden fixture for headlab's encoder-decoder Transformer, made with PyTorch 1.13 in float64.

Run with Debian's torch:  /usr/bin/python3 scripts/make_transformer_fixture.py
Writes tests/fixtures/transformer/: every parameter (named as in headlab, i.e. the
nn.Transformer names without the "transformer." prefix), a batch with padding, the
label-smoothed loss, every parameter gradient, and the losses of 5 Adam steps.

The model: token embeddings * sqrt(D) + sinusoidal positions, nn.Transformer
(post-LN, ReLU, dropout 0, batch_first, final LayerNorms), a generator Linear(D, V).
"""
import json
import math
import os
import shutil

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures", "transformer")
V_SRC, V_TGT, D, H, FF, N = 11, 13, 16, 4, 32, 2
B, S, T = 3, 6, 5
PAD = 0
SMOOTHING = 0.1
ADAM = dict(lr=1e-3, betas=(0.9, 0.98), eps=1e-9)


def positions(length, dim):
    pe = torch.zeros(length, dim, dtype=torch.float64)
    for pos in range(length):
        for i in range(0, dim, 2):
            angle = pos / (10000.0 ** (i / dim))
            pe[pos, i] = math.sin(angle)
            if i + 1 < dim:
                pe[pos, i + 1] = math.cos(angle)
    return pe


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.src_embed = nn.Embedding(V_SRC, D)
        self.tgt_embed = nn.Embedding(V_TGT, D)
        self.transformer = nn.Transformer(d_model=D, nhead=H, num_encoder_layers=N, num_decoder_layers=N,
                                          dim_feedforward=FF, dropout=0.0, batch_first=True)
        self.generator = nn.Linear(D, V_TGT)

    def forward(self, src, tgt, src_pad, tgt_pad):
        x = self.src_embed(src) * math.sqrt(D) + positions(src.shape[1], D)
        y = self.tgt_embed(tgt) * math.sqrt(D) + positions(tgt.shape[1], D)
        causal = torch.triu(torch.ones(tgt.shape[1], tgt.shape[1], dtype=torch.bool), 1)
        out = self.transformer(x, y, tgt_mask=causal, src_key_padding_mask=src_pad,
                               tgt_key_padding_mask=tgt_pad, memory_key_padding_mask=src_pad)
        return self.generator(out)


def headlab_name(name):
    return name[len("transformer."):] if name.startswith("transformer.") else name


def main():
    torch.manual_seed(2026)
    model = Model().double()
    # Non-zero biases and norms so that every parameter is exercised.
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("bias") or "norm" in name:
                p.add_(0.1 * torch.randn_like(p))
    model.train()

    src = torch.randint(1, V_SRC, (B, S))
    src[1, 4:] = PAD
    src[2, 5:] = PAD
    tgt = torch.randint(1, V_TGT, (B, T + 1))
    tgt[0, 4:] = PAD
    tgt_in, tgt_out = tgt[:, :-1], tgt[:, 1:]
    src_pad, tgt_pad = src == PAD, tgt_in == PAD

    def loss_fn():
        logits = model(src, tgt_in, src_pad, tgt_pad)
        return F.cross_entropy(logits.reshape(-1, V_TGT), tgt_out.reshape(-1), ignore_index=PAD,
                               label_smoothing=SMOOTHING), logits

    if os.path.isdir(OUT):
        shutil.rmtree(OUT)
    os.makedirs(OUT)
    names = []
    for name, p in model.named_parameters():
        names.append(headlab_name(name))
        np.save(os.path.join(OUT, "param." + headlab_name(name) + ".npy"), p.detach().numpy())
    loss, logits = loss_fn()
    loss.backward()
    for name, p in model.named_parameters():
        np.save(os.path.join(OUT, "grad." + headlab_name(name) + ".npy"), p.grad.numpy())
    np.save(os.path.join(OUT, "logits.npy"), logits.detach().numpy())
    for arr, fname in [(src, "src"), (tgt_in, "tgt_in"), (tgt_out, "tgt_out")]:
        np.save(os.path.join(OUT, fname + ".npy"), arr.numpy().astype(np.int64))

    opt = torch.optim.Adam(model.parameters(), **ADAM)
    adam_losses = []
    for _ in range(5):
        opt.zero_grad()
        l, _ = loss_fn()
        adam_losses.append(l.item())
        l.backward()
        opt.step()
    meta = dict(V_src=V_SRC, V_tgt=V_TGT, d_model=D, heads=H, ff=FF, layers=N, B=B, S=S, T=T, pad=PAD,
                label_smoothing=SMOOTHING, loss=loss.item(), adam=dict(lr=ADAM["lr"], beta1=ADAM["betas"][0],
                beta2=ADAM["betas"][1], eps=ADAM["eps"]), adam_losses=adam_losses, parameters=names,
                torch=torch.__version__)
    with open(os.path.join(OUT, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)
    print("wrote", OUT, "loss", loss.item(), "adam losses", adam_losses)


if __name__ == "__main__":
    main()
