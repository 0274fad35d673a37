//! The dense symmetric eigenvalue drivers xSYEV, xSYEV_2STAGE, xSYEVD, xSYEVX and xSYEVR with
//! JOBZ = 'N', and xSYEV and xSYEVD with JOBZ = 'V': the band-reduction path where the route
//! says so, else forwarded.
//!
//! Before running, a call passes LAPACK's checks of its own driver, in LAPACK's order,
//! workspace sizes included (for JOBZ = 'V' those of JOBZ = 'V'); a call that fails one is
//! forwarded so that LAPACK reports it. Afterwards WORK(1) (and IWORK(1)) hold what LAPACK
//! leaves there, the optimal sizes, which a workspace query to the program's LAPACK supplies.
//! N ≤ 1 is forwarded (LAPACK's answer is trivial, and its minimal workspace for N = 1 differs
//! between LAPACK versions).
//!
//! Eigenvectors ([`syev::syev_vectors`]): xSYEV and xSYEVD with JOBZ = 'V' run it where the
//! route says so, as JOBZ = 'N' does (the eigenvectors over A, as LAPACK leaves them; on an
//! H200 host at n = 4096 the path took 0.61 s where the host's LAPACK dsyevd took 4.49 s in
//! the same run, docs/bench/2026-11-26-h200-session18.txt); a triangle holding a NaN or ±Inf
//! is forwarded
//! (LAPACK's INFO and output then depend on its own algorithm, which differs between DSYEV and
//! DSYEVD). xSYEV_2STAGE with JOBZ = 'V' is forwarded (LAPACK 3.11 rejects it), as are xSYEVX
//! and xSYEVR with JOBZ = 'V'.

use crate::{forward, route, run_logged, set_info, Inside, Route, FROM_INSIDE, ILLEGAL, NULL_ARG};
use hylapack::api::fortran_char;
use hylapack::dispatch::{Backend, Family};
use hylapack::lapack::signatures::{SyevFn, SyevdFn, SyevrFn, SyevxFn};
use hylapack::lapack::span;
use hylapack::real::Real;
use hylapack::sbr::Path;
use hylapack::sbr::SbrReal;
use hylapack::syev::{self, EigReport};
use std::ffi::{c_char, c_int};

/// The driver an intercepted name is, for its workspace rule.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Driver {
    Syev,
    Syev2stage,
    Syevd,
    Syevx,
    Syevr,
}

impl Driver {
    /// Whether JOBZ = 'V' runs here: xSYEV and xSYEVD ([`syev::syev_vectors`]); xSYEV_2STAGE
    /// with JOBZ = 'V' is LAPACK's (3.11 rejects it), as are xSYEVX and xSYEVR with JOBZ = 'V'.
    fn vectors_here(self) -> bool {
        matches!(self, Driver::Syev | Driver::Syevd)
    }

    /// LAPACK's least LWORK and LIWORK for N ≥ 2 (JOBZ = 'V' if `wantz`, else 'N');
    /// `queried_work` is WORK(1) of a workspace query, which xSYEV_2STAGE's minimum depends on
    /// (through ILAENV2STAGE).
    fn least_workspace(self, wantz: bool, n: i64, queried_work: i64) -> (i64, i64) {
        match self {
            Driver::Syev => (3 * n - 1, 0),
            Driver::Syev2stage => (queried_work, 0),
            Driver::Syevd if wantz => (1 + 6 * n + 2 * n * n, 3 + 5 * n),
            Driver::Syevd => (2 * n + 1, 1),
            Driver::Syevx => (8 * n, 0),
            Driver::Syevr => (26 * n, 10 * n),
        }
    }
}

/// The caller's workspace: WORK and LWORK, and IWORK and LIWORK where the driver has them.
#[derive(Clone, Copy)]
struct Workspace<T> {
    work: *mut T,
    lwork: c_int,
    iwork: *mut c_int,
    liwork: Option<c_int>,
}

impl<T: Real> Workspace<T> {
    /// `Err(why)` for a NULL length or a workspace query (LAPACK answers queries).
    unsafe fn read(
        work: *mut T,
        lwork: *const c_int,
        iwork: *mut c_int,
        liwork: Option<*const c_int>,
    ) -> Result<Self, &'static str> {
        let lwork = *lwork.as_ref().ok_or(NULL_ARG)?;
        let liwork = match liwork {
            Some(p) => Some(*p.as_ref().ok_or(NULL_ARG)?),
            None => None,
        };
        if lwork == -1 || liwork == Some(-1) {
            return Err("a workspace query");
        }
        Ok(Workspace {
            work,
            lwork,
            iwork,
            liwork,
        })
    }

    /// Checks the sizes against `driver`'s least ones (JOBZ = 'V' if `wantz`), given the
    /// optimal sizes a query gave.
    fn enough(
        &self,
        driver: Driver,
        wantz: bool,
        n: usize,
        optimal: (T, c_int),
    ) -> Result<(), &'static str> {
        let queried = optimal.0.to_f64() as i64;
        let (least_work, least_iwork) = driver.least_workspace(wantz, n as i64, queried);
        let short = i64::from(self.lwork) < least_work
            || self.liwork.is_some_and(|l| i64::from(l) < least_iwork);
        if short {
            Err(ILLEGAL)
        } else {
            Ok(())
        }
    }

    /// Leaves the optimal sizes in WORK(1) and IWORK(1), as LAPACK does on return.
    unsafe fn store_optimal(&self, optimal: (T, c_int)) {
        if !self.work.is_null() {
            *self.work = optimal.0;
        }
        if self.liwork.is_some() && !self.iwork.is_null() {
            *self.iwork = optimal.1;
        }
    }
}

/// The band-reduction path for `backend`.
fn path_for(backend: Backend) -> Path {
    match backend {
        Backend::Gpu => Path::Gpu { budget: None },
        Backend::Cpu => Path::CpuBlocked { budget: u64::MAX },
    }
}

/// Runs an eigenvalue driver, logged under the name the program called; returns (INFO, M).
fn run_driver(routine: &str, n: usize, f: impl FnOnce() -> EigReport) -> (c_int, c_int) {
    let outcome = |r: &EigReport| {
        let note = r.reduction.as_ref().and_then(|x| x.note.clone());
        (r.info, r.backend(), note)
    };
    match run_logged(routine, n, f, outcome) {
        Ok(r) => (r.info, r.m),
        Err(info) => (info, 0),
    }
}

/// The scalars of an xSYEV-shaped call that hylapack runs, or why it is forwarded.
struct AllValues {
    wantz: bool,
    uplo: u8,
    n: usize,
    lda: usize,
}

/// The checks of xSYEV, xSYEV_2STAGE and xSYEVD up to the workspace, and the route; JOBZ =
/// 'V' is taken only where `vectors` says so ([`Driver::vectors_here`]).
unsafe fn all_values_route(
    (jobz, uplo, n, lda): (*const c_char, *const c_char, *const c_int, *const c_int),
    a_and_w: bool,
    vectors: bool,
) -> Result<(AllValues, Backend), String> {
    let (Some(&n), Some(&lda)) = (n.as_ref(), lda.as_ref()) else {
        return Err(NULL_ARG.into());
    };
    let (jobz, uplo) = (fortran_char(jobz), fortran_char(uplo));
    let wantz = jobz.eq_ignore_ascii_case(&b'V');
    if wantz && !vectors {
        return Err("JOBZ = 'V' (eigenvectors are LAPACK's)".into());
    }
    if syev::syev_check(jobz, uplo, n, lda, -1) != 0 || !a_and_w {
        return Err(ILLEGAL.into());
    }
    if n <= 1 {
        return Err("N <= 1".into());
    }
    let (n, lda) = (n as usize, lda as usize);
    match route(Family::Syrdb, n) {
        Route::Here(backend) => Ok((
            AllValues {
                wantz,
                uplo,
                n,
                lda,
            },
            backend,
        )),
        Route::Forward(why) => Err(why),
    }
}

/// Whether the `uplo` triangle of the n x n `a` holds a NaN or ±Inf.
fn triangle_not_finite<T: Real>(uplo: u8, n: usize, a: &[T], lda: usize) -> bool {
    let upper = uplo.eq_ignore_ascii_case(&b'U');
    (0..n).any(|j| {
        let rows = if upper { 0..j + 1 } else { j..n };
        a[j * lda + rows.start..j * lda + rows.end]
            .iter()
            .any(|x| !x.to_f64().is_finite())
    })
}

/// Runs xSYEV / xSYEV_2STAGE / xSYEVD here if it should: JOBZ = 'N', or JOBZ = 'V' where
/// [`Driver::vectors_here`]; `query` asks the program's LAPACK for the optimal (WORK(1),
/// IWORK(1)). Returns INFO, or why it is forwarded.
#[allow(clippy::too_many_arguments)]
unsafe fn all_values<T: SbrReal>(
    routine: &str,
    driver: Driver,
    scalars: (*const c_char, *const c_char, *const c_int, *const c_int),
    a: *mut T,
    w: *mut T,
    workspace: Result<Workspace<T>, &'static str>,
    query: impl FnOnce() -> Option<(T, c_int)>,
) -> Result<c_int, String> {
    let a_and_w = !a.is_null() && !w.is_null();
    let (call, backend) = all_values_route(scalars, a_and_w, driver.vectors_here())?;
    let workspace = workspace?;
    let optimal = query().ok_or("the workspace query failed")?;
    workspace.enough(driver, call.wantz, call.n, optimal)?;
    let a = std::slice::from_raw_parts_mut(a, span(call.n, call.n, call.lda));
    let w = std::slice::from_raw_parts_mut(w, call.n);
    // With a NaN or ±Inf, INFO and the output are those of LAPACK's own algorithm, which for
    // eigenvectors differs between xSYEV and xSYEVD (syev_vectors would run xSYEV's): the
    // program's LAPACK answers, with the caller's workspace.
    if call.wantz && triangle_not_finite(call.uplo, call.n, a, call.lda) {
        return Err("a NaN or Inf in A (LAPACK's answer)".into());
    }
    let (info, _) = run_driver(routine, call.n, || {
        let path = path_for(backend);
        if call.wantz {
            // INFO = −1000 (no host memory) is returned, never forwarded: A may be destroyed.
            syev::syev_vectors::<T>(call.uplo, call.n, a, call.lda, w, path)
        } else {
            syev::syev::<T>(call.uplo, call.n, a, call.lda, w, path)
        }
    });
    workspace.store_optimal(optimal);
    Ok(info)
}

/// The scalar arguments of xSYEVX and xSYEVR.
struct Selected<T> {
    jobz: *const c_char,
    range: *const c_char,
    uplo: *const c_char,
    n: *const c_int,
    lda: *const c_int,
    vl: *const T,
    vu: *const T,
    il: *const c_int,
    iu: *const c_int,
    abstol: *const T,
    ldz: *const c_int,
}

/// Runs xSYEVX / xSYEVR with JOBZ = 'N' here if it should (as [`all_values`]); stores M.
#[allow(clippy::too_many_arguments)]
unsafe fn selected_values<T: SbrReal>(
    routine: &str,
    driver: Driver,
    s: &Selected<T>,
    a: *mut T,
    m: *mut c_int,
    w: *mut T,
    workspace: Result<Workspace<T>, &'static str>,
    query: impl FnOnce() -> Option<(T, c_int)>,
) -> Result<c_int, String> {
    let (jobz, range, uplo) = (
        fortran_char(s.jobz),
        fortran_char(s.range),
        fortran_char(s.uplo),
    );
    let needs_v = range.eq_ignore_ascii_case(&b'V');
    let needs_i = range.eq_ignore_ascii_case(&b'I');
    let scalars = (s.n.as_ref(), s.lda.as_ref(), s.ldz.as_ref());
    let (Some(&n), Some(&lda), Some(&ldz)) = scalars else {
        return Err(NULL_ARG.into());
    };
    let abstol = *s.abstol.as_ref().ok_or(NULL_ARG)?;
    let (vl, vu) = match (s.vl.as_ref(), s.vu.as_ref()) {
        (Some(l), Some(u)) => (*l, *u),
        _ if !needs_v => (T::ZERO, T::ZERO),
        _ => return Err(NULL_ARG.into()),
    };
    let (il, iu) = match (s.il.as_ref(), s.iu.as_ref()) {
        (Some(l), Some(u)) => (*l, *u),
        _ if !needs_i => (0, 0),
        _ => return Err(NULL_ARG.into()),
    };
    if !jobz.eq_ignore_ascii_case(&b'N') {
        return Err("JOBZ = 'V' (eigenvectors are LAPACK's)".into());
    }
    if syev::syevx_check(jobz, range, uplo, n, lda, vl, vu, il, iu, ldz, -1) != 0 {
        return Err(ILLEGAL.into());
    }
    if a.is_null() || w.is_null() || m.is_null() {
        return Err(NULL_ARG.into());
    }
    if n <= 1 {
        return Err("N <= 1".into());
    }
    let (n, lda) = (n as usize, lda as usize);
    let backend = match route(Family::Syrdb, n) {
        Route::Here(backend) => backend,
        Route::Forward(why) => return Err(why),
    };
    let workspace = workspace?;
    let optimal = query().ok_or("the workspace query failed")?;
    workspace.enough(driver, false, n, optimal)?;
    let a = std::slice::from_raw_parts_mut(a, span(n, n, lda));
    let w = std::slice::from_raw_parts_mut(w, n);
    let (info, found) = run_driver(routine, n, || {
        syev::syevx::<T>(
            range,
            uplo,
            n,
            a,
            lda,
            vl,
            vu,
            il,
            iu,
            abstol,
            w,
            path_for(backend),
        )
    });
    *m = found;
    workspace.store_optimal(optimal);
    Ok(info)
}

/// Calls the program's LAPACK routine `f` as a workspace query (LWORK = LIWORK = −1) and
/// returns what it left in (WORK(1), IWORK(1)), or `None` if it failed or is missing.
fn optimal_workspace<T: Real>(
    f: Option<usize>,
    call: impl FnOnce(usize, *mut T, *mut c_int, *mut c_int),
) -> Option<(T, c_int)> {
    let (mut work, mut iwork, mut info) = (T::ZERO, 0, 0);
    call(f?, &mut work, &mut iwork, &mut info);
    (info == 0).then_some((work, iwork))
}

/// The next definition of `name` (NUL-terminated), found once per call site.
macro_rules! next_definition {
    ($name:ident) => {{
        static NEXT: std::sync::OnceLock<Option<usize>> = std::sync::OnceLock::new();
        *NEXT.get_or_init(|| crate::forward_target(concat!(stringify!($name), "\0").as_bytes()))
    }};
}

macro_rules! interpose_syev {
    ($name:ident, $t:ty, $routine:literal, $driver:expr) => {
        /// LAPACK's xSYEV (or xSYEV_2STAGE), interposed: JOBZ = 'N' (and 'V' for xSYEV) on
        /// the band-reduction path where the route says so, else forwarded.
        #[no_mangle]
        pub unsafe extern "C" fn $name(
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
        ) {
            let why = match Inside::enter() {
                None => FROM_INSIDE.to_string(),
                Some(_inside) => {
                    let query = || {
                        optimal_workspace::<$t>(next_definition!($name), |f, wk, _, inf| {
                            let f: SyevFn<$t> = std::mem::transmute(f);
                            f(jobz, uplo, n, a, lda, w, wk, &-1, inf, 1, 1)
                        })
                    };
                    let workspace = Workspace::read(work, lwork, std::ptr::null_mut(), None);
                    let scalars = (jobz, uplo, n, lda);
                    match all_values::<$t>($routine, $driver, scalars, a, w, workspace, query) {
                        Ok(r) => return set_info(info, r),
                        Err(why) => why,
                    }
                }
            };
            forward!(
                $name,
                SyevFn<$t>,
                $routine,
                n,
                &why,
                info,
                (jobz, uplo, n, a, lda, w, work, lwork, info, jobz_len, uplo_len)
            )
        }
    };
}

interpose_syev!(dsyev_, f64, "DSYEV", Driver::Syev);
interpose_syev!(ssyev_, f32, "SSYEV", Driver::Syev);
interpose_syev!(dsyev_2stage_, f64, "DSYEV_2STAGE", Driver::Syev2stage);
interpose_syev!(ssyev_2stage_, f32, "SSYEV_2STAGE", Driver::Syev2stage);

macro_rules! interpose_syevd {
    ($name:ident, $t:ty, $routine:literal) => {
        /// LAPACK's xSYEVD, interposed: JOBZ = 'N' or 'V' on the band-reduction path where the
        /// route says so, else forwarded.
        #[no_mangle]
        pub unsafe extern "C" fn $name(
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
        ) {
            let why = match Inside::enter() {
                None => FROM_INSIDE.to_string(),
                Some(_inside) => {
                    let query = || {
                        optimal_workspace::<$t>(next_definition!($name), |f, wk, iwk, inf| {
                            let f: SyevdFn<$t> = std::mem::transmute(f);
                            f(jobz, uplo, n, a, lda, w, wk, &-1, iwk, &-1, inf, 1, 1)
                        })
                    };
                    let workspace = Workspace::read(work, lwork, iwork, Some(liwork));
                    let scalars = (jobz, uplo, n, lda);
                    let driver = Driver::Syevd;
                    match all_values::<$t>($routine, driver, scalars, a, w, workspace, query) {
                        Ok(r) => return set_info(info, r),
                        Err(why) => why,
                    }
                }
            };
            forward!(
                $name,
                SyevdFn<$t>,
                $routine,
                n,
                &why,
                info,
                (jobz, uplo, n, a, lda, w, work, lwork, iwork, liwork, info, jobz_len, uplo_len)
            )
        }
    };
}

interpose_syevd!(dsyevd_, f64, "DSYEVD");
interpose_syevd!(ssyevd_, f32, "SSYEVD");

macro_rules! interpose_syevx {
    ($name:ident, $t:ty, $routine:literal) => {
        /// LAPACK's xSYEVX, interposed: JOBZ = 'N' on the band-reduction path (then
        /// bisection) where the route says so, else forwarded.
        #[no_mangle]
        pub unsafe extern "C" fn $name(
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
        ) {
            let why = match Inside::enter() {
                None => FROM_INSIDE.to_string(),
                Some(_inside) => {
                    let query = || {
                        optimal_workspace::<$t>(next_definition!($name), |f, wk, _, inf| {
                            let f: SyevxFn<$t> = std::mem::transmute(f);
                            f(
                                jobz, range, uplo, n, a, lda, vl, vu, il, iu, abstol, m, w, z, ldz,
                                wk, &-1, iwork, ifail, inf, 1, 1, 1,
                            )
                        })
                    };
                    let workspace = Workspace::read(work, lwork, std::ptr::null_mut(), None);
                    let s = Selected {
                        jobz,
                        range,
                        uplo,
                        n,
                        lda,
                        vl,
                        vu,
                        il,
                        iu,
                        abstol,
                        ldz,
                    };
                    let driver = Driver::Syevx;
                    match selected_values::<$t>($routine, driver, &s, a, m, w, workspace, query) {
                        Ok(r) => return set_info(info, r),
                        Err(why) => why,
                    }
                }
            };
            forward!(
                $name,
                SyevxFn<$t>,
                $routine,
                n,
                &why,
                info,
                (
                    jobz, range, uplo, n, a, lda, vl, vu, il, iu, abstol, m, w, z, ldz, work,
                    lwork, iwork, ifail, info, jobz_len, range_len, uplo_len
                )
            )
        }
    };
}

interpose_syevx!(dsyevx_, f64, "DSYEVX");
interpose_syevx!(ssyevx_, f32, "SSYEVX");

macro_rules! interpose_syevr {
    ($name:ident, $t:ty, $routine:literal) => {
        /// LAPACK's xSYEVR, interposed: JOBZ = 'N' on the band-reduction path (then bisection
        /// or xSTERF) where the route says so, else forwarded. ISUPPZ is not referenced for
        /// JOBZ = 'N'.
        #[no_mangle]
        pub unsafe extern "C" fn $name(
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
        ) {
            let why = match Inside::enter() {
                None => FROM_INSIDE.to_string(),
                Some(_inside) => {
                    let query = || {
                        optimal_workspace::<$t>(next_definition!($name), |f, wk, iwk, inf| {
                            let f: SyevrFn<$t> = std::mem::transmute(f);
                            f(
                                jobz, range, uplo, n, a, lda, vl, vu, il, iu, abstol, m, w, z, ldz,
                                isuppz, wk, &-1, iwk, &-1, inf, 1, 1, 1,
                            )
                        })
                    };
                    let workspace = Workspace::read(work, lwork, iwork, Some(liwork));
                    let s = Selected {
                        jobz,
                        range,
                        uplo,
                        n,
                        lda,
                        vl,
                        vu,
                        il,
                        iu,
                        abstol,
                        ldz,
                    };
                    let driver = Driver::Syevr;
                    match selected_values::<$t>($routine, driver, &s, a, m, w, workspace, query) {
                        Ok(r) => return set_info(info, r),
                        Err(why) => why,
                    }
                }
            };
            forward!(
                $name,
                SyevrFn<$t>,
                $routine,
                n,
                &why,
                info,
                (
                    jobz, range, uplo, n, a, lda, vl, vu, il, iu, abstol, m, w, z, ldz, isuppz,
                    work, lwork, iwork, liwork, info, jobz_len, range_len, uplo_len
                )
            )
        }
    };
}

interpose_syevr!(dsyevr_, f64, "DSYEVR");
interpose_syevr!(ssyevr_, f32, "SSYEVR");
