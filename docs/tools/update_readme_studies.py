#!/usr/bin/python3
"""Rewrites the study index (docs/studies/README.md) from the write-ups in docs/studies/.

    /usr/bin/python3 docs/tools/update_readme_studies.py [--readme docs/studies/README.md] [--studies docs/studies] [--check]

Each write-up docs/studies/<name>.md starts with a title line "# Study N: ..." and holds its
verdict between the lines

    <!-- summary:begin -->
    ...
    <!-- summary:end -->

The README's block between "<!-- studies:begin" and "<!-- studies:end -->" becomes one bullet per
write-up, in study order: the title linked to the write-up, then its verdict. Everything else in
the README stays as it is; a run that would change nothing leaves the file untouched. A write-up
without a title or without its markers, or a README without its markers, is refused with one line
naming the file (exit 1). --check writes nothing and exits 1 when the README's list is out of date
(the test suite runs it on the repository's README).
"""
import argparse
import os
import re
import sys

BEGIN, END = "<!-- summary:begin -->", "<!-- summary:end -->"
README_BEGIN, README_END = "<!-- studies:begin", "<!-- studies:end -->"
README_BEGIN_LINE = README_BEGIN + " (docs/tools/update_readme_studies.py writes this list from docs/studies/*.md) -->"


class Refused(Exception):
    pass


def study_of(path):
    """(number, title, verdict) of one write-up."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    first = text.split("\n", 1)[0]
    m = re.fullmatch(r"# Study (\d+): (.+)", first)
    if not m:
        raise Refused(f"{path}:1: the first line should be '# Study N: title', got {first[:60]!r}")
    if text.count(BEGIN) != 1 or text.count(END) != 1 or text.index(BEGIN) > text.index(END):
        raise Refused(f"{path}: needs one '{BEGIN}' line and, after it, one '{END}' line")
    verdict = text[text.index(BEGIN) + len(BEGIN):text.index(END)].strip()
    if not verdict:
        raise Refused(f"{path}: the summary between the markers is empty")
    return int(m.group(1)), m.group(2).strip(), verdict


def summary_block(studies_dir, readme_dir):
    studies = []
    for name in sorted(os.listdir(studies_dir)):
        if name.endswith(".md") and name != "README.md":  # README.md: the index this script writes
            path = os.path.join(studies_dir, name)
            number, title, verdict = study_of(path)
            studies.append((number, title, os.path.relpath(path, readme_dir), verdict))
    if not studies:
        raise Refused(f"{studies_dir}: no write-ups (*.md)")
    numbers = [s[0] for s in studies]
    if len(set(numbers)) != len(numbers):
        raise Refused(f"{studies_dir}: two write-ups share a study number ({sorted(numbers)})")
    lines = [README_BEGIN_LINE]
    for number, title, link, verdict in sorted(studies):
        body = " ".join(line.strip() for line in verdict.splitlines() if line.strip())
        lines.append(f"- **[Study {number}: {title}]({link})** {body}")
    lines.append(README_END)
    return "\n".join(lines)


def main():
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--readme", default=os.path.join(repo, "docs", "studies", "README.md"))
    ap.add_argument("--studies", default=os.path.join(repo, "docs", "studies"))
    ap.add_argument("--check", action="store_true", help="exit 1 if the README's list is out of date; write nothing")
    a = ap.parse_args()
    try:
        with open(a.readme, encoding="utf-8") as f:
            readme = f.read()
        start, end = readme.find(README_BEGIN), readme.find(README_END)
        if start < 0 or end < start or readme.count(README_BEGIN) != 1:
            raise Refused(f"{a.readme}: needs one '{README_BEGIN} ... -->' line and, after it, one '{README_END}' line")
        block = summary_block(a.studies, os.path.dirname(os.path.abspath(a.readme)))
        new = readme[:start] + block + readme[end + len(README_END):]
    except (OSError, Refused) as e:
        print(f"update_readme_studies: {e}", file=sys.stderr)
        return 1
    if new == readme:
        print(f"{a.readme}: the study summary is up to date")
        return 0
    if a.check:
        print(f"update_readme_studies: {a.readme}: the study summary is out of date; run docs/tools/update_readme_studies.py",
              file=sys.stderr)
        return 1
    tmp = a.readme + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(new)
    os.replace(tmp, a.readme)
    print(f"{a.readme}: study summary rewritten from {a.studies}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
