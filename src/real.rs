//! The two working precisions (`f32`, `f64`) and the machine constants LAPACK uses for them.
//! `Real` also implies the cudarc marker traits, so device buffers can hold either precision.

use std::fmt::{Debug, Display};
use std::ops::{Add, Div, Mul, Neg, Sub};

/// A LAPACK working precision: `f32` (the `s` routines) or `f64` (the `d` routines).
pub trait Real:
    crate::device::memory::PlainData
    + crate::host::ZeroBits
    + Send
    + Sync
    + Default
    + PartialOrd
    + Debug
    + Display
    + Add<Output = Self>
    + Sub<Output = Self>
    + Mul<Output = Self>
    + Div<Output = Self>
    + Neg<Output = Self>
    + 'static
{
    /// `'s'` or `'d'`: the prefix of the LAPACK routine names in this precision.
    const PREFIX: char;
    const ZERO: Self;
    const ONE: Self;
    const TWO: Self;
    const HALF: Self;
    /// LAPACK `xLAMCH('E')`: relative machine precision (half an ulp of 1).
    const EPS: Self;
    /// LAPACK `xLAMCH('P')`: `EPS * base`, one ulp of 1.
    const ULP: Self;
    /// LAPACK `xLAMCH('S')`: safe minimum, whose reciprocal does not overflow.
    const SAFE_MIN: Self;
    /// Largest finite number.
    const MAX: Self;

    fn abs(self) -> Self;
    fn sqrt(self) -> Self;
    fn max(self, other: Self) -> Self;
    fn min(self, other: Self) -> Self;
    fn is_finite(self) -> bool;
    fn is_nan(self) -> bool;
    fn to_f64(self) -> f64;
    fn from_f64(x: f64) -> Self;
    fn from_usize(x: usize) -> Self {
        Self::from_f64(x as f64)
    }
    /// Smallest representable number greater than `self` (for finite `self`).
    fn next_up(self) -> Self;
    /// Largest representable number less than `self` (for finite `self`).
    fn next_down(self) -> Self;
}

macro_rules! impl_real {
    ($t:ty, $prefix:expr) => {
        impl Real for $t {
            const PREFIX: char = $prefix;
            const ZERO: Self = 0.0;
            const ONE: Self = 1.0;
            const TWO: Self = 2.0;
            const HALF: Self = 0.5;
            const EPS: Self = <$t>::EPSILON * 0.5;
            const ULP: Self = <$t>::EPSILON;
            // 1/MAX is below MIN_POSITIVE for IEEE binary32/64, so LAPACK's answer is MIN_POSITIVE.
            const SAFE_MIN: Self = <$t>::MIN_POSITIVE;
            const MAX: Self = <$t>::MAX;

            #[inline(always)]
            fn abs(self) -> Self {
                <$t>::abs(self)
            }
            #[inline(always)]
            fn sqrt(self) -> Self {
                <$t>::sqrt(self)
            }
            #[inline(always)]
            fn max(self, other: Self) -> Self {
                <$t>::max(self, other)
            }
            #[inline(always)]
            fn min(self, other: Self) -> Self {
                <$t>::min(self, other)
            }
            #[inline(always)]
            fn is_finite(self) -> bool {
                <$t>::is_finite(self)
            }
            #[inline(always)]
            fn is_nan(self) -> bool {
                <$t>::is_nan(self)
            }
            #[inline(always)]
            fn to_f64(self) -> f64 {
                self as f64
            }
            #[inline(always)]
            fn from_f64(x: f64) -> Self {
                x as $t
            }
            #[inline(always)]
            fn next_up(self) -> Self {
                <$t>::next_up(self)
            }
            #[inline(always)]
            fn next_down(self) -> Self {
                <$t>::next_down(self)
            }
        }
    };
}

impl_real!(f32, 's');
impl_real!(f64, 'd');

// Error-free transformations (f64), shared by the interval family's directed rounding and the
// tridiagonal solver's compensated residual.

/// `a + b = s + e` exactly when no overflow occurs (Knuth's TwoSum).
#[inline(always)]
pub fn two_sum(a: f64, b: f64) -> (f64, f64) {
    let s = a + b;
    let bb = s - a;
    (s, (a - (s - bb)) + (b - bb))
}

/// `a · b = p + e` exactly unless the product is in the underflow range (TwoProduct by FMA).
#[inline(always)]
pub fn two_prod(a: f64, b: f64) -> (f64, f64) {
    let p = a * b;
    (p, a.mul_add(b, -p))
}
