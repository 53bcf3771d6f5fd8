#!/usr/bin/env python3
"""Checks (or writes) a study page's block from the report.md that `headlab study report` wrote.

    check_report_block.py PAGE REPORT_MD [--write]

The page's text between "<!-- report:begin -->" and "<!-- report:end -->" must be REPORT_MD without
its first line (the "# title", which the page has as its own heading). Exits 1 naming the page when
they differ; --write replaces the block instead. Stdlib only.
"""
import sys

BEGIN, END = "<!-- report:begin -->", "<!-- report:end -->"


def main():
    page, report = sys.argv[1], sys.argv[2]
    with open(page, encoding="utf-8") as f:
        text = f.read()
    with open(report, encoding="utf-8") as f:
        body = f.read().split("\n", 1)[1].strip("\n")
    if text.count(BEGIN) != 1 or text.count(END) != 1:
        print(f"{page}: needs one '{BEGIN}' and one '{END}' line")
        sys.exit(1)
    new = text[: text.index(BEGIN) + len(BEGIN)] + "\n" + body + "\n" + text[text.index(END):]
    if "--write" in sys.argv[3:]:
        with open(page, "w", encoding="utf-8") as f:
            f.write(new)
        print(f"{page}: block written from {report}")
    elif new != text:
        print(f"{page}: its report block differs from {report} (rerun: check_report_block.py PAGE REPORT --write)")
        sys.exit(1)
    else:
        print(f"{page}: the report block agrees with {report}")


if __name__ == "__main__":
    main()
