//! LAPACK's constants and tests of xSTEBZ and xLAEBZ: FUDGE, RELFAC, the iteration cap and the
//! convergence test, in the working precision as LAPACK computes them.

use crate::real::Real;

/// LAPACK's FUDGE: widens the Gerschgorin intervals (see the module notes).
pub(super) fn fudge<T: Real>() -> T {
    T::from_f64(if T::PREFIX == 's' { 2.1f32 as f64 } else { 2.1 })
}

/// LAPACK's RELFAC: the relative tolerance is RELFAC · ulp.
pub(super) const RELFAC: f64 = 2.0;

/// Natural logarithm in the working precision (LAPACK's LOG of a REAL is single precision).
pub(super) fn ln<T: Real>(x: T) -> T {
    if T::PREFIX == 's' {
        T::from_f64((x.to_f64() as f32).ln() as f64)
    } else {
        T::from_f64(x.to_f64().ln())
    }
}

/// Fortran's INT on x86: truncation, and the "integer indefinite" value for NaN or overflow.
pub(super) fn fortran_int<T: Real>(v: T) -> i32 {
    let v = v.to_f64();
    if v.is_nan() || v >= 2_147_483_648.0 || v <= -2_147_483_649.0 {
        i32::MIN
    } else {
        v.trunc() as i32
    }
}

/// LAPACK's iteration cap: `INT((LOG(width) − LOG(PIVMIN)) / LOG(2)) + 2` levels of bisection.
pub(super) fn iteration_cap<T: Real>(width: T, pivmin: T) -> i32 {
    fortran_int((ln(width) - ln(pivmin)) / ln(T::TWO)).wrapping_add(2)
}

/// xLAEBZ's convergence test for `(lo, hi]` with counts `nlo`, `nhi`.
#[inline]
pub(super) fn converged<T: Real>(
    lo: T,
    hi: T,
    nlo: i32,
    nhi: i32,
    atol: T,
    pivmin: T,
    rtol: T,
) -> bool {
    let width = (hi - lo).abs();
    let mag = hi.abs().max(lo.abs());
    width < atol.max(pivmin).max(rtol * mag) || nlo >= nhi
}
