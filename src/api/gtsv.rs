//! `sgtsv_spike` / `dgtsv_spike`: the general tridiagonal solve with LAPACK xGTSV's contract,
//! by SPIKE with diagonal pivoting (GPU or CPU threads), falling back to the system LAPACK's
//! xGTSV whenever the SPIKE answer is not certified by its residual check.

use super::{ffi_boundary, output, report_illegal_argument, scalar, HYLAPACK_INFO_INTERNAL_ERROR};
use crate::dispatch::{self, Family};
use crate::gtsv;
use crate::lapack::Lapack;
use std::ffi::c_int;
use std::time::Instant;

/// Checks pointers and arguments in LAPACK's order, runs the routine and logs the call.
#[allow(clippy::too_many_arguments)]
unsafe fn run<T: Lapack>(
    routine: &str,
    n: c_int,
    nrhs: c_int,
    dl: *mut T,
    d: *mut T,
    du: *mut T,
    b: *mut T,
    ldb: c_int,
) -> c_int {
    let mut info = gtsv::check_args(n, nrhs, ldb);
    if info == 0 {
        let (len, k) = (n as usize, nrhs as usize);
        let blen = if len == 0 || k == 0 {
            0
        } else {
            ldb as usize * (k - 1) + len
        };
        // A null array that would be referenced is an illegal value of that argument.
        let missing = [
            len > 1 && dl.is_null(),
            len > 0 && d.is_null(),
            len > 1 && du.is_null(),
            blen > 0 && b.is_null(),
        ];
        if let Some(i) = missing.iter().position(|&x| x) {
            info = -(3 + i as c_int);
        } else {
            let dl = output(dl, len.saturating_sub(1)).unwrap_or_default();
            let d = output(d, len).unwrap_or_default();
            let du = output(du, len.saturating_sub(1)).unwrap_or_default();
            let b = output(b, blen).unwrap_or_default();
            let started = Instant::now();
            let decision = dispatch::decide(Family::Gtsv, len);
            let report = gtsv::gtsv(dl, d, du, b, ldb as usize, k, decision.backend);
            let note = report.note.or(decision.why_not_gpu);
            dispatch::finish_call(
                routine,
                len,
                report.backend,
                started.elapsed(),
                note.as_deref(),
            );
            return report.info;
        }
    }
    report_illegal_argument(routine, info);
    info
}

/// Fortran convention body, shared by both precisions.
#[allow(clippy::too_many_arguments)]
unsafe fn fortran<T: Lapack>(
    routine: &str,
    n: *const c_int,
    nrhs: *const c_int,
    dl: *mut T,
    d: *mut T,
    du: *mut T,
    b: *mut T,
    ldb: *const c_int,
    info: *mut c_int,
) {
    let result = ffi_boundary!(routine, HYLAPACK_INFO_INTERNAL_ERROR, {
        // A null scalar becomes an illegal value of that argument.
        let (n, nrhs, ldb) = (
            scalar(n).unwrap_or(-1),
            scalar(nrhs).unwrap_or(-1),
            scalar(ldb).unwrap_or(0),
        );
        run::<T>(routine, n, nrhs, dl, d, du, b, ldb)
    });
    if !info.is_null() {
        *info = result;
    }
}

/// Solves `A X = B` for a general tridiagonal `A` of order `n` in double precision (C convention,
/// LAPACKE shape), with LAPACK DGTSV's contract.
///
/// - `dl` (n − 1): the sub-diagonal, `d` (n): the diagonal, `du` (n − 1): the super-diagonal.
///   **On exit their contents are unspecified** (unlike DGTSV, which leaves its LU factors there):
///   they are unchanged when the SPIKE answer was accepted and hold DGTSV's factors when DGTSV
///   ran (small `n`, `nrhs` = 0, or a fallback). Do not use them afterwards.
/// - `b` (ldb × nrhs, column-major): the right-hand sides; on exit, with INFO = 0, the solution.
/// - `ldb` ≥ max(1, n).
///
/// The SPIKE answer is returned only if no pivot was zero, it is finite and its residual passes a
/// backward-error check of a few ulps; otherwise the system LAPACK's DGTSV runs on the untouched
/// original data, so singular systems end exactly as with DGTSV.
///
/// Returns INFO: 0 on success; −i if the i-th argument had an illegal value (N = 1, NRHS = 2,
/// DL … B = 3 … 6 when NULL but referenced, LDB = 7), reported through `xerbla_`; i > 0 if
/// U(i,i) of DGTSV's factorization is exactly zero (the solution was not computed); −1000 for an
/// internal error (printed on stderr).
#[no_mangle]
pub unsafe extern "C" fn dgtsv_spike(
    n: c_int,
    nrhs: c_int,
    dl: *mut f64,
    d: *mut f64,
    du: *mut f64,
    b: *mut f64,
    ldb: c_int,
) -> c_int {
    ffi_boundary!("DGTSV_SPIKE", HYLAPACK_INFO_INTERNAL_ERROR, {
        run("DGTSV_SPIKE", n, nrhs, dl, d, du, b, ldb)
    })
}

/// Single-precision `dgtsv_spike` (LAPACK SGTSV's contract).
#[no_mangle]
pub unsafe extern "C" fn sgtsv_spike(
    n: c_int,
    nrhs: c_int,
    dl: *mut f32,
    d: *mut f32,
    du: *mut f32,
    b: *mut f32,
    ldb: c_int,
) -> c_int {
    ffi_boundary!("SGTSV_SPIKE", HYLAPACK_INFO_INTERNAL_ERROR, {
        run("SGTSV_SPIKE", n, nrhs, dl, d, du, b, ldb)
    })
}

/// `dgtsv_spike` in the Fortran convention: LAPACK DGTSV's argument list
/// (N, NRHS, DL, D, DU, B, LDB, INFO), all by reference.
#[no_mangle]
pub unsafe extern "C" fn dgtsv_spike_(
    n: *const c_int,
    nrhs: *const c_int,
    dl: *mut f64,
    d: *mut f64,
    du: *mut f64,
    b: *mut f64,
    ldb: *const c_int,
    info: *mut c_int,
) {
    fortran("DGTSV_SPIKE", n, nrhs, dl, d, du, b, ldb, info)
}

/// `sgtsv_spike` in the Fortran convention (LAPACK SGTSV's argument list).
#[no_mangle]
pub unsafe extern "C" fn sgtsv_spike_(
    n: *const c_int,
    nrhs: *const c_int,
    dl: *mut f32,
    d: *mut f32,
    du: *mut f32,
    b: *mut f32,
    ldb: *const c_int,
    info: *mut c_int,
) {
    fortran("SGTSV_SPIKE", n, nrhs, dl, d, du, b, ldb, info)
}
