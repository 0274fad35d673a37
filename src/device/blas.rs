//! The cuBLAS and cuSOLVER routines of one precision ([`CublasReal`]), stamped for f32 and f64.

use crate::real::Real;
use cudarc::cublas::sys::{
    self as cb, cublasFillMode_t, cublasHandle_t, cublasOperation_t, cublasSideMode_t,
    cublasStatus_t,
};
use cudarc::cusolver::sys as cs;

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
