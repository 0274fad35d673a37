//! `sgtsv_spike` / `dgtsv_spike`: the general tridiagonal solve with LAPACK xGTSV's contract,
//! by SPIKE with diagonal pivoting (GPU or CPU threads), falling back to the system LAPACK's
//! xGTSV whenever the SPIKE answer is not certified by its residual check. Beyond LAPACK: the
//! same solve for data already in GPU memory (`xgtsv_spike_device`) and for many systems of one
//! size at once (`xgtsv_spike_strided_batch`).

use super::{
    ffi_boundary, output, report_illegal_argument, scalar, HYLAPACK_INFO_INTERNAL_ERROR,
    HYLAPACK_INFO_NO_GPU,
};
use crate::device;
use crate::dispatch::{self, Backend, Family};
use crate::gtsv::{self, gpu::DevCols, gpu::DevMatrix, Options, Solver};
use crate::lapack::Lapack;
use std::ffi::{c_int, c_void};
use std::time::Instant;

// The family's INFO for host memory that cannot be allocated is the library's internal error.
const _: () = assert!(gtsv::INFO_NO_HOST_MEMORY == HYLAPACK_INFO_INTERNAL_ERROR);

/// Reports an internal error that is not a panic (e.g. host memory that cannot be allocated)
/// on stderr, as `report_panic` does for a panic.
fn internal_error(routine: &str, why: &str) {
    eprintln!(
        "hylapack: internal error in {routine}: {why}; returning INFO = {HYLAPACK_INFO_INTERNAL_ERROR}"
    );
}

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
///
/// # Safety
/// Each array pointer is NULL (reported as an illegal argument where the routine would read
/// it) or valid for the entries LAPACK's routine of the same contract reads or writes through
/// it, for the sizes and leading dimensions given; scalars passed by reference are readable.
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
///
/// # Safety
/// Each array pointer is NULL (reported as an illegal argument where the routine would read
/// it) or valid for the entries LAPACK's routine of the same contract reads or writes through
/// it, for the sizes and leading dimensions given; scalars passed by reference are readable.
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
///
/// # Safety
/// Each array pointer is NULL (reported as an illegal argument where the routine would read
/// it) or valid for the entries LAPACK's routine of the same contract reads or writes through
/// it, for the sizes and leading dimensions given; scalars passed by reference are readable.
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
///
/// # Safety
/// Each array pointer is NULL (reported as an illegal argument where the routine would read
/// it) or valid for the entries LAPACK's routine of the same contract reads or writes through
/// it, for the sizes and leading dimensions given; scalars passed by reference are readable.
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

/// Checks and runs a device-pointer call (see `dgtsv_spike_device`).
#[allow(clippy::too_many_arguments)]
unsafe fn run_device<T: Lapack>(
    routine: &str,
    n: c_int,
    nrhs: c_int,
    dl: *const T,
    d: *const T,
    du: *const T,
    b: *mut T,
    ldb: c_int,
    stream: *mut c_void,
) -> c_int {
    let mut info = gtsv::check_args(n, nrhs, ldb);
    if info == 0 {
        let (len, k) = (n as usize, nrhs as usize);
        let ptrs = [dl as u64, d as u64, du as u64, b as u64];
        let used = [len > 1, len > 0, len > 1, len > 0 && k > 0];
        // A misaligned element address faults inside a kernel and poisons the context for
        // every later call of the process: refuse it before the GPU is touched.
        let align = std::mem::align_of::<T>() as u64;
        if let Some(i) =
            (0..4).find(|&i| used[i] && (ptrs[i] == 0 || !ptrs[i].is_multiple_of(align)))
        {
            info = -(3 + i as c_int);
        } else if len == 0 {
            return 0;
        } else {
            let started = Instant::now();
            let no_gpu = |why: String| {
                let note = format!("{why}; INFO = {HYLAPACK_INFO_NO_GPU}");
                dispatch::finish_call(routine, len, Backend::Cpu, started.elapsed(), Some(&note));
                HYLAPACK_INFO_NO_GPU
            };
            let gpu = match device::gpu() {
                Ok(g) => g,
                Err(e) => return no_gpu(format!("no GPU: {e}")),
            };
            // A host pointer here would fault inside a kernel and poison the context for the
            // whole process: refuse it as an illegal value instead.
            if let Some(i) =
                (0..4).find(|&i| used[i] && !device::is_device_accessible(gpu, ptrs[i]))
            {
                info = -(3 + i as c_int);
            } else {
                let a = DevMatrix {
                    n: len,
                    dl: ptrs[0],
                    d: ptrs[1],
                    du: ptrs[2],
                };
                let bc = DevCols {
                    ptr: ptrs[3],
                    ld: ldb as usize,
                };
                // NULL is CUDA's legacy default stream, which the caller's uploads and kernels
                // may still be running on: our streams do not order after it by themselves.
                let after = Some(stream as cudarc::driver::sys::CUstream);
                return match gtsv::gtsv_device::<T>(&Options::default(), a, bc, k, after) {
                    Ok(r) => {
                        if r.info == gtsv::INFO_NO_HOST_MEMORY {
                            let why = r.note.as_deref().unwrap_or("no host memory");
                            internal_error(routine, why);
                        }
                        let backend = match r.solver {
                            Solver::Spike | Solver::WarpPerSystem => Backend::Gpu,
                            Solver::Lapack => Backend::Cpu,
                        };
                        dispatch::finish_call(
                            routine,
                            len,
                            backend,
                            started.elapsed(),
                            r.note.as_deref(),
                        );
                        r.info
                    }
                    Err(e) => no_gpu(format!("GPU failure: {e}")),
                };
            }
        }
    }
    report_illegal_argument(routine, info);
    info
}

/// Solves `A X = B` for a general tridiagonal `A` of order `n` whose arrays are **already in
/// GPU memory**, in double precision, with DGTSV's INFO (C convention). The GPU must be
/// present: this routine has no CPU path.
///
/// - `dl` (n − 1), `d` (n), `du` (n − 1): device pointers (e.g. from `cudaMalloc`, in the
///   primary context of device 0, which the CUDA runtime uses). **Not modified.**
/// - `b` (ldb × nrhs, column-major): device pointer; on exit, with INFO = 0, the solution.
/// - `ldb` ≥ max(1, n).
/// - `stream`: a `CUstream` / `cudaStream_t` of the caller's, or NULL for CUDA's legacy default
///   stream (a program built with per-thread default streams passes `cudaStreamPerThread`).
///   Work queued on it before the call is waited for. The call is synchronous: it returns when
///   `b` holds the answer.
///
/// SPIKE with diagonal pivoting runs on the GPU; its answer is returned only if no pivot was
/// zero, it is finite and its residual passes a backward-error check of a few ulps (up to two
/// refinement steps run on the GPU first when the residual is above LAPACK's level). Otherwise
/// the matrix and B are copied to the host, the system LAPACK's DGTSV solves there, and its B
/// is copied back: singular systems end with DGTSV's INFO and B as DGTSV leaves it. From 2^16
/// rows the GPU may write its answer into B while it works (the one-pass window solve) and puts
/// B back if that answer is rejected: B holds an answer only once one is known.
///
/// Returns INFO: 0 on success; −i if the i-th argument had an illegal value (N = 1, NRHS = 2,
/// DL … B = 3 … 6 when NULL but referenced, not aligned to the element size (8 bytes; 4 for
/// `sgtsv_spike_device`; checked before the GPU is touched, so also without one) or not memory
/// the GPU can address, LDB = 7), reported through `xerbla_`; i > 0 if U(i,i) of DGTSV's factorization is exactly zero;
/// `HYLAPACK_INFO_NO_GPU` (−1001) when no usable GPU is present, the GPU failed, or the work
/// memory (about 1.25·n·nrhs + 0.5·n elements) does not fit `HYLAPACK_GPU_MEMORY_LIMIT` or the
/// free memory (B is then unchanged, unless the GPU failed while it wrote B, and could not put
/// it back); −1000 for an internal error. N = 0 returns 0 without touching the GPU.
///
/// # Safety
/// DL, D, DU and B are NULL or device memory of the process's primary context valid for N − 1,
/// N, N − 1 and LDB × NRHS elements; `stream` is NULL or a live stream of that context, and
/// the caller does not touch B until that stream has passed this call's work.
#[no_mangle]
pub unsafe extern "C" fn dgtsv_spike_device(
    n: c_int,
    nrhs: c_int,
    dl: *const f64,
    d: *const f64,
    du: *const f64,
    b: *mut f64,
    ldb: c_int,
    stream: *mut c_void,
) -> c_int {
    ffi_boundary!("DGTSV_SPIKE_DEVICE", HYLAPACK_INFO_INTERNAL_ERROR, {
        run_device("DGTSV_SPIKE_DEVICE", n, nrhs, dl, d, du, b, ldb, stream)
    })
}

/// Single-precision `dgtsv_spike_device` (SGTSV's INFO).
///
/// # Safety
/// DL, D, DU and B are NULL or device memory of the process's primary context valid for N − 1,
/// N, N − 1 and LDB × NRHS elements; `stream` is NULL or a live stream of that context, and
/// the caller does not touch B until that stream has passed this call's work.
#[no_mangle]
pub unsafe extern "C" fn sgtsv_spike_device(
    n: c_int,
    nrhs: c_int,
    dl: *const f32,
    d: *const f32,
    du: *const f32,
    b: *mut f32,
    ldb: c_int,
    stream: *mut c_void,
) -> c_int {
    ffi_boundary!("SGTSV_SPIKE_DEVICE", HYLAPACK_INFO_INTERNAL_ERROR, {
        run_device("SGTSV_SPIKE_DEVICE", n, nrhs, dl, d, du, b, ldb, stream)
    })
}

/// The batch entries' argument checks in LAPACK's order: `sizes` = N, NRHS, STRIDE_A, LDB,
/// STRIDE_B, COUNT; `bad[i]`: DL, D, DU, B is NULL (or unusable) where it would be referenced.
/// Returns 0 or −(the first illegal argument's position).
fn batch_args_info(sizes: [c_int; 6], bad: [bool; 4], info_null: bool) -> c_int {
    let [n, nrhs, stride_a, ldb, stride_b, count] = sizes;
    let checks = [
        n < 0,
        nrhs < 0,
        bad[0],
        bad[1],
        bad[2],
        stride_a < n,
        bad[3],
        ldb < n.max(1),
        (stride_b as i64) < ldb as i64 * nrhs as i64,
        count < 0,
        count > 0 && info_null,
    ];
    checks
        .iter()
        .position(|&c| c)
        .map_or(0, |i| -(i as c_int + 1))
}

/// Checks and runs a batched call (see `dgtsv_spike_strided_batch`).
#[allow(clippy::too_many_arguments)]
unsafe fn run_batch<T: Lapack>(
    routine: &str,
    n: c_int,
    nrhs: c_int,
    dl: *mut T,
    d: *mut T,
    du: *mut T,
    stride_a: c_int,
    b: *mut T,
    ldb: c_int,
    stride_b: c_int,
    count: c_int,
    info_out: *mut c_int,
) -> c_int {
    let (len, k, cnt) = (
        n.max(0) as usize,
        nrhs.max(0) as usize,
        count.max(0) as usize,
    );
    let last = |stride: c_int, span: usize| {
        if cnt == 0 || span == 0 {
            0
        } else {
            (cnt - 1) * stride.max(0) as usize + span
        }
    };
    let m1 = len.saturating_sub(1);
    let blen = if k == 0 || len == 0 {
        0
    } else {
        ldb.max(0) as usize * (k - 1) + len
    };
    let missing = [
        last(stride_a, m1) > 0 && dl.is_null(),
        last(stride_a, len) > 0 && d.is_null(),
        last(stride_a, m1) > 0 && du.is_null(),
        last(stride_b, blen) > 0 && b.is_null(),
    ];
    let sizes = [n, nrhs, stride_a, ldb, stride_b, count];
    let info = batch_args_info(sizes, missing, info_out.is_null());
    if info != 0 {
        report_illegal_argument(routine, info);
        return info;
    }
    let dl = output(dl, last(stride_a, m1)).unwrap_or_default();
    let d = output(d, last(stride_a, len)).unwrap_or_default();
    let du = output(du, last(stride_a, m1)).unwrap_or_default();
    let b = output(b, last(stride_b, blen)).unwrap_or_default();
    let infos = output(info_out, cnt).unwrap_or_default();
    let started = Instant::now();
    let decision =
        dispatch::decide_gtsv_batch(len * cnt, gtsv::batch_gpu_below_threads::<T>(len, k));
    let report = gtsv::gtsv_strided_batch(
        &Options::default(),
        len,
        k,
        dl,
        d,
        du,
        stride_a as usize,
        b,
        ldb as usize,
        stride_b as usize,
        cnt,
        infos,
        decision.backend,
    );
    let note = report.note.or(decision.why_not_gpu);
    dispatch::finish_call(
        routine,
        len * cnt,
        report.backend,
        started.elapsed(),
        note.as_deref(),
    );
    infos.iter().filter(|&&i| i > 0).count() as c_int
}

/// Solves `count` independent tridiagonal systems of order `n`, each `A_k X_k = B_k` with
/// DGTSV's contract, in double precision (host pointers; as cuSPARSE's gtsv2StridedBatch, but
/// in LAPACK's layout and with pivoting and several right-hand sides).
///
/// - System k: `dl + k·stride_a` (n − 1 entries), `d + k·stride_a` (n), `du + k·stride_a`
///   (n − 1), and `b + k·stride_b` (ldb × nrhs, column-major). `stride_a` ≥ n,
///   `stride_b` ≥ ldb·nrhs, `ldb` ≥ max(1, n).
/// - On exit `B_k` holds `X_k` when `info[k]` = 0; `info[k]` = i > 0 if U(i,i) of DGTSV's
///   factorization of system k is exactly zero (B_k then as DGTSV leaves it). DL, D, DU are
///   unspecified on exit, as for `dgtsv_spike`.
/// - `info`: `count` entries (may be NULL when count = 0).
///
/// On the GPU all systems are solved in one SPIKE call (stacked block-diagonally); if that answer
/// is not certified, each system is solved by DGTSV on the CPU from its untouched data. On the
/// CPU, DGTSV runs on each system, spread over the host's threads.
///
/// Returns 0 when every system was solved; k > 0, the number of singular systems (those with
/// info > 0); or −i if the i-th argument had an illegal value (N = 1, NRHS = 2, DL, D, DU = 3, 4,
/// 5 when NULL but referenced, STRIDE_A = 6, B = 7, LDB = 8, STRIDE_B = 9, COUNT = 10, INFO =
/// 11), reported through `xerbla_`; −1000 for an internal error.
///
/// # Safety
/// Each array pointer is NULL (reported as an illegal argument where the routine would read
/// it) or valid for the entries LAPACK's routine of the same contract reads or writes through
/// it, for the sizes and leading dimensions given; scalars passed by reference are readable.
#[no_mangle]
pub unsafe extern "C" fn dgtsv_spike_strided_batch(
    n: c_int,
    nrhs: c_int,
    dl: *mut f64,
    d: *mut f64,
    du: *mut f64,
    stride_a: c_int,
    b: *mut f64,
    ldb: c_int,
    stride_b: c_int,
    count: c_int,
    info: *mut c_int,
) -> c_int {
    ffi_boundary!("DGTSV_SPIKE_STRIDED_BATCH", HYLAPACK_INFO_INTERNAL_ERROR, {
        run_batch(
            "DGTSV_SPIKE_STRIDED_BATCH",
            n,
            nrhs,
            dl,
            d,
            du,
            stride_a,
            b,
            ldb,
            stride_b,
            count,
            info,
        )
    })
}

/// Single-precision `dgtsv_spike_strided_batch` (SGTSV's contract per system).
///
/// # Safety
/// Each array pointer is NULL (reported as an illegal argument where the routine would read
/// it) or valid for the entries LAPACK's routine of the same contract reads or writes through
/// it, for the sizes and leading dimensions given; scalars passed by reference are readable.
#[no_mangle]
pub unsafe extern "C" fn sgtsv_spike_strided_batch(
    n: c_int,
    nrhs: c_int,
    dl: *mut f32,
    d: *mut f32,
    du: *mut f32,
    stride_a: c_int,
    b: *mut f32,
    ldb: c_int,
    stride_b: c_int,
    count: c_int,
    info: *mut c_int,
) -> c_int {
    ffi_boundary!("SGTSV_SPIKE_STRIDED_BATCH", HYLAPACK_INFO_INTERNAL_ERROR, {
        run_batch(
            "SGTSV_SPIKE_STRIDED_BATCH",
            n,
            nrhs,
            dl,
            d,
            du,
            stride_a,
            b,
            ldb,
            stride_b,
            count,
            info,
        )
    })
}

/// Checks and runs a device-pointer batched call (see `dgtsv_spike_strided_batch_device`).
#[allow(clippy::too_many_arguments)]
unsafe fn run_batch_device<T: Lapack>(
    routine: &str,
    n: c_int,
    nrhs: c_int,
    dl: *const T,
    d: *const T,
    du: *const T,
    stride_a: c_int,
    b: *mut T,
    ldb: c_int,
    stride_b: c_int,
    count: c_int,
    info_out: *mut c_int,
    stream: *mut c_void,
) -> c_int {
    let (len, k, cnt) = (
        n.max(0) as usize,
        nrhs.max(0) as usize,
        count.max(0) as usize,
    );
    let ptrs = [dl as u64, d as u64, du as u64, b as u64];
    let used = [
        cnt > 0 && len > 1,
        cnt > 0 && len > 0,
        cnt > 0 && len > 1,
        cnt > 0 && len > 0 && k > 0,
    ];
    // A misaligned element address faults inside a kernel and poisons the context for every
    // later call of the process: refuse it before the GPU is touched.
    let align = std::mem::align_of::<T>() as u64;
    let bad = |i: usize| used[i] && (ptrs[i] == 0 || !ptrs[i].is_multiple_of(align));
    let sizes = [n, nrhs, stride_a, ldb, stride_b, count];
    let mut info = batch_args_info(sizes, [0, 1, 2, 3].map(bad), info_out.is_null());
    if info == 0 {
        let infos = output(info_out, cnt).unwrap_or_default();
        infos.fill(0);
        if len == 0 || cnt == 0 {
            return 0;
        }
        let started = Instant::now();
        let no_gpu = |why: String| {
            let note = format!("{why}; INFO = {HYLAPACK_INFO_NO_GPU}");
            dispatch::finish_call(
                routine,
                len * cnt,
                Backend::Cpu,
                started.elapsed(),
                Some(&note),
            );
            HYLAPACK_INFO_NO_GPU
        };
        let gpu = match device::gpu() {
            Ok(g) => g,
            Err(e) => return no_gpu(format!("no GPU: {e}")),
        };
        // A host pointer here would fault inside a kernel and poison the context for the
        // whole process: refuse it as an illegal value instead.
        let argument = [3, 4, 5, 7];
        if let Some(i) = (0..4).find(|&i| used[i] && !device::is_device_accessible(gpu, ptrs[i])) {
            info = -argument[i];
        } else {
            let a = gtsv::gpu::batch::DevBatch {
                n: len,
                nrhs: k,
                count: cnt,
                dl: ptrs[0],
                d: ptrs[1],
                du: ptrs[2],
                sa: stride_a as usize,
                b: ptrs[3],
                ldb: ldb as usize,
                sb: stride_b as usize,
            };
            // NULL is CUDA's legacy default stream, which the caller's uploads and kernels
            // may still be running on: our streams do not order after it by themselves.
            let after = Some(stream as cudarc::driver::sys::CUstream);
            return match gtsv::gtsv_strided_batch_device::<T>(&Options::default(), &a, infos, after)
            {
                Ok(r) => {
                    dispatch::finish_call(
                        routine,
                        len * cnt,
                        r.backend,
                        started.elapsed(),
                        r.note.as_deref(),
                    );
                    infos.iter().filter(|&&i| i > 0).count() as c_int
                }
                Err(device::DeviceError::HostMemory { bytes }) => {
                    internal_error(routine, &format!("no host memory ({bytes} bytes)"));
                    HYLAPACK_INFO_INTERNAL_ERROR
                }
                Err(e) => no_gpu(format!("GPU failure: {e}")),
            };
        }
    }
    report_illegal_argument(routine, info);
    info
}

/// Solves `count` independent tridiagonal systems of order `n` whose arrays are **already in
/// GPU memory**, each `A_k X_k = B_k` with DGTSV's contract, in double precision (as cuSPARSE's
/// gtsv2StridedBatch, but in LAPACK's layout, with pivoting and several right-hand sides). The
/// GPU must be present: this routine has no CPU path.
///
/// - System k: `dl + k·stride_a` (n − 1 entries), `d + k·stride_a` (n), `du + k·stride_a`
///   (n − 1), and `b + k·stride_b` (ldb × nrhs, column-major): device pointers (in the primary
///   context of device 0, which the CUDA runtime uses). DL, D, DU are **not modified**.
///   `stride_a` ≥ n, `stride_b` ≥ ldb·nrhs, `ldb` ≥ max(1, n).
/// - On exit `B_k` holds `X_k` when `info[k]` = 0; `info[k]` = i > 0 if U(i,i) of DGTSV's
///   factorization of system k is exactly zero (B_k then as DGTSV leaves it).
/// - `info`: `count` entries in **host** memory (may be NULL when count = 0).
/// - `stream`: a `CUstream` / `cudaStream_t` of the caller's, or NULL for CUDA's legacy default
///   stream. Work queued on it before the call is waited for. The call is synchronous: it
///   returns when every `B_k` holds its answer.
///
/// Systems of up to 512 rows are solved one warp each, by SPIKE with a residual check and
/// refinement (where SPIKE's answer is refused, by DGTSV's partial pivoting). Larger systems
/// are stacked on the GPU into one SPIKE solve (work memory about 4 + NRHS times the batch's
/// packed size), each system then judged by its own residual; where the stack is refused (an
/// exactly zero pivot in it, or too little GPU memory) and one system fits a CTA's shared
/// memory (one right-hand side: up to 1198 rows in double precision, 2340 in single), they go
/// one warp each to DGTSV's partial pivoting. X is written into B in place. A system with an
/// exactly zero pivot or whose answer fails its check (every system where neither the stack
/// nor the warps take the batch, or with NRHS = 0) is copied to the host and solved there by
/// the system LAPACK's DGTSV (over the host's threads), its B copied back.
///
/// Returns 0 when every system was solved; k > 0, the number of singular systems (those with
/// info > 0); −i if the i-th argument had an illegal value (N = 1, NRHS = 2, DL, D, DU = 3, 4,
/// 5 when NULL but referenced, not aligned to the element size or not memory the GPU can
/// address (checked before the GPU is touched where they can be), STRIDE_A = 6, B = 7 (as DL),
/// LDB = 8, STRIDE_B = 9, COUNT = 10, INFO = 11), reported through `xerbla_`;
/// `HYLAPACK_INFO_NO_GPU` (−1001) when no usable GPU is present or the GPU failed (the systems
/// already solved then hold X, the others B unchanged); −1000 for an internal error. N = 0 or
/// COUNT = 0 return 0 without touching the GPU.
///
/// # Safety
/// DL, D, DU and B are NULL or device memory of the process's primary context valid for the
/// entries the layout above names; `info` is NULL or valid for COUNT ints; `stream` is NULL or
/// a live stream of that context, and the caller does not touch the arrays until that stream
/// has passed this call's work.
#[no_mangle]
pub unsafe extern "C" fn dgtsv_spike_strided_batch_device(
    n: c_int,
    nrhs: c_int,
    dl: *const f64,
    d: *const f64,
    du: *const f64,
    stride_a: c_int,
    b: *mut f64,
    ldb: c_int,
    stride_b: c_int,
    count: c_int,
    info: *mut c_int,
    stream: *mut c_void,
) -> c_int {
    ffi_boundary!(
        "DGTSV_SPIKE_STRIDED_BATCH_DEVICE",
        HYLAPACK_INFO_INTERNAL_ERROR,
        {
            run_batch_device(
                "DGTSV_SPIKE_STRIDED_BATCH_DEVICE",
                n,
                nrhs,
                dl,
                d,
                du,
                stride_a,
                b,
                ldb,
                stride_b,
                count,
                info,
                stream,
            )
        }
    )
}

/// Single-precision `dgtsv_spike_strided_batch_device` (SGTSV's contract per system).
///
/// # Safety
/// DL, D, DU and B are NULL or device memory of the process's primary context valid for the
/// entries the layout of `dgtsv_spike_strided_batch_device` names; `info` is NULL or valid for
/// COUNT ints; `stream` is NULL or a live stream of that context, and the caller does not touch
/// the arrays until that stream has passed this call's work.
#[no_mangle]
pub unsafe extern "C" fn sgtsv_spike_strided_batch_device(
    n: c_int,
    nrhs: c_int,
    dl: *const f32,
    d: *const f32,
    du: *const f32,
    stride_a: c_int,
    b: *mut f32,
    ldb: c_int,
    stride_b: c_int,
    count: c_int,
    info: *mut c_int,
    stream: *mut c_void,
) -> c_int {
    ffi_boundary!(
        "SGTSV_SPIKE_STRIDED_BATCH_DEVICE",
        HYLAPACK_INFO_INTERNAL_ERROR,
        {
            run_batch_device(
                "SGTSV_SPIKE_STRIDED_BATCH_DEVICE",
                n,
                nrhs,
                dl,
                d,
                du,
                stride_a,
                b,
                ldb,
                stride_b,
                count,
                info,
                stream,
            )
        }
    )
}
