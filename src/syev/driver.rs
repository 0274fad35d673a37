//! The stages of the drivers, composed: the bandwidths, dense → band → tridiagonal, and the
//! tridiagonal's eigenvalues by bisection.

use super::back_transformation::{back_transform, Q1};
use super::tridiagonal_vectors::{by_inverse_iteration, divide_and_conquer, inverse_iteration};
use crate::dispatch::{self, Backend};
use crate::host::try_vec;
use crate::real::Real;
use crate::sbr::executor::cpu::CpuExecutor;
use crate::sbr::executor::gpu::{self, GpuExecutor};
use crate::sbr::executor::host_zeros;
use crate::sbr::sbrdb::{self, narrow as narrow_band};
use crate::sbr::SbrReal;
use crate::sbr::{plan, sb2st, streaming_budget, syrdb_band, Mode, Path, SyrdbReport};
use std::time::Instant;

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
        Self::with(n, kd, wide)
    }

    /// The band of the eigenvector path: out of core the matrix streams straight to the final
    /// band ([`bandwidth_streaming`]), since the narrowing of a wide first band does not keep
    /// its reflectors.
    fn for_vectors(n: usize, path: Path) -> Result<Self, String> {
        match driver_bandwidths::<T>(n, path) {
            (_, Some(_)) => Self::with(n, bandwidth_streaming(n), None),
            (kd, None) => Self::with(n, kd, None),
        }
    }

    fn with(n: usize, kd: usize, wide: Option<usize>) -> Result<Self, String> {
        let first = wide.unwrap_or(kd);
        let (ab, tau) = (host_zeros((first + 1) * n), host_zeros(n - first.min(n)));
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
pub(super) fn tridiagonal<T: SbrReal>(
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
fn narrow<T: SbrReal>(
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

/// The host memory of the eigenvector path that is allocated before `a` is touched: the band
/// and its τ ([`BandWork`]), the n x n eigenvectors Z (xSYEV's; xSYEVX writes the caller's),
/// and the room for Q2.
pub(super) struct VectorWork<T> {
    band: BandWork<T>,
    z: Vec<T>,
    q2: sb2st::Reflectors<T>,
}

impl<T: Real> VectorWork<T> {
    /// The workspace of an n x n problem (n ≥ 2) on `path` ([`BandWork::for_vectors`]), with
    /// room for Z if `with_z`, or why the call goes to the system LAPACK instead: host memory.
    pub(super) fn new(n: usize, path: Path, with_z: bool) -> Result<Self, String> {
        let band = BandWork::for_vectors(n, path).map_err(|e| format!("no host memory for {e}"))?;
        let z_len = if with_z { n * n } else { 0 };
        let z = crate::host::try_zeroed(z_len).ok_or("no host memory for the eigenvectors")?;
        let q2 = sb2st::Reflectors::new(n, band.kd).ok_or("no host memory for Q2")?;
        Ok(VectorWork { band, z, q2 })
    }
}

/// Seconds per stage of an eigenvector call, as the driver's clock saw them (0 for a stage
/// that did not run); for benchmarks, never printed by the library.
#[derive(Clone, Copy, Debug, Default)]
pub struct StageTimes {
    /// Dense → band (transfers included).
    pub reduction: f64,
    /// Band → tridiagonal, keeping Q2.
    pub chase: f64,
    /// The tridiagonal's eigenvectors (xSTEDC, or bisection and inverse iteration).
    pub tridiagonal_vectors: f64,
    /// Z := Q2 Z.
    pub q2: f64,
    /// Z := Q1 Z (transfers included).
    pub q1: f64,
    /// Of the above, the time spent moving matrices between host and GPU: the resident
    /// reduction's and Q1's block columns (each timed between synchronisations).
    pub transfers: f64,
    /// The chase ran on the GPU, else on the host's threads.
    pub chase_on_gpu: bool,
    /// All of the tridiagonal's eigenvectors came from the GPU's bisection and inverse
    /// iteration, else from xSTEDC / xSTEQR (or, for a selection, the host's bisection and
    /// inverse iteration).
    pub inverse_iteration: bool,
    /// Q2 ran on the GPU, else on the host's threads.
    pub q2_on_gpu: bool,
    /// The block columns Z went through the GPU in for Q2, and the pieces Q2 came in for each
    /// (1: whole, once).
    pub q2_block_columns: usize,
    pub q2_pieces: usize,
    /// Q1 ran on the GPU (cuBLAS), else on the host.
    pub q1_on_gpu: bool,
    /// The block columns Z went through the executor in (0: Q1 on the host's xORMQR/xORMLQ).
    pub q1_block_columns: usize,
}

/// A matrix reduced to the tridiagonal (d, e) keeping both orthogonal factors: Q1's reflectors
/// in A (with `tau`) and Q2 (where, see [`Q2Kept`]); the band, for a chase again should Q2 be
/// lost; the stages' times so far.
pub(super) struct Kept<T> {
    d: Vec<T>,
    e: Vec<T>,
    uplo: u8,
    kd: usize,
    ab: Vec<T>,
    tau: Vec<T>,
    q2: Q2Kept<T>,
    times: StageTimes,
}

/// A stage that finds eigenvectors of the tridiagonal (d, e) into Z, d and e its to overwrite,
/// and returns how many it found (or fails, with why, for want of host memory).
pub(super) type TridiagonalVectors<'a, T> =
    dyn FnMut(&mut Vec<T>, &mut Vec<T>, &mut [T]) -> Result<usize, String> + 'a;

/// Where the chase left Q2: in host memory, or on the GPU (then the host's room for it is
/// filled only if its application there fails). Gone: lost with the GPU (then the chase must
/// run again), or freed after its application there.
pub(super) enum Q2Kept<T> {
    Host(sb2st::Reflectors<T>),
    Gpu(sb2st::gpu::DeviceReflectors<T>, sb2st::Reflectors<T>),
    Gone(sb2st::Reflectors<T>),
}

/// Whether Q2 stays on the GPU after the chase: where the GPU's kernel applies Q2 of bandwidth
/// `kd`, and Q2 fits the path's budget and the GPU's with room for the n x m Z and the inverse
/// iteration's workspace (about Z again) beside it.
fn q2_stays_on_gpu(
    budget: Option<u64>,
    (n, kd, m): (usize, usize, usize),
    q2_bytes: u64,
    elem: usize,
) -> bool {
    let needed = q2_bytes + 2 * (n * m * elem) as u64;
    sb2st::apply_gpu::supports(kd.max(1))
        && within(budget, needed)
        && crate::device::gpu().is_ok_and(|g| needed <= g.budget.available())
}

/// Dense → band keeping Q1 in `a` ([`crate::sbr::syrdb`] on `path`), band → tridiagonal keeping
/// Q2 (on the GPU for `Path::Gpu`, else or if it fails on the host's threads), for the n x n
/// `a` (n ≥ 2) whose eigenvectors will be at most `m`: the tridiagonal with both factors, and
/// the workspace's Z; fails, with why, for want of host memory after `a` was touched.
pub(super) fn reduce_keeping<T: SbrReal>(
    uplo: u8,
    n: usize,
    a: &mut [T],
    lda: usize,
    m: usize,
    work: VectorWork<T>,
    path: Path,
) -> Result<(Kept<T>, Vec<T>, SyrdbReport), String> {
    let VectorWork { band, mut z, q2 } = work;
    // On the GPU path the host mostly waits through the reduction and the chase: Z's pages
    // (n² entries, allocated lazily) are faulted in meanwhile, not later by the stages that
    // first write Z (the tridiagonal's vectors, page-locking); on half the host's threads (one
    // maps only 1–2 GB/s, less than Z's size over the reduction's time at large n), the
    // others left to the reduction.
    let (_, reduced) = if matches!(path, Path::Gpu { .. }) && !z.is_empty() {
        let threads = (crate::host::threads() / 2).max(1);
        crate::host::workers::alongside(
            || crate::host::fault_in(&mut z, threads),
            || reduce_and_chase(uplo, n, a, lda, m, band, q2, path),
        )
    } else {
        ((), reduce_and_chase(uplo, n, a, lda, m, band, q2, path))
    };
    let (kept, report) = reduced?;
    Ok((kept, z, report))
}

/// [`reduce_keeping`]'s stages: dense → band, band → tridiagonal.
#[allow(clippy::too_many_arguments)]
fn reduce_and_chase<T: SbrReal>(
    uplo: u8,
    n: usize,
    a: &mut [T],
    lda: usize,
    m: usize,
    band: BandWork<T>,
    mut q2: sb2st::Reflectors<T>,
    path: Path,
) -> Result<(Kept<T>, SyrdbReport), String> {
    let BandWork {
        mut ab,
        mut tau,
        kd,
        ..
    } = band;
    let ldab = kd + 1;
    let mut times = StageTimes::default();
    let clock = Instant::now();
    let report = crate::sbr::syrdb(uplo, n, kd, a, lda, &mut ab, ldab, &mut tau, path);
    times.reduction = clock.elapsed().as_secs_f64();
    times.transfers = report.transfer_secs.unwrap_or(0.0);
    if report.info != 0 {
        return Err(report.note.unwrap_or_default());
    }
    let clock = Instant::now();
    let elem = std::mem::size_of::<T>();
    let mut on_gpu = None;
    if let Path::Gpu { budget } = path {
        if kd <= sb2st::gpu::MAX_BANDWIDTH && within(budget, q2.bytes()) {
            let chased = if q2_stays_on_gpu(budget, (n, kd, m), q2.bytes(), elem) {
                sb2st::gpu::tridiagonalize_keeping_on_gpu(uplo, n, kd, &ab, ldab)
                    .map(|(de, device)| (de, Some(device)))
            } else {
                sb2st::gpu::tridiagonalize_keeping(uplo, n, kd, &ab, ldab, &mut q2)
                    .map(|de| (de, None))
            };
            match chased {
                Ok(done) => on_gpu = Some(done),
                Err(e) => dispatch::debug(|| format!("syev: bulge chasing on the host: {e}")),
            }
        }
    }
    times.chase_on_gpu = on_gpu.is_some();
    let (d, e, q2) = match on_gpu {
        Some(((d, e), Some(device))) => (d, e, Q2Kept::Gpu(device, q2)),
        Some(((d, e), None)) => (d, e, Q2Kept::Host(q2)),
        None => {
            let (d, e) = sb2st::tridiagonalize_keeping(uplo, n, kd, &ab, ldab, 0, &mut q2)
                .ok_or("bulge chasing: cannot allocate its host memory")?;
            (d, e, Q2Kept::Host(q2))
        }
    };
    times.chase = clock.elapsed().as_secs_f64();
    let kept = Kept {
        d,
        e,
        uplo,
        kd,
        ab,
        tau,
        q2,
        times,
    };
    Ok((kept, report))
}

impl<T: SbrReal> Kept<T> {
    /// Runs `vectors` (the tridiagonal's eigenvectors into the n x m `z`, leading dimension
    /// `ldz`, from `d` and `e`, which it may overwrite; it returns m), then Z := Q1 Q2 Z (`a`,
    /// `n` and `path` those given to [`reduce_keeping`]). Should Q2 be lost with the GPU, the
    /// band is chased again on the host and both run once more: Z_T must be the eigenvectors of
    /// the tridiagonal matrix that this Q2 made. The stages' times; fails, with why, for want
    /// of host memory.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn vectors_and_back_transform(
        mut self,
        n: usize,
        a: &[T],
        lda: usize,
        z: &mut [T],
        ldz: usize,
        path: Path,
        vectors: &mut TridiagonalVectors<'_, T>,
    ) -> Result<StageTimes, String> {
        loop {
            let clock = Instant::now();
            let m = vectors(&mut self.d, &mut self.e, z)?;
            self.times.tridiagonal_vectors += clock.elapsed().as_secs_f64();
            let q1 = Q1 {
                uplo: self.uplo,
                n,
                kd: self.kd,
                a,
                lda,
                tau: &self.tau,
            };
            if let Some(times) =
                back_transform(&q1, &mut self.q2, &mut self.times, (path, m), z, ldz)?
            {
                return Ok(times);
            }
            dispatch::debug(|| {
                "syev: Q2 lost with the GPU; bulge chasing again on the host".into()
            });
            self.chase_again_on_host(n)?;
        }
    }

    /// Band → tridiagonal again on the host's threads, keeping Q2 there (after Q2 was lost).
    fn chase_again_on_host(&mut self, n: usize) -> Result<(), String> {
        let clock = Instant::now();
        let mut q2 = match std::mem::replace(&mut self.q2, Q2Kept::Gone(empty_reflectors())) {
            Q2Kept::Host(q) | Q2Kept::Gpu(_, q) | Q2Kept::Gone(q) => q,
        };
        let (d, e) =
            sb2st::tridiagonalize_keeping(self.uplo, n, self.kd, &self.ab, self.kd + 1, 0, &mut q2)
                .ok_or("bulge chasing: cannot allocate its host memory")?;
        (self.d, self.e, self.q2) = (d, e, Q2Kept::Host(q2));
        self.times.chase_on_gpu = false;
        self.times.chase += clock.elapsed().as_secs_f64();
        Ok(())
    }

    /// Q2 as if the GPU had failed with it: gone, and its host room never filled.
    #[cfg(test)]
    fn lose_q2(&mut self, n: usize) {
        let room = sb2st::Reflectors::new(n, self.kd).expect("host memory");
        self.q2 = Q2Kept::Gone(room);
    }
}

/// Room for no Q2 (a placeholder while one is moved).
pub(super) fn empty_reflectors<T: Real>() -> sb2st::Reflectors<T> {
    sb2st::Reflectors::new(0, 1).expect("no memory to allocate")
}

/// Whether `bytes` fit a path's budget (`None`: only the GPU's own, which the stage checks).
fn within(budget: Option<u64>, bytes: u64) -> bool {
    budget.is_none_or(|b| bytes <= b)
}

/// The eigenvalues (ascending, into `w`) and eigenvectors (over `a`) of the n x n `a` (n ≥ 2):
/// [`reduce_keeping`], the tridiagonal's eigenvectors Z_T ([`inverse_iteration`] where
/// [`by_inverse_iteration`] says so, else or if it does not succeed xSTEDC, or xSTEQR when
/// xSTEDC fails or its workspace does not fit, whose INFO > 0 is xSYEV's), then Q1 Q2 Z_T
/// ([`Kept::vectors_and_back_transform`], which finds Z_T again should Q2 be lost).
/// Returns the tridiagonal solver's INFO and how the reduction ran; fails, with why, for want
/// of host memory after `a` was touched.
pub(super) fn eigenvectors<T: SbrReal>(
    uplo: u8,
    n: usize,
    a: &mut [T],
    lda: usize,
    w: &mut [T],
    work: VectorWork<T>,
    path: Path,
) -> Result<(i32, SyrdbReport, StageTimes), String> {
    let (kept, mut z, report) = reduce_keeping(uplo, n, a, lda, n, work, path)?;
    let (mut info, mut by_inverse) = (0, false);
    let mut vectors = |d: &mut Vec<T>, e: &mut Vec<T>, z: &mut [T]| {
        info = 0;
        by_inverse = by_inverse_iteration(path, n) && inverse_iteration(d, e, w, z, n)?;
        if !by_inverse {
            info = divide_and_conquer(d, e, z, n)?;
            w[..n].copy_from_slice(d);
        }
        Ok(n)
    };
    let mut times = kept.vectors_and_back_transform(n, a, lda, &mut z, n, path, &mut vectors)?;
    times.inverse_iteration = by_inverse;
    crate::host::scatter_columns(&z[..n * n], n, &mut a[..(n - 1) * lda + n], lda);
    Ok((info, report, times))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testmat::{self, DenseFamily, Rng};

    /// Should Q2 be lost (a GPU that failed holding it), the band is chased again on the host
    /// and the tridiagonal's eigenvectors are found again for the new tridiagonal matrix: the
    /// pairs are A's (residual and orthogonality as in tests/syev_vectors.rs, below 20).
    #[test]
    fn a_lost_q2_is_made_again_from_the_band() {
        let seed = testmat::seed_from_time();
        println!("seed {seed}");
        let mut rng = Rng::new(seed);
        let n = 150;
        let path = Path::CpuBlocked { budget: u64::MAX };
        for uplo in [b'L', b'U'] {
            let a0: Vec<f64> = testmat::dense_symmetric(DenseFamily::Random, n, &mut rng);
            let mut a = a0.clone();
            let work = VectorWork::new(n, path, true).expect("host memory");
            let (mut kept, mut z, _) =
                reduce_keeping(uplo, n, &mut a, n, n, work, path).expect("host memory");
            kept.lose_q2(n);
            let (mut w, mut calls) = (vec![0.0; n], 0);
            let mut vectors = |d: &mut Vec<f64>, e: &mut Vec<f64>, z: &mut [f64]| {
                calls += 1;
                assert_eq!(divide_and_conquer(d, e, z, n)?, 0, "xSTEDC's INFO");
                w.copy_from_slice(d);
                Ok(n)
            };
            kept.vectors_and_back_transform(n, &a, n, &mut z, n, path, &mut vectors)
                .expect("host memory");
            assert_eq!(calls, 2, "the tridiagonal's vectors once per chase");
            let norm = (0..n)
                .map(|j| (0..n).map(|i| a0[i + j * n].abs()).sum::<f64>())
                .fold(0.0, f64::max);
            let scale = n as f64 * f64::EPSILON;
            let (mut resid, mut ortho) = (0.0f64, 0.0f64);
            for j in 0..n {
                let zj = &z[j * n..(j + 1) * n];
                let r: f64 = (0..n)
                    .map(|i| {
                        let az: f64 = (0..n).map(|k| a0[i + k * n] * zj[k]).sum();
                        (az - w[j] * zj[i]).abs()
                    })
                    .sum();
                resid = resid.max(r / (norm * scale));
                let o: f64 = (0..n)
                    .map(|k| {
                        let zk = &z[k * n..(k + 1) * n];
                        let dot: f64 = zj.iter().zip(zk).map(|(x, y)| x * y).sum();
                        (dot - if k == j { 1.0 } else { 0.0 }).abs()
                    })
                    .sum();
                ortho = ortho.max(o / scale);
            }
            let what = format!(
                "uplo {}: residual {resid:.2}, orthogonality {ortho:.2}",
                uplo as char
            );
            println!("{what}");
            assert!(resid < 20.0 && ortho < 20.0, "{what}");
        }
    }
}
