//! `ssyrdb_ooc` / `dsyrdb_ooc`: reduction of a dense symmetric matrix to band form, out of
//! core on the GPU, with LAPACK xSYTRD_SY2SB's contract.

use super::{
    ffi_boundary, fortran_char, output, report_illegal_argument, scalar,
    HYLAPACK_INFO_INTERNAL_ERROR,
};
use crate::dispatch::{self, Backend, Family};
use crate::lapack::span;
use crate::sbr::{self, Path, SbrReal};
use std::ffi::{c_char, c_int};
use std::time::Instant;

/// The path the dispatcher picks for a problem of order `n`, and why not the GPU.
pub(crate) fn choose_path(n: usize) -> (Path, Option<String>) {
    let decision = dispatch::decide(Family::Syrdb, n);
    let path = match decision.backend {
        Backend::Gpu => Path::Gpu { budget: None },
        Backend::Cpu => Path::Lapack,
    };
    (path, decision.why_not_gpu)
}

/// Checks arguments and pointers in LAPACK's order, runs the reduction (or answers a
/// workspace query into `WORK(1)`) and logs the call. `work` is (WORK, LWORK) in the Fortran
/// convention, `None` in the C convention (no workspace).
#[allow(clippy::too_many_arguments)]
unsafe fn run<T: SbrReal>(
    routine: &str,
    uplo: u8,
    n: c_int,
    kd: c_int,
    a: *mut T,
    lda: c_int,
    ab: *mut T,
    ldab: c_int,
    tau: *mut T,
    work: Option<(*mut T, c_int)>,
) -> c_int {
    // The C convention has no workspace argument, so no LWORK can be too small: it checks as
    // a query would (LWORK = −1), without being one.
    let lwork = work.map_or(-1, |(_, l)| l);
    let mut info = sbr::check_args(uplo, n, kd, lda, ldab, lwork);
    let (len, kd_u) = (n.max(0) as usize, kd.max(0) as usize);
    if info == 0 {
        let query = work.is_some_and(|(_, l)| l == -1);
        let a_len = span(len, len, lda as usize);
        let ab_len = span(kd_u + 1, len, ldab as usize);
        let tau_len = len.saturating_sub(kd_u);
        // A null array that would be referenced is an illegal value of that argument.
        let missing = [
            (!query && a_len > 0 && a.is_null(), -4),
            (!query && ab_len > 0 && ab.is_null(), -6),
            (!query && tau_len > 0 && tau.is_null(), -8),
            (work.is_some_and(|(w, _)| w.is_null()), -9),
        ];
        if let Some(&(_, i)) = missing.iter().find(|(m, _)| *m) {
            info = i;
        } else {
            let lwmin = sbr::lwork_min(len, kd_u);
            if let Some((work, _)) = work {
                *work = T::from_usize(lwmin);
            }
            if query {
                return 0;
            }
            let a = output(a, a_len).unwrap_or_default();
            let ab = output(ab, ab_len).unwrap_or_default();
            let tau = output(tau, tau_len).unwrap_or_default();
            let started = Instant::now();
            let (lda, ldab) = (lda as usize, ldab as usize);
            let (path, why_not_gpu) = if len <= kd_u + 1 {
                // LAPACK's quick return (A's triangle copied into AB) needs no device.
                (
                    Path::Lapack,
                    Some("already a band (N <= KD + 1)".to_string()),
                )
            } else {
                choose_path(len)
            };
            let mut report = sbr::syrdb(uplo, len, kd_u, a, lda, ab, ldab, tau, path);
            if let (Some((work, lwork)), true) = (work, report.lapack_without_workspace) {
                // LAPACK's rule: a Fortran name uses the workspace its caller passed. That WORK
                // passed xSYTRD_SY2SB's LWORK check and A is untouched, so the system LAPACK
                // answers there (its INFO, its WORK(1)) instead of INFO = -1000.
                let work = output(work, lwork as usize).unwrap_or_default();
                report.info = T::sytrd_sy2sb(uplo, len, kd_u, a, lda, ab, ldab, tau, work, false);
                let note = report.note.get_or_insert_with(String::new);
                note.push_str("; the system LAPACK ran in the caller's WORK");
            }
            let note = report.note.or(why_not_gpu);
            dispatch::finish_call(
                routine,
                len,
                report.backend,
                started.elapsed(),
                note.as_deref(),
            );
            // 0 (or the system LAPACK's INFO, where it ran in the caller's WORK), or −1000
            // when host memory no path can do without was not there.
            return report.info;
        }
    }
    report_illegal_argument(routine, info);
    info
}

/// Fortran convention body, shared by both precisions.
#[allow(clippy::too_many_arguments)]
unsafe fn fortran<T: SbrReal>(
    routine: &str,
    uplo: *const c_char,
    n: *const c_int,
    kd: *const c_int,
    a: *mut T,
    lda: *const c_int,
    ab: *mut T,
    ldab: *const c_int,
    tau: *mut T,
    work: *mut T,
    lwork: *const c_int,
    info: *mut c_int,
) {
    let result = ffi_boundary!(routine, HYLAPACK_INFO_INTERNAL_ERROR, {
        // A null scalar becomes an illegal value of that argument.
        run(
            routine,
            fortran_char(uplo),
            scalar(n).unwrap_or(-1),
            scalar(kd).unwrap_or(-1),
            a,
            scalar(lda).unwrap_or(0),
            ab,
            scalar(ldab).unwrap_or(0),
            tau,
            Some((work, scalar(lwork).unwrap_or(-2))),
        )
    });
    if !info.is_null() {
        *info = result;
    }
}

/// Reduces the real symmetric `n` x `n` matrix `a` (its `uplo` triangle, 'U' or 'L') to
/// symmetric band form with `kd` off-diagonals by an orthogonal similarity Qᵀ A Q = B, in double
/// precision (C convention, LAPACKE shape: no workspace).
///
/// Same contract as LAPACK DSYTRD_SY2SB: on return `ab` (`ldab` >= `kd` + 1 rows, `n` columns)
/// holds B in LAPACK band storage (UPLO = 'U': AB(kd+1+i−j, j) = B(i, j); 'L': AB(1+i−j, j) =
/// B(i, j)), and the Householder vectors of Q are left in `a` with their scalars in `tau`
/// (`n` − `kd` entries), where DSYTRD_SY2SB leaves them, so that Q can be applied later.
///
/// Out of core: the matrix stays in host memory and the GPU holds only panels and block
/// columns, so `n` is limited by host memory; the GPU memory used stays within
/// `HYLAPACK_GPU_MEMORY_LIMIT` (or 90% of what is free). When the matrix does not fit there,
/// the memory of `a` is page-locked (cuMemHostRegister) for the duration of the call, so that
/// block columns move by DMA straight from and into it; memory the caller has page-locked
/// already, and `HYLAPACK_SBR_DIRECT=0`, go through staging buffers instead.
/// Problems below the syrdb size threshold, or with no GPU, run the system LAPACK's
/// DSYTRD_SY2SB. The result agrees with LAPACK's to rounding, not bit for bit. If the GPU
/// fails, the call finishes on the host (from the input, or from the last block column written
/// back), except when the failure comes while a transfer is writing the result into `a`: then
/// neither the input nor the result is whole and the call returns −1000.
///
/// Returns INFO: 0 on success; −i if the i-th argument (LAPACK numbering) had an illegal value
/// or was NULL, reported through `xerbla_`; −1000 for an internal error (printed on stderr).
/// Unlike LAPACK, KD = 0 with N ≥ 2 is illegal (−3): no reflectors make a matrix diagonal, and
/// LAPACK 3.11, which accepts it, divides by zero.
///
/// # Safety
/// Each array pointer is NULL (reported as an illegal argument where the routine would read
/// it) or valid for the entries LAPACK's routine of the same contract reads or writes through
/// it, for the sizes and leading dimensions given; scalars passed by reference are readable.
#[no_mangle]
pub unsafe extern "C" fn dsyrdb_ooc(
    uplo: c_char,
    n: c_int,
    kd: c_int,
    a: *mut f64,
    lda: c_int,
    ab: *mut f64,
    ldab: c_int,
    tau: *mut f64,
) -> c_int {
    ffi_boundary!("DSYRDB_OOC", HYLAPACK_INFO_INTERNAL_ERROR, {
        run("DSYRDB_OOC", uplo as u8, n, kd, a, lda, ab, ldab, tau, None)
    })
}

/// Single-precision `dsyrdb_ooc` (LAPACK SSYTRD_SY2SB's contract).
///
/// # Safety
/// Each array pointer is NULL (reported as an illegal argument where the routine would read
/// it) or valid for the entries LAPACK's routine of the same contract reads or writes through
/// it, for the sizes and leading dimensions given; scalars passed by reference are readable.
#[no_mangle]
pub unsafe extern "C" fn ssyrdb_ooc(
    uplo: c_char,
    n: c_int,
    kd: c_int,
    a: *mut f32,
    lda: c_int,
    ab: *mut f32,
    ldab: c_int,
    tau: *mut f32,
) -> c_int {
    ffi_boundary!("SSYRDB_OOC", HYLAPACK_INFO_INTERNAL_ERROR, {
        run("SSYRDB_OOC", uplo as u8, n, kd, a, lda, ab, ldab, tau, None)
    })
}

/// `dsyrdb_ooc` in the Fortran convention: LAPACK DSYTRD_SY2SB's argument list, all by
/// reference, with the hidden CHARACTER length of UPLO last. LWORK = −1 is a workspace query:
/// WORK(1) returns LAPACK's size (N·KD + N·max(KD, 32) + 2·KD², or 1 when N <= KD + 1), which
/// is also the smallest LWORK accepted. WORK is used beyond WORK(1) only where host memory
/// for the call cannot be allocated before A is touched: the system LAPACK's DSYTRD_SY2SB
/// then runs in it (LWORK as given), and INFO and every output are that call's, where the C
/// name returns −1000.
///
/// # Safety
/// Each array pointer is NULL (reported as an illegal argument where the routine would read
/// it) or valid for the entries LAPACK's routine of the same contract reads or writes through
/// it, for the sizes and leading dimensions given; scalars passed by reference are readable.
#[no_mangle]
pub unsafe extern "C" fn dsyrdb_ooc_(
    uplo: *const c_char,
    n: *const c_int,
    kd: *const c_int,
    a: *mut f64,
    lda: *const c_int,
    ab: *mut f64,
    ldab: *const c_int,
    tau: *mut f64,
    work: *mut f64,
    lwork: *const c_int,
    info: *mut c_int,
    uplo_len: usize,
) {
    let _ = uplo_len; // never read: C callers may omit it
    fortran(
        "DSYRDB_OOC",
        uplo,
        n,
        kd,
        a,
        lda,
        ab,
        ldab,
        tau,
        work,
        lwork,
        info,
    )
}

/// `ssyrdb_ooc` in the Fortran convention (LAPACK SSYTRD_SY2SB's argument list).
///
/// # Safety
/// Each array pointer is NULL (reported as an illegal argument where the routine would read
/// it) or valid for the entries LAPACK's routine of the same contract reads or writes through
/// it, for the sizes and leading dimensions given; scalars passed by reference are readable.
#[no_mangle]
pub unsafe extern "C" fn ssyrdb_ooc_(
    uplo: *const c_char,
    n: *const c_int,
    kd: *const c_int,
    a: *mut f32,
    lda: *const c_int,
    ab: *mut f32,
    ldab: *const c_int,
    tau: *mut f32,
    work: *mut f32,
    lwork: *const c_int,
    info: *mut c_int,
    uplo_len: usize,
) {
    let _ = uplo_len;
    fortran(
        "SSYRDB_OOC",
        uplo,
        n,
        kd,
        a,
        lda,
        ab,
        ldab,
        tau,
        work,
        lwork,
        info,
    )
}
