"""The seed key tree of a run, for the values dpaudit derives from a
config's seed and does not write (inclusion bits, selection seeds,
PANORAMIA's coins).
"""

from __future__ import annotations

from typing import Any, Tuple

import numpy as np


# ---------------------------------------------------------------------------
# The seed key tree (crates/data/src/seed.rs), for the values dpaudit derives
# from a config's seed and does not write: inclusion bits (checked against
# inclusion.csv), the selection seed of `dpaudit run` audits, PANORAMIA's
# audit-game coins.
# ---------------------------------------------------------------------------

_SIGMA = np.array([0x61707865, 0x3320646E, 0x79622D32, 0x6B206574], dtype=np.uint32)
_ROOT_TAG = b"dpaudit/seed/v1\x00"
_BATCH = 1 << 16
_U32 = np.uint64(0xFFFFFFFF)


def _rotl(x: np.ndarray, n: int) -> np.ndarray:
    return (x << np.uint32(n)) | (x >> np.uint32(32 - n))


def _chacha20_batch(keys: np.ndarray, counters: np.ndarray, nonces: np.ndarray) -> np.ndarray:
    n = keys.shape[0]
    s = np.empty((16, n), dtype=np.uint32)
    s[0:4] = _SIGMA[:, None]
    s[4:12] = keys.T
    s[12] = (counters & _U32).astype(np.uint32)
    s[13] = (counters >> np.uint64(32)).astype(np.uint32)
    s[14] = (nonces & _U32).astype(np.uint32)
    s[15] = (nonces >> np.uint64(32)).astype(np.uint32)
    x = [s[i].copy() for i in range(16)]

    def quarter(a: int, b: int, c: int, d: int) -> None:
        x[a] += x[b]
        x[d] = _rotl(x[d] ^ x[a], 16)
        x[c] += x[d]
        x[b] = _rotl(x[b] ^ x[c], 12)
        x[a] += x[b]
        x[d] = _rotl(x[d] ^ x[a], 8)
        x[c] += x[d]
        x[b] = _rotl(x[b] ^ x[c], 7)

    for _ in range(10):
        quarter(0, 4, 8, 12)
        quarter(1, 5, 9, 13)
        quarter(2, 6, 10, 14)
        quarter(3, 7, 11, 15)
        quarter(0, 5, 10, 15)
        quarter(1, 6, 11, 12)
        quarter(2, 7, 8, 13)
        quarter(3, 4, 9, 14)
    return (np.stack(x) + s).T


def _chacha20(keys: np.ndarray, counters: Any, nonces: Any) -> np.ndarray:
    """ChaCha20 blocks (original layout: 64-bit counter in words 12–13,
    64-bit nonce in words 14–15) as ``(N, 16)`` little-endian words, one per
    row of ``keys`` (``(N, 8)`` uint32)."""
    keys = np.ascontiguousarray(keys, dtype=np.uint32)
    n = keys.shape[0]
    counters = np.broadcast_to(np.asarray(counters, dtype=np.uint64), (n,))
    nonces = np.broadcast_to(np.asarray(nonces, dtype=np.uint64), (n,))
    out = np.empty((n, 16), dtype=np.uint32)
    for lo in range(0, n, _BATCH):
        hi = min(n, lo + _BATCH)
        out[lo:hi] = _chacha20_batch(keys[lo:hi], counters[lo:hi], nonces[lo:hi])
    return out


def _absorb(keys: np.ndarray, depth: int, words: Any) -> np.ndarray:
    """``K_{d+1} = F(K_d, d, w)``: the first 32 bytes of block ``2^63 + d``
    of nonce ``w``."""
    counter = np.uint64((1 << 63) + depth)
    return _chacha20(keys, counter, words)[:, :8]


def _stream_key(seed: int, stream: str) -> Tuple[np.ndarray, int]:
    """``RunSeed(seed).stream(stream)``: the key (``(1, 8)``) and its depth."""
    raw = _ROOT_TAG + int(seed).to_bytes(8, "little") + bytes(8)
    key = np.frombuffer(raw, dtype="<u4").astype(np.uint32)[None, :]
    name = stream.encode()
    key = _absorb(key, 0, np.uint64(len(name)))
    depth = 1
    for i in range(0, len(name), 8):
        word = int.from_bytes(name[i : i + 8].ljust(8, b"\x00"), "little")
        key = _absorb(key, depth, np.uint64(word))
        depth += 1
    return key, depth


def _seed_key(seed: int, stream: str, *path: int) -> np.ndarray:
    key, depth = _stream_key(seed, stream)
    for index in path:
        key = _absorb(key, depth, np.uint64(index))
        depth += 1
    return key


def _next_u64(keys: np.ndarray, count: int) -> np.ndarray:
    """The first ``count`` ``next_u64()`` of ``ChaCha20Rng::from_seed(key)``
    (nonce 0, counter from 0) for each key: ``(N, count)`` uint64."""
    n = keys.shape[0]
    blocks = max(1, -(-2 * count // 16))
    reps = np.repeat(keys, blocks, axis=0)
    counters = np.tile(np.arange(blocks, dtype=np.uint64), n)
    words = _chacha20(reps, counters, 0).reshape(n, blocks * 16)[:, : 2 * count]
    lo = words[:, 0::2].astype(np.uint64)
    hi = words[:, 1::2].astype(np.uint64)
    return lo | (hi << np.uint64(32))


def _fair_coins(keys: np.ndarray, count: int) -> np.ndarray:
    """``count`` draws of rand 0.8's ``gen_bool(0.5)`` (``next_u64() < 2^63``)
    from each key's generator: ``(N, count)`` bool."""
    if count == 0:
        return np.zeros((keys.shape[0], 0), dtype=bool)
    return _next_u64(keys, count) < np.uint64(1 << 63)


def selection_seed(train_seed: int) -> int:
    """The seed of the ``split``/``multi-split`` selection policies of a
    ``dpaudit run`` audit: ``RunSeed(train.seed).stream(Split).child(0xA0D1)
    .to_u64()`` (``crates/experiment/src/audit_report.rs``, ``selection_for``).
    ``auto`` passes it on too, but the default policies of the threshold
    methods (``bonferroni``) do not use it."""
    return int(_next_u64(_seed_key(train_seed, "split", 0xA0D1), 1)[0, 0])


def inclusion_bits(train_seed: int, runs: int, count: int) -> np.ndarray:
    """The inclusion bits of a canary experiment, ``(runs, count)`` bool
    (True = the canary was included): ``count`` fair coins per run from the
    ``membership`` stream's child ``run`` (``crates/experiment/src/canaries/config.rs``,
    ``inclusion_bits``). ``inclusion.csv`` must hold exactly these."""
    base, depth = _stream_key(train_seed, "membership")
    if runs == 0:
        return np.zeros((0, count), dtype=bool)
    out = np.empty((runs, count), dtype=bool)
    step = max(1, _BATCH // max(1, -(-count // 8)))
    for lo in range(0, runs, step):
        hi = min(runs, lo + step)
        keys = _absorb(np.repeat(base, hi - lo, axis=0), depth, np.arange(lo, hi, dtype=np.uint64))
        out[lo:hi] = _fair_coins(keys, count)
    return out


def panoramia_coins(seed: int, m: int) -> np.ndarray:
    """The fair coins of PANORAMIA's audit game (True = the audit record is
    a real member, False = a generated non-member): ``coins(m,
    membership.child(0))`` of the pipeline's seed
    (``crates/panoramia/src/pipeline/game.rs``). The out-dir does not store them."""
    return _fair_coins(_seed_key(seed, "membership", 0), m)[0]
