//! `dsyev_ooc` / `dsyevx_ooc`: eigenvalues of a dense symmetric matrix through the
//! out-of-core band reduction, with LAPACK DSYEV's / DSYEVX's contracts (JOBZ = 'N' or 'V').

use super::syrdb::choose_path;
use super::{
    ffi_boundary, fortran_char, output, report_illegal_argument, scalar,
    HYLAPACK_INFO_INTERNAL_ERROR,
};
use crate::dispatch;
use crate::lapack::span;
use crate::sbr::SbrReal;
use crate::syev::{self as drivers, EigReport};
use std::ffi::{c_char, c_int};
use std::time::Instant;

fn log_call(
    routine: &str,
    n: usize,
    report: &EigReport,
    why_not_gpu: Option<String>,
    started: Instant,
) {
    let note = report
        .reduction
        .as_ref()
        .and_then(|r| r.note.clone())
        .or(why_not_gpu);
    dispatch::finish_call(
        routine,
        n,
        report.backend(),
        started.elapsed(),
        note.as_deref(),
    );
}

/// xSYEV's checks, pointers included, then the computation; `work` is (WORK, LWORK) in the
/// Fortran convention.
#[allow(clippy::too_many_arguments)] // xSYEV's own argument list
unsafe fn syev_run<T: SbrReal>(
    routine: &str,
    jobz: u8,
    uplo: u8,
    n: c_int,
    a: *mut T,
    lda: c_int,
    w: *mut T,
    work: Option<(*mut T, c_int)>,
) -> c_int {
    // The C convention has no workspace argument, so no LWORK can be too small: it checks as
    // a query would (LWORK = −1), without being one.
    let lwork = work.map_or(-1, |(_, l)| l);
    let mut info = drivers::syev_check(jobz, uplo, n, lda, lwork);
    let len = n.max(0) as usize;
    if info == 0 {
        let query = work.is_some_and(|(_, l)| l == -1);
        let a_len = span(len, len, lda as usize);
        let missing = [
            (!query && a_len > 0 && a.is_null(), -4),
            (!query && len > 0 && w.is_null(), -6),
            (work.is_some_and(|(p, _)| p.is_null()), -7),
        ];
        if let Some(&(_, i)) = missing.iter().find(|(m, _)| *m) {
            info = i;
        } else {
            if let Some((work, _)) = work {
                *work = T::from_usize(drivers::syev_lwork(len));
            }
            if query {
                return 0;
            }
            let a = output(a, a_len).unwrap_or_default();
            let w = output(w, len).unwrap_or_default();
            let started = Instant::now();
            let (path, why_not_gpu) = choose_path(len);
            let wantz = jobz.eq_ignore_ascii_case(&b'V');
            let mut report = if wantz {
                drivers::syev_vectors(uplo, len, a, lda as usize, w, path)
            } else {
                drivers::syev(uplo, len, a, lda as usize, w, path)
            };
            if let (Some((work, lwork)), true) = (work, report.lapack_without_workspace) {
                // The caller's WORK has LAPACK's size: the system xSYEV answers there, on the
                // A nothing has touched, instead of INFO = -1000.
                let work = output(work, lwork.max(1) as usize).unwrap_or_default();
                let lda = lda as usize;
                report.info = if wantz {
                    T::syev_vectors_in(uplo, len, a, lda, w, work)
                } else {
                    T::syev_values_in(uplo, len, a, lda, w, work)
                };
            }
            log_call(routine, len, &report, why_not_gpu, started);
            return report.info;
        }
    }
    report_illegal_argument(routine, info);
    info
}

/// xSYEVX's checks, pointers included, then the computation.
#[allow(clippy::too_many_arguments)]
unsafe fn syevx_run<T: SbrReal>(
    routine: &str,
    jobz: u8,
    range: u8,
    uplo: u8,
    n: c_int,
    a: *mut T,
    lda: c_int,
    vl: T,
    vu: T,
    il: c_int,
    iu: c_int,
    abstol: T,
    m: *mut c_int,
    w: *mut T,
    z: *mut T,
    ldz: c_int,
    work: Option<(*mut T, c_int, *mut c_int)>,
    ifail: *mut c_int,
) -> c_int {
    // As in `syev_run`: no workspace argument, no LWORK check. `work` is (WORK, LWORK, IWORK)
    // in the Fortran convention.
    let lwork = work.map_or(-1, |(_, l, _)| l);
    let mut info = drivers::syevx_check(jobz, range, uplo, n, lda, vl, vu, il, iu, ldz, lwork);
    let len = n.max(0) as usize;
    if info == 0 {
        let query = work.is_some_and(|(_, l, _)| l == -1);
        let a_len = span(len, len, lda as usize);
        let wantz = jobz.eq_ignore_ascii_case(&b'V');
        // Z's columns: as many as RANGE may select (LAPACK writes Z(1, 1) for N = 1 even when
        // M = 0).
        let z_cols = match range.to_ascii_uppercase() {
            b'I' => (iu - il + 1).max(0) as usize,
            _ => len,
        };
        let z_len = if wantz && len > 0 {
            span(len, z_cols.max(1), ldz as usize)
        } else {
            0
        };
        let ifail_len = if wantz { len } else { 0 };
        let missing = [
            (!query && a_len > 0 && a.is_null(), -5),
            (!query && m.is_null(), -12),
            (!query && len > 0 && w.is_null(), -13),
            (!query && z_len > 0 && z.is_null(), -14),
            (work.is_some_and(|(p, _, _)| p.is_null()), -16),
            (!query && ifail_len > 0 && ifail.is_null(), -19),
        ];
        if let Some(&(_, i)) = missing.iter().find(|(m, _)| *m) {
            info = i;
        } else {
            if let Some((work, _, _)) = work {
                *work = T::from_usize(drivers::syevx_lwork(len).1);
            }
            if query {
                return 0;
            }
            let a = output(a, a_len).unwrap_or_default();
            let w = output(w, len).unwrap_or_default();
            let started = Instant::now();
            let (path, why_not_gpu) = choose_path(len);
            let z = output(z, z_len).unwrap_or_default();
            let ifail = output(ifail, ifail_len).unwrap_or_default();
            let mut report = if wantz {
                drivers::syevx_vectors(
                    range,
                    uplo,
                    len,
                    a,
                    lda as usize,
                    vl,
                    vu,
                    il,
                    iu,
                    abstol,
                    w,
                    z,
                    ldz as usize,
                    ifail,
                    path,
                )
            } else {
                drivers::syevx(
                    range,
                    uplo,
                    len,
                    a,
                    lda as usize,
                    vl,
                    vu,
                    il,
                    iu,
                    abstol,
                    w,
                    path,
                )
            };
            if let (Some((work, lwork, iwork)), true) = (work, report.lapack_without_workspace) {
                // As in `syev_run`: the system xSYEVX on the caller's WORK and IWORK.
                if let Some(iwork) = output(iwork, 5 * len) {
                    let work = output(work, lwork.max(1) as usize).unwrap_or_default();
                    let (lda, ldz) = (lda as usize, ldz as usize);
                    (report.m, report.info) = if wantz {
                        T::syevx_vectors_in(
                            range, uplo, len, a, lda, vl, vu, il, iu, abstol, w, z, ldz, work,
                            iwork, ifail,
                        )
                    } else {
                        T::syevx_values_in(
                            range, uplo, len, a, lda, vl, vu, il, iu, abstol, w, work, iwork,
                        )
                    };
                }
            }
            *m = report.m;
            if let Some(stebz_info) = report.stebz_illegal {
                report_illegal_argument(
                    &format!("{}STEBZ", T::PREFIX.to_ascii_uppercase()),
                    stebz_info,
                );
            }
            log_call(routine, len, &report, why_not_gpu, started);
            return report.info;
        }
    }
    report_illegal_argument(routine, info);
    info
}

/// xSYEV in the Fortran convention (every argument by reference), for both precisions.
#[allow(clippy::too_many_arguments)]
unsafe fn syev_fortran<T: SbrReal>(
    routine: &str,
    jobz: *const c_char,
    uplo: *const c_char,
    n: *const c_int,
    a: *mut T,
    lda: *const c_int,
    w: *mut T,
    work: *mut T,
    lwork: *const c_int,
    info: *mut c_int,
) {
    let result = ffi_boundary!(routine, HYLAPACK_INFO_INTERNAL_ERROR, {
        syev_run(
            routine,
            fortran_char(jobz),
            fortran_char(uplo),
            scalar(n).unwrap_or(-1),
            a,
            scalar(lda).unwrap_or(0),
            w,
            Some((work, scalar(lwork).unwrap_or(-2))),
        )
    });
    if !info.is_null() {
        *info = result;
    }
}

/// xSYEVX in the Fortran convention (every argument by reference), for both precisions.
#[allow(clippy::too_many_arguments, clippy::type_complexity)]
unsafe fn syevx_fortran<T: SbrReal>(
    routine: &str,
    (jobz, range, uplo): (*const c_char, *const c_char, *const c_char),
    n: *const c_int,
    (a, lda): (*mut T, *const c_int),
    (vl, vu, il, iu, abstol): (*const T, *const T, *const c_int, *const c_int, *const T),
    (m, w): (*mut c_int, *mut T),
    (z, ldz): (*mut T, *const c_int),
    (work, lwork, iwork): (*mut T, *const c_int, *mut c_int),
    ifail: *mut c_int,
    info: *mut c_int,
) {
    let result = ffi_boundary!(routine, HYLAPACK_INFO_INTERNAL_ERROR, {
        let (jobz, range, uplo) = (fortran_char(jobz), fortran_char(range), fortran_char(uplo));
        let n = scalar(n).unwrap_or(-1);
        let lda = scalar(lda).unwrap_or(0);
        let (il, iu) = (scalar(il).unwrap_or(0), scalar(iu).unwrap_or(-1));
        let (ldz, lwork) = (scalar(ldz).unwrap_or(0), scalar(lwork).unwrap_or(-2));
        let (vl_value, vu_value) = (scalar(vl), scalar(vu));
        // A null VL/VU/ABSTOL that LAPACK would read is an illegal value of that argument,
        // reported if every argument before it is legal (checked with a valid VL < VU).
        let first_bad = drivers::syevx_check(
            jobz,
            range,
            uplo,
            n,
            lda,
            T::ZERO,
            T::ONE,
            il,
            iu,
            ldz,
            lwork,
        );
        let legal_before = |arg: c_int| first_bad == 0 || first_bad < -arg;
        let by_value = range.eq_ignore_ascii_case(&b'V');
        let null_info = match () {
            _ if by_value && vl_value.is_none() && legal_before(7) => -7,
            _ if by_value && vu_value.is_none() && legal_before(8) => -8,
            _ if abstol.is_null() && legal_before(11) => -11,
            _ => 0,
        };
        if null_info != 0 {
            report_illegal_argument(routine, null_info);
            return null_info;
        }
        syevx_run(
            routine,
            jobz,
            range,
            uplo,
            n,
            a,
            lda,
            vl_value.unwrap_or(T::ZERO),
            vu_value.unwrap_or(T::ZERO),
            il,
            iu,
            scalar(abstol).unwrap_or(T::ZERO),
            m,
            w,
            z,
            ldz,
            Some((work, lwork, iwork)),
            ifail,
        )
    });
    if !info.is_null() {
        *info = result;
    }
}

/// All eigenvalues of the real symmetric `n` x `n` matrix `a` (its `uplo` triangle, 'U' or
/// 'L'), ascending in `w` (`n` entries), and with `jobz` = 'V' the eigenvectors, in double
/// precision (C convention, LAPACKE shape).
///
/// LAPACK DSYEV's contract: JOBZ = 'N', the `uplo` triangle of `a` is destroyed; JOBZ = 'V',
/// `a` is overwritten by the orthonormal eigenvectors (column j for W(j)); INFO > 0: the
/// QL/QR iteration failed to converge on INFO off-diagonal elements.
///
/// JOBZ = 'V': dense → band as below keeping its reflectors (a matrix larger than the GPU
/// budget streams straight to the final band), band → tridiagonal by bulge chasing keeping its
/// reflectors (on the GPU where the budget holds them, else on the host's threads), the
/// tridiagonal's eigenvectors (from N = 1024 by bisection and inverse iteration on the GPU,
/// which checks its answer; else, or where it refuses it, the system LAPACK's DSTEDC, DSTEQR
/// if that fails, whose INFO is DSYEV's), then both back-transformations on the GPU (the
/// eigenvectors by block columns where the budget is short; the host if the GPU fails). A
/// matrix whose workspace (about 1.5 n² entries besides A) cannot be allocated runs the
/// system LAPACK's DSYEV on the untouched A. Eigenvectors are determined up to sign, as in
/// LAPACK.
///
/// JOBZ = 'N': the path: dense → band on the GPU (as `dsyrdb_ooc`; a matrix larger than the GPU
/// budget streams to a wide band, up to 2048 off-diagonals, which is then narrowed on the GPU),
/// band → tridiagonal by bulge chasing on the GPU (on the host's threads if the GPU fails), all
/// eigenvalues by bisection on the GPU (DSTERF if bisection fails or the matrix was scaled into
/// range); below the size threshold or without a GPU, the system LAPACK's DSYEV. Eigenvalues
/// agree with DSYEV's to a small multiple of n ε ‖A‖. A matrix with NaN or ±Inf in its `uplo`
/// triangle runs the system LAPACK's DSYEV, so that INFO (which LAPACK returns as 0 or > 0
/// depending on where the NaN spreads) and W are LAPACK's.
///
/// Returns INFO: 0 on success; −i if the i-th argument (LAPACK numbering) had an illegal value
/// or was NULL; > 0 as above; −1000 for an internal error (printed on stderr).
///
/// # Safety
/// Each array pointer is NULL (reported as an illegal argument where the routine would read
/// it) or valid for the entries LAPACK's routine of the same contract reads or writes through
/// it, for the sizes and leading dimensions given; scalars passed by reference are readable.
#[no_mangle]
pub unsafe extern "C" fn dsyev_ooc(
    jobz: c_char,
    uplo: c_char,
    n: c_int,
    a: *mut f64,
    lda: c_int,
    w: *mut f64,
) -> c_int {
    ffi_boundary!("DSYEV_OOC", HYLAPACK_INFO_INTERNAL_ERROR, {
        syev_run("DSYEV_OOC", jobz as u8, uplo as u8, n, a, lda, w, None)
    })
}

/// `dsyev_ooc` in the Fortran convention: LAPACK DSYEV's argument list, all by reference, with
/// the hidden CHARACTER lengths of JOBZ and UPLO last. LWORK >= max(1, 3N−1); LWORK = −1 is a
/// query (WORK(1) returns DSYEV's optimal size). WORK is not used beyond WORK(1), except when
/// host memory runs out before A is touched: the system DSYEV then runs in WORK (where the C
/// name returns −1000).
///
/// # Safety
/// Each array pointer is NULL (reported as an illegal argument where the routine would read
/// it) or valid for the entries LAPACK's routine of the same contract reads or writes through
/// it, for the sizes and leading dimensions given; scalars passed by reference are readable.
#[no_mangle]
pub unsafe extern "C" fn dsyev_ooc_(
    jobz: *const c_char,
    uplo: *const c_char,
    n: *const c_int,
    a: *mut f64,
    lda: *const c_int,
    w: *mut f64,
    work: *mut f64,
    lwork: *const c_int,
    info: *mut c_int,
    jobz_len: usize,
    uplo_len: usize,
) {
    let _ = (jobz_len, uplo_len); // never read: C callers may omit them
    syev_fortran("DSYEV_OOC", jobz, uplo, n, a, lda, w, work, lwork, info);
}

/// Selected eigenvalues of the real symmetric `n` x `n` matrix `a` (its `uplo` triangle), in
/// double precision (C convention, LAPACKE shape): `range` 'A' (all), 'V' (those in
/// (`vl`, `vu`]) or 'I' (the `il`-th through `iu`-th); `abstol` as in DSTEBZ (<= 0: LAPACK's
/// default). On return `*m` eigenvalues are in `w[0..*m]`, ascending.
///
/// LAPACK DSYEVX's contract. JOBZ = 'N' (`z` and `ifail` are not referenced and may be
/// NULL; `ldz` >= 1): the `uplo` triangle of `a` is destroyed; INFO = i when bisection
/// (DSTEBZ) returned INFO = i, as LAPACK passes it through (−i reported through `xerbla_`
/// as DSTEBZ's, e.g. −5 when the scaling makes VL = VU). The path: dense → band and band →
/// tridiagonal as for `dsyev_ooc`, then all eigenvalues as there (RANGE = 'A' or all of 'I',
/// `abstol` <= 0) or bisection (`dstebz_gpu`'s code); small problems or no GPU: the system
/// LAPACK's DSYEVX.
///
/// JOBZ = 'V' (`ldz` >= max(1, N); `z` holds N columns for RANGE 'A' / 'V', IU − IL + 1 for
/// 'I'; `ifail` N entries): the orthonormal eigenvectors in `z`'s first `*m` columns, column j
/// for W(j); INFO = i > 0: i eigenvectors failed to converge, their indices in `ifail` (M
/// entries set, zeros otherwise). The path: dense → band and band → tridiagonal keeping both
/// orthogonal factors as `dsyev_ooc` with JOBZ = 'V'; all eigenvectors with `abstol` <= 0 as
/// `dsyev_ooc` finds them (bisection and inverse iteration if that fails), else bisection
/// (ORDER = 'B') and this library's inverse iteration (DSTEIN's contract); both
/// back-transformations as for `dsyev_ooc`; the pairs sorted ascending. N <= 1, NaN or ±Inf,
/// or workspace that cannot be allocated: the system LAPACK's DSYEVX on the untouched A; as
/// for JOBZ = 'N', small problems or no GPU run the system LAPACK's DSYEVX too.
///
/// A matrix with NaN or ±Inf, or RANGE = 'V' with a NaN bound, runs the system LAPACK's
/// DSYEVX, so that M, W and INFO are LAPACK's.
///
/// Returns INFO: 0 on success; −i if the i-th argument (LAPACK numbering) had an illegal value
/// or was NULL; > 0 as above; −1000 for an internal error (printed on stderr).
///
/// # Safety
/// Each array pointer is NULL (reported as an illegal argument where the routine would read
/// it) or valid for the entries LAPACK's routine of the same contract reads or writes through
/// it, for the sizes and leading dimensions given; scalars passed by reference are readable.
#[no_mangle]
pub unsafe extern "C" fn dsyevx_ooc(
    jobz: c_char,
    range: c_char,
    uplo: c_char,
    n: c_int,
    a: *mut f64,
    lda: c_int,
    vl: f64,
    vu: f64,
    il: c_int,
    iu: c_int,
    abstol: f64,
    m: *mut c_int,
    w: *mut f64,
    z: *mut f64,
    ldz: c_int,
    ifail: *mut c_int,
) -> c_int {
    ffi_boundary!("DSYEVX_OOC", HYLAPACK_INFO_INTERNAL_ERROR, {
        syevx_run(
            "DSYEVX_OOC",
            jobz as u8,
            range as u8,
            uplo as u8,
            n,
            a,
            lda,
            vl,
            vu,
            il,
            iu,
            abstol,
            m,
            w,
            z,
            ldz,
            None,
            ifail,
        )
    })
}

/// `dsyevx_ooc` in the Fortran convention: LAPACK DSYEVX's argument list, all by reference,
/// with the hidden CHARACTER lengths of JOBZ, RANGE and UPLO last. LWORK >= 8N (1 if N <= 1);
/// LWORK = −1 is a query (WORK(1) returns DSYEVX's optimal size); the same rules for JOBZ =
/// 'V'. WORK and IWORK are not used beyond WORK(1), except when host memory runs out before A
/// is touched: the system DSYEVX then runs in WORK and IWORK (where the C name returns −1000);
/// Z and IFAIL only for JOBZ = 'V'.
///
/// # Safety
/// Each array pointer is NULL (reported as an illegal argument where the routine would read
/// it) or valid for the entries LAPACK's routine of the same contract reads or writes through
/// it, for the sizes and leading dimensions given; scalars passed by reference are readable.
#[no_mangle]
pub unsafe extern "C" fn dsyevx_ooc_(
    jobz: *const c_char,
    range: *const c_char,
    uplo: *const c_char,
    n: *const c_int,
    a: *mut f64,
    lda: *const c_int,
    vl: *const f64,
    vu: *const f64,
    il: *const c_int,
    iu: *const c_int,
    abstol: *const f64,
    m: *mut c_int,
    w: *mut f64,
    z: *mut f64,
    ldz: *const c_int,
    work: *mut f64,
    lwork: *const c_int,
    iwork: *mut c_int,
    ifail: *mut c_int,
    info: *mut c_int,
    jobz_len: usize,
    range_len: usize,
    uplo_len: usize,
) {
    let _ = (jobz_len, range_len, uplo_len);
    syevx_fortran(
        "DSYEVX_OOC",
        (jobz, range, uplo),
        n,
        (a, lda),
        (vl, vu, il, iu, abstol),
        (m, w),
        (z, ldz),
        (work, lwork, iwork),
        ifail,
        info,
    );
}

/// `dsyev_ooc` in single precision: LAPACK SSYEV's contract, the same path in `float`.
///
/// # Safety
/// As for `dsyev_ooc`.
#[no_mangle]
pub unsafe extern "C" fn ssyev_ooc(
    jobz: c_char,
    uplo: c_char,
    n: c_int,
    a: *mut f32,
    lda: c_int,
    w: *mut f32,
) -> c_int {
    ffi_boundary!("SSYEV_OOC", HYLAPACK_INFO_INTERNAL_ERROR, {
        syev_run("SSYEV_OOC", jobz as u8, uplo as u8, n, a, lda, w, None)
    })
}

/// `ssyev_ooc` in the Fortran convention, as `dsyev_ooc_` (LAPACK SSYEV's argument list).
///
/// # Safety
/// As for `dsyev_ooc_`.
#[no_mangle]
pub unsafe extern "C" fn ssyev_ooc_(
    jobz: *const c_char,
    uplo: *const c_char,
    n: *const c_int,
    a: *mut f32,
    lda: *const c_int,
    w: *mut f32,
    work: *mut f32,
    lwork: *const c_int,
    info: *mut c_int,
    jobz_len: usize,
    uplo_len: usize,
) {
    let _ = (jobz_len, uplo_len); // never read: C callers may omit them
    syev_fortran("SSYEV_OOC", jobz, uplo, n, a, lda, w, work, lwork, info);
}

/// `dsyevx_ooc` in single precision: LAPACK SSYEVX's contract, the same path in `float`.
///
/// # Safety
/// As for `dsyevx_ooc`.
#[no_mangle]
pub unsafe extern "C" fn ssyevx_ooc(
    jobz: c_char,
    range: c_char,
    uplo: c_char,
    n: c_int,
    a: *mut f32,
    lda: c_int,
    vl: f32,
    vu: f32,
    il: c_int,
    iu: c_int,
    abstol: f32,
    m: *mut c_int,
    w: *mut f32,
    z: *mut f32,
    ldz: c_int,
    ifail: *mut c_int,
) -> c_int {
    ffi_boundary!("SSYEVX_OOC", HYLAPACK_INFO_INTERNAL_ERROR, {
        syevx_run(
            "SSYEVX_OOC",
            jobz as u8,
            range as u8,
            uplo as u8,
            n,
            a,
            lda,
            vl,
            vu,
            il,
            iu,
            abstol,
            m,
            w,
            z,
            ldz,
            None,
            ifail,
        )
    })
}

/// `ssyevx_ooc` in the Fortran convention, as `dsyevx_ooc_` (LAPACK SSYEVX's argument list).
///
/// # Safety
/// As for `dsyevx_ooc_`.
#[no_mangle]
pub unsafe extern "C" fn ssyevx_ooc_(
    jobz: *const c_char,
    range: *const c_char,
    uplo: *const c_char,
    n: *const c_int,
    a: *mut f32,
    lda: *const c_int,
    vl: *const f32,
    vu: *const f32,
    il: *const c_int,
    iu: *const c_int,
    abstol: *const f32,
    m: *mut c_int,
    w: *mut f32,
    z: *mut f32,
    ldz: *const c_int,
    work: *mut f32,
    lwork: *const c_int,
    iwork: *mut c_int,
    ifail: *mut c_int,
    info: *mut c_int,
    jobz_len: usize,
    range_len: usize,
    uplo_len: usize,
) {
    let _ = (jobz_len, range_len, uplo_len);
    syevx_fortran(
        "SSYEVX_OOC",
        (jobz, range, uplo),
        n,
        (a, lda),
        (vl, vu, il, iu, abstol),
        (m, w),
        (z, ldz),
        (work, lwork, iwork),
        ifail,
        info,
    );
}
