//! SYMM and SYR2K of large orders by halves: cuBLAS's own are slower there (see the
//! constants).

use super::{dim, CublasReal};
use crate::device::blas::trans;
use cudarc::cublas::result::CublasError;
use cudarc::cublas::sys::cublasHandle_t;

/// Orders above which `syr2k` splits into halves. cuBLAS's DSYR2K ran at 9 TFLOP/s on an H100
/// in the band reduction at n = 16384, kd = 64 (DGEMM 65 at order 8192); there, with
/// HYLAPACK_SBR_PROFILE=1, its phase took 0.31 s whole, 0.39 s by halves down to blocks of
/// 512, 0.32 s to 1024 and 0.28 s to 2048. (SYMM by halves pays only with leaves of 4096:
/// see [`SYMM_LEAF`].)
pub(super) const HALVES_LEAF: usize = 2048;

/// Orders above which `symm` splits into halves, for at most [`SYMM_HALVES_MAX_COLS`]
/// columns. cuBLAS's DSYMM took the same time for 32, 64 and 128 columns on an H100 (1.15 ms at
/// order 16384, 4.5 ms at 32768: 15 TFLOP/s at 32 columns); by halves down to 4096 it took
/// 0.86 and 3.2 ms at 32 columns, 0.93 and 3.3 ms at 64, but was slower at 128 (1.42 ms) and
/// with leaves of 2048 or less (docs/bench/2026-11-22-h100-syev-8.txt).
pub(super) const SYMM_LEAF: usize = 4096;
/// See [`SYMM_LEAF`].
pub(super) const SYMM_HALVES_MAX_COLS: usize = 64;

/// C := alpha A B + beta C, A n x n symmetric (read from its lower triangle), B and C n x k: by
/// halves, `A₂₁` through two GEMMs (C₁ += alpha A₂₁ᵀ B₂, C₂ += alpha A₂₁ B₁) after the diagonal
/// blocks' own products, down to blocks of order [`SYMM_LEAF`] that cuBLAS's SYMM takes.
///
/// # Safety
/// As for `CublasReal::gemm`; C overlaps neither A nor B.
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn symm_by_halves<T: CublasReal>(
    h: cublasHandle_t,
    n: usize,
    k: usize,
    alpha: T,
    a: *const T,
    lda: usize,
    b: *const T,
    ldb: usize,
    beta: T,
    c: *mut T,
    ldc: usize,
) -> Result<(), CublasError> {
    if n <= SYMM_LEAF || k > SYMM_HALVES_MAX_COLS {
        return T::symm(
            h,
            dim(n),
            dim(k),
            &alpha,
            a,
            dim(lda),
            b,
            dim(ldb),
            &beta,
            c,
            dim(ldc),
        )
        .result();
    }
    let (n1, n2) = (half(n), n - half(n));
    let a21 = a.add(n1);
    symm_by_halves(h, n1, k, alpha, a, lda, b, ldb, beta, c, ldc)?;
    let a22 = a.add(n1 + n1 * lda);
    let (b2, c2) = (b.add(n1), c.add(n1));
    symm_by_halves(h, n2, k, alpha, a22, lda, b2, ldb, beta, c2, ldc)?;
    let one = T::ONE;
    T::gemm(
        h,
        trans(true),
        trans(false),
        dim(n1),
        dim(k),
        dim(n2),
        &alpha,
        a21,
        dim(lda),
        b2,
        dim(ldb),
        &one,
        c,
        dim(ldc),
    )
    .result()?;
    T::gemm(
        h,
        trans(false),
        trans(false),
        dim(n2),
        dim(k),
        dim(n1),
        &alpha,
        a21,
        dim(lda),
        b,
        dim(ldb),
        &one,
        c2,
        dim(ldc),
    )
    .result()
}

/// Where the two halves of an order-n block split: near the middle, on a multiple of 64.
pub(super) fn half(n: usize) -> usize {
    (n / 2).div_ceil(64) * 64
}

/// [A B A] of a rank-2k update (leading dimension ld): rows r.. of [A B] start at p + r, of
/// [B A] at p + k ld + r.
#[derive(Clone, Copy)]
pub(super) struct Pairs2k<T> {
    pub(super) p: *const T,
    pub(super) ld: usize,
    pub(super) k: usize,
}

/// The lower triangle of C := alpha (A Bᵀ + B Aᵀ) + beta C, C n x n, A and B n x k: by halves,
/// the block below the diagonal as one GEMM of rank 2k, [A2 B2] [B1 A1]ᵀ, from the pairs
/// (whose rows start at `row`); SYR2K on diagonal blocks of order at most HALVES_LEAF, or on
/// the whole without pairs.
///
/// # Safety
/// As for `CublasReal::gemm`; the pairs hold [A B A] of the whole update.
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn syr2k_by_halves<T: CublasReal>(
    h: cublasHandle_t,
    n: usize,
    k: usize,
    alpha: T,
    a: *const T,
    lda: usize,
    b: *const T,
    ldb: usize,
    beta: T,
    c: *mut T,
    ldc: usize,
    pairs: Option<Pairs2k<T>>,
    row: usize,
) -> Result<(), CublasError> {
    let Some(pp) = pairs.filter(|_| n > HALVES_LEAF) else {
        return T::syr2k(
            h,
            dim(n),
            dim(k),
            &alpha,
            a,
            dim(lda),
            b,
            dim(ldb),
            &beta,
            c,
            dim(ldc),
        )
        .result();
    };
    let (n1, n2) = (half(n), n - half(n));
    T::gemm(
        h,
        trans(false),
        trans(true),
        dim(n2),
        dim(n1),
        dim(2 * k),
        &alpha,
        pp.p.add(row + n1),
        dim(pp.ld),
        pp.p.add(pp.k * pp.ld + row),
        dim(pp.ld),
        &beta,
        c.add(n1),
        dim(ldc),
    )
    .result()?;
    syr2k_by_halves(h, n1, k, alpha, a, lda, b, ldb, beta, c, ldc, pairs, row)?;
    syr2k_by_halves(
        h,
        n2,
        k,
        alpha,
        a.add(n1),
        lda,
        b.add(n1),
        ldb,
        beta,
        c.add(n1 + n1 * ldc),
        ldc,
        pairs,
        row + n1,
    )
}
