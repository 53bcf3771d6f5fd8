#!/usr/bin/python3
"""Rewrites the README's table "What the studies settled" from the study write-ups.

    /usr/bin/python3 docs/tools/update_readme_claims.py [--readme README.md] [--studies docs/studies] [--check]

docs/studies/claims.txt lists the claims in table order, one a line: `KEY | the claim as the
literature states it`. Each write-up docs/studies/<name>.md ("# Study N: ...") states its verdict on
a claim in one line:

    <!-- claim KEY (experiment label): the verdict with its numbers -->

(the label is optional). The README's block between "<!-- claims:begin" and "<!-- claims:end -->"
becomes a table with one row per claim: the claim, its write-ups linked in study order (each with its
label), and their verdicts joined by "; ". Refused with one line naming the file (exit 1): a claim
line with an unknown KEY, a KEY in claims.txt that no write-up states, a malformed claims.txt line,
missing README markers. --check writes nothing and exits 1 when the table is out of date.
"""
import argparse
import os
import re
import sys

BEGIN, END = "<!-- claims:begin", "<!-- claims:end -->"
BEGIN_LINE = BEGIN + " (docs/tools/update_readme_claims.py writes this table from docs/studies/*.md) -->"
CLAIM = re.compile(r"<!-- claim ([a-z0-9-]+)(?: \(([^)]*)\))?: (.+?) -->")


class Refused(Exception):
    pass


def read_claims(path):
    claims = []
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            key, sep, text = (part.strip() for part in line.partition("|"))
            if not sep or not re.fullmatch(r"[a-z0-9-]+", key) or not text:
                raise Refused(f"{path}:{number}: expected 'KEY | claim', got {line[:60]!r}")
            claims.append((key, text))
    return claims


def table(studies_dir, readme_dir):
    claims = read_claims(os.path.join(studies_dir, "claims.txt"))
    keys = {key for key, _ in claims}
    stated = {key: [] for key in keys}  # key -> [(study number, link, label, verdict)]
    for name in sorted(os.listdir(studies_dir)):
        if not name.endswith(".md") or name == "README.md":
            continue
        path = os.path.join(studies_dir, name)
        with open(path, encoding="utf-8") as f:
            text = f.read()
        m = re.match(r"# Study (\d+): ", text)
        if not m:
            continue
        for line_number, line in enumerate(text.splitlines(), 1):
            c = CLAIM.search(line)
            if not c:
                continue
            if c.group(1) not in keys:
                raise Refused(f"{path}:{line_number}: claim {c.group(1)!r} is not in claims.txt")
            stated[c.group(1)].append((int(m.group(1)), os.path.relpath(path, readme_dir), c.group(2), c.group(3)))
    lines = [BEGIN_LINE, "| claim | experiment | verdict |", "|---|---|---|"]
    for key, text in claims:
        if not stated[key]:
            raise Refused(f"{studies_dir}/claims.txt: no write-up states a verdict on {key!r}")
        rows = sorted(stated[key])
        experiments = ", ".join(f"[study {n}]({link})" + (f" ({label})" if label else "") for n, link, label, _ in rows)
        verdicts = "; ".join(v for *_, v in rows)
        lines.append(f"| {text} | {experiments} | {verdicts} |")
    lines.append(END)
    return "\n".join(lines)


def main():
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--readme", default=os.path.join(repo, "README.md"))
    ap.add_argument("--studies", default=os.path.join(repo, "docs", "studies"))
    ap.add_argument("--check", action="store_true")
    a = ap.parse_args()
    try:
        with open(a.readme, encoding="utf-8") as f:
            readme = f.read()
        start, end = readme.find(BEGIN), readme.find(END)
        if start < 0 or end < start or readme.count(BEGIN) != 1:
            raise Refused(f"{a.readme}: needs one '{BEGIN} ... -->' line and, after it, one '{END}' line")
        new = readme[:start] + table(a.studies, os.path.dirname(os.path.abspath(a.readme))) + readme[end + len(END):]
    except (OSError, Refused) as e:
        print(f"update_readme_claims: {e}", file=sys.stderr)
        return 1
    if new == readme:
        print(f"{a.readme}: the claims table is up to date")
        return 0
    if a.check:
        print(f"update_readme_claims: {a.readme}: the claims table is out of date; run docs/tools/update_readme_claims.py",
              file=sys.stderr)
        return 1
    with open(a.readme + ".tmp", "w", encoding="utf-8") as f:
        f.write(new)
    os.replace(a.readme + ".tmp", a.readme)
    print(f"{a.readme}: claims table rewritten from {a.studies}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
