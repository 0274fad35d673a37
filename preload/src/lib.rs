//! `libhylapack_preload.so`: standard LAPACK names for `LD_PRELOAD` (or for linking before
//! `-llapack`). Each one checks its arguments as LAPACK does, then runs hylapack's path or
//! forwards the call, untouched, to the next definition of the same symbol (the program's own
//! LAPACK), never to itself.
//!
//! The library adds nothing to the process but the names it intercepts: it names no LAPACK or
//! BLAS as a load-time dependency and finds what it needs at run time
//! (`hylapack::lapack::symbols`). A call with an illegal argument, a workspace query, N = 0 and
//! every call hylapack does not take are forwarded, so LAPACK itself answers them.
//!
//! While hylapack's own code runs, a thread-local flag is set: a LAPACK call made from inside
//! (a fallback) that reaches these names is forwarded at once.
//!
//! `HYLAPACK_PRELOAD` chooses which calls run hylapack's path:
//! - `auto` (default): those the dispatch sends to the GPU (and every xSTEBZ);
//! - `own`: every call LAPACK would accept — the GPU path where a GPU exists, hylapack's CPU
//!   implementation of the same algorithm where not — so that a machine without a GPU tests the
//!   same contract code (LAPACK's own test programs run this way in the test suite).

mod gtsv;
mod stebz;
mod stein;
mod syev;

use hylapack::api::HYLAPACK_INFO_INTERNAL_ERROR;
use hylapack::dispatch::{self, Backend, Family};
use std::cell::Cell;
use std::ffi::{c_char, c_int};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

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

/// Which intercepted calls run hylapack's path (`HYLAPACK_PRELOAD`, read once).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Auto,
    Own,
}

fn mode() -> Mode {
    static MODE: OnceLock<Mode> = OnceLock::new();
    *MODE.get_or_init(|| match std::env::var("HYLAPACK_PRELOAD") {
        Err(_) => Mode::Auto,
        Ok(v) if v.eq_ignore_ascii_case("auto") || v.is_empty() => Mode::Auto,
        Ok(v) if v.eq_ignore_ascii_case("own") => Mode::Own,
        Ok(v) => {
            dispatch::warn(&format!(
                "HYLAPACK_PRELOAD={v:?} is neither auto nor own; using auto"
            ));
            Mode::Auto
        }
    })
}

/// Where an intercepted call that LAPACK accepts runs.
enum Route {
    /// hylapack's path on this backend.
    Here(Backend),
    /// The program's LAPACK, and why.
    Forward(String),
}

/// The route of a call of `family` at order `n`.
fn route(family: Family, n: usize) -> Route {
    let decision = dispatch::decide(family, n);
    match (decision.backend, mode()) {
        (Backend::Gpu, _) => Route::Here(Backend::Gpu),
        (Backend::Cpu, Mode::Own) => Route::Here(Backend::Cpu),
        (Backend::Cpu, Mode::Auto) => Route::Forward(decision.why_not_gpu.unwrap_or_default()),
    }
}

/// The next definition of the NUL-terminated `name` (never this library's own).
fn forward_target(name: &'static [u8]) -> Option<usize> {
    let name = std::ffi::CStr::from_bytes_with_nul(name).ok()?;
    hylapack::lapack::symbols::resolve(name)
}

fn no_next_definition(name: &str, info: *mut c_int) {
    dispatch::warn(&format!(
        "no LAPACK to forward {name} to: link the program against LAPACK or set HYLAPACK_CPU_LAPACK to a LAPACK library"
    ));
    // SAFETY: INFO is the caller's output integer (or NULL).
    unsafe { set_info(info, HYLAPACK_INFO_INTERNAL_ERROR) };
}

/// The log line (HYLAPACK_LOG=info) of a forwarded call: the name the program called, its N
/// as given, the time LAPACK took, and why it was forwarded.
unsafe fn log_forward(routine: &str, n: *const c_int, elapsed: Duration, why: &str) {
    if dispatch::logging() {
        let n = n
            .as_ref()
            .map_or_else(|| "NULL".to_string(), |n| n.to_string());
        let why = format!("forwarded to the program's LAPACK: {why}");
        dispatch::log_line(routine, &n, Backend::Cpu, elapsed, Some(&why));
    }
}

/// Forwards the call to the next definition of `$name` (found once), arguments unchanged,
/// and logs it under `$routine` with `$why`.
macro_rules! forward {
    ($name:ident, $fty:ty, $routine:expr, $n:expr, $why:expr, $info:expr,
     ($($arg:expr),* $(,)?)) => {{
        static NEXT: std::sync::OnceLock<Option<usize>> = std::sync::OnceLock::new();
        let next = *NEXT.get_or_init(|| $crate::forward_target(concat!(stringify!($name), "\0").as_bytes()));
        let started = std::time::Instant::now();
        match next {
            // SAFETY: `next` is the next definition of this very symbol, so it has this
            // signature; the arguments, hidden lengths included, pass through unchanged.
            Some(p) => {
                let f: $fty = std::mem::transmute::<usize, $fty>(p);
                f($($arg),*)
            }
            None => $crate::no_next_definition(stringify!($name), $info),
        }
        $crate::log_forward($routine, $n, started.elapsed(), $why);
    }};
}
pub(crate) use forward;

/// Stores INFO unless its pointer is NULL.
unsafe fn set_info(info: *mut c_int, value: c_int) {
    if !info.is_null() {
        *info = value;
    }
}

/// Runs hylapack's path for `routine`; logs the call under the name the program called. A
/// panic becomes INFO = −1000 with a message.
fn run_logged<R>(
    routine: &str,
    n: usize,
    f: impl FnOnce() -> R,
    outcome: impl FnOnce(&R) -> (c_int, Backend, Option<String>),
) -> Result<R, c_int> {
    let started = Instant::now();
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(result) => {
            let (_, backend, note) = outcome(&result);
            dispatch::finish_call(routine, n, backend, started.elapsed(), note.as_deref());
            Ok(result)
        }
        Err(_) => {
            dispatch::warn(&format!(
                "internal error in {routine}; INFO = {HYLAPACK_INFO_INTERNAL_ERROR}"
            ));
            Err(HYLAPACK_INFO_INTERNAL_ERROR)
        }
    }
}

/// Why a call is forwarded when hylapack's own code made it.
const FROM_INSIDE: &str = "a call from inside hylapack";
/// Why a call with a NULL scalar is forwarded.
const NULL_ARG: &str = "a NULL argument, which LAPACK reports";
/// Why a call with an illegal argument is forwarded.
const ILLEGAL: &str = "an illegal argument, which LAPACK reports";

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
