#!/usr/bin/env bash
# Behaviour unchanged between two builds of dpaudit, shown in one run.
#
#   benches/same_behaviour.sh BEFORE_DIR AFTER_DIR [WORK_DIR]
#
# Each *_DIR holds a `dpaudit` and its companion `dpaudit-torch` (a release
# build's target/release, or a copy of it). Both builds run the same commands
# with the same seeds, one after the other:
#   - `dpaudit selftest` and `dpaudit demo --no-train --runs 20000 --canary-runs 100`
#     (stdout compared, printed durations and rates masked);
#   - the canary smoke (tests/fixtures/tiny-canary.toml), the BGM smoke in
#     scores mode (tests/fixtures/tiny-bgm.toml) and in counts mode (the same
#     setting with `evaluation = { counts = … }`), and a small PANORAMIA audit
#     (tests/fixtures/panoramia-head.toml + panoramia-target.toml, real Fashion-MNIST from
#     $DPAUDIT_FMNIST, default the Debian package's folder): every
#     `scores.csv` and `counts.csv` in the out-dirs compared byte for byte, every
#     `audit.json` byte for byte once its timing keys are dropped (see `untimed`).
# Prints one line per comparison (same / DIFFERENT) and exits 1 on any
# difference. Takes a few minutes on 2 cores.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
before="$(cd "${1:?BEFORE_DIR}" && pwd)"
after="$(cd "${2:?AFTER_DIR}" && pwd)"
work="${3:-$(mktemp -d)}"
mkdir -p "$work"
cd "$work"

# The experiment inputs, written once and shared by both builds.
mkdir -p inputs
cp "$root/tests/fixtures/tiny-canary.toml" inputs/canary.toml
cp "$root/tests/fixtures/tiny-bgm.toml" inputs/bgm.toml
python3 - "$root/tests/fixtures/tiny-bgm.toml" inputs/bgm-counts.toml <<'EOF'
import sys
text = open(sys.argv[1]).read()
# The header and the first setting, in counts mode: the threshold chosen on selection runs
# apart from the counted evaluation runs.
head, first = text.split("[[settings]]")[:2]
first = first.replace("runs = 20000", "runs = 20000\nevaluation = { counts = { selection_runs = 2000 } }")
open(sys.argv[2], "w").write(head + "[[settings]]" + first)
EOF
cat "$root/tests/fixtures/panoramia-head.toml" "$root/tests/fixtures/panoramia-target.toml" |
    sed "s|DATA_DIR|${DPAUDIT_FMNIST:-/usr/share/datasets/fashion-mnist}|" > inputs/panoramia.toml

failed=0
# audit.json records wall time and throughput: those keys (names with `seconds`, `throughput`
# or `per_second`) are dropped before comparing; every other byte must match.
untimed() {
    python3 -c '
import json, re, sys
def strip(x):
    if isinstance(x, dict):
        return {k: strip(v) for k, v in x.items() if not re.search("seconds|throughput|per_second", k)}
    if isinstance(x, list):
        return [strip(v) for v in x]
    return x
print(json.dumps(strip(json.load(open(sys.argv[1]))), indent=1, ensure_ascii=False))' "$1"
}
# Printed durations ("10.5 s", "0.11 s") and rates become "<t>": the rest of each line is compared.
untimed_text() {
    sed -E 's/[0-9]+(\.[0-9]+)?(e[0-9+-]+)? (s|ms|observations\/s)\b/<t> \3/g'
}
compare() { # label, file a, file b
    local same=1
    case "$2" in
        # Both read whole (cmp -s would stop at the first difference and break the pipe).
        *.json) [ "$(untimed "$2")" = "$(untimed "$3")" ] || same=0 ;;
        *) cmp -s "$2" "$3" || same=0 ;;
    esac
    if [ "$same" = 1 ]; then
        echo "same       $1"
    else
        echo "DIFFERENT  $1 ($2 vs $3)"
        failed=1
    fi
}

for side in before after; do
    bin="${!side}/dpaudit"
    mkdir -p "$side"
    "$bin" selftest | untimed_text > "$side/selftest.txt"
    "$bin" demo --no-train --runs 20000 --canary-runs 100 |
        untimed_text > "$side/demo.txt"
    "$bin" run inputs/canary.toml --out-dir "$side/canary" --quiet > /dev/null
    "$bin" bgm --config inputs/bgm.toml --out-dir "$side/bgm" > /dev/null
    "$bin" bgm --config inputs/bgm-counts.toml --out-dir "$side/bgm-counts" > /dev/null
    "$bin" panoramia --config inputs/panoramia.toml --out-dir "$side/panoramia" > /dev/null
done

compare "selftest stdout" before/selftest.txt after/selftest.txt
compare "demo stdout" before/demo.txt after/demo.txt
for run in canary bgm bgm-counts panoramia; do
    found=0
    while IFS= read -r f; do
        found=1
        compare "$run/$f" "before/$run/$f" "after/$run/$f"
    done < <(cd "before/$run" && find . \( -name scores.csv -o -name counts.csv -o -name audit.json \) | sort)
    if [ "$found" = 0 ]; then
        echo "DIFFERENT  $run: no scores.csv, counts.csv or audit.json in before/$run"
        failed=1
    fi
done
echo "work dir: $work"
exit "$failed"
