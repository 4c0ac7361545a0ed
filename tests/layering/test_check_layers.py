#!/usr/bin/env python3
"""Shows that scripts/check_layers.py fails when it should (a checker that
always passes would let the layers erode silently). Standard library only."""
import contextlib
import io
import pathlib
import subprocess
import sys
import tempfile
import unittest

SCRIPTS = pathlib.Path(__file__).resolve().parent.parent.parent / "scripts"
sys.path.insert(0, str(SCRIPTS))
import check_layers  # noqa: E402


class CheckLayersTest(unittest.TestCase):
    def run_checker(self, files):
        """Writes {relative path: text} into a fresh tree and checks it."""
        with tempfile.TemporaryDirectory() as tmp:
            root = pathlib.Path(tmp)
            for rel, text in files.items():
                path = root / rel
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(text)
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                rc = check_layers.main(["--root", str(root)])
            return rc, out.getvalue()

    def test_upward_include_fails_naming_file_line_and_folders(self):
        rc, out = self.run_checker({
            "src/data/x.cpp": "// data\n#include <vector>\n#include <tarantella/model/model.h>\n",
            "include/tarantella/model/model.h": "#pragma once\n",
        })
        self.assertEqual(rc, 1, out)
        self.assertIn("src/data/x.cpp:3:", out)
        self.assertIn("src folder 'data' (level 3) includes 'model' (level 9), "
                      "which is above it", out)

    def test_downward_and_same_level_includes_pass(self):
        rc, out = self.run_checker({
            "src/model/model.cpp": ("#include <tarantella/model/model.h>\n"
                                    "#include <tarantella/callbacks/callback.h>\n"
                                    "#include <tarantella/data/dataset.h>\n"
                                    "#include \"comm/communicator.h\"\n"),
            "src/python/model_bindings.cpp": "#include <tarantella/model/model.h>\n",
            "include/tarantella/model/model.h": "#include <tarantella/callbacks/callback.h>\n",
            "include/tarantella/callbacks/callback.h": "#include <tarantella/train/callback.h>\n",
            "include/tarantella/data/dataset.h": "#include <tarantella/base/error.h>\n",
            "src/cli/main.cpp": "#include <tarantella/model/model.h>\n#include \"launch_plan.h\"\n",
        })
        self.assertEqual(rc, 0, out)
        self.assertIn("layering: 6 files checked, no upward includes, no folders that "
                      "include each other, none over 25 files", out)

    def test_sub_folders_belong_to_their_folders_layer(self):
        rc, out = self.run_checker({
            "src/data/pipeline/x.cpp": "#include \"data/formats/tar.h\"\n#include \"dp/foo.h\"\n",
            "src/cli/plan/y.cpp": ("#include \"plan/launch_plan.h\"\n"
                                   "#include <tarantella/model/model.h>\n"),
        })
        self.assertEqual(rc, 1, out)
        self.assertIn("src/data/pipeline/x.cpp:2: src folder 'data' (level 3) "
                      "includes 'dp' (level 4)", out)
        self.assertNotIn("src/cli/plan/y.cpp", out)
        self.assertIn("layering: 1 problem(s) in 2 files", out)

    def test_quoted_upward_include_fails(self):
        rc, out = self.run_checker({"src/comm/x.cpp": "#include \"dp/foo.h\"\n"})
        self.assertEqual(rc, 1, out)
        self.assertIn("src/comm/x.cpp:1:", out)
        self.assertIn("'comm' (level 1) includes 'dp' (level 4)", out)

    def test_public_header_upward_include_fails(self):
        rc, out = self.run_checker({
            "include/tarantella/comm/x.h": "#pragma once\n#include <tarantella/runtime/y.h>\n"})
        self.assertEqual(rc, 1, out)
        self.assertIn("include/tarantella/comm/x.h:2:", out)
        self.assertIn("'comm' (level 1) includes 'runtime' (level 2)", out)

    def test_unknown_folder_fails(self):
        rc, out = self.run_checker({"src/data/x.cpp": "#include <tarantella/nowhere/z.h>\n"})
        self.assertEqual(rc, 1, out)
        self.assertIn("src/data/x.cpp:1: unknown folder nowhere: "
                      "add it to the layer table in scripts/check_layers.py", out)

    def test_foreign_and_commented_includes_are_ignored(self):
        rc, out = self.run_checker({
            "src/comm/x.cpp": ("#include <torch/torch.h>\n"
                               "#include \"proto/foo.pb.h\"\n"
                               "#include \"local.h\"\n"
                               "#include <tarantella/tarantella.h>\n"
                               "// #include <tarantella/model/model.h>\n"
                               "/* #include <tarantella/model/model.h>\n"
                               "   #include \"dp/foo.h\" */\n"),
            "include/tarantella/tarantella.h": "#include <tarantella/model/model.h>\n",
        })
        self.assertEqual(rc, 0, out)

    def test_sibling_folders_that_include_each_other_fail(self):
        # Same layer, so the layer check passes; the map does not. src/cli's
        # includes are relative to src/cli ("plan/x.h" is src/cli/plan/x.h).
        rc, out = self.run_checker({
            "src/cli/plan/launch.cpp": "#include \"probe/facts.h\"\n",
            "src/cli/probe/facts.h": "#pragma once\n",
            "src/cli/probe/facts.cpp": "#include \"probe/facts.h\"\n#include \"plan/launch.h\"\n",
            "src/cli/plan/launch.h": "#pragma once\n",
        })
        self.assertEqual(rc, 1, out)
        self.assertIn("folders cli/plan, cli/probe include each other: "
                      "cli/plan -> cli/probe (src/cli/plan/launch.cpp:1); "
                      "cli/probe -> cli/plan (src/cli/probe/facts.cpp:2)", out)

    def test_a_cycle_through_a_public_header_and_three_folders_fails(self):
        rc, out = self.run_checker({
            "include/tarantella/train/a.h": "#pragma once\n",
            "src/train/step/s.h": "#include <tarantella/train/a.h>\n#include \"train/loop/l.h\"\n",
            "src/train/loop/l.h": "#include \"train/engine/e.h\"\n",
            "src/train/engine/e.h": "#include \"train/step/s.h\"\n",
        })
        self.assertEqual(rc, 1, out)
        self.assertIn("folders train/engine, train/loop, train/step include each other", out)
        self.assertNotIn("folders train,", out)

    def test_a_folder_over_the_file_limit_fails_and_one_at_it_passes(self):
        at_limit = {f"src/comm/f{i}.h": "#pragma once\n" for i in range(25)}
        rc, out = self.run_checker(at_limit)
        self.assertEqual(rc, 0, out)
        over = dict(at_limit, **{"src/comm/f25.cpp": "#include \"comm/f0.h\"\n"})
        rc, out = self.run_checker(over)
        self.assertEqual(rc, 1, out)
        self.assertIn("src/comm holds 26 source files directly, more than 25: "
                      "split it into sub-folders by role", out)

    def test_empty_tree_is_an_error_not_a_pass(self):
        rc, out = self.run_checker({"README.md": "nothing here\n"})
        self.assertEqual(rc, 2, out)

    def test_command_line_exit_status(self):
        with tempfile.TemporaryDirectory() as tmp:
            root = pathlib.Path(tmp)
            (root / "src" / "data").mkdir(parents=True)
            (root / "src" / "data" / "x.cpp").write_text("#include <tarantella/model/model.h>\n")
            result = subprocess.run(
                [sys.executable, str(SCRIPTS / "check_layers.py"), "--root", str(root)],
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, check=False)
            self.assertEqual(result.returncode, 1, result.stdout)
            self.assertIn("src/data/x.cpp:1:", result.stdout)


if __name__ == "__main__":
    unittest.main()
