//! The system LAPACK and BLAS: the CPU fallback and the reference the tests compare against.
//! They are found at run time ([`symbols`]); routines taking CHARACTER arguments are declared
//! with the hidden length arguments gfortran appends.

pub mod signatures;
pub mod symbols;

use crate::real::Real;
use std::os::raw::{c_char, c_int};

symbols::system_routines! {
    fn dsterf_(n: *const c_int, d: *mut f64, e: *mut f64, info: *mut c_int);
    fn ssterf_(n: *const c_int, d: *mut f32, e: *mut f32, info: *mut c_int);
    fn dgtsv_(
        n: *const c_int,
        nrhs: *const c_int,
        dl: *mut f64,
        d: *mut f64,
        du: *mut f64,
        b: *mut f64,
        ldb: *const c_int,
        info: *mut c_int,
    );
    fn sgtsv_(
        n: *const c_int,
        nrhs: *const c_int,
        dl: *mut f32,
        d: *mut f32,
        du: *mut f32,
        b: *mut f32,
        ldb: *const c_int,
        info: *mut c_int,
    );
    fn dstebz_(
        range: *const c_char,
        order: *const c_char,
        n: *const c_int,
        vl: *const f64,
        vu: *const f64,
        il: *const c_int,
        iu: *const c_int,
        abstol: *const f64,
        d: *const f64,
        e: *const f64,
        m: *mut c_int,
        nsplit: *mut c_int,
        w: *mut f64,
        iblock: *mut c_int,
        isplit: *mut c_int,
        work: *mut f64,
        iwork: *mut c_int,
        info: *mut c_int,
        range_len: usize,
        order_len: usize,
    );
    fn sstebz_(
        range: *const c_char,
        order: *const c_char,
        n: *const c_int,
        vl: *const f32,
        vu: *const f32,
        il: *const c_int,
        iu: *const c_int,
        abstol: *const f32,
        d: *const f32,
        e: *const f32,
        m: *mut c_int,
        nsplit: *mut c_int,
        w: *mut f32,
        iblock: *mut c_int,
        isplit: *mut c_int,
        work: *mut f32,
        iwork: *mut c_int,
        info: *mut c_int,
        range_len: usize,
        order_len: usize,
    );
    fn dstemr_(
        jobz: *const c_char,
        range: *const c_char,
        n: *const c_int,
        d: *mut f64,
        e: *mut f64,
        vl: *const f64,
        vu: *const f64,
        il: *const c_int,
        iu: *const c_int,
        m: *mut c_int,
        w: *mut f64,
        z: *mut f64,
        ldz: *const c_int,
        nzc: *const c_int,
        isuppz: *mut c_int,
        tryrac: *mut c_int,
        work: *mut f64,
        lwork: *const c_int,
        iwork: *mut c_int,
        liwork: *const c_int,
        info: *mut c_int,
        jobz_len: usize,
        range_len: usize,
    );
    fn sstemr_(
        jobz: *const c_char,
        range: *const c_char,
        n: *const c_int,
        d: *mut f32,
        e: *mut f32,
        vl: *const f32,
        vu: *const f32,
        il: *const c_int,
        iu: *const c_int,
        m: *mut c_int,
        w: *mut f32,
        z: *mut f32,
        ldz: *const c_int,
        nzc: *const c_int,
        isuppz: *mut c_int,
        tryrac: *mut c_int,
        work: *mut f32,
        lwork: *const c_int,
        iwork: *mut c_int,
        liwork: *const c_int,
        info: *mut c_int,
        jobz_len: usize,
        range_len: usize,
    );
}

/// What LAPACK xSTEBZ returned besides its arrays.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StebzCounts {
    pub m: i32,
    pub nsplit: i32,
    pub info: i32,
}

/// The LAPACK routines hylapack falls back to or tests against, in one precision.
pub trait Lapack: Real {
    /// xSTEBZ on `n = d.len()`; `w`, `iblock`, `isplit` need `n` entries, `e` needs `n - 1`.
    #[allow(clippy::too_many_arguments)]
    fn stebz(
        range: u8,
        order: u8,
        vl: Self,
        vu: Self,
        il: i32,
        iu: i32,
        abstol: Self,
        d: &[Self],
        e: &[Self],
        w: &mut [Self],
        iblock: &mut [i32],
        isplit: &mut [i32],
    ) -> StebzCounts;
    /// xSTEBZ as [`Lapack::stebz`], on the caller's workspace: `work` needs `4 n` entries and
    /// `iwork` `3 n` (LAPACK's WORK and IWORK), so that nothing is allocated.
    #[allow(clippy::too_many_arguments)]
    fn stebz_in(
        range: u8,
        order: u8,
        vl: Self,
        vu: Self,
        il: i32,
        iu: i32,
        abstol: Self,
        d: &[Self],
        e: &[Self],
        w: &mut [Self],
        iblock: &mut [i32],
        isplit: &mut [i32],
        work: &mut [Self],
        iwork: &mut [i32],
    ) -> StebzCounts;
    /// xSTERF: all eigenvalues, ascending, overwriting `d`; `e` is destroyed. Returns INFO.
    fn sterf(d: &mut [Self], e: &mut [Self]) -> i32;
    /// xSTEMR with JOBZ = 'N', RANGE = 'A': all eigenvalues into `w`, ascending; `d` and `e`
    /// (n entries, the last unused) are destroyed. Returns (M, INFO).
    fn stemr_values(d: &mut [Self], e: &mut [Self], w: &mut [Self]) -> (i32, i32);
    /// xGTSV on `n = d.len()`: `dl`, `du` need `n - 1` entries, `b` is `ldb` x `nrhs`. Returns INFO.
    fn gtsv(
        dl: &mut [Self],
        d: &mut [Self],
        du: &mut [Self],
        b: &mut [Self],
        ldb: usize,
        nrhs: usize,
    ) -> i32;
}

/// Length-checked raw pointer for an array LAPACK may index up to `need` entries.
fn ptr_for<T>(s: &[T], need: usize) -> *const T {
    assert!(
        s.len() >= need,
        "array of {} entries, LAPACK needs {}",
        s.len(),
        need
    );
    s.as_ptr()
}

fn mut_ptr_for<T>(s: &mut [T], need: usize) -> *mut T {
    assert!(
        s.len() >= need,
        "array of {} entries, LAPACK needs {}",
        s.len(),
        need
    );
    s.as_mut_ptr()
}

macro_rules! impl_lapack {
    ($t:ty, $stebz:ident, $sterf:path, $stemr:ident, $gtsv:path) => {
        impl Lapack for $t {
            fn stebz(
                range: u8,
                order: u8,
                vl: Self,
                vu: Self,
                il: i32,
                iu: i32,
                abstol: Self,
                d: &[Self],
                e: &[Self],
                w: &mut [Self],
                iblock: &mut [i32],
                isplit: &mut [i32],
            ) -> StebzCounts {
                let n = d.len();
                let mut work = vec![<$t>::default(); 4 * n.max(1)];
                let mut iwork = vec![0i32; 3 * n.max(1)];
                Self::stebz_in(
                    range, order, vl, vu, il, iu, abstol, d, e, w, iblock, isplit, &mut work,
                    &mut iwork,
                )
            }

            fn stebz_in(
                range: u8,
                order: u8,
                vl: Self,
                vu: Self,
                il: i32,
                iu: i32,
                abstol: Self,
                d: &[Self],
                e: &[Self],
                w: &mut [Self],
                iblock: &mut [i32],
                isplit: &mut [i32],
                work: &mut [Self],
                iwork: &mut [i32],
            ) -> StebzCounts {
                let n = d.len();
                let (mut m, mut nsplit, mut info) = (0, 0, 0);
                let n_i = n as c_int;
                let (range, order) = (range as c_char, order as c_char);
                // SAFETY: every array pointer was checked to reach the entries LAPACK indexes.
                unsafe {
                    $stebz(
                        &range,
                        &order,
                        &n_i,
                        &vl,
                        &vu,
                        &il,
                        &iu,
                        &abstol,
                        ptr_for(d, n),
                        ptr_for(e, n.saturating_sub(1)),
                        &mut m,
                        &mut nsplit,
                        mut_ptr_for(w, n),
                        mut_ptr_for(iblock, n),
                        mut_ptr_for(isplit, n),
                        mut_ptr_for(work, 4 * n),
                        mut_ptr_for(iwork, 3 * n),
                        &mut info,
                        1,
                        1,
                    )
                };
                StebzCounts { m, nsplit, info }
            }

            fn sterf(d: &mut [Self], e: &mut [Self]) -> i32 {
                let n = d.len();
                let n_i = n as c_int;
                let mut info = 0;
                // SAFETY: d has n entries and e at least n - 1, as xSTERF reads.
                unsafe {
                    $sterf(
                        &n_i,
                        d.as_mut_ptr(),
                        mut_ptr_for(e, n.saturating_sub(1)),
                        &mut info,
                    )
                };
                info
            }

            fn stemr_values(d: &mut [Self], e: &mut [Self], w: &mut [Self]) -> (i32, i32) {
                let n = d.len();
                let (n_i, ldz, nzc, lwork, liwork) = (
                    n as c_int,
                    1 as c_int,
                    0 as c_int,
                    (12 * n).max(1) as c_int,
                    (8 * n).max(1) as c_int,
                );
                let mut work = vec![<$t>::default(); lwork as usize];
                let mut iwork = vec![0 as c_int; liwork as usize];
                let (mut m, mut info, mut tryrac) = (0, 0, 0);
                let (mut z, mut isuppz) = ([<$t>::default(); 1], [0 as c_int; 2]);
                let (zero, izero) = (<$t>::default(), 0 as c_int);
                let (jobz, range) = (b'N' as c_char, b'A' as c_char);
                // SAFETY: d, e and w hold n entries; workspaces have the sizes passed; Z and
                // ISUPPZ are not referenced for JOBZ = 'N'.
                unsafe {
                    $stemr(
                        &jobz,
                        &range,
                        &n_i,
                        mut_ptr_for(d, n),
                        mut_ptr_for(e, n),
                        &zero,
                        &zero,
                        &izero,
                        &izero,
                        &mut m,
                        mut_ptr_for(w, n),
                        z.as_mut_ptr(),
                        &ldz,
                        &nzc,
                        isuppz.as_mut_ptr(),
                        &mut tryrac,
                        work.as_mut_ptr(),
                        &lwork,
                        iwork.as_mut_ptr(),
                        &liwork,
                        &mut info,
                        1,
                        1,
                    )
                };
                (m, info)
            }

            fn gtsv(
                dl: &mut [Self],
                d: &mut [Self],
                du: &mut [Self],
                b: &mut [Self],
                ldb: usize,
                nrhs: usize,
            ) -> i32 {
                let n = d.len();
                let need_b = if n == 0 || nrhs == 0 {
                    0
                } else {
                    ldb * (nrhs - 1) + n
                };
                let (n_i, nrhs_i, ldb_i) = (n as c_int, nrhs as c_int, ldb.max(1) as c_int);
                let mut info = 0;
                // SAFETY: dl and du reach n - 1 entries, d n, b the ldb x nrhs columns xGTSV reads.
                unsafe {
                    $gtsv(
                        &n_i,
                        &nrhs_i,
                        mut_ptr_for(dl, n.saturating_sub(1)),
                        d.as_mut_ptr(),
                        mut_ptr_for(du, n.saturating_sub(1)),
                        mut_ptr_for(b, need_b),
                        &ldb_i,
                        &mut info,
                    )
                };
                info
            }
        }
    };
}

impl_lapack!(f64, dstebz_, dsterf_, dstemr_, dgtsv_);
impl_lapack!(f32, sstebz_, ssterf_, sstemr_, sgtsv_);

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

/// A column-major matrix operand: the slice starting at its first entry, and its leading
/// dimension.
pub type Mat<'a, T> = (&'a [T], usize);

fn c_int_of(x: usize) -> c_int {
    c_int::try_from(x).expect("dimension exceeds LAPACK's 32-bit INTEGER")
}

/// Entries a column-major `rows` x `cols` operand with leading dimension `ld` spans.
pub fn span(rows: usize, cols: usize, ld: usize) -> usize {
    if rows == 0 || cols == 0 {
        0
    } else {
        ld * (cols - 1) + rows
    }
}

/// The BLAS 3 and dense symmetric LAPACK routines of the band-reduction family, in one
/// precision. Characters are LAPACK's (`b'N'`, `b'T'`, `b'L'`, …); sizes are checked against
/// the slices before the call.
#[allow(clippy::too_many_arguments)]
pub trait Dense: Lapack + Triangular {
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
    /// xSYEVD with JOBZ = 'N'. Returns INFO.
    fn syevd_values(uplo: u8, n: usize, a: &mut [Self], lda: usize, w: &mut [Self]) -> i32;
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
                let (jobz, uplo) = (b'N' as c_char, uplo as c_char);
                let (n_, lda_) = (c_int_of(n), c_int_of(lda.max(1)));
                let mut work = vec![<$t>::default(); (34 * n).max(3 * n).max(1)];
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

            fn syevd_values(uplo: u8, n: usize, a: &mut [Self], lda: usize, w: &mut [Self]) -> i32 {
                let (jobz, uplo) = (b'N' as c_char, uplo as c_char);
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
                let (jobz, range, uplo) = (b'N' as c_char, range as c_char, uplo as c_char);
                let (n_, lda_, ldz) = (c_int_of(n), c_int_of(lda.max(1)), 1 as c_int);
                let mut work = vec![<$t>::default(); (8 * n).max(1)];
                let mut iwork = vec![0 as c_int; (5 * n).max(1)];
                let mut ifail = vec![0 as c_int; n.max(1)];
                let mut z = [<$t>::default()];
                let lwork = c_int_of(work.len());
                let (mut m, mut info) = (0, 0);
                // SAFETY: a spans n x n, w n; Z is not referenced for JOBZ = 'N'.
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
// LAPACK's LU (double precision) for the interval family's approximate inverse.
symbols::system_routines! {
    fn dgetrf_(
        m: *const c_int,
        n: *const c_int,
        a: *mut f64,
        lda: *const c_int,
        ipiv: *mut c_int,
        info: *mut c_int,
    );
    fn dgetrs_(
        trans: *const c_char,
        n: *const c_int,
        nrhs: *const c_int,
        a: *const f64,
        lda: *const c_int,
        ipiv: *const c_int,
        b: *mut f64,
        ldb: *const c_int,
        info: *mut c_int,
        trans_len: usize,
    );
}

fn blas_int(x: usize) -> c_int {
    c_int::try_from(x).expect("dimension exceeds the 32-bit BLAS integer")
}

/// LAPACK DGETRF on the n×n matrix `a` (leading dimension `lda`). Returns INFO.
pub fn dgetrf(n: usize, a: &mut [f64], lda: usize, ipiv: &mut [i32]) -> i32 {
    if n == 0 {
        return 0;
    }
    let a = mut_ptr_for(a, lda * (n - 1) + n);
    let ipiv = mut_ptr_for(ipiv, n);
    let (n, lda, mut info) = (blas_int(n), blas_int(lda), 0);
    // SAFETY: sizes checked above.
    unsafe { dgetrf_(&n, &n, a, &lda, ipiv, &mut info) };
    info
}

/// LAPACK DGETRS ('N') with the factors of [`dgetrf`]: overwrites the n×nrhs `b` with the
/// solution. Returns INFO.
pub fn dgetrs(
    n: usize,
    nrhs: usize,
    lu: &[f64],
    lda: usize,
    ipiv: &[i32],
    b: &mut [f64],
    ldb: usize,
) -> i32 {
    if n == 0 || nrhs == 0 {
        return 0;
    }
    let lu = ptr_for(lu, lda * (n - 1) + n);
    let ipiv = ptr_for(ipiv, n);
    let b = mut_ptr_for(b, ldb * (nrhs - 1) + n);
    let trans = b'N';
    let (n, nrhs, lda, ldb, mut info) =
        (blas_int(n), blas_int(nrhs), blas_int(lda), blas_int(ldb), 0);
    // SAFETY: sizes checked above; one CHARACTER of length 1.
    unsafe {
        dgetrs_(
            &trans as *const u8 as *const c_char,
            &n,
            &nrhs,
            lu,
            &lda,
            ipiv,
            b,
            &ldb,
            &mut info,
            1,
        )
    };
    info
}

// LAPACK's inverse iteration for tridiagonal eigenvectors (the `stein` family's reference).
macro_rules! impl_stein {
    ($t:ty, $stein:ident) => {
        symbols::system_routines! {
            fn $stein(
                n: *const c_int,
                d: *const $t,
                e: *const $t,
                m: *const c_int,
                w: *const $t,
                iblock: *const c_int,
                isplit: *const c_int,
                z: *mut $t,
                ldz: *const c_int,
                work: *mut $t,
                iwork: *mut c_int,
                ifail: *mut c_int,
                info: *mut c_int,
            );
        }

        impl LapackStein for $t {
            fn stein(
                n: i32,
                d: &[Self],
                e: &[Self],
                m: i32,
                w: &[Self],
                iblock: &[i32],
                isplit: &[i32],
                z: &mut [Self],
                ldz: i32,
                ifail: &mut [i32],
            ) -> i32 {
                // LAPACK zeroes IFAIL(1..M) before any check, and reads nothing else unless
                // N, M and LDZ are legal.
                let ifail_ptr = mut_ptr_for(ifail, m.max(0) as usize);
                let legal = n >= 0 && (0..=n).contains(&m) && ldz >= n.max(1);
                let (nu, mu, ldzu) = (n.max(0) as usize, m.max(0) as usize, ldz.max(1) as usize);
                let blocks = if legal && mu > 0 {
                    assert!(iblock.len() >= mu, "IBLOCK shorter than M");
                    // Blocks 1..=IBLOCK(M) are read (when IBLOCK is in order): their ISPLIT
                    // bounds must be increasing and inside 1..=N, or LAPACK reads past D.
                    let last = iblock[mu - 1].max(0) as usize;
                    assert!(
                        iblock[..mu].windows(2).any(|p| p[1] < p[0])
                            || (isplit.len() >= last
                                && isplit[..last].iter().all(|&s| (1..=n).contains(&s))
                                && isplit[..last].windows(2).all(|p| p[0] < p[1])),
                        "ISPLIT does not bound the blocks IBLOCK names inside 1..=N"
                    );
                    iblock[mu - 1].max(0) as usize
                } else {
                    0
                };
                let (need_d, need_e, need_m, need_z) = if legal {
                    (nu, nu.saturating_sub(1), mu, span(nu, mu, ldzu))
                } else {
                    (0, 0, 0, 0)
                };
                let mut work = vec![<$t>::default(); 5 * nu.max(1)];
                let mut iwork = vec![0 as c_int; nu.max(1)];
                let mut info = 0;
                // SAFETY: when N, M and LDZ are legal, every array reaches the entries xSTEIN
                // indexes (D N, E N − 1, W and IBLOCK M, ISPLIT the blocks IBLOCK names, Z
                // LDZ x M, WORK 5N, IWORK N); otherwise xSTEIN only writes IFAIL(1..M).
                unsafe {
                    $stein(
                        &n,
                        ptr_for(d, need_d),
                        ptr_for(e, need_e),
                        &m,
                        ptr_for(w, need_m),
                        ptr_for(iblock, need_m),
                        ptr_for(isplit, blocks),
                        mut_ptr_for(z, need_z),
                        &ldz,
                        work.as_mut_ptr(),
                        iwork.as_mut_ptr(),
                        ifail_ptr,
                        &mut info,
                    )
                };
                info
            }
        }
    };
}

/// LAPACK xSTEIN in one precision (the reference of [`crate::stein`]).
pub trait LapackStein: Real {
    /// xSTEIN as LAPACK declares it: the eigenvectors of the tridiagonal (D, E) of order `n`
    /// for the first `m` eigenvalues of `w` (grouped by the blocks `iblock` names, as xSTEBZ
    /// returns them with ORDER = 'B'), into the `ldz` x `m` array `z`; IFAIL into `ifail`
    /// (at least `m` entries). Returns INFO. The integers are passed as given, so illegal
    /// values reach LAPACK's own checks (and its `xerbla_`).
    #[allow(clippy::too_many_arguments)]
    fn stein(
        n: i32,
        d: &[Self],
        e: &[Self],
        m: i32,
        w: &[Self],
        iblock: &[i32],
        isplit: &[i32],
        z: &mut [Self],
        ldz: i32,
        ifail: &mut [i32],
    ) -> i32;
}

impl_stein!(f64, dstein_);
impl_stein!(f32, sstein_);
