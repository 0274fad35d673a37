//! BLAS 3 and the dense symmetric LAPACK routines of the band-reduction family (xGEMM, xSYMM,
//! xSYR2K, xGEQRF, xGEQRT3, xLARFT, xSYTRD_SY2SB, xSYTRD_SB2ST, xSYEV/X/D) behind [`Dense`].

use super::{c_int_of, mut_ptr_for, ptr_for, span, symbols, Lapack, Mat, Orthogonal, Triangular};
use std::os::raw::{c_char, c_int};

// BLAS 3 and the dense symmetric LAPACK routines of the band-reduction family, declared here
// with the hidden CHARACTER lengths.
macro_rules! dense_externs {
    ($t:ty, $gemm:ident, $symm:ident, $syr2k:ident, $geqrf:ident, $larft:ident,
     $sy2sb:ident, $sb2st:ident, $syev:ident, $syevx:ident, $syevd:ident, $geqrt3:ident) => {
        symbols::system_routines! {
            fn $geqrt3(
                m: *const c_int,
                n: *const c_int,
                a: *mut $t,
                lda: *const c_int,
                t: *mut $t,
                ldt: *const c_int,
                info: *mut c_int,
            );
            fn $gemm(
                transa: *const c_char,
                transb: *const c_char,
                m: *const c_int,
                n: *const c_int,
                k: *const c_int,
                alpha: *const $t,
                a: *const $t,
                lda: *const c_int,
                b: *const $t,
                ldb: *const c_int,
                beta: *const $t,
                c: *mut $t,
                ldc: *const c_int,
                transa_len: usize,
                transb_len: usize,
            );
            fn $symm(
                side: *const c_char,
                uplo: *const c_char,
                m: *const c_int,
                n: *const c_int,
                alpha: *const $t,
                a: *const $t,
                lda: *const c_int,
                b: *const $t,
                ldb: *const c_int,
                beta: *const $t,
                c: *mut $t,
                ldc: *const c_int,
                side_len: usize,
                uplo_len: usize,
            );
            fn $syr2k(
                uplo: *const c_char,
                trans: *const c_char,
                n: *const c_int,
                k: *const c_int,
                alpha: *const $t,
                a: *const $t,
                lda: *const c_int,
                b: *const $t,
                ldb: *const c_int,
                beta: *const $t,
                c: *mut $t,
                ldc: *const c_int,
                uplo_len: usize,
                trans_len: usize,
            );
            fn $geqrf(
                m: *const c_int,
                n: *const c_int,
                a: *mut $t,
                lda: *const c_int,
                tau: *mut $t,
                work: *mut $t,
                lwork: *const c_int,
                info: *mut c_int,
            );
            fn $larft(
                direct: *const c_char,
                storev: *const c_char,
                n: *const c_int,
                k: *const c_int,
                v: *const $t,
                ldv: *const c_int,
                tau: *const $t,
                t: *mut $t,
                ldt: *const c_int,
                direct_len: usize,
                storev_len: usize,
            );
            fn $sy2sb(
                uplo: *const c_char,
                n: *const c_int,
                kd: *const c_int,
                a: *mut $t,
                lda: *const c_int,
                ab: *mut $t,
                ldab: *const c_int,
                tau: *mut $t,
                work: *mut $t,
                lwork: *const c_int,
                info: *mut c_int,
                uplo_len: usize,
            );
            fn $sb2st(
                stage1: *const c_char,
                vect: *const c_char,
                uplo: *const c_char,
                n: *const c_int,
                kd: *const c_int,
                ab: *mut $t,
                ldab: *const c_int,
                d: *mut $t,
                e: *mut $t,
                hous: *mut $t,
                lhous: *const c_int,
                work: *mut $t,
                lwork: *const c_int,
                info: *mut c_int,
                stage1_len: usize,
                vect_len: usize,
                uplo_len: usize,
            );
            fn $syev(
                jobz: *const c_char,
                uplo: *const c_char,
                n: *const c_int,
                a: *mut $t,
                lda: *const c_int,
                w: *mut $t,
                work: *mut $t,
                lwork: *const c_int,
                info: *mut c_int,
                jobz_len: usize,
                uplo_len: usize,
            );
            fn $syevx(
                jobz: *const c_char,
                range: *const c_char,
                uplo: *const c_char,
                n: *const c_int,
                a: *mut $t,
                lda: *const c_int,
                vl: *const $t,
                vu: *const $t,
                il: *const c_int,
                iu: *const c_int,
                abstol: *const $t,
                m: *mut c_int,
                w: *mut $t,
                z: *mut $t,
                ldz: *const c_int,
                work: *mut $t,
                lwork: *const c_int,
                iwork: *mut c_int,
                ifail: *mut c_int,
                info: *mut c_int,
                jobz_len: usize,
                range_len: usize,
                uplo_len: usize,
            );
            fn $syevd(
                jobz: *const c_char,
                uplo: *const c_char,
                n: *const c_int,
                a: *mut $t,
                lda: *const c_int,
                w: *mut $t,
                work: *mut $t,
                lwork: *const c_int,
                iwork: *mut c_int,
                liwork: *const c_int,
                info: *mut c_int,
                jobz_len: usize,
                uplo_len: usize,
            );
        }
    };
}

dense_externs!(
    f64,
    dgemm_,
    dsymm_,
    dsyr2k_,
    dgeqrf_,
    dlarft_,
    dsytrd_sy2sb_,
    dsytrd_sb2st_,
    dsyev_,
    dsyevx_,
    dsyevd_,
    dgeqrt3_
);
dense_externs!(
    f32,
    sgemm_,
    ssymm_,
    ssyr2k_,
    sgeqrf_,
    slarft_,
    ssytrd_sy2sb_,
    ssytrd_sb2st_,
    ssyev_,
    ssyevx_,
    ssyevd_,
    sgeqrt3_
);

/// The BLAS 3 and dense symmetric LAPACK routines of the band-reduction family, in one
/// precision. Characters are LAPACK's (`b'N'`, `b'T'`, `b'L'`, …); sizes are checked against
/// the slices before the call.
#[allow(clippy::too_many_arguments)]
pub trait Dense: Lapack + Triangular + Orthogonal {
    /// C := alpha op(A) op(B) + beta C, C m x n.
    fn gemm(
        ta: u8,
        tb: u8,
        m: usize,
        n: usize,
        k: usize,
        alpha: Self,
        a: Mat<Self>,
        b: Mat<Self>,
        beta: Self,
        c: &mut [Self],
        ldc: usize,
    );
    /// C := alpha A B + beta C (SIDE = 'L', A m x m symmetric, its `uplo` triangle read).
    fn symm_left(
        uplo: u8,
        m: usize,
        n: usize,
        alpha: Self,
        a: Mat<Self>,
        b: Mat<Self>,
        beta: Self,
        c: &mut [Self],
        ldc: usize,
    );
    /// C := alpha (A Bᵀ + B Aᵀ) + beta C on the `uplo` triangle of the n x n C (TRANS = 'N').
    fn syr2k(
        uplo: u8,
        n: usize,
        k: usize,
        alpha: Self,
        a: Mat<Self>,
        b: Mat<Self>,
        beta: Self,
        c: &mut [Self],
        ldc: usize,
    );
    /// xGEQRF of the m x n matrix `a`; returns INFO.
    fn geqrf(m: usize, n: usize, a: &mut [Self], lda: usize, tau: &mut [Self]) -> i32;
    /// xGEQRT3 (recursive QR, m >= n): the reflectors into `a` as xGEQRF leaves them, and the
    /// n x n upper triangular T of their block reflector (its diagonal is xGEQRF's TAU).
    fn geqrt3(m: usize, n: usize, a: &mut [Self], lda: usize, t: &mut [Self], ldt: usize) -> i32;
    /// xLARFT('F', 'C'): the k x k upper triangular T of the block reflector of `v` (n x k).
    fn larft(n: usize, k: usize, v: Mat<Self>, tau: &[Self], t: &mut [Self], ldt: usize);
    /// xSYTRD_SY2SB with the caller's WORK (LWORK = `work.len()`, or -1 when `query`).
    fn sytrd_sy2sb(
        uplo: u8,
        n: usize,
        kd: usize,
        a: &mut [Self],
        lda: usize,
        ab: &mut [Self],
        ldab: usize,
        tau: &mut [Self],
        work: &mut [Self],
        query: bool,
    ) -> i32;
    /// xSYTRD_SB2ST('N', 'N', uplo): the tridiagonal `d`, `e` of a band matrix, whose `ab` is
    /// overwritten. Returns INFO.
    fn sytrd_sb2st(
        uplo: u8,
        n: usize,
        kd: usize,
        ab: &mut [Self],
        ldab: usize,
        d: &mut [Self],
        e: &mut [Self],
    ) -> i32;
    /// xSYEV with JOBZ = 'N': eigenvalues of A into `w`, A destroyed. Returns INFO.
    fn syev_values(uplo: u8, n: usize, a: &mut [Self], lda: usize, w: &mut [Self]) -> i32;
    /// [`Dense::syev_values`] on the caller's WORK (LWORK = `work.len()` ≥ max(1, 3n − 1)), so
    /// that nothing is allocated.
    fn syev_values_in(
        uplo: u8,
        n: usize,
        a: &mut [Self],
        lda: usize,
        w: &mut [Self],
        work: &mut [Self],
    ) -> i32;
    /// xSYEVD with JOBZ = 'N'. Returns INFO.
    fn syevd_values(uplo: u8, n: usize, a: &mut [Self], lda: usize, w: &mut [Self]) -> i32 {
        Self::syevd(b'N', uplo, n, a, lda, w)
    }
    /// xSYEVD with JOBZ = `jobz` ('V': the eigenvectors over `a`), its workspace allocated
    /// here. Returns INFO.
    fn syevd(jobz: u8, uplo: u8, n: usize, a: &mut [Self], lda: usize, w: &mut [Self]) -> i32;
    /// xSYEVX with JOBZ = 'N'. Returns (M, INFO).
    fn syevx_values(
        range: u8,
        uplo: u8,
        n: usize,
        a: &mut [Self],
        lda: usize,
        vl: Self,
        vu: Self,
        il: i32,
        iu: i32,
        abstol: Self,
        w: &mut [Self],
    ) -> (i32, i32);
    /// [`Dense::syevx_values`] on the caller's WORK (LWORK = `work.len()` ≥ max(1, 8n)) and
    /// IWORK (5n), so that nothing is allocated (IFAIL is not referenced for JOBZ = 'N').
    #[allow(clippy::too_many_arguments)]
    fn syevx_values_in(
        range: u8,
        uplo: u8,
        n: usize,
        a: &mut [Self],
        lda: usize,
        vl: Self,
        vu: Self,
        il: i32,
        iu: i32,
        abstol: Self,
        w: &mut [Self],
        work: &mut [Self],
        iwork: &mut [i32],
    ) -> (i32, i32);
    /// xSYEVX with JOBZ = 'V' on the caller's WORK (LWORK = `work.len()` ≥ max(1, 8n)), IWORK
    /// (5n) and IFAIL (n): the eigenvectors into `z` (leading dimension `ldz` ≥ max(1, n);
    /// as many columns as RANGE may select, n for 'A' and 'V', IU − IL + 1 for 'I', at least
    /// one). Returns (M, INFO).
    #[allow(clippy::too_many_arguments)]
    fn syevx_vectors_in(
        range: u8,
        uplo: u8,
        n: usize,
        a: &mut [Self],
        lda: usize,
        vl: Self,
        vu: Self,
        il: i32,
        iu: i32,
        abstol: Self,
        w: &mut [Self],
        z: &mut [Self],
        ldz: usize,
        work: &mut [Self],
        iwork: &mut [i32],
        ifail: &mut [i32],
    ) -> (i32, i32);
}

macro_rules! impl_dense {
    ($t:ty, $gemm:ident, $symm:ident, $syr2k:ident, $geqrf:ident, $larft:ident,
     $sy2sb:ident, $sb2st:ident, $syev:ident, $syevx:ident, $syevd:ident, $geqrt3:ident) => {
        impl Dense for $t {
            fn geqrt3(
                m: usize,
                n: usize,
                a: &mut [Self],
                lda: usize,
                t: &mut [Self],
                ldt: usize,
            ) -> i32 {
                assert!(m >= n, "xGEQRT3 needs M >= N");
                let (m_, n_, lda_, ldt_) = (
                    c_int_of(m),
                    c_int_of(n),
                    c_int_of(lda.max(1)),
                    c_int_of(ldt.max(1)),
                );
                let mut info = 0;
                // SAFETY: a spans m x n and t n x n with their leading dimensions.
                unsafe {
                    $geqrt3(
                        &m_,
                        &n_,
                        mut_ptr_for(a, span(m, n, lda)),
                        &lda_,
                        mut_ptr_for(t, span(n, n, ldt)),
                        &ldt_,
                        &mut info,
                    )
                };
                info
            }

            fn gemm(
                ta: u8,
                tb: u8,
                m: usize,
                n: usize,
                k: usize,
                alpha: Self,
                a: Mat<Self>,
                b: Mat<Self>,
                beta: Self,
                c: &mut [Self],
                ldc: usize,
            ) {
                let (ar, ac) = if ta == b'N' { (m, k) } else { (k, m) };
                let (br, bc) = if tb == b'N' { (k, n) } else { (n, k) };
                let (ta, tb) = (ta as c_char, tb as c_char);
                let (m_, n_, k_) = (c_int_of(m), c_int_of(n), c_int_of(k));
                let (lda, ldb, ldc_) = (
                    c_int_of(a.1.max(1)),
                    c_int_of(b.1.max(1)),
                    c_int_of(ldc.max(1)),
                );
                // SAFETY: each operand reaches the entries its dimensions and leading dimension span.
                unsafe {
                    $gemm(
                        &ta,
                        &tb,
                        &m_,
                        &n_,
                        &k_,
                        &alpha,
                        ptr_for(a.0, span(ar, ac, a.1)),
                        &lda,
                        ptr_for(b.0, span(br, bc, b.1)),
                        &ldb,
                        &beta,
                        mut_ptr_for(c, span(m, n, ldc)),
                        &ldc_,
                        1,
                        1,
                    )
                }
            }

            fn symm_left(
                uplo: u8,
                m: usize,
                n: usize,
                alpha: Self,
                a: Mat<Self>,
                b: Mat<Self>,
                beta: Self,
                c: &mut [Self],
                ldc: usize,
            ) {
                let (side, uplo) = (b'L' as c_char, uplo as c_char);
                let (m_, n_) = (c_int_of(m), c_int_of(n));
                let (lda, ldb, ldc_) = (
                    c_int_of(a.1.max(1)),
                    c_int_of(b.1.max(1)),
                    c_int_of(ldc.max(1)),
                );
                // SAFETY: as in gemm.
                unsafe {
                    $symm(
                        &side,
                        &uplo,
                        &m_,
                        &n_,
                        &alpha,
                        ptr_for(a.0, span(m, m, a.1)),
                        &lda,
                        ptr_for(b.0, span(m, n, b.1)),
                        &ldb,
                        &beta,
                        mut_ptr_for(c, span(m, n, ldc)),
                        &ldc_,
                        1,
                        1,
                    )
                }
            }

            fn syr2k(
                uplo: u8,
                n: usize,
                k: usize,
                alpha: Self,
                a: Mat<Self>,
                b: Mat<Self>,
                beta: Self,
                c: &mut [Self],
                ldc: usize,
            ) {
                let (uplo, trans) = (uplo as c_char, b'N' as c_char);
                let (n_, k_) = (c_int_of(n), c_int_of(k));
                let (lda, ldb, ldc_) = (
                    c_int_of(a.1.max(1)),
                    c_int_of(b.1.max(1)),
                    c_int_of(ldc.max(1)),
                );
                // SAFETY: as in gemm.
                unsafe {
                    $syr2k(
                        &uplo,
                        &trans,
                        &n_,
                        &k_,
                        &alpha,
                        ptr_for(a.0, span(n, k, a.1)),
                        &lda,
                        ptr_for(b.0, span(n, k, b.1)),
                        &ldb,
                        &beta,
                        mut_ptr_for(c, span(n, n, ldc)),
                        &ldc_,
                        1,
                        1,
                    )
                }
            }

            fn geqrf(m: usize, n: usize, a: &mut [Self], lda: usize, tau: &mut [Self]) -> i32 {
                let (m_, n_, lda_) = (c_int_of(m), c_int_of(n), c_int_of(lda.max(1)));
                let mut info = 0;
                let mut query = [<$t>::default()];
                let minus_one: c_int = -1;
                let a_ptr = mut_ptr_for(a, span(m, n, lda));
                let tau_ptr = mut_ptr_for(tau, m.min(n));
                // SAFETY: a spans m x n, tau min(m, n); the first call only queries LWORK.
                unsafe {
                    $geqrf(
                        &m_,
                        &n_,
                        a_ptr,
                        &lda_,
                        tau_ptr,
                        query.as_mut_ptr(),
                        &minus_one,
                        &mut info,
                    )
                };
                let mut work = vec![<$t>::default(); (query[0] as usize).max(n).max(1)];
                let lwork = c_int_of(work.len());
                // SAFETY: as above, with a workspace of the length passed.
                unsafe {
                    $geqrf(
                        &m_,
                        &n_,
                        a_ptr,
                        &lda_,
                        tau_ptr,
                        work.as_mut_ptr(),
                        &lwork,
                        &mut info,
                    )
                };
                info
            }

            fn larft(n: usize, k: usize, v: Mat<Self>, tau: &[Self], t: &mut [Self], ldt: usize) {
                let (direct, storev) = (b'F' as c_char, b'C' as c_char);
                let (n_, k_, ldv, ldt_) = (
                    c_int_of(n),
                    c_int_of(k),
                    c_int_of(v.1.max(1)),
                    c_int_of(ldt.max(1)),
                );
                // SAFETY: v spans n x k, tau k, t k x k.
                unsafe {
                    $larft(
                        &direct,
                        &storev,
                        &n_,
                        &k_,
                        ptr_for(v.0, span(n, k, v.1)),
                        &ldv,
                        ptr_for(tau, k),
                        mut_ptr_for(t, span(k, k, ldt)),
                        &ldt_,
                        1,
                        1,
                    )
                }
            }

            fn sytrd_sy2sb(
                uplo: u8,
                n: usize,
                kd: usize,
                a: &mut [Self],
                lda: usize,
                ab: &mut [Self],
                ldab: usize,
                tau: &mut [Self],
                work: &mut [Self],
                query: bool,
            ) -> i32 {
                let uplo = uplo as c_char;
                let (n_, kd_, lda_, ldab_) =
                    (c_int_of(n), c_int_of(kd), c_int_of(lda), c_int_of(ldab));
                let lwork: c_int = if query { -1 } else { c_int_of(work.len()) };
                let mut info = 0;
                let (a_need, ab_need, tau_need) = if query {
                    (0, 0, 0)
                } else {
                    (span(n, n, lda), span(kd + 1, n, ldab), n.saturating_sub(kd))
                };
                // SAFETY: the arrays reach what xSYTRD_SY2SB indexes (nothing but WORK(1) on a query).
                unsafe {
                    $sy2sb(
                        &uplo,
                        &n_,
                        &kd_,
                        mut_ptr_for(a, a_need),
                        &lda_,
                        mut_ptr_for(ab, ab_need),
                        &ldab_,
                        mut_ptr_for(tau, tau_need),
                        mut_ptr_for(work, 1),
                        &lwork,
                        &mut info,
                        1,
                    )
                };
                info
            }

            fn sytrd_sb2st(
                uplo: u8,
                n: usize,
                kd: usize,
                ab: &mut [Self],
                ldab: usize,
                d: &mut [Self],
                e: &mut [Self],
            ) -> i32 {
                let (stage1, vect, uplo) = (b'N' as c_char, b'N' as c_char, uplo as c_char);
                let (n_, kd_, ldab_) = (c_int_of(n), c_int_of(kd), c_int_of(ldab));
                let (mut hq, mut wq) = ([<$t>::default()], [<$t>::default()]);
                let (minus_one, mut info) = (-1 as c_int, 0);
                let ab_ptr = mut_ptr_for(ab, span(kd + 1, n, ldab));
                let (d_ptr, e_ptr) = (mut_ptr_for(d, n), mut_ptr_for(e, n.saturating_sub(1)));
                // SAFETY: a workspace query: only HOUS(1) and WORK(1) are written.
                unsafe {
                    $sb2st(
                        &stage1,
                        &vect,
                        &uplo,
                        &n_,
                        &kd_,
                        ab_ptr,
                        &ldab_,
                        d_ptr,
                        e_ptr,
                        hq.as_mut_ptr(),
                        &minus_one,
                        wq.as_mut_ptr(),
                        &minus_one,
                        &mut info,
                        1,
                        1,
                        1,
                    )
                };
                let mut hous = vec![<$t>::default(); (hq[0] as usize).max(1)];
                let mut work = vec![<$t>::default(); (wq[0] as usize).max(1)];
                let (lh, lw) = (c_int_of(hous.len()), c_int_of(work.len()));
                // SAFETY: as above, with workspaces of the queried lengths.
                unsafe {
                    $sb2st(
                        &stage1,
                        &vect,
                        &uplo,
                        &n_,
                        &kd_,
                        ab_ptr,
                        &ldab_,
                        d_ptr,
                        e_ptr,
                        hous.as_mut_ptr(),
                        &lh,
                        work.as_mut_ptr(),
                        &lw,
                        &mut info,
                        1,
                        1,
                        1,
                    )
                };
                info
            }

            fn syev_values(uplo: u8, n: usize, a: &mut [Self], lda: usize, w: &mut [Self]) -> i32 {
                let mut work = vec![<$t>::default(); (34 * n).max(3 * n).max(1)];
                Self::syev_values_in(uplo, n, a, lda, w, &mut work)
            }

            fn syev_values_in(
                uplo: u8,
                n: usize,
                a: &mut [Self],
                lda: usize,
                w: &mut [Self],
                work: &mut [Self],
            ) -> i32 {
                assert!(work.len() >= (3 * n).max(2) - 1, "xSYEV's WORK too short");
                let (jobz, uplo) = (b'N' as c_char, uplo as c_char);
                let (n_, lda_) = (c_int_of(n), c_int_of(lda.max(1)));
                let lwork = c_int_of(work.len());
                let mut info = 0;
                // SAFETY: a spans n x n, w n, work its length.
                unsafe {
                    $syev(
                        &jobz,
                        &uplo,
                        &n_,
                        mut_ptr_for(a, span(n, n, lda)),
                        &lda_,
                        mut_ptr_for(w, n),
                        work.as_mut_ptr(),
                        &lwork,
                        &mut info,
                        1,
                        1,
                    )
                };
                info
            }

            fn syevd(
                jobz: u8,
                uplo: u8,
                n: usize,
                a: &mut [Self],
                lda: usize,
                w: &mut [Self],
            ) -> i32 {
                let (jobz, uplo) = (jobz as c_char, uplo as c_char);
                let (n_, lda_) = (c_int_of(n), c_int_of(lda.max(1)));
                let (mut wq, mut iwq, minus_one, mut info) =
                    ([<$t>::default()], [0 as c_int], -1 as c_int, 0);
                let a_ptr = mut_ptr_for(a, span(n, n, lda));
                let w_ptr = mut_ptr_for(w, n);
                // SAFETY: a workspace query writes WORK(1) and IWORK(1) only.
                unsafe {
                    $syevd(
                        &jobz,
                        &uplo,
                        &n_,
                        a_ptr,
                        &lda_,
                        w_ptr,
                        wq.as_mut_ptr(),
                        &minus_one,
                        iwq.as_mut_ptr(),
                        &minus_one,
                        &mut info,
                        1,
                        1,
                    )
                };
                let mut work = vec![<$t>::default(); (wq[0] as usize).max(2 * n + 1)];
                let mut iwork = vec![0 as c_int; (iwq[0] as usize).max(1)];
                let (lw, liw) = (c_int_of(work.len()), c_int_of(iwork.len()));
                // SAFETY: as above, with workspaces of the lengths passed.
                unsafe {
                    $syevd(
                        &jobz,
                        &uplo,
                        &n_,
                        a_ptr,
                        &lda_,
                        w_ptr,
                        work.as_mut_ptr(),
                        &lw,
                        iwork.as_mut_ptr(),
                        &liw,
                        &mut info,
                        1,
                        1,
                    )
                };
                info
            }

            fn syevx_values(
                range: u8,
                uplo: u8,
                n: usize,
                a: &mut [Self],
                lda: usize,
                vl: Self,
                vu: Self,
                il: i32,
                iu: i32,
                abstol: Self,
                w: &mut [Self],
            ) -> (i32, i32) {
                let mut work = vec![<$t>::default(); (8 * n).max(1)];
                let mut iwork = vec![0 as c_int; (5 * n).max(1)];
                Self::syevx_values_in(
                    range, uplo, n, a, lda, vl, vu, il, iu, abstol, w, &mut work, &mut iwork,
                )
            }

            fn syevx_values_in(
                range: u8,
                uplo: u8,
                n: usize,
                a: &mut [Self],
                lda: usize,
                vl: Self,
                vu: Self,
                il: i32,
                iu: i32,
                abstol: Self,
                w: &mut [Self],
                work: &mut [Self],
                iwork: &mut [i32],
            ) -> (i32, i32) {
                assert!(
                    work.len() >= (8 * n).max(1) && iwork.len() >= 5 * n,
                    "xSYEVX's workspace too short"
                );
                let (jobz, range, uplo) = (b'N' as c_char, range as c_char, uplo as c_char);
                let mut ifail = [0 as c_int];
                let (n_, lda_, ldz) = (c_int_of(n), c_int_of(lda.max(1)), 1 as c_int);
                let mut z = [<$t>::default()];
                let lwork = c_int_of(work.len());
                let (mut m, mut info) = (0, 0);
                // SAFETY: a spans n x n, w n; Z and IFAIL are not referenced for JOBZ = 'N'.
                unsafe {
                    $syevx(
                        &jobz,
                        &range,
                        &uplo,
                        &n_,
                        mut_ptr_for(a, span(n, n, lda)),
                        &lda_,
                        &vl,
                        &vu,
                        &il,
                        &iu,
                        &abstol,
                        &mut m,
                        mut_ptr_for(w, n),
                        z.as_mut_ptr(),
                        &ldz,
                        work.as_mut_ptr(),
                        &lwork,
                        iwork.as_mut_ptr(),
                        ifail.as_mut_ptr(),
                        &mut info,
                        1,
                        1,
                        1,
                    )
                };
                (m, info)
            }

            fn syevx_vectors_in(
                range: u8,
                uplo: u8,
                n: usize,
                a: &mut [Self],
                lda: usize,
                vl: Self,
                vu: Self,
                il: i32,
                iu: i32,
                abstol: Self,
                w: &mut [Self],
                z: &mut [Self],
                ldz: usize,
                work: &mut [Self],
                iwork: &mut [i32],
                ifail: &mut [i32],
            ) -> (i32, i32) {
                assert!(
                    work.len() >= (8 * n).max(1) && iwork.len() >= 5 * n && ifail.len() >= n,
                    "xSYEVX's workspace too short"
                );
                let cols = if range.eq_ignore_ascii_case(&b'I') {
                    (iu - il + 1).max(0) as usize
                } else {
                    n
                };
                let (jobz, range, uplo) = (b'V' as c_char, range as c_char, uplo as c_char);
                let (n_, lda_, ldz_) = (c_int_of(n), c_int_of(lda.max(1)), c_int_of(ldz.max(1)));
                let lwork = c_int_of(work.len());
                let (mut m, mut info) = (0, 0);
                // SAFETY: a spans n x n, w n, z n x cols (none for N = 0, where xSYEVX returns
                // before touching it), the workspaces their lengths.
                unsafe {
                    $syevx(
                        &jobz,
                        &range,
                        &uplo,
                        &n_,
                        mut_ptr_for(a, span(n, n, lda)),
                        &lda_,
                        &vl,
                        &vu,
                        &il,
                        &iu,
                        &abstol,
                        &mut m,
                        mut_ptr_for(w, n),
                        mut_ptr_for(z, span(n, cols, ldz)),
                        &ldz_,
                        work.as_mut_ptr(),
                        &lwork,
                        iwork.as_mut_ptr(),
                        ifail.as_mut_ptr(),
                        &mut info,
                        1,
                        1,
                        1,
                    )
                };
                (m, info)
            }
        }
    };
}

impl_dense!(
    f64,
    dgemm_,
    dsymm_,
    dsyr2k_,
    dgeqrf_,
    dlarft_,
    dsytrd_sy2sb_,
    dsytrd_sb2st_,
    dsyev_,
    dsyevx_,
    dsyevd_,
    dgeqrt3_
);
impl_dense!(
    f32,
    sgemm_,
    ssymm_,
    ssyr2k_,
    sgeqrf_,
    slarft_,
    ssytrd_sy2sb_,
    ssytrd_sb2st_,
    ssyev_,
    ssyevx_,
    ssyevd_,
    sgeqrt3_
);
