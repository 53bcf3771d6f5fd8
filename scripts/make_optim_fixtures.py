#!/usr/bin/python3
"""Writes tests/fixtures/optim_float64.json: PyTorch reference trajectories for headlab's optimisers.

Run with Debian's PyTorch (1.13), from anywhere:

    /usr/bin/python3 scripts/make_optim_fixtures.py

The output is deterministic (fixed seed, float64, CPU, foreach=False: the
single-tensor code path that headlab's optim.cpp follows). Each optimiser case
starts from two parameters of shapes (3, 4) and (5,), sets a saved random
gradient before every step (no backward pass: the gradient is given) and
records the parameters after each step. tests/optim/test_optim.cpp replays them.

File layout:
    {"generator": ..., "torch_version": ..., "seed": ..., "dtype": "float64",
     "optimizers": [case, ...], "clip": [clip case, ...]}
    case = {
      "name":      unique, e.g. "adam_wd0.1",
      "optimizer": "sgd" | "adam" | "adamw",
      "options":   {"lr": ..., ...}   (headlab's SGDOptions / AdamOptions field names),
      "initial":   [param, ...],
      "grads":     [[grad or null, ...] per step]   (null: that parameter has no grad at that step),
      "params":    [[param, ...] per step]          (after the step),
    }
    clip case = {"name", "max_norm", "grads": [...], "norm": total norm returned, "clipped": [...]}
Arrays are {"shape": [...], "data": [flat row-major]}; floats are written with
repr (exact round trip).
"""

import json
import os
import sys

import torch

SEED = 20240612
DTYPE = torch.float64
STEPS = 5
SHAPES = [(3, 4), (5,)]
OUT_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "tests", "fixtures",
                        "optim_float64.json")

torch.manual_seed(SEED)
torch.set_default_dtype(DTYPE)
torch.set_num_threads(1)


def arr(t):
    t = t.detach().to(DTYPE).contiguous()
    return {"shape": list(t.shape), "data": [float(v) for v in t.reshape(-1).tolist()]}


def make_optimizer(kind, params, o):
    if kind == "sgd":
        return torch.optim.SGD(params, lr=o["lr"], momentum=o["momentum"], dampening=o["dampening"],
                               weight_decay=o["weight_decay"], nesterov=o["nesterov"], foreach=False)
    cls = {"adam": torch.optim.Adam, "adamw": torch.optim.AdamW}[kind]
    return cls(params, lr=o["lr"], betas=(o["beta1"], o["beta2"]), eps=o["eps"], weight_decay=o["weight_decay"],
               foreach=False)


def trajectory(name, kind, options, skip=()):
    """Runs STEPS steps; `skip` holds (step, param) pairs whose gradient is absent (None)."""
    params = [torch.randn(s) for s in SHAPES]
    case = {"name": name, "optimizer": kind, "options": options, "initial": [arr(p) for p in params],
            "grads": [], "params": []}
    params = [p.clone().requires_grad_(True) for p in params]
    opt = make_optimizer(kind, params, options)
    for step in range(STEPS):
        grads = []
        for i, p in enumerate(params):
            g = torch.randn(p.shape)  # drawn even when skipped, so every case uses the stream alike
            p.grad = None if (step, i) in skip else g
            grads.append(None if (step, i) in skip else arr(g))
        opt.step()
        case["grads"].append(grads)
        case["params"].append([arr(p) for p in params])
    return case


SGD_BASE = {"lr": 0.1, "momentum": 0.9, "dampening": 0.0, "weight_decay": 0.01, "nesterov": False}
ADAM_BASE = {"lr": 0.05, "beta1": 0.9, "beta2": 0.98, "eps": 1e-9, "weight_decay": 0.0}

OPTIMIZERS = [
    trajectory("sgd_momentum0.9_wd0.01", "sgd", SGD_BASE),
    trajectory("sgd_nesterov", "sgd", dict(SGD_BASE, weight_decay=0.0, nesterov=True)),
    trajectory("adam", "adam", ADAM_BASE),
    trajectory("adam_wd0.1", "adam", dict(ADAM_BASE, weight_decay=0.1)),
    trajectory("adamw_wd0.1", "adamw", dict(ADAM_BASE, weight_decay=0.1)),
    # Parameter 1 has no gradient at steps 2 and 3 (0-based 1, 2): PyTorch skips it and
    # its own step count (for the bias correction) does not advance.
    trajectory("adam_skipped_grads", "adam", ADAM_BASE, skip={(1, 1), (2, 1)}),
    trajectory("sgd_skipped_grads", "sgd", SGD_BASE, skip={(0, 1), (2, 1)}),
]


def clip_case(name, scale, max_norm):
    grads = [scale * torch.randn(s) for s in SHAPES]
    params = [torch.zeros(s, requires_grad=True) for s in SHAPES]
    for p, g in zip(params, grads):
        p.grad = g.clone()
    norm = torch.nn.utils.clip_grad_norm_(params, max_norm)
    return {"name": name, "max_norm": max_norm, "grads": [arr(g) for g in grads], "norm": float(norm),
            "clipped": [arr(p.grad) for p in params]}


CLIP = [
    clip_case("clip_scaled", 1.0, 1.0),       # norm ~ 4: scaled down to ~1
    clip_case("clip_untouched", 0.1, 10.0),   # norm ~ 0.4: left alone
]

doc = {
    "generator": "scripts/make_optim_fixtures.py",
    "torch_version": torch.__version__,
    "seed": SEED,
    "dtype": "float64",
    "optimizers": OPTIMIZERS,
    "clip": CLIP,
}
os.makedirs(os.path.dirname(OUT_PATH), exist_ok=True)
with open(OUT_PATH, "w") as f:
    json.dump(doc, f, allow_nan=False, separators=(",", ":"))
    f.write("\n")
print(f"wrote {len(OPTIMIZERS)} optimiser and {len(CLIP)} clip cases to {os.path.normpath(OUT_PATH)} "
      f"({os.path.getsize(OUT_PATH)} bytes)", file=sys.stderr)
