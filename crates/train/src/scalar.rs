//! Numbers as libtorch operands, so that a failing operation returns its
//! error.
//!
//! tch 0.24's fallible functions that take a number (`impl Into<Scalar>`:
//! `f_mul_scalar`, `f_add_scalar`, `f_clamp_max`, `f_lt`, `f_full`,
//! `f_fill_`, `f_baddbmm`, `f_arange`, `f_bitwise_and`, …) panic when libtorch
//! fails inside them instead of returning the error: the `Scalar` they build
//! is a temporary that is dropped before they read libtorch's error, and
//! `Scalar`'s `Drop` reads that error first and unwraps it. A CUDA
//! out-of-memory in `x.f_mul_scalar(2.0)` would abort the step with a panic.
//!
//! So library code passes numbers as 0-dim CPU tensors to the tensor
//! overloads (`f_mul`, `f_add`, `f_clamp_max_tensor`, `f_lt_tensor`,
//! `f_fill_tensor_`, …), which read the error properly. This changes no
//! value: libtorch itself turns a number into a 0-dim CPU tensor (a "wrapped
//! number") and runs the same kernel; a 0-dim CPU tensor is used as a scalar
//! on any device, and one of the receiver's kind rounds the number exactly
//! where libtorch rounds it and keeps the result's kind. `clippy.toml`
//! disallows the number overloads in library code.

use tch::{Kind, TchError, Tensor};

/// `v` as a 0-dim CPU tensor of kind `kind`.
///
/// No libtorch operator for float32, float64 (and [`int`]): ATen's static
/// constructor allocates the tensor and writes the value without the
/// dispatcher (`csrc/scalar.cpp`; tch would dispatch `zeros` and copy the
/// bytes in). Other kinds take three operators (a 1-element tensor,
/// reshaped, converted). A step builds a few dozen numbers, and each
/// operator costs host time on any device. The float32 value is rounded to
/// nearest, ties to even, as libtorch's conversion rounds it (the test below
/// compares them bit for bit).
pub fn number(v: f64, kind: Kind) -> Result<Tensor, TchError> {
    match kind {
        Kind::Double => native::f64(v, false),
        Kind::Float => native::f64(v, true),
        _ => Tensor::f_from_slice(&[v])?.f_reshape([])?.f_to_kind(kind),
    }
}

/// `v` as a 0-dim CPU tensor of the kind of `like` (the tensor it will be
/// combined with).
pub fn float(v: f64, like: &Tensor) -> Result<Tensor, TchError> {
    number(v, like.f_kind()?)
}

/// `v` as a 0-dim int64 CPU tensor (no libtorch operator, as [`number`]).
pub fn int(v: i64) -> Result<Tensor, TchError> {
    native::i64(v)
}

/// The 0-dim tensors of `csrc/scalar.cpp`.
#[cfg(dpaudit_scalar)]
#[allow(unsafe_code)]
mod native {
    use std::ffi::c_void;

    use tch::{TchError, Tensor};

    extern "C" {
        fn dpaudit_scalar_f64(
            v: f64,
            as_f32: i32,
            out: *mut *mut c_void,
            err: *mut u8,
            err_cap: usize,
        ) -> i32;
        fn dpaudit_scalar_i64(v: i64, out: *mut *mut c_void, err: *mut u8, err_cap: usize) -> i32;
    }

    /// Room for libtorch's message when a number cannot be allocated.
    const ERR_CAP: usize = 256;

    /// Takes ownership of a tensor the C++ side allocated, or returns its
    /// error.
    fn owned(status: i32, ptr: *mut c_void, err: &[u8]) -> Result<Tensor, TchError> {
        if status != 0 || ptr.is_null() {
            let end = err.iter().position(|&b| b == 0).unwrap_or(err.len());
            return Err(TchError::Torch(format!(
                "allocating a 0-dim CPU tensor for a number: {}",
                String::from_utf8_lossy(&err[..end])
            )));
        }
        // SAFETY: on success `ptr` is a heap `at::Tensor` that nothing else
        // owns, the representation of tch's `C_tensor`; `Tensor` frees it.
        Ok(unsafe { Tensor::from_ptr(ptr.cast()) })
    }

    pub(super) fn f64(v: f64, as_f32: bool) -> Result<Tensor, TchError> {
        let (mut ptr, mut err) = (std::ptr::null_mut(), [0u8; ERR_CAP]);
        // SAFETY: the callee writes `ptr` only on success and at most
        // `ERR_CAP` bytes of `err` on failure.
        let status = unsafe {
            dpaudit_scalar_f64(v, i32::from(as_f32), &mut ptr, err.as_mut_ptr(), ERR_CAP)
        };
        owned(status, ptr, &err)
    }

    pub(super) fn i64(v: i64) -> Result<Tensor, TchError> {
        let (mut ptr, mut err) = (std::ptr::null_mut(), [0u8; ERR_CAP]);
        // SAFETY: as above.
        let status = unsafe { dpaudit_scalar_i64(v, &mut ptr, err.as_mut_ptr(), ERR_CAP) };
        owned(status, ptr, &err)
    }
}

/// Without libtorch's headers: through tch (one operator each).
#[cfg(not(dpaudit_scalar))]
mod native {
    use tch::{Kind, TchError, Tensor};

    pub(super) fn f64(v: f64, as_f32: bool) -> Result<Tensor, TchError> {
        if as_f32 {
            Tensor::f_from_data_size(&(v as f32).to_ne_bytes(), &[], Kind::Float)
        } else {
            Tensor::f_from_data_size(&v.to_ne_bytes(), &[], Kind::Double)
        }
    }

    pub(super) fn i64(v: i64) -> Result<Tensor, TchError> {
        Tensor::f_from_data_size(&v.to_ne_bytes(), &[], Kind::Int64)
    }
}

/// One number as an operand of every tensor it meets, built once per kind
/// ([`number`]): for a number applied to each parameter of a step, which
/// would otherwise build it once per parameter.
#[derive(Debug)]
pub struct Operand {
    value: f64,
    made: Vec<(Kind, Tensor)>,
}

impl Operand {
    /// `value`, built when first needed.
    pub fn new(value: f64) -> Self {
        Self {
            value,
            made: Vec::new(),
        }
    }

    /// The number as a 0-dim tensor of `like`'s kind, as [`float`] makes it.
    pub fn like(&mut self, like: &Tensor) -> Result<Tensor, TchError> {
        let kind = like.f_kind()?;
        if let Some((_, t)) = self.made.iter().find(|(k, _)| *k == kind) {
            return Ok(t.shallow_clone());
        }
        let t = number(self.value, kind)?;
        self.made.push((kind, t.shallow_clone()));
        Ok(t)
    }
}

/// Arithmetic and comparisons with a float64 number through the tensor
/// overloads (see the module documentation): `x.mul_f64(v)` is
/// `x.f_mul_scalar(v)` but returns a libtorch failure as an error.
pub trait WithNumber {
    /// `self · v`.
    fn mul_f64(&self, v: f64) -> Result<Tensor, TchError>;
    /// `self ← self · v`.
    fn mul_f64_(&mut self, v: f64) -> Result<Tensor, TchError>;
    /// `self + v`.
    fn add_f64(&self, v: f64) -> Result<Tensor, TchError>;
    /// `self ← self + v`.
    fn add_f64_(&mut self, v: f64) -> Result<Tensor, TchError>;
    /// `self / v`.
    fn div_f64(&self, v: f64) -> Result<Tensor, TchError>;
    /// `min(self, v)`.
    fn clamp_max_f64(&self, v: f64) -> Result<Tensor, TchError>;
    /// `max(self, v)`.
    fn clamp_min_f64(&self, v: f64) -> Result<Tensor, TchError>;
    /// `self < v`.
    fn lt_f64(&self, v: f64) -> Result<Tensor, TchError>;
    /// `self > v`.
    fn gt_f64(&self, v: f64) -> Result<Tensor, TchError>;
}

impl WithNumber for Tensor {
    fn mul_f64(&self, v: f64) -> Result<Tensor, TchError> {
        self.f_mul(&float(v, self)?)
    }
    fn mul_f64_(&mut self, v: f64) -> Result<Tensor, TchError> {
        let v = float(v, self)?;
        self.f_mul_(&v)
    }
    fn add_f64(&self, v: f64) -> Result<Tensor, TchError> {
        self.f_add(&float(v, self)?)
    }
    fn add_f64_(&mut self, v: f64) -> Result<Tensor, TchError> {
        let v = float(v, self)?;
        self.f_add_(&v)
    }
    fn div_f64(&self, v: f64) -> Result<Tensor, TchError> {
        self.f_div(&float(v, self)?)
    }
    fn clamp_max_f64(&self, v: f64) -> Result<Tensor, TchError> {
        self.f_clamp_max_tensor(&float(v, self)?)
    }
    fn clamp_min_f64(&self, v: f64) -> Result<Tensor, TchError> {
        self.f_clamp_min_tensor(&float(v, self)?)
    }
    fn lt_f64(&self, v: f64) -> Result<Tensor, TchError> {
        self.f_lt_tensor(&float(v, self)?)
    }
    fn gt_f64(&self, v: f64) -> Result<Tensor, TchError> {
        self.f_gt_tensor(&float(v, self)?)
    }
}

/// A tensor of `shape` on `options` filled with `value` (a 0-dim tensor
/// from [`number`] or [`int`], converted to the kind of `options`):
/// `Tensor::f_full` without a number argument.
pub fn full(
    shape: &[i64],
    value: &Tensor,
    options: (Kind, tch::Device),
) -> Result<Tensor, TchError> {
    let mut t = Tensor::f_empty(shape, options)?;
    let _ = t.f_fill_tensor_(value)?;
    Ok(t)
}

#[cfg(test)]
#[allow(clippy::disallowed_methods, clippy::arithmetic_side_effects)] // tests may panic
mod tests {
    use super::*;
    use tch::Device;

    /// Same kind, shape and bits (NaN included).
    fn same(a: &Tensor, b: &Tensor) -> bool {
        let bits = |t: &Tensor| match t.kind() {
            Kind::Float => t.view_dtype(Kind::Int),
            Kind::Double => t.view_dtype(Kind::Int64),
            Kind::Half => t.view_dtype(Kind::Int16),
            _ => t.shallow_clone(),
        };
        a.kind() == b.kind() && a.size() == b.size() && bits(a).equal(&bits(b))
    }

    /// `number` builds float32 and float64 numbers with one operator and the
    /// same bits as the three-operator path (a 1-element float64 tensor
    /// converted by libtorch), which other kinds still take.
    #[test]
    fn numbers_take_no_operator_and_round_as_libtorch_does() {
        let mut values: Vec<f64> = (0..513)
            .map(|i| ((i as f64) * 0.7311).sin() * 10f64.powi(i % 45 - 22))
            .collect();
        values.extend([
            f64::NAN,
            -f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            -0.0,
            0.0,
            0.1,
            1.0 / 3.0,
            1e-40,                   // subnormal in float32
            1e-46,                   // below float32's smallest subnormal
            3.4028235e38,            // float32's largest
            3.4028236e38,            // rounds to float32's largest
            3.402_823_7e38,          // overflows float32
            1.000_000_059_604_644_8, // halfway between two float32s: ties to even
            f64::MIN_POSITIVE,
            f64::MAX,
        ]);
        for kind in [Kind::Float, Kind::Double, Kind::Half, Kind::Int64] {
            for &v in &values {
                let old = Tensor::from_slice(&[v]).reshape([]).to_kind(kind);
                let new = number(v, kind).unwrap();
                assert!(same(&new, &old), "{v:e} as {kind:?}: {new:?} vs {old:?}");
            }
        }
        // No operator at all (one through tch, without libtorch's headers).
        let per_number = if cfg!(dpaudit_scalar) { 0 } else { 1 };
        for kind in [Kind::Float, Kind::Double] {
            let counter = crate::op_count::OpCounter::start().unwrap();
            let n = number(0.25, kind).unwrap();
            let counts = counter.finish();
            assert_eq!(counts.top_level, per_number, "{kind:?}");
            assert_eq!(counts.all, per_number, "{kind:?}");
            assert_eq!(
                (n.size(), n.kind(), n.device()),
                (vec![], kind, Device::Cpu)
            );
        }
        let counter = crate::op_count::OpCounter::start().unwrap();
        let n = int(-7).unwrap();
        assert_eq!(counter.finish().top_level, per_number);
        assert!(same(&n, &Tensor::from_slice(&[-7i64]).reshape([])));
        for v in [i64::MIN, -1, 0, 1 << 40, i64::MAX] {
            assert!(
                same(&int(v).unwrap(), &Tensor::from_slice(&[v]).reshape([])),
                "{v}"
            );
        }
        // Each number owns its storage: the tensors stay apart and outlive
        // everything else made here.
        let kept: Vec<Tensor> = (0..64)
            .map(|i| number(f64::from(i), Kind::Float).unwrap())
            .collect();
        for (i, t) in kept.iter().enumerate() {
            assert_eq!(t.double_value(&[]), i as f64);
        }
    }

    /// An operand is built once per kind, with `float`'s value.
    #[test]
    fn an_operand_is_built_once_per_kind() {
        let f = Tensor::from_slice(&[1.5f32, -2.0]);
        let d = Tensor::from_slice(&[1.5f64, -2.0]);
        let mut third = Operand::new(1.0 / 3.0);
        let a = third.like(&f).unwrap();
        let b = third.like(&f).unwrap();
        let c = third.like(&d).unwrap();
        // The second float32 operand is the first one's tensor, not a new one.
        assert_eq!(a.data_ptr(), b.data_ptr());
        assert_ne!(a.data_ptr(), c.data_ptr());
        assert_eq!(third.made.len(), 2);
        assert!(same(&a, &float(1.0 / 3.0, &f).unwrap()));
        assert!(same(&b, &a));
        assert!(same(&c, &float(1.0 / 3.0, &d).unwrap()));
    }

    /// The tensor overloads give the number overloads' results bit for bit,
    /// in float32, float64 and int64, for the operations library code uses.
    #[test]
    fn tensor_operands_give_the_number_results_bit_for_bit() {
        let mut values: Vec<f64> = (0..257)
            .map(|i| ((i as f64) * 0.7311).sin() * 10f64.powi(i % 7 - 3))
            .collect();
        values.extend([f64::NAN, f64::INFINITY, f64::NEG_INFINITY, -0.0, 0.0]);
        let d = Tensor::from_slice(&values);
        let f = d.to_kind(Kind::Float);
        let s = [0.1, 1.0 / 3.0, -2.5, 1e-7, 7.0];
        for x in [&f, &d] {
            for &v in &s {
                let n = float(v, x).unwrap();
                assert!(same(&x.mul_f64(v).unwrap(), &x.f_mul_scalar(v).unwrap()));
                assert!(same(&x.add_f64(v).unwrap(), &x.f_add_scalar(v).unwrap()));
                assert!(same(&x.div_f64(v).unwrap(), &x.f_div_scalar(v).unwrap()));
                assert!(same(
                    &x.clamp_max_f64(v).unwrap(),
                    &x.f_clamp_max(v).unwrap()
                ));
                assert!(same(
                    &x.clamp_min_f64(v).unwrap(),
                    &x.f_clamp_min(v).unwrap()
                ));
                assert!(same(&x.lt_f64(v).unwrap(), &x.f_lt(v).unwrap()));
                assert!(same(&x.gt_f64(v).unwrap(), &x.f_gt(v).unwrap()));
                let (mut a, mut b) = (x.copy(), x.copy());
                let _ = a.mul_f64_(v).unwrap();
                let _ = b.f_mul_scalar_(v).unwrap();
                assert!(same(&a, &b));
                let _ = a.add_f64_(v).unwrap();
                let _ = b.f_add_scalar_(v).unwrap();
                assert!(same(&a, &b));
                let full_t = full(&[3, 2], &n, (x.kind(), Device::Cpu)).unwrap();
                assert!(same(
                    &full_t,
                    &Tensor::full([3, 2], v, (x.kind(), Device::Cpu))
                ));
            }
            // A 0-dim receiver keeps its kind too.
            let sum = x.sum(x.kind());
            assert!(same(
                &sum.div_f64(3.0).unwrap(),
                &sum.f_div_scalar(3.0).unwrap()
            ));
        }
        let i = Tensor::from_slice(&[0i64, 1, 5, 0xFFFF_FFFF, 0x1_2345_6789, -7]);
        for v in [0i64, 1, 3, 32, 0xD251_1F53, 0xFFFF_FFFF] {
            let n = int(v).unwrap();
            assert!(same(&i.f_mul(&n).unwrap(), &i.f_mul_scalar(v).unwrap()));
            assert!(same(&i.f_add(&n).unwrap(), &i.f_add_scalar(v).unwrap()));
            assert!(same(
                &i.f_bitwise_and_tensor(&n).unwrap(),
                &i.f_bitwise_and(v).unwrap()
            ));
            assert!(same(
                &i.f_bitwise_xor_tensor(&n).unwrap(),
                &i.f_bitwise_xor(v).unwrap()
            ));
            assert!(same(
                &i.f_clamp_max_tensor(&n).unwrap(),
                &i.f_clamp_max(v).unwrap()
            ));
            if v > 0 {
                assert!(same(
                    &i.f_floor_divide(&n).unwrap(),
                    &i.f_floor_divide_scalar(v).unwrap()
                ));
            }
            if v < 64 {
                assert!(same(
                    &i.f_bitwise_right_shift(&n).unwrap(),
                    &i.f_bitwise_right_shift_tensor_scalar(v).unwrap()
                ));
                assert!(same(
                    &i.f_bitwise_left_shift(&n).unwrap(),
                    &i.f_bitwise_left_shift_tensor_scalar(v).unwrap()
                ));
            }
            let full_t = full(&[4], &n, (Kind::Int64, Device::Cpu)).unwrap();
            assert!(same(
                &full_t,
                &Tensor::full([4], v, (Kind::Int64, Device::Cpu))
            ));
        }
    }

    /// What the module is for: a failing operation with a number argument
    /// panics in tch 0.24, with a tensor argument it returns the error.
    #[test]
    fn a_failing_tensor_overload_returns_the_error() {
        let huge = [1i64 << 48];
        let n = float(1.0, &Tensor::zeros([1], (Kind::Float, Device::Cpu))).unwrap();
        assert!(full(&huge, &n, (Kind::Float, Device::Cpu)).is_err());
        let number = std::panic::catch_unwind(|| {
            Tensor::f_full(huge, 1.0, (Kind::Float, Device::Cpu)).is_err()
        });
        assert!(
            number.is_err(),
            "tch's f_full returned the error: the workaround may no longer be needed"
        );
    }
}
