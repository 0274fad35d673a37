//! `sstein_gpu` / `dstein_gpu`: eigenvectors of a symmetric tridiagonal matrix by inverse
//! iteration, with LAPACK xSTEIN's contract: the GPU path (`crate::stein::gpu`) from
//! `dispatch::STEIN_MIN_N` rows and `dispatch::STEIN_MIN_ENTRIES` entries of Z up
//! (`dispatch::decide_stein`), hylapack's inverse iteration on the host's threads below (and
//! where the GPU path fails). Beyond LAPACK: the same for data already in GPU memory
//! (`xstein_gpu_device`, `crate::stein::device`).

use super::{
    ffi_boundary, input, output, report_illegal_argument, HYLAPACK_INFO_INTERNAL_ERROR,
    HYLAPACK_INFO_NO_GPU,
};
use crate::device;
use crate::dispatch::{self, Backend};
use crate::host::NoMemory;
use crate::lapack::LapackStein;
use crate::log;
use crate::stein::device::{host_copies, stein_device, DeviceArrays, DeviceFailure};
use crate::stein::{self, SteinReal};
use std::ffi::{c_int, c_void};
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

/// What a device-pointer call that ran out of GPU or host memory returns, logged.
fn device_failure(routine: &str, n: usize, started: Instant, failure: DeviceFailure) -> c_int {
    match failure {
        DeviceFailure::Gpu(e) => {
            let note = format!("no usable GPU or GPU failure: {e}; INFO = {HYLAPACK_INFO_NO_GPU}");
            dispatch::finish_call(routine, n, Backend::Cpu, started.elapsed(), Some(&note));
            HYLAPACK_INFO_NO_GPU
        }
        DeviceFailure::HostMemory(no_memory) => {
            log::warn(&format!("{routine}: {no_memory}; nothing computed"));
            HYLAPACK_INFO_INTERNAL_ERROR
        }
    }
}

/// Checks a device-pointer call (see `dstein_gpu_device`) and runs it; `Err(info)` for an
/// illegal argument, not yet reported.
#[allow(clippy::too_many_arguments)]
unsafe fn device_checked<T: SteinReal>(
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
    stream: *mut c_void,
) -> Result<c_int, c_int> {
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
    if count == 0 {
        return Ok(0);
    }
    // In dstein_gpu's order. A misaligned or host address faults inside a kernel and poisons
    // the context for every later call of the process: refuse it before the GPU is touched.
    let (real, int) = (
        std::mem::align_of::<T>() as u64,
        std::mem::align_of::<c_int>() as u64,
    );
    let on_device = [
        (w as u64, real, -5),
        (iblock as u64, int, -6),
        (d as u64, real, -2),
        (e as u64, real, if len > 1 { -3 } else { 0 }),
        (isplit as u64, int, -7),
        (z as u64, real, -8),
    ];
    let used = |&&(_, _, arg): &&(u64, u64, c_int)| arg != 0;
    let misplaced = |p: u64, align: u64| p == 0 || !p.is_multiple_of(align);
    let (first_two, rest) = on_device.split_at(2);
    if let Some(&(_, _, arg)) = first_two.iter().find(|&&(p, a, _)| misplaced(p, a)) {
        return Err(arg);
    }
    if misplaced(ifail as u64, int) {
        return Err(-12);
    }
    if let Some(&(_, _, arg)) = rest.iter().filter(used).find(|&&(p, a, _)| misplaced(p, a)) {
        return Err(arg);
    }
    let started = Instant::now();
    let gpu = match device::gpu() {
        Ok(g) => g,
        Err(e) => return Ok(device_failure(routine, len, started, e.into())),
    };
    let unknown = |&&(p, _, _): &&(u64, u64, c_int)| !device::is_device_accessible(gpu, p);
    if let Some(&(_, _, arg)) = on_device.iter().filter(used).find(unknown) {
        return Err(arg);
    }
    let arrays = DeviceArrays {
        d: d as u64,
        e: e as u64,
        w: w as u64,
        iblock: iblock as u64,
        isplit: isplit as u64,
        z: z as u64,
        ldz: ldz as usize,
    };
    // NULL is CUDA's legacy default stream, which the caller's uploads and kernels may still
    // be running on: our streams do not order after it by themselves.
    let after = Some(stream as cudarc::driver::sys::CUstream);
    let copies = match host_copies::<T>(len, count, &arrays, after) {
        Ok(c) => c,
        Err(f) => return Ok(device_failure(routine, len, started, f)),
    };
    let info = stein::check_args(n, m, &copies.w, &copies.iblock, ldz);
    if info != 0 {
        return Err(info);
    }
    match stein_device(&copies, &arrays) {
        Ok(run) => {
            // Checked above: not NULL, aligned; the caller's M integers.
            output(ifail, count)
                .unwrap_or_default()
                .copy_from_slice(&run.report.ifail);
            let note = run.note.as_deref();
            dispatch::finish_call(routine, len, run.backend, started.elapsed(), note);
            Ok(run.report.info)
        }
        Err(f) => Ok(device_failure(routine, len, started, f)),
    }
}

/// [`device_checked`] with illegal arguments reported through `xerbla_`.
#[allow(clippy::too_many_arguments)]
unsafe fn run_device<T: SteinReal>(
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
    stream: *mut c_void,
) -> c_int {
    let checked = device_checked(
        routine, n, d, e, m, w, iblock, isplit, z, ldz, ifail, stream,
    );
    checked.unwrap_or_else(|info| {
        report_illegal_argument(routine, info);
        info
    })
}

/// Eigenvectors of a symmetric tridiagonal matrix by inverse iteration, as `dstein_gpu`, for
/// data **already in GPU memory**, in double precision (C convention): Z is computed where it
/// is, on the GPU, which must be present.
///
/// - `d` (n), `e` (n − 1), `w` (m), `iblock` (m), `isplit` (n): device pointers (e.g. from
///   `cudaMalloc`, in the primary context of device 0, which the CUDA runtime uses), with W,
///   IBLOCK and ISPLIT as DSTEBZ returns them with ORDER = 'B'. **Not modified.**
/// - `z` (ldz × m, column-major): device pointer; on exit, with INFO ≥ 0, what `dstein_gpu`
///   leaves in its Z: column j holds the eigenvector of `w[j]`, zero outside its block, of
///   unit 2-norm, its largest-magnitude component positive. Rows n.. are not touched.
/// - `ldz` ≥ max(1, n).
/// - `ifail` (m): a **host** pointer; on exit, with INFO ≥ 0, the indices of the vectors that
///   failed to converge, then zeros.
/// - `stream`: a `CUstream` / `cudaStream_t` of the caller's, or NULL for CUDA's legacy default
///   stream (a program built with per-thread default streams passes `cudaStreamPerThread`).
///   Work queued on it before the call is waited for. The call is synchronous: it returns when
///   `z` holds the answer.
///
/// D, E, W, IBLOCK and ISPLIT are copied to the host (O(n) entries: LAPACK's checks read W and
/// IBLOCK, and the clusters are planned there); D, E and Z are not copied, and Z needs no GPU
/// memory beyond its own. If the GPU path fails after it has started writing Z (a cluster whose
/// vectors it cannot certify, a failed launch), hylapack's host path runs on the host copies,
/// its Z (n × m in host memory) is uploaded, and the `HYLAPACK_LOG` line says so.
///
/// Returns INFO: 0 on success; −i if the i-th argument had an illegal value, reported through
/// `xerbla_` as DSTEIN_GPU_DEVICE, in LAPACK DSTEIN's numbering as for `dstein_gpu`: 1 N, 4 M,
/// 9 LDZ; then 5 W, 6 IBLOCK, 12 IFAIL, 2 D, 3 E, 7 ISPLIT, 8 Z when NULL but referenced or not
/// aligned to their element size (8 bytes; 4 for IBLOCK, ISPLIT and IFAIL, and for the arrays
/// of `sstein_gpu_device`), checked before the GPU is touched; then W … Z when not memory the
/// GPU can address; then 6 IBLOCK decreasing, 5 W not ascending within a block (checked on
/// the host copies). k > 0 if k eigenvectors failed to converge. `HYLAPACK_INFO_NO_GPU`
/// (−1001) when no usable GPU is present or the GPU path cannot have its work memory (about
/// (5 words + 1 byte) per row of a block for each vector of a batch of up to 16384, the batch
/// shrinking to 256 vectors to fit `HYLAPACK_GPU_MEMORY_LIMIT` and the free memory) or its
/// kernels — Z and IFAIL are then untouched — or when the GPU failed and so did the upload of
/// the host path's answer (Z is then unspecified). −1000 for an internal error (host memory
/// for the copies or for the host path). M = 0 returns 0 without touching the GPU.
///
/// # Safety
/// D, E, W, IBLOCK, ISPLIT and Z are NULL or device memory of the process's primary context
/// valid for N, N − 1, M, M, N and LDZ × M elements; IFAIL is NULL or host memory for M
/// integers; `stream` is NULL or a live stream of that context, and the caller does not touch
/// Z until that stream has passed this call's work.
#[no_mangle]
pub unsafe extern "C" fn dstein_gpu_device(
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
    stream: *mut c_void,
) -> c_int {
    ffi_boundary!("DSTEIN_GPU_DEVICE", HYLAPACK_INFO_INTERNAL_ERROR, {
        run_device(
            "DSTEIN_GPU_DEVICE",
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
            stream,
        )
    })
}

/// Single-precision `dstein_gpu_device` (LAPACK SSTEIN's contract; D, E, W and Z aligned to 4
/// bytes).
///
/// # Safety
/// D, E, W, IBLOCK, ISPLIT and Z are NULL or device memory of the process's primary context
/// valid for N, N − 1, M, M, N and LDZ × M elements; IFAIL is NULL or host memory for M
/// integers; `stream` is NULL or a live stream of that context, and the caller does not touch
/// Z until that stream has passed this call's work.
#[no_mangle]
pub unsafe extern "C" fn sstein_gpu_device(
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
    stream: *mut c_void,
) -> c_int {
    ffi_boundary!("SSTEIN_GPU_DEVICE", HYLAPACK_INFO_INTERNAL_ERROR, {
        run_device(
            "SSTEIN_GPU_DEVICE",
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
            stream,
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
