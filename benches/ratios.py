"""Ratios of `benches/opacus.sh` (and `benches/gpu.sh`): reads the JSON lines they write, keeps the best of
the repeats of every figure, and prints one table with the targets of the training-loop issue:
DP / our non-private >= 0.7, DP >= 2x the better Opacus mode, our non-private >= 0.9x PyTorch's, and for
the replicas row DP >= 1.5x the PyTorch replica reference. Python figures measured under several allocator
settings (the "allocator" field) count with their best; a second table shows each setting's figures.
Usage: python3 ratios.py FILE.jsonl
"""
import json
import sys

NAMES = {"LeNet5": "lenet5", "Mlp": "mlp", "Wrn16x4": "wrn16_4"}


def load(path, allocator=None):
    best = {}
    for line in open(path):
        line = line.strip()
        if not line.startswith("{"):
            continue
        d = json.loads(line)
        if d.get("who") == "dpaudit" and "spec" in d:
            s = d["spec"]
            name = NAMES.get(s["model"], s["model"])
            key = f"replicas:{s['batch']}:{s['replicas']}" if s["replicas"] > 1 else f"{name}:{s['batch']}"
            figures = {"our_np": d["non_private"], "our_dp": d["dp"]}
        elif d.get("who") == "torch" and "row" in d:
            if allocator is not None and d.get("allocator", "default") != allocator:
                continue
            key = d["row"]
            figures = {k: v for k, v in d.items() if k not in ("who", "row") and isinstance(v, (int, float))}
            if key.startswith("replicas_cl:"):
                # The reference stored channels last: extra figures of the replicas row.
                key = "replicas:" + key.split(":", 1)[1]
                figures = {f"{k}_cl": v for k, v in figures.items()}
        else:
            continue
        row = best.setdefault(key, {})
        for k, v in figures.items():
            row[k] = max(row.get(k, 0.0), v)
    return best


def fmt(v):
    return "—" if v is None else f"{v:,.0f}"


def ratio(a, b, target):
    if a is None or b is None or b == 0:
        return "—"
    r = a / b
    return f"{r:.2f} {'ok' if r >= target else 'MISS'}"


def main(path):
    best = load(path)
    print("| row | PyTorch non-private | Opacus hooks | Opacus ghost | reference (replicas) | dpaudit non-private "
          "| dpaudit DP | DP / our np (≥ 0.7) | DP / best Opacus or reference (≥ 2; replicas ≥ 1.5) "
          "| our np / PyTorch np (≥ 0.9) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for key, r in best.items():
        opacus = [r[k] for k in ("opacus_hooks", "opacus_ghost") if r.get(k)]
        baseline, target = (r.get("reference_dp"), 1.5) if key.startswith("replicas") else (max(opacus) if opacus else None, 2.0)
        print(f"| {key} | {fmt(r.get('non_private'))} | {fmt(r.get('opacus_hooks'))} | {fmt(r.get('opacus_ghost'))} "
              f"| {fmt(r.get('reference_dp'))} | {fmt(r.get('our_np'))} | {fmt(r.get('our_dp'))} "
              f"| {ratio(r.get('our_dp'), r.get('our_np'), 0.7)} | {ratio(r.get('our_dp'), baseline, target)} "
              f"| {ratio(r.get('our_np'), r.get('non_private'), 0.9)} |")
    layouts = [k for k, r in best.items() if r.get("reference_dp_cl")]
    if layouts:
        print("\nReplicas against the reference as written and with its convolutions stored channels last "
              "(the layout dpaudit uses for them on the CPU):\n")
        print("| row | reference np | reference DP | reference np, channels last | reference DP, channels last "
              "| dpaudit DP | DP / reference | DP / reference channels last |")
        print("|---|---|---|---|---|---|---|---|")
        for key in layouts:
            r = best[key]
            print(f"| {key} | {fmt(r.get('non_private'))} | {fmt(r.get('reference_dp'))} "
                  f"| {fmt(r.get('non_private_cl'))} | {fmt(r.get('reference_dp_cl'))} | {fmt(r.get('our_dp'))} "
                  f"| {ratio(r.get('our_dp'), r.get('reference_dp'), 1.5)} "
                  f"| {ratio(r.get('our_dp'), r.get('reference_dp_cl'), 1.5)} |")
    settings = sorted({json.loads(l).get("allocator") for l in open(path) if l.startswith('{"who":"torch"')} - {None})
    if len(settings) > 1:
        print("\nPython figures by allocator setting (best repeat):\n")
        print("| row | " + " | ".join(f"{k} ({a})" for a in settings for k in ("PyTorch np", "Opacus hooks", "Opacus ghost", "reference")) + " |")
        print("|---|" + "---|" * (4 * len(settings)))
        per = {a: load(path, a) for a in settings}
        for key in best:
            cells = [fmt(per[a].get(key, {}).get(k)) for a in settings
                     for k in ("non_private", "opacus_hooks", "opacus_ghost", "reference_dp")]
            print(f"| {key} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main(sys.argv[1])
