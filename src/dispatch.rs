//! Which backend runs a call, and the one log line each call leaves.

use crate::config::{self, DeviceMode, LogLevel};
use crate::device;
use std::cell::Cell;
use std::time::Duration;

/// Where a call (or a part of it) ran.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    /// hylapack's own CPU code or the system LAPACK.
    Cpu,
    Gpu,
}

impl Backend {
    pub fn name(self) -> &'static str {
        match self {
            Backend::Cpu => "cpu",
            Backend::Gpu => "gpu",
        }
    }
}

/// The routine families, each with its own size threshold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    Stebz,
    Gtsv,
    Syrdb,
    Interval,
}

impl Family {
    fn min_n(self) -> usize {
        let m = &config::get().min_n;
        match self {
            Family::Stebz => m.stebz,
            Family::Gtsv => m.gtsv,
            Family::Syrdb => m.syrdb,
            Family::Interval => m.interval,
        }
    }
}

/// The backend chosen for a call and, when it is the CPU, why.
#[derive(Clone, Debug)]
pub struct Decision {
    pub backend: Backend,
    pub why_not_gpu: Option<String>,
}

/// Chooses the backend for a problem of order `n` of `family`.
pub fn decide(family: Family, n: usize) -> Decision {
    let cpu = |why: String| Decision {
        backend: Backend::Cpu,
        why_not_gpu: Some(why),
    };
    match config::get().device {
        DeviceMode::Cpu => return cpu("HYLAPACK_DEVICE=cpu".into()),
        DeviceMode::Auto if family.min_n() == usize::MAX => {
            return cpu("the GPU path of this family is off in auto mode".into())
        }
        DeviceMode::Auto if n < family.min_n() => {
            return cpu(format!(
                "n = {n} is below the GPU threshold {}",
                family.min_n()
            ))
        }
        _ => {}
    }
    match device::gpu() {
        Ok(_) => Decision {
            backend: Backend::Gpu,
            why_not_gpu: None,
        },
        Err(e) => cpu(format!("no GPU: {e}")),
    }
}

thread_local! {
    static LAST_BACKEND: Cell<Option<Backend>> = const { Cell::new(None) };
}

/// The backend that ran the calling thread's most recent call (tests use it to prove a path).
pub fn last_backend() -> Option<Backend> {
    LAST_BACKEND.with(|c| c.get())
}

/// Records and, if `HYLAPACK_LOG` asks, prints one line for a finished call.
pub fn finish_call(
    routine: &str,
    n: usize,
    backend: Backend,
    elapsed: Duration,
    note: Option<&str>,
) {
    LAST_BACKEND.with(|c| c.set(Some(backend)));
    if logging() {
        log_line(routine, &n, backend, elapsed, note);
    }
}

/// Whether `HYLAPACK_LOG` asks for a line per call.
pub fn logging() -> bool {
    config::get().log >= LogLevel::Info
}

/// Prints a call's log line: `routine` as the program called it, `n` as it was given.
pub fn log_line(
    routine: &str,
    n: &dyn std::fmt::Display,
    backend: Backend,
    elapsed: Duration,
    note: Option<&str>,
) {
    let note = note.map(|s| format!(" ({s})")).unwrap_or_default();
    write_line(&format!(
        "hylapack: {routine} n={n} backend={} time={:.3} ms{note}",
        backend.name(),
        elapsed.as_secs_f64() * 1e3
    ));
}

/// Prints a debug-level message.
pub fn debug(msg: impl FnOnce() -> String) {
    if config::get().log >= LogLevel::Debug {
        write_line(&format!("hylapack: {}", msg()));
    }
}

/// Prints a warning, whatever the log level.
pub fn warn(msg: &str) {
    write_line(&format!("hylapack: {msg}"));
}

/// Writes `line` and a newline to standard error in one `write(2)`, taking no lock: a child
/// forked while another thread logs must not inherit a held lock, and lines of several
/// threads or processes must not interleave.
fn write_line(line: &str) {
    let mut bytes = Vec::with_capacity(line.len() + 1);
    bytes.extend_from_slice(line.as_bytes());
    bytes.push(b'\n');
    let mut rest = &bytes[..];
    while !rest.is_empty() {
        // SAFETY: writes initialised bytes of a live buffer to file descriptor 2.
        let written = unsafe { libc::write(2, rest.as_ptr().cast(), rest.len()) };
        match written {
            w if w > 0 => rest = &rest[w as usize..],
            _ if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted => {}
            _ => return,
        }
    }
}
