//! The routines of the eigenvector back-transformation: xORMQR and xORMLQ (apply the
//! reflectors a QR or LQ factorization left), xSTEQR and xSTEDC (eigenvectors of a symmetric
//! tridiagonal matrix), xSYEV with eigenvectors (the drivers' fallback) and xSYEVR (a
//! benchmark's peer), behind [`Orthogonal`].

use super::{c_int_of, mut_ptr_for, ptr_for, span, symbols};
use std::os::raw::{c_char, c_int};

// Declared with the hidden CHARACTER lengths.
macro_rules! orthogonal_externs {
    ($t:ty, $ormqr:ident, $ormlq:ident, $steqr:ident, $stedc:ident, $syev:ident,
     $syevr:ident) => {
        symbols::system_routines! {
            fn $ormqr(
                side: *const c_char,
                trans: *const c_char,
                m: *const c_int,
                n: *const c_int,
                k: *const c_int,
                a: *const $t,
                lda: *const c_int,
                tau: *const $t,
                c: *mut $t,
                ldc: *const c_int,
                work: *mut $t,
                lwork: *const c_int,
                info: *mut c_int,
                side_len: usize,
                trans_len: usize,
            );
            fn $ormlq(
                side: *const c_char,
                trans: *const c_char,
                m: *const c_int,
                n: *const c_int,
                k: *const c_int,
                a: *const $t,
                lda: *const c_int,
                tau: *const $t,
                c: *mut $t,
                ldc: *const c_int,
                work: *mut $t,
                lwork: *const c_int,
                info: *mut c_int,
                side_len: usize,
                trans_len: usize,
            );
            fn $steqr(
                compz: *const c_char,
                n: *const c_int,
                d: *mut $t,
                e: *mut $t,
                z: *mut $t,
                ldz: *const c_int,
                work: *mut $t,
                info: *mut c_int,
                compz_len: usize,
            );
            fn $stedc(
                compz: *const c_char,
                n: *const c_int,
                d: *mut $t,
                e: *mut $t,
                z: *mut $t,
                ldz: *const c_int,
                work: *mut $t,
                lwork: *const c_int,
                iwork: *mut c_int,
                liwork: *const c_int,
                info: *mut c_int,
                compz_len: usize,
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
            fn $syevr(
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
                isuppz: *mut c_int,
                work: *mut $t,
                lwork: *const c_int,
                iwork: *mut c_int,
                liwork: *const c_int,
                info: *mut c_int,
                jobz_len: usize,
                range_len: usize,
                uplo_len: usize,
            );
        }
    };
}

orthogonal_externs!(f64, dormqr_, dormlq_, dsteqr_, dstedc_, dsyev_, dsyevr_);
orthogonal_externs!(f32, sormqr_, sormlq_, ssteqr_, sstedc_, ssyev_, ssyevr_);

/// The back-transformation's LAPACK routines in one precision. Characters are LAPACK's; sizes
/// are checked against the slices before the call; every routine works in the caller's WORK
/// (nothing is allocated here).
#[allow(clippy::too_many_arguments)]
pub trait Orthogonal: Sized {
    /// C := Q C (`trans` = b'N') or Qᵀ C (b'T'), SIDE = 'L', with Q = H(1) ⋯ H(k) of xGEQRF's
    /// vectors in the columns of the m x k `a`; C is m x n. An empty `work` is a workspace
    /// query. Returns (INFO, the optimal LWORK).
    fn ormqr_left(
        trans: u8,
        m: usize,
        n: usize,
        k: usize,
        a: &[Self],
        lda: usize,
        tau: &[Self],
        c: &mut [Self],
        ldc: usize,
        work: &mut [Self],
    ) -> (i32, usize);
    /// As [`Orthogonal::ormqr_left`] with Q = H(k) ⋯ H(1) of xGELQF's vectors in the rows of
    /// the k x m `a`.
    fn ormlq_left(
        trans: u8,
        m: usize,
        n: usize,
        k: usize,
        a: &[Self],
        lda: usize,
        tau: &[Self],
        c: &mut [Self],
        ldc: usize,
        work: &mut [Self],
    ) -> (i32, usize);
    /// xSTEQR with COMPZ = 'I': the eigenvalues of the tridiagonal (d, e) into `d`
    /// (ascending), its eigenvectors into the n x n `z`; `work` of max(1, 2n − 2). INFO.
    fn steqr_vectors(
        d: &mut [Self],
        e: &mut [Self],
        z: &mut [Self],
        ldz: usize,
        work: &mut [Self],
    ) -> i32;
    /// xSTEDC's (LWORK, LIWORK) for COMPZ = 'I' and order n.
    fn stedc_sizes(n: usize) -> (usize, usize);
    /// xSTEDC with COMPZ = 'I' (as [`Orthogonal::steqr_vectors`], by divide and conquer), in
    /// workspaces of at least [`Orthogonal::stedc_sizes`]. INFO.
    fn stedc_vectors(
        d: &mut [Self],
        e: &mut [Self],
        z: &mut [Self],
        ldz: usize,
        work: &mut [Self],
        iwork: &mut [i32],
    ) -> i32;
    /// xSYEV with JOBZ = 'V' on the caller's WORK (LWORK = `work.len()` ≥ max(1, 3n − 1)).
    fn syev_vectors_in(
        uplo: u8,
        n: usize,
        a: &mut [Self],
        lda: usize,
        w: &mut [Self],
        work: &mut [Self],
    ) -> i32;
    /// xSYEVR's (LWORK, LIWORK) for order n: LAPACK's optimal (NB + 6) N for ILAENV's block
    /// sizes up to 64 (reference LAPACK and OpenBLAS say 32), and 10 N.
    fn syevr_sizes(n: usize) -> (usize, usize) {
        ((70 * n).max(1), (10 * n).max(1))
    }
    /// xSYEVR with JOBZ = 'V' and RANGE = 'I' (the il-th to iu-th eigenvalues, 1-based) on the
    /// caller's WORK and IWORK (at least [`Orthogonal::syevr_sizes`]): the eigenvalues into
    /// `w`, their vectors into the n x (iu − il + 1) `z`, ISUPPZ 2 (iu − il + 1). (M, INFO).
    fn syevr_index_in(
        uplo: u8,
        n: usize,
        a: &mut [Self],
        lda: usize,
        range: (i32, i32),
        w: &mut [Self],
        z: (&mut [Self], usize),
        isuppz: &mut [i32],
        work: &mut [Self],
        iwork: &mut [i32],
    ) -> (i32, i32);
}

macro_rules! impl_orthogonal {
    ($t:ty, $ormqr:ident, $ormlq:ident, $steqr:ident, $stedc:ident, $syev:ident,
     $syevr:ident) => {
        impl Orthogonal for $t {
            fn syevr_index_in(
                uplo: u8,
                n: usize,
                a: &mut [Self],
                lda: usize,
                (il, iu): (i32, i32),
                w: &mut [Self],
                (z, ldz): (&mut [Self], usize),
                isuppz: &mut [i32],
                work: &mut [Self],
                iwork: &mut [i32],
            ) -> (i32, i32) {
                let cols = (iu - il + 1).max(1) as usize;
                let (lw, liw) = Self::syevr_sizes(n);
                assert!(
                    work.len() >= lw && iwork.len() >= liw,
                    "xSYEVR's workspace too short"
                );
                assert!(isuppz.len() >= 2 * cols, "xSYEVR's ISUPPZ too short");
                let (jobz, range, uplo) = (b'V' as c_char, b'I' as c_char, uplo as c_char);
                let (n_, lda_, ldz_) = (c_int_of(n), c_int_of(lda.max(1)), c_int_of(ldz.max(1)));
                let (lw_, liw_) = (c_int_of(work.len()), c_int_of(iwork.len()));
                let (zero, (mut m, mut info)) = (<$t>::default(), (0, 0));
                // SAFETY: a spans n x n, w n, z n x cols, isuppz 2 cols, the workspaces their
                // lengths (at least LAPACK's minimum, asserted); VL and VU are not referenced.
                unsafe {
                    $syevr(
                        &jobz,
                        &range,
                        &uplo,
                        &n_,
                        mut_ptr_for(a, span(n, n, lda)),
                        &lda_,
                        &zero,
                        &zero,
                        &il,
                        &iu,
                        &zero,
                        &mut m,
                        mut_ptr_for(w, n),
                        mut_ptr_for(z, span(n, cols, ldz)),
                        &ldz_,
                        isuppz.as_mut_ptr(),
                        work.as_mut_ptr(),
                        &lw_,
                        iwork.as_mut_ptr(),
                        &liw_,
                        &mut info,
                        1,
                        1,
                        1,
                    )
                };
                (m, info)
            }

            fn ormqr_left(
                trans: u8,
                m: usize,
                n: usize,
                k: usize,
                a: &[Self],
                lda: usize,
                tau: &[Self],
                c: &mut [Self],
                ldc: usize,
                work: &mut [Self],
            ) -> (i32, usize) {
                let (side, trans) = (b'L' as c_char, trans as c_char);
                let (m_, n_, k_) = (c_int_of(m), c_int_of(n), c_int_of(k));
                let (lda_, ldc_) = (c_int_of(lda.max(1)), c_int_of(ldc.max(1)));
                let mut q = [<$t>::default()];
                let query = work.is_empty();
                let w = if query { &mut q[..] } else { &mut work[..] };
                let lwork = if query { -1 } else { c_int_of(w.len()) };
                let mut info = 0;
                // SAFETY: a spans m x k, tau k, c m x n, work its length (one entry for a
                // query).
                unsafe {
                    $ormqr(
                        &side,
                        &trans,
                        &m_,
                        &n_,
                        &k_,
                        ptr_for(a, span(m, k, lda)),
                        &lda_,
                        ptr_for(tau, k),
                        mut_ptr_for(c, span(m, n, ldc)),
                        &ldc_,
                        w.as_mut_ptr(),
                        &lwork,
                        &mut info,
                        1,
                        1,
                    )
                };
                (info, w[0] as usize)
            }

            fn ormlq_left(
                trans: u8,
                m: usize,
                n: usize,
                k: usize,
                a: &[Self],
                lda: usize,
                tau: &[Self],
                c: &mut [Self],
                ldc: usize,
                work: &mut [Self],
            ) -> (i32, usize) {
                let (side, trans) = (b'L' as c_char, trans as c_char);
                let (m_, n_, k_) = (c_int_of(m), c_int_of(n), c_int_of(k));
                let (lda_, ldc_) = (c_int_of(lda.max(1)), c_int_of(ldc.max(1)));
                let mut q = [<$t>::default()];
                let query = work.is_empty();
                let w = if query { &mut q[..] } else { &mut work[..] };
                let lwork = if query { -1 } else { c_int_of(w.len()) };
                let mut info = 0;
                // SAFETY: a spans k x m, tau k, c m x n, work its length.
                unsafe {
                    $ormlq(
                        &side,
                        &trans,
                        &m_,
                        &n_,
                        &k_,
                        ptr_for(a, span(k, m, lda)),
                        &lda_,
                        ptr_for(tau, k),
                        mut_ptr_for(c, span(m, n, ldc)),
                        &ldc_,
                        w.as_mut_ptr(),
                        &lwork,
                        &mut info,
                        1,
                        1,
                    )
                };
                (info, w[0] as usize)
            }

            fn steqr_vectors(
                d: &mut [Self],
                e: &mut [Self],
                z: &mut [Self],
                ldz: usize,
                work: &mut [Self],
            ) -> i32 {
                let n = d.len();
                let compz = b'I' as c_char;
                let (n_, ldz_) = (c_int_of(n), c_int_of(ldz.max(1)));
                let mut info = 0;
                // SAFETY: d n, e n − 1, z n x n, work max(1, 2n − 2).
                unsafe {
                    $steqr(
                        &compz,
                        &n_,
                        d.as_mut_ptr(),
                        mut_ptr_for(e, n.saturating_sub(1)),
                        mut_ptr_for(z, span(n, n, ldz)),
                        &ldz_,
                        mut_ptr_for(work, (2 * n).saturating_sub(2).max(1)),
                        &mut info,
                        1,
                    )
                };
                info
            }

            fn stedc_sizes(n: usize) -> (usize, usize) {
                if n <= 1 {
                    (1, 1)
                } else {
                    (1 + 4 * n + n * n, 3 + 5 * n)
                }
            }

            fn stedc_vectors(
                d: &mut [Self],
                e: &mut [Self],
                z: &mut [Self],
                ldz: usize,
                work: &mut [Self],
                iwork: &mut [i32],
            ) -> i32 {
                let n = d.len();
                let (lw, liw) = Self::stedc_sizes(n);
                let compz = b'I' as c_char;
                let (n_, ldz_) = (c_int_of(n), c_int_of(ldz.max(1)));
                let (lw_, liw_) = (c_int_of(work.len()), c_int_of(iwork.len()));
                let mut info = 0;
                // SAFETY: d n, e n − 1, z n x n, the workspaces at least xSTEDC's minimum.
                unsafe {
                    $stedc(
                        &compz,
                        &n_,
                        d.as_mut_ptr(),
                        mut_ptr_for(e, n.saturating_sub(1)),
                        mut_ptr_for(z, span(n, n, ldz)),
                        &ldz_,
                        mut_ptr_for(work, lw),
                        &lw_,
                        mut_ptr_for(iwork, liw),
                        &liw_,
                        &mut info,
                        1,
                    )
                };
                info
            }

            fn syev_vectors_in(
                uplo: u8,
                n: usize,
                a: &mut [Self],
                lda: usize,
                w: &mut [Self],
                work: &mut [Self],
            ) -> i32 {
                assert!(work.len() >= (3 * n).max(2) - 1, "xSYEV's WORK too short");
                let (jobz, uplo) = (b'V' as c_char, uplo as c_char);
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
        }
    };
}

impl_orthogonal!(f64, dormqr_, dormlq_, dsteqr_, dstedc_, dsyev_, dsyevr_);
impl_orthogonal!(f32, sormqr_, sormlq_, ssteqr_, sstedc_, ssyev_, ssyevr_);
