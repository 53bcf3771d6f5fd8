#!/usr/bin/env python3
"""Checks the README and docs/ for a newcomer: every relative link resolves, and every command the
README's quick start and tutorial table name exists.

    check_docs.py REPO HEADLAB_BINARY TUTORIALS_DIR

1. Every relative link [text](target) and image ![alt](target) in README.md and docs/**/*.md names a
   file or folder that exists (the part after '#' is not checked; http(s) links are not followed).
2. Every `headlab COMMAND` in README.md's code (blocks and `inline`) names a command that `headlab --help` lists.
3. Every `tutorial_NAME` in README.md is a tutorial binary in TUTORIALS_DIR.
Prints one line per problem and exits 1, or prints "docs: N links, M commands, K tutorials checked".
"""
import os
import re
import subprocess
import sys

LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def markdown_files(repo):
    yield os.path.join(repo, "README.md")
    for root, dirs, files in os.walk(os.path.join(repo, "docs")):
        dirs.sort()
        for name in sorted(files):
            if name.endswith(".md"):
                yield os.path.join(root, name)


def without_code(text):
    """The text without fenced code blocks and inline code (links there are examples, not links)."""
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    return re.sub(r"`[^`\n]*`", "", text)


def main():
    repo, headlab, tutorials = sys.argv[1:4]
    problems, links = [], 0
    for path in markdown_files(repo):
        text = without_code(open(path, encoding="utf-8").read())
        for target in LINK.findall(text):
            if re.match(r"[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
                continue
            links += 1
            file_part = target.split("#", 1)[0]
            resolved = os.path.normpath(os.path.join(os.path.dirname(path), file_part))
            if not os.path.exists(resolved):
                problems.append(f"{os.path.relpath(path, repo)}: link to {target}: no such file")
    readme = open(os.path.join(repo, "README.md"), encoding="utf-8").read()
    help_text = subprocess.run([headlab, "--help"], capture_output=True, text=True).stdout
    known = set(re.findall(r"^\s+([a-z][a-z0-9-]*)\s", help_text, flags=re.M))
    code = "\n".join(re.findall(r"```.*?```", readme, flags=re.S) + re.findall(r"`[^`\n]+`", readme))
    commands = set(re.findall(r"(?:headlab|\$H)\s+(?:--[a-z-]+(?:\s+\d+)?\s+)*([a-z][a-z0-9-]*)", code))
    for command in sorted(commands):
        if command not in known:
            problems.append(f"README.md: `headlab {command}` is not a command of headlab --help")
    tutorial_names = set(re.findall(r"\b(tutorial_[a-z0-9_]+)", readme))
    for name in sorted(tutorial_names):
        if not os.path.isfile(os.path.join(tutorials, name)):
            problems.append(f"README.md: {name} is not a tutorial binary in {tutorials}")
    for p in problems:
        print(p)
    if problems:
        return 1
    print(f"docs: {links} links, {len(commands)} commands, {len(tutorial_names)} tutorials checked")
    return 0


if __name__ == "__main__":
    sys.exit(main())
