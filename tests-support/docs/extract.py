#!/usr/bin/env python3
"""Prints the fenced code block that follows `<!-- LABEL -->` in a Markdown
file, so the docs tests run what the docs show, not a copy that can drift.

Usage: extract.py FILE LABEL
Fails (exit 1) unless exactly one block carries the label.
"""
import re
import sys


def blocks(text, label):
    marker = re.compile(r"^<!-- " + re.escape(label) + r" -->\s*$")
    lines = text.splitlines(keepends=True)
    found = []
    for i, line in enumerate(lines):
        if not marker.match(line):
            continue
        j = i + 1
        if j >= len(lines) or not lines[j].startswith("```"):
            sys.exit(f"{label}: the marker on line {i + 1} is not followed by a code fence")
        body = []
        for k in range(j + 1, len(lines)):
            if lines[k].startswith("```"):
                break
            body.append(lines[k])
        else:
            sys.exit(f"{label}: the code block after line {i + 1} is not closed")
        found.append("".join(body))
    return found


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    path, label = sys.argv[1], sys.argv[2]
    with open(path, encoding="utf-8") as f:
        found = blocks(f.read(), label)
    if len(found) != 1:
        sys.exit(f"{path}: expected one block labelled `{label}`, found {len(found)}")
    sys.stdout.write(found[0])


if __name__ == "__main__":
    main()
