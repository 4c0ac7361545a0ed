#!/usr/bin/env python3
"""Keeps the C++ code of the documentation equal to code that CI compiles.

Sources: docs/snippets/*.cpp hold regions

    // [snippet:NAME]
    ...code...
    // [end]

(regions may nest; an inner region's marker lines are not part of the outer
one). Markdown: a fenced ```cpp block preceded by the line

    <!-- snippet: NAME -->

(blank lines between them allowed) must hold exactly region NAME, compared
after removing the common indentation, trailing spaces and leading/trailing
blank lines. The check fails, naming the file, line and snippet, when

  * a marked block differs from its region, or names no region;
  * a marker is not followed by a ```cpp block;
  * a ```cpp block in docs/guide/*.md carries no marker (unchecked C++);
  * a region is opened twice, or not closed, or an [end] has no region.

Regions that no page uses are listed as a note, not an error.

    check_snippets.py [--root REPO]       check (exit 1 on any problem)
    check_snippets.py [--root REPO] --update
                                          rewrite marked blocks from their
                                          regions, then check

Python 3 standard library only.
"""
import argparse
import pathlib
import re
import sys
import textwrap

REGION_BEGIN = re.compile(r"^\s*//\s*\[snippet:\s*([A-Za-z0-9_.-]+)\s*\]\s*$")
REGION_END = re.compile(r"^\s*//\s*\[end\]\s*$")
MARKER = re.compile(r"^\s*<!--\s*snippet:\s*([A-Za-z0-9_.-]+)\s*-->\s*$")
FENCE = re.compile(r"^(\s*)(```+|~~~+)\s*([A-Za-z0-9_+-]*)")
CPP_LANGS = {"cpp", "c++", "cxx", "cc", "hpp", "h"}


def normalize(lines):
    """Common indentation and trailing spaces removed, outer blank lines dropped."""
    text = textwrap.dedent("\n".join(line.rstrip() for line in lines))
    out = text.split("\n")
    while out and not out[0].strip():
        out.pop(0)
    while out and not out[-1].strip():
        out.pop()
    return out


class Region:
    def __init__(self, name, path, line):
        self.name, self.path, self.line, self.lines = name, path, line, []


def read_regions(sources, problems):
    regions = {}
    for path in sources:
        open_regions = []
        for number, line in enumerate(path.read_text(encoding="utf-8").split("\n"), 1):
            begin, end = REGION_BEGIN.match(line), REGION_END.match(line)
            if begin:
                name = begin.group(1)
                if name in regions:
                    first = regions[name]
                    problems.append(f"{path}:{number}: snippet '{name}' is defined again "
                                    f"(first at {first.path}:{first.line}): rename one")
                region = Region(name, path, number)
                regions.setdefault(name, region)
                open_regions.append(region)
            elif end:
                if not open_regions:
                    problems.append(f"{path}:{number}: '// [end]' without an open snippet region")
                else:
                    open_regions.pop()
            else:
                for region in open_regions:
                    region.lines.append(line)
        for region in open_regions:
            problems.append(f"{path}:{region.line}: snippet '{region.name}' is not closed: "
                            "add '// [end]'")
    return regions


class Block:
    """A fenced code block of a markdown file."""

    def __init__(self, lang, indent, start, end, body, marker, marker_line):
        self.lang, self.indent, self.start, self.end = lang, indent, start, end
        self.body, self.marker, self.marker_line = body, marker, marker_line


def read_blocks(lines, path, problems):
    """Fenced blocks with their markers; lines are 0-based indices."""
    blocks, pending, pending_line, i = [], None, None, 0
    while i < len(lines):
        line = lines[i]
        marker, fence = MARKER.match(line), FENCE.match(line)
        if marker:
            if pending:
                problems.append(f"{path}:{pending_line + 1}: marker for snippet '{pending}' is "
                                "not followed by a ```cpp block")
            pending, pending_line = marker.group(1), i
        elif fence:
            indent, ticks, lang = fence.group(1), fence.group(2), fence.group(3).lower()
            close = re.compile(r"^\s*" + re.escape(ticks[0]) + "{" + str(len(ticks)) + r",}\s*$")
            j = i + 1
            while j < len(lines) and not close.match(lines[j]):
                j += 1
            blocks.append(Block(lang, indent, i, j, lines[i + 1:j], pending, pending_line))
            if pending and lang not in CPP_LANGS:
                problems.append(f"{path}:{pending_line + 1}: marker for snippet '{pending}' is "
                                f"followed by a '{lang or 'plain'}' block, not ```cpp")
            pending = None
            i = j
        elif line.strip() and pending:
            problems.append(f"{path}:{pending_line + 1}: marker for snippet '{pending}' is "
                            "not followed by a ```cpp block")
            pending = None
        i += 1
    if pending:
        problems.append(f"{path}:{pending_line + 1}: marker for snippet '{pending}' is not "
                        "followed by a ```cpp block")
    return blocks


def first_difference(want, got):
    for n, (w, g) in enumerate(zip(want, got), 1):
        if w != g:
            return f"line {n} of the block: source has\n      {w!r}\n    the page has\n      {g!r}"
    if len(want) != len(got):
        return (f"the source region has {len(want)} lines, the page's block {len(got)}")
    return "no difference"


def check_page(path, regions, guide_dir, used, problems, update):
    lines = path.read_text(encoding="utf-8").split("\n")
    blocks = read_blocks(lines, path, problems)
    in_guide = path.parent.resolve() in [d.resolve() for d in guide_dir]
    replacements = []
    for block in blocks:
        if block.lang not in CPP_LANGS:
            continue
        if block.marker is None:
            if in_guide:
                problems.append(f"{path}:{block.start + 1}: ```cpp block without a "
                                "'<!-- snippet: NAME -->' marker: move the code into "
                                "docs/snippets/*.cpp (or the example) as a region and mark the block")
            continue
        region = regions.get(block.marker)
        if region is None:
            problems.append(f"{path}:{block.marker_line + 1}: snippet '{block.marker}' does not "
                            "exist in docs/snippets/*.cpp or examples/")
            continue
        used.add(block.marker)
        want, got = normalize(region.lines), normalize(block.body)
        if want == got:
            continue
        if update:
            replacements.append((block, [block.indent + w if w else "" for w in want]))
        else:
            problems.append(f"{path}:{block.start + 1}: snippet '{block.marker}' differs from "
                            f"{region.path}:{region.line}: {first_difference(want, got)}")
    if replacements:
        for block, new_body in reversed(replacements):
            lines[block.start + 1:block.end] = new_body
        path.write_text("\n".join(lines), encoding="utf-8")
        print(f"updated {len(replacements)} block(s) in {path}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--root", type=pathlib.Path,
                        default=pathlib.Path(__file__).resolve().parents[2],
                        help="repository root (default: two levels above this script)")
    parser.add_argument("--update", action="store_true",
                        help="rewrite marked blocks from their regions")
    args = parser.parse_args(argv)
    docs = args.root / "docs"
    problems = []
    # Regions live in docs/snippets/*.cpp and, for the tutorials, in the
    # examples' own sources (so the tutorial shows the code that runs).
    sources = sorted((docs / "snippets").glob("*.cpp"))
    for pattern in ("*.cpp", "*.h"):
        sources += sorted((args.root / "examples").rglob(pattern))
    regions = read_regions(sources, problems)
    # Pages whose every ```cpp block must be marked.
    strict = [docs / "guide", docs / "tutorials"]
    if args.update:
        for page in sorted(docs.rglob("*.md")):
            check_page(page, regions, strict, set(), [], update=True)
    used = set()
    pages = sorted(docs.rglob("*.md"))
    for page in pages:
        check_page(page, regions, strict, used, problems, update=False)
    unused = sorted(set(regions) - used)
    if unused:
        print("note: snippet regions no page uses: " + ", ".join(unused))
    if problems:
        for p in problems:
            print("error: " + p)
        print(f"check_snippets: {len(problems)} problem(s); run tests/docs/check_snippets.py "
              "--update to copy the regions into the pages")
        return 1
    print(f"check_snippets: {len(used)} snippet(s) in {len(pages)} page(s) match "
          f"{len(regions)} region(s) of docs/snippets and examples/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
