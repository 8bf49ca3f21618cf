"""The three ways of materialising a convolution's per-sample weight gradients, timed on the layer
shapes of our bench rows, with the libtorch of the project virtualenv. This is the measurement behind
`Conv2d::per_sample_method_for` (crates/train/src/layers/conv2d.rs; docs/per-sample-gradients.md).

    GLIBC_TUNABLES=glibc.malloc.arena_max=1:glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold=2147483647 \
        .venv/bin/python benches/conv_formulations.py [--threads 2] [--repeats 5]

(the allocator setting is the one `dpaudit` uses; see `train::runtime::retain_freed_host_memory`).
Columns, best of the repeats, ms:
- `unfold`: im2col and one batched matrix product;
- `cross-corr`: one convolution of the input (channels as batch) with the backprop as kernel,
  groups = B, dilation = stride;
- `ordinary f+b`: the layer's ordinary forward and backward (input and weight gradient), what a
  non-private step pays;
- `expanded f+b`: forward and backward of the same layer run as one convolution per sample over B
  weight copies (groups = B), whose weight gradient is the per-sample gradient.
Every formulation is checked against `unfold` (relative error printed).
"""
import argparse
import time

import torch
import torch.nn.functional as F

# name: (B, in, out, H, kernel, stride, padding)
LAYERS = {
    "LeNet-5 conv1, B=256": (256, 1, 6, 28, 5, 1, 2),
    "LeNet-5 conv2, B=256": (256, 6, 16, 14, 5, 1, 0),
    "LeNet-5 conv1, B=4096": (4096, 1, 6, 28, 5, 1, 2),
    "LeNet-5 conv2, B=4096": (4096, 6, 16, 14, 5, 1, 0),
    "LeNet-5 conv1, 64x100 replicas": (6400, 1, 6, 28, 5, 1, 2),
    "LeNet-5 conv2, 64x100 replicas": (6400, 6, 16, 14, 5, 1, 0),
    "WRN-16-4 16->64 32x32, B=64": (64, 16, 64, 32, 3, 1, 1),
    "WRN-16-4 64->64 32x32, B=64": (64, 64, 64, 32, 3, 1, 1),
    "WRN-16-4 64->128 stride 2, B=64": (64, 64, 128, 32, 3, 2, 1),
    "WRN-16-4 128->128 16x16, B=64": (64, 128, 128, 16, 3, 1, 1),
    "WRN-16-4 256->256 8x8, B=64": (64, 256, 256, 8, 3, 1, 1),
}


def best(f, repeats):
    f()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        f()
        times.append((time.perf_counter() - start) * 1e3)
    return min(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, best of {args.repeats}, ms")
    print("| layer | unfold | cross-corr | ordinary f+b | expanded f+b | max rel. error |")
    print("|---|---|---|---|---|---|")
    gen = torch.Generator().manual_seed(0)
    for name, (b, c, o, h, k, s, p) in LAYERS.items():
        x = torch.randn(b, c, h, h, generator=gen)
        ho = (h + 2 * p - k) // s + 1
        d = torch.randn(b, o, ho, ho, generator=gen)
        w = torch.randn(o, c, k, k, generator=gen)

        def unfold():
            u = F.unfold(x, k, padding=p, stride=s)
            return torch.bmm(d.reshape(b, o, -1), u.transpose(1, 2)).reshape(b, o, c, k, k)

        def cross_corr():
            g = F.conv2d(x.transpose(0, 1), d.reshape(b * o, 1, ho, ho), padding=p, dilation=s, groups=b)
            return g[:, :, :k, :k].reshape(c, b, o, k, k).permute(1, 2, 0, 3, 4)

        xg = x.clone().requires_grad_()
        wg = w.clone().requires_grad_()

        def ordinary():
            y = F.conv2d(xg, wg, padding=p, stride=s)
            return torch.autograd.grad(y, [xg, wg], d)

        def expanded():
            copies = w.expand(b, o, c, k, k).reshape(b * o, c, k, k).requires_grad_()
            y = F.conv2d(xg.reshape(1, b * c, h, h), copies, padding=p, stride=s, groups=b)
            return torch.autograd.grad(y, [xg, copies], d.reshape(1, b * o, ho, ho))[1].reshape(b, o, c, k, k)

        want = unfold()
        err = max(float((got - want).norm() / want.norm()) for got in (cross_corr(), expanded()))
        cells = [best(f, args.repeats) for f in (unfold, cross_corr, ordinary, expanded)]
        print(f"| {name} | " + " | ".join(f"{t:.1f}" for t in cells) + f" | {err:.1e} |")


if __name__ == "__main__":
    main()
