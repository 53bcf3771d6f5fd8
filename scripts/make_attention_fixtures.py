#!/usr/bin/python3
"""Writes tests/fixtures/attention/: PyTorch reference values for headlab's MultiHeadAttention.

Run with Debian's PyTorch (1.13), from anywhere:

    /usr/bin/python3 scripts/make_attention_fixtures.py

The output is deterministic (a fixed seed per case, float64 everywhere, CPU only).
tests/attention/test_attention_fixtures.cpp replays every case through headlab, in float64
and in float32.

Two kinds of case:
  * "torch.nn.MultiheadAttention": the values come from the real module
    (batch_first=True, bias=True, dropout=0, need_weights=True,
    average_attn_weights=False), in eval mode.
  * "plain torch": variants torch 1.13 lacks (GQA/MQA, a head size other than
    D/h, sigmoid gates at position G1, a head mask, a sliding window with sinks),
    computed by `reference_attention` below from plain torch ops in headlab's
    layout (framework/attention/include/headlab/attention/attention.hpp). Before anything is written,
    the same function is checked against nn.MultiheadAttention on every case of
    the first kind (output, weights and every gradient), so it is trustworthy.

Layout:
    tests/fixtures/attention/cases.json     {"generator", "torch_version", "seed", "cases": [name, ...]}
    tests/fixtures/attention/<case>/meta.json
        {"case", "description", "reference", "kind": "self" | "cross",
         "B", "L", "S", "D", "h", "h_kv", "head_dim", "gate": "none" | "headwise" | "elementwise",
         "window", "sinks", "causal", "key_padding_mask", "attn_mask", "head_mask" (booleans: file present),
         "params": [module parameter names, e.g. "out_proj.weight"], "seed", "torch_version"}
    tests/fixtures/attention/<case>/<name>.npy   (np.save, little-endian, C order)
        x (B,L,D); memory (B,S,D), cross only;
        in_proj_weight ((h+2h_kv)d, D), in_proj_bias, out_proj_weight (D, h d), out_proj_bias,
        gate_proj_weight (h or h d, D), gate_proj_bias (gated only); head_mask (h) (when used);
        key_padding_mask (B,S), attn_mask (L,S): uint8 0/1, 1 = not allowed (when used);
        output (B,L,D); weights (B,h,L,S); gate (B,h,L,1) or (B,h,L,d) (gated only);
        upstream (B,L,D) = G; grad_<input or parameter file name> = d sum(output * G) / d that.
    Floats are float64 ('<f8'), masks uint8. A parameter's file name is its module
    name with '.' replaced by '_'.
"""

import json
import math
import os
import shutil
import zlib

import numpy as np
import torch
import torch.nn as nn

SEED = 20250614
DTYPE = torch.float64
OUT_DIR = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "tests", "fixtures",
                                        "attention"))

torch.set_default_dtype(DTYPE)
torch.use_deterministic_algorithms(True)
torch.set_num_threads(1)

PARAM_FILES = {
    "in_proj_weight": "in_proj_weight",
    "in_proj_bias": "in_proj_bias",
    "out_proj.weight": "out_proj_weight",
    "out_proj.bias": "out_proj_bias",
    "gate_proj.weight": "gate_proj_weight",
    "gate_proj.bias": "gate_proj_bias",
}


# ---- the plain-torch reference ----------------------------------------------------------------

def position_mask(L, S, causal, window, sinks):
    """(L, S) bool, True = not allowed. Queries sit at positions S-L..S-1, keys at 0..S-1.
    A window W > 0 implies causal: query p sees keys j with p-W+1 <= j <= p, plus keys
    j < sinks whenever j <= p."""
    qp = torch.arange(S - L, S).unsqueeze(1)
    kp = torch.arange(S).unsqueeze(0)
    masked = torch.zeros(L, S, dtype=torch.bool)
    if causal or window > 0:
        masked |= kp > qp
    if window > 0:
        masked |= (kp <= qp - window) & ~(kp < sinks)
    return masked


def reference_attention(x, memory, P, cfg, key_padding_mask=None, attn_mask=None, head_mask=None):
    """headlab's MultiHeadAttention in plain torch ops. x (B,L,D); memory (B,S,D) (x for self-attention).
    P: parameter name -> tensor. Returns (output (B,L,D), weights (B,h,L,S), gate or None)."""
    B, L, D = x.shape
    S = memory.shape[1]
    h, hkv, d = cfg["h"], cfg["h_kv"], cfg["head_dim"]
    W, b = P["in_proj_weight"], P["in_proj_bias"]
    Wq, Wk, Wv = W[:h * d], W[h * d:(h + hkv) * d], W[(h + hkv) * d:]
    bq, bk, bv = b[:h * d], b[h * d:(h + hkv) * d], b[(h + hkv) * d:]
    q = (x @ Wq.T + bq).reshape(B, L, h, d).transpose(1, 2)        # (B,h,L,d)
    k = (memory @ Wk.T + bk).reshape(B, S, hkv, d).transpose(1, 2)  # (B,h_kv,S,d)
    v = (memory @ Wv.T + bv).reshape(B, S, hkv, d).transpose(1, 2)
    group = h // hkv
    k = k.repeat_interleave(group, dim=1)  # query head i -> kv head i // group
    v = v.repeat_interleave(group, dim=1)
    scores = (q / math.sqrt(d)) @ k.transpose(-2, -1)  # (B,h,L,S)
    masked = position_mask(L, S, cfg["causal"], cfg["window"], cfg["sinks"]).expand(B, h, L, S)
    if attn_mask is not None:
        masked = masked | attn_mask
    if key_padding_mask is not None:
        masked = masked | key_padding_mask[:, None, None, :]
    scores = scores.masked_fill(masked, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    y = weights @ v  # (B,h,L,d)
    gate = None
    if cfg["gate"] != "none":
        g = torch.sigmoid(x @ P["gate_proj.weight"].T + P["gate_proj.bias"])  # (B,L,h) or (B,L,h d)
        if cfg["gate"] == "headwise":
            gate = g.transpose(1, 2).unsqueeze(-1)  # (B,h,L,1)
        else:
            gate = g.reshape(B, L, h, d).transpose(1, 2)  # (B,h,L,d)
        y = y * gate
    if head_mask is not None:
        y = y * head_mask[None, :, None, None]
    y = y.transpose(1, 2).reshape(B, L, h * d)
    out = y @ P["out_proj.weight"].T + P["out_proj.bias"]
    return out, weights, gate


# ---- cases --------------------------------------------------------------------------------------

def config(name, description, B, L, D, h, h_kv=None, head_dim=None, S=None, kind="self", causal=False, gate="none",
           window=0, sinks=0, key_padding_mask=False, attn_mask=False, head_mask=None, torch_mha=False):
    h_kv = h_kv or h
    head_dim = head_dim or D // h
    S = S if S is not None else L
    assert kind == "cross" or S == L
    return {"case": name, "description": description, "torch_mha": torch_mha, "kind": kind, "B": B, "L": L, "S": S,
            "D": D, "h": h, "h_kv": h_kv, "head_dim": head_dim, "gate": gate, "window": window, "sinks": sinks,
            "causal": causal, "key_padding_mask": key_padding_mask, "attn_mask": attn_mask, "head_mask": head_mask}


CASES = [
    # torch.nn.MultiheadAttention
    config("self", "self-attention", B=2, L=4, D=8, h=2, torch_mha=True),
    config("causal", "causal self-attention (attn_mask = triu(ones, 1))", B=2, L=5, D=8, h=2, causal=True,
           torch_mha=True),
    config("cross_padding", "cross-attention L != S with a key_padding_mask", B=2, L=3, S=5, D=8, h=2,
           kind="cross", key_padding_mask=True, torch_mha=True),
    config("attn_mask", "self-attention with a random boolean attn_mask (L, S)", B=2, L=5, D=8, h=2, attn_mask=True,
           torch_mha=True),
    config("one_head", "a single head (h = 1, d = D)", B=2, L=4, D=8, h=1, torch_mha=True),
    config("head_dim_1", "d_k = 1 (D = 4, h = 4)", B=2, L=4, D=4, h=4, torch_mha=True),
    config("batch_1", "batch of one", B=1, L=4, D=8, h=2, torch_mha=True),
    config("batch_3", "batch of three, cross-attention", B=3, L=3, S=4, D=12, h=3, kind="cross", torch_mha=True),
    # plain torch, headlab's layout
    config("gqa", "grouped-query attention h = 4, h_kv = 2", B=2, L=5, D=16, h=4, h_kv=2),
    config("mqa", "multi-query attention h = 4, h_kv = 1", B=2, L=5, D=16, h=4, h_kv=1),
    config("decoupled_head_dim", "head size 6 with D = 8, h = 2 (W_O is 8 x 12)", B=2, L=4, D=8, h=2, head_dim=6),
    config("gate_headwise", "headwise sigmoid gate at G1 (gate_proj.weight (h, D))", B=2, L=4, D=8, h=2,
           gate="headwise"),
    config("gate_elementwise", "elementwise sigmoid gate at G1 (gate_proj.weight (h d, D))", B=2, L=4, D=8, h=2,
           gate="elementwise"),
    config("head_mask", "head mask xi = [1, 0, 0.5, 2] requiring grad", B=2, L=4, D=16, h=4,
           head_mask=[1.0, 0.0, 0.5, 2.0]),
    config("window_sinks", "sliding window W = 3 with 1 sink on T = 7 (window implies causal; call.causal unset)",
           B=2, L=7, D=8, h=2, window=3, sinks=1),
    config("gqa_gate_causal", "GQA h = 4, h_kv = 2 with an elementwise gate, causal", B=2, L=5, D=16, h=4, h_kv=2,
           gate="elementwise", causal=True),
]


def case_seed(name):
    return (SEED + zlib.crc32(name.encode())) % (2 ** 31)


def random_row_mask(rows, cols, p):
    """Bool (rows, cols), True with probability p, at least one False per row."""
    m = torch.rand(rows, cols) < p
    for r in range(rows):
        if bool(m[r].all()):
            m[r, torch.randint(cols, ()).item()] = False
    return m


def make_inputs(cfg):
    """Deterministic inputs, parameters and masks for one case (reseeds the generator)."""
    torch.manual_seed(case_seed(cfg["case"]))
    B, L, S, D = cfg["B"], cfg["L"], cfg["S"], cfg["D"]
    h, hkv, d = cfg["h"], cfg["h_kv"], cfg["head_dim"]
    x = torch.randn(B, L, D)
    memory = torch.randn(B, S, D) if cfg["kind"] == "cross" else None
    P = {
        "in_proj_weight": torch.randn((h + 2 * hkv) * d, D) / math.sqrt(D),
        "in_proj_bias": 0.3 * torch.randn((h + 2 * hkv) * d),
        "out_proj.weight": torch.randn(D, h * d) / math.sqrt(h * d),
        "out_proj.bias": 0.3 * torch.randn(D),
    }
    if cfg["gate"] != "none":
        rows = h if cfg["gate"] == "headwise" else h * d
        P["gate_proj.weight"] = torch.randn(rows, D) / math.sqrt(D)
        P["gate_proj.bias"] = 0.3 * torch.randn(rows)
    kpm = random_row_mask(B, S, 0.35) if cfg["key_padding_mask"] else None
    am = random_row_mask(L, S, 0.4) if cfg["attn_mask"] else None
    head_mask = torch.tensor(cfg["head_mask"]) if cfg["head_mask"] is not None else None
    upstream = torch.randn(B, L, D)
    return x, memory, P, kpm, am, head_mask, upstream


def leaf(t):
    return t.detach().clone().requires_grad_(True)


def run_reference(cfg, x, memory, P, kpm, am, head_mask, upstream):
    xs = leaf(x)
    ms = leaf(memory) if memory is not None else None
    Ps = {k: leaf(v) for k, v in P.items()}
    hm = leaf(head_mask) if head_mask is not None else None
    out, weights, gate = reference_attention(xs, ms if ms is not None else xs, Ps, cfg, kpm, am, hm)
    (out * upstream).sum().backward()
    grads = {"x": xs.grad}
    if ms is not None:
        grads["memory"] = ms.grad
    for k, v in Ps.items():
        grads[PARAM_FILES[k]] = v.grad
    if hm is not None:
        grads["head_mask"] = hm.grad
    return out.detach(), weights.detach(), (gate.detach() if gate is not None else None), grads


def run_torch_mha(cfg, x, memory, P, kpm, am, upstream):
    mha = nn.MultiheadAttention(embed_dim=cfg["D"], num_heads=cfg["h"], dropout=0.0, bias=True, batch_first=True)
    mha.eval()
    with torch.no_grad():
        mha.in_proj_weight.copy_(P["in_proj_weight"])
        mha.in_proj_bias.copy_(P["in_proj_bias"])
        mha.out_proj.weight.copy_(P["out_proj.weight"])
        mha.out_proj.bias.copy_(P["out_proj.bias"])
    xs = leaf(x)
    ms = leaf(memory) if memory is not None else None
    mask = am
    if cfg["causal"]:
        causal = torch.triu(torch.ones(cfg["L"], cfg["S"], dtype=torch.bool), 1)
        mask = causal if mask is None else (mask | causal)
    kv = ms if ms is not None else xs
    out, weights = mha(xs, kv, kv, key_padding_mask=kpm, need_weights=True, attn_mask=mask,
                       average_attn_weights=False)
    (out * upstream).sum().backward()
    grads = {"x": xs.grad}
    if ms is not None:
        grads["memory"] = ms.grad
    grads["in_proj_weight"] = mha.in_proj_weight.grad
    grads["in_proj_bias"] = mha.in_proj_bias.grad
    grads["out_proj_weight"] = mha.out_proj.weight.grad
    grads["out_proj_bias"] = mha.out_proj.bias.grad
    names = [n for n, _ in mha.named_parameters()]
    assert names == ["in_proj_weight", "in_proj_bias", "out_proj.weight", "out_proj.bias"], names
    return out.detach(), weights.detach(), grads


def assert_close(name, what, a, b, tol=1e-12):
    assert a.shape == b.shape, f"{name}: {what} shape {tuple(a.shape)} vs {tuple(b.shape)}"
    err = (a - b).abs().max().item() if a.numel() else 0.0
    assert torch.allclose(a, b, rtol=tol, atol=tol), f"{name}: {what} differs by {err}"


def check_reference_against_torch():
    """The plain-torch reference must reproduce nn.MultiheadAttention on every torch case."""
    for cfg in CASES:
        if not cfg["torch_mha"]:
            continue
        x, memory, P, kpm, am, head_mask, upstream = make_inputs(cfg)
        out_t, w_t, g_t = run_torch_mha(cfg, x, memory, P, kpm, am, upstream)
        out_r, w_r, _, g_r = run_reference(cfg, x, memory, P, kpm, am, head_mask, upstream)
        assert not torch.isnan(out_t).any()
        assert_close(cfg["case"], "output", out_r, out_t)
        assert_close(cfg["case"], "weights", w_r, w_t)
        assert set(g_r) == set(g_t), (cfg["case"], sorted(g_r), sorted(g_t))
        for k in g_t:
            assert_close(cfg["case"], "grad_" + k, g_r[k], g_t[k])
    # The window mask itself, pinned by hand: W = 3, 1 sink, T = 7.
    expect_visible = {0: [0], 1: [0, 1], 2: [0, 1, 2], 3: [0, 1, 2, 3], 4: [0, 2, 3, 4], 5: [0, 3, 4, 5],
                      6: [0, 4, 5, 6]}
    m = position_mask(7, 7, False, 3, 1)
    for p, vis in expect_visible.items():
        assert [j for j in range(7) if not m[p, j]] == vis, (p, m[p])


# ---- writing ------------------------------------------------------------------------------------

def save_float(path, t):
    a = np.ascontiguousarray(t.detach().cpu().numpy().astype("<f8"))
    assert np.isfinite(a).all(), path
    np.save(path, a)


def save_mask(path, t):
    np.save(path, np.ascontiguousarray(t.detach().cpu().numpy().astype(np.uint8)))


def write_case(cfg):
    name = cfg["case"]
    x, memory, P, kpm, am, head_mask, upstream = make_inputs(cfg)
    if cfg["torch_mha"]:
        out, weights, grads = run_torch_mha(cfg, x, memory, P, kpm, am, upstream)
        gate = None
        reference = "torch.nn.MultiheadAttention"
    else:
        out, weights, gate, grads = run_reference(cfg, x, memory, P, kpm, am, head_mask, upstream)
        reference = "plain torch (reference_attention in scripts/make_attention_fixtures.py)"
    d = os.path.join(OUT_DIR, name)
    os.makedirs(d)
    save_float(os.path.join(d, "x.npy"), x)
    if memory is not None:
        save_float(os.path.join(d, "memory.npy"), memory)
    for k, v in P.items():
        save_float(os.path.join(d, PARAM_FILES[k] + ".npy"), v)
    if head_mask is not None:
        save_float(os.path.join(d, "head_mask.npy"), head_mask)
    if kpm is not None:
        save_mask(os.path.join(d, "key_padding_mask.npy"), kpm)
    if am is not None:
        save_mask(os.path.join(d, "attn_mask.npy"), am)
    save_float(os.path.join(d, "output.npy"), out)
    save_float(os.path.join(d, "weights.npy"), weights)
    if gate is not None:
        save_float(os.path.join(d, "gate.npy"), gate)
    save_float(os.path.join(d, "upstream.npy"), upstream)
    for k, v in grads.items():
        save_float(os.path.join(d, "grad_" + k + ".npy"), v)
    meta = {
        "case": name,
        "description": cfg["description"],
        "reference": reference,
        "kind": cfg["kind"],
        "B": cfg["B"], "L": cfg["L"], "S": cfg["S"], "D": cfg["D"],
        "h": cfg["h"], "h_kv": cfg["h_kv"], "head_dim": cfg["head_dim"],
        "gate": cfg["gate"], "window": cfg["window"], "sinks": cfg["sinks"], "causal": cfg["causal"],
        "key_padding_mask": kpm is not None, "attn_mask": am is not None, "head_mask": head_mask is not None,
        "params": list(P.keys()),
        "seed": case_seed(name),
        "torch_version": torch.__version__,
    }
    with open(os.path.join(d, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)
        f.write("\n")


def main():
    check_reference_against_torch()
    names = [c["case"] for c in CASES]
    assert len(set(names)) == len(names)
    if os.path.isdir(OUT_DIR):
        shutil.rmtree(OUT_DIR)
    os.makedirs(OUT_DIR)
    for cfg in CASES:
        write_case(cfg)
    with open(os.path.join(OUT_DIR, "cases.json"), "w") as f:
        json.dump({"generator": "scripts/make_attention_fixtures.py", "torch_version": torch.__version__,
                   "seed": SEED, "cases": names}, f, indent=1)
        f.write("\n")
    total = sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(OUT_DIR) for f in fs)
    print(f"wrote {len(names)} cases to {OUT_DIR} ({total} bytes)")


if __name__ == "__main__":
    main()
