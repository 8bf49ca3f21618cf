#!/usr/bin/env bash
# dpaudit next to plain PyTorch and Opacus 1.6.0, on this machine, in one command.
#
#   benches/opacus.sh [--device cpu|cuda] [--iters N] [--repeats R] [--threads T] [--out FILE]
#
# Installs opacus==1.6.0 into the project virtualenv ($DPAUDIT_VENV, default .venv; torch is pinned to the
# version already there), builds the release binary, then times R interleaved repeats of
#   - `dpaudit bench` rows: LeNet-5 B = 256 and 4096, MLP 600-256-100 B = 4096, WRN-16-4 B = 64,
#     LeNet-5 replicas M × B = 64 × 100 (DP step and our own non-private step),
#   - benches/torch_rows.py: PyTorch non-private, Opacus hooks and Opacus ghost on the same rows, and the
#     plain PyTorch replica reference (grouped convolutions, exact per-sample clipping), as written and with
#     its convolutions stored channels last (the layout dpaudit uses for them on the CPU),
# and prints the ratios the issue asks for (best repeat of each figure). All figures are samples/s.
# dpaudit keeps freed host memory for reuse (train::runtime::retain_freed_host_memory); so that the
# comparison measures our code and not the allocator, the Python side runs twice per repeat, with glibc's
# defaults and with the same allocator settings as GLIBC_TUNABLES, and its better figure counts.
# The raw JSON lines go to FILE (default $TMPDIR/dpaudit-opacus-<device>.jsonl).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

device=cpu iters=3 repeats=2 threads=2 out=""
rows_dpaudit="lenet5:256,lenet5:4096,mlp:4096,wrn16_4:64,lenet5:100:64"
rows_torch="lenet5:256,lenet5:4096,mlp:4096,wrn16_4:64,replicas:100:64,replicas_cl:100:64"
while [ $# -gt 0 ]; do
    case "$1" in
        --device) device=$2; shift 2 ;;
        --iters) iters=$2; shift 2 ;;
        --repeats) repeats=$2; shift 2 ;;
        --threads) threads=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        --rows-dpaudit) rows_dpaudit=$2; shift 2 ;;
        --rows-torch) rows_torch=$2; shift 2 ;;
        *) echo "unknown argument $1 (see the header of $0)" >&2; exit 2 ;;
    esac
done
out=${out:-${TMPDIR:-/tmp}/dpaudit-opacus-$device.jsonl}

venv=${DPAUDIT_VENV:-.venv}
py=$venv/bin/python
if [ ! -x "$py" ]; then
    ./dev true   # bootstraps the virtualenv with the torch wheel
fi
if ! "$py" -c 'import opacus, sys; sys.exit(opacus.__version__ != "1.6.0")' 2>/dev/null; then
    torch_version=$("$py" -c 'import torch; print(torch.__version__.split("+")[0])')
    echo "installing opacus==1.6.0 into $venv (torch stays at $torch_version)" >&2
    "$py" -m pip install -q "opacus==1.6.0" "torch==$torch_version"
fi

if [ -n "${DPAUDIT_BIN:-}" ]; then
    bin=$DPAUDIT_BIN
else
    ./dev cargo build -q --release -p dpaudit-cli -p dpaudit-cli-torch
    bin=${CARGO_TARGET_DIR:-target}/release/dpaudit
fi

export OMP_NUM_THREADS=$threads
: > "$out"
echo "# $(date -u +%FT%TZ) $(uname -n) load: $(cut -d' ' -f1-3 /proc/loadavg) device $device threads $threads iters $iters" | tee -a "$out"
for r in $(seq 1 "$repeats"); do
    echo "repeat $r/$repeats: dpaudit" >&2
    "$bin" bench --json --device "$device" --iters "$iters" --rows "$rows_dpaudit" | sed 's/^{/{"who":"dpaudit",/' >> "$out"
    echo "repeat $r/$repeats: PyTorch and Opacus, glibc's default allocator settings" >&2
    "$py" benches/torch_rows.py --device "$device" --iters "$iters" --threads "$threads" --rows "$rows_torch" \
        | sed 's/^{/{"who":"torch","allocator":"default",/' >> "$out"
    echo "repeat $r/$repeats: PyTorch and Opacus, freed memory retained as in dpaudit" >&2
    GLIBC_TUNABLES=glibc.malloc.arena_max=1:glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold=2147483647 \
        "$py" benches/torch_rows.py --device "$device" --iters "$iters" --threads "$threads" --rows "$rows_torch" \
        | sed 's/^{/{"who":"torch","allocator":"retained",/' >> "$out"
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$out"
"$py" benches/ratios.py "$out"
