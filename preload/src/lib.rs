//! `libhylapack_preload.so`: standard LAPACK names for `LD_PRELOAD` (or for linking before
//! `-llapack`). Each one runs hylapack's path or forwards the call, untouched, to the next
//! definition of the same symbol (`dlsym(RTLD_NEXT, …)`), never to itself.
//!
//! While hylapack's own code runs, a thread-local flag is set: a LAPACK call hylapack makes
//! internally (its CPU fallbacks) reaches these same symbols and is then forwarded at once.
//! If no next definition exists, the library named by `HYLAPACK_CPU_LAPACK` is searched, and
//! failing that the call reports the problem on stderr and sets INFO = -1000.
//!
//! Interposed: xSTEBZ (always hylapack's path, which returns LAPACK's outputs) and xGTSV (only
//! when the dispatch policy runs it on the GPU; forwarded otherwise, with a log line).

use hylapack::api::HYLAPACK_INFO_INTERNAL_ERROR;
use hylapack::dispatch;
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
    next_definition(name).map(|p| p as usize).filter(|&p| p != own)
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
            if let Some(_inside) = Inside::enter() {
                let ran = hylapack::api::stebz::interposed::<$t>(
                    $routine, range, order, n, vl, vu, il, iu, abstol, d, e, m, nsplit, w, iblock,
                    isplit,
                );
                if let Some(result) = ran {
                    if !info.is_null() {
                        *info = result;
                    }
                    return;
                }
            }
            static NEXT: OnceLock<Option<usize>> = OnceLock::new();
            let next = NEXT.get_or_init(|| {
                forward_target(concat!(stringify!($name), "\0").as_bytes(), $name as StebzFn<$t> as usize)
            });
            let Some(next) = *next else {
                return no_next_definition(stringify!($name), info);
            };
            dispatch::debug(|| format!("{}: forwarded to the system LAPACK", stringify!($name)));
            // SAFETY: `next` is the next definition of this very symbol, so it has this
            // signature; the arguments, hidden lengths included, pass through unchanged.
            let next: StebzFn<$t> = std::mem::transmute(next);
            next(
                range, order, n, vl, vu, il, iu, abstol, d, e, m, nsplit, w, iblock, isplit, work,
                iwork, info, range_len, order_len,
            )
        }
    };
}

interpose_stebz!(dstebz_, f64, "DSTEBZ");
interpose_stebz!(sstebz_, f32, "SSTEBZ");

type GtsvFn<T> =
    unsafe extern "C" fn(*const c_int, *const c_int, *mut T, *mut T, *mut T, *mut T, *const c_int, *mut c_int);

/// Whether an intercepted xGTSV runs hylapack's path: only when the dispatch policy sends it to
/// the GPU. Otherwise (the CPU path would be the system LAPACK anyway, and LAPACK's DL/D/DU
/// outputs are its LU factors, which hylapack's SPIKE factors are not) it is forwarded. Illegal
/// arguments are forwarded too, so LAPACK reports them as usual.
unsafe fn gtsv_runs_here(routine: &str, n: *const c_int, nrhs: *const c_int, ldb: *const c_int) -> bool {
    let (Some(n), Some(nrhs), Some(ldb)) = (n.as_ref(), nrhs.as_ref(), ldb.as_ref()) else {
        return false;
    };
    if hylapack::gtsv::check_args(*n, *nrhs, *ldb) != 0 {
        return false;
    }
    let decision = dispatch::decide(dispatch::Family::Gtsv, *n as usize);
    if decision.backend == dispatch::Backend::Gpu {
        return true;
    }
    let why = decision.why_not_gpu.unwrap_or_default();
    dispatch::finish_call(
        routine,
        *n as usize,
        dispatch::Backend::Cpu,
        std::time::Duration::ZERO,
        Some(&format!("forwarded to the system LAPACK: {why}")),
    );
    false
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
            if let Some(_inside) = Inside::enter() {
                if gtsv_runs_here($routine, n, nrhs, ldb) {
                    return $spike(n, nrhs, dl, d, du, b, ldb, info);
                }
            }
            static NEXT: OnceLock<Option<usize>> = OnceLock::new();
            let next = NEXT.get_or_init(|| {
                forward_target(concat!(stringify!($name), "\0").as_bytes(), $name as GtsvFn<$t> as usize)
            });
            let Some(next) = *next else {
                return no_next_definition(stringify!($name), info);
            };
            // SAFETY: `next` is the next definition of this very symbol (same signature); the
            // arguments pass through unchanged.
            let next: GtsvFn<$t> = std::mem::transmute(next);
            next(n, nrhs, dl, d, du, b, ldb, info)
        }
    };
}

interpose_gtsv!(dgtsv_, f64, "DGTSV", hylapack::api::gtsv::dgtsv_spike_);
interpose_gtsv!(sgtsv_, f32, "SGTSV", hylapack::api::gtsv::sgtsv_spike_);

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
