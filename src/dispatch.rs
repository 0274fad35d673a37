//! Which backend runs a call, and the one log line each call leaves.

use crate::config::{self, DeviceMode};
use crate::device;
pub use crate::log::{debug, log_line, logging, warn};
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
    /// xSTEIN: its threshold is not configurable yet ([`STEIN_MIN_N`]).
    Stein,
}

/// Below this order xSTEIN runs on the host in auto mode (setting up the GPU costs more than
/// the host's inverse iteration).
pub const STEIN_MIN_N: usize = 1000;

/// Below this many entries of Z (N × M) xSTEIN runs on the host in auto mode.
pub const STEIN_MIN_ENTRIES: usize = 1 << 20;

impl Family {
    fn min_n(self) -> usize {
        let m = &config::get().min_n;
        match self {
            Family::Stebz => m.stebz,
            Family::Gtsv => m.gtsv,
            Family::Syrdb => m.syrdb,
            Family::Interval => m.interval,
            Family::Stein => STEIN_MIN_N,
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

/// The backend for xSTEIN of order `n` with `m` eigenvalues: [`decide`] for the stein family,
/// and in auto mode the host below [`STEIN_MIN_ENTRIES`] entries of Z (decided before the GPU
/// is looked for).
pub fn decide_stein(n: usize, m: usize) -> Decision {
    let entries = n.saturating_mul(m);
    let auto = config::get().device == DeviceMode::Auto;
    if auto && n >= Family::Stein.min_n() && entries < STEIN_MIN_ENTRIES {
        return Decision {
            backend: Backend::Cpu,
            why_not_gpu: Some(format!(
                "N x M = {entries} is below the GPU threshold {STEIN_MIN_ENTRIES}"
            )),
        };
    }
    decide(Family::Stein, n)
}

/// The backend for a strided batch of `rows` rows in all: [`decide`] for the gtsv family, and in
/// auto mode the host's threads where it has `gpu_below_threads` or more (see
/// [`crate::gtsv::batch_gpu_below_threads`]: through host pointers the GPU path pays only
/// against few threads).
pub fn decide_gtsv_batch(rows: usize, gpu_below_threads: usize) -> Decision {
    let auto = config::get().device == DeviceMode::Auto;
    let threads = crate::host::threads();
    if auto && rows >= Family::Gtsv.min_n() && threads >= gpu_below_threads {
        return Decision {
            backend: Backend::Cpu,
            why_not_gpu: Some(format!(
                "the host's {threads} threads solve this batch faster than the GPU through host \
                 pointers"
            )),
        };
    }
    decide(Family::Gtsv, rows)
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
