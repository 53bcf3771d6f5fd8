#!/usr/bin/python3
"""Writes tests/fixtures/ops_float64.json: PyTorch reference values for headlab's ops.

Run with Debian's PyTorch (1.13), from anywhere:

    /usr/bin/python3 scripts/make_op_fixtures.py

The output is deterministic (fixed seed, float64 everywhere, CPU only). Each case
records the op's inputs, its non-differentiable arguments, the output, a random
upstream gradient G and the gradient of sum(output * G) with respect to every
input. tests/ops/test_pytorch_fixtures.cpp replays the cases through headlab.

File layout:
    {"generator": ..., "torch_version": ..., "seed": ..., "cases": [case, ...]}
    case = {
      "name":     unique, e.g. "add_bcast_234_31",
      "family":   the test case that runs it ("binary", "softmax", ...),
      "op":       the headlab op ("add", "softmax", ...),
      "inputs":   [{"shape": [...], "data": [...]}, ...]   (differentiable, in the op's argument order),
      "args":     {...}                                    (axes, indices, masks, scalars),
      "output":   {"shape": [...], "data": [...]},
      "upstream": {"shape": [...], "data": [...]},
      "grads":    [{"shape": [...], "data": [...]}, ...]   (one per input),
    }
Arrays are flat, row-major. Floats are written with repr (exact round trip);
non-finite values, which JSON cannot hold, are written as the strings
"inf", "-inf" and "nan". Index arrays are int lists, masks lists of 0/1.
"""

import json
import math
import os
import sys

import torch
import torch.nn.functional as F

SEED = 20240611
DTYPE = torch.float64
OUT_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "tests", "fixtures",
                        "ops_float64.json")

torch.manual_seed(SEED)
torch.set_default_dtype(DTYPE)
torch.use_deterministic_algorithms(True)
torch.set_num_threads(1)


# ---- helpers -----------------------------------------------------------------------------------

def _float(v):
    v = float(v)
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return v


def arr(t):
    """A float tensor as {"shape", "data"} with flat row-major data."""
    t = t.detach().to(DTYPE).contiguous()
    return {"shape": list(t.shape), "data": [_float(v) for v in t.reshape(-1).tolist()]}


def idx(t):
    """An int64 tensor as {"shape", "data"}."""
    t = t.detach().to(torch.int64).contiguous()
    return {"shape": list(t.shape), "data": [int(v) for v in t.reshape(-1).tolist()]}


def mask(t):
    """A bool tensor as {"shape", "data"} with 0/1 entries."""
    t = t.detach().to(torch.bool).contiguous()
    return {"shape": list(t.shape), "data": [1 if v else 0 for v in t.reshape(-1).tolist()]}


def randn(*shape):
    return torch.randn(tuple(shape), dtype=DTYPE)


def rand(*shape, low=0.0, high=1.0):
    return low + (high - low) * torch.rand(tuple(shape), dtype=DTYPE)


def away_from_zero(*shape, margin=0.3):
    """Random values with |x| >= margin and a random sign (for div, relu kinks, ...)."""
    sign = torch.where(torch.rand(tuple(shape)) < 0.5, -1.0, 1.0).to(DTYPE)
    return sign * (margin + torch.rand(tuple(shape), dtype=DTYPE))


CASES = []
NAMES = set()


def case(name, family, op, inputs, fn, args=None):
    """Runs fn(*leaves) with autograd and records everything."""
    assert name not in NAMES, name
    NAMES.add(name)
    leaves = [x.detach().clone().to(DTYPE).requires_grad_(True) for x in inputs]
    out = fn(*leaves)
    upstream = randn(*out.shape)
    grads = torch.autograd.grad((out * upstream).sum() if out.dim() > 0 else out * upstream,
                                leaves, allow_unused=True)
    # The masked -inf softmax entries give out * upstream = 0 * G, fine; guard against NaN anyway.
    grads = [torch.zeros_like(x) if g is None else g for g, x in zip(grads, leaves)]
    for g in grads:
        assert torch.isfinite(g).all(), f"{name}: non-finite gradient"
    CASES.append({
        "name": name,
        "family": family,
        "op": op,
        "inputs": [arr(x) for x in leaves],
        "args": args or {},
        "output": arr(out),
        "upstream": arr(upstream),
        "grads": [arr(g) for g in grads],
    })


# ---- elementwise, broadcasting -----------------------------------------------------------------

BINARY = {"add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": torch.div}
BINARY_SHAPES = [
    ("234_31", (2, 3, 4), (3, 1)),
    ("31_234", (3, 1), (2, 3, 4)),
    ("214_31", (2, 1, 4), (3, 1)),
    ("34_34", (3, 4), (3, 4)),
    ("234_4", (2, 3, 4), (4,)),
]
for op, fn in BINARY.items():
    for tag, sa, sb in BINARY_SHAPES:
        a = randn(*sa)
        b = away_from_zero(*sb) if op == "div" else randn(*sb)
        case(f"{op}_{tag}", "binary", op, [a, b], fn)

for tag, exponent, positive in [("2", 2.0, False), ("3", 3.0, False), ("0.5", 0.5, True),
                                ("-1.5", -1.5, True), ("1.7", 1.7, True)]:
    x = rand(2, 3, 4, low=0.2, high=2.0) if positive else randn(2, 3, 4)
    case(f"pow_{tag}", "unary", "pow", [x], lambda t, e=exponent: torch.pow(t, e), {"exponent": exponent})

case("exp", "unary", "exp", [randn(2, 3, 4)], torch.exp)
case("log", "unary", "log", [rand(2, 3, 4, low=0.1, high=3.0)], torch.log)
case("sqrt", "unary", "sqrt", [rand(2, 3, 4, low=0.1, high=3.0)], torch.sqrt)
case("tanh", "unary", "tanh", [2.0 * randn(2, 3, 4)], torch.tanh)
case("sigmoid", "unary", "sigmoid", [3.0 * randn(2, 3, 4)], torch.sigmoid)
case("relu", "unary", "relu", [away_from_zero(2, 3, 4, margin=0.05)], torch.relu)
case("gelu", "unary", "gelu", [2.0 * randn(2, 3, 4)], F.gelu)

# ---- reductions ----------------------------------------------------------------------------------

REDUCE_AXES = [[], [0], [1], [-1], [0, 2], [-1, -3], [0, 1, 2]]
for op, fn in [("sum", torch.sum), ("mean", torch.mean)]:
    for axes in REDUCE_AXES:
        for keepdim in (False, True):
            tag = "all" if not axes else "_".join(str(a) for a in axes)
            x = randn(2, 3, 4)
            if axes:
                f = lambda t, a=axes, k=keepdim: fn(t, dim=a, keepdim=k)
            elif keepdim:  # headlab: empty axes = all axes, kept as size 1
                f = lambda t, k=keepdim: fn(t, dim=[0, 1, 2], keepdim=k)
            else:
                f = lambda t: fn(t)
            case(f"{op}_{tag}_keepdim{int(keepdim)}", "reduce", op, [x], f, {"axes": axes, "keepdim": keepdim})

for axis in (0, 1, 2, -1):
    for keepdim in (False, True):
        x = randn(2, 3, 4)  # continuous random data: no ties
        case(f"max_axis{axis}_keepdim{int(keepdim)}", "reduce", "max", [x],
             lambda t, a=axis, k=keepdim: torch.amax(t, dim=a, keepdim=k), {"axes": [axis], "keepdim": keepdim})

# ---- matmul -------------------------------------------------------------------------------------

case("matmul_2d", "matmul", "matmul", [randn(3, 4), randn(4, 5)], torch.matmul)
case("matmul_2d_row", "matmul", "matmul", [randn(1, 4), randn(4, 2)], torch.matmul)
case("matmul_batched_bcast", "matmul", "matmul", [randn(2, 1, 3, 4), randn(3, 4, 5)], torch.matmul)
case("matmul_batched_same", "matmul", "matmul", [randn(2, 3, 4), randn(2, 4, 2)], torch.matmul)
case("matmul_batched_weight", "matmul", "matmul", [randn(2, 3, 4), randn(4, 5)], torch.matmul)
case("matmul_weight_batched", "matmul", "matmul", [randn(3, 4), randn(2, 4, 5)], torch.matmul)

# ---- shape ops ----------------------------------------------------------------------------------

case("transpose_0_2", "shape", "transpose", [randn(2, 3, 4)], lambda t: torch.transpose(t, 0, 2),
     {"axis0": 0, "axis1": 2})
case("transpose_-1_-2", "shape", "transpose", [randn(2, 3, 4)], lambda t: torch.transpose(t, -1, -2),
     {"axis0": -1, "axis1": -2})
case("permute_201", "shape", "permute", [randn(2, 3, 4)], lambda t: t.permute(2, 0, 1), {"order": [2, 0, 1]})
case("permute_1_-1_0", "shape", "permute", [randn(2, 3, 4)], lambda t: t.permute(1, -1, 0), {"order": [1, -1, 0]})
case("narrow_axis1", "shape", "narrow", [randn(2, 3, 4)], lambda t: torch.narrow(t, 1, 1, 2),
     {"axis": 1, "start": 1, "length": 2})
case("narrow_axis-1", "shape", "narrow", [randn(2, 3, 4)], lambda t: torch.narrow(t, -1, 0, 3),
     {"axis": -1, "start": 0, "length": 3})
case("concat_axis0", "shape", "concat", [randn(1, 3, 4), randn(2, 3, 4)], lambda *t: torch.cat(t, 0), {"axis": 0})
case("concat_axis1", "shape", "concat", [randn(2, 1, 4), randn(2, 3, 4), randn(2, 2, 4)],
     lambda *t: torch.cat(t, 1), {"axis": 1})
case("concat_axis-1", "shape", "concat", [randn(2, 3, 2), randn(2, 3, 3)], lambda *t: torch.cat(t, -1), {"axis": -1})
case("stack_axis0", "shape", "stack", [randn(3, 4), randn(3, 4)], lambda *t: torch.stack(t, 0), {"axis": 0})
case("stack_axis1", "shape", "stack", [randn(3, 4), randn(3, 4), randn(3, 4)], lambda *t: torch.stack(t, 1),
     {"axis": 1})
case("stack_axis-1", "shape", "stack", [randn(3, 4), randn(3, 4)], lambda *t: torch.stack(t, -1), {"axis": -1})

# ---- indexing -----------------------------------------------------------------------------------

ids = torch.tensor([[1, 4, 1], [0, 6, 4]], dtype=torch.int64)  # repeats: scatter-add in backward
case("embedding_2x3", "embedding", "embedding", [randn(7, 5)], lambda w: F.embedding(ids, w), {"ids": idx(ids)})
ids1 = torch.tensor([3, 3, 3, 0], dtype=torch.int64)
case("embedding_1d", "embedding", "embedding", [randn(5, 2)], lambda w: F.embedding(ids1, w), {"ids": idx(ids1)})

g_idx1 = torch.randint(0, 4, (3, 2, 5), dtype=torch.int64)
case("gather_axis1", "gather", "gather", [randn(3, 4, 5)], lambda t: torch.gather(t, 1, g_idx1),
     {"axis": 1, "index": idx(g_idx1)})
g_idx2 = torch.randint(0, 5, (2, 3, 6), dtype=torch.int64)  # smaller than x on axes 0 and 1, longer on axis 2
case("gather_axis-1_small", "gather", "gather", [randn(3, 4, 5)], lambda t: torch.gather(t, -1, g_idx2),
     {"axis": -1, "index": idx(g_idx2)})
g_idx3 = torch.randint(0, 3, (4, 4), dtype=torch.int64)
case("gather_axis0_2d", "gather", "gather", [randn(3, 4)], lambda t: torch.gather(t, 0, g_idx3),
     {"axis": 0, "index": idx(g_idx3)})

m1 = torch.rand(3, 1) < 0.5
m1[0, 0], m1[1, 0] = True, False
case("masked_fill_bcast_31", "masked_fill", "masked_fill", [randn(2, 3, 4)],
     lambda t: t.masked_fill(m1, -7.25), {"mask": mask(m1), "value": -7.25})
m2 = torch.rand(2, 3, 4) < 0.4
case("masked_fill_full", "masked_fill", "masked_fill", [randn(2, 3, 4)],
     lambda t: t.masked_fill(m2, 0.0), {"mask": mask(m2), "value": 0.0})

c1 = torch.rand(3, 1) < 0.5
c1[0, 0], c1[1, 0] = True, False
case("where_cond31_a234_b4", "where", "where", [randn(2, 3, 4), randn(4)],
     lambda a, b: torch.where(c1, a, b), {"cond": mask(c1)})
c2 = torch.rand(2, 3, 4) < 0.5
case("where_cond234_a31_b14", "where", "where", [randn(3, 1), randn(1, 4)],
     lambda a, b: torch.where(c2, a, b), {"cond": mask(c2)})
c3 = torch.rand(4) < 0.5
c3[0], c3[1] = True, False
case("where_cond4_a34_b34", "where", "where", [randn(3, 4), randn(3, 4)],
     lambda a, b: torch.where(c3, a, b), {"cond": mask(c3)})

# ---- softmax family -----------------------------------------------------------------------------

for op, fn in [("softmax", F.softmax), ("log_softmax", F.log_softmax)]:
    case(f"{op}_2d_axis-1", "softmax", op, [2.0 * randn(3, 5)], lambda t, f=fn: f(t, dim=-1), {"axis": -1})
    case(f"{op}_3d_axis-1", "softmax", op, [2.0 * randn(2, 3, 4)], lambda t, f=fn: f(t, dim=-1), {"axis": -1})
    case(f"{op}_3d_axis1", "softmax", op, [2.0 * randn(2, 3, 4)], lambda t, f=fn: f(t, dim=1), {"axis": 1})
    case(f"{op}_3d_axis0", "softmax", op, [2.0 * randn(2, 3, 4)], lambda t, f=fn: f(t, dim=0), {"axis": 0})
    case(f"{op}_large_logits", "softmax", op, [torch.tensor([[1000.0, 1001.5, 999.0, -1000.0]])],
         lambda t, f=fn: f(t, dim=-1), {"axis": -1})

xm = 2.0 * randn(2, 3, 4)
xm[0, 1, 2:] = -math.inf  # a causal-style partially masked row
xm[1, 0, 0] = -math.inf
xm[1, 2, 1:] = -math.inf  # only one live entry: probability 1
case("softmax_partially_masked", "softmax", "softmax", [xm], lambda t: F.softmax(t, dim=-1), {"axis": -1})

# ---- cross entropy ------------------------------------------------------------------------------

N, C = 6, 5
ce_targets = torch.tensor([2, 0, 4, 1, 0, 3], dtype=torch.int64)
ce_targets_ign100 = torch.tensor([2, -100, 4, 1, -100, 3], dtype=torch.int64)
ce_targets_ign0 = ce_targets  # contains two 0s, ignored with ignore_index=0
CE = [
    ("cross_entropy_plain", ce_targets, -100, 0.0),
    ("cross_entropy_ignore_-100", ce_targets_ign100, -100, 0.0),
    ("cross_entropy_ignore_0", ce_targets_ign0, 0, 0.0),
    ("cross_entropy_smooth_0.1", ce_targets, -100, 0.1),
    ("cross_entropy_smooth_0.1_ignore_-100", ce_targets_ign100, -100, 0.1),
    ("cross_entropy_smooth_0.1_ignore_0", ce_targets_ign0, 0, 0.1),
]
for name, tg, ign, ls in CE:
    case(name, "cross_entropy", "cross_entropy", [2.0 * randn(N, C)],
         lambda t, tg=tg, ign=ign, ls=ls: F.cross_entropy(t, tg, ignore_index=ign, label_smoothing=ls),
         {"targets": idx(tg), "ignore_index": ign, "label_smoothing": ls})

# ---- layer norm ---------------------------------------------------------------------------------

case("layer_norm_238", "layer_norm", "layer_norm", [1.5 * randn(2, 3, 8) + 0.5, 1.0 + 0.3 * randn(8), 0.3 * randn(8)],
     lambda x, w, b: F.layer_norm(x, (8,), w, b, eps=1e-5), {"eps": 1e-5})
case("layer_norm_small_var", "layer_norm", "layer_norm",
     [1e-3 * randn(2, 8) + 3.0, 1.0 + 0.3 * randn(8), 0.3 * randn(8)],
     lambda x, w, b: F.layer_norm(x, (8,), w, b, eps=1e-5), {"eps": 1e-5})

# ---- write --------------------------------------------------------------------------------------

doc = {
    "generator": "scripts/make_op_fixtures.py",
    "torch_version": torch.__version__,
    "seed": SEED,
    "dtype": "float64",
    "cases": CASES,
}
os.makedirs(os.path.dirname(OUT_PATH), exist_ok=True)
with open(OUT_PATH, "w") as f:
    json.dump(doc, f, allow_nan=False, separators=(",", ":"))
    f.write("\n")
print(f"wrote {len(CASES)} cases to {os.path.normpath(OUT_PATH)} ({os.path.getsize(OUT_PATH)} bytes)",
      file=sys.stderr)
