#!/usr/bin/env bash
# Everything the training-loop issue measures, in one call, into one results file.
#
#   benches/gpu.sh [--device cuda|cpu] [--tiny] [--bin PATH] [--python PY] [--wheels DIR] [--out FILE]
#                  [--sections LIST]
#   benches/gpu.sh --prepare
#
# --wheels DIR: wheels to install offline (no network on GPU hosts) before timing Opacus, e.g. the opacus
# wheel fetched here with `python3 -m pip download --no-deps -d DIR opacus==1.6.0`.
# --sections LIST: a comma-separated subset of oracle,rows,layouts,loop,audit (default: all, in that
# order). A lent GPU has a few minutes of device time and a limit per call: when a call runs out, the
# next one runs the sections that are missing, into another file. Each section prints its wall time.
# --prepare (run here, not on the GPU host): builds the release binary, strips it into .gpu/ (ignored by
# git, carried to the device), downloads the opacus wheel into .gpu/wheels, and prints the command to
# run on the device. On the device the script finds libtorch through the host's torch when the
# binary's own path to it (this machine's virtualenv) does not exist there.
#
# On a GPU host (no cargo there: build --release here, strip and carry the binary, see README.md):
#   1. oracle: the microbatch oracle of every layer and model on the device (`dpaudit bench --oracle`),
#   2. rows: every `dpaudit bench` row next to PyTorch, Opacus hooks and Opacus ghost on the same device
#      (benches/torch_rows.py; Opacus where it can be imported, else PyTorch alone, said in the file),
#   3. rows: replica throughput: LeNet-5 M × B = 64 × 100, 512 × 100 and 1024 × 100 against the PyTorch replica
#      reference (as written and stored channels last); layouts: dpaudit's replica rows in each convolution
#      layout,
#   4. loop: the training loop: `dpaudit bench --end-to-end` (reading reports back every 16 steps, then every
#      step, then with the host noise generator of secure runs) and `--overhead` (the first with `--op-names`: operators and host gaps by name),
#   5. audit: a reduced seed-001 ConvNet audit (`dpaudit run` of experiments/hidden-state/convnet-cifar10-k1-dirac.toml with
#      fewer runs and steps),
# then the ratio table (benches/ratios.py). `--tiny --device cpu` runs the same steps at toy sizes in a
# minute or two: CI runs it so that this script cannot rot.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

all_sections="oracle,rows,layouts,loop,audit"
device=cuda tiny=0 bin="" py="" out="" wheels="" sections=$all_sections prepare=0
while [ $# -gt 0 ]; do
    case "$1" in
        --device) device=$2; shift 2 ;;
        --tiny) tiny=1; shift ;;
        --bin) bin=$2; shift 2 ;;
        --python) py=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        --wheels) wheels=$2; shift 2 ;;
        --sections) sections=$2; shift 2 ;;
        --prepare) prepare=1; shift ;;
        *) echo "unknown argument $1 (see the header of $0)" >&2; exit 2 ;;
    esac
done
for s in ${sections//,/ }; do
    case ",$all_sections," in
        *",$s,"*) ;;
        *) echo "--sections: unknown section '$s' (expected a comma-separated subset of $all_sections)" >&2; exit 2 ;;
    esac
done
wanted() { case ",$sections," in *",$1,"*) return 0 ;; *) return 1 ;; esac; }

if [ "$prepare" = 1 ]; then
    ./dev cargo build --release -p dpaudit-cli -p dpaudit-cli-torch
    mkdir -p .gpu/wheels
    # `dpaudit` hands the libtorch commands to `dpaudit-torch`, which it finds beside itself.
    for b in dpaudit dpaudit-torch; do strip -o ".gpu/$b" "${CARGO_TARGET_DIR:-target}/release/$b"; done
    "${DPAUDIT_VENV:-.venv}/bin/python" -m pip download -q --no-deps -d .gpu/wheels opacus==1.6.0
    echo "carry .gpu ($(du -sh .gpu | cut -f1)); on the device, with the results under \$OUT:"
    echo "  benches/gpu.sh --bin .gpu/dpaudit --python python3 --wheels .gpu/wheels --out \$OUT/gpu.txt"
    echo "  (add --sections with the missing ones when a call runs out of time)"
    exit 0
fi
bin=${bin:-${CARGO_TARGET_DIR:-target}/release/dpaudit}
if [ -z "$py" ]; then
    if [ -x "${DPAUDIT_VENV:-.venv}/bin/python" ]; then py=${DPAUDIT_VENV:-.venv}/bin/python; else py=python3; fi
fi
out=${out:-${TMPDIR:-/tmp}/dpaudit-gpu-$device-$(date -u +%Y%m%dT%H%M%SZ).txt}
build_hint="build them with ./dev cargo build --release -p dpaudit-cli -p dpaudit-cli-torch, or pass --bin"
[ -x "$bin" ] || { echo "$bin: no dpaudit binary ($build_hint)" >&2; exit 1; }
# Every command below but none needs libtorch: `dpaudit` runs them in `dpaudit-torch`, beside it.
companion=$(dirname "$bin")/dpaudit-torch
[ -x "$companion" ] || { echo "$companion: no dpaudit-torch beside $bin ($build_hint)" >&2; exit 1; }
# A binary built on another machine points at that machine's libtorch (rpath): on a GPU host, use the
# libtorch of the host's torch instead.
# (ldd's output is read whole first: `grep -q` may stop reading early, and under pipefail the writer's
# SIGPIPE would fail the test.)
linked=$(ldd "$companion" 2>/dev/null || true)
if grep -q 'libtorch.* not found' <<< "$linked"; then
    torch_lib=$("$py" -c 'import os, torch; print(os.path.join(os.path.dirname(torch.__file__), "lib"))') || {
        echo "$companion cannot find libtorch, and $py has no torch to lend it" >&2; exit 1; }
    export LD_LIBRARY_PATH="$torch_lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi

if [ "$tiny" = 1 ]; then
    iters=1 rounds=1 warmup=0
    bench_rows="lenet5:8,mlp:16,wrn16_4:2,lenet5:4:4"
    torch_rows="lenet5:8,mlp:16,wrn16_4:2,replicas:4:4"
    replica_rows="lenet5:4:8" replica_ref="replicas:4:8,replicas_cl:4:8"
    loop_rows="lenet5:8,tiny:2:4" max_replicas=64
    runs=16 replicas=16 steps=2 train_size=64 audit_batch=8
else
    iters=20 rounds=3 warmup=3
    bench_rows="lenet5:256,lenet5:4096,mlp:4096,wrn16_4:64,wrn16_4:256,wrn16_4:1024,lenet5:100:64"
    torch_rows="lenet5:256,lenet5:4096,mlp:4096,wrn16_4:64,wrn16_4:256,wrn16_4:1024,replicas:100:64"
    replica_rows="lenet5:100:512,lenet5:100:1024"
    replica_ref="replicas_cl:100:64,replicas:100:512,replicas_cl:100:512,replicas:100:1024,replicas_cl:100:1024"
    loop_rows="" max_replicas=4096
    runs=500 replicas=500 steps=50 train_size=50000 audit_batch=128
fi

# A section's heading; the previous section's wall time goes above it.
section_start=""
section_end() {
    [ -n "$section_start" ] && echo "# section wall: $(awk "BEGIN { printf \"%.0f\", $(date +%s.%N) - $section_start }") s" | tee -a "$out"
    section_start=""
}
section() { section_end; printf '\n## %s\n' "$*" | tee -a "$out"; section_start=$(date +%s.%N); }
: > "$out"
{
    echo "# benches/gpu.sh $(date -u +%FT%TZ) on $(uname -n), device $device, tiny=$tiny, sections $sections"
    echo "# load: $(cut -d' ' -f1-3 /proc/loadavg)"
    "$bin" doctor 2>&1 | sed 's/^/# /' || true
} | tee -a "$out"

if wanted oracle; then
    section "1. microbatch oracle on $device"
    "$bin" bench --oracle --device "$device" 2>&1 | tee -a "$out"
fi

if wanted rows; then
    section "2-3. bench rows and replicas: dpaudit, PyTorch, Opacus (JSON lines)"
    opacus_flag=""
    if [ -n "$wheels" ] && ! "$py" -c 'import opacus' 2>/dev/null; then
        site=$(mktemp -d)
        "$py" -m pip install -q --no-index --no-deps --target "$site" "$wheels"/*.whl
        export PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}"
    fi
    if ! "$py" -c 'import opacus' 2>/dev/null; then
        opacus_flag="--no-opacus"
        echo "# opacus cannot be imported by $py: PyTorch non-private only" | tee -a "$out"
    fi
    for r in 1 2; do
        "$bin" bench --json --device "$device" --iters "$iters" --warmup "$warmup" --rows "$bench_rows,$replica_rows" \
            | sed 's/^{/{"who":"dpaudit",/' | tee -a "$out"
        "$py" benches/torch_rows.py --device "$device" --iters "$iters" --warmup "$warmup" $opacus_flag \
            --rows "$torch_rows,$replica_ref" | sed 's/^{/{"who":"torch",/' | tee -a "$out"
        [ "$tiny" = 1 ] && break
    done
    "$py" benches/torch_rows.py --device "$device" --check | tee -a "$out"
fi

if wanted layouts; then
    section "3b. replica rows in each convolution layout (the auto rule keeps contiguous on CUDA until measured)"
    for layout in contiguous channels-last; do
        "$bin" bench --device "$device" --iters "$iters" --warmup "$warmup" --rows "${bench_rows##*,},$replica_rows" \
            --conv-layout "$layout" 2>&1 | tee -a "$out"
    done
fi

if wanted loop; then
    section "4. training loop: end to end against the engine, and the overhead per step"
    loop_flag=()
    [ -n "$loop_rows" ] && loop_flag=(--rows "$loop_rows")
    "$bin" bench --end-to-end --device "$device" --iters "$iters" --rounds "$rounds" --warmup "$warmup" "${loop_flag[@]}" 2>&1 | tee -a "$out"
    # The same loop reading its reports back (and so waiting for the device) every step: what the deferred
    # read-back saves.
    "$bin" bench --end-to-end --device "$device" --iters "$iters" --rounds "$rounds" --warmup "$warmup" "${loop_flag[@]}" \
        --read-back-every 1 2>&1 | tee -a "$out"
    # With the host generator that secure runs always use (ChaCha20 on the host's cores, uploaded): its
    # `noise ms` is what a released model's step pays for its noise on this host.
    "$bin" bench --end-to-end --device "$device" --iters "$iters" --rounds "$rounds" --warmup "$warmup" "${loop_flag[@]}" \
        --noise host 2>&1 | tee -a "$out"
    # The replayable default (on a GPU: Philox on the device), then the host generator that secure runs use.
    # The first also lists a step's operators by name and where the host time between them goes (on a GPU
    # each operator is a launch; the gaps are the host work the device may wait for).
    for noise in auto host; do
        names=()
        [ "$noise" = auto ] && names=(--op-names)
        "$bin" bench --overhead --device "$device" --iters "$iters" --rounds "$rounds" --warmup "$warmup" \
            --max-replicas "$max_replicas" --noise "$noise" "${names[@]}" 2>&1 | tee -a "$out"
    done
fi

if wanted audit; then
    section "5. reduced seed-001 ConvNet audit: $runs runs, $steps steps"
    work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT
    sed -e "s/^runs = .*/runs = $runs/" -e "s/^replicas = .*/replicas = $replicas/" -e "s/^steps = .*/steps = $steps/" \
        -e "s/^device = .*/device = \"$device\"/" -e "s/^batch_size = .*/batch_size = $audit_batch/" -e "s/^dataset = \"cifar10\"/dataset = \"cifar10\"\ntrain_size = $train_size/" \
        experiments/hidden-state/convnet-cifar10-k1-dirac.toml > "$work/audit.toml"
    "$bin" run "$work/audit.toml" --out-dir "$work/run" 2>&1 | tee -a "$out"
fi

section "ratios (best of the repeats)"
"$py" benches/ratios.py "$out" | tee -a "$out.ratios"
cat "$out.ratios" >> "$out" && rm -f "$out.ratios"
echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$out"
echo "results: $out" >&2
