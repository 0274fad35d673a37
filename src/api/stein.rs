//! `sstein_gpu` / `dstein_gpu`: eigenvectors of a symmetric tridiagonal matrix by inverse
//! iteration, with LAPACK xSTEIN's contract: the GPU path (`crate::stein::gpu`) from
//! `dispatch::STEIN_MIN_N` rows and `dispatch::STEIN_MIN_ENTRIES` entries of Z up
//! (`dispatch::decide_stein`), hylapack's inverse iteration on the host's threads below (and
//! where the GPU path fails).

use super::{ffi_boundary, input, output, report_illegal_argument, HYLAPACK_INFO_INTERNAL_ERROR};
use crate::dispatch;
use crate::host::NoMemory;
use crate::lapack::LapackStein;
use crate::log;
use crate::stein::{self, SteinReal};
use std::ffi::c_int;
use std::time::Instant;

/// Checks pointers and arguments in LAPACK's order (NULL arrays as illegal values of their
/// LAPACK argument numbers), then runs the routine and logs the call. `Err(info)` for an
/// illegal argument, not yet reported; `Ok(Err(_))` when the host memory of the call could
/// not be had (Z untouched, IFAIL zeroed).
#[allow(clippy::too_many_arguments)]
unsafe fn checked_run<T: SteinReal>(
    routine: &str,
    n: c_int,
    d: *const T,
    e: *const T,
    m: c_int,
    w: *const T,
    iblock: *const c_int,
    isplit: *const c_int,
    z: *mut T,
    ldz: c_int,
    ifail: *mut c_int,
) -> Result<Result<c_int, NoMemory>, c_int> {
    // N, M and LDZ first, without reading W or IBLOCK (LAPACK's first three checks).
    let early = if n < 0 {
        -1
    } else if m < 0 || m > n {
        -4
    } else {
        stein::check_args::<T>(n, 0, &[], &[], ldz)
    };
    if early != 0 {
        return Err(early);
    }
    let (len, count) = (n as usize, m as usize);
    let (w, iblock) = (input(w, count), input(iblock, count));
    let (Some(w), Some(iblock)) = (w, iblock) else {
        return Err(if w.is_none() { -5 } else { -6 });
    };
    let info = stein::check_args(n, m, w, iblock, ldz);
    if info != 0 {
        return Err(info);
    }
    let ifail = output(ifail, count).ok_or(-12)?;
    ifail.fill(0);
    if len == 0 || count == 0 {
        return Ok(Ok(0));
    }
    let d = input(d, len).ok_or(-2)?;
    let e = input(e, len - 1).ok_or(-3)?;
    let isplit = input(isplit, len).ok_or(-7)?;
    let z = output(z, crate::lapack::span(len, count, ldz as usize)).ok_or(-8)?;
    let started = Instant::now();
    let decision = dispatch::decide_stein(len, count);
    let run = match stein::stein_with(decision.backend, d, e, w, iblock, isplit, z, ldz as usize) {
        Ok(run) => run,
        Err(no_memory) => return Ok(Err(no_memory)),
    };
    ifail.copy_from_slice(&run.report.ifail);
    let note = run.note.or(decision.why_not_gpu);
    dispatch::finish_call(
        routine,
        len,
        run.backend,
        started.elapsed(),
        note.as_deref(),
    );
    Ok(Ok(run.report.info))
}

/// [`checked_run`] with illegal arguments reported through `xerbla_`. `scratch` is the
/// Fortran names' WORK (5N) and IWORK (N): where the host memory of the call cannot be had,
/// the system LAPACK's xSTEIN runs in them instead of INFO = −1000.
#[allow(clippy::too_many_arguments)]
unsafe fn run<T: SteinReal + LapackStein>(
    routine: &str,
    n: c_int,
    d: *const T,
    e: *const T,
    m: c_int,
    w: *const T,
    iblock: *const c_int,
    isplit: *const c_int,
    z: *mut T,
    ldz: c_int,
    ifail: *mut c_int,
    scratch: Option<(*mut T, *mut c_int)>,
) -> c_int {
    match checked_run(routine, n, d, e, m, w, iblock, isplit, z, ldz, ifail) {
        Ok(Ok(info)) => info,
        Ok(Err(no_memory)) => {
            let (len, count) = (n as usize, m as usize);
            let lapack_in = scratch
                .and_then(|(work, iwork)| Some((output(work, 5 * len)?, output(iwork, len)?)));
            let Some((work, iwork)) = lapack_in else {
                log::warn(&format!("{routine}: {no_memory}; nothing computed"));
                return HYLAPACK_INFO_INTERNAL_ERROR;
            };
            log::warn(&format!(
                "{routine}: {no_memory}; the system LAPACK ran in the caller's WORK"
            ));
            // checked_run accepted every argument and pointer before it ran out of memory.
            let z = output(z, crate::lapack::span(len, count, ldz as usize)).unwrap_or_default();
            T::stein_in(
                n,
                input(d, len).unwrap_or_default(),
                input(e, len - 1).unwrap_or_default(),
                m,
                input(w, count).unwrap_or_default(),
                input(iblock, count).unwrap_or_default(),
                input(isplit, len).unwrap_or_default(),
                z,
                ldz,
                output(ifail, count).unwrap_or_default(),
                work,
                iwork,
            )
        }
        Err(info) => {
            report_illegal_argument(routine, info);
            info
        }
    }
}

/// Eigenvectors of the symmetric tridiagonal matrix with diagonal `d[0..n]` and off-diagonal
/// `e[0..n-1]` for the `m` eigenvalues `w` that DSTEBZ returned with ORDER = 'B' (`iblock`,
/// `isplit` as it returned them), in double precision (C convention, LAPACKE's shape without
/// the layout argument: column-major). Column j of `z` (`ldz` × `m`, `ldz` >= max(1, `n`))
/// receives the eigenvector of `w[j]`, zero outside its block, of unit 2-norm, its
/// largest-magnitude component positive (eigenvectors are determined up to sign; ties between
/// largest components may come out with LAPACK's opposite sign). LAPACK DSTEIN's algorithm:
/// inverse iteration from LAPACK's own starting vectors, at most 5 iterations, vectors of
/// eigenvalues closer than 1e-3 ‖T‖₁ reorthogonalized; `ifail` (`m` entries) receives the
/// indices of the vectors that did not converge, then zeros. Large calls run on the GPU
/// (LAPACK's iteration per vector, then the vectors of each cluster orthogonalized in order
/// with GEMMs: the same contract, vectors equal to LAPACK's up to rounding where eigenvalues
/// are separated, an orthonormal basis of the same subspace where they agree to working
/// precision); small ones on the host's threads (results do not depend on their number).
///
/// Returns INFO: 0 on success; −i if the i-th argument (LAPACK DSTEIN's numbering: 1 N, 4 M,
/// 9 LDZ, 5 W not ascending within a block, 6 IBLOCK decreasing; a NULL array is an illegal
/// value of its own argument: 2 D, 3 E, 5 W, 6 IBLOCK, 7 ISPLIT, 8 Z, 12 IFAIL), reported through
/// `xerbla_` as DSTEIN_GPU; k > 0 if k eigenvectors failed to converge; −1000 for an internal
/// error (printed on stderr).
///
/// # Safety
/// Each array pointer is NULL (reported as an illegal argument where the routine would read
/// it) or valid for the entries LAPACK's routine of the same contract reads or writes through
/// it, for the sizes and leading dimensions given; scalars passed by reference are readable.
#[no_mangle]
pub unsafe extern "C" fn dstein_gpu(
    n: c_int,
    d: *const f64,
    e: *const f64,
    m: c_int,
    w: *const f64,
    iblock: *const c_int,
    isplit: *const c_int,
    z: *mut f64,
    ldz: c_int,
    ifail: *mut c_int,
) -> c_int {
    ffi_boundary!("DSTEIN_GPU", HYLAPACK_INFO_INTERNAL_ERROR, {
        run(
            "DSTEIN_GPU",
            n,
            d,
            e,
            m,
            w,
            iblock,
            isplit,
            z,
            ldz,
            ifail,
            None,
        )
    })
}

/// Single-precision `dstein_gpu` (LAPACK SSTEIN's contract).
///
/// # Safety
/// Each array pointer is NULL (reported as an illegal argument where the routine would read
/// it) or valid for the entries LAPACK's routine of the same contract reads or writes through
/// it, for the sizes and leading dimensions given; scalars passed by reference are readable.
#[no_mangle]
pub unsafe extern "C" fn sstein_gpu(
    n: c_int,
    d: *const f32,
    e: *const f32,
    m: c_int,
    w: *const f32,
    iblock: *const c_int,
    isplit: *const c_int,
    z: *mut f32,
    ldz: c_int,
    ifail: *mut c_int,
) -> c_int {
    ffi_boundary!("SSTEIN_GPU", HYLAPACK_INFO_INTERNAL_ERROR, {
        run(
            "SSTEIN_GPU",
            n,
            d,
            e,
            m,
            w,
            iblock,
            isplit,
            z,
            ldz,
            ifail,
            None,
        )
    })
}

/// The Fortran convention's body: LAPACK xSTEIN's argument list by reference. WORK (5N) and
/// IWORK (N) are used only where the host memory of the call cannot be had: the system
/// LAPACK's xSTEIN then runs in them.
#[allow(clippy::too_many_arguments)]
unsafe fn fortran<T: SteinReal + LapackStein>(
    routine: &str,
    n: *const c_int,
    d: *const T,
    e: *const T,
    m: *const c_int,
    w: *const T,
    iblock: *const c_int,
    isplit: *const c_int,
    z: *mut T,
    ldz: *const c_int,
    scratch: (*mut T, *mut c_int),
    ifail: *mut c_int,
    info: *mut c_int,
) {
    let result = match (n.as_ref(), m.as_ref(), ldz.as_ref()) {
        (None, _, _) => {
            report_illegal_argument(routine, -1);
            -1
        }
        (_, None, _) => {
            report_illegal_argument(routine, -4);
            -4
        }
        (_, _, None) => {
            report_illegal_argument(routine, -9);
            -9
        }
        (Some(&n), Some(&m), Some(&ldz)) => run(
            routine,
            n,
            d,
            e,
            m,
            w,
            iblock,
            isplit,
            z,
            ldz,
            ifail,
            Some(scratch),
        ),
    };
    if let Some(info) = info.as_mut() {
        *info = result;
    }
}

/// `dstein_gpu` in the Fortran convention: LAPACK DSTEIN's exact argument list, all by
/// reference. WORK and IWORK are used only where the host memory of the call cannot be had:
/// the system DSTEIN then runs in them (where the C name returns −1000). INFO as for
/// `dstein_gpu`.
///
/// # Safety
/// Each array pointer is NULL (reported as an illegal argument where the routine would read
/// it) or valid for the entries LAPACK's routine of the same contract reads or writes through
/// it, for the sizes and leading dimensions given; scalars passed by reference are readable.
#[no_mangle]
pub unsafe extern "C" fn dstein_gpu_(
    n: *const c_int,
    d: *const f64,
    e: *const f64,
    m: *const c_int,
    w: *const f64,
    iblock: *const c_int,
    isplit: *const c_int,
    z: *mut f64,
    ldz: *const c_int,
    work: *mut f64,
    iwork: *mut c_int,
    ifail: *mut c_int,
    info: *mut c_int,
) {
    ffi_boundary!("DSTEIN_GPU", (), {
        fortran(
            "DSTEIN_GPU",
            n,
            d,
            e,
            m,
            w,
            iblock,
            isplit,
            z,
            ldz,
            (work, iwork),
            ifail,
            info,
        )
    })
}

/// Single-precision `dstein_gpu_` (LAPACK SSTEIN's argument list).
///
/// # Safety
/// Each array pointer is NULL (reported as an illegal argument where the routine would read
/// it) or valid for the entries LAPACK's routine of the same contract reads or writes through
/// it, for the sizes and leading dimensions given; scalars passed by reference are readable.
#[no_mangle]
pub unsafe extern "C" fn sstein_gpu_(
    n: *const c_int,
    d: *const f32,
    e: *const f32,
    m: *const c_int,
    w: *const f32,
    iblock: *const c_int,
    isplit: *const c_int,
    z: *mut f32,
    ldz: *const c_int,
    work: *mut f32,
    iwork: *mut c_int,
    ifail: *mut c_int,
    info: *mut c_int,
) {
    ffi_boundary!("SSTEIN_GPU", (), {
        fortran(
            "SSTEIN_GPU",
            n,
            d,
            e,
            m,
            w,
            iblock,
            isplit,
            z,
            ldz,
            (work, iwork),
            ifail,
            info,
        )
    })
}

/// The preload library's xSTEIN: hylapack's path for a call LAPACK accepts, logged under
/// `routine` (the name the program called); `None` for an illegal argument (nothing written),
/// which the caller forwards so that LAPACK reports it, and when the host memory of
/// hylapack's path cannot be had (then LAPACK runs on the caller's WORK and IWORK).
///
/// # Safety
/// The pointers are the caller's xSTEIN arguments (each valid for LAPACK's extent or NULL).
#[allow(clippy::too_many_arguments)]
pub unsafe fn interposed<T: SteinReal>(
    routine: &str,
    n: *const c_int,
    d: *const T,
    e: *const T,
    m: *const c_int,
    w: *const T,
    iblock: *const c_int,
    isplit: *const c_int,
    z: *mut T,
    ldz: *const c_int,
    ifail: *mut c_int,
) -> Option<c_int> {
    let (n, m, ldz) = (*n.as_ref()?, *m.as_ref()?, *ldz.as_ref()?);
    ffi_boundary!(routine, None, {
        checked_run(routine, n, d, e, m, w, iblock, isplit, z, ldz, ifail)
            .ok()
            .and_then(Result::ok)
    })
}
