#!/usr/bin/env bash
# One command per paper headline (docs/reproductions.md): runs the experiment files of one headline with
# the release binary, each into its own out-dir, and prints wall time, peak memory and the bounds.
#
#   experiments/reproduce.sh HEADLINE [OUT]      OUT defaults to runs/reproductions
#
# HEADLINE (each ≤ 30 min on 2 cores, measured; docs/reproductions.md has the figures):
#   shuffling-1e9  Annamalai et al. 2024: Fig. 3, T = 100, σ = 1 at the paper's 10⁹ observations (bounded memory)
#   shuffling-bgm  Annamalai et al. 2024: Fig. 3, Table 1, partial shuffle, batch-then-shuffle (BGM, smoke scale)
#   shuffling-pi   Annamalai et al. 2024: the Partially-Informed audit of DP-SGD on Fashion-MNIST (smoke scale)
#   hidden-state   Cebere et al. 2024: the gradient canary inserted every k = 1, 5, 25 steps
#   one-run        Steinke, Nasr & Jagielski 2023: white and black box, m ∈ {1000, 5000}, ε ∈ {2, 4, 8}
#   one-run-paper  Steinke, Nasr & Jagielski 2023, Fig. 6: white box, m = 5000, at the paper's q, T, σ (ε = 1, 2, 4, 8)
#   panoramia      Kazmi et al. 2024: generated non-members; ε̃ of DP (ε = 1, 16) and non-private targets
#                  trained 5…200 epochs on 6,000 records, ordered against the one-run audit on real non-members
#   lecture        Karimireddy 2025: the GDP lecture's audit from its published counts
#
# Every run resumes: rerunning the command after a kill keeps finished work. Run `./dev demo` once
# first (it builds the release binary and installs Fashion-MNIST).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

headline=${1:-}
out=${2:-runs/reproductions}
bin=${DPAUDIT_BIN:-target/release/dpaudit}

usage() { sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
[ -n "$headline" ] || usage
if [ ! -x "$bin" ]; then
    echo "reproduce: building the release binaries (./dev cargo build --release -p dpaudit-cli -p dpaudit-cli-torch)" >&2
    ./dev cargo build --release -q -p dpaudit-cli -p dpaudit-cli-torch
fi

# run NAME ARGS…: one dpaudit command, its wall time and peak RSS appended to $out/$headline/times.tsv.
run() {
    local name=$1; shift
    local dir="$out/$headline"
    mkdir -p "$dir"
    echo "reproduce: $name: $bin $*" >&2
    local start end rss=""
    start=$(date +%s.%N)
    if [ -x /usr/bin/time ]; then
        /usr/bin/time -f '%M' -o "$dir/$name.rss" "$bin" "$@"
        rss=$(tail -n 1 "$dir/$name.rss")
    else
        "$bin" "$@"
    fi
    end=$(date +%s.%N)
    awk -v n="$name" -v s="$start" -v e="$end" -v r="$rss" \
        'BEGIN { printf "%s\t%.0f s\t%s\n", n, e - s, (r == "" ? "" : sprintf("%.2f GB", r / 1048576)) }' \
        >> "$dir/times.tsv"
}

# train NAME FILE: `dpaudit run` of an experiment file into $out/$headline/NAME.
train() { run "$1" run "$2" --out-dir "$out/$headline/$1"; }
# bgm NAME FILE: `dpaudit bgm` of a BGM experiment file into $out/$headline/NAME.
bgm() { run "$1" bgm --config "$2" --out-dir "$out/$headline/$1"; }

case "$headline" in
    shuffling-1e9)
        bgm fig3-t100-sigma1-1e9 experiments/shuffling/fig3-t100-sigma1-1e9.toml
        ;;
    shuffling-bgm)
        bgm fig3-smoke experiments/shuffling/bgm-fig3-smoke.toml
        bgm table1-smoke experiments/shuffling/bgm-table1-smoke.toml
        bgm partial-shuffle-smoke experiments/shuffling/bgm-partial-shuffle-smoke.toml
        bgm batch-then-shuffle-smoke experiments/shuffling/bgm-batch-then-shuffle-smoke.toml
        ;;
    shuffling-pi)
        train lenet-fmnist-b100-eps1 experiments/shuffling/partially-informed/lenet-fmnist-b100-eps1-smoke.toml
        ;;
    hidden-state)
        for k in 1 5 25; do train "lenet-fmnist-k$k" "experiments/hidden-state/lenet-fmnist-k$k.toml"; done
        ;;
    one-run)
        for box in whitebox blackbox; do
            for m in 1000 5000; do
                for eps in 2 4 8; do
                    train "$box-m$m-eps$eps" "experiments/one-run/$box-lenet-fmnist-m$m-eps$eps.toml"
                done
            done
        done
        ;;
    one-run-paper)
        # ε = 1 and 2 first (the cheapest, and the ones nearest their targets), then 4 and 8. Each file also
        # gets the papers' same-data bound (guess counts chosen on the scores they bound: NOT valid) from its
        # scores, over the default symmetric grid and over every count (`all-counts`: every k+ = k− and every
        # one-sided count; the paper "evaluates different values of k+ and k−" without naming them).
        # One libtorch thread unless told otherwise: with two on a shared 2-core machine, libgomp's barrier
        # spinning took two thirds of the CPU (benches/RESULTS.md).
        export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
        for eps in 1 2 4 8; do
            name="whitebox-mlp-m5000-paper-eps$eps"
            train "$name" "experiments/one-run/whitebox-mlp-fmnist-m5000-paper-eps$eps.toml"
            awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) { if ($i == "dirac") $i = "score" } } { print }' OFS=, \
                "$out/$headline/$name/scores.csv" > "$out/$headline/$name/scores-dirac.csv"
            for method in one-run one-run-fdp; do
                for guesses in symmetric all-counts; do
                    suffix=""; [ "$guesses" = symmetric ] || suffix="-$guesses"
                    "$bin" estimate --method "$method" --selection same-data --guesses "$guesses" --delta 1e-5 \
                        --scores "$out/$headline/$name/scores-dirac.csv" --json \
                        > "$out/$headline/$name/same-data-$method$suffix.json"
                done
            done
        done
        ;;
    panoramia)
        # The ranking experiment (docs/panoramia.md, "Ranking targets"); the earlier files are
        # experiments/panoramia/fmnist-lenet-ranking.toml (D_f = 20,000) and fmnist-lenet-dcgan.toml
        # (one seed). One libtorch thread: the numbers
        # in the docs were measured so, and libtorch's reductions (hence the classifiers) differ
        # with the thread count.
        OMP_NUM_THREADS=1 run fmnist-lenet-ranking-small panoramia \
            --config experiments/panoramia/fmnist-lenet-ranking-small.toml \
            --out-dir "$out/$headline/fmnist-lenet-ranking-small"
        ;;
    lecture)
        run lecture-counts counts experiments/lecture/backprop-clipping-counts.toml
        ;;
    *) usage ;;
esac

echo >&2
echo "== $headline: wall time and peak memory of each command ($out/$headline/times.tsv)" >&2
cat "$out/$headline/times.tsv" >&2
for summary in "$out/$headline"/*/summary.md; do
    [ -f "$summary" ] || continue
    echo >&2
    echo "== $(dirname "$summary")" >&2
    grep '^|' "$summary" >&2 || true
done
