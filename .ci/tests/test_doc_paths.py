"""Tests of `.ci/doc_paths.py`: a path that exists passes, one that does not is named.

Run: `python3 -m unittest discover -s .ci/tests` (from the repository root; `.ci/run` does).
"""
import os
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
import doc_paths  # noqa: E402

ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))


class DocPaths(unittest.TestCase):
    def missing(self, text):
        cwd = os.getcwd()
        os.chdir(ROOT)
        try:
            with tempfile.NamedTemporaryFile("w", suffix=".md", delete=False) as f:
                f.write(text)
            dirs, files = doc_paths.roots()
            return [path for _, path in doc_paths.missing(f.name, dirs, files)]
        finally:
            os.unlink(f.name)
            os.chdir(cwd)

    def test_existing_paths_pass(self):
        text = (
            "`crates/data/src/lib.rs`, `.ci/run`, `docs/`, `dev`, `crates/audit/tests/coverage_*.rs`,\n"
            "`crates/train/src/layers/<name>.rs`, `crates/data/src/{lib,seed}.rs`, `scores.csv`, `Method`\n"
            "```\ncrates/nowhere.rs in a drawing\n```\n"
        )
        self.assertEqual(self.missing(text), [])

    def test_missing_paths_are_named(self):
        text = (
            "`crates/data/src/nowhere.rs`, `docs/nowhere.md`, `crates/nowhere/<name>.rs`,\n"
            "`crates/audit/tests/nowhere_*.rs`, `crates/data/src/{lib,nowhere}.rs`, `sampler/claim.rs`\n"
        )
        self.assertEqual(
            self.missing(text),
            [
                "crates/data/src/nowhere.rs",
                "docs/nowhere.md",
                "crates/nowhere/<name>.rs",
                "crates/audit/tests/nowhere_*.rs",
                "crates/data/src/nowhere.rs",
                "sampler/claim.rs",
            ],
        )

    def test_the_architecture_document(self):
        cwd = os.getcwd()
        os.chdir(ROOT)
        try:
            dirs, files = doc_paths.roots()
            self.assertEqual(doc_paths.missing("ARCHITECTURE.md", dirs, files), [])
        finally:
            os.chdir(cwd)


if __name__ == "__main__":
    unittest.main()
