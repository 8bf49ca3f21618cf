// Numbers as 0-dim CPU tensors without a trip through the dispatcher, for
// `train::scalar`. tch builds a tensor from host data with `zeros` and a
// copy: one libtorch operator per number, and a step builds a few dozen.
// Here the tensor is allocated with ATen's CPU constructor (no operator; the
// one libtorch uses for the numbers it wraps itself) and the value written
// into it. The float32 value is `static_cast<float>`, the conversion
// libtorch's own `to(kFloat)` applies (round to nearest, ties to even;
// overflow to infinity), unlike `Scalar`'s checked conversion, which throws.
//
// A returned tensor is a heap-allocated `at::Tensor`, the representation of
// tch's `C_tensor`: the Rust side takes ownership with `Tensor::from_ptr`.
#include <ATen/EmptyTensor.h>
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <cstring>

namespace {

// A 0-dim CPU tensor of `dtype` holding the `size` bytes at `bytes`.
int make(const void* bytes, size_t size, at::ScalarType dtype, void** out, char* err,
         size_t err_cap) {
  try {
    at::Tensor t(at::detail::empty_cpu({}, dtype));
    std::memcpy(t.data_ptr(), bytes, size);
    *out = new at::Tensor(std::move(t));
    return 0;
  } catch (const std::exception& e) {
    if (err_cap > 0) {
      std::strncpy(err, e.what(), err_cap - 1);
      err[err_cap - 1] = '\0';
    }
    return 1;
  } catch (...) {
    if (err_cap > 0) {
      std::strncpy(err, "unknown C++ exception", err_cap - 1);
      err[err_cap - 1] = '\0';
    }
    return 1;
  }
}

}  // namespace

extern "C" {

// `v` as a 0-dim CPU float64 tensor, or float32 when `as_f32` != 0. Returns
// 0 and sets `*out`, or 1 and writes libtorch's message into `err` (at most
// `err_cap` bytes with its terminator), leaving `*out` untouched.
int dpaudit_scalar_f64(double v, int as_f32, void** out, char* err, size_t err_cap) {
  if (as_f32) {
    float f = static_cast<float>(v);
    return make(&f, sizeof f, at::kFloat, out, err, err_cap);
  }
  return make(&v, sizeof v, at::kDouble, out, err, err_cap);
}

// `v` as a 0-dim CPU int64 tensor; as above.
int dpaudit_scalar_i64(int64_t v, void** out, char* err, size_t err_cap) {
  return make(&v, sizeof v, at::kLong, out, err, err_cap);
}

}  // extern "C"
