// Per-sample weight gradients of a stride-1 convolution on the CPU, one
// sample at a time in cache-sized buffers: the kernel behind
// `PerSampleMethod::Direct` (crates/train/src/layers/conv2d.rs; the method
// and the index trick are described in docs/per-sample-gradients.md).
//
// This file includes no libtorch header: build.rs compiles it twice, once for
// the baseline x86-64 (or any other) target and once with AVX2 and FMA, each
// with its own DPAUDIT_KERNEL_NAME, and conv2d.rs picks one at run time and
// splits the samples over threads.
// Nothing here has external linkage but the entry point (no standard-library
// templates either, whose instances the linker would share between the two
// builds), so the AVX2 build cannot leak AVX2 code into paths that run on
// older CPUs.
#include <cstdint>
#include <cstdlib>
#include <cstring>

#ifndef DPAUDIT_KERNEL_NAME
#error "DPAUDIT_KERNEL_NAME must name the entry point"
#endif

namespace {

// Eight floats; the compiler maps it to one AVX register, or two SSE ones.
typedef float v8 __attribute__((vector_size(32)));

inline v8 load(const float* p) {
  v8 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

typedef float v4 __attribute__((vector_size(16)));

// [a0+a1, a2+a3, b0+b1, b2+b3, a4+a5, a6+a7, b4+b5, b6+b7]: pairs within
// each 128-bit half, so each shuffle is one in-lane instruction on AVX.
inline v8 pair_sums(v8 a, v8 b) {
  return __builtin_shufflevector(a, b, 0, 2, 8, 10, 4, 6, 12, 14) +
         __builtin_shufflevector(a, b, 1, 3, 9, 11, 5, 7, 13, 15);
}

// The horizontal sums of four vectors at once, each as
// ((v0+v1)+(v2+v3)) + ((v4+v5)+(v6+v7)): eleven instructions for four sums
// where one sum lane by lane takes about ten. For LeNet-5's conv2 (dot
// products of 144 floats) it cut the norms from 42 to 31 ms at B = 4096 and
// from 75 to 58 ms with 64 replicas at B = 100 (2 cores, benches/RESULTS.md).
inline v4 sum4(v8 a, v8 b, v8 c, v8 d) {
  v8 s = pair_sums(pair_sums(a, b), pair_sums(c, d));
  return __builtin_shufflevector(s, s, 0, 1, 2, 3) + __builtin_shufflevector(s, s, 4, 5, 6, 7);
}

// Stores the sums of acc[t] for t < N, four at a time, to
// g[(t / J) * k_total + k + t % J]: J kernel offsets per backprop row.
template <int N, int J>
inline void store_sums(const v8* acc, float* g, int64_t k_total, int64_t k) {
  const v8 zero = {};
  for (int t = 0; t < N; t += 4) {
    v4 s = sum4(acc[t], t + 1 < N ? acc[t + 1] : zero, t + 2 < N ? acc[t + 2] : zero,
                t + 3 < N ? acc[t + 3] : zero);
    for (int u = 0; u < 4 && t + u < N; ++u) g[(t + u) / J * k_total + k + (t + u) % J] = s[u];
  }
}

// g[i * k_total + k] = Σ_l d[i * lp + l] · xp[off[k] + l] for OB rows of d
// and every k: OB backprop rows against two shifted input rows at a time.
template <int OB>
void rows(const float* d, int64_t lp, const float* xp, const int64_t* off, int64_t k_total,
          float* g) {
  int64_t k = 0;
  for (; k + 1 < k_total; k += 2) {
    v8 acc[OB * 2] = {};
    const float* x0 = xp + off[k];
    const float* x1 = xp + off[k + 1];
    for (int64_t l = 0; l < lp; l += 8) {
      v8 a = load(x0 + l), b = load(x1 + l);
      for (int i = 0; i < OB; ++i) {
        v8 dv = load(d + i * lp + l);
        acc[2 * i] += dv * a;
        acc[2 * i + 1] += dv * b;
      }
    }
    store_sums<OB * 2, 2>(acc, g, k_total, k);
  }
  for (; k < k_total; ++k) {
    v8 acc[OB] = {};
    const float* x0 = xp + off[k];
    for (int64_t l = 0; l < lp; l += 8) {
      v8 a = load(x0 + l);
      for (int i = 0; i < OB; ++i) acc[i] += load(d + i * lp + l) * a;
    }
    store_sums<OB, 1>(acc, g, k_total, k);
  }
}

}  // namespace

// Samples [begin, end) of n = b·G + group. Shapes: x [B, G, C, H, W] and
// d [B, G, O, OH, OW] with element strides xs[5], ds[5] (any layout);
// out [B·G, O, C, KH, KW] contiguous; shape = {G, C, H, W, O, OH, OW, KH, KW,
// PH, PW}, with OH = H + 2·PH − KH + 1 and OW = W + 2·PW − KW + 1 (stride 1,
// dilation 1; the caller checks). Returns 0, or 1 if its buffers could not
// be allocated.
extern "C" int DPAUDIT_KERNEL_NAME(int64_t begin, int64_t end, const float* x, const int64_t* xs,
                                    const float* d, const int64_t* ds, float* out,
                                    const int64_t* shape) {
  const int64_t groups = shape[0], c = shape[1], h = shape[2], w = shape[3], o = shape[4],
                oh = shape[5], ow = shape[6], kh = shape[7], kw = shape[8], ph = shape[9],
                pw = shape[10];
  // Output row y of the backprop is stored at width wp, the padded input's
  // width, so that for kernel offset (p, q) the input values it meets,
  // xpad[y + p][x + q], are the contiguous run starting at p·wp + q of the
  // flattened padded image. The extra columns x ≥ OW hold zeros.
  const int64_t wp = w + 2 * pw, hp = h + 2 * ph;
  const int64_t l = oh * wp, lp = (l + 7) / 8 * 8;
  const int64_t plane = hp * wp + kw + (lp - l);  // one padded input channel, with read slack
  const int64_t k_total = c * kh * kw;
  float* xbuf = static_cast<float*>(std::malloc(sizeof(float) * static_cast<size_t>(c * plane)));
  float* dbuf = static_cast<float*>(std::malloc(sizeof(float) * static_cast<size_t>(o * lp)));
  int64_t* off = static_cast<int64_t*>(std::malloc(sizeof(int64_t) * static_cast<size_t>(k_total)));
  if (xbuf == nullptr || dbuf == nullptr || off == nullptr) {
    std::free(xbuf);
    std::free(dbuf);
    std::free(off);
    return 1;
  }
  for (int64_t ci = 0; ci < c; ++ci)
    for (int64_t p = 0; p < kh; ++p)
      for (int64_t q = 0; q < kw; ++q) off[(ci * kh + p) * kw + q] = ci * plane + p * wp + q;
  for (int64_t n = begin; n < end; ++n) {
    const int64_t b = n / groups, gi = n % groups;
    const float* xn = x + b * xs[0] + gi * xs[1];
    const float* dn = d + b * ds[0] + gi * ds[1];
    // The input is read row by row (the caller passes it contiguous, which
    // measured faster than gathering a channels-last input here); the
    // backprop in its own memory order: channel innermost where the channels
    // are closer together than the columns (channels last).
    std::memset(xbuf, 0, sizeof(float) * static_cast<size_t>(c * plane));
    for (int64_t ci = 0; ci < c; ++ci)
      for (int64_t y = 0; y < h; ++y) {
        float* row = xbuf + ci * plane + (y + ph) * wp + pw;
        const float* src = xn + ci * xs[2] + y * xs[3];
        for (int64_t xx = 0; xx < w; ++xx) row[xx] = src[xx * xs[4]];
      }
    std::memset(dbuf, 0, sizeof(float) * static_cast<size_t>(o * lp));
    if (ds[2] < ds[4]) {
      for (int64_t y = 0; y < oh; ++y)
        for (int64_t xx = 0; xx < ow; ++xx) {
          float* dst = dbuf + y * wp + xx;
          const float* src = dn + y * ds[3] + xx * ds[4];
          for (int64_t oi = 0; oi < o; ++oi) dst[oi * lp] = src[oi * ds[2]];
        }
    } else {
      for (int64_t oi = 0; oi < o; ++oi)
        for (int64_t y = 0; y < oh; ++y) {
          float* row = dbuf + oi * lp + y * wp;
          const float* src = dn + oi * ds[2] + y * ds[3];
          for (int64_t xx = 0; xx < ow; ++xx) row[xx] = src[xx * ds[4]];
        }
    }
    float* g = out + n * o * k_total;
    int64_t oi = 0;
    for (; oi + 6 <= o; oi += 6) rows<6>(dbuf + oi * lp, lp, xbuf, off, k_total, g + oi * k_total);
    for (; oi + 4 <= o; oi += 4) rows<4>(dbuf + oi * lp, lp, xbuf, off, k_total, g + oi * k_total);
    for (; oi + 2 <= o; oi += 2) rows<2>(dbuf + oi * lp, lp, xbuf, off, k_total, g + oi * k_total);
    for (; oi < o; ++oi) rows<1>(dbuf + oi * lp, lp, xbuf, off, k_total, g + oi * k_total);
  }
  std::free(xbuf);
  std::free(dbuf);
  std::free(off);
  return 0;
}
