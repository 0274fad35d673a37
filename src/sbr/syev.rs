//! xSYEV and xSYEVX for eigenvalues only (JOBZ = 'N'), through the band reduction: dense →
//! band ([`super::syrdb`]; a matrix that does not fit streams through the executor to a wide
//! band, which [`super::sbrdb`] then narrows in the executor's memory) → tridiagonal
//! ([`super::sb2st`], bulge chasing on the GPU or the CPU's threads) → eigenvalues (xSTERF, or on the GPU path the crate's bisection
//! [`crate::stebz`], for all of them; the bisection for RANGE = 'V' / 'I'), with LAPACK's
//! scaling of matrices near underflow or overflow.
//!
//! JOBZ = 'V' is not implemented: it is reported as an illegal first argument.

use super::cpu::CpuExecutor;
use super::gpu::{CublasReal, GpuExecutor};
use super::sbrdb::narrow as narrow_band;
use super::{sb2st, syrdb_band, Mode, Path, SyrdbReport};
use crate::dispatch::{self, Backend};
use crate::lapack::Dense;
use crate::real::Real;

/// ILAENV's block size for xSYTRD, which sizes LAPACK's optimal workspace.
const SYTRD_NB: usize = 32;

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
/// matrix travels up and down once per kw columns), then [`super::sbrdb`] narrows the band
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
            let streaming = super::streaming_budget(n, kw, kw + 1, elem);
            let narrowing = (super::sbrdb::footprint(n, kw, kd) * elem) as u64;
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
        Path::Gpu { budget } => super::gpu::budget(budget),
    };
    let elem = std::mem::size_of::<T>();
    match budget.map(|b| (b, super::plan(n, kd, elem, b))) {
        Some((_, Ok(Mode::Resident))) | None => (kd, None),
        Some((b, _)) => match wide_bandwidth(n, kd, elem, b) {
            Some(kw) => (kd, Some(kw)),
            None => (bandwidth_streaming(n), None),
        },
    }
}

/// xSYEV's argument checks in LAPACK's order (1 JOBZ, 2 UPLO, 3 N, 5 LDA, 8 LWORK; −1 is a
/// query). JOBZ = 'V' is not supported here and is reported as illegal (−1).
pub fn syev_check(jobz: u8, uplo: u8, n: i32, lda: i32, lwork: i32) -> i32 {
    if !jobz.eq_ignore_ascii_case(&b'N') {
        return -1;
    }
    if !matches!(uplo.to_ascii_uppercase(), b'U' | b'L') {
        return -2;
    }
    if n < 0 {
        return -3;
    }
    if lda < n.max(1) {
        return -5;
    }
    if lwork != -1 && (lwork as i64) < (3 * n as i64 - 1).max(1) {
        return -8;
    }
    0
}

/// xSYEV's optimal LWORK, which a query returns.
pub fn syev_lwork(n: usize) -> usize {
    ((SYTRD_NB + 2) * n).max(1)
}

/// xSYEVX's argument checks in LAPACK's order (1 JOBZ, 2 RANGE, 3 UPLO, 4 N, 6 LDA, 8 VU,
/// 9 IL, 10 IU, 15 LDZ, 17 LWORK; −1 is a query). JOBZ = 'V' is reported as illegal (−1).
#[allow(clippy::too_many_arguments)]
pub fn syevx_check<T: Real>(
    jobz: u8,
    range: u8,
    uplo: u8,
    n: i32,
    lda: i32,
    vl: T,
    vu: T,
    il: i32,
    iu: i32,
    ldz: i32,
    lwork: i32,
) -> i32 {
    if !jobz.eq_ignore_ascii_case(&b'N') {
        return -1;
    }
    let range = range.to_ascii_uppercase();
    if !matches!(range, b'A' | b'V' | b'I') {
        return -2;
    }
    if !matches!(uplo.to_ascii_uppercase(), b'U' | b'L') {
        return -3;
    }
    if n < 0 {
        return -4;
    }
    if lda < n.max(1) {
        return -6;
    }
    match range {
        b'V' if n > 0 && vu <= vl => return -8,
        b'I' if il < 1 || il > n.max(1) => return -9,
        b'I' if iu < n.min(il) || iu > n => return -10,
        _ => {}
    }
    if ldz < 1 {
        return -15;
    }
    if lwork != -1 && (lwork as i64) < syevx_lwork(n as usize).0 as i64 {
        return -17;
    }
    0
}

/// xSYEVX's (minimal, optimal) LWORK.
pub fn syevx_lwork(n: usize) -> (usize, usize) {
    if n <= 1 {
        (1, 1)
    } else {
        (8 * n, (8 * n).max((SYTRD_NB + 3) * n))
    }
}

/// The largest |a(i, j)| over the rows `rows(j)` of each column j (xLANSY('M')): NaN if any
/// entry is NaN. Large matrices are scanned by all threads, columns dealt round-robin (one
/// thread took 0.1–0.2 s at n = 16384, a tenth of the GPU path).
fn max_abs<T: Real>(
    n: usize,
    a: &[T],
    lda: usize,
    rows: impl Fn(usize) -> std::ops::Range<usize> + Sync,
) -> T {
    // A NaN, once met, stays.
    let larger = |m: T, x: T| {
        if !m.is_nan() && (x > m || x.is_nan()) {
            x
        } else {
            m
        }
    };
    let columns = |first: usize, stride: usize| {
        (first..n).step_by(stride).fold(T::ZERO, |m, j| {
            rows(j).fold(m, |m, i| larger(m, a[i + j * lda].abs()))
        })
    };
    let threads = crate::host::threads();
    if threads == 1 || n * n < 1 << 20 {
        return columns(0, 1);
    }
    std::thread::scope(|scope| {
        let parts: Vec<_> = (0..threads)
            .map(|t| scope.spawn(move || columns(t, threads)))
            .collect();
        parts
            .into_iter()
            .map(|p| p.join().expect("max_abs worker panicked"))
            .fold(T::ZERO, larger)
    })
}

/// The rows of column j in the `uplo` triangle of an n x n matrix.
fn triangle_rows(uplo: u8, n: usize) -> impl Fn(usize) -> std::ops::Range<usize> + Sync {
    let lower = uplo.eq_ignore_ascii_case(&b'L');
    move |j| if lower { j..n } else { 0..j + 1 }
}

/// xLANSY('M') of the `uplo` triangle: its largest |a(i, j)|, NaN if any entry is NaN.
fn triangle_max_abs<T: Real>(uplo: u8, n: usize, a: &[T], lda: usize) -> T {
    max_abs(n, a, lda, triangle_rows(uplo, n))
}

/// Scales the `uplo` triangle of `a` into LAPACK's safe range `[rmin, rmax]` when its largest
/// entry `anrm` lies outside it (xLASCL/xSCAL); returns the factor used.
fn scale_into_range<T: Real>(
    uplo: u8,
    n: usize,
    a: &mut [T],
    lda: usize,
    anrm: T,
    rmax: T,
) -> Option<T> {
    let smlnum = T::SAFE_MIN / T::ULP;
    let rmin = smlnum.sqrt();
    let rows = triangle_rows(uplo, n);
    let sigma = if anrm > T::ZERO && anrm < rmin {
        rmin / anrm
    } else if anrm > rmax {
        rmax / anrm
    } else {
        return None;
    };
    for j in 0..n {
        for i in rows(j) {
            a[i + j * lda] = a[i + j * lda] * sigma;
        }
    }
    Some(sigma)
}

/// The tridiagonal matrix (d, e) similar to the n x n `a` (n ≥ 2), by band reduction on `path`
/// and bulge chasing (on the GPU when the band reduction ran there, else on the CPU's threads;
/// the CPU also takes over if the GPU fails). `a` is destroyed.
fn tridiagonal<T: Real + Dense + CublasReal>(
    uplo: u8,
    n: usize,
    a: &mut [T],
    lda: usize,
    path: Path,
) -> (Vec<T>, Vec<T>, SyrdbReport) {
    let (kd, wide) = driver_bandwidths::<T>(n, path);
    let first = wide.unwrap_or(kd);
    let ldab = first + 1;
    let mut ab = vec![T::ZERO; ldab * n];
    let mut tau = vec![T::ZERO; n - first.min(n)];
    let mut report = syrdb_band(uplo, n, first, a, lda, &mut ab, ldab, &mut tau, path);
    let (uplo, ab, ldab) = match wide {
        Some(kw) => {
            let (band, note) = narrow(uplo, n, kw, &ab, kd, report.backend, path);
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
        .then(|| sb2st::gpu::tridiagonalize(uplo, n, kd, &ab, ldab))
        .and_then(|r| {
            r.map_err(|e| dispatch::debug(|| format!("bulge chasing on the CPU: {e}")))
                .ok()
        });
    let (d, e) = chased.unwrap_or_else(|| sb2st::tridiagonalize(uplo, n, kd, &ab, ldab, 0));
    (d, e, report)
}

/// The band `ab` (`uplo`, `kw` off-diagonals, leading dimension kw + 1) narrowed to `kd`
/// off-diagonals ([`super::sbrdb`]), in lower band storage: on the GPU if the band reduction
/// ran there and the GPU does not fail, else on the CPU. Returns it with a note of where.
fn narrow<T: Real + Dense + CublasReal>(
    uplo: u8,
    n: usize,
    kw: usize,
    ab: &[T],
    kd: usize,
    backend: Backend,
    path: Path,
) -> (Vec<T>, String) {
    let note = |on: &str| format!("band {kw} → {kd} on the {on}");
    if let (Backend::Gpu, Path::Gpu { budget }) = (backend, path) {
        let narrowed = GpuExecutor::<T>::new(budget)
            .and_then(|mut exec| narrow_band(&mut exec, uplo, n, kw, ab, kw + 1, kd));
        match narrowed {
            Ok(band) => return (band, note("GPU")),
            Err(e) => dispatch::debug(|| format!("band narrowing on the CPU: {e}")),
        }
    }
    let mut cpu = CpuExecutor::new(u64::MAX);
    let band =
        narrow_band(&mut cpu, uplo, n, kw, ab, kw + 1, kd).expect("the CPU executor does not fail");
    (band, note("CPU"))
}

/// All eigenvalues of the tridiagonal (d, e) into `w`, ascending, by the crate's bisection on
/// the GPU; false if it did not converge everywhere (then `w` is to be recomputed).
fn all_by_bisection<T: Real>(d: &[T], e: &[T], w: &mut [T]) -> bool {
    let n = d.len();
    let (mut iblock, mut isplit) = (vec![0; n], vec![0; n]);
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

/// How a driver call ran: its INFO and how the band reduction ran (`None` when the system
/// LAPACK did the whole call).
#[derive(Clone, Debug)]
pub struct EigReport {
    pub info: i32,
    pub m: i32,
    pub reduction: Option<SyrdbReport>,
    /// `Some(info)` when this crate's xSTEBZ, called by xSYEVX, found an illegal argument
    /// (the scaled VL ≥ VU): the caller reports it through `xerbla_` under xSTEBZ's name, as
    /// LAPACK's xSYEVX does by calling xSTEBZ. `None` otherwise, and always when the system
    /// LAPACK ran the call (it has called `xerbla_` itself).
    pub stebz_illegal: Option<i32>,
}

/// xSYEVX's INFO after its xSTEBZ call returned `stebz_info`, on every path: LAPACK's xSYEVX
/// returns xSTEBZ's INFO unchanged — 0; 1, 2, 3 or 4 for a failure; −i for an illegal
/// argument of xSTEBZ (which xSTEBZ reported through `xerbla_`) — never N + i.
pub fn syevx_info_from_stebz(stebz_info: i32) -> i32 {
    stebz_info
}

/// How many leading entries of W xSYEVX scales back by 1/σ after scaling A by σ: M on
/// success, INFO − 1 for INFO > 0 (LAPACK's IMAX, however odd), none for INFO < 0 (xSCAL with
/// a negative count does nothing); never more than N.
fn syevx_unscaled(info: i32, m: i32, n: usize) -> usize {
    let imax = if info == 0 { m } else { info - 1 };
    (imax.max(0) as usize).min(n)
}

impl EigReport {
    pub fn backend(&self) -> Backend {
        self.reduction.as_ref().map_or(Backend::Cpu, |r| r.backend)
    }
}

/// All eigenvalues of the symmetric `a` (its `uplo` triangle), ascending in `w`, as xSYEV
/// with JOBZ = 'N'; `a` is destroyed. `Path::Lapack` runs the system LAPACK's xSYEV. The
/// arguments must have passed [`syev_check`].
pub fn syev<T: Real + Dense + CublasReal>(
    uplo: u8,
    n: usize,
    a: &mut [T],
    lda: usize,
    w: &mut [T],
    path: Path,
) -> EigReport {
    let mut report = EigReport {
        info: 0,
        m: n as i32,
        reduction: None,
        stebz_illegal: None,
    };
    // A NaN or ±Inf in the triangle: LAPACK's INFO (0 or > 0) and NaNs in W depend on where
    // its own reduction spreads the NaN, so the system LAPACK answers, from the untouched A.
    let anrm = (path != Path::Lapack && n > 1).then(|| triangle_max_abs(uplo, n, a, lda));
    let Some(anrm) = anrm.filter(|x| x.is_finite()) else {
        report.info = T::syev_values(uplo, n, a, lda, w);
        return report;
    };
    let rmax = (T::ONE / (T::SAFE_MIN / T::ULP)).sqrt();
    let sigma = scale_into_range(uplo, n, a, lda, anrm, rmax);
    let (mut d, mut e, reduction) = tridiagonal(uplo, n, a, lda, path);
    let on_gpu = reduction.backend == Backend::Gpu;
    report.reduction = Some(reduction);
    // On the GPU path all eigenvalues come from the GPU bisection (xSTEBZ's default
    // tolerance, well inside n ε ‖A‖; far faster than xSTERF's O(n²) on one core); xSTERF
    // takes over if bisection reports a failure. Not for a matrix scaled up to LAPACK's rmin:
    // bisection splits it wherever an e² falls below the safe minimum, which then costs more
    // than n ε ‖A‖.
    if !(on_gpu && sigma.is_none() && all_by_bisection(&d, &e, w)) {
        report.info = T::sterf(&mut d, &mut e);
        w[..n].copy_from_slice(&d);
    }
    if let Some(sigma) = sigma {
        let imax = if report.info == 0 {
            n
        } else {
            report.info as usize - 1
        };
        for x in &mut w[..imax] {
            *x = *x * (T::ONE / sigma);
        }
    }
    report
}

/// Selected eigenvalues of the symmetric `a`, ascending in `w[..m]`, as xSYEVX with JOBZ =
/// 'N': RANGE 'A', 'V' (in (vl, vu]) or 'I' (il-th to iu-th); `abstol` as in xSTEBZ. `a` is
/// destroyed. `Path::Lapack` runs the system LAPACK's xSYEVX. The arguments must have passed
/// [`syevx_check`].
#[allow(clippy::too_many_arguments)]
pub fn syevx<T: Real + Dense + CublasReal>(
    range: u8,
    uplo: u8,
    n: usize,
    a: &mut [T],
    lda: usize,
    vl: T,
    vu: T,
    il: i32,
    iu: i32,
    abstol: T,
    w: &mut [T],
    path: Path,
) -> EigReport {
    let range = range.to_ascii_uppercase();
    let mut report = EigReport {
        info: 0,
        m: 0,
        reduction: None,
        stebz_illegal: None,
    };
    // A NaN or ±Inf in the triangle (N ≥ 2): LAPACK's M, INFO (even −5 from xSTEBZ, as the
    // scaling by σ = 0 makes VL = VU) and W depend on its own reduction: the system LAPACK
    // answers, from the untouched A.
    let anrm = (path != Path::Lapack && n > 1).then(|| triangle_max_abs(uplo, n, a, lda));
    if path == Path::Lapack || anrm.is_some_and(|x| !x.is_finite()) {
        let (m, info) = T::syevx_values(range, uplo, n, a, lda, vl, vu, il, iu, abstol, w);
        report.m = m;
        report.info = info;
        return report;
    }
    if n == 0 {
        return report;
    }
    if n == 1 {
        let a11 = a[0];
        if range != b'V' || (vl < a11 && vu >= a11) {
            report.m = 1;
            w[0] = a11;
        }
        return report;
    }
    let rmax = (T::ONE / (T::SAFE_MIN / T::ULP))
        .sqrt()
        .min(T::ONE / T::SAFE_MIN.sqrt().sqrt());
    let anrm = anrm.expect("computed for n > 1");
    let sigma = scale_into_range(uplo, n, a, lda, anrm, rmax);
    let (mut abstll, mut vll, mut vuu) = (abstol, vl, vu);
    if let Some(sigma) = sigma {
        if abstol > T::ZERO {
            abstll = abstol * sigma;
        }
        if range == b'V' {
            vll = vl * sigma;
            vuu = vu * sigma;
        }
    }
    let (d, e, reduction) = tridiagonal(uplo, n, a, lda, path);
    let on_gpu = reduction.backend == Backend::Gpu;
    report.reduction = Some(reduction);
    let everything = range == b'A' || (range == b'I' && il == 1 && iu == n as i32);
    let mut done = false;
    if everything && abstol <= T::ZERO {
        if on_gpu && sigma.is_none() && all_by_bisection(&d, &e, w) {
            done = true;
        } else {
            let (mut dd, mut ee) = (d.clone(), e.clone());
            if T::sterf(&mut dd, &mut ee) == 0 {
                w[..n].copy_from_slice(&dd);
                done = true;
            }
        }
        if done {
            report.m = n as i32;
        }
    }
    if !done {
        let backend = if matches!(path, Path::Gpu { .. }) {
            Backend::Gpu
        } else {
            Backend::Cpu
        };
        let (mut iblock, mut isplit) = (vec![0; n], vec![0; n]);
        // The bisection's own workspace may fail to allocate: the system LAPACK then answers.
        let r = crate::stebz::stebz_or_lapack(
            range,
            b'E',
            vll,
            vuu,
            il,
            iu,
            abstll,
            &d,
            &e[..n - 1],
            w,
            &mut iblock,
            &mut isplit,
            backend,
            None,
        );
        if r.info == crate::stebz::INFO_NO_HOST_MEMORY {
            // Neither could run: an internal failure, not an illegal argument of xSTEBZ's.
            report.info = r.info;
        } else {
            report.info = syevx_info_from_stebz(r.info);
            if r.info < 0 {
                // xSTEBZ returned before setting M; xSYEVX's M stays 0.
                report.stebz_illegal = Some(r.info);
            } else {
                report.m = r.m;
            }
        }
    }
    if let Some(sigma) = sigma {
        let imax = syevx_unscaled(report.info, report.m, n);
        for x in &mut w[..imax] {
            *x = *x * (T::ONE / sigma);
        }
    }
    report
}
