#!/usr/bin/env python3
"""Keeps the source folders layered: a folder includes only folders below it,
no two folders include each other at any depth, and no folder of src/ holds
more than MAX_FILES source files directly.

Why: once data/ can include model/, or comm/ can include dp/, nothing keeps
the lower layer buildable, testable or understandable on its own, and
include cycles creep in one "just this once" at a time. The rule is checked
here, in CI (ctest layering.check), rather than remembered in reviews.

The layers, bottom to top, are the LAYERS table below. Folders on one level
may include each other; a folder may include its own level and any level
below, never one above.

Scanned: every .h .hpp .cpp .cc file under src/<folder>/** and
include/tarantella/<folder>/**; a file's folder is the first path component
after src/ or include/tarantella/, so sub-folders stay in their folder's
layer (src/data/pipeline/ is data, src/cli/plan/ is cli). Files directly in
include/tarantella/ (umbrella headers such as tarantella.h) and folders
missing from the table have no level, so they cannot include "upwards"; their includes are still
read for unknown folders.

Includes that count:
    #include <tarantella/X/...>   X must be in the table (else an error)
    #include "X/..."              only when X is in the table
Everything else (<torch/torch.h>, "plan/launch_plan.h" inside src/cli,
"proto/foo.pb.h", <tarantella/tarantella.h>) is ignored.

The folder map (why: a folder is a map of its roles only while it is
small, and two folders that include each other are one folder in two
places): every folder at any depth is a node (src/comm/mpi is "comm/mpi";
include/tarantella/X/... is folder X, as src/X is); an include names the
file it resolves to (<tarantella/...> under include/, "a/b.h" under src/,
else under the including file's top folder, as src/cli's "plan/x.h").
Folders whose includes form a cycle are reported with one include of each
edge. Counted: .h .hpp .cpp .cc files directly in a folder of src/.

    check_layers.py [--root REPO]   check (exit 1 on an upward include, an
                                    unknown folder, a cycle of folders or an
                                    overfull folder, 2 on a bad root)
    check_layers.py --list          print the layer table

Python 3 standard library only.
"""
import argparse
import os
import pathlib
import re
import sys

# The layer table, bottom to top. One entry is one level; a level may hold
# several folders, which may include each other.
LAYERS = [
    ("base",),
    ("comm",),
    ("runtime",),
    ("data",),
    # Data parallelism, and pipeline stages' layout, schedules and cuts.
    ("dp", "stages"),
    # File formats: atomic writes, torch.save reading (no Model knowledge).
    ("io",),
    # The Keras collection: layers, losses, metrics, optimizers, schedules,
    # SyncBatchNorm, the module adapter.
    ("keras",),
    # The training engine: the step, the loops, the callback interface and
    # TrainingHost, timeline, auto-tuning, progress.
    ("train",),
    # The built-in callbacks, written against TrainingHost.
    ("callbacks",),
    # The front ends over the engine, one level: the C++ tnt::Model facade
    # and the Python package's bindings (src/python).
    ("model", "python"),
    ("cli",),
]

EXTENSIONS = {".h", ".hpp", ".cpp", ".cc"}
# Source files a folder of src/ may hold directly.
MAX_FILES = 25
# Folders under the root whose first subfolder is a file's own folder.
SCAN_ROOTS = ("src", "include/tarantella")

INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]*)[>"]')


def level_of_folder():
    levels = {}
    for level, folders in enumerate(LAYERS):
        for folder in folders:
            levels[folder] = level
    return levels


def strip_block_comments(lines):
    """Yields (line number, line) with /* ... */ comments blanked out, so an
    include shown in a block comment is not taken for a real one."""
    in_comment = False
    for number, line in enumerate(lines, start=1):
        out = []
        i = 0
        while i < len(line):
            if in_comment:
                end = line.find("*/", i)
                if end < 0:
                    i = len(line)
                else:
                    in_comment = False
                    i = end + 2
            else:
                start = line.find("/*", i)
                # A "/*" after "//" is inside a line comment.
                line_comment = line.find("//", i)
                if start < 0 or (0 <= line_comment < start):
                    out.append(line[i:])
                    i = len(line)
                else:
                    out.append(line[i:start])
                    in_comment = True
                    i = start + 2
        yield number, "".join(out)


def included_folder(kind, name, levels):
    """The layer folder an include names, or None when it does not count."""
    parts = name.strip().split("/")
    if kind == "<":
        if parts[0] != "tarantella" or len(parts) < 3:
            return None  # not ours, or an umbrella header like tarantella.h
        return parts[1]  # may be unknown: the caller reports that
    if len(parts) >= 2 and parts[0] in levels:
        return parts[0]
    return None


def source_files(root):
    """Yields (path, own folder or None) for every file to scan."""
    for scan in SCAN_ROOTS:
        base = root / scan
        if not base.is_dir():
            continue
        for dirpath, dirnames, filenames in os.walk(base):
            dirnames.sort()
            for filename in sorted(filenames):
                path = pathlib.Path(dirpath) / filename
                if path.suffix not in EXTENSIONS:
                    continue
                rel = path.relative_to(base).parts
                folder = rel[0] if len(rel) >= 2 else None
                yield path, folder


def check(root, out):
    levels = level_of_folder()
    table = "scripts/check_layers.py"
    problems = []
    unlayered = set()
    checked = 0
    scanned = []
    for path, folder in source_files(root):
        checked += 1
        scanned.append(path)
        own_level = levels.get(folder) if folder is not None else None
        if folder is not None and own_level is None:
            unlayered.add(folder)
        shown = path.relative_to(root).as_posix()
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError as error:
            problems.append(f"{shown}: cannot read: {error}")
            continue
        for number, line in strip_block_comments(text.splitlines()):
            match = INCLUDE.match(line)
            if not match:
                continue
            target = included_folder(match.group(1), match.group(2), levels)
            if target is None:
                continue
            target_level = levels.get(target)
            if target_level is None:
                problems.append(f"{shown}:{number}: unknown folder {target}: "
                                f"add it to the layer table in {table}")
            elif own_level is not None and target_level > own_level:
                problems.append(
                    f"{shown}:{number}: src folder '{folder}' (level {own_level}) "
                    f"includes '{target}' (level {target_level}), which is above it: "
                    f"move the code down or pass what it needs in")
    if checked == 0:
        print(f"layering: no .h/.hpp/.cpp/.cc files under {root}/src or "
              f"{root}/include/tarantella: wrong --root?", file=out)
        return 2
    problems.extend(check_map(root, scanned))
    for folder in sorted(unlayered):
        print(f"layering: note: folder '{folder}' is not in the layer table in "
              f"{table}; its own includes are not checked", file=out)
    for problem in problems:
        print(problem, file=out)
    if problems:
        print(f"layering: {len(problems)} problem(s) in {checked} files", file=out)
        return 1
    print(f"layering: {checked} files checked, no upward includes, no folders that "
          f"include each other, none over {MAX_FILES} files", file=out)
    return 0


def folder_path(root, path):
    """The folder a file sits in, as the map names it: "comm/mpi" for
    src/comm/mpi/x.h and for include/tarantella/comm/mpi/x.h."""
    for scan in SCAN_ROOTS:
        base = root / scan
        try:
            rel = path.relative_to(base).parts
        except ValueError:
            continue
        return "/".join(rel[:-1]) or "."
    return None


def resolve_include(root, path, kind, name):
    """The file under root that an include names, or None (not ours)."""
    name = name.strip()
    if kind == "<":
        if not name.startswith("tarantella/"):
            return None
        candidates = [root / "include" / name]
    else:
        candidates = [root / "src" / name]
        rel = path.relative_to(root).parts
        if len(rel) >= 3 and rel[0] == "src":
            candidates.append(root / "src" / rel[1] / name)
        candidates.append(path.parent / name)
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    return None


def strongly_connected(graph):
    """The cycles of a {node: {node, ...}} graph: Tarjan's components of
    more than one node, each sorted."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []
    counter = [0]

    def visit(node):
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def check_map(root, files):
    """Problems of the folder map: overfull folders, folders in a cycle."""
    problems = []
    counts = {}
    edges = {}  # (from folder, to folder) -> first "file:line"
    for path in files:
        own = folder_path(root, path)
        if path.is_relative_to(root / "src"):
            counts[own] = counts.get(own, 0) + 1
        text = path.read_text(encoding="utf-8", errors="replace")
        for number, line in strip_block_comments(text.splitlines()):
            match = INCLUDE.match(line)
            if not match:
                continue
            target = resolve_include(root, path, match.group(1), match.group(2))
            if target is None:
                continue
            other = folder_path(root, target)
            if other is not None and other != own:
                shown = path.relative_to(root).as_posix()
                edges.setdefault((own, other), f"{shown}:{number}")
    for folder, count in sorted(counts.items()):
        if count > MAX_FILES:
            problems.append(f"src/{folder} holds {count} source files directly, more than "
                            f"{MAX_FILES}: split it into sub-folders by role")
    graph = {}
    for a, b in edges:
        graph.setdefault(a, set()).add(b)
    for component in strongly_connected(graph):
        members = set(component)
        shown = [f"{a} -> {b} ({where})" for (a, b), where in sorted(edges.items())
                 if a in members and b in members]
        problems.append(f"folders {', '.join(component)} include each other: "
                        f"{'; '.join(shown)}: move what both need into one of them "
                        f"or a folder below both")
    return problems


def print_table(out):
    print("layers, bottom to top (a folder may include its own level and below):",
          file=out)
    for level, folders in enumerate(LAYERS):
        print(f"  level {level}: {', '.join(folders)}", file=out)


def main(argv=None):
    parser = argparse.ArgumentParser(
        description="Check that each source folder includes only folders "
                    "at or below its own layer.")
    parser.add_argument("--root", type=pathlib.Path,
                        default=pathlib.Path(__file__).resolve().parent.parent,
                        help="repository root (default: the parent of scripts/)")
    parser.add_argument("--list", action="store_true", help="print the layer table")
    args = parser.parse_args(argv)
    if args.list:
        print_table(sys.stdout)
        return 0
    root = args.root.resolve()
    if not root.is_dir():
        print(f"layering: --root {args.root} is not a directory")
        return 2
    return check(root, sys.stdout)


if __name__ == "__main__":
    sys.exit(main())
