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
/// One libtorch operator for float32 and float64 (tch makes the 0-dim
/// tensor and copies the bytes in), three for other kinds (a 1-element
/// tensor, reshaped, converted): a step builds a few dozen numbers, and each
/// operator costs host time on any device. The f64 → f32 `as` cast rounds to
/// nearest, ties to even, as libtorch's conversion does (the test below
/// compares them bit for bit).
pub fn number(v: f64, kind: Kind) -> Result<Tensor, TchError> {
    match kind {
        Kind::Double => Tensor::f_from_data_size(&v.to_ne_bytes(), &[], Kind::Double),
        Kind::Float => Tensor::f_from_data_size(&(v as f32).to_ne_bytes(), &[], Kind::Float),
        _ => Tensor::f_from_slice(&[v])?.f_reshape([])?.f_to_kind(kind),
    }
}

/// `v` as a 0-dim CPU tensor of the kind of `like` (the tensor it will be
/// combined with).
pub fn float(v: f64, like: &Tensor) -> Result<Tensor, TchError> {
    number(v, like.f_kind()?)
}

/// `v` as a 0-dim int64 CPU tensor (one libtorch operator).
pub fn int(v: i64) -> Result<Tensor, TchError> {
    Tensor::f_from_data_size(&v.to_ne_bytes(), &[], Kind::Int64)
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
    fn numbers_take_one_operator_and_round_as_libtorch_does() {
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
        for kind in [Kind::Float, Kind::Double] {
            let counter = crate::op_count::OpCounter::start().unwrap();
            let _n = number(0.25, kind).unwrap();
            assert_eq!(counter.finish().top_level, 1, "{kind:?}");
        }
        let counter = crate::op_count::OpCounter::start().unwrap();
        let n = int(-7).unwrap();
        assert_eq!(counter.finish().top_level, 1);
        assert!(same(&n, &Tensor::from_slice(&[-7i64]).reshape([])));
    }

    /// An operand is built once per kind, with `float`'s value.
    #[test]
    fn an_operand_is_built_once_per_kind() {
        let f = Tensor::from_slice(&[1.5f32, -2.0]);
        let d = Tensor::from_slice(&[1.5f64, -2.0]);
        let mut third = Operand::new(1.0 / 3.0);
        let counter = crate::op_count::OpCounter::start().unwrap();
        let a = third.like(&f).unwrap();
        let b = third.like(&f).unwrap();
        let c = third.like(&d).unwrap();
        assert_eq!(counter.finish().top_level, 2);
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
