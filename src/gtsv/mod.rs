//! `xGTSV_SPIKE`: the general tridiagonal solve `A X = B` with LAPACK xGTSV's contract, by the
//! SPIKE partitioning with diagonal pivoting in each partition (Chang, Stratton, Kim & Hwu 2012).
//!
//! **Decomposition.** The rows are cut into blocks of `m − 1` rows separated by single
//! *separator rows* (block `j` is rows `[j m, (j+1) m − 1)`, separator `s_j = (j+1) m − 1`, the
//! last block takes the rest). For each block `A_j`, diagonal pivoting
//! ([`pivoting`]) computes `Y_j = A_j⁻¹ F_j` and the two spikes `W_j = A_j⁻¹ (a e₁)`,
//! `V_j = A_j⁻¹ (c e_last)` (its couplings to the separators on its left and right). Then every
//! interior unknown is `x = Y − W x_{s_{j−1}} − V x_{s_j}`, and substituting the rows next to each
//! separator into the separator row leaves a *tridiagonal* reduced system in the separators:
//!
//! ```text
//!   −a_s W_j^b · x_{s_{j−1}} + (d_s − a_s V_j^b − c_s W_{j+1}^t) · x_{s_j} − c_s V_{j+1}^t · x_{s_{j+1}}
//!       = f_s − a_s Y_j^b − c_s Y_{j+1}^t
//! ```
//!
//! (`t`/`b` the top/bottom entries, `a_s`, `c_s` the separator row's off-diagonals). This is the
//! SPIKE reduced system with the spikes' top and bottom equations of each block eliminated into
//! one equation per separator, so it has `p − 1` unknowns instead of `2(p − 1)` and is again
//! tridiagonal: the GPU solves it recursively with the same kernels, the CPU with LAPACK xGTSV
//! (it is small). A back substitution `x = Y − W x_L − V x_R` finishes.
//!
//! **Reliability.** SPIKE needs every block `A_j` to be nonsingular, which pivoting cannot
//! promise for a general matrix, and its error is not bounded like LAPACK's partial pivoting.
//! So the answer is accepted only if (1) no pivot was exactly zero and the reduced solve
//! succeeded, (2) every entry of `X` is finite, and (3) for every right-hand side the residual
//! `r = b − A x` satisfies `max_i |r_i| ≤ tol · max_i (|a_i x_{i−1}| + |d_i x_i| + |c_i x_{i+1}| + |b_i|)`
//! with `tol = RESIDUAL_TOL_EPS · ε` (a normwise backward error of a few ulps, which is what
//! LAPACK's partial pivoting delivers). Otherwise the system LAPACK's xGTSV runs on the original
//! data, which the SPIKE path never modifies (it works in its own buffers and writes `B` only
//! after the checks pass). Singular systems therefore end exactly as with LAPACK: INFO = i > 0
//! and `B` as LAPACK leaves it.
//!
//! **DL, D, DU on exit** are unspecified: unchanged when SPIKE's answer was accepted, LAPACK
//! xGTSV's factors (as xGTSV documents) when LAPACK ran (small `n`, NRHS = 0, or a fallback).
//!
//! **Entries.** [`gtsv`] takes host arrays (the LAPACK interface; on the GPU, a system above
//! the memory budget streams its top level through the GPU in slices, the same arithmetic as
//! in core, see [`gpu::solve_streamed`], or where even its separator system does not fit is
//! solved in chunks, see [`gpu::solve_chunked`]); [`gtsv_device`] takes
//! arrays already in GPU memory (its fallback copies them to the host for LAPACK);
//! [`gtsv_strided_batch`] solves many systems of one size (on the GPU stacked into one
//! block-diagonal system, each system then judged on its own).

pub mod cpu;
pub mod gpu;
pub mod lu;
pub mod matrices;
pub mod pivoting;

mod batch;
mod residual;

pub use batch::{
    batch_gpu_below_threads, gtsv_strided_batch, gtsv_strided_batch_device, BatchReport,
};
pub use residual::{
    accept_levels, judge, refine_steps, residual_cols, residual_rows, residual_rows_into,
    wants_refinement, Bands, Columns, Residual, REFINE_B_EPS, REFINE_TOL_EPS,
};
pub(crate) use residual::{refine, split_rows, RefineState};

use crate::dispatch::Backend;
use crate::lapack::Lapack;

/// INFO when host memory that a call needs cannot be allocated (the exported routines'
/// `HYLAPACK_INFO_INTERNAL_ERROR`; the reason is in the report's note).
pub const INFO_NO_HOST_MEMORY: i32 = -1000;

pub use crate::host::try_vec;

/// The acceptance threshold of the residual check, in units of ε (see the module comment).
pub const RESIDUAL_TOL_EPS: f64 = 16.0;

/// LAPACK xGTSV's argument checks, in its order: N (1), NRHS (2), LDB (7). Returns INFO (0 or
/// −i). Array arguments are the caller's to check (null pointers at the C boundary).
pub fn check_args(n: i32, nrhs: i32, ldb: i32) -> i32 {
    if n < 0 {
        -1
    } else if nrhs < 0 {
        -2
    } else if ldb < n.max(1) {
        -7
    } else {
        0
    }
}

/// Which algorithm produced the answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Solver {
    /// SPIKE + diagonal pivoting, answer accepted by the checks.
    Spike,
    /// The small systems of a strided batch, a warp per system on the GPU: SPIKE where its
    /// residual reaches the large solver's refinement level, LAPACK xGTSV's partial pivoting
    /// for the others (`BatchReport::pivoted` counts them).
    WarpPerSystem,
    /// The system LAPACK's xGTSV (small `n`, NRHS = 0, or a fallback: see `note`).
    Lapack,
}

/// What one call did.
#[derive(Clone, Debug)]
pub struct GtsvReport {
    /// LAPACK's INFO: 0, or i > 0 when U(i,i) of LAPACK's factorization is exactly zero.
    pub info: i32,
    /// Where the accepted answer was computed (`Cpu` for the system LAPACK).
    pub backend: Backend,
    pub solver: Solver,
    /// Where SPIKE ran, if it was tried (also when its answer was then rejected).
    pub spike_backend: Option<Backend>,
    /// Why the call did not stay on the backend asked for, or why SPIKE's answer was rejected.
    pub note: Option<String>,
}

/// Why a SPIKE answer was not accepted (the call then runs LAPACK xGTSV on the original data).
#[derive(Clone, Debug, PartialEq)]
pub enum Reject {
    /// A diagonal-pivoting block had an exactly zero pivot (the block is singular).
    ZeroPivot,
    /// The reduced (separator) system was singular.
    ReducedSingular,
    /// NaN or ±Inf in the solution.
    NonFinite,
    /// The residual check failed: the worst right-hand side's `max|r| / max(scale)`.
    Residual(f64),
    /// Backward stable, but `max|r| / max|b|` (given) exceeds √ε: the system is so ill-conditioned
    /// that SPIKE's residual may be much larger than LAPACK's, so LAPACK's answer is returned.
    IllConditioned(f64),
    /// SPIKE's host workspace (this many bytes) could not be allocated; LAPACK xGTSV, which
    /// needs none, runs on the caller's arrays instead (issue #23: never an abort).
    NoHostMemory(usize),
}

impl std::fmt::Display for Reject {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Reject::ZeroPivot => f.write_str("a SPIKE block had a zero pivot"),
            Reject::ReducedSingular => f.write_str("the SPIKE reduced system was singular"),
            Reject::NonFinite => f.write_str("the SPIKE solution was not finite"),
            Reject::Residual(r) => {
                write!(f, "SPIKE's backward error {r:.2e} was above the tolerance")
            }
            Reject::IllConditioned(r) => write!(
                f,
                "SPIKE's relative residual {r:.2e} was above sqrt(eps) (ill-conditioned system)"
            ),
            Reject::NoHostMemory(bytes) => write!(
                f,
                "cannot allocate {} MiB of host memory for SPIKE",
                bytes.div_ceil(1 << 20)
            ),
        }
    }
}

/// Tuning of one call; `Options::default()` is what the exported routines use.
#[derive(Clone, Debug)]
pub struct Options {
    /// Below this order the CPU backend calls LAPACK xGTSV directly (SPIKE does not pay).
    /// The default never runs SPIKE on the CPU: measured on 16 cores (H200 host, 2026-11-22)
    /// it took 34 ms at n = 2^20 and 473 ms at 2^24 against LAPACK dgtsv's 21 ms and 360 ms.
    pub cpu_min_n: usize,
    /// Number of SPIKE blocks on the CPU (`None`: a few per thread).
    pub cpu_blocks: Option<usize>,
    /// Threads on the CPU (`None`: all available).
    pub threads: Option<usize>,
    /// GPU tuning.
    pub gpu: gpu::GpuOptions,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            cpu_min_n: usize::MAX,
            cpu_blocks: None,
            threads: None,
            gpu: gpu::GpuOptions::default(),
        }
    }
}

/// Solves `A X = B` with LAPACK xGTSV's contract (see the module comment), on `backend`.
///
/// `dl`, `du`: `n − 1` entries (`n = d.len()`); `b`: column-major `ldb × nrhs` with
/// `ldb ≥ max(1, n)`. On return `b` holds `X` when INFO = 0 (or what LAPACK leaves when INFO > 0);
/// `dl`, `d`, `du` are unspecified. A GPU that is unavailable or fails falls back to the CPU path.
pub fn gtsv<T: Lapack>(
    dl: &mut [T],
    d: &mut [T],
    du: &mut [T],
    b: &mut [T],
    ldb: usize,
    nrhs: usize,
    backend: Backend,
) -> GtsvReport {
    gtsv_with(&Options::default(), dl, d, du, b, ldb, nrhs, backend)
}

/// [`gtsv`] with explicit tuning.
#[allow(clippy::too_many_arguments)]
pub fn gtsv_with<T: Lapack>(
    opts: &Options,
    dl: &mut [T],
    d: &mut [T],
    du: &mut [T],
    b: &mut [T],
    ldb: usize,
    nrhs: usize,
    backend: Backend,
) -> GtsvReport {
    let n = d.len();
    assert!(
        dl.len() + 1 >= n && du.len() + 1 >= n,
        "dl and du need n - 1 entries"
    );
    assert!(ldb >= n.max(1), "ldb < max(1, n)");
    assert!(
        nrhs == 0 || n == 0 || b.len() >= ldb * (nrhs - 1) + n,
        "b is smaller than ldb x nrhs"
    );
    let mut report = GtsvReport {
        info: 0,
        backend: Backend::Cpu,
        solver: Solver::Lapack,
        spike_backend: None,
        note: None,
    };
    if n == 0 {
        return report;
    }
    let lapack = |report: &mut GtsvReport, dl: &mut [T], d: &mut [T], du: &mut [T], b: &mut [T]| {
        report.info = T::gtsv(dl, d, du, b, ldb, nrhs);
        report.solver = Solver::Lapack;
        report.backend = Backend::Cpu;
    };
    // NRHS = 0 still factors (and reports singularity) in LAPACK, whose back substitution
    // then writes a first column of B that the caller need not have: factor here instead.
    if nrhs == 0 {
        report.info = lu::factor_info(dl, d, du);
        return report;
    }
    let mut attempt = backend;
    if backend == Backend::Gpu {
        match gpu::solve(&opts.gpu, dl, d, du, b, ldb, nrhs) {
            Ok(Ok(())) => {
                report.backend = Backend::Gpu;
                report.solver = Solver::Spike;
                report.spike_backend = Some(Backend::Gpu);
                return report;
            }
            Ok(Err(reject)) => {
                report.spike_backend = Some(Backend::Gpu);
                report.note = Some(format!("{reject}; LAPACK xGTSV ran instead"));
                lapack(&mut report, dl, d, du, b);
                return report;
            }
            Err(e) => {
                report.note = Some(format!("GPU path unavailable ({e}); CPU path ran"));
                attempt = Backend::Cpu;
            }
        }
    }
    debug_assert_eq!(attempt, Backend::Cpu);
    if n < opts.cpu_min_n.max(2) {
        lapack(&mut report, dl, d, du, b);
        return report;
    }
    report.spike_backend = Some(Backend::Cpu);
    match cpu::solve(dl, d, du, b, ldb, nrhs, opts.cpu_blocks, opts.threads) {
        Ok(()) => {
            report.solver = Solver::Spike;
            report.backend = Backend::Cpu;
        }
        Err(reject) => {
            let why = format!("{reject}; LAPACK xGTSV ran instead");
            report.note = Some(match report.note.take() {
                Some(n) => format!("{n}; {why}"),
                None => why,
            });
            lapack(&mut report, dl, d, du, b);
        }
    }
    report
}

/// What a device-pointer call ([`gtsv_device`]) did.
#[derive(Clone, Debug)]
pub struct DeviceReport {
    /// LAPACK's INFO: 0, or i > 0 when U(i,i) of LAPACK's factorization is exactly zero.
    pub info: i32,
    pub solver: Solver,
    /// Why SPIKE's answer was rejected (LAPACK xGTSV then ran on a host copy).
    pub note: Option<String>,
}

/// Solves `A X = B` for a matrix and right-hand sides already in GPU memory, with xGTSV's
/// INFO: `a` is only read; `b` (`n × nrhs` at leading dimension `b.ld ≥ n`) holds `X` on
/// return when INFO = 0. When SPIKE's answer is rejected (see the module comment), the matrix
/// and `B` are copied to the host, LAPACK xGTSV runs there and its `B` is copied back (so a
/// singular system ends with LAPACK's INFO and `B` as LAPACK leaves it; the device matrix is
/// unchanged). Work queued on `after` before the call is waited for (a null handle is CUDA's
/// legacy default stream); with `None`, the caller's writes to the data must already be
/// complete, since our streams do not order after any of the caller's. The call returns when
/// the answer is in `b`.
///
/// `Err`: no usable GPU, or a GPU failure. `B` is then unchanged, unless the failure came while
/// the accepted answer (or LAPACK's) was being copied into it.
pub fn gtsv_device<T: Lapack>(
    opts: &Options,
    a: gpu::DevMatrix,
    b: gpu::DevCols,
    nrhs: usize,
    after: Option<cudarc::driver::sys::CUstream>,
) -> Result<DeviceReport, crate::device::DeviceError> {
    let n = a.n;
    assert!(b.ld >= n.max(1), "ldb < max(1, n)");
    let mut report = DeviceReport {
        info: 0,
        solver: Solver::Spike,
        note: None,
    };
    if n == 0 {
        return Ok(report);
    }
    let verdict = if nrhs == 0 {
        // LAPACK still factors (and reports singularity): do that on the host, once the
        // caller's queued work is done.
        if let Some(s) = after {
            // SAFETY: the caller's stream, live for the call (this function's contract, as for
            // solve_device).
            unsafe { gpu::wait_for_caller(s)? };
        }
        Err(None)
    } else {
        gpu::solve_device::<T>(&opts.gpu, a, b, nrhs, after)?.map_err(Some)
    };
    if let Err(reject) = verdict {
        report.solver = Solver::Lapack;
        report.note = reject.map(|r| format!("{r}; LAPACK xGTSV ran on a host copy"));
        let Some(mut host) = try_vec(n * (3 + nrhs), T::ZERO) else {
            report.info = INFO_NO_HOST_MEMORY;
            report.note = Some(format!(
                "no host memory for a copy of the system ({} bytes)",
                (n as u128) * (3 + nrhs as u128) * std::mem::size_of::<T>() as u128
            ));
            return Ok(report);
        };
        let (dl, rest) = host.split_at_mut(n);
        let (d, rest) = rest.split_at_mut(n);
        let (du, x) = rest.split_at_mut(n);
        let (dl, du) = (&mut dl[..n - 1], &mut du[..n - 1]);
        gpu::download_into::<T>(a.dl, dl)?;
        gpu::download_into::<T>(a.d, d)?;
        gpu::download_into::<T>(a.du, du)?;
        let col = |c: usize| b.ptr + (c * b.ld * std::mem::size_of::<T>()) as u64;
        if nrhs == 0 {
            // LAPACK's back substitution would write a column of B that is not there.
            report.info = lu::factor_info(dl, d, du);
            return Ok(report);
        }
        for c in 0..nrhs {
            gpu::download_into::<T>(col(c), &mut x[c * n..(c + 1) * n])?;
        }
        report.info = T::gtsv(dl, d, du, x, n, nrhs);
        for c in 0..nrhs {
            gpu::upload::<T>(&x[c * n..(c + 1) * n], col(c))?;
        }
    }
    Ok(report)
}
