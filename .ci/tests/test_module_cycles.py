"""Tests of `.ci/module_cycles.py` on tiny crate trees: every kind of edge it claims to see
makes a circle it reports, and what it claims to ignore does not.

Run: `python3 -m unittest discover -s .ci/tests` (from the repository root; `.ci/run` does).
"""
import os
import sys
import tempfile
import textwrap
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import module_cycles  # noqa: E402


def tree(files):
    """A temporary `crates/` folder holding `files` ({path under crates/: text})."""
    root = tempfile.mkdtemp()
    crates = os.path.join(root, "crates")
    for path, text in files.items():
        full = os.path.join(crates, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w", encoding="utf-8") as f:
            f.write(textwrap.dedent(text))
    return crates


def circles(files, allowed=()):
    errors, warnings = module_cycles.check(tree(files), allowed)
    return errors, warnings


class Cycles(unittest.TestCase):
    def assertCircle(self, files, *names):
        errors, _ = circles(files)
        self.assertEqual(len(errors), 1, errors)
        for name in names:
            self.assertIn(name, errors[0])

    def assertNoCircle(self, files):
        errors, _ = circles(files)
        self.assertEqual(errors, [])

    def test_two_top_level_modules(self):
        self.assertCircle(
            {
                "c/src/lib.rs": "mod a;\nmod b;\n",
                "c/src/a.rs": "use crate::b::B;\npub struct A;\n",
                "c/src/b.rs": "use crate::a::A;\npub struct B;\n",
            },
            "crates/c/src/a.rs -> crates/c/src/b.rs",
            "crates/c/src/b.rs -> crates/c/src/a.rs",
        )

    def test_siblings_in_a_folder_through_super_and_a_group(self):
        self.assertCircle(
            {
                "c/src/lib.rs": "mod p;\n",
                "c/src/p/mod.rs": "mod x;\nmod y;\n",
                "c/src/p/x.rs": "use super::{y::{self, Y as Why}};\npub struct X;\n",
                "c/src/p/y.rs": "pub struct Y;\nfn f() { let _ = super::x::X; }\n",
            },
            "crates/c/src/p/x.rs",
            "crates/c/src/p/y.rs",
        )

    def test_a_use_inside_a_function_counts(self):
        self.assertCircle(
            {
                "c/src/lib.rs": "mod a;\nmod b;\n",
                "c/src/a.rs": "pub fn a() {\n    use crate::b::b;\n    b();\n}\n",
                "c/src/b.rs": "pub fn b() {\n    crate::a::a();\n}\n",
            },
            "a.rs",
            "b.rs",
        )

    def test_child_using_its_parents_item_while_the_parent_calls_it(self):
        self.assertCircle(
            {
                "c/src/lib.rs": "mod p;\n",
                "c/src/p/mod.rs": "mod x;\nstruct Run;\npub fn go() { x::stage(); }\n",
                "c/src/p/x.rs": "use super::Run;\npub fn stage() {}\n",
            },
            "crates/c/src/p/mod.rs -> crates/c/src/p/x.rs",
            "crates/c/src/p/x.rs -> crates/c/src/p/mod.rs",
        )

    def test_declaring_a_child_is_not_an_import(self):
        self.assertNoCircle(
            {
                "c/src/lib.rs": "mod p;\n",
                "c/src/p/mod.rs": "mod x;\npub struct Run;\n",
                "c/src/p/x.rs": "use super::Run;\npub fn stage() {}\n",
            }
        )

    def test_a_parents_reexport_of_its_child_is_the_childs_face(self):
        # The sibling's `super::Stage` leads through the facade to `store.rs`.
        self.assertNoCircle(
            {
                "c/src/lib.rs": "mod p;\n",
                "c/src/p/mod.rs": "mod store;\nmod stage;\npub use store::Stage;\npub(crate) use stage::run;\n",
                "c/src/p/store.rs": "pub struct Stage;\n",
                "c/src/p/stage.rs": "use super::Stage;\npub fn run(_: Stage) {}\n",
            }
        )

    def test_a_reexport_the_parent_also_uses_is_an_edge(self):
        self.assertCircle(
            {
                "c/src/lib.rs": "mod p;\n",
                "c/src/p/mod.rs": "mod x;\npub use x::X;\npub struct P;\nfn f(_: X) {}\n",
                "c/src/p/x.rs": "pub struct X(super::P);\n",
            },
            "crates/c/src/p/mod.rs -> crates/c/src/p/x.rs",
        )

    def test_an_item_through_a_facade_depends_on_its_defining_file(self):
        # b uses `crate::A`, defined in a.rs and re-exported by lib.rs; a uses b.
        self.assertCircle(
            {
                "c/src/lib.rs": "mod a;\nmod b;\npub use a::A;\n",
                "c/src/a.rs": "pub struct A;\nfn f() { crate::b::g(); }\n",
                "c/src/b.rs": "use crate::A;\npub fn g() -> Option<A> { None }\n",
            },
            "crates/c/src/b.rs -> crates/c/src/a.rs",
        )

    def test_glob_imports_and_pub_use_reexports_between_siblings(self):
        self.assertCircle(
            {
                "c/src/lib.rs": "mod a;\nmod b;\n",
                "c/src/a.rs": "pub use crate::b::*;\npub struct A;\n",
                "c/src/b.rs": "pub fn g() -> crate::a::A { crate::a::A }\n",
            },
            "a.rs",
            "b.rs",
        )

    def test_comments_strings_and_unit_tests_are_not_code(self):
        self.assertNoCircle(
            {
                "c/src/lib.rs": "mod a;\nmod b;\n",
                "c/src/a.rs": "use crate::b::B;\npub struct A;\n",
                "c/src/b.rs": """\
                    //! See [`crate::a::A`].
                    /* crate::a::A */
                    pub struct B;
                    const S: &str = "crate::a::A";
                    const R: &str = r#"crate::a::A"#;
                    const C: char = '"';
                    fn f<'a>(x: &'a str) -> &'a str { x }
                    #[cfg(test)]
                    use crate::a::A;
                    #[cfg(test)]
                    mod tests {
                        use crate::a::A;
                        #[test]
                        fn t() { let _ = crate::a::A; }
                    }
                    """,
            }
        )

    def test_super_in_an_inline_module_is_the_files_own_module(self):
        self.assertNoCircle(
            {
                "c/src/lib.rs": "mod a;\nmod b;\n",
                "c/src/a.rs": "use crate::b::B;\npub struct A;\nmod inner {\n    use super::A;\n}\n",
                "c/src/b.rs": "pub struct B;\n",
            }
        )

    def test_an_allowed_circle_is_a_warning_and_a_larger_one_an_error(self):
        files = {
            "c/src/lib.rs": "mod a;\nmod b;\n",
            "c/src/a.rs": "use crate::b::B;\npub struct A;\n",
            "c/src/b.rs": "use crate::a::A;\npub struct B;\n",
        }
        allowed = [{"crates/c/src/a.rs", "crates/c/src/b.rs"}]
        errors, warnings = circles(files, allowed)
        self.assertEqual((len(errors), len(warnings)), (0, 1))
        files["c/src/lib.rs"] = "mod a;\nmod b;\nmod d;\n"
        files["c/src/d.rs"] = "use crate::a::A;\npub struct D;\n"
        files["c/src/b.rs"] = "use crate::d::D;\npub struct B;\n"
        errors, warnings = circles(files, allowed)
        self.assertEqual((len(errors), len(warnings)), (1, 0))

    def test_the_workspace_as_it_is(self):
        """The repository's own crates: no circle beyond the allowed ones."""
        crates = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "crates")
        errors, _ = module_cycles.check(crates, module_cycles.ALLOWED)
        self.assertEqual(errors, [])


if __name__ == "__main__":
    unittest.main()
