"""PyTorch and Opacus on the rows of `dpaudit bench`, for `benches/opacus.sh` and `benches/gpu.sh`.

Each row prints one JSON line: samples/s of plain non-private SGD, of Opacus 1.6 with per-sample hooks and
with ghost clipping (noise multiplier 1, max_grad_norm 1, SGD, lr 0.01), on random data of the row's shape.
The models mirror dpaudit's (crates/train/src/models): LeNet-5 with tanh and average pooling, the MLP
600-256-100 with ReLU, WRN-16-4 with GroupNorm(16) in pre-activation blocks.

The `replicas` row is the plain PyTorch reference for M independent LeNet-5 replicas: grouped convolutions
and batched matrix products carry the replicas, one backward gives every layer's output gradient, and the
per-sample norms and the clipped sum follow from those and the layer inputs (unfold for the convolutions).
`--check` compares one noiseless replica step with one-sample-at-a-time autograd.

`replicas_cl:B:M` is the same reference with its convolutions stored channels last.
Usage: python3 torch_rows.py --device cpu --rows lenet5:256,mlp:4096,wrn16_4:64,replicas:100:64 [--iters 3]
"""
import argparse
import json
import sys
import time
import warnings

import torch
import torch.nn as nn
import torch.nn.functional as F


class LeNet5(nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, 5, padding=2)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(400, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, classes)

    def forward(self, x):
        x = F.avg_pool2d(torch.tanh(self.conv1(x)), 2)
        x = F.avg_pool2d(torch.tanh(self.conv2(x)), 2)
        x = torch.tanh(self.fc1(x.flatten(1)))
        return self.fc3(torch.tanh(self.fc2(x)))


class PreActBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.norm1 = nn.GroupNorm(16, cin)
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.norm2 = nn.GroupNorm(16, cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.shortcut = None
        if stride != 1 or cin != cout:
            self.shortcut = nn.Conv2d(cin, cout, 1, stride, 0, bias=False)

    def forward(self, x):
        a = F.relu(self.norm1(x))
        y = self.conv2(F.relu(self.norm2(self.conv1(a))))
        return y + (x if self.shortcut is None else self.shortcut(a))


class WideResNet(nn.Module):
    def __init__(self, depth=16, width=4, classes=10):
        super().__init__()
        per_group = (depth - 4) // 6
        widths = [16, 16 * width, 32 * width, 64 * width]
        self.conv = nn.Conv2d(3, 16, 3, 1, 1, bias=False)
        blocks = []
        for g in range(3):
            for i in range(per_group):
                cin = widths[g] if i == 0 else widths[g + 1]
                stride = (1 if g == 0 else 2) if i == 0 else 1
                blocks.append(PreActBlock(cin, widths[g + 1], stride))
        self.blocks = nn.Sequential(*blocks)
        self.norm = nn.GroupNorm(16, widths[3])
        self.fc = nn.Linear(widths[3], classes)

    def forward(self, x):
        x = F.relu(self.norm(self.blocks(self.conv(x))))
        return self.fc(F.adaptive_avg_pool2d(x, 1).flatten(1))


def mlp():
    return nn.Sequential(nn.Linear(600, 256), nn.ReLU(), nn.Linear(256, 100))


MODELS = {
    "lenet5": (LeNet5, (1, 28, 28), 10),
    "mlp": (mlp, (600,), 100),
    "wrn16_4": (WideResNet, (3, 32, 32), 10),
}


def synchronize(device):
    if device.type == "cuda":
        torch.cuda.synchronize()


def timed(device, iters, warmup, step):
    for _ in range(warmup):
        step()
    synchronize(device)
    start = time.perf_counter()
    for _ in range(iters):
        step()
    synchronize(device)
    return (time.perf_counter() - start) / iters


def non_private(model, x, y, device, iters, warmup):
    opt = torch.optim.SGD(model.parameters(), lr=0.01)

    def step():
        opt.zero_grad(set_to_none=True)
        F.cross_entropy(model(x), y).backward()
        opt.step()

    return timed(device, iters, warmup, step)


def opacus(model, x, y, device, iters, warmup, mode):
    from opacus import PrivacyEngine

    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=x.shape[0])
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    engine = PrivacyEngine(accountant="rdp")
    kwargs = dict(module=model, optimizer=opt, data_loader=loader, noise_multiplier=1.0,
                  max_grad_norm=1.0, poisson_sampling=False, grad_sample_mode=mode)
    if mode == "ghost":
        loss_fn = nn.CrossEntropyLoss()
        model, opt, loss_fn, _ = engine.make_private(criterion=loss_fn, **kwargs)
    else:
        loss_fn = nn.CrossEntropyLoss()
        model, opt, _ = engine.make_private(**kwargs)

    def step():
        opt.zero_grad(set_to_none=True)
        loss_fn(model(x), y).backward()
        opt.step()

    return timed(device, iters, warmup, step)


# ---- M LeNet-5 replicas in one set of kernels (the reference of the `replicas` row) ----

def replica_parameters(m, classes, device, generator):
    def draw(*shape):
        return (torch.randn(*shape, generator=generator) * 0.1).to(device).requires_grad_()
    return {
        "c1w": draw(m * 6, 1, 5, 5), "c1b": draw(m * 6),
        "c2w": draw(m * 16, 6, 5, 5), "c2b": draw(m * 16),
        "f1w": draw(m, 400, 120), "f1b": draw(m, 1, 120),
        "f2w": draw(m, 120, 84), "f2b": draw(m, 1, 84),
        "f3w": draw(m, 84, classes), "f3b": draw(m, 1, classes),
    }


def replica_forward(p, x, taps=None, channels_last=False):
    """x: [B, M, 1, 28, 28] -> logits [M, B, classes]; `taps` collects (kind, input, output, ...).
    With `channels_last`, the convolutions' input is stored channels last (`torch.channels_last`), as
    dpaudit stores its replica-stacked convolutions on the CPU; the numbers are the same."""
    b, m = x.shape[0], x.shape[1]
    h = x.reshape(b, m, 28, 28)
    if channels_last:
        h = h.contiguous(memory_format=torch.channels_last)
    z = F.conv2d(h, p["c1w"], p["c1b"], padding=2, groups=m)
    if taps is not None:
        taps.append(("conv", h, z, 1, 5, 2))
    h = F.avg_pool2d(torch.tanh(z), 2)
    z = F.conv2d(h, p["c2w"], p["c2b"], groups=m)
    if taps is not None:
        taps.append(("conv", h, z, 6, 5, 0))
    h = F.avg_pool2d(torch.tanh(z), 2).reshape(b, m, 400).transpose(0, 1)
    for i, (w, bias) in enumerate([("f1w", "f1b"), ("f2w", "f2b"), ("f3w", "f3b")]):
        z = torch.baddbmm(p[bias], h, p[w])
        if taps is not None:
            taps.append(("fc", h, z))
        h = torch.tanh(z) if i < 2 else z
    return h


def replica_dp_step(p, x, y, clip=1.0, sigma=1.0, lr=0.01, generator=None, channels_last=False):
    b, m = x.shape[0], x.shape[1]
    taps = []
    logits = replica_forward(p, x, taps, channels_last)
    loss = F.cross_entropy(logits.reshape(m * b, -1), y.t().reshape(-1), reduction="sum")
    grads_out = torch.autograd.grad(loss, [t[2] for t in taps])
    sq = torch.zeros(m, b, device=x.device)
    pieces = []
    for tap, g in zip(taps, grads_out):
        if tap[0] == "fc":
            a = tap[1]
            sq += (a.square().sum(-1) + 1.0) * g.square().sum(-1)
            pieces.append(("fc", a, g))
        else:
            _, h, _, cin, k, pad = tap
            cols = F.unfold(h, k, padding=pad)
            cols = cols.reshape(b, m, cin * k * k, cols.shape[-1])
            gg = g.reshape(b, m, -1, cols.shape[-1])
            per_w = torch.einsum("bmkl,bmcl->bmck", cols, gg)
            per_b = gg.sum(-1)
            sq += (per_w.square().sum((-1, -2)) + per_b.square().sum(-1)).t()
            pieces.append(("conv", per_w, per_b))
    coef = (clip / sq.sqrt()).clamp(max=1.0)
    sums = []
    for piece in pieces:
        if piece[0] == "fc":
            _, a, g = piece
            sums += [torch.einsum("mb,mbi,mbo->mio", coef, a, g), torch.einsum("mb,mbo->mo", coef, g).unsqueeze(1)]
        else:
            _, per_w, per_b = piece
            sums += [torch.einsum("mb,bmck->mck", coef, per_w), torch.einsum("mb,bmc->mc", coef, per_b)]
    with torch.no_grad():
        for key, s in zip(["c1w", "c1b", "c2w", "c2b", "f1w", "f1b", "f2w", "f2b", "f3w", "f3b"], sums):
            s = s.reshape(p[key].shape)
            if sigma > 0:
                s = s + sigma * clip * torch.randn(s.shape, device=s.device, generator=generator)
            p[key] -= lr * s / b


def replica_np_step(p, x, y, lr=0.01, channels_last=False):
    b, m = x.shape[0], x.shape[1]
    logits = replica_forward(p, x, channels_last=channels_last)
    loss = F.cross_entropy(logits.reshape(m * b, -1), y.t().reshape(-1), reduction="sum")
    grads = torch.autograd.grad(loss, list(p.values()))
    with torch.no_grad():
        for v, g in zip(p.values(), grads):
            v -= lr * g / b


def replica_check(device):
    """One noiseless step against one-sample-at-a-time autograd; returns the max abs error."""
    gen = torch.Generator().manual_seed(0)
    m, b, clip = 3, 4, 0.05
    p = replica_parameters(m, 10, device, gen)
    x = torch.randn(b, m, 1, 28, 28, generator=gen).to(device)
    y = torch.randint(0, 10, (b, m), generator=gen).to(device)
    start = {k: v.detach().clone() for k, v in p.items()}
    replica_dp_step(p, x, y, clip=clip, sigma=0.0, lr=1.0)
    expected = {k: torch.zeros_like(v) for k, v in start.items()}
    for r in range(m):
        for i in range(b):
            q = {k: v.clone().requires_grad_() for k, v in start.items()}
            one = torch.zeros(1, m, 1, 28, 28, device=device)
            one[0, r] = x[i, r]
            loss = F.cross_entropy(replica_forward(q, one)[r, 0:1], y[i, r:r + 1], reduction="sum")
            grads = torch.autograd.grad(loss, list(q.values()))
            # only replica r's slices are nonzero
            norm = torch.sqrt(sum(g.square().sum() for g in grads))
            c = min(1.0, clip / norm.item())
            for k, g in zip(q, grads):
                expected[k] += c * g
    return max((start[k] - expected[k] / b - p[k].detach()).abs().max().item() for k in p)


def replicas_row(device, batch, m, iters, warmup, channels_last=False):
    """The reference as written (`replicas:B:M`), or with its convolutions' input and weights stored
    channels last (`replicas_cl:B:M`): the same kernels given the layout dpaudit uses on the CPU, so that
    a gain from the layout alone is not counted as ours."""
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(batch, m, 1, 28, 28, generator=gen).to(device)
    y = torch.randint(0, 10, (batch, m), generator=gen).to(device)
    p = replica_parameters(m, 10, device, gen)
    if channels_last:
        for key in ("c1w", "c2w"):
            p[key] = p[key].detach().contiguous(memory_format=torch.channels_last).requires_grad_()
    t_np = timed(device, iters, warmup, lambda: replica_np_step(p, x, y, channels_last=channels_last))
    t_dp = timed(device, iters, warmup, lambda: replica_dp_step(p, x, y, channels_last=channels_last))
    n = batch * m
    name = "replicas_cl" if channels_last else "replicas"
    return {"row": f"{name}:{batch}:{m}", "non_private": n / t_np, "reference_dp": n / t_dp}


def model_row(name, batch, device, iters, warmup, modes):
    make, shape, classes = MODELS[name]
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(batch, *shape, generator=gen).to(device)
    y = torch.randint(0, classes, (batch,), generator=gen).to(device)
    out = {"row": f"{name}:{batch}"}
    for label in modes:
        torch.manual_seed(0)
        model = make().to(device)
        try:
            if label == "non_private":
                t = non_private(model, x, y, device, iters, warmup)
            else:
                t = opacus(model, x, y, device, iters, warmup, "hooks" if label == "opacus_hooks" else "ghost")
            out[label] = batch / t
        except Exception as e:  # an Opacus mode that cannot run this model is reported, not fatal
            out[label] = None
            out[label + "_error"] = f"{type(e).__name__}: {str(e)[:120]}"
        if device.type == "cuda":
            torch.cuda.empty_cache()
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--rows", default="lenet5:256,lenet5:4096,mlp:4096,wrn16_4:64,replicas:100:64")
    ap.add_argument("--iters", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--threads", type=int, default=0, help="intra-op threads (0: PyTorch's default)")
    ap.add_argument("--no-opacus", action="store_true", help="only the non-private step")
    ap.add_argument("--check", action="store_true", help="check the replica reference against autograd")
    args = ap.parse_args()
    warnings.filterwarnings("ignore")  # Opacus warns about secure mode and hooks on every row
    device = torch.device(args.device)
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    if device.type == "cuda":
        torch.backends.cudnn.benchmark = True
    if args.check:
        err = replica_check(device)
        print(json.dumps({"check": "replica reference vs one-sample autograd", "max_abs_error": err}))
        sys.exit(0 if err < 1e-5 else 1)
    modes = ["non_private"] if args.no_opacus else ["non_private", "opacus_hooks", "opacus_ghost"]
    print(json.dumps({"torch": torch.__version__, "device": str(device), "threads": torch.get_num_threads()}), flush=True)
    for row in args.rows.split(","):
        parts = row.split(":")
        if parts[0] in ("replicas", "replicas_cl"):
            row = replicas_row(device, int(parts[1]), int(parts[2]), args.iters, args.warmup,
                               channels_last=parts[0] == "replicas_cl")
            print(json.dumps(row), flush=True)
        else:
            print(json.dumps(model_row(parts[0], int(parts[1]), device, args.iters, args.warmup, modes)), flush=True)


if __name__ == "__main__":
    main()
