//! `libhylapack_preload.so`: standard LAPACK names for `LD_PRELOAD` (or for linking before
//! `-llapack`). Each one runs hylapack's path or forwards the call, untouched, to the next
//! definition of the same symbol (`dlsym(RTLD_NEXT, …)`), never to itself.
//!
//! While hylapack's own code runs, a thread-local flag is set: a LAPACK call hylapack makes
//! internally (its CPU fallbacks) reaches these same symbols and is then forwarded at once.
//! If no next definition exists, the library named by `HYLAPACK_CPU_LAPACK` is searched, and
//! failing that the call reports the problem on stderr and sets INFO = -1000.
//!
//! Interposed: xSTEBZ (always hylapack's path, which returns LAPACK's outputs); xGTSV (only
//! when the dispatch policy runs it on the GPU; forwarded otherwise, with a log line); and
//! DSYEV, SSYEV, DSYEV_2STAGE, DSYEVD, DSYEVX, DSYEVR with JOBZ = 'N' (the band-reduction path
//! when dispatch sends it to the GPU; forwarded otherwise, and always for JOBZ = 'V' and
//! workspace queries).

use hylapack::api::fortran_char;
use hylapack::api::HYLAPACK_INFO_INTERNAL_ERROR;
use hylapack::dispatch;
use hylapack::lapack::span;
use hylapack::lapack::Dense;
use hylapack::real::Real;
use hylapack::sbr::gpu::CublasReal;
use hylapack::sbr::syev::{self, EigReport};
use hylapack::sbr::Path;
use std::cell::Cell;
use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::sync::OnceLock;

/// The version of the preload library (a static NUL-terminated string).
#[no_mangle]
pub extern "C" fn hylapack_preload_version() -> *const c_char {
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr() as *const c_char
}

thread_local! {
    static INSIDE_HYLAPACK: Cell<bool> = const { Cell::new(false) };
}

/// Marks the calling thread as inside hylapack until dropped (also on unwind).
struct Inside;

impl Inside {
    fn enter() -> Option<Inside> {
        INSIDE_HYLAPACK.with(|c| (!c.replace(true)).then_some(Inside))
    }
}

impl Drop for Inside {
    fn drop(&mut self) {
        INSIDE_HYLAPACK.with(|c| c.set(false));
    }
}

/// The next definition of `name` after this library, or in `HYLAPACK_CPU_LAPACK`.
fn next_definition(name: &CStr) -> Option<*mut c_void> {
    // SAFETY: dlsym with RTLD_NEXT and a NUL-terminated name only looks a symbol up.
    let next = unsafe { libc::dlsym(libc::RTLD_NEXT, name.as_ptr()) };
    if !next.is_null() {
        return Some(next);
    }
    let path = CString::new(std::env::var("HYLAPACK_CPU_LAPACK").ok()?).ok()?;
    // SAFETY: dlopen of a user-named library; the handle is kept for the process's lifetime.
    let handle = unsafe { libc::dlopen(path.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
    if handle.is_null() {
        return None;
    }
    // SAFETY: as above, a plain symbol lookup in that library.
    let sym = unsafe { libc::dlsym(handle, name.as_ptr()) };
    (!sym.is_null()).then_some(sym)
}

/// The next definition of the NUL-terminated `name`, unless it is `own` (this very function,
/// e.g. when HYLAPACK_CPU_LAPACK names this library).
fn forward_target(name: &[u8], own: usize) -> Option<usize> {
    let name = CStr::from_bytes_with_nul(name).ok()?;
    next_definition(name)
        .map(|p| p as usize)
        .filter(|&p| p != own)
}

fn no_next_definition(name: &str, info: *mut c_int) {
    eprintln!(
        "hylapack_preload: no LAPACK to forward {name} to: link the program against LAPACK or set HYLAPACK_CPU_LAPACK to a LAPACK library"
    );
    if !info.is_null() {
        // SAFETY: INFO is the caller's output integer.
        unsafe { *info = HYLAPACK_INFO_INTERNAL_ERROR };
    }
}

/// Forwards the call to the next definition of `$name` (found once, never this function),
/// arguments unchanged; reports the problem if there is none.
macro_rules! forward {
    ($name:ident, $fty:ty, $info:expr, ($($arg:expr),* $(,)?)) => {{
        static NEXT: OnceLock<Option<usize>> = OnceLock::new();
        let next = NEXT.get_or_init(|| {
            forward_target(concat!(stringify!($name), "\0").as_bytes(), $name as $fty as usize)
        });
        match *next {
            // SAFETY: `next` is the next definition of this very symbol, so it has this
            // signature; the arguments, hidden lengths included, pass through unchanged.
            Some(p) => {
                let f: $fty = std::mem::transmute(p);
                f($($arg),*)
            }
            None => no_next_definition(stringify!($name), $info),
        }
    }};
}

/// `Ok` if dispatch sends `family` at order `n` to the GPU, else why not.
fn gpu_decided(family: dispatch::Family, n: usize) -> Result<(), String> {
    let decision = dispatch::decide(family, n);
    match decision.backend {
        dispatch::Backend::Gpu => Ok(()),
        dispatch::Backend::Cpu => Err(decision.why_not_gpu.unwrap_or_default()),
    }
}

/// The log line (HYLAPACK_LOG=info) of an intercepted call that is forwarded, and why.
unsafe fn log_forward(routine: &str, n: *const c_int, why: &str) {
    let n = n.as_ref().map_or(0, |&n| n.max(0) as usize);
    dispatch::finish_call(
        routine,
        n,
        dispatch::Backend::Cpu,
        std::time::Duration::ZERO,
        Some(&format!("forwarded to the system LAPACK: {why}")),
    );
}

/// Why a call is forwarded when hylapack's own code made it.
const FROM_INSIDE: &str = "a call from inside hylapack";

type StebzFn<T> = unsafe extern "C" fn(
    *const c_char,
    *const c_char,
    *const c_int,
    *const T,
    *const T,
    *const c_int,
    *const c_int,
    *const T,
    *const T,
    *const T,
    *mut c_int,
    *mut c_int,
    *mut T,
    *mut c_int,
    *mut c_int,
    *mut T,
    *mut c_int,
    *mut c_int,
    usize,
    usize,
);

macro_rules! interpose_stebz {
    ($name:ident, $t:ty, $routine:literal) => {
        /// LAPACK's xSTEBZ, interposed: hylapack's multisection path, or forwarded.
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            range: *const c_char,
            order: *const c_char,
            n: *const c_int,
            vl: *const $t,
            vu: *const $t,
            il: *const c_int,
            iu: *const c_int,
            abstol: *const $t,
            d: *const $t,
            e: *const $t,
            m: *mut c_int,
            nsplit: *mut c_int,
            w: *mut $t,
            iblock: *mut c_int,
            isplit: *mut c_int,
            work: *mut $t,
            iwork: *mut c_int,
            info: *mut c_int,
            range_len: usize,
            order_len: usize,
        ) {
            let why = match Inside::enter() {
                None => FROM_INSIDE,
                Some(_inside) => {
                    let ran = hylapack::api::stebz::interposed::<$t>(
                        $routine, range, order, n, vl, vu, il, iu, abstol, d, e, m, nsplit, w,
                        iblock, isplit,
                    );
                    if let Some(result) = ran {
                        if !info.is_null() {
                            *info = result;
                        }
                        return;
                    }
                    "an illegal argument, which LAPACK reports"
                }
            };
            log_forward($routine, n, why);
            forward!(
                $name,
                StebzFn<$t>,
                info,
                (
                    range, order, n, vl, vu, il, iu, abstol, d, e, m, nsplit, w, iblock, isplit,
                    work, iwork, info, range_len, order_len
                )
            )
        }
    };
}

interpose_stebz!(dstebz_, f64, "DSTEBZ");
interpose_stebz!(sstebz_, f32, "SSTEBZ");

type GtsvFn<T> = unsafe extern "C" fn(
    *const c_int,
    *const c_int,
    *mut T,
    *mut T,
    *mut T,
    *mut T,
    *const c_int,
    *mut c_int,
);

/// Whether an intercepted xGTSV runs hylapack's path: only when the dispatch policy sends it to
/// the GPU. Otherwise (the CPU path would be the system LAPACK anyway, and LAPACK's DL/D/DU
/// outputs are its LU factors, which hylapack's SPIKE factors are not) it is forwarded. Illegal
/// arguments are forwarded too, so LAPACK reports them as usual.
unsafe fn gtsv_runs_here(
    n: *const c_int,
    nrhs: *const c_int,
    ldb: *const c_int,
) -> Result<(), String> {
    let (Some(n), Some(nrhs), Some(ldb)) = (n.as_ref(), nrhs.as_ref(), ldb.as_ref()) else {
        return Err("a NULL argument, which LAPACK reports".into());
    };
    if hylapack::gtsv::check_args(*n, *nrhs, *ldb) != 0 {
        return Err("an illegal argument, which LAPACK reports".into());
    }
    gpu_decided(dispatch::Family::Gtsv, *n as usize)
}

macro_rules! interpose_gtsv {
    ($name:ident, $t:ty, $routine:literal, $spike:path) => {
        /// LAPACK's xGTSV, interposed: hylapack's SPIKE path when it runs on the GPU (then
        /// DL, D and DU hold hylapack's factors, not LAPACK's LU factors), else forwarded.
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            n: *const c_int,
            nrhs: *const c_int,
            dl: *mut $t,
            d: *mut $t,
            du: *mut $t,
            b: *mut $t,
            ldb: *const c_int,
            info: *mut c_int,
        ) {
            let why = match Inside::enter() {
                None => FROM_INSIDE.to_string(),
                Some(_inside) => match gtsv_runs_here(n, nrhs, ldb) {
                    Ok(()) => return $spike(n, nrhs, dl, d, du, b, ldb, info),
                    Err(why) => why,
                },
            };
            log_forward($routine, n, &why);
            forward!($name, GtsvFn<$t>, info, (n, nrhs, dl, d, du, b, ldb, info))
        }
    };
}

interpose_gtsv!(dgtsv_, f64, "DGTSV", hylapack::api::gtsv::dgtsv_spike_);
interpose_gtsv!(sgtsv_, f32, "SGTSV", hylapack::api::gtsv::sgtsv_spike_);

// ---- Dense symmetric eigenvalues (JOBZ = 'N'): the band-reduction path ---------------------

/// Stores INFO unless its pointer is NULL.
unsafe fn set_info(info: *mut c_int, value: c_int) {
    if !info.is_null() {
        *info = value;
    }
}

/// A workspace query (LWORK or LIWORK = −1): answered by LAPACK itself.
unsafe fn is_query(lens: &[*const c_int]) -> bool {
    lens.iter().any(|p| !p.is_null() && **p == -1)
}

/// Runs an eigenvalue driver, logs the call under the LAPACK name; a panic becomes INFO −1000.
fn run_logged(routine: &str, n: usize, f: impl FnOnce() -> EigReport) -> c_int {
    let started = std::time::Instant::now();
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(report) => {
            let note = report.reduction.as_ref().and_then(|r| r.note.clone());
            dispatch::finish_call(
                routine,
                n,
                report.backend(),
                started.elapsed(),
                note.as_deref(),
            );
            report.info
        }
        Err(_) => {
            eprintln!("hylapack_preload: internal error in {routine}; INFO = {HYLAPACK_INFO_INTERNAL_ERROR}");
            HYLAPACK_INFO_INTERNAL_ERROR
        }
    }
}

const NULL_ARG: &str = "a NULL argument, which LAPACK reports";
const ILLEGAL_OR_EMPTY: &str = "an illegal argument (which LAPACK reports) or N = 0";

/// `Err(why)` for calls hylapack never takes: eigenvectors, and workspace queries.
fn ordinary_call(jobz: u8, query: bool) -> Result<(), String> {
    if !jobz.eq_ignore_ascii_case(&b'N') {
        return Err("JOBZ = 'V' (eigenvectors are LAPACK's)".into());
    }
    if query {
        return Err("a workspace query".into());
    }
    Ok(())
}

/// xSYEV / xSYEVD / xSYEV_2STAGE (all eigenvalues): `Ok(INFO)` if it ran here: JOBZ = 'N',
/// not a query, legal arguments, and dispatch sends the band reduction to the GPU; else why not.
#[allow(clippy::too_many_arguments)]
unsafe fn syev_here<T: Real + Dense + CublasReal>(
    routine: &str,
    jobz: *const c_char,
    uplo: *const c_char,
    n: *const c_int,
    a: *mut T,
    lda: *const c_int,
    w: *mut T,
    query: bool,
) -> Result<c_int, String> {
    let (Some(&n), Some(&lda)) = (n.as_ref(), lda.as_ref()) else {
        return Err(NULL_ARG.into());
    };
    let (jobz, uplo) = (fortran_char(jobz), fortran_char(uplo));
    ordinary_call(jobz, query)?;
    if n <= 0 || a.is_null() || w.is_null() || syev::syev_check(jobz, uplo, n, lda, c_int::MAX) != 0
    {
        return Err(ILLEGAL_OR_EMPTY.into());
    }
    let (n, lda) = (n as usize, lda as usize);
    gpu_decided(dispatch::Family::Syrdb, n)?;
    let a = std::slice::from_raw_parts_mut(a, span(n, n, lda));
    let w = std::slice::from_raw_parts_mut(w, n);
    Ok(run_logged(routine, n, || {
        syev::syev::<T>(uplo, n, a, lda, w, Path::Gpu { budget: None })
    }))
}

/// xSYEVX / xSYEVR with JOBZ = 'N' (RANGE 'A', 'V' or 'I'): as [`syev_here`].
#[allow(clippy::too_many_arguments)]
unsafe fn syevx_here<T: Real + Dense + CublasReal>(
    routine: &str,
    jobz: *const c_char,
    range: *const c_char,
    uplo: *const c_char,
    n: *const c_int,
    a: *mut T,
    lda: *const c_int,
    vl: *const T,
    vu: *const T,
    il: *const c_int,
    iu: *const c_int,
    abstol: *const T,
    m: *mut c_int,
    w: *mut T,
    ldz: *const c_int,
    query: bool,
) -> Result<c_int, String> {
    let (jobz, range, uplo) = (fortran_char(jobz), fortran_char(range), fortran_char(uplo));
    let needs_v = range.eq_ignore_ascii_case(&b'V');
    let needs_i = range.eq_ignore_ascii_case(&b'I');
    let scalars = (n.as_ref(), lda.as_ref(), ldz.as_ref(), abstol.as_ref());
    let (Some(&n), Some(&lda), Some(&ldz), Some(&abstol)) = scalars else {
        return Err(NULL_ARG.into());
    };
    let (vl, vu) = match (vl.as_ref(), vu.as_ref()) {
        (Some(l), Some(u)) => (*l, *u),
        _ if !needs_v => (T::ZERO, T::ZERO),
        _ => return Err(NULL_ARG.into()),
    };
    let (il, iu) = match (il.as_ref(), iu.as_ref()) {
        (Some(l), Some(u)) => (*l, *u),
        _ if !needs_i => (0, 0),
        _ => return Err(NULL_ARG.into()),
    };
    ordinary_call(jobz, query)?;
    if n <= 0 || a.is_null() || w.is_null() || m.is_null() {
        return Err(ILLEGAL_OR_EMPTY.into());
    }
    if syev::syevx_check(jobz, range, uplo, n, lda, vl, vu, il, iu, ldz, c_int::MAX) != 0 {
        return Err(ILLEGAL_OR_EMPTY.into());
    }
    let (n, lda) = (n as usize, lda as usize);
    gpu_decided(dispatch::Family::Syrdb, n)?;
    let a = std::slice::from_raw_parts_mut(a, span(n, n, lda));
    let w = std::slice::from_raw_parts_mut(w, n);
    let mut found = 0;
    let info = run_logged(routine, n, || {
        let r = syev::syevx::<T>(
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
            Path::Gpu { budget: None },
        );
        found = r.m;
        r
    });
    *m = found;
    Ok(info)
}

type SyevFn<T> = unsafe extern "C" fn(
    *const c_char,
    *const c_char,
    *const c_int,
    *mut T,
    *const c_int,
    *mut T,
    *mut T,
    *const c_int,
    *mut c_int,
    usize,
    usize,
);
type SyevdFn<T> = unsafe extern "C" fn(
    *const c_char,
    *const c_char,
    *const c_int,
    *mut T,
    *const c_int,
    *mut T,
    *mut T,
    *const c_int,
    *mut c_int,
    *const c_int,
    *mut c_int,
    usize,
    usize,
);
type SyevxFn<T> = unsafe extern "C" fn(
    *const c_char,
    *const c_char,
    *const c_char,
    *const c_int,
    *mut T,
    *const c_int,
    *const T,
    *const T,
    *const c_int,
    *const c_int,
    *const T,
    *mut c_int,
    *mut T,
    *mut T,
    *const c_int,
    *mut T,
    *const c_int,
    *mut c_int,
    *mut c_int,
    *mut c_int,
    usize,
    usize,
    usize,
);
type SyevrFn<T> = unsafe extern "C" fn(
    *const c_char,
    *const c_char,
    *const c_char,
    *const c_int,
    *mut T,
    *const c_int,
    *const T,
    *const T,
    *const c_int,
    *const c_int,
    *const T,
    *mut c_int,
    *mut T,
    *mut T,
    *const c_int,
    *mut c_int,
    *mut T,
    *const c_int,
    *mut c_int,
    *const c_int,
    *mut c_int,
    usize,
    usize,
    usize,
);

macro_rules! interpose_syev {
    ($name:ident, $t:ty, $routine:literal) => {
        /// LAPACK's xSYEV (or xSYEV_2STAGE), interposed: JOBZ = 'N' on the GPU band-reduction
        /// path when dispatch says so, else forwarded.
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
                    match syev_here::<$t>($routine, jobz, uplo, n, a, lda, w, is_query(&[lwork])) {
                        Ok(r) => return set_info(info, r),
                        Err(why) => why,
                    }
                }
            };
            log_forward($routine, n, &why);
            forward!(
                $name,
                SyevFn<$t>,
                info,
                (jobz, uplo, n, a, lda, w, work, lwork, info, jobz_len, uplo_len)
            )
        }
    };
}

interpose_syev!(dsyev_, f64, "DSYEV");
interpose_syev!(ssyev_, f32, "SSYEV");
interpose_syev!(dsyev_2stage_, f64, "DSYEV_2STAGE");

/// LAPACK's DSYEVD, interposed: JOBZ = 'N' on the GPU band-reduction path when dispatch says
/// so, else forwarded.
#[no_mangle]
pub unsafe extern "C" fn dsyevd_(
    jobz: *const c_char,
    uplo: *const c_char,
    n: *const c_int,
    a: *mut f64,
    lda: *const c_int,
    w: *mut f64,
    work: *mut f64,
    lwork: *const c_int,
    iwork: *mut c_int,
    liwork: *const c_int,
    info: *mut c_int,
    jobz_len: usize,
    uplo_len: usize,
) {
    let why = match Inside::enter() {
        None => FROM_INSIDE.to_string(),
        Some(_inside) => match syev_here::<f64>(
            "DSYEVD",
            jobz,
            uplo,
            n,
            a,
            lda,
            w,
            is_query(&[lwork, liwork]),
        ) {
            Ok(r) => return set_info(info, r),
            Err(why) => why,
        },
    };
    log_forward("DSYEVD", n, &why);
    forward!(
        dsyevd_,
        SyevdFn<f64>,
        info,
        (jobz, uplo, n, a, lda, w, work, lwork, iwork, liwork, info, jobz_len, uplo_len)
    )
}

/// LAPACK's DSYEVX, interposed: JOBZ = 'N' on the GPU band-reduction path (then bisection)
/// when dispatch says so, else forwarded.
#[no_mangle]
pub unsafe extern "C" fn dsyevx_(
    jobz: *const c_char,
    range: *const c_char,
    uplo: *const c_char,
    n: *const c_int,
    a: *mut f64,
    lda: *const c_int,
    vl: *const f64,
    vu: *const f64,
    il: *const c_int,
    iu: *const c_int,
    abstol: *const f64,
    m: *mut c_int,
    w: *mut f64,
    z: *mut f64,
    ldz: *const c_int,
    work: *mut f64,
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
        Some(_inside) => match syevx_here::<f64>(
            "DSYEVX",
            jobz,
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
            m,
            w,
            ldz,
            is_query(&[lwork]),
        ) {
            Ok(r) => return set_info(info, r),
            Err(why) => why,
        },
    };
    log_forward("DSYEVX", n, &why);
    forward!(
        dsyevx_,
        SyevxFn<f64>,
        info,
        (
            jobz, range, uplo, n, a, lda, vl, vu, il, iu, abstol, m, w, z, ldz, work, lwork, iwork,
            ifail, info, jobz_len, range_len, uplo_len
        )
    )
}

/// LAPACK's DSYEVR, interposed: JOBZ = 'N' on the GPU band-reduction path (then bisection or
/// DSTERF) when dispatch says so, else forwarded. ISUPPZ is not referenced for JOBZ = 'N'.
#[no_mangle]
pub unsafe extern "C" fn dsyevr_(
    jobz: *const c_char,
    range: *const c_char,
    uplo: *const c_char,
    n: *const c_int,
    a: *mut f64,
    lda: *const c_int,
    vl: *const f64,
    vu: *const f64,
    il: *const c_int,
    iu: *const c_int,
    abstol: *const f64,
    m: *mut c_int,
    w: *mut f64,
    z: *mut f64,
    ldz: *const c_int,
    isuppz: *mut c_int,
    work: *mut f64,
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
        Some(_inside) => match syevx_here::<f64>(
            "DSYEVR",
            jobz,
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
            m,
            w,
            ldz,
            is_query(&[lwork, liwork]),
        ) {
            Ok(r) => return set_info(info, r),
            Err(why) => why,
        },
    };
    log_forward("DSYEVR", n, &why);
    forward!(
        dsyevr_,
        SyevrFn<f64>,
        info,
        (
            jobz, range, uplo, n, a, lda, vl, vu, il, iu, abstol, m, w, z, ldz, isuppz, work,
            lwork, iwork, liwork, info, jobz_len, range_len, uplo_len
        )
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn version_is_a_c_string() {
        let v = unsafe { std::ffi::CStr::from_ptr(super::hylapack_preload_version()) };
        assert_eq!(v.to_str().unwrap(), env!("CARGO_PKG_VERSION"));
    }

    #[test]
    fn inside_flag_is_exclusive_and_released() {
        let first = super::Inside::enter();
        assert!(first.is_some());
        assert!(
            super::Inside::enter().is_none(),
            "a nested call must be forwarded"
        );
        drop(first);
        assert!(super::Inside::enter().is_some());
    }
}
