#!/usr/bin/env python3
"""Writes a chart's README.md to stdout: its README.md.in with the line "<!-- values table -->" replaced by a
table of every value in values.yaml, described by the "# --" comment above each key.

Rows: every leaf key (a scalar, a list, an empty map) and every documented map whose keys have no "# --"
comments of their own (such as `resources`), plus the keys that are unset by default, documented by a
"# @unset KEY (TYPE) -- TEXT" comment. A leaf without a description is an error, so a new value cannot be
left out of the README. Needs PyYAML (scripts/install-kubernetes-validate.sh's venv has it).

Usage: chart-readme.py CHART_DIR > CHART_DIR/README.md
"""

import json
import re
import sys

import yaml

KEY = re.compile(r"^(\s*)([A-Za-z0-9_]+):(.*)$")
UNSET = re.compile(r"^#\s*@unset\s+(\S+)\s+\(([^)]*)\)\s+--\s*(.*)$")


def comments(lines):
    """Maps each dotted key path to its "# --" description, and lists the @unset entries."""
    described = {}
    unset = []
    block = []
    stack = []  # (indent, key)
    for line in lines:
        stripped = line.strip()
        if stripped.startswith("#"):
            block.append(stripped)
            continue
        match = KEY.match(line)
        if not match:
            if not stripped:
                flush_unset(block, unset)
                block = []
            continue
        indent, key = len(match.group(1)), match.group(2)
        while stack and stack[-1][0] >= indent:
            stack.pop()
        stack.append((indent, key))
        path = ".".join(k for _, k in stack)
        text = description(block)
        if text is not None:
            described[path] = text
        flush_unset(block, unset)
        block = []
    flush_unset(block, unset)
    return described, unset


def description(block):
    """The text of the last "# --" comment run in `block`, or None."""
    start = None
    for i, line in enumerate(block):
        if line.startswith("# --"):
            start = i
    if start is None:
        return None
    parts = [block[start][len("# --"):].strip()]
    parts += [line.lstrip("#").strip() for line in block[start + 1:]]
    return " ".join(p for p in parts if p)


def flush_unset(block, unset):
    """Collects "# @unset" entries (and their continuation lines) from a comment block."""
    current = None
    for line in block:
        match = UNSET.match(line)
        if match:
            current = [match.group(1), match.group(2), match.group(3).strip()]
            unset.append(current)
        elif current is not None and not line.startswith("# --"):
            current[2] = (current[2] + " " + line.lstrip("#").strip()).strip()
        else:
            current = None


# Checked in order: bool before int, as a Python bool is an int.
TYPE_NAMES = [(bool, "bool"), (int, "int"), (float, "float"), (str, "string"), (list, "list"), (dict, "object")]


def type_name(value):
    return next((name for kind, name in TYPE_NAMES if isinstance(value, kind)), "null")


def rows(values, described, prefix=""):
    for key, value in values.items():
        path = prefix + key
        nested = isinstance(value, dict) and value
        documented_children = nested and any(p.startswith(path + ".") for p in described)
        if nested and documented_children:
            yield from rows(value, described, path + ".")
            continue
        if path not in described:
            sys.exit(f"chart-readme.py: values.yaml key {path!r} has no '# --' description")
        yield path, type_name(value), value, described[path]


def cell(text):
    return text.replace("|", "\\|")


def main():
    chart = sys.argv[1]
    with open(f"{chart}/values.yaml") as f:
        text = f.read()
    values = yaml.safe_load(text)
    described, unset = comments(text.splitlines())
    table = ["| Key | Type | Default | Description |", "| --- | --- | --- | --- |"]
    entries = [(p, t, json.dumps(v, ensure_ascii=False), d) for p, t, v, d in rows(values, described)]
    entries += [(key, kind, "unset", text) for key, kind, text in unset]
    for path, kind, default, text in sorted(entries, key=lambda e: e[0].lower()):
        table.append(f"| `{path}` | {kind} | `{cell(default)}` | {cell(text)} |")
    with open(f"{chart}/README.md.in") as f:
        template = f.read()
    marker = "<!-- values table -->"
    if marker not in template:
        sys.exit(f"chart-readme.py: {chart}/README.md.in lacks the line {marker}")
    sys.stdout.write(template.replace(marker, "\n".join(table)))


if __name__ == "__main__":
    main()
