"""Runs every ```python block of a documentation page as a script under the
launcher, so the page's snippets stay runnable.

    run_doc_snippets.py LAUNCHER PYTHON PAGE.md [RANKS]

Exits 1 naming the block (its first line number) and showing its output when
one fails. Python 3 standard library only.
"""
import os
import pathlib
import re
import subprocess
import sys
import tempfile

BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


def main():
    launcher, python, page = sys.argv[1:4]
    ranks = sys.argv[4] if len(sys.argv) > 4 else "2"
    text = pathlib.Path(page).read_text()
    failures = 0
    with tempfile.TemporaryDirectory() as work:
        for n, match in enumerate(BLOCK.finditer(text)):
            line = text.count("\n", 0, match.start()) + 2
            script = pathlib.Path(work, f"snippet{n}.py")
            script.write_text(match.group(1))
            out = subprocess.run([launcher, "-n", ranks, "--", python, str(script)],
                                 capture_output=True, text=True, timeout=120)
            if out.returncode == 0:
                print(f"PASS: {page}:{line}")
            else:
                failures += 1
                print(f"FAIL: {page}:{line} exited with {out.returncode}\n{out.stdout}{out.stderr}")
    if failures:
        sys.exit(1)


if __name__ == "__main__":
    main()
