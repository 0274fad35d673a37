//! The raw cuBLAS, cuSOLVER and cuSPARSE calls: the routines of one precision ([`CublasReal`],
//! stamped for f32 and f64) and checked wrappers of the double-precision ones that the
//! interval solver and the benchmarks use.

use super::DeviceError;
use crate::real::Real;
use cudarc::cublas::sys::{
    self as cb, cublasFillMode_t, cublasHandle_t, cublasOperation_t, cublasSideMode_t,
    cublasStatus_t,
};
use cudarc::cusolver::sys as cs;
use cudarc::cusparse::sys as sp;
use cudarc::driver::CudaStream;
use std::sync::Arc;

/// cuBLAS's operation for `t`: transposed or not.
pub fn trans(t: bool) -> cublasOperation_t {
    if t {
        cublasOperation_t::CUBLAS_OP_T
    } else {
        cublasOperation_t::CUBLAS_OP_N
    }
}

/// The cuBLAS routines of one precision.
#[allow(clippy::too_many_arguments)]
pub trait CublasReal: Real {
    /// cublas<t>gemm.
    ///
    /// # Safety
    /// The pointers are device memory spanning the operands that the sizes describe.
    unsafe fn gemm(
        h: cublasHandle_t,
        ta: cublasOperation_t,
        tb: cublasOperation_t,
        m: i32,
        n: i32,
        k: i32,
        alpha: &Self,
        a: *const Self,
        lda: i32,
        b: *const Self,
        ldb: i32,
        beta: &Self,
        c: *mut Self,
        ldc: i32,
    ) -> cublasStatus_t;
    /// cublas<t>symm with SIDE = left, UPLO = lower.
    ///
    /// # Safety
    /// As for `gemm`.
    unsafe fn symm(
        h: cublasHandle_t,
        m: i32,
        n: i32,
        alpha: &Self,
        a: *const Self,
        lda: i32,
        b: *const Self,
        ldb: i32,
        beta: &Self,
        c: *mut Self,
        ldc: i32,
    ) -> cublasStatus_t;
    /// C := A through cublas<t>geam (m x n, no transposes).
    ///
    /// # Safety
    /// As for `gemm`.
    unsafe fn geam_copy(
        h: cublasHandle_t,
        ta: bool,
        m: i32,
        n: i32,
        a: *const Self,
        lda: i32,
        c: *mut Self,
        ldc: i32,
    ) -> cublasStatus_t;
    /// cusolverDn<t>geqrf_bufferSize.
    ///
    /// # Safety
    /// As for `gemm`; `lwork` is host memory.
    unsafe fn geqrf_buffer_size(
        h: cs::cusolverDnHandle_t,
        m: i32,
        n: i32,
        a: *mut Self,
        lda: i32,
        lwork: *mut i32,
    ) -> cs::cusolverStatus_t;
    /// cusolverDn<t>geqrf.
    ///
    /// # Safety
    /// As for `gemm`, with a workspace of `lwork` elements and a device `info`.
    unsafe fn geqrf(
        h: cs::cusolverDnHandle_t,
        m: i32,
        n: i32,
        a: *mut Self,
        lda: i32,
        tau: *mut Self,
        work: *mut Self,
        lwork: i32,
        info: *mut i32,
    ) -> cs::cusolverStatus_t;
    /// cusolverDn<t>potrf_bufferSize with UPLO = upper.
    ///
    /// # Safety
    /// As for `gemm`; `lwork` is host memory.
    unsafe fn potrf_buffer_size(
        h: cs::cusolverDnHandle_t,
        n: i32,
        a: *mut Self,
        lda: i32,
        lwork: *mut i32,
    ) -> cs::cusolverStatus_t;
    /// cusolverDn<t>potrf with UPLO = upper.
    ///
    /// # Safety
    /// As for `gemm`, with a workspace of `lwork` elements and a device `info`.
    unsafe fn potrf(
        h: cs::cusolverDnHandle_t,
        n: i32,
        a: *mut Self,
        lda: i32,
        work: *mut Self,
        lwork: i32,
        info: *mut i32,
    ) -> cs::cusolverStatus_t;
    /// cublas<t>trsm with SIDE = right, UPLO = upper, no transpose, non-unit: B := B R⁻¹.
    ///
    /// # Safety
    /// As for `gemm`.
    unsafe fn trsm_right_upper(
        h: cublasHandle_t,
        m: i32,
        n: i32,
        r: *const Self,
        ldr: i32,
        b: *mut Self,
        ldb: i32,
    ) -> cublasStatus_t;
    /// cublas<t>syr2k with UPLO = lower, TRANS = N.
    ///
    /// # Safety
    /// As for `gemm`.
    unsafe fn syr2k(
        h: cublasHandle_t,
        n: i32,
        k: i32,
        alpha: &Self,
        a: *const Self,
        lda: i32,
        b: *const Self,
        ldb: i32,
        beta: &Self,
        c: *mut Self,
        ldc: i32,
    ) -> cublasStatus_t;
}

macro_rules! impl_cublas {
    ($t:ty, $gemm:ident, $symm:ident, $syr2k:ident, $geam:ident, $geqrf_ws:ident, $geqrf:ident,
     $trsm:ident, $potrf_ws:ident, $potrf:ident) => {
        impl CublasReal for $t {
            unsafe fn potrf_buffer_size(
                h: cs::cusolverDnHandle_t,
                n: i32,
                a: *mut Self,
                lda: i32,
                lwork: *mut i32,
            ) -> cs::cusolverStatus_t {
                cs::$potrf_ws(
                    h,
                    cs::cublasFillMode_t::CUBLAS_FILL_MODE_UPPER,
                    n,
                    a,
                    lda,
                    lwork,
                )
            }
            unsafe fn potrf(
                h: cs::cusolverDnHandle_t,
                n: i32,
                a: *mut Self,
                lda: i32,
                work: *mut Self,
                lwork: i32,
                info: *mut i32,
            ) -> cs::cusolverStatus_t {
                let upper = cs::cublasFillMode_t::CUBLAS_FILL_MODE_UPPER;
                cs::$potrf(h, upper, n, a, lda, work, lwork, info)
            }
            unsafe fn trsm_right_upper(
                h: cublasHandle_t,
                m: i32,
                n: i32,
                r: *const Self,
                ldr: i32,
                b: *mut Self,
                ldb: i32,
            ) -> cublasStatus_t {
                let one: Self = 1.0;
                cb::$trsm(
                    h,
                    cublasSideMode_t::CUBLAS_SIDE_RIGHT,
                    cublasFillMode_t::CUBLAS_FILL_MODE_UPPER,
                    cublasOperation_t::CUBLAS_OP_N,
                    cb::cublasDiagType_t::CUBLAS_DIAG_NON_UNIT,
                    m,
                    n,
                    &one,
                    r,
                    ldr,
                    b,
                    ldb,
                )
            }
            unsafe fn geam_copy(
                h: cublasHandle_t,
                ta: bool,
                m: i32,
                n: i32,
                a: *const Self,
                lda: i32,
                c: *mut Self,
                ldc: i32,
            ) -> cublasStatus_t {
                let (one, zero): (Self, Self) = (1.0, 0.0);
                // With beta = 0, B is C itself (geam's in-place form): never read.
                cb::$geam(
                    h,
                    trans(ta),
                    cublasOperation_t::CUBLAS_OP_N,
                    m,
                    n,
                    &one,
                    a,
                    lda,
                    &zero,
                    c,
                    ldc,
                    c,
                    ldc,
                )
            }
            unsafe fn geqrf_buffer_size(
                h: cs::cusolverDnHandle_t,
                m: i32,
                n: i32,
                a: *mut Self,
                lda: i32,
                lwork: *mut i32,
            ) -> cs::cusolverStatus_t {
                cs::$geqrf_ws(h, m, n, a, lda, lwork)
            }
            unsafe fn geqrf(
                h: cs::cusolverDnHandle_t,
                m: i32,
                n: i32,
                a: *mut Self,
                lda: i32,
                tau: *mut Self,
                work: *mut Self,
                lwork: i32,
                info: *mut i32,
            ) -> cs::cusolverStatus_t {
                cs::$geqrf(h, m, n, a, lda, tau, work, lwork, info)
            }
            unsafe fn gemm(
                h: cublasHandle_t,
                ta: cublasOperation_t,
                tb: cublasOperation_t,
                m: i32,
                n: i32,
                k: i32,
                alpha: &Self,
                a: *const Self,
                lda: i32,
                b: *const Self,
                ldb: i32,
                beta: &Self,
                c: *mut Self,
                ldc: i32,
            ) -> cublasStatus_t {
                cb::$gemm(h, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
            }
            unsafe fn symm(
                h: cublasHandle_t,
                m: i32,
                n: i32,
                alpha: &Self,
                a: *const Self,
                lda: i32,
                b: *const Self,
                ldb: i32,
                beta: &Self,
                c: *mut Self,
                ldc: i32,
            ) -> cublasStatus_t {
                cb::$symm(
                    h,
                    cublasSideMode_t::CUBLAS_SIDE_LEFT,
                    cublasFillMode_t::CUBLAS_FILL_MODE_LOWER,
                    m,
                    n,
                    alpha,
                    a,
                    lda,
                    b,
                    ldb,
                    beta,
                    c,
                    ldc,
                )
            }
            unsafe fn syr2k(
                h: cublasHandle_t,
                n: i32,
                k: i32,
                alpha: &Self,
                a: *const Self,
                lda: i32,
                b: *const Self,
                ldb: i32,
                beta: &Self,
                c: *mut Self,
                ldc: i32,
            ) -> cublasStatus_t {
                cb::$syr2k(
                    h,
                    cublasFillMode_t::CUBLAS_FILL_MODE_LOWER,
                    cublasOperation_t::CUBLAS_OP_N,
                    n,
                    k,
                    alpha,
                    a,
                    lda,
                    b,
                    ldb,
                    beta,
                    c,
                    ldc,
                )
            }
        }
    };
}

impl_cublas!(
    f64,
    cublasDgemm_v2,
    cublasDsymm_v2,
    cublasDsyr2k_v2,
    cublasDgeam,
    cusolverDnDgeqrf_bufferSize,
    cusolverDnDgeqrf,
    cublasDtrsm_v2,
    cusolverDnDpotrf_bufferSize,
    cusolverDnDpotrf
);
impl_cublas!(
    f32,
    cublasSgemm_v2,
    cublasSsymm_v2,
    cublasSsyr2k_v2,
    cublasSgeam,
    cusolverDnSgeqrf_bufferSize,
    cusolverDnSgeqrf,
    cublasStrsm_v2,
    cusolverDnSpotrf_bufferSize,
    cusolverDnSpotrf
);

/// Lets `blas`'s handle run without a workspace of its own (for handles whose calls need none,
/// so that the memory budget's margin for cuBLAS's workspace covers the others).
///
/// # Safety
/// No work queued through the handle is in flight.
pub unsafe fn set_no_workspace(blas: &cudarc::cublas::CudaBlas) -> Result<(), DeviceError> {
    // SAFETY: a live handle; no workspace is a documented setting.
    unsafe { cb::cublasSetWorkspace_v2(*blas.handle(), std::ptr::null_mut(), 0) }.result()?;
    Ok(())
}

/// cusolverDnDgetrf_bufferSize: the workspace (elements) of `dgetrf` on an n x n matrix.
///
/// # Safety
/// `h` is a live handle; `a` is device memory holding n x n entries at leading dimension `lda`.
pub unsafe fn dgetrf_buffer_size(
    h: cs::cusolverDnHandle_t,
    n: i32,
    a: *mut f64,
    lda: i32,
) -> Result<i32, DeviceError> {
    let mut lwork = 0i32;
    // SAFETY: as the caller promises; lwork is host memory.
    let st = unsafe { cs::cusolverDnDgetrf_bufferSize(h, n, n, a, lda, &mut lwork) };
    DeviceError::check_cusolver("cusolverDnDgetrf_bufferSize", st)?;
    Ok(lwork)
}

/// cusolverDnDgetrf: the LU factorization with partial pivoting of an n x n matrix.
///
/// # Safety
/// As for [`dgetrf_buffer_size`], with a device workspace of the size it returned, `n` device
/// pivots and one device `info`, all on the handle's stream.
pub unsafe fn dgetrf(
    h: cs::cusolverDnHandle_t,
    n: i32,
    a: *mut f64,
    lda: i32,
    work: *mut f64,
    ipiv: *mut i32,
    info: *mut i32,
) -> Result<(), DeviceError> {
    // SAFETY: as the caller promises.
    let st = unsafe { cs::cusolverDnDgetrf(h, n, n, a, lda, work, ipiv, info) };
    DeviceError::check_cusolver("cusolverDnDgetrf", st)
}

/// cusolverDnDgetrs with TRANS = N: B (n x nrhs) := A⁻¹ B from `dgetrf`'s factors.
///
/// # Safety
/// `h` is a live handle; `a` and `ipiv` hold `dgetrf`'s output, `b` n x nrhs entries at `ldb`,
/// `info` one entry, all device memory on the handle's stream.
#[allow(clippy::too_many_arguments)]
pub unsafe fn dgetrs(
    h: cs::cusolverDnHandle_t,
    n: i32,
    nrhs: i32,
    a: *const f64,
    lda: i32,
    ipiv: *const i32,
    b: *mut f64,
    ldb: i32,
    info: *mut i32,
) -> Result<(), DeviceError> {
    let no = cs::cublasOperation_t::CUBLAS_OP_N;
    // SAFETY: as the caller promises.
    let st = unsafe { cs::cusolverDnDgetrs(h, no, n, nrhs, a, lda, ipiv, b, ldb, info) };
    DeviceError::check_cusolver("cusolverDnDgetrs", st)
}

/// cuSOLVER's eigenvector mode: JOBZ = V if `vectors`, else N.
fn eig_mode(vectors: bool) -> cs::cusolverEigMode_t {
    if vectors {
        cs::cusolverEigMode_t::CUSOLVER_EIG_MODE_VECTOR
    } else {
        cs::cusolverEigMode_t::CUSOLVER_EIG_MODE_NOVECTOR
    }
}

/// A parameter object of cuSOLVER's 64-bit API (its default algorithms), destroyed when
/// dropped.
pub struct SolverParams {
    raw: cs::cusolverDnParams_t,
}

impl SolverParams {
    /// A new parameter object.
    pub fn new() -> Result<Self, DeviceError> {
        if !super::libraries().cusolver {
            return Err(DeviceError::MissingLibrary("cuSOLVER"));
        }
        let mut raw: cs::cusolverDnParams_t = std::ptr::null_mut();
        // SAFETY: raw receives a new parameter object.
        let st = unsafe { cs::cusolverDnCreateParams(&mut raw) };
        DeviceError::check_cusolver("cusolverDnCreateParams", st)?;
        Ok(SolverParams { raw })
    }
}

impl Drop for SolverParams {
    fn drop(&mut self) {
        // SAFETY: created by cusolverDnCreateParams and destroyed once.
        unsafe { cs::cusolverDnDestroyParams(self.raw) };
    }
}

/// The workspaces of a call of cuSOLVER's 64-bit API, in bytes: (device, host).
pub type WorkspaceBytes = (usize, usize);

/// The host workspace `buf` as cuSOLVER takes it (null when empty).
fn host_buffer(buf: &mut [u8]) -> *mut std::ffi::c_void {
    if buf.is_empty() {
        std::ptr::null_mut()
    } else {
        buf.as_mut_ptr().cast()
    }
}

/// cusolverDnXsyevd_bufferSize (the 64-bit API, whose workspace sizes are 64-bit: the 32-bit
/// Dsyevd's overflow at n = 32768) in f64, with JOBZ = V if `vectors` (else N), UPLO = lower.
///
/// # Safety
/// `h` is a live handle; `a` holds n x n entries at `lda`, `w` n entries (device memory).
pub unsafe fn xsyevd_buffer_size(
    h: cs::cusolverDnHandle_t,
    params: &SolverParams,
    vectors: bool,
    n: i64,
    a: *const f64,
    lda: i64,
    w: *const f64,
) -> Result<WorkspaceBytes, DeviceError> {
    let (mut dev, mut host) = (0usize, 0usize);
    let (jobz, lower) = (
        eig_mode(vectors),
        cs::cublasFillMode_t::CUBLAS_FILL_MODE_LOWER,
    );
    let r64 = cs::cudaDataType::CUDA_R_64F;
    // SAFETY: as the caller promises; dev and host are host memory.
    let st = unsafe {
        cs::cusolverDnXsyevd_bufferSize(
            h,
            params.raw,
            jobz,
            lower,
            n,
            r64,
            a.cast(),
            lda,
            r64,
            w.cast(),
            r64,
            &mut dev,
            &mut host,
        )
    };
    DeviceError::check_cusolver("cusolverDnXsyevd_bufferSize", st)?;
    Ok((dev, host))
}

/// cusolverDnXsyevd in f64 with JOBZ = V if `vectors` (else N), UPLO = lower: the eigenvalues
/// of `a` into `w` (and its eigenvectors over `a`).
///
/// # Safety
/// As for [`xsyevd_buffer_size`] with the same `params`, with a device workspace `work` of
/// `work_bytes` and a host one `host_work` (at least what it returned) and one device `info`,
/// all on the handle's stream.
#[allow(clippy::too_many_arguments)]
pub unsafe fn xsyevd(
    h: cs::cusolverDnHandle_t,
    params: &SolverParams,
    vectors: bool,
    n: i64,
    a: *mut f64,
    lda: i64,
    w: *mut f64,
    (work, work_bytes): (*mut std::ffi::c_void, usize),
    host_work: &mut [u8],
    info: *mut i32,
) -> Result<(), DeviceError> {
    let (jobz, lower) = (
        eig_mode(vectors),
        cs::cublasFillMode_t::CUBLAS_FILL_MODE_LOWER,
    );
    let r64 = cs::cudaDataType::CUDA_R_64F;
    let host_bytes = host_work.len();
    // SAFETY: as the caller promises.
    let st = unsafe {
        cs::cusolverDnXsyevd(
            h,
            params.raw,
            jobz,
            lower,
            n,
            r64,
            a.cast(),
            lda,
            r64,
            w.cast(),
            r64,
            work,
            work_bytes,
            host_buffer(host_work),
            host_bytes,
            info,
        )
    };
    DeviceError::check_cusolver("cusolverDnXsyevd", st)
}

/// cusolverDnXsyevdx_bufferSize (the 64-bit API, as for [`xsyevd_buffer_size`]) in f64, with
/// JOBZ = V, RANGE = I (the il-th to iu-th eigenvalues, 1-based), UPLO = lower.
///
/// # Safety
/// `h` is a live handle; `a` holds n x n entries at `lda`, `w` n entries (device memory).
pub unsafe fn xsyevdx_index_buffer_size(
    h: cs::cusolverDnHandle_t,
    params: &SolverParams,
    n: i64,
    a: *const f64,
    lda: i64,
    (il, iu): (i64, i64),
    w: *const f64,
) -> Result<WorkspaceBytes, DeviceError> {
    let (mut dev, mut host, mut meig) = (0usize, 0usize, 0i64);
    // VL and VU: host scalars of W's type, unread with RANGE = I.
    let (mut vl, mut vu) = (0.0f64, 0.0f64);
    let (jobz, lower) = (eig_mode(true), cs::cublasFillMode_t::CUBLAS_FILL_MODE_LOWER);
    let range = cs::cusolverEigRange_t::CUSOLVER_EIG_RANGE_I;
    let r64 = cs::cudaDataType::CUDA_R_64F;
    // SAFETY: as the caller promises; the scalars and sizes are host memory.
    let st = unsafe {
        cs::cusolverDnXsyevdx_bufferSize(
            h,
            params.raw,
            jobz,
            range,
            lower,
            n,
            r64,
            a.cast(),
            lda,
            (&mut vl as *mut f64).cast(),
            (&mut vu as *mut f64).cast(),
            il,
            iu,
            &mut meig,
            r64,
            w.cast(),
            r64,
            &mut dev,
            &mut host,
        )
    };
    DeviceError::check_cusolver("cusolverDnXsyevdx_bufferSize", st)?;
    Ok((dev, host))
}

/// cusolverDnXsyevdx in f64 with JOBZ = V, RANGE = I, UPLO = lower: the il-th to iu-th
/// eigenvalues of `a` into `w`, their eigenvectors over the first columns of `a`; returns how
/// many.
///
/// # Safety
/// As for [`xsyevdx_index_buffer_size`] with the same `params`, with a device workspace `work`
/// of `work_bytes` and a host one `host_work` (at least what it returned) and one device
/// `info`, all on the handle's stream.
#[allow(clippy::too_many_arguments)]
pub unsafe fn xsyevdx_index(
    h: cs::cusolverDnHandle_t,
    params: &SolverParams,
    n: i64,
    a: *mut f64,
    lda: i64,
    (il, iu): (i64, i64),
    w: *mut f64,
    (work, work_bytes): (*mut std::ffi::c_void, usize),
    host_work: &mut [u8],
    info: *mut i32,
) -> Result<i64, DeviceError> {
    let mut meig = 0i64;
    let (mut vl, mut vu) = (0.0f64, 0.0f64);
    let (jobz, lower) = (eig_mode(true), cs::cublasFillMode_t::CUBLAS_FILL_MODE_LOWER);
    let range = cs::cusolverEigRange_t::CUSOLVER_EIG_RANGE_I;
    let r64 = cs::cudaDataType::CUDA_R_64F;
    let host_bytes = host_work.len();
    // SAFETY: as the caller promises; meig and the scalars are host memory.
    let st = unsafe {
        cs::cusolverDnXsyevdx(
            h,
            params.raw,
            jobz,
            range,
            lower,
            n,
            r64,
            a.cast(),
            lda,
            (&mut vl as *mut f64).cast(),
            (&mut vu as *mut f64).cast(),
            il,
            iu,
            &mut meig,
            r64,
            w.cast(),
            r64,
            work,
            work_bytes,
            host_buffer(host_work),
            host_bytes,
            info,
        )
    };
    DeviceError::check_cusolver("cusolverDnXsyevdx", st)?;
    Ok(meig)
}

/// cusolverDnDsytrd_bufferSize with UPLO = lower.
///
/// # Safety
/// `h` is a live handle; `a` holds n x n entries at `lda`, `d`, `e` and `tau` n entries each
/// (device memory).
pub unsafe fn dsytrd_buffer_size(
    h: cs::cusolverDnHandle_t,
    n: i32,
    a: *const f64,
    lda: i32,
    d: *const f64,
    e: *const f64,
    tau: *const f64,
) -> Result<i32, DeviceError> {
    let mut lwork = 0i32;
    let lower = cs::cublasFillMode_t::CUBLAS_FILL_MODE_LOWER;
    // SAFETY: as the caller promises; lwork is host memory.
    let st = unsafe { cs::cusolverDnDsytrd_bufferSize(h, lower, n, a, lda, d, e, tau, &mut lwork) };
    DeviceError::check_cusolver("cusolverDnDsytrd_bufferSize", st)?;
    Ok(lwork)
}

/// cusolverDnDsytrd with UPLO = lower: the reduction of `a` to tridiagonal form (d, e, tau).
///
/// # Safety
/// As for [`dsytrd_buffer_size`], with a device workspace of `lwork` elements (at least what it
/// returned) and one device `info`, all on the handle's stream.
#[allow(clippy::too_many_arguments)]
pub unsafe fn dsytrd(
    h: cs::cusolverDnHandle_t,
    n: i32,
    a: *mut f64,
    lda: i32,
    d: *mut f64,
    e: *mut f64,
    tau: *mut f64,
    work: *mut f64,
    lwork: i32,
    info: *mut i32,
) -> Result<(), DeviceError> {
    let lower = cs::cublasFillMode_t::CUBLAS_FILL_MODE_LOWER;
    // SAFETY: as the caller promises.
    let st = unsafe { cs::cusolverDnDsytrd(h, lower, n, a, lda, d, e, tau, work, lwork, info) };
    DeviceError::check_cusolver("cusolverDnDsytrd", st)
}

/// A cuSPARSE handle bound to a stream, destroyed when dropped.
pub struct SparseHandle {
    raw: sp::cusparseHandle_t,
    _stream: Arc<CudaStream>,
}

impl SparseHandle {
    /// A new handle whose calls queue on `stream`.
    pub fn new(stream: Arc<CudaStream>) -> Result<Self, DeviceError> {
        if !super::libraries().cusparse {
            return Err(DeviceError::MissingLibrary("cuSPARSE"));
        }
        let mut raw: sp::cusparseHandle_t = std::ptr::null_mut();
        // SAFETY: raw receives a new handle.
        unsafe { sp::cusparseCreate(&mut raw) }.result()?;
        let handle = SparseHandle {
            raw,
            _stream: stream,
        };
        // SAFETY: the handle and the stream are live (the handle keeps the stream); cudarc's
        // and cuSPARSE's CUstream_st are the same driver type, declared twice.
        unsafe {
            sp::cusparseSetStream(handle.raw, handle._stream.cu_stream() as sp::cudaStream_t)
        }
        .result()?;
        Ok(handle)
    }
}

impl Drop for SparseHandle {
    fn drop(&mut self) {
        // SAFETY: the handle was created by cusparseCreate and is destroyed once.
        unsafe { sp::cusparseDestroy(self.raw) };
    }
}

/// cusparseDgtsv2_bufferSizeExt, or with `nopivot` cusparseDgtsv2_nopivot_bufferSizeExt: the
/// workspace (bytes) of [`dgtsv2`] on an m x m tridiagonal system with `nrhs` right-hand sides.
///
/// # Safety
/// `dl`, `d`, `du` are device arrays of m entries (cuSPARSE's layout: dl[0] = du[m-1] = 0), `b`
/// holds m x nrhs entries at `ldb`.
#[allow(clippy::too_many_arguments)]
pub unsafe fn dgtsv2_buffer_size(
    h: &SparseHandle,
    nopivot: bool,
    m: i32,
    nrhs: i32,
    dl: *const f64,
    d: *const f64,
    du: *const f64,
    b: *const f64,
    ldb: i32,
) -> Result<usize, DeviceError> {
    let mut size = 0usize;
    // SAFETY: as the caller promises; size is host memory.
    unsafe {
        if nopivot {
            sp::cusparseDgtsv2_nopivot_bufferSizeExt(h.raw, m, nrhs, dl, d, du, b, ldb, &mut size)
        } else {
            sp::cusparseDgtsv2_bufferSizeExt(h.raw, m, nrhs, dl, d, du, b, ldb, &mut size)
        }
    }
    .result()?;
    Ok(size)
}

/// cusparseDgtsv2 (partial pivoting), or with `nopivot` cusparseDgtsv2_nopivot: B := A⁻¹ B.
///
/// # Safety
/// As for [`dgtsv2_buffer_size`], with `b` writable and a device workspace `buffer` of the size
/// it returned, all on the handle's stream.
#[allow(clippy::too_many_arguments)]
pub unsafe fn dgtsv2(
    h: &SparseHandle,
    nopivot: bool,
    m: i32,
    nrhs: i32,
    dl: *const f64,
    d: *const f64,
    du: *const f64,
    b: *mut f64,
    ldb: i32,
    buffer: *mut std::ffi::c_void,
) -> Result<(), DeviceError> {
    // SAFETY: as the caller promises.
    unsafe {
        if nopivot {
            sp::cusparseDgtsv2_nopivot(h.raw, m, nrhs, dl, d, du, b, ldb, buffer)
        } else {
            sp::cusparseDgtsv2(h.raw, m, nrhs, dl, d, du, b, ldb, buffer)
        }
    }
    .result()?;
    Ok(())
}
