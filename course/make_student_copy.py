#!/usr/bin/env python3
"""Write the student copy of headlab for course mode (docs/course.md).

    course/make_student_copy.py --out DIR      write (or refresh) the student copy in DIR
    course/make_student_copy.py --out DIR --with-traps
                                                the same tree with the regions of the trapped tasks and of their
                                                prerequisites filled in with the reference and the wrong answers
                                                of course/traps.txt switchable at run time
                                                (HEADLAB_COURSE_TRAP=<name>): course/check_course.sh's trap check
    course/make_student_copy.py --check        only validate the markers, pages and course/*.txt
    course/make_student_copy.py --tasks        print "id<TAB>title<TAB>prerequisites (transitive)"
    course/make_student_copy.py --no-task-tests   print the doctest filter of the tests that run no task

The copy holds the repository's files (git-tracked, plus untracked ones git does not ignore) with
every region

    // BEGIN TASK 2.1: scaled dot-product attention
    HEADLAB_TASK("2.1");
    ...reference code...
    // END TASK 2.1

replaced by

    // TASK 2.1: scaled dot-product attention. TODO: write it here (course/tasks/2.1.md says what and how).
    throw ::headlab::NotImplemented("TASK 2.1 (scaled dot-product attention) is not implemented yet: ...");

course/student_copy.txt's changes (instructor-only files left out, the student README in place of
the instructor's, flash_attention replaced) and everything else unchanged, so it builds and each task's tests fail with NotImplemented until the
student fills the task in. A task whose op also has a fast kernel (ops/kernels/README.md) marks that
kernel's body as its fast twin,

    // BEGIN FAST TWIN OF TASK 0.6
    ...the same computation, vectorised...
    // END FAST TWIN OF TASK 0.6

which the copy blanks the same way: it is the answer too, and the student copy never runs it (there
the ops always run the task's region). Before anything is written, the markers are validated (every BEGIN has a
matching END with the same id, HEADLAB_TASK("<id>") follows each BEGIN, ids are unique, regions do not
nest, the regions and course/tasks.txt agree on ids, titles and files, docs/course.md's task table
lists every task, every task has its page course/tasks/<id>.md with the required sections and the
student README links to it), and the would-be copy is searched for reference code: a line that the
library has only inside regions must not appear anywhere (a tutorial, a test, a document), and no
"twin" of a region (3 of 4 consecutive lines equal to lines of the region, up to whitespace and
numbers: the same code with another axis) may stay unblanked outside it unless reviewed as given. Problems are reported
as FILE:LINE: message, with exit status 1 and nothing written.

Refreshing an existing copy rewrites only the files that changed (so a build directory next to it
rebuilds incrementally) and deletes files that are no longer part of it. DIR must be empty, absent,
or a copy this script wrote (it leaves a .headlab-student-copy file there).
"""
import argparse
import os
import re
import shutil
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TASKS_FILE = "course/tasks.txt"
COPY_FILE = "course/student_copy.txt"
TRAPS_FILE = "course/traps.txt"
STUDENT_README = "course/student/README.md"
# The sections every task page has (course/tasks/<id>.md).
PAGE_SECTIONS = ("## What to write", "## The formula", "## In scope", "## Test", "## Pitfalls", "## Hints")
STAMP = ".headlab-student-copy"
SOURCE_EXTENSIONS = (".cpp", ".hpp", ".h", ".cc", ".cxx", ".hxx", ".ipp")

BEGIN_RE = re.compile(r"^(\s*)// BEGIN TASK (\S+): (.+?)\s*$")
END_RE = re.compile(r"^\s*// END TASK (\S+)\s*$")
MARKER_LIKE_RE = re.compile(r"^\s*//\s*(BEGIN|END)\s*TASK\b")
HEADLAB_TASK_RE = re.compile(r'^\s*HEADLAB_TASK\("([^"]+)"\);\s*$')
TWIN_BEGIN_RE = re.compile(r"^(\s*)// BEGIN FAST TWIN OF TASK (\S+)\s*$")
TWIN_END_RE = re.compile(r"^\s*// END FAST TWIN OF TASK (\S+)\s*$")
TWIN_LIKE_RE = re.compile(r"^\s*//\s*(BEGIN|END)\s+FAST\s+TWIN\b")
ID_RE = re.compile(r"^[0-9]+\.[0-9]+$")


class Problems:
    def __init__(self):
        self.items = []

    def add(self, where, message):
        self.items.append(f"{where}: {message}")

    def exit_if_any(self):
        if self.items:
            for item in self.items:
                print(item, file=sys.stderr)
            print(f"make_student_copy: {len(self.items)} problem(s); nothing written", file=sys.stderr)
            sys.exit(1)


def read_tasks(problems):
    """course/tasks.txt -> (ordered list of task dicts, directives dict)."""
    tasks, directives, seen = [], {}, {}
    path = os.path.join(REPO, TASKS_FILE)
    with open(path, encoding="utf-8") as f:
        for number, raw in enumerate(f, 1):
            line = raw.strip()
            where = f"{TASKS_FILE}:{number}"
            if not line or line.startswith("#"):
                continue
            if line.startswith("@"):
                name, _, value = line[1:].partition(" | ")
                directives[name.strip()] = value.strip()
                continue
            fields = line.split(" | ")
            if len(fields) != 6:
                problems.add(where, "expected 'id | title | prerequisites | file | tutorial | points'")
                continue
            tid, title, deps, source, tutorial, points = (x.strip() for x in fields)
            if not re.fullmatch(r"[0-9]{1,3}", points):
                problems.add(where, f"points '{points}' should be a whole number from 0 to 999")
            if not ID_RE.match(tid):
                problems.add(where, f"task id '{tid}' should look like 2.1")
            if tid in seen:
                problems.add(where, f"task {tid} is declared twice (first at line {seen[tid]})")
            if re.search(r'["\\;]', line):
                problems.add(where, "no quotes, backslashes or semicolons please (they end up in C++ and CMake)")
            seen[tid] = number
            tasks.append({
                "id": tid, "title": title, "deps": [] if deps == "-" else deps.split(), "file": source,
                "tutorial": tutorial, "line": number, "points": points,
            })
    ids = {t["id"] for t in tasks}
    for t in tasks:
        for d in t["deps"]:
            if d not in ids:
                problems.add(f"{TASKS_FILE}:{t['line']}", f"task {t['id']} depends on undeclared task {d}")
            if d == t["id"]:
                problems.add(f"{TASKS_FILE}:{t['line']}", f"task {t['id']} depends on itself")
    if "no-task-tests" not in directives:
        problems.add(TASKS_FILE, "the '@no-task-tests | <doctest filter>' line is missing")
    return tasks, directives


def closures(tasks, problems):
    """id -> every task it depends on, directly or not (and a cycle check)."""
    deps = {t["id"]: t["deps"] for t in tasks}
    result = {}

    def visit(tid, stack):
        if tid in result:
            return result[tid]
        if tid in stack:
            problems.add(TASKS_FILE, "the prerequisites form a cycle: " + " -> ".join(stack + [tid]))
            return set()
        closure = set()
        for d in deps.get(tid, []):
            if d in deps:
                closure |= {d} | visit(d, stack + [tid])
        result[tid] = closure
        return closure

    for t in tasks:
        visit(t["id"], [])
    return result


def repository_files():
    """The git-tracked files and the untracked ones git does not ignore, as they are on disk."""
    out = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                         check=True, stdout=subprocess.PIPE).stdout.decode("utf-8")
    files = []
    for rel in sorted(set(p for p in out.split("\0") if p)):
        full = os.path.join(REPO, rel)
        if os.path.islink(full) or os.path.isfile(full):  # deleted files and submodules are skipped
            files.append(rel)
    return files


def find_regions(files, problems):
    """Scans the C++ sources: -> {id: region}, {relpath: [regions and fast twins in order]}, [fast twins]."""
    regions, by_file, twins = {}, {}, []
    for rel in files:
        if not rel.endswith(SOURCE_EXTENSIONS) or os.path.islink(os.path.join(REPO, rel)):
            continue
        with open(os.path.join(REPO, rel), encoding="utf-8") as f:
            lines = f.read().split("\n")
        current = None
        for i, line in enumerate(lines):
            where = f"{rel}:{i + 1}"
            begin, end = BEGIN_RE.match(line), END_RE.match(line)
            twin_begin, twin_end = TWIN_BEGIN_RE.match(line), TWIN_END_RE.match(line)
            if twin_begin:
                if current:
                    problems.add(where, f"BEGIN FAST TWIN OF TASK {twin_begin.group(2)} inside the region of "
                                        f"{current['kind']} {current['id']} (opened at line {current['begin'] + 1}); "
                                        "regions do not nest")
                    continue
                current = {"kind": "FAST TWIN OF TASK", "id": twin_begin.group(2), "indent": twin_begin.group(1),
                           "file": rel, "begin": i}
            elif twin_end:
                if not current or current["kind"] != "FAST TWIN OF TASK" or current["id"] != twin_end.group(1):
                    problems.add(where, f"END FAST TWIN OF TASK {twin_end.group(1)} without its BEGIN")
                    current = None
                else:
                    current["end"] = i
                    twins.append(current)
                    by_file.setdefault(rel, []).append(current)
                    current = None
            elif TWIN_LIKE_RE.match(line):
                problems.add(where, "malformed marker: write '// BEGIN FAST TWIN OF TASK <id>' or "
                                    "'// END FAST TWIN OF TASK <id>'")
            elif begin:
                if current:
                    problems.add(where, f"BEGIN TASK {begin.group(2)} inside the region of {current['kind']} "
                                        f"{current['id']} (opened at line {current['begin'] + 1}); regions do not nest")
                    continue
                current = {"kind": "TASK", "id": begin.group(2), "title": begin.group(3), "indent": begin.group(1),
                           "file": rel, "begin": i}
                if i + 1 >= len(lines) or not HEADLAB_TASK_RE.match(lines[i + 1]) or \
                        HEADLAB_TASK_RE.match(lines[i + 1]).group(1) != current["id"]:
                    problems.add(f"{rel}:{i + 2}", f'the line after BEGIN TASK {current["id"]} must be '
                                                   f'HEADLAB_TASK("{current["id"]}");')
            elif end:
                if not current or current["kind"] != "TASK":
                    problems.add(where, f"END TASK {end.group(1)} without a BEGIN")
                    current = None
                elif end.group(1) != current["id"]:
                    problems.add(where, f"END TASK {end.group(1)} closes the region of TASK {current['id']} "
                                        f"(opened at line {current['begin'] + 1})")
                    current = None
                else:
                    current["end"] = i
                    if current["id"] in regions:
                        first = regions[current["id"]]
                        problems.add(f"{rel}:{current['begin'] + 1}",
                                     f"TASK {current['id']} has a second region (the first is at "
                                     f"{first['file']}:{first['begin'] + 1}); task ids are unique")
                    else:
                        regions[current["id"]] = current
                        by_file.setdefault(rel, []).append(current)
                    current = None
            elif MARKER_LIKE_RE.match(line):
                problems.add(where, "malformed marker: write '// BEGIN TASK <id>: <title>' or '// END TASK <id>'")
            elif HEADLAB_TASK_RE.match(line) and not (i > 0 and BEGIN_RE.match(lines[i - 1])):
                problems.add(where, "HEADLAB_TASK(...) outside a region's first line")
        if current:
            problems.add(f"{rel}:{current['begin'] + 1}", f"BEGIN {current['kind']} {current['id']} has no END "
                                                          f"{current['kind']} {current['id']} before the end of the file")
    return regions, by_file, twins


def check_against_tasks(tasks, regions, twins, problems):
    declared = {t["id"]: t for t in tasks}
    for twin in twins:
        if twin["id"] not in regions:
            problems.add(f"{twin['file']}:{twin['begin'] + 1}",
                         f"FAST TWIN OF TASK {twin['id']}: there is no region of TASK {twin['id']} it is the twin of")
    for tid, r in sorted(regions.items()):
        where = f"{r['file']}:{r['begin'] + 1}"
        t = declared.get(tid)
        if not t:
            problems.add(where, f"TASK {tid} is not declared in {TASKS_FILE}")
            continue
        if r["title"] != t["title"]:
            problems.add(where, f"title '{r['title']}' differs from {TASKS_FILE}:{t['line']} ('{t['title']}')")
        if r["file"] != t["file"]:
            problems.add(where, f"TASK {tid} is declared in {TASKS_FILE}:{t['line']} to live in {t['file']}")
    for t in tasks:
        if t["id"] not in regions:
            problems.add(f"{TASKS_FILE}:{t['line']}", f"task {t['id']} has no BEGIN TASK {t['id']} region "
                                                      f"(expected in {t['file']})")


def check_task_tests(files, tasks, problems):
    """Every task has a doctest case named "task <id>: ...", and each such case names a declared task."""
    declared = {t["id"] for t in tasks}
    found = set()
    for rel in files:
        if not (rel.startswith("tests/") and rel.endswith(".cpp")):
            continue
        with open(os.path.join(REPO, rel), encoding="utf-8") as f:
            for number, line in enumerate(f, 1):
                for name in re.findall(r'TEST_CASE\("(task [^"]*)"', line):
                    m = re.match(r"task (\S+): ", name)
                    if not m or m.group(1) not in declared:
                        problems.add(f"{rel}:{number}", f"test case '{name}' does not start with 'task <id>: ' "
                                                        f"for a task of {TASKS_FILE}")
                        continue
                    if re.search(r"[;\[\]]", name):  # CTest reads the discovered names as CMake lists
                        problems.add(f"{rel}:{number}", "no ';', '[' or ']' in a test case name (CTest)")
                    found.add(m.group(1))
    for t in tasks:
        if t["id"] not in found:
            problems.add(f"{TASKS_FILE}:{t['line']}", f"task {t['id']} has no TEST_CASE(\"task {t['id']}: ...\")")


def read_copy_config(problems):
    """course/student_copy.txt -> (paths and directories left out, {copy path: instructor path},
    {(path, line text)} of code reviewed as given, not a twin)."""
    leave_out, replace, given = [], {}, set()
    path = os.path.join(REPO, COPY_FILE)
    if not os.path.isfile(path):
        problems.add(COPY_FILE, "missing (what the student copy leaves out and replaces)")
        return leave_out, replace, given
    with open(path, encoding="utf-8") as f:
        for number, raw in enumerate(f, 1):
            line = raw.strip()
            where = f"{COPY_FILE}:{number}"
            if not line or line.startswith("#"):
                continue
            fields = [x.strip() for x in line.split(" | ")]
            if fields[0] == "leave-out" and len(fields) == 2:
                leave_out.append(fields[1])
            elif fields[0] == "replace" and len(fields) == 3:
                if not os.path.isfile(os.path.join(REPO, fields[2])):
                    problems.add(where, f"replacement {fields[2]} does not exist")
                replace[fields[1]] = fields[2]
            elif fields[0] == "given" and len(fields) == 3:
                given.add((fields[1], fields[2]))
            else:
                problems.add(where, "expected 'leave-out | PATH', 'replace | PATH | SOURCE' or 'given | PATH | LINE'")
    return leave_out, replace, given


def left_out(rel, leave_out, replace):
    """Whether the instructor file `rel` stays out of the copy (left out, or the source of a replacement)."""
    if rel in replace.values():
        return True
    return any(rel == p or (p.endswith("/") and rel.startswith(p)) for p in leave_out)


def check_pages(tasks, problems):
    """Every task has its page course/tasks/<id>.md with the required sections, linked from the student README."""
    readme = ""
    readme_path = os.path.join(REPO, STUDENT_README)
    if os.path.isfile(readme_path):
        with open(readme_path, encoding="utf-8") as f:
            readme = f.read()
    else:
        problems.add(STUDENT_README, "missing (the student copy's README)")
    for t in tasks:
        rel = f"course/tasks/{t['id']}.md"
        full = os.path.join(REPO, rel)
        if not os.path.isfile(full):
            problems.add(f"{TASKS_FILE}:{t['line']}", f"task {t['id']} has no page {rel}")
            continue
        with open(full, encoding="utf-8") as f:
            text = f.read()
        first = text.split("\n", 1)[0]
        if first != f"# Task {t['id']}: {t['title']}":
            problems.add(f"{rel}:1", f"the first line should be '# Task {t['id']}: {t['title']}'")
        for section in PAGE_SECTIONS:
            if not re.search("^" + re.escape(section) + r"\b", text, re.M):
                problems.add(rel, f"no section '{section}'")
        if f'-tc="task {t["id"]}:*"' not in text:
            problems.add(rel, f'the test command (-tc="task {t["id"]}:*") is missing')
        if readme and f"(course/tasks/{t['id']}.md)" not in readme:
            problems.add(STUDENT_README, f"the task table does not link course/tasks/{t['id']}.md")


def normalized(line):
    """A line as the twin search compares it: no whitespace, every number 0."""
    return re.sub(r"[0-9]+", "0", re.sub(r"\s+", "", line))


def significant(line):
    key = line.strip()
    return len(re.sub(r"\s+", "", key)) >= 16 and not key.startswith("//") and not key.startswith("#") and \
        not HEADLAB_TASK_RE.match(line)


def region_lines(by_file):
    """{significant normalized line of a region or fast twin: 'TASK id'}, per task."""
    lines_of = {}
    for rel, regions in by_file.items():
        with open(os.path.join(REPO, rel), encoding="utf-8") as f:
            lines = f.read().split("\n")
        for r in regions:
            lines_of.setdefault(r["id"], set()).update(normalized(x) for x in lines[r["begin"] + 1:r["end"]]
                                                       if significant(x))
    return lines_of


def find_twins(files, by_file, declared, lines_of, replace, given):
    """FILE:LINE of code outside regions that looks like a region: 3 of 4 consecutive significant lines
    equal to lines of one region, up to whitespace and numbers (the same step with another axis: a
    twin that gives the task away). Code reviewed as given (course/student_copy.txt's 'given' lines,
    e.g. a forward pass that shares its loops with the backward of the task; a line covers the rest of
its function) is not reported. Only
    framework/ is searched: the tests, tutorials and documents are covered by find_leaks."""
    twins = []
    for rel in files:
        if not rel.startswith("framework/") or not rel.endswith(SOURCE_EXTENSIONS):
            continue
        src = replace.get(rel, rel)
        with open(os.path.join(REPO, src), encoding="utf-8") as f:
            lines = f.read().split("\n")
        if src in by_file:
            lines = blanked(rel, lines, by_file[src], declared)
        body = [(i + 1, normalized(x)) for i, x in enumerate(lines) if significant(x)]
        # A 'given' line covers its function: from that line to the next "}" in column 0.
        covered, inside = set(), False
        for i, x in enumerate(lines):
            inside = inside or (rel, x.strip()) in given
            if inside:
                covered.add(i + 1)
                inside = x != "}"
        reported = set()
        for start in range(len(body) - 3):
            window = body[start:start + 4]
            for tid, known in lines_of.items():
                hits = [n for n, x in window if x in known]
                if len(hits) >= 3:
                    first = hits[0]
                    text = lines[first - 1].strip()
                    if first in covered or tid in reported:
                        continue
                    reported.add(tid)
                    twins.append(f"{rel}:{first}: looks like a twin of TASK {tid} outside its region (blank it, "
                                 f"mark it 'BEGIN FAST TWIN OF TASK', factor it into the task, or list it in "
                                 f"{COPY_FILE} as 'given | {rel} | {text}'): {text}")
    return twins


def read_traps(problems):
    """course/traps.txt -> [trap dicts]."""
    traps = []
    path = os.path.join(REPO, TRAPS_FILE)
    if not os.path.isfile(path):
        return traps
    with open(path, encoding="utf-8") as f:
        for number, raw in enumerate(f, 1):
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            fields = [x.strip() for x in line.split(" | ", 5)]
            where = f"{TRAPS_FILE}:{number}"
            if len(fields) != 6 or fields[3] not in ("stmt", "expr"):
                problems.add(where, "expected 'name | task | file | stmt or expr | reference text | wrong text'")
                continue
            name, tid, rel, kind, old, new = fields
            if not re.fullmatch(r"[a-z0-9-]+", name):
                problems.add(where, f"trap name '{name}': lower-case letters, digits and '-' only")
            full = os.path.join(REPO, rel)
            if not os.path.isfile(full):
                problems.add(where, f"file {rel} does not exist")
                continue
            with open(full, encoding="utf-8") as f2:
                text = f2.read()
            count = sum(1 for x in text.split("\n") if stmt_matches(x, old)) if kind == "stmt" else text.count(old)
            if count != 1:
                problems.add(where, f"the reference text of trap {name} is found {count} times in {rel} "
                                    f"(exactly once needed; has the code changed?)")
            traps.append({"name": name, "task": tid, "file": rel, "kind": kind, "old": old, "new": new,
                          "line": number})
    return traps


def code_of(line):
    """A source line without its indentation and trailing '// comment' (how a stmt trap finds its line)."""
    return re.sub(r"\s+//.*$", "", line).strip()


def stmt_matches(line, old):
    """Whether a stmt trap's reference text is this line (with or without its trailing comment)."""
    return line.strip() == old or code_of(line) == old


def with_traps(lines, file_traps):
    """A source file's lines with its traps switchable by HEADLAB_COURSE_TRAP (check_course only)."""
    out = ["#include <cstdlib>", "#include <cstring>",
           "static bool headlab_course_trap(const char* name) {  // HEADLAB_COURSE_TRAP=name[,name...]",
           '  const char* s = std::getenv("HEADLAB_COURSE_TRAP");',
           "  const std::size_t n = std::strlen(name);",
           "  for (const char* p = s; p && *p; p = std::strchr(p, ',') ? std::strchr(p, ',') + 1 : nullptr)",
           "    if (std::strncmp(p, name, n) == 0 && (p[n] == ',' || p[n] == 0)) return true;",
           "  return false;", "}"]
    applied = set()
    for line in lines:
        # Whole statements first; several traps on one statement chain:
        #   if (trap a) { wrong a } else if (trap b) { wrong b } else { reference }
        stmts = [t for t in file_traps if t["kind"] == "stmt" and stmt_matches(line, t["old"])]
        if stmts:
            indent = line[:len(line) - len(line.lstrip())]
            branches = "".join(f'if (headlab_course_trap("{t["name"]}")) {{ {t["new"]} }} else ' for t in stmts)
            line = f'{indent}{branches}{{ {code_of(line)} }}'
            applied.update(t["name"] for t in stmts)
        for t in file_traps:
            if t["kind"] == "expr" and t["old"] in line:
                line = line.replace(t["old"], f'(headlab_course_trap("{t["name"]}") ? ({t["new"]}) : ({t["old"]}))')
                applied.add(t["name"])
        out.append(line)
    for t in file_traps:
        if t["name"] not in applied:
            sys.exit(f"make_student_copy: {TRAPS_FILE}:{t['line']}: trap {t['name']} could not be applied to {t['file']}")
    return out


def message(task):
    return (f"TASK {task['id']} ({task['title']}) is not implemented yet: fill in the region marked "
            f"TASK {task['id']} in {task['file']}")


def blanked(rel, lines, file_regions, declared):
    """The student version of one source file's lines.

    A blanked region leaves the parameters only it used unused; the pragma on top keeps the copy's
    build free of -Wunused-parameter reports that would point students at code that is not wrong."""
    out = ["// Student copy: parameters used only by the TODO regions are unused until you fill them in.",
           '#pragma GCC diagnostic ignored "-Wunused-parameter"']
    last = 0
    for r in file_regions:
        t = declared[r["id"]]
        out.extend(lines[last:r["begin"]])
        if r["kind"] == "TASK":
            out.append(f"{r['indent']}// TASK {t['id']}: {t['title']}. TODO: write it here "
                       f"(course/tasks/{t['id']}.md says what and how).")
        else:
            out.append(f"{r['indent']}// The fast twin of TASK {t['id']} ({t['title']}) is not part of the student "
                       "copy: the op runs your region instead (ops/kernels/README.md).")
        out.append(f'{r["indent"]}throw ::headlab::NotImplemented("{message(t)}");')
        last = r["end"] + 1
    out.extend(lines[last:])
    return out


def secret_lines(files, by_file):
    """Lines of reference code that the library has only inside regions (a copy must not contain them).

    A line that the library also has outside any region (a loop header, a common declaration) is
    public; one that appears in a tutorial, a test or a document is not: that would be a leak.
    Fast twins count as regions: they are blanked too."""
    inside, outside = set(), set()
    for rel in files:
        if not rel.startswith("framework/"):
            continue
        full = os.path.join(REPO, rel)
        if os.path.islink(full):
            continue
        try:
            with open(full, encoding="utf-8") as f:
                lines = f.read().split("\n")
        except UnicodeDecodeError:
            continue
        spans = [(r["begin"], r["end"]) for r in by_file.get(rel, [])]
        for i, line in enumerate(lines):
            key = line.strip()
            if any(b < i < e for b, e in spans):
                if len(key) >= 20 and not key.startswith("//") and not HEADLAB_TASK_RE.match(line):
                    inside.add(key)
            else:
                outside.add(key)
    return inside - outside


def copy_entries(files, leave_out, replace):
    """[(path in the copy, path in the instructor tree)] after course/student_copy.txt."""
    entries = [(rel, replace.get(rel, rel)) for rel in files if not left_out(rel, leave_out, replace)]
    present = {rel for rel, _ in entries}
    entries += [(rel, src) for rel, src in replace.items() if rel not in present]
    return sorted(entries)


def copy_lines(rel, src, by_file, declared, traps_by_file=None):
    """The copy's text of one file as lines, or None to copy the bytes as they are."""
    if traps_by_file is not None and src in traps_by_file:  # --with-traps: the reference, traps switchable
        with open(os.path.join(REPO, src), encoding="utf-8") as f:
            lines = f.read().split("\n")
        return with_traps(lines, traps_by_file[src]) if traps_by_file[src] else lines
    if src in by_file:
        with open(os.path.join(REPO, src), encoding="utf-8") as f:
            return blanked(rel, f.read().split("\n"), by_file[src], declared)
    return None


def write_copy(out_dir, entries, by_file, declared, traps_by_file=None):
    out_dir = os.path.abspath(out_dir)
    repo = os.path.abspath(REPO)
    if out_dir == repo or repo.startswith(out_dir + os.sep):
        sys.exit(f"make_student_copy: --out {out_dir} would overwrite the repository")
    if os.path.exists(out_dir) and os.listdir(out_dir) and not os.path.exists(os.path.join(out_dir, STAMP)):
        sys.exit(f"make_student_copy: {out_dir} is not empty and is not a student copy (no {STAMP}); "
                 "give an empty or new directory")
    inside_out = os.path.relpath(out_dir, repo)
    if not inside_out.startswith(".."):  # the copy lives inside the repository (say build/...): skip it
        entries = [(r, s) for r, s in entries if not (s == inside_out or s.startswith(inside_out + os.sep))]
    os.makedirs(out_dir, exist_ok=True)
    written = changed = 0
    wanted = {rel for rel, _ in entries} | {STAMP}
    for rel, src_rel in entries:
        src, dst = os.path.join(REPO, src_rel), os.path.join(out_dir, rel)
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        if os.path.islink(src):
            target = os.readlink(src)
            if not (os.path.islink(dst) and os.readlink(dst) == target):
                if os.path.lexists(dst):
                    os.remove(dst)
                os.symlink(target, dst)
                changed += 1
            written += 1
            continue
        lines = copy_lines(rel, src_rel, by_file, declared, traps_by_file)
        if lines is None:
            with open(src, "rb") as f:
                data = f.read()
        else:
            data = "\n".join(lines).encode("utf-8")
        old = None
        if os.path.isfile(dst) and not os.path.islink(dst):
            with open(dst, "rb") as f:
                old = f.read()
        if old != data:  # unchanged files keep their time stamps: builds next to the copy stay incremental
            if os.path.lexists(dst):
                os.remove(dst)
            with open(dst, "wb") as f:
                f.write(data)
            changed += 1
        shutil.copymode(src, dst)
        written += 1
    removed = 0
    for root, dirs, names in os.walk(out_dir, topdown=False):
        for name in names:
            rel = os.path.relpath(os.path.join(root, name), out_dir)
            if rel not in wanted:
                os.remove(os.path.join(root, name))
                removed += 1
        for name in dirs:
            path = os.path.join(root, name)
            if not os.path.islink(path) and not os.listdir(path):
                os.rmdir(path)
    with open(os.path.join(out_dir, STAMP), "w", encoding="utf-8") as f:
        f.write("Written by course/make_student_copy.py: the headlab student copy (docs/course.md).\n")
    return written, changed, removed


def find_leaks(entries, by_file, declared, secrets):
    """FILE:LINE of every line of the would-be copy that is reference code (checked before writing)."""
    leaks = []
    for rel, src in entries:
        path = os.path.join(REPO, src)
        if os.path.islink(path):
            continue
        try:
            lines = copy_lines(rel, src, by_file, declared)
            if lines is None:
                with open(path, encoding="utf-8") as f:
                    lines = f.read().split("\n")
        except UnicodeDecodeError:
            continue
        for number, line in enumerate(lines, 1):
            if line.strip() in secrets:
                leaks.append(f"{rel}:{number}: reference code of a task region: {line.strip()}")
    return leaks


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--out", help="directory of the student copy (created, or refreshed if it is one)")
    mode.add_argument("--check", action="store_true", help="validate the markers and course/tasks.txt only")
    mode.add_argument("--tasks", action="store_true", help="print id, title and transitive prerequisites")
    mode.add_argument("--no-task-tests", action="store_true", help="print the filter of the tests that run no task")
    mode.add_argument("--traps", action="store_true", help="print 'name<TAB>task<TAB>prerequisites' of every trap")
    parser.add_argument("--with-traps", action="store_true",
                        help="with --out: the regions filled in, course/traps.txt's wrong answers switchable")
    args = parser.parse_args()
    if args.with_traps and not args.out:
        parser.error("--with-traps goes with --out")

    problems = Problems()
    tasks, directives = read_tasks(problems)
    closure = closures(tasks, problems)
    problems.exit_if_any()
    if args.tasks:
        for t in tasks:
            print(f"{t['id']}\t{t['title']}\t{' '.join(sorted(closure[t['id']]))}")
        return
    if args.no_task_tests:
        print(directives["no-task-tests"])
        return
    traps = read_traps(problems)
    problems.exit_if_any()
    if args.traps:
        for t in traps:
            print(f"{t['name']}\t{t['task']}\t{' '.join(sorted(closure[t['task']]))}")
        return

    files = repository_files()
    regions, by_file, twins = find_regions(files, problems)
    check_against_tasks(tasks, regions, twins, problems)
    for t in tasks:
        if not os.path.isfile(os.path.join(REPO, t["file"])):
            problems.add(f"{TASKS_FILE}:{t['line']}", f"file {t['file']} does not exist")
    check_task_tests(files, tasks, problems)
    check_pages(tasks, problems)
    leave_out, replace, given = read_copy_config(problems)
    for t in traps:
        if t["task"] not in {x["id"] for x in tasks}:
            problems.add(f"{TRAPS_FILE}:{t['line']}", f"trap {t['name']}: no task {t['task']}")
    docs = os.path.join(REPO, "docs", "course.md")
    if os.path.isfile(docs):  # the instructors' task table follows course/tasks.txt
        with open(docs, encoding="utf-8") as f:
            text = f.read()
        for t in tasks:
            if f"| {t['id']} | {t['title']} |" not in text:
                problems.add("docs/course.md", f"the task table has no row '| {t['id']} | {t['title']} |'")

    problems.exit_if_any()
    declared = {t["id"]: t for t in tasks}
    entries = copy_entries(files, leave_out, replace)
    copied = {rel for rel, _ in entries}
    for rel in replace:
        if rel in by_file:
            problems.add(COPY_FILE, f"{rel} has task regions: it cannot be replaced")
    for t in tasks:  # a task's region must reach the copy (blanked), or the copy cannot be solved
        if t["file"] not in copied:
            problems.add(COPY_FILE, f"{t['file']} (task {t['id']}) is left out of the copy")
    for leak in find_leaks(entries, by_file, declared, secret_lines(files, by_file)):
        problems.add(*leak.split(": ", 1))
    for twin in find_twins(sorted(copied), by_file, declared, region_lines(by_file), replace, given):
        problems.add(*twin.split(": ", 1))
    problems.exit_if_any()
    if args.check:
        print(f"make_student_copy: {len(regions)} task regions and {len(twins)} fast twins in {len(by_file)} files "
              f"match {TASKS_FILE}; {len(tasks)} task pages; {len(traps)} traps; no leak, no twin")
        return
    traps_by_file = None
    if args.with_traps:
        # The files of the trapped tasks and of their prerequisites get the reference (with the traps
        # switchable); every other region stays blank, so the rebuild stays small.
        needed = set()
        for t in traps:
            needed |= {t["task"]} | closure[t["task"]]
        traps_by_file = {declared[tid]["file"]: [] for tid in needed}
        for t in traps:
            traps_by_file.setdefault(t["file"], []).append(t)
    written, changed, removed = write_copy(args.out, entries, by_file, declared, traps_by_file)
    what = (f"{len(traps)} traps switchable (HEADLAB_COURSE_TRAP), the regions of {len(traps_by_file)} files "
            "filled in" if args.with_traps else
            f"{len(regions)} task regions and {len(twins)} fast twins blanked")
    print(f"make_student_copy: {args.out}: {written} files ({changed} written, {removed} removed), {what}")


if __name__ == "__main__":
    main()
