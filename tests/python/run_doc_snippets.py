"""Runs every ```python block of a documentation page under the launcher, so
the page's snippets stay runnable.

    run_doc_snippets.py LAUNCHER PYTHON PAGE.md [RANKS]

One job runs all the blocks, one after the other, each as a script of its
own: a fresh module namespace (`__name__ == "__main__"`, its own `__file__`),
so a block that leans on an earlier block's imports or names fails as it
would for a reader who copies it. One job instead of one per block: a rank's
start (Python, torch, MPI) cost more than the blocks themselves (10 blocks
at 2 ranks: 43 s as 10 jobs). What the blocks share is the process: the
runtime, torch's global settings (a block's `tnt.set_seed` stays in force
for the next ones).

Exits 1 naming the block (its first line number) and showing the job's
output when one fails; the failing rank's exception ends the job, as any
rank failure does. Every block must report PASS on the master rank, so a
block that was never reached fails too. Python 3 standard library only.
"""
import pathlib
import re
import subprocess
import sys
import tempfile

BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)

# The program each rank runs: every block in order, in a namespace of its own.
RUNNER = r'''
import sys, traceback
page, files = sys.argv[1], sys.argv[2:]
for path in files:
    line = path.rsplit("_", 1)[1][:-3]
    source = open(path).read()
    namespace = {"__name__": "__main__", "__file__": path, "__builtins__": __builtins__}
    sys.argv = [path]
    try:
        exec(compile(source, f"{page}:{line}", "exec"), namespace)
    except BaseException:
        print(f"FAIL: {page}:{line}", file=sys.stderr, flush=True)
        raise
    del namespace
    import tarantella
    if tarantella.is_master_rank():
        print(f"PASS: {page}:{line}", flush=True)
'''


def main():
    launcher, python, page = sys.argv[1:4]
    ranks = sys.argv[4] if len(sys.argv) > 4 else "2"
    text = pathlib.Path(page).read_text()
    with tempfile.TemporaryDirectory() as work:
        files = []
        for n, match in enumerate(BLOCK.finditer(text)):
            line = text.count("\n", 0, match.start()) + 2
            script = pathlib.Path(work, f"snippet{n}_{line}.py")
            script.write_text(match.group(1))
            files.append(str(script))
        if not files:
            sys.exit(f"FAIL: {page} has no ```python block")
        runner = pathlib.Path(work, "run_blocks.py")
        runner.write_text(RUNNER)
        out = subprocess.run([launcher, "-n", ranks, "--", python, str(runner), page, *files],
                             capture_output=True, text=True, timeout=60 + 30 * len(files))
    passed = re.findall(r"^PASS: .*$", out.stdout, re.M)
    print("\n".join(passed))
    if out.returncode != 0 or len(passed) != len(files):
        failed = dict.fromkeys(re.findall(r"FAIL: (\S+)", out.stdout + out.stderr))
        print(f"FAIL: {', '.join(failed) or 'a block'} (job exit status {out.returncode}, "
              f"{len(passed)} of {len(files)} blocks passed)\n{out.stdout}{out.stderr}")
        sys.exit(1)


if __name__ == "__main__":
    main()
