//! The tridiagonal routines of the system LAPACK: xSTEBZ, xSTERF, xSTEMR (eigenvalues), xGTSV
//! (the solver) behind [`Lapack`], and xSTEIN (eigenvectors) behind [`LapackStein`].

use super::{mut_ptr_for, ptr_for, span, symbols};
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
                let nu = n.max(0) as usize;
                let mut work = vec![<$t>::default(); 5 * nu.max(1)];
                let mut iwork = vec![0 as c_int; nu.max(1)];
                Self::stein_in(
                    n, d, e, m, w, iblock, isplit, z, ldz, ifail, &mut work, &mut iwork,
                )
            }

            fn stein_in(
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
                work: &mut [Self],
                iwork: &mut [i32],
            ) -> i32 {
                // LAPACK zeroes IFAIL(1..M) before any check, and reads nothing else unless
                // N, M and LDZ are legal.
                let ifail_ptr = mut_ptr_for(ifail, m.max(0) as usize);
                let legal = n >= 0 && (0..=n).contains(&m) && ldz >= n.max(1);
                let (nu, mu, ldzu) = (n.max(0) as usize, m.max(0) as usize, ldz.max(1) as usize);
                assert!(
                    work.len() >= 5 * nu && iwork.len() >= nu,
                    "xSTEIN's workspace too short"
                );
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
    /// [`LapackStein::stein`] on the caller's WORK (5N) and IWORK (N), so that nothing is
    /// allocated.
    #[allow(clippy::too_many_arguments)]
    fn stein_in(
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
        work: &mut [Self],
        iwork: &mut [i32],
    ) -> i32;
}

impl_stein!(f64, dstein_);
impl_stein!(f32, sstein_);
