#!/usr/bin/env bash
# The worked example of ARCHITECTURE.md's "How to add … An audit statistic": the patch
# docs/examples/add-a-statistic.patch adds a toy statistic reachable from the CLI, experiment files
# and Python. This checks, on a copy of HEAD, that it still applies, touches at most four files, that
# the statistic's own tests pass, built with the feature the CLI uses. Run from anywhere: `.ci/add_a_statistic.sh`.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
root=$PWD
patch=$root/docs/examples/add-a-statistic.patch

files=$(git apply --numstat "$patch" | wc -l)
if [ "$files" -gt 4 ]; then
    echo "$patch touches $files files; ARCHITECTURE.md says an audit statistic takes 4" >&2
    exit 1
fi

# A fixed place, so that the crates built from it are replaced on the next run, not piled up.
work=$root/target/add-a-statistic
rm -rf "$work"
mkdir -p "$work"
trap 'rm -rf "$work"' EXIT
git archive HEAD | tar -x -C "$work"
git -C "$work" init -q
if ! git -C "$work" apply "$patch"; then
    echo "$patch no longer applies to HEAD: update the example with the code it shows" >&2
    exit 1
fi
cd "$work"
# The same target dir as the other pure steps: the registry crates are built once.
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target}"
# `clap` is the feature through which the CLI lists the method (its `--method` values and help).
env -u LIBTORCH -u LIBTORCH_USE_PYTORCH cargo test -q -p dpaudit-audit --features clap --lib estimate::toy
echo "docs/examples/add-a-statistic.patch: applies, $files files, its tests pass with the CLI's feature"
