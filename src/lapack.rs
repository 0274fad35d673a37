//! The system LAPACK (OpenBLAS here), reached through lapack-sys: the CPU fallback and the
//! reference the tests compare against.
//!
//! lapack-sys declares Fortran routines without the hidden CHARACTER length arguments that
//! gfortran appends, so routines taking CHARACTER arguments are declared here with them.

use crate::real::Real;
use std::os::raw::{c_char, c_int};

extern "C" {
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
                        work.as_mut_ptr(),
                        iwork.as_mut_ptr(),
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

impl_lapack!(
    f64,
    dstebz_,
    lapack_sys::dsterf_,
    dstemr_,
    lapack_sys::dgtsv_
);
impl_lapack!(
    f32,
    sstebz_,
    lapack_sys::ssterf_,
    sstemr_,
    lapack_sys::sgtsv_
);

// Dense BLAS/LAPACK (double precision) for the interval family: round-to-nearest products
// whose error is bounded a priori, and the LU factorization behind the approximate inverse.
extern "C" {
    fn dgemm_(
        transa: *const c_char,
        transb: *const c_char,
        m: *const c_int,
        n: *const c_int,
        k: *const c_int,
        alpha: *const f64,
        a: *const f64,
        lda: *const c_int,
        b: *const f64,
        ldb: *const c_int,
        beta: *const f64,
        c: *mut f64,
        ldc: *const c_int,
        transa_len: usize,
        transb_len: usize,
    );
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

/// BLAS DGEMM: `C := alpha·op(A)·op(B) + beta·C`, `op(A)` m×k, `op(B)` k×n, column-major.
#[allow(clippy::too_many_arguments)]
pub fn dgemm(
    trans_a: bool,
    trans_b: bool,
    m: usize,
    n: usize,
    k: usize,
    alpha: f64,
    a: &[f64],
    lda: usize,
    b: &[f64],
    ldb: usize,
    beta: f64,
    c: &mut [f64],
    ldc: usize,
) {
    if m == 0 || n == 0 {
        return;
    }
    let (ta, tb) = (if trans_a { b'T' } else { b'N' }, if trans_b { b'T' } else { b'N' });
    let a_cols = if trans_a { m } else { k };
    let b_cols = if trans_b { k } else { n };
    let need = |ld: usize, cols: usize| if cols == 0 { 0 } else { ld * (cols - 1) + 1 };
    let (a, b) = (ptr_for(a, need(lda, a_cols)), ptr_for(b, need(ldb, b_cols)));
    let c = mut_ptr_for(c, ldc * (n - 1) + m);
    let (m, n, k) = (blas_int(m), blas_int(n), blas_int(k));
    let (lda, ldb, ldc) = (blas_int(lda), blas_int(ldb), blas_int(ldc));
    // SAFETY: the arrays hold what DGEMM indexes (checked above); the characters are single
    // bytes with their lengths passed.
    unsafe {
        dgemm_(
            &ta as *const u8 as *const c_char,
            &tb as *const u8 as *const c_char,
            &m, &n, &k, &alpha, a, &lda, b, &ldb, &beta, c, &ldc, 1, 1,
        )
    };
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
pub fn dgetrs(n: usize, nrhs: usize, lu: &[f64], lda: usize, ipiv: &[i32], b: &mut [f64], ldb: usize) -> i32 {
    if n == 0 || nrhs == 0 {
        return 0;
    }
    let lu = ptr_for(lu, lda * (n - 1) + n);
    let ipiv = ptr_for(ipiv, n);
    let b = mut_ptr_for(b, ldb * (nrhs - 1) + n);
    let trans = b'N';
    let (n, nrhs, lda, ldb, mut info) = (blas_int(n), blas_int(nrhs), blas_int(lda), blas_int(ldb), 0);
    // SAFETY: sizes checked above; one CHARACTER of length 1.
    unsafe {
        dgetrs_(&trans as *const u8 as *const c_char, &n, &nrhs, lu, &lda, ipiv, b, &ldb, &mut info, 1)
    };
    info
}
