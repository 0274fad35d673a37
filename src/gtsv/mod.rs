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

use crate::dispatch::Backend;
use crate::lapack::Lapack;
use crate::real::Real;

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

/// What a batched call ([`gtsv_strided_batch`]) did.
#[derive(Clone, Debug)]
pub struct BatchReport {
    pub backend: Backend,
    pub solver: Solver,
    pub note: Option<String>,
}

/// `count` equal-length pieces of `s`, piece `k` starting at `k · stride` (`stride ≥ len`).
fn split_strided<T>(s: &mut [T], stride: usize, len: usize, count: usize) -> Vec<&mut [T]> {
    let mut out = Vec::with_capacity(count);
    let mut rest = s;
    for k in 0..count {
        if len == 0 {
            out.push(&mut [][..]);
            continue;
        }
        let take = if k + 1 < count { stride } else { len };
        let (head, tail) = rest.split_at_mut(take);
        out.push(&mut head[..len]);
        rest = tail;
    }
    out
}

/// Solves `count` independent systems of order `n`, each with LAPACK xGTSV's contract:
/// system `k` is `dl[k·sa ..]` (n − 1), `d[k·sa ..]` (n), `du[k·sa ..]` (n − 1) with right-hand
/// sides `b[k·sb ..]` (`ldb × nrhs`); its INFO goes to `info[k]`.
///
/// On the GPU the systems are stacked into one block-diagonal tridiagonal system (zero
/// couplings between neighbours) and solved by SPIKE in one call; if that answer is rejected
/// (some system singular or badly conditioned) every system is solved by LAPACK xGTSV on the
/// CPU from its untouched data. On the CPU, LAPACK xGTSV runs on each system, spread over host
/// threads. `dl`, `d`, `du` are unspecified on exit, as for [`gtsv`].
#[allow(clippy::too_many_arguments)]
pub fn gtsv_strided_batch<T: Lapack>(
    opts: &Options,
    n: usize,
    nrhs: usize,
    dl: &mut [T],
    d: &mut [T],
    du: &mut [T],
    sa: usize,
    b: &mut [T],
    ldb: usize,
    sb: usize,
    count: usize,
    info: &mut [i32],
    backend: Backend,
) -> BatchReport {
    assert!(sa >= n && ldb >= n.max(1) && sb >= ldb * nrhs && info.len() >= count);
    let mut report = BatchReport {
        backend: Backend::Cpu,
        solver: Solver::Lapack,
        note: None,
    };
    info[..count].fill(0);
    if n == 0 || count == 0 {
        return report;
    }
    let m1 = n - 1;
    let blen = if nrhs == 0 { 0 } else { ldb * (nrhs - 1) + n };
    // Systems whose answer is already in B (empty: none).
    let mut done = Vec::new();
    if backend == Backend::Gpu && nrhs > 0 {
        match solve_stacked(opts, n, nrhs, dl, d, du, sa, b, ldb, sb, count) {
            Ok((solved, rejected)) => {
                report.backend = Backend::Gpu;
                report.solver = Solver::Spike;
                if rejected == 0 {
                    return report;
                }
                done = solved;
                report.note = Some(format!(
                    "{rejected} of {count} systems failed their own check; LAPACK xGTSV ran on them"
                ));
            }
            Err(note) => report.note = Some(note),
        }
    }
    // LAPACK on each system (its factorization alone for NRHS = 0: see `lu`), systems spread
    // over threads, a bounded group at a time so that no bookkeeping grows with `count`.
    const GROUP: usize = 4096;
    let threads = crate::host::threads().min(count.div_ceil(4).max(1));
    let mut k0 = 0;
    while k0 < count {
        let k1 = (k0 + GROUP).min(count);
        let g = k1 - k0;
        let (a0, b0) = (k0 * sa, k0 * sb);
        let (la, lu_, lb) = (dl.len(), du.len(), b.len());
        let dls = split_strided(&mut dl[a0.min(la)..], sa, m1, g);
        let ds = split_strided(&mut d[a0..], sa, n, g);
        let dus = split_strided(&mut du[a0.min(lu_)..], sa, m1, g);
        let bs = split_strided(&mut b[b0.min(lb)..], sb, blen, g);
        let mut jobs: Vec<_> = dls
            .into_iter()
            .zip(ds)
            .zip(dus)
            .zip(bs)
            .zip(info[k0..k1].iter_mut())
            .enumerate()
            .filter(|(j, _)| !done.get(k0 + j).copied().unwrap_or(false))
            .map(|(_, job)| job)
            .collect();
        let one = |job: &mut Job<'_, T>| {
            let ((((dl, d), du), b), info) = job;
            **info = if nrhs == 0 {
                lu::factor_info(dl, d, du)
            } else {
                T::gtsv(dl, d, du, b, ldb, nrhs)
            };
        };
        let per = jobs.len().div_ceil(threads).max(1);
        if threads == 1 || jobs.len() <= per {
            jobs.iter_mut().for_each(one);
        } else {
            std::thread::scope(|s| {
                for part in jobs.chunks_mut(per) {
                    let one = &one;
                    s.spawn(move || part.iter_mut().for_each(one));
                }
            });
        }
        k0 = k1;
    }
    report
}

/// One system of a batch on the CPU: ((((dl, d), du), b), info).
type Job<'a, T> = (
    (((&'a mut [T], &'a mut [T]), &'a mut [T]), &'a mut [T]),
    &'a mut i32,
);

/// The GPU part of [`gtsv_strided_batch`]: the systems stacked block-diagonally (B packed to
/// leading dimension `n·count`) and solved by SPIKE in one call, then each system judged on its
/// own (the stack's check is normwise over all systems, which could hide a poor answer of a
/// system with small entries). Writes the accepted systems' answers into `b`; returns which
/// systems are done and how many were rejected, or why nothing was (the note).
#[allow(clippy::too_many_arguments)]
fn solve_stacked<T: Lapack>(
    opts: &Options,
    n: usize,
    nrhs: usize,
    dl: &[T],
    d: &[T],
    du: &[T],
    sa: usize,
    b: &mut [T],
    ldb: usize,
    sb: usize,
    count: usize,
) -> Result<(Vec<bool>, usize), String> {
    let m1 = n - 1;
    let big = n
        .checked_mul(count)
        .ok_or("the stacked system is too large; CPU path ran")?;
    let no_memory = || "no host memory to stack the systems; CPU path ran".to_string();
    let mut sdl = try_vec(big - 1, T::ZERO).ok_or_else(no_memory)?;
    let mut sd = try_vec(big, T::ZERO).ok_or_else(no_memory)?;
    let mut sdu = try_vec(big - 1, T::ZERO).ok_or_else(no_memory)?;
    let mut sbx = big
        .checked_mul(nrhs)
        .and_then(|len| try_vec(len, T::ZERO))
        .ok_or_else(no_memory)?;
    let mut done = try_vec(count, false).ok_or_else(no_memory)?;
    for k in 0..count {
        let (r, a0, b0) = (k * n, k * sa, k * sb);
        sd[r..r + n].copy_from_slice(&d[a0..a0 + n]);
        sdl[r..r + m1].copy_from_slice(&dl[a0..a0 + m1]);
        sdu[r..r + m1].copy_from_slice(&du[a0..a0 + m1]);
        for c in 0..nrhs {
            sbx[c * big + r..c * big + r + n].copy_from_slice(&b[b0 + c * ldb..b0 + c * ldb + n]);
        }
    }
    match gpu::solve(&opts.gpu, &sdl, &sd, &sdu, &mut sbx, big, nrhs) {
        Ok(Ok(())) => {
            let mut rejected = 0;
            for (k, done) in done.iter_mut().enumerate() {
                let (r, a0, b0) = (k * n, k * sa, k * sb);
                let (kdl, kd, kdu) = (&dl[a0..a0 + m1], &d[a0..a0 + n], &du[a0..a0 + m1]);
                let checks = (0..nrhs).map(|c| {
                    let x = &sbx[c * big + r..c * big + r + n];
                    residual_rows(kdl, kd, kdu, x, &b[b0 + c * ldb..], 0..n)
                });
                if judge(checks.collect::<Vec<_>>()).is_ok() {
                    for c in 0..nrhs {
                        b[b0 + c * ldb..b0 + c * ldb + n]
                            .copy_from_slice(&sbx[c * big + r..c * big + r + n]);
                    }
                    *done = true;
                } else {
                    rejected += 1;
                }
            }
            Ok((done, rejected))
        }
        Ok(Err(reject)) => Err(format!("{reject}; LAPACK xGTSV ran on every system")),
        Err(e) => Err(format!("GPU path unavailable ({e}); CPU path ran")),
    }
}

/// One right-hand side's residual summary: `max|r_i|`, `max scale_i`, `max|b_i|`, all finite.
pub type Residual<T> = (T, T, T, bool);

/// The residual check of one right-hand side over rows `rows` (see the module comment).
/// `x` and `f` are the full columns.
pub fn residual_rows<T: Real>(
    dl: &[T],
    d: &[T],
    du: &[T],
    x: &[T],
    f: &[T],
    rows: std::ops::Range<usize>,
) -> Residual<T> {
    residual_rows_into(dl, d, du, x, f, rows, None, false)
}

/// `f_i − (A x)_i` with the products exact (FMA) and the sum compensated, in double precision:
/// accurate to about `ε |r_i| + ε² (|A||x| + |f|)_i`, so a refinement step sees the true residual
/// rather than the rounding noise of its own evaluation.
fn residual_accurate(f: f64, terms: [(f64, f64); 3]) -> f64 {
    let (mut s, mut e) = (f, 0.0f64);
    for (a, x) in terms {
        let (p, pl) = crate::real::two_prod(a, x);
        let (s2, e2) = crate::real::two_sum(s, -p);
        s = s2;
        e += e2 - pl;
    }
    s + e
}

/// [`residual_rows`], also storing `r_i = f_i − (A x)_i` into `r` (`r[0]` is row `rows.start`).
pub fn residual_rows_into<T: Real>(
    dl: &[T],
    d: &[T],
    du: &[T],
    x: &[T],
    f: &[T],
    rows: std::ops::Range<usize>,
    mut r_out: Option<&mut [T]>,
    accurate: bool,
) -> Residual<T> {
    let n = d.len();
    let row0 = rows.start;
    let (mut rmax, mut smax, mut bmax, mut finite) = (T::ZERO, T::ZERO, T::ZERO, true);
    for i in rows {
        let mut ax = d[i] * x[i];
        let mut s = ax.abs();
        if i > 0 {
            let t = dl[i - 1] * x[i - 1];
            ax = ax + t;
            s = s + t.abs();
        }
        if i + 1 < n {
            let t = du[i] * x[i + 1];
            ax = ax + t;
            s = s + t.abs();
        }
        let r_signed = if accurate {
            let xm = if i > 0 {
                (dl[i - 1].to_f64(), x[i - 1].to_f64())
            } else {
                (0.0, 0.0)
            };
            let xp = if i + 1 < n {
                (du[i].to_f64(), x[i + 1].to_f64())
            } else {
                (0.0, 0.0)
            };
            T::from_f64(residual_accurate(
                f[i].to_f64(),
                [(d[i].to_f64(), x[i].to_f64()), xm, xp],
            ))
        } else {
            f[i] - ax
        };
        if let Some(out) = r_out.as_deref_mut() {
            out[i - row0] = r_signed;
        }
        let r = r_signed.abs();
        s = s + f[i].abs();
        finite &= x[i].is_finite() && r.is_finite() && s.is_finite();
        rmax = rmax.max(r);
        smax = smax.max(s);
        bmax = bmax.max(f[i].abs());
    }
    (rmax, smax, bmax, finite)
}

/// Turns per-RHS residual summaries into the acceptance decision.
pub fn judge<T: Real>(per_rhs: impl IntoIterator<Item = Residual<T>>) -> Result<(), Reject> {
    let tol = T::from_f64(RESIDUAL_TOL_EPS) * T::EPS;
    let tol_b = T::EPS.sqrt();
    let mut worst = 0.0f64;
    let mut ill = 0.0f64;
    for (r, s, bmax, finite) in per_rhs {
        if !finite {
            return Err(Reject::NonFinite);
        }
        // r ≤ tol·s, written so that s = 0 (a zero column, x = 0) accepts only r = 0.
        if !(r <= tol * s) {
            let ratio = if s > T::ZERO {
                (r / s).to_f64()
            } else {
                f64::INFINITY
            };
            worst = worst.max(ratio);
        } else if !(r <= tol_b * bmax) {
            let ratio = if bmax > T::ZERO {
                (r / bmax).to_f64()
            } else {
                f64::INFINITY
            };
            ill = ill.max(ratio);
        }
    }
    if worst > 0.0 {
        Err(Reject::Residual(worst))
    } else if ill > 0.0 {
        Err(Reject::IllConditioned(ill))
    } else {
        Ok(())
    }
}

/// A column is refined when its residual is above this many ε times its scale
/// (`max|r| > REFINE_TOL_EPS · ε · max(|A||x| + |b|)`) and well above the rounding level of `b`
/// (`max|r| > REFINE_B_EPS · ε · max|b|`). On systems of order 2^21, LAPACK's partial pivoting
/// ends at 0.13–0.22 ε times that scale on random matrices and at about 0.5 on diagonally
/// dominant ones, where its residual is 2.4–3 ε max|b|. With 2 instead of 0.5, 4 of 300 runs
/// of the paper's Table III types at n = 512 ended 10–25 times above LAPACK's ‖r‖/‖b‖
/// (`table3_stress_many_seeds`); with 0.5, none. The second condition spares well-conditioned
/// systems a step that could not bring them much below LAPACK's residual.
pub const REFINE_TOL_EPS: f64 = 0.5;
/// See [`REFINE_TOL_EPS`].
pub const REFINE_B_EPS: f64 = 16.0;

/// At most this many steps of iterative refinement per call: 2 unless `HYLAPACK_GTSV_REFINE`
/// says fewer. On random systems of order 2^22-2^24 SPIKE's first answer had relative residuals
/// 2-7 times LAPACK's (1.3-2.8 times cuSPARSE gtsv2's); the step that brings them to LAPACK's
/// level costs about 40% of a device-pointer solve (docs/bench/2026-11-22-h100-gtsv-7.txt).
pub fn refine_steps() -> usize {
    crate::config::get().gtsv_refine
}

/// Whether a column's residual summary asks for a refinement step (finite and above both
/// levels of [`REFINE_TOL_EPS`]; a non-finite answer is rejected, not refined).
pub fn wants_refinement<T: Real>(res: &Residual<T>) -> bool {
    let (r, s, b, finite) = *res;
    finite
        && r > T::from_f64(REFINE_TOL_EPS) * T::EPS * s
        && r > T::from_f64(REFINE_B_EPS) * T::EPS * b
}

/// Splits each of the `ncols` columns (leading dimension `ld`, first `n` rows used) of `buf` at
/// `bounds` (row indices, `bounds[0] = 0`, last `= n`): `out[t][col]` is rows
/// `bounds[t]..bounds[t+1]` of column `col`.
pub(crate) fn split_rows<'a, T>(
    buf: &'a mut [T],
    ld: usize,
    ncols: usize,
    bounds: &[usize],
) -> Vec<Vec<&'a mut [T]>> {
    let parts = bounds.len() - 1;
    let mut out: Vec<Vec<&'a mut [T]>> = (0..parts).map(|_| Vec::with_capacity(ncols)).collect();
    for col in buf.chunks_mut(ld).take(ncols) {
        let mut rest = col;
        for t in 0..parts {
            let (head, tail) = rest.split_at_mut(bounds[t + 1] - bounds[t]);
            out[t].push(head);
            rest = tail;
        }
    }
    out
}

/// The residual summaries of columns `xcols[k]` of `x` (leading dimension `ldx`) against
/// columns `fcols[k]` of `f` (leading dimension `ldf`), over all rows, on `threads` threads. With
/// `r_out` (`n × xcols.len()`, leading dimension `n`) the residuals `f − A x` are stored too;
/// `accurate` evaluates them with exact products and a compensated sum.
#[allow(clippy::too_many_arguments)]
pub fn residual_cols<T: Real>(
    dl: &[T],
    d: &[T],
    du: &[T],
    x: &[T],
    ldx: usize,
    xcols: &[usize],
    f: &[T],
    ldf: usize,
    fcols: &[usize],
    r_out: Option<&mut [T]>,
    threads: usize,
    accurate: bool,
) -> Vec<Residual<T>> {
    let n = d.len();
    let k = xcols.len();
    debug_assert_eq!(k, fcols.len());
    let threads = threads.clamp(1, n.max(1));
    let bounds: Vec<usize> = (0..=threads).map(|t| t * n / threads).collect();
    let mut r_parts: Vec<Option<Vec<&mut [T]>>> = match r_out {
        Some(r) => split_rows(&mut r[..n * k], n, k, &bounds)
            .into_iter()
            .map(Some)
            .collect(),
        None => (0..threads).map(|_| None).collect(),
    };
    let one = |rows: std::ops::Range<usize>, mut rp: Option<Vec<&mut [T]>>| -> Vec<Residual<T>> {
        (0..k)
            .map(|c| {
                let xc = &x[xcols[c] * ldx..xcols[c] * ldx + n];
                let fc = &f[fcols[c] * ldf..fcols[c] * ldf + n];
                residual_rows_into(
                    dl,
                    d,
                    du,
                    xc,
                    fc,
                    rows.clone(),
                    rp.as_mut().map(|v| &mut *v[c]),
                    accurate,
                )
            })
            .collect()
    };
    let parts: Vec<Vec<Residual<T>>> = if threads == 1 {
        vec![one(0..n, r_parts.pop().flatten())]
    } else {
        std::thread::scope(|s| {
            let handles: Vec<_> = r_parts
                .into_iter()
                .enumerate()
                .map(|(t, rp)| {
                    let rows = bounds[t]..bounds[t + 1];
                    let one = &one;
                    s.spawn(move || one(rows, rp))
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("residual thread"))
                .collect()
        })
    };
    (0..k)
        .map(|c| {
            parts
                .iter()
                .fold((T::ZERO, T::ZERO, T::ZERO, true), |acc, p| {
                    let (r, sc, bm, fin) = p[c];
                    (acc.0.max(r), acc.1.max(sc), acc.2.max(bm), acc.3 && fin)
                })
        })
        .collect()
}

/// Iterative refinement in working precision, shared by the CPU and GPU drivers: while some
/// column of `x` (leading dimension `ldx`) [`wants_refinement`], at most [`refine_steps`]
/// times: compute `r = f − A x` for those columns, solve `A δ = r` with the factorization SPIKE
/// already has (`correct(r, k)`: `r` holds `k` packed columns of leading dimension `n` on entry
/// and `δ` on return; `Ok(false)` if it could not solve), and replace a column by `x + δ` only
/// where that lowers its residual. `checks` (one summary per column of `x`) is kept current.
/// Returns the number of steps taken.
#[allow(clippy::too_many_arguments)]
pub(crate) fn refine<T: Real, E>(
    dl: &[T],
    d: &[T],
    du: &[T],
    x: &mut [T],
    ldx: usize,
    f: &[T],
    ldf: usize,
    checks: &mut [Residual<T>],
    threads: usize,
    mut correct: impl FnMut(&mut [T], usize) -> Result<bool, E>,
) -> Result<usize, E> {
    let n = d.len();
    let Some(mut stalled) = try_vec(checks.len(), false) else {
        return Ok(0);
    };
    let mut steps = 0;
    for _ in 0..refine_steps() {
        let cols: Vec<usize> = (0..checks.len())
            .filter(|&c| !stalled[c] && wants_refinement(&checks[c]))
            .collect();
        if cols.is_empty() {
            break;
        }
        let k = cols.len();
        // Refinement is optional: without memory for the residuals, the answer is judged as
        // it is (and LAPACK runs if it falls short).
        let Some(mut r) = try_vec(n * k, T::ZERO) else {
            break;
        };
        // The residual with exact products: the current x's true residual, both the right-hand
        // side of the correction and the baseline to beat.
        let old = residual_cols(
            dl,
            d,
            du,
            x,
            ldx,
            &cols,
            f,
            ldf,
            &cols,
            Some(&mut r),
            threads,
            true,
        );
        for (kk, &c) in cols.iter().enumerate() {
            checks[c] = old[kk];
        }
        if !correct(&mut r, k)? {
            break;
        }
        steps += 1;
        // r := x + δ, then keep it where its residual is smaller.
        for (kk, &c) in cols.iter().enumerate() {
            let (xc, dc) = (&x[c * ldx..c * ldx + n], &mut r[kk * n..(kk + 1) * n]);
            for (di, &xi) in dc.iter_mut().zip(xc) {
                *di = xi + *di;
            }
        }
        let packed: Vec<usize> = (0..k).collect();
        let new = residual_cols(
            dl, d, du, &r, n, &packed, f, ldf, &cols, None, threads, true,
        );
        for (kk, &c) in cols.iter().enumerate() {
            let (rn, _, _, fin) = new[kk];
            if fin && rn < checks[c].0 {
                x[c * ldx..c * ldx + n].copy_from_slice(&r[kk * n..(kk + 1) * n]);
                checks[c] = new[kk];
            } else {
                stalled[c] = true;
            }
        }
    }
    Ok(steps)
}
