#!/usr/bin/env python3
"""Writes the table of every op into docs/engine.md, from the source; --check only compares.

    python3 docs/tools/op_table.py [--check]

The ops are the functions declared in framework/ops/include/headlab/ops/ops.hpp. For each one the
table gives its forward and backward formula (FORMULAS below: an op declared without an entry here
is an error, so a new op cannot go without its row), the file and line of its definition in
framework/ops/ (forward and backward sit side by side there), and the first case of the float64
gradcheck table (tests/ops/test_gradcheck_ops.cpp) that runs it. The table replaces what stands
between the lines <!-- op-table --> and <!-- /op-table --> of the page. --check writes nothing and
exits 1 when the page's table differs from the one the source gives (ctest docs.op_table_complete).
"""
import os
import re
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HEADER = "framework/ops/include/headlab/ops/ops.hpp"
GRADCHECK = "tests/ops/test_gradcheck_ops.cpp"
PAGE = "docs/engine.md"
BEGIN, END = "<!-- op-table -->", "<!-- /op-table -->"

# op -> (forward, backward); g is the gradient of the output, broadcasting summed back ("unbroadcast").
FORMULAS = {
    "add": ("a + b (broadcast)", "da = g, db = g, each summed to its shape"),
    "sub": ("a - b", "da = g, db = -g"),
    "mul": ("a * b", "da = g b, db = g a"),
    "div": ("a / b", "da = g / b, db = -g a / b^2"),
    "neg": ("-x", "dx = -g"),
    "add_scalar": ("x + s", "dx = g"),
    "mul_scalar": ("x s", "dx = g s"),
    "rsub_scalar": ("s - x", "dx = -g"),
    "rdiv_scalar": ("s / x", "dx = -g s / x^2"),
    "pow": ("x^p", "dx = g p x^(p-1)"),
    "exp": ("e^x", "dx = g y"),
    "log": ("ln x", "dx = g / x"),
    "sqrt": ("sqrt(x)", "dx = g / (2 y)"),
    "tanh": ("tanh x", "dx = g (1 - y^2)"),
    "sigmoid": ("1 / (1 + e^-x)", "dx = g y (1 - y)"),
    "relu": ("max(x, 0)", "dx = g [x > 0]"),
    "gelu": ("x Phi(x)", "dx = g (Phi(x) + x phi(x))"),
    "sum": ("sum over axes", "dx = g broadcast back over the axes"),
    "mean": ("sum / n over axes", "dx = g / n broadcast back"),
    "max": ("max over axes", "dx = g at the first maximal element of each slice, 0 elsewhere"),
    "matmul": ("a @ b, (..., n, k) @ (..., k, m)", "da = g b^T, db = a^T g, batch dims summed to shape"),
    "linear": ("x W^T + b", "dx = g W, dW = g^T x, db = sum of g over rows"),
    "reshape": ("same elements, new shape", "dx = g reshaped back"),
    "view": ("reshape (an alias)", "as reshape"),
    "transpose": ("swap two axes", "dx = g with the axes swapped back"),
    "permute": ("axes reordered", "dx = g permuted by the inverse order"),
    "narrow": ("x[start : start + length] along an axis", "dx = g in that slice, 0 elsewhere"),
    "split": ("pieces along an axis", "dx = the pieces' gradients concatenated (0 for unused pieces)"),
    "concat": ("xs joined along an axis", "dx_i = g's slice of x_i"),
    "stack": ("xs joined along a new axis", "dx_i = g's slice i"),
    "embedding": ("W[ids]", "dW = scatter-add of g into the rows of ids"),
    "gather": ("x[..., index, ...] along an axis", "dx = scatter-add of g at index"),
    "masked_fill": ("x where mask is false, value where true", "dx = g where mask is false"),
    "where": ("a where cond, b elsewhere", "da = g [cond], db = g [not cond], summed to shape"),
    "softmax": ("y = e^(x - max) / sum e^(x - max)", "dx = y (g - sum(g y))"),
    "log_softmax": ("y = x - max - log sum e^(x - max)", "dx = g - e^y sum(g)"),
    "masked_softmax": ("softmax with hidden keys at -inf (0 on a fully hidden row)", "dx = y (g - sum(g y))"),
    "cross_entropy": ("mean over kept n of (1 - eps)(-log p[n, y_n]) + eps mean_c(-log p[n, c])",
                      "dlogits = (p - (1 - eps) onehot(y) - eps / C) / kept, 0 on ignored rows"),
    "layer_norm": ("(x - mu) / sqrt(var + eps) w + b, over the last axis",
                   "dx = (w g - mean(w g) - x_hat mean(w g x_hat)) / sqrt(var + eps); dw = sum g x_hat; db = sum g"),
    "dropout": ("x m / (1 - p), m ~ Bernoulli(1 - p), in training", "dx = g m / (1 - p)"),
}


def read(rel):
    return open(os.path.join(REPO, rel), encoding="utf-8").read()


def declared_ops():
    names = re.findall(r"template <typename T>\s*(?:std::vector<)?Tensor<T>>?\s+([a-z_]+)\(", read(HEADER))
    return list(dict.fromkeys(n for n in names))  # in declaration order, once


def definition(op):
    for name in sorted(os.listdir(os.path.join(REPO, "framework/ops"))):
        if not name.endswith(".cpp"):
            continue
        rel = f"framework/ops/{name}"
        for number, line in enumerate(read(rel).split("\n"), 1):
            if re.match(rf"(std::vector<)?Tensor<T>>? {op}\(", line):
                return rel, number
    for number, line in enumerate(read(HEADER).split("\n"), 1):  # an inline alias such as view
        if re.search(rf"Tensor<T> {op}\(", line):
            return HEADER, number
    return None


def gradcheck_case(op):
    for number, line in enumerate(read(GRADCHECK).split("\n"), 1):
        m = re.search(r't\.push_back\(\{"([^"]+)", "([a-z_]+)"', line)
        if m and (m.group(2) == op or m.group(1).split(" ")[0] == op):
            return m.group(1), number
    return None


def table():
    rows = ["| op | forward | backward | defined at | gradcheck case |", "|---|---|---|---|---|"]
    problems = []
    for op in declared_ops():
        if op not in FORMULAS:
            problems.append(f"{HEADER}: op '{op}' has no row: add its formulas to FORMULAS in docs/tools/op_table.py")
            continue
        forward, backward = FORMULAS[op]
        where = definition(op)
        case = gradcheck_case(op)
        if where is None:
            problems.append(f"op '{op}': no definition found in framework/ops/")
            continue
        if case is None:
            problems.append(f"op '{op}': no case of {GRADCHECK} runs it")
            continue
        rel, line = where
        page_dir = os.path.dirname(PAGE)
        link = os.path.relpath(os.path.join(REPO, rel), os.path.join(REPO, page_dir))
        test = os.path.relpath(os.path.join(REPO, GRADCHECK), os.path.join(REPO, page_dir))
        rows.append(f"| `{op}` | {forward} | {backward} | [{os.path.basename(rel)}:{line}]({link}#L{line}) "
                    f"| [\"{case[0]}\"]({test}#L{case[1]}) |")
    return "\n".join(rows), problems


def main():
    check = "--check" in sys.argv[1:]
    text, problems = table()
    for p in problems:
        print(p)
    if problems:
        return 1
    page = read(PAGE)
    start, end = page.find(BEGIN), page.find(END)
    if start < 0 or end < start:
        print(f"{PAGE}: no {BEGIN} ... {END} block")
        return 1
    new = page[:start + len(BEGIN)] + "\n" + text + "\n" + page[end:]
    if new == page:
        print(f"{PAGE}: the op table is up to date ({len(declared_ops())} ops)")
        return 0
    if check:
        print(f"{PAGE}: the op table is out of date; run python3 docs/tools/op_table.py")
        return 1
    with open(os.path.join(REPO, PAGE), "w", encoding="utf-8") as f:
        f.write(new)
    print(f"{PAGE}: wrote the op table ({len(declared_ops())} ops)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
