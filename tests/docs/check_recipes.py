#!/usr/bin/env python3
"""Checks that every study recipe pins every option of `headlab train`, so that a default changed
later cannot change a study's runs.

    check_recipes.py HEADLAB_BINARY RECIPE...

For each RECIPE (an INI file with a [train] section, e.g. docs/studies/head-count-grammar/recipe.ini),
`headlab train --config RECIPE --print-config` prints every option train has, resolved; each must
be a line of the recipe's [train] section with the same value. An option the recipe lacks (a new
one, or a line deleted) or whose value differs is named with its file and exits 1; otherwise prints
"recipes: N recipes pin all M options".
"""
import subprocess
import sys


def options(text, where):
    section, out = None, {}
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("["):
            section = line
            continue
        if section == "[train]":
            key, sep, value = line.partition("=")
            if not sep:
                raise SystemExit(f"{where}:{number}: not a key=value line")
            out[key.strip()] = value.strip()
    return out


def main():
    headlab, recipes = sys.argv[1], sys.argv[2:]
    problems, count = [], 0
    for recipe in recipes:
        with open(recipe, encoding="utf-8") as f:
            pinned = options(f.read(), recipe)
        printed = subprocess.run([headlab, "train", "--config", recipe, "--print-config"], capture_output=True,
                                 text=True)
        if printed.returncode != 0:
            problems.append(f"{recipe}: headlab train refuses it: {printed.stderr.strip()}")
            continue
        resolved = options(printed.stdout, "--print-config")
        count = len(resolved)
        for key, value in resolved.items():
            if key not in pinned:
                problems.append(f"{recipe}: option {key} is not pinned (resolved today to {value})")
            elif pinned[key] != value:
                problems.append(f"{recipe}: option {key} is {pinned[key]} in the recipe, {value} when read")
    for p in problems:
        print(p)
    if problems:
        sys.exit(1)
    print(f"recipes: {len(recipes)} recipes pin all {count} options")


if __name__ == "__main__":
    main()
