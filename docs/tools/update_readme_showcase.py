#!/usr/bin/python3
"""Rewrites the translation page's showcase (docs/translation.md) from translation runs' summary.json.

    /usr/bin/python3 docs/tools/update_readme_showcase.py RUN_DIR [RUN_DIR ...] [--readme README.md]

The showcase is datasets/de-en/showcase.txt: everyday sentences written by hand for headlab, in no
split of the corpus (datasets/de-en/MANIFEST.md). `headlab train --task translate` decodes them with
its best weights and writes them to RUN/summary.json under "showcase", a list of
{"source", "reference", "greedy", "beam"}, beside "seed", "steps", "train_seconds",
"test_bleu_beam" and "test_chrf_beam".

What it writes: everything between the README's lines

    <!-- showcase:begin -->
    <!-- showcase:end -->

becomes a table of German | reference | headlab's beam output from the first RUN_DIR, a line naming
that run (seed, steps, seconds of training, test BLEU and chrF where summary.json has them) and one
line for each further RUN_DIR's numbers. Nothing else in the README changes, and the block depends
only on the summaries, so a second run with the same runs leaves the file as it is (it is not even
rewritten). The new README is written to a temporary file beside it, then renamed over it.

Exits 1 with one line naming the problem for: a RUN_DIR that is not a directory, a missing or
unreadable summary.json, one without "showcase" (or with an empty or malformed one), a README that
cannot be read, or one without exactly one begin marker followed by one end marker.
"""
import argparse
import html
import json
import os
import sys
import tempfile

BEGIN = "<!-- showcase:begin -->"
END = "<!-- showcase:end -->"
FIELDS = ("source", "reference", "greedy", "beam")
HERE = os.path.dirname(os.path.abspath(__file__))


class ShowcaseError(Exception):
    """Input this script cannot use; the message is the one line printed."""


# ===========================================================================
# Reading
# ===========================================================================


def read_summary(run_dir):
    """The run's summary.json as a dict, its "showcase" checked: a non-empty list of objects whose
    four FIELDS are strings."""
    if not os.path.isdir(run_dir):
        raise ShowcaseError(f"{run_dir}: not a run directory")
    path = os.path.join(run_dir, "summary.json")
    try:
        with open(path, encoding="utf-8") as f:
            summary = json.load(f)
    except FileNotFoundError:
        raise ShowcaseError(f"{path}: not found (has the run finished?)") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ShowcaseError(f"{path}: cannot be read ({e.__class__.__name__})") from None
    if not isinstance(summary, dict) or "showcase" not in summary:
        raise ShowcaseError(f'{path}: no "showcase" (a translation run of a headlab that decodes '
                            f"datasets/de-en/showcase.txt writes it)")
    showcase = summary["showcase"]
    if not isinstance(showcase, list) or not showcase:
        raise ShowcaseError(f'{path}: "showcase" must be a non-empty list')
    for i, entry in enumerate(showcase):
        if not isinstance(entry, dict) or not all(isinstance(entry.get(k), str) for k in FIELDS):
            raise ShowcaseError(f'{path}: "showcase" entry {i} needs the strings ' + ", ".join(FIELDS))
    return summary


def split_readme(path):
    """(text before the begin marker's line, the old block, text from the end marker's line on)."""
    try:
        with open(path, encoding="utf-8", newline="") as f:
            text = f.read()
    except (OSError, UnicodeDecodeError) as e:
        raise ShowcaseError(f"{path}: cannot be read ({e.__class__.__name__})") from None
    lines = text.splitlines(keepends=True)
    begins = [i for i, line in enumerate(lines) if line.strip() == BEGIN]
    ends = [i for i, line in enumerate(lines) if line.strip() == END]
    if len(begins) != 1 or len(ends) != 1 or ends[0] < begins[0]:
        raise ShowcaseError(f"{path}: needs one line {BEGIN} and, after it, one line {END} "
                            f"(found {len(begins)} and {len(ends)})")
    b, e = begins[0], ends[0]
    return "".join(lines[: b + 1]), "".join(lines[b + 1: e]), "".join(lines[e:])


# ===========================================================================
# Writing
# ===========================================================================


def cell(text):
    """Text as one Markdown table cell: no line breaks, | escaped, and <unk> shown, not taken for HTML."""
    return html.escape(" ".join(text.split()), quote=False).replace("|", "\\|")


def run_numbers(summary):
    """ "seed 1, 5044 steps, 600 s of training; test BLEU (beam) 4.63, chrF 31.20": what summary has."""
    parts = []
    if "seed" in summary:
        parts.append(f"seed {summary['seed']}")
    if "steps" in summary:
        parts.append(f"{summary['steps']} steps")
    if isinstance(summary.get("train_seconds"), (int, float)):
        parts.append(f"{summary['train_seconds']:.0f} s of training")
    scores = []
    if isinstance(summary.get("test_bleu_beam"), (int, float)):
        scores.append(f"test BLEU (beam) {summary['test_bleu_beam']:.2f}")
    if isinstance(summary.get("test_chrf_beam"), (int, float)):
        scores.append(f"chrF {summary['test_chrf_beam']:.2f}")
    text = ", ".join(parts) or "a run without seed, steps or seconds in its summary"
    return text + ("; " + ", ".join(scores) if scores else "")


def showcase_block(summaries):
    """The lines between the markers (each ending in a newline) for these runs' summaries."""
    first = summaries[0]
    showcase = first["showcase"]
    out = ["<!-- Written by docs/tools/update_readme_showcase.py from a run's summary.json: rerun it, "
           "do not edit here. -->\n",
           f"{len(showcase)} everyday sentences written for headlab (`datasets/de-en/showcase.txt`, in no split "
           "of the corpus, never trained on), translated by headlab with beam search:\n",
           "\n",
           "| German | reference | headlab (beam) |\n",
           "|---|---|---|\n"]
    out += [f"| {cell(e['source'])} | {cell(e['reference'])} | {cell(e['beam'])} |\n" for e in showcase]
    out += ["\n",
            f"Made by the run with {run_numbers(first)}. How many of the {len(showcase)} are acceptable "
            "translations is for a person to judge: BLEU on so few sentences says little.\n"]
    if len(summaries) > 1:
        out += ["\n", "The same sentences were also decoded by: "
                + "; ".join(f"the run with {run_numbers(s)}" for s in summaries[1:]) + ".\n"]
    return "".join(out)


def write_atomic(path, text):
    """text -> path through a temporary file in the same directory and os.replace (never half a file)."""
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".showcase-", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            f.write(text)
        os.chmod(tmp, os.stat(path).st_mode & 0o7777)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise


def update(readme, run_dirs):
    """Rewrites readme's block from run_dirs; returns a line saying what happened."""
    summaries = [read_summary(d) for d in run_dirs]
    head, old, tail = split_readme(readme)
    new = showcase_block(summaries)
    if new == old:
        return f"{readme}: showcase already up to date ({len(summaries[0]['showcase'])} sentences)"
    try:
        write_atomic(readme, head + new + tail)
    except OSError as e:
        raise ShowcaseError(f"{readme}: cannot be written ({e.strerror})") from None
    return f"{readme}: showcase rewritten ({len(summaries[0]['showcase'])} sentences, {len(summaries)} run(s))"


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run_dirs", nargs="+", metavar="RUN_DIR", help="translation run directories; the first one's "
                    "beam outputs go in the table")
    ap.add_argument("--readme", default=os.path.normpath(os.path.join(HERE, "..", "translation.md")),
                    help="the page to rewrite (default: docs/translation.md)")
    a = ap.parse_args(argv)
    try:
        print(update(a.readme, a.run_dirs))
    except ShowcaseError as e:
        print(f"update_readme_showcase: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
