//! The stages of the drivers, composed: the bandwidths, dense → band → tridiagonal, and the
//! tridiagonal's eigenvalues by bisection.

use crate::dispatch::{self, Backend};
use crate::host::try_vec;
use crate::lapack::Dense;
use crate::real::Real;
use crate::sbr::executor::cpu::CpuExecutor;
use crate::sbr::executor::gpu::{self, CublasReal, GpuExecutor};
use crate::sbr::executor::host_vec;
use crate::sbr::sbrdb::{self, narrow as narrow_band};
use crate::sbr::{plan, sb2st, streaming_budget, syrdb_band, Mode, Path, SyrdbReport};

/// The bandwidth of the intermediate band matrix when the matrix fits in the executor's
/// memory. A wider band makes the dense → band reduction's rank-2kd updates faster on the GPU
/// and the bulge chasing slower (its time is about 2n steps, each costlier with kd). Measured
/// on an H100, the stages of the path summed (dense → band with transfers, GPU chasing, GPU
/// bisection), kd = 32 against kd = 64: n = 8192 0.34-0.43 s against 0.36-0.37 s, n = 16384
/// 0.85-0.94 s against 0.75-0.77 s since DSYMM runs by halves (docs/bench/2026-11-22-h100-syev-8.txt;
/// before it, 0.69 s against 0.79 s without transfers); n = 32768 3.52 s against 2.81 s
/// (docs/bench/2026-11-22-h100-syev-5.txt).
pub fn bandwidth(n: usize) -> usize {
    let kd = if n <= 8192 { 32 } else { 64 };
    kd.min(n.saturating_sub(1)).max(1)
}

/// The bandwidth when the matrix streams through the executor (out of core) and no wide first
/// band fits ([`wide_bandwidth`]): each step moves the trailing matrix over the bus (two or
/// three times), so the traffic falls as 1/kd and a wider band pays.
pub fn bandwidth_streaming(n: usize) -> usize {
    let kd = if n < 4096 { 32 } else { 64 };
    kd.min(n.saturating_sub(1)).max(1)
}

/// The widest first band of the out-of-core path, or None: the dense matrix streams through
/// the executor to `kw` off-diagonals (its traffic over the bus falls as 1/kw: the trailing
/// matrix travels up and down once per kw columns), then [`sbrdb`] narrows the band
/// to `kd` in the executor's memory. `kw` is the widest of 2048, 1024, …, 4kd whose streaming
/// block columns can be wider than kw (as a pass that takes the next panel and SYMM along
/// needs, see `syr2k_pass`), whose narrowing fits, and that is at most n/4. Narrower
/// first bands do not pay for the narrowing's steps: on an H100 at n = 4096 (a quarter of
/// the matrix on the GPU), 64 → 32 took 1.2 s where streaming at kd = 64 took 0.6 s in all.
pub fn wide_bandwidth(n: usize, kd: usize, elem: usize, budget: u64) -> Option<usize> {
    (0..6)
        .map(|p| 2048 >> p)
        .filter(|&kw| kw >= 4 * kd && kw <= n / 4)
        .find(|&kw| {
            let streaming = streaming_budget(n, kw, kw + 1, elem);
            let narrowing = (sbrdb::footprint(n, kw, kd) * elem) as u64;
            streaming <= budget && narrowing <= budget
        })
}

/// The bandwidths the drivers use on `path`: the final band's `kd` ([`bandwidth`] if the
/// matrix will be resident or a wide first band fits, else [`bandwidth_streaming`]) and, out
/// of core, the wide first band's ([`wide_bandwidth`]).
pub fn driver_bandwidths<T>(n: usize, path: Path) -> (usize, Option<usize>) {
    let kd = bandwidth(n);
    let budget = match path {
        Path::Lapack => return (kd, None),
        Path::CpuBlocked { budget } => Some(budget),
        Path::Gpu { budget } => gpu::budget(budget),
    };
    let elem = std::mem::size_of::<T>();
    match budget.map(|b| (b, plan(n, kd, elem, b))) {
        Some((_, Ok(Mode::Resident))) | None => (kd, None),
        Some((b, _)) => match wide_bandwidth(n, kd, elem, b) {
            Some(kw) => (kd, Some(kw)),
            None => (bandwidth_streaming(n), None),
        },
    }
}

/// The host memory of the reduction that is allocated before `a` is touched: the first band
/// (and the τ the reduction leaves), at the bandwidths [`driver_bandwidths`] gives.
pub(super) struct BandWork<T> {
    ab: Vec<T>,
    tau: Vec<T>,
    kd: usize,
    wide: Option<usize>,
}

impl<T: Real> BandWork<T> {
    /// The workspace of an n x n problem (n ≥ 2) on `path`, or why it cannot be allocated.
    pub(super) fn new(n: usize, path: Path) -> Result<Self, String> {
        let (kd, wide) = driver_bandwidths::<T>(n, path);
        let first = wide.unwrap_or(kd);
        let (ab, tau) = (
            host_vec((first + 1) * n, T::ZERO),
            host_vec(n - first.min(n), T::ZERO),
        );
        match (ab, tau) {
            (Ok(ab), Ok(tau)) => Ok(BandWork { ab, tau, kd, wide }),
            (Err(e), _) | (_, Err(e)) => Err(format!("the band: {e}")),
        }
    }
}

/// The tridiagonal matrix (d, e) similar to the n x n `a` (n ≥ 2), by band reduction on `path`
/// into `work` and bulge chasing (on the GPU when the band reduction ran there, else on the
/// CPU's threads; the CPU also takes over if the GPU fails). `a` is destroyed. Fails, with why,
/// only for want of host memory (a later stage's, or what the reduction could do without).
pub(super) fn tridiagonal<T: Real + Dense + CublasReal>(
    uplo: u8,
    n: usize,
    a: &mut [T],
    lda: usize,
    work: BandWork<T>,
    path: Path,
) -> Result<(Vec<T>, Vec<T>, SyrdbReport), String> {
    // The narrowing's and the bulge chasing's settings (the dense → band reduction reads its
    // own once, in `syrdb_band`).
    let profile = crate::config::get().sbr.profile;
    let BandWork {
        mut ab,
        mut tau,
        kd,
        wide,
    } = work;
    let first = wide.unwrap_or(kd);
    let ldab = first + 1;
    let mut report = syrdb_band(uplo, n, first, a, lda, &mut ab, ldab, &mut tau, path);
    drop(tau);
    if report.info != 0 {
        return Err(report.note.unwrap_or_default());
    }
    let (uplo, ab, ldab) = match wide {
        Some(kw) => {
            let (band, note) = narrow(uplo, n, kw, &ab, kd, report.backend, path, profile)?;
            report.note = Some(match report.note.take() {
                Some(before) => format!("{before}; {note}"),
                None => note,
            });
            (b'L', band, kd + 1)
        }
        None => (uplo, ab, ldab),
    };
    let on_gpu = report.backend == Backend::Gpu && kd <= sb2st::gpu::MAX_BANDWIDTH;
    let chased = on_gpu
        .then(|| sb2st::gpu::tridiagonalize(uplo, n, kd, &ab, ldab, profile))
        .and_then(|r| {
            r.map_err(|e| dispatch::debug(|| format!("bulge chasing on the CPU: {e}")))
                .ok()
        });
    let (d, e) = match chased {
        Some(de) => de,
        None => sb2st::tridiagonalize(uplo, n, kd, &ab, ldab, 0)
            .ok_or("bulge chasing: cannot allocate its host memory")?,
    };
    Ok((d, e, report))
}

/// The band `ab` (`uplo`, `kw` off-diagonals, leading dimension kw + 1) narrowed to `kd`
/// off-diagonals ([`sbrdb`]), in lower band storage: on the GPU if the band reduction
/// ran there and the GPU does not fail, else on the CPU. Returns it with a note of where, or
/// why the CPU could not (host memory).
#[allow(clippy::too_many_arguments)]
fn narrow<T: Real + Dense + CublasReal>(
    uplo: u8,
    n: usize,
    kw: usize,
    ab: &[T],
    kd: usize,
    backend: Backend,
    path: Path,
    profile: bool,
) -> Result<(Vec<T>, String), String> {
    let note = |on: &str| format!("band {kw} → {kd} on the {on}");
    if let (Backend::Gpu, Path::Gpu { budget }) = (backend, path) {
        let narrowed = GpuExecutor::<T>::new(budget)
            .and_then(|mut exec| narrow_band(&mut exec, uplo, n, kw, ab, kw + 1, kd, profile));
        match narrowed {
            Ok(band) => return Ok((band, note("GPU"))),
            Err(e) => dispatch::debug(|| format!("band narrowing on the CPU: {e}")),
        }
    }
    // The CPU executor fails only for want of host memory.
    let mut cpu = CpuExecutor::new(u64::MAX);
    let band = narrow_band(&mut cpu, uplo, n, kw, ab, kw + 1, kd, profile)
        .map_err(|e| format!("band narrowing: {e}"))?;
    Ok((band, note("CPU")))
}

/// All eigenvalues of the tridiagonal (d, e) into `w`, ascending, by the crate's bisection on
/// the GPU; false if it did not converge everywhere (then `w` is to be recomputed).
pub(super) fn all_by_bisection<T: Real>(d: &[T], e: &[T], w: &mut [T]) -> bool {
    let n = d.len();
    // Without room for them, xSTERF (no workspace) computes the eigenvalues instead.
    let (Some(mut iblock), Some(mut isplit)) = (try_vec(n, 0), try_vec(n, 0)) else {
        return false;
    };
    let r = crate::stebz::stebz(
        b'A',
        b'E',
        T::ZERO,
        T::ZERO,
        0,
        0,
        T::ZERO,
        d,
        &e[..n - 1],
        w,
        &mut iblock,
        &mut isplit,
        Backend::Gpu,
    );
    r.info == 0 && r.m == n as i32
}
