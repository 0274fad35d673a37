//! LAPACK's LU in double precision: DGETRF and DGETRS.

use super::{mut_ptr_for, ptr_for, symbols};
use std::os::raw::{c_char, c_int};

// LAPACK's LU (double precision) for the interval family's approximate inverse.
symbols::system_routines! {
    fn dgetrf_(
        m: *const c_int,
        n: *const c_int,
        a: *mut f64,
        lda: *const c_int,
        ipiv: *mut c_int,
        info: *mut c_int,
    );
    fn dgetrs_(
        trans: *const c_char,
        n: *const c_int,
        nrhs: *const c_int,
        a: *const f64,
        lda: *const c_int,
        ipiv: *const c_int,
        b: *mut f64,
        ldb: *const c_int,
        info: *mut c_int,
        trans_len: usize,
    );
}

fn blas_int(x: usize) -> c_int {
    c_int::try_from(x).expect("dimension exceeds the 32-bit BLAS integer")
}

/// LAPACK DGETRF on the n×n matrix `a` (leading dimension `lda`). Returns INFO.
pub fn dgetrf(n: usize, a: &mut [f64], lda: usize, ipiv: &mut [i32]) -> i32 {
    if n == 0 {
        return 0;
    }
    let a = mut_ptr_for(a, lda * (n - 1) + n);
    let ipiv = mut_ptr_for(ipiv, n);
    let (n, lda, mut info) = (blas_int(n), blas_int(lda), 0);
    // SAFETY: sizes checked above.
    unsafe { dgetrf_(&n, &n, a, &lda, ipiv, &mut info) };
    info
}

/// LAPACK DGETRS ('N') with the factors of [`dgetrf`]: overwrites the n×nrhs `b` with the
/// solution. Returns INFO.
pub fn dgetrs(
    n: usize,
    nrhs: usize,
    lu: &[f64],
    lda: usize,
    ipiv: &[i32],
    b: &mut [f64],
    ldb: usize,
) -> i32 {
    if n == 0 || nrhs == 0 {
        return 0;
    }
    let lu = ptr_for(lu, lda * (n - 1) + n);
    let ipiv = ptr_for(ipiv, n);
    let b = mut_ptr_for(b, ldb * (nrhs - 1) + n);
    let trans = b'N';
    let (n, nrhs, lda, ldb, mut info) =
        (blas_int(n), blas_int(nrhs), blas_int(lda), blas_int(ldb), 0);
    // SAFETY: sizes checked above; one CHARACTER of length 1.
    unsafe {
        dgetrs_(
            &trans as *const u8 as *const c_char,
            &n,
            &nrhs,
            lu,
            &lda,
            ipiv,
            b,
            &ldb,
            &mut info,
            1,
        )
    };
    info
}
