#!/usr/bin/env python3
"""Checks that the studies' measuring tools run with every option pinned, as check_recipes.py checks
`headlab train`: a default changed later cannot change a study's numbers when it is measured again.

    check_tool_pins.py HEADLAB_BINARY STUDIES_DIR [--unpin TOOL OPTION]

STUDIES_DIR is docs/studies; its study_runs.py holds PINNED_GLOBAL_OPTIONS, PINNED_TOOL_OPTIONS and
NOT_PINNED_OPTIONS. For `headlab --help` (the options before the tool) and `headlab TOOL --help` of
each pinned TOOL, every option the help lists must be pinned or listed as not pinned (with why it
cannot change a number); a pinned option the help no longer lists, a flag pinned with a value or an
option with a value pinned as a flag is named too. Then every .py under STUDIES_DIR is read for a
headlab command built without study_runs.tool_command: a list that starts with the headlab binary
([headlab, "heads", ...], [a.headlab, command, ...], run(headlab, [...])) or one whose second item
names a headlab tool; `train` and `study` are left to recipes (check_recipes.py). Each problem is one
line, exit status 1; else "tool pins: ...". --unpin TOOL OPTION checks as if the table lacked that
option (the ctest that shows the check fails).
"""
import glob
import os
import re
import subprocess
import sys

RECIPE_TOOLS = ("train", "study")  # pinned by the recipes' [train] sections (check_recipes.py)


def help_options(headlab, tool):
    """{option: (takes a value, its default as the help shows it or None)} of `headlab [TOOL] --help`
    (without TOOL: the options before any tool), and the tool names (without TOOL)."""
    done = subprocess.run([headlab, *([tool] if tool else []), "--help"], capture_output=True, text=True)
    if done.returncode != 0:
        return None, []
    options, tools, section = {}, [], None
    for line in done.stdout.splitlines():
        if line and not line.startswith(" "):
            section = line.rstrip(":")
            continue
        m = re.match(r"^  (-\S+)( [A-Z]\S*)?(.*)$", line)
        if section == "Options" and m:
            names = [n for n in m.group(1).split(",") if n.startswith("--")]
            typed = m.group(2) or ""
            default = typed.split("=", 1)[1] if "=" in typed else None
            said = re.search(r"\(default (\S+?)\)", m.group(3))
            if default is None and said:
                default = said.group(1)
            for name in names:
                options[name] = (bool(typed), default)
        elif section == "Subcommands":
            word = re.match(r"^  ([a-z][\w-]*)", line)
            if word:
                tools.append(word.group(1))
    return options, tools


def check_options(where, pinned, not_pinned, listed, notes):
    problems = []
    for option, (valued, default) in sorted(listed.items()):
        if option in pinned:
            value = pinned[option]
            if valued and isinstance(value, bool):
                problems.append(f"{where}: {option} takes a value but is pinned as a flag ({value})")
            elif not valued and not isinstance(value, bool):
                problems.append(f"{where}: {option} is a flag but is pinned to {value!r} (pin True or False)")
            elif valued and value is not None and default is not None and value != default:
                notes.append(f"note: {where}: {option} is pinned to {value}, its default is now {default}")
        elif option not in not_pinned:
            today = f" (its default today: {default})" if default is not None else ""
            problems.append(f"{where}: option {option} is not pinned{today}: add it to the table in "
                            f"study_runs.py at today's default, or to NOT_PINNED_OPTIONS with why it cannot "
                            f"change a number")
    for option in pinned:
        if option not in listed:
            problems.append(f"{where}: pinned option {option} is not an option of the tool any more")
    return problems


def direct_calls(studies, tools):
    """FILE:LINE: ... for each headlab command of a study script not built by tool_command."""
    names = "|".join(re.escape(t) for t in tools if t not in RECIPE_TOOLS)
    patterns = [
        re.compile(r"\[\s*(?:\w+\.)*headlab\s*,\s*(?!\*)(\"[\w-]+\"|'[\w-]+'|[\w.]+)"),  # [headlab, "heads", ...
        re.compile(r"\b(?:\w+\.)*headlab\s*,\s*\["),  # run(headlab, ["prune", ...])
        re.compile(r"\[\s*[\w.]+\s*,\s*[\"'](" + names + r")[\"']"),  # [binary, "heads", ...]
    ]
    found = []
    for path in sorted(glob.glob(os.path.join(studies, "**", "*.py"), recursive=True)):
        with open(path, encoding="utf-8") as f:
            for number, line in enumerate(f, 1):
                if line.lstrip().startswith("#"):
                    continue
                for p in patterns:
                    m = p.search(line)
                    if m and not (p is patterns[0] and m.group(1).strip("\"'") in RECIPE_TOOLS):
                        found.append(f"{os.path.relpath(path)}:{number}: a headlab command not built by "
                                     f"study_runs.tool_command (its options unpinned): {line.strip()[:120]}")
                        break
    return found


def main():
    args = sys.argv[1:]
    unpin = None
    if "--unpin" in args:
        at = args.index("--unpin")
        unpin = tuple(args[at + 1:at + 3])
        del args[at:at + 3]
    if len(args) != 2:
        sys.exit("usage: check_tool_pins.py HEADLAB_BINARY STUDIES_DIR [--unpin TOOL OPTION]")
    headlab, studies = args
    sys.path.insert(0, studies)
    import study_runs
    tables = {"": dict(study_runs.PINNED_GLOBAL_OPTIONS)}
    tables.update({tool: dict(options) for tool, options in study_runs.PINNED_TOOL_OPTIONS.items()})
    if unpin:
        tool = "" if unpin[0] == "headlab" else unpin[0]
        if unpin[1] not in tables.get(tool, {}):
            sys.exit(f"--unpin: {unpin[0]} {unpin[1]} is not pinned")
        del tables[tool][unpin[1]]
    not_pinned = study_runs.NOT_PINNED_OPTIONS
    problems, notes, tools, counted = [], [], [], 0
    for tool, pinned in tables.items():
        where = f"headlab {tool}".strip() if tool else "headlab (before the tool)"
        listed, subcommands = help_options(headlab, tool)
        if listed is None:
            problems.append(f"{where}: `{where} --help` fails: is {tool} still a headlab tool?")
            continue
        if not tool:
            tools = subcommands
        allowed = {**not_pinned["*"], **not_pinned.get(tool, {})}
        problems += check_options(where, pinned, allowed, listed, notes)
        problems += [f"{where}: {option} is listed as not pinned but is not an option of the tool any more"
                     for option in not_pinned.get(tool, {}) if option not in listed]
        counted += len(pinned)
    for tool, by_task in study_runs.TASK_OPTIONS.items():
        problems += [f"headlab {tool}: TASK_OPTIONS names {o}, which is not pinned" for o in by_task
                     if o not in tables.get(tool, {})]
    for tool, pairs in study_runs.EXCLUSIVE_OPTIONS.items():
        problems += [f"headlab {tool}: EXCLUSIVE_OPTIONS names {o}, which is not pinned" for pair in pairs
                     for o in pair if o not in tables.get(tool, {})]
    if not tools:
        problems.append("headlab --help lists no tools (Subcommands)")
    problems += direct_calls(studies, tools)
    for n in notes:
        print(n)
    for p in problems:
        print(p)
    if problems:
        sys.exit(1)
    print(f"tool pins: {len(tables) - 1} tools and the global options, {counted} options pinned; every study "
          f"script builds its headlab commands with tool_command")


if __name__ == "__main__":
    main()
