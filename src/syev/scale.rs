//! LAPACK's scaling of a matrix whose largest entry lies near underflow or overflow
//! (xLANSY('M'), xLASCL).

use crate::host::workers::{or_resume, run_parts};
use crate::real::Real;

/// The largest |a(i, j)| over the rows `rows(j)` of each column j (xLANSY('M')): NaN if any
/// entry is NaN. Large matrices are scanned by all threads, columns dealt round-robin (one
/// thread took 0.1–0.2 s at n = 16384, a tenth of the GPU path).
fn max_abs<T: Real>(
    n: usize,
    a: &[T],
    lda: usize,
    rows: impl Fn(usize) -> std::ops::Range<usize> + Sync,
) -> T {
    // A NaN, once met, stays.
    let larger = |m: T, x: T| {
        if !m.is_nan() && (x > m || x.is_nan()) {
            x
        } else {
            m
        }
    };
    let columns = |first: usize, stride: usize| {
        (first..n).step_by(stride).fold(T::ZERO, |m, j| {
            rows(j).fold(m, |m, i| larger(m, a[i + j * lda].abs()))
        })
    };
    let threads = crate::host::threads();
    if threads == 1 || n * n < 1 << 20 {
        return columns(0, 1);
    }
    or_resume(run_parts((0..threads).collect(), &|t| columns(t, threads)))
        .into_iter()
        .fold(T::ZERO, larger)
}

/// The rows of column j in the `uplo` triangle of an n x n matrix.
fn triangle_rows(uplo: u8, n: usize) -> impl Fn(usize) -> std::ops::Range<usize> + Sync {
    let lower = uplo.eq_ignore_ascii_case(&b'L');
    move |j| if lower { j..n } else { 0..j + 1 }
}

/// xLANSY('M') of the `uplo` triangle: its largest |a(i, j)|, NaN if any entry is NaN.
pub(super) fn triangle_max_abs<T: Real>(uplo: u8, n: usize, a: &[T], lda: usize) -> T {
    max_abs(n, a, lda, triangle_rows(uplo, n))
}

/// Scales the `uplo` triangle of `a` into LAPACK's safe range `[rmin, rmax]` when its largest
/// entry `anrm` lies outside it (xLASCL/xSCAL); returns the factor used.
pub(super) fn scale_into_range<T: Real>(
    uplo: u8,
    n: usize,
    a: &mut [T],
    lda: usize,
    anrm: T,
    rmax: T,
) -> Option<T> {
    let smlnum = T::SAFE_MIN / T::ULP;
    let rmin = smlnum.sqrt();
    let rows = triangle_rows(uplo, n);
    let sigma = if anrm > T::ZERO && anrm < rmin {
        rmin / anrm
    } else if anrm > rmax {
        rmax / anrm
    } else {
        return None;
    };
    for j in 0..n {
        for i in rows(j) {
            a[i + j * lda] = a[i + j * lda] * sigma;
        }
    }
    Some(sigma)
}
