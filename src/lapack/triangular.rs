//! xPOTRF and the triangular BLAS 3 routines (xTRSM, xTRMM) behind [`Triangular`].

use super::{c_int_of, mut_ptr_for, ptr_for, span, symbols, Mat};
use std::os::raw::{c_char, c_int};

/// xPOTRF and the triangular BLAS 3 routines, in one precision (small host matrices of the
/// band reduction's panels). Characters are LAPACK's; sizes are checked against the slices.
pub trait Triangular: Sized {
    /// xPOTRF with UPLO = 'U': A = RᵀR into the upper triangle of the n x n `a`; returns INFO.
    fn potrf_upper(n: usize, a: &mut [Self], lda: usize) -> i32;
    /// xTRSM (`Solve`: B := alpha op(A)⁻¹ B, or alpha B op(A)⁻¹) or xTRMM (`Multiply`:
    /// B := alpha op(A) B, or alpha B op(A)) with `chars` = SIDE, UPLO, TRANSA, DIAG; B m x n.
    #[allow(clippy::too_many_arguments)]
    fn triangular(
        which: TriangularOp,
        chars: [u8; 4],
        m: usize,
        n: usize,
        alpha: Self,
        a: Mat<Self>,
        b: &mut [Self],
        ldb: usize,
    );
}

/// Which triangular BLAS 3 routine [`Triangular::triangular`] calls.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TriangularOp {
    /// xTRSM.
    Solve,
    /// xTRMM.
    Multiply,
}

/// xTRSM's and xTRMM's common argument list (with the hidden CHARACTER lengths).
type TriangularBlas3<T> = unsafe fn(
    *const c_char,
    *const c_char,
    *const c_char,
    *const c_char,
    *const c_int,
    *const c_int,
    *const T,
    *const T,
    *const c_int,
    *mut T,
    *const c_int,
    usize,
    usize,
    usize,
    usize,
);

/// Calls xTRSM or xTRMM (`f`) with the characters SIDE, UPLO, TRANSA, DIAG.
#[allow(clippy::too_many_arguments)]
fn triangular_blas3<T>(
    f: TriangularBlas3<T>,
    chars: [u8; 4],
    m: usize,
    n: usize,
    alpha: T,
    a: Mat<T>,
    b: &mut [T],
    ldb: usize,
) {
    let k = if chars[0] == b'L' { m } else { n };
    let c = chars.map(|x| x as c_char);
    let (m_, n_, lda, ldb_) = (
        c_int_of(m),
        c_int_of(n),
        c_int_of(a.1.max(1)),
        c_int_of(ldb.max(1)),
    );
    // SAFETY: A spans k x k, B m x n, with their leading dimensions; `f` is xTRSM or xTRMM.
    unsafe {
        f(
            &c[0],
            &c[1],
            &c[2],
            &c[3],
            &m_,
            &n_,
            &alpha,
            ptr_for(a.0, span(k, k, a.1)),
            &lda,
            mut_ptr_for(b, span(m, n, ldb)),
            &ldb_,
            1,
            1,
            1,
            1,
        )
    }
}

macro_rules! impl_triangular {
    ($t:ty, $potrf:ident, $trsm:ident, $trmm:ident) => {
        symbols::system_routines! {
            fn $potrf(
                uplo: *const c_char,
                n: *const c_int,
                a: *mut $t,
                lda: *const c_int,
                info: *mut c_int,
                uplo_len: usize,
            );
            fn $trsm(
                side: *const c_char,
                uplo: *const c_char,
                transa: *const c_char,
                diag: *const c_char,
                m: *const c_int,
                n: *const c_int,
                alpha: *const $t,
                a: *const $t,
                lda: *const c_int,
                b: *mut $t,
                ldb: *const c_int,
                side_len: usize,
                uplo_len: usize,
                transa_len: usize,
                diag_len: usize,
            );
            fn $trmm(
                side: *const c_char,
                uplo: *const c_char,
                transa: *const c_char,
                diag: *const c_char,
                m: *const c_int,
                n: *const c_int,
                alpha: *const $t,
                a: *const $t,
                lda: *const c_int,
                b: *mut $t,
                ldb: *const c_int,
                side_len: usize,
                uplo_len: usize,
                transa_len: usize,
                diag_len: usize,
            );
        }

        impl Triangular for $t {
            fn potrf_upper(n: usize, a: &mut [Self], lda: usize) -> i32 {
                let uplo = b'U' as c_char;
                let (n_, lda_) = (c_int_of(n), c_int_of(lda.max(1)));
                let mut info = 0;
                // SAFETY: a spans n x n with its leading dimension.
                unsafe {
                    $potrf(
                        &uplo,
                        &n_,
                        mut_ptr_for(a, span(n, n, lda)),
                        &lda_,
                        &mut info,
                        1,
                    )
                };
                info
            }

            fn triangular(
                which: TriangularOp,
                chars: [u8; 4],
                m: usize,
                n: usize,
                alpha: Self,
                a: Mat<Self>,
                b: &mut [Self],
                ldb: usize,
            ) {
                let f: TriangularBlas3<Self> = match which {
                    TriangularOp::Solve => $trsm,
                    TriangularOp::Multiply => $trmm,
                };
                triangular_blas3(f, chars, m, n, alpha, a, b, ldb)
            }
        }
    };
}

impl_triangular!(f64, dpotrf_, dtrsm_, dtrmm_);
impl_triangular!(f32, spotrf_, strsm_, strmm_);
