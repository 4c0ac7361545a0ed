#!/usr/bin/env python3
"""Shows that check_snippets.py fails when it should (a checker that always
passes would let the guide rot silently). Standard library only."""
import contextlib
import io
import pathlib
import sys
import tempfile
import unittest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import check_snippets  # noqa: E402

SOURCE = """\
int main() {
  // [snippet:outer]
  int a = 1;
  // [snippet:inner]
  int b = 2;
  // [end]
  return a + b;
  // [end]
}
"""

GOOD_PAGE = """\
# Page

<!-- snippet: inner -->
```cpp
int b = 2;
```

Text.

<!-- snippet: outer -->

```cpp
    int a = 1;
    int b = 2;
    return a + b;
```

```sh
echo not C++
```
"""


class CheckSnippetsTest(unittest.TestCase):
    def run_checker(self, page, source=SOURCE, where="guide", update=False):
        with tempfile.TemporaryDirectory() as tmp:
            root = pathlib.Path(tmp)
            (root / "docs" / "snippets").mkdir(parents=True)
            (root / "docs" / where).mkdir(parents=True, exist_ok=True)
            (root / "docs" / "snippets" / "s.cpp").write_text(source)
            md = root / "docs" / where / "page.md"
            md.write_text(page)
            out = io.StringIO()
            args = ["--root", str(root)] + (["--update"] if update else [])
            with contextlib.redirect_stdout(out):
                rc = check_snippets.main(args)
            return rc, out.getvalue(), md.read_text()

    def test_matching_blocks_pass(self):
        rc, out, _ = self.run_checker(GOOD_PAGE)
        self.assertEqual(rc, 0, out)

    def test_changed_code_fails_naming_file_and_snippet(self):
        changed = GOOD_PAGE.replace("int b = 2;\n```\n\nText", "int b = 3;\n```\n\nText")
        rc, out, _ = self.run_checker(changed)
        self.assertEqual(rc, 1)
        self.assertIn("snippet 'inner' differs", out)
        self.assertIn("page.md", out)

    def test_unknown_region_fails(self):
        rc, out, _ = self.run_checker(GOOD_PAGE.replace("snippet: inner", "snippet: nowhere"))
        self.assertEqual(rc, 1)
        self.assertIn("'nowhere' does not exist", out)

    def test_unmarked_cpp_in_guide_fails(self):
        rc, out, _ = self.run_checker(GOOD_PAGE + "\n```cpp\nint c;\n```\n")
        self.assertEqual(rc, 1)
        self.assertIn("without a '<!-- snippet: NAME -->' marker", out)

    def test_unmarked_cpp_outside_guide_is_allowed(self):
        rc, out, _ = self.run_checker(GOOD_PAGE + "\n```cpp\nint c;\n```\n", where="reference")
        self.assertEqual(rc, 0, out)

    def test_marker_without_block_fails(self):
        rc, out, _ = self.run_checker(GOOD_PAGE + "\n<!-- snippet: inner -->\nSome text.\n")
        self.assertEqual(rc, 1)
        self.assertIn("not followed by a ```cpp block", out)

    def test_unclosed_and_duplicate_regions_fail(self):
        rc, out, _ = self.run_checker(GOOD_PAGE, source=SOURCE + "// [snippet:inner]\nint x;\n")
        self.assertEqual(rc, 1)
        self.assertIn("defined again", out)
        self.assertIn("not closed", out)

    def test_update_rewrites_the_block(self):
        stale = GOOD_PAGE.replace("    return a + b;", "    return 0;")
        rc, out, page = self.run_checker(stale, update=True)
        self.assertEqual(rc, 0, out)
        # The region's text at the fence's own indentation.
        old = "    int a = 1;\n    int b = 2;\n    return a + b;"
        self.assertEqual(page, GOOD_PAGE.replace(old, "int a = 1;\nint b = 2;\nreturn a + b;"))


if __name__ == "__main__":
    unittest.main()
