//! The NaN and overflow rules (see the module notes of [`crate::stebz`]): where LAPACK's answer
//! would depend on how its compiler ordered a MAX or MIN with a NaN operand, or on a boundary
//! that overflowed to NaN, the call returns no eigenvalues and reports the failure.

use super::args::{Job, Range};
use super::index::Search;
use crate::real::Real;

/// Whether LAPACK's xSTEBZ (N ≥ 2, after splitting: `e2` and the block `ends` as in
/// [`solve`](super::solve)) would pass a NaN to MAX or MIN, where its answer is the
/// compiler's: a NaN in D, E or the pivot bound, a NaN VL or VU with RANGE = 'V', or a NaN
/// Gerschgorin term `d(j) ± (|e(j−1)| + |e(j)|)` (∞ − ∞) in the loops LAPACK runs — over the
/// whole matrix with √e2 for RANGE = 'I', then per block of two or more rows with |e|. The
/// caller then reports the failure (see the module notes). Runs before anything is allocated
/// for the bisection.
pub(super) fn undefined_by_nan<T: Real>(job: &Job<'_, T>, e2: &[T], ends: &[usize]) -> bool {
    let (d, e) = (job.d, job.e);
    let n = d.len();
    if d.iter().chain(&e[..n - 1]).any(|x| x.is_nan()) {
        return true;
    }
    if job.range == Range::Value && (job.vl.is_nan() || job.vu.is_nan()) {
        return true;
    }
    let nan_terms = |rows: std::ops::Range<usize>, off: &dyn Fn(usize) -> T| {
        let mut prev = T::ZERO;
        rows.clone().any(|j| {
            let next = if j + 1 < rows.end { off(j) } else { T::ZERO };
            let (hi, lo) = (d[j] + prev + next, d[j] - prev - next);
            prev = next;
            hi.is_nan() || lo.is_nan()
        })
    };
    if job.range == Range::Index && nan_terms(0..n, &|j| e2[j].sqrt()) {
        return true;
    }
    let mut start = 0;
    ends.iter().any(|&end| {
        let rows = start..end;
        start = end;
        rows.len() > 1 && nan_terms(rows, &|j| e[j].abs())
    })
}

/// Whether the RANGE = 'I' search (see [`crate::stebz::index`]) ended on a NaN boundary.
pub(super) fn search_overflowed<T: Real>(lower: &Search<T>, upper: &Search<T>) -> bool {
    // Entries near the overflow threshold make FUDGE·TNORM overflow, so the search
    // starts from (−∞, ∞) and a midpoint is NaN; a NaN boundary would reach LAPACK's
    // per-block MAX/MIN (its W is then NaN and INFO = 1): report that failure.
    lower.lo.is_nan() || upper.hi.is_nan()
}
