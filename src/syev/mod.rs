//! The dense symmetric eigenvalue drivers, xSYEV and xSYEVX (JOBZ = 'N' and 'V'), through the band reduction: dense → band ([`crate::sbr::syrdb`]; a matrix that does not fit
//! streams through the executor to a wide band, which [`crate::sbr::sbrdb`] then narrows in the
//! executor's memory) → tridiagonal ([`crate::sbr::sb2st`], bulge chasing on the GPU or the CPU's
//! threads) → eigenvalues (xSTERF, or on the GPU path the crate's bisection [`crate::stebz`], for
//! all of them; the bisection for RANGE = 'V' / 'I'), with LAPACK's scaling of matrices near
//! underflow or overflow. The stages are composed in [`driver`].
//!
//! Eigenvectors (xSYEV with JOBZ = 'V', [`syev_vectors`]): the reduction keeps its orthogonal
//! factors, B = Q1ᵀ A Q1 (dense → band; Q1's reflectors in A and TAU as xSYTRD_SY2SB leaves
//! them; out of core the matrix streams straight to the final band, since a wide first band's
//! narrowing keeps no reflectors) and T = Q2ᵀ B Q2 (bulge chasing on the GPU where the budget
//! holds Q2, else on the CPU's threads; its reflectors in the compact layout of
//! [`crate::sbr::sb2st::Reflectors`]). With T = Z_T Λ Z_Tᵀ (on the GPU path from n = 1024 the
//! GPU's bisection and inverse iteration, else or where that refuses its answer xSTEDC, or
//! xSTEQR), A = Z Λ Zᵀ for Z = Q1 (Q2 Z_T): Q2 is applied first (its reflectors in the reverse
//! of the chase's order; on the GPU path by [`crate::sbr::sb2st::apply_gpu`], by block columns
//! of Z and pieces of Q2 where the budget is short), then Q1, last panel first: on the GPU path
//! by cuBLAS GEMMs from the panels' compact WY form ([`crate::sbr::apply_q1_on`]; Z by block
//! columns where the GPU budget cannot hold it), else, and for the columns a failing GPU left
//! untouched, on the host ([`EigReport::stages`] times the stages). Scaling A by σ scales Λ
//! only; W is scaled back, Z is not. A matrix whose workspace does not fit before A is touched
//! runs the system LAPACK's xSYEV on the untouched A instead.
//!
//! xSYEVX with JOBZ = 'V' ([`syevx_vectors`]) reduces the same way, keeping Q1 and Q2; all
//! eigenvectors with ABSTOL ≤ 0 come from xSTEDC (xSTEQR if it fails; LAPACK takes xSTEQR),
//! the others from bisection with ORDER = 'B' ([`crate::stebz`]) and inverse iteration
//! ([`crate::stein`], whose INFO and IFAIL are xSYEVX's); Z := Q1 Q2 Z_T for the M columns,
//! then the pairs are sorted ascending as LAPACK does. Fallbacks to the system xSYEVX as for
//! xSYEV, and for N ≤ 1.

mod back_transformation;
mod driver;
mod scale;
mod tridiagonal_vectors;

pub use driver::{bandwidth, bandwidth_streaming, driver_bandwidths, wide_bandwidth, StageTimes};
pub use tridiagonal_vectors::INVERSE_ITERATION_FROM;

use crate::dispatch::Backend;
use crate::lapack::Dense;
use crate::real::Real;
use crate::sbr::{Path, SbrReal, SyrdbReport};
use driver::{all_by_bisection, eigenvectors, reduce_keeping, tridiagonal, BandWork, VectorWork};
use scale::{scale_into_range, triangle_max_abs};
use tridiagonal_vectors::all_vectors;

/// ILAENV's block size for xSYTRD, which sizes LAPACK's optimal workspace.
const SYTRD_NB: usize = 32;

/// INFO when host memory that no path can do without cannot be allocated (the exported
/// routines' `HYLAPACK_INFO_INTERNAL_ERROR`), written on stderr with the reason: the system
/// LAPACK's workspace when it answers on the untouched A (A and W then untouched), or the
/// memory of a stage after the reduction has begun (A destroyed, W untouched). The drivers'
/// own workspace that cannot be allocated before A is touched sends the call to the system
/// LAPACK instead.
pub const INFO_NO_HOST_MEMORY: i32 = -1000;

/// Reports a call that could not allocate host memory: `why` on stderr, INFO
/// [`INFO_NO_HOST_MEMORY`] (M stays 0).
fn no_host_memory(report: &mut EigReport, why: &str) {
    crate::log::warn(&format!(
        "syev: cannot allocate host memory ({why}); returning INFO = {INFO_NO_HOST_MEMORY}"
    ));
    report.info = INFO_NO_HOST_MEMORY;
}

/// [`no_host_memory`] for the system LAPACK's own workspace, A still untouched.
fn no_lapack_workspace(report: &mut EigReport, why: &str) {
    crate::log::warn(&format!(
        "syev: cannot allocate host memory ({why}); returning INFO = {INFO_NO_HOST_MEMORY} \
         (a Fortran name runs LAPACK in its caller's WORK instead)"
    ));
    report.info = INFO_NO_HOST_MEMORY;
    report.lapack_without_workspace = true;
}

/// The note of a call sent to the system LAPACK because the drivers' workspace did not fit.
fn lapack_instead(why: &str) -> SyrdbReport {
    SyrdbReport::new(
        Backend::Cpu,
        Some(format!("no host memory for {why}; system LAPACK")),
    )
}

/// The system LAPACK's xSYEV (JOBZ = 'N') on `a`, its workspace allocated here: INFO, or
/// [`INFO_NO_HOST_MEMORY`] with A and W untouched.
fn lapack_syev<T: Real + Dense>(
    report: &mut EigReport,
    uplo: u8,
    n: usize,
    a: &mut [T],
    lda: usize,
    w: &mut [T],
) {
    let lwork = ((SYTRD_NB + 2) * n).max(1);
    match crate::host::try_zeroed(lwork) {
        Some(mut work) => report.info = T::syev_values_in(uplo, n, a, lda, w, &mut work),
        None => no_lapack_workspace(report, "xSYEV's workspace"),
    }
}

/// The system LAPACK's xSYEV with JOBZ = 'V' on `a`, as [`lapack_syev`].
fn lapack_syev_vectors<T: Real + Dense>(
    report: &mut EigReport,
    uplo: u8,
    n: usize,
    a: &mut [T],
    lda: usize,
    w: &mut [T],
) {
    let lwork = ((SYTRD_NB + 2) * n).max(1);
    match crate::host::try_zeroed(lwork) {
        Some(mut work) => report.info = T::syev_vectors_in(uplo, n, a, lda, w, &mut work),
        None => no_lapack_workspace(report, "xSYEV's workspace"),
    }
}

/// xSYEV's argument checks in LAPACK's order (1 JOBZ, 2 UPLO, 3 N, 5 LDA, 8 LWORK; −1 is a
/// query; the same LWORK rules for JOBZ = 'N' and 'V').
pub fn syev_check(jobz: u8, uplo: u8, n: i32, lda: i32, lwork: i32) -> i32 {
    if !matches!(jobz.to_ascii_uppercase(), b'N' | b'V') {
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
/// 9 IL, 10 IU, 15 LDZ (≥ 1, and ≥ N for JOBZ = 'V'), 17 LWORK; −1 is a query).
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
    let wantz = jobz.eq_ignore_ascii_case(&b'V');
    if !wantz && !jobz.eq_ignore_ascii_case(&b'N') {
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
    if ldz < 1 || (wantz && ldz < n) {
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
    /// The system LAPACK was to answer on the untouched A, but its workspace could not be
    /// allocated (INFO = −1000): a caller that holds a workspace of LAPACK's size (the Fortran
    /// names' WORK) can run it there instead.
    pub lapack_without_workspace: bool,
    /// With JOBZ = 'V' through the band reduction: the seconds of each stage.
    pub stages: Option<StageTimes>,
}

impl EigReport {
    /// INFO = 0, no eigenvalues yet, nothing reduced.
    fn new() -> EigReport {
        EigReport {
            info: 0,
            m: 0,
            reduction: None,
            stebz_illegal: None,
            lapack_without_workspace: false,
            stages: None,
        }
    }
}

/// xSYEVX's INFO after its xSTEBZ call returned `stebz_info`, on every path: LAPACK's xSYEVX
/// returns xSTEBZ's INFO unchanged — 0; 1, 2, 3 or 4 for a failure; −i for an illegal
/// argument of xSTEBZ (which xSTEBZ reported through `xerbla_`) — never N + i.
pub fn syevx_info_from_stebz(stebz_info: i32) -> i32 {
    stebz_info
}

/// What xSYEVX is asked for: RANGE ('A', 'V' or 'I', upper case) with its bounds, and ABSTOL.
#[derive(Clone, Copy)]
struct Selection<T> {
    range: u8,
    vl: T,
    vu: T,
    il: i32,
    iu: i32,
    abstol: T,
}

impl<T> Selection<T> {
    /// The selection of xSYEVX's arguments, RANGE in upper case.
    fn new(range: u8, (vl, vu): (T, T), (il, iu): (i32, i32), abstol: T) -> Selection<T> {
        Selection {
            range: range.to_ascii_uppercase(),
            vl,
            vu,
            il,
            iu,
            abstol,
        }
    }
}

impl<T: Real> Selection<T> {
    /// RANGE = 'V' with a NaN bound: LAPACK passes no check on it and counts eigenvalues at
    /// the NaN (M may come out negative), so only the system LAPACK gives its answer.
    fn nan_bound(&self) -> bool {
        self.range == b'V' && (self.vl.is_nan() || self.vu.is_nan())
    }
}

/// Z (leading dimension) and IFAIL of an xSYEVX call with JOBZ = 'V', the caller's.
type Vectors<'a, T> = (&'a mut [T], usize, &'a mut [i32]);

/// The system LAPACK's xSYEVX on `a`, its workspace allocated here, with JOBZ = 'V' where
/// `vectors` is given: M and INFO, or [`INFO_NO_HOST_MEMORY`] with A and W untouched.
fn lapack_syevx<T: Real + Dense>(
    report: &mut EigReport,
    sel: Selection<T>,
    uplo: u8,
    n: usize,
    (a, lda): (&mut [T], usize),
    w: &mut [T],
    vectors: Option<Vectors<'_, T>>,
) {
    let room = (
        crate::host::try_zeroed((8 * n).max(1)),
        crate::host::try_vec(5 * n, 0),
    );
    let (Some(mut work), Some(mut iwork)) = room else {
        return no_lapack_workspace(report, "xSYEVX's workspace");
    };
    let Selection {
        range,
        vl,
        vu,
        il,
        iu,
        abstol,
    } = sel;
    let (work, iwork) = (&mut work[..], &mut iwork[..]);
    (report.m, report.info) = match vectors {
        None => T::syevx_values_in(
            range, uplo, n, a, lda, vl, vu, il, iu, abstol, w, work, iwork,
        ),
        Some((z, ldz, ifail)) => T::syevx_vectors_in(
            range, uplo, n, a, lda, vl, vu, il, iu, abstol, w, z, ldz, work, iwork, ifail,
        ),
    };
}

/// xSYEVX's shortcut when all eigenvalues are asked for with the default tolerance: all of
/// them from the tridiagonal (d, e) into `w`, by the GPU bisection where `on_gpu`, else by
/// xSTERF on a copy. Returns false where the shortcut does not apply or fails (bisection then
/// takes over); on a copy that cannot be allocated, INFO is [`INFO_NO_HOST_MEMORY`] (true).
fn all_eigenvalues<T: Real + Dense>(
    report: &mut EigReport,
    sel: Selection<T>,
    d: &[T],
    e: &[T],
    w: &mut [T],
    on_gpu: bool,
) -> bool {
    let n = d.len();
    let Selection {
        range,
        il,
        iu,
        abstol,
        ..
    } = sel;
    let everything = range == b'A' || (range == b'I' && il == 1 && iu == n as i32);
    if !everything || abstol > T::ZERO {
        return false;
    }
    let done = if on_gpu && all_by_bisection(d, e, w) {
        true
    } else {
        let copies = (crate::host::try_zeroed(n), crate::host::try_zeroed(n - 1));
        let (Some(mut dd), Some(mut ee)) = copies else {
            no_host_memory(report, "a copy of the tridiagonal matrix");
            return true;
        };
        dd.copy_from_slice(d);
        ee.copy_from_slice(&e[..n - 1]);
        let converged = T::sterf(&mut dd, &mut ee) == 0;
        if converged {
            w[..n].copy_from_slice(&dd);
        }
        converged
    };
    if done {
        report.m = n as i32;
    }
    done
}

/// The eigenvalues `sel` asks for (its bounds and tolerance scaled with A) from the
/// tridiagonal (d, e) into `w`, by the crate's bisection (on the GPU where `path` is the GPU's),
/// falling back to the system LAPACK's xSTEBZ where its workspace cannot be allocated: M, and
/// INFO as xSYEVX passes xSTEBZ's on.
fn selected_eigenvalues<T: Real + Dense>(
    report: &mut EigReport,
    sel: Selection<T>,
    d: &[T],
    e: &[T],
    w: &mut [T],
    path: Path,
) {
    let n = d.len();
    let backend = if matches!(path, Path::Gpu { .. }) {
        Backend::Gpu
    } else {
        Backend::Cpu
    };
    let (Some(mut iblock), Some(mut isplit)) =
        (crate::host::try_vec(n, 0), crate::host::try_vec(n, 0))
    else {
        return no_host_memory(report, "xSTEBZ's IBLOCK and ISPLIT");
    };
    // The bisection's own workspace may fail to allocate: the system LAPACK then answers.
    let r = crate::stebz::stebz_or_lapack(
        sel.range,
        b'E',
        sel.vl,
        sel.vu,
        sel.il,
        sel.iu,
        sel.abstol,
        d,
        &e[..n - 1],
        w,
        &mut iblock,
        &mut isplit,
        backend,
        None,
    );
    if r.info == crate::stebz::INFO_NO_HOST_MEMORY {
        // Neither could run: an internal failure, not an illegal argument of xSTEBZ's.
        no_host_memory(report, "xSTEBZ's workspace");
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
pub fn syev<T: SbrReal>(
    uplo: u8,
    n: usize,
    a: &mut [T],
    lda: usize,
    w: &mut [T],
    path: Path,
) -> EigReport {
    let mut report = EigReport {
        m: n as i32,
        ..EigReport::new()
    };
    // A NaN or ±Inf in the triangle: LAPACK's INFO (0 or > 0) and NaNs in W depend on where
    // its own reduction spreads the NaN, so the system LAPACK answers, from the untouched A.
    let anrm = (path != Path::Lapack && n > 1).then(|| triangle_max_abs(uplo, n, a, lda));
    let Some(anrm) = anrm.filter(|x| x.is_finite()) else {
        lapack_syev(&mut report, uplo, n, a, lda, w);
        return report;
    };
    // The band before A is touched: without it, the system LAPACK answers.
    let work = match BandWork::new(n, path) {
        Ok(work) => work,
        Err(why) => {
            report.reduction = Some(lapack_instead(&why));
            lapack_syev(&mut report, uplo, n, a, lda, w);
            return report;
        }
    };
    let rmax = (T::ONE / (T::SAFE_MIN / T::ULP)).sqrt();
    let sigma = scale_into_range(uplo, n, a, lda, anrm, rmax);
    let (mut d, mut e, reduction) = match tridiagonal(uplo, n, a, lda, work, path) {
        Ok(done) => done,
        Err(why) => {
            no_host_memory(&mut report, &why);
            return report;
        }
    };
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

/// All eigenvalues of the symmetric `a` (its `uplo` triangle), ascending in `w`, and the
/// orthonormal eigenvectors over `a` (column j for `w[j]`), as xSYEV with JOBZ = 'V' (module
/// notes). `Path::Lapack`, N ≤ 1, a NaN or ±Inf in the triangle, or workspace that cannot be
/// allocated before A is touched: the system LAPACK's xSYEV on the untouched A. The arguments
/// must have passed [`syev_check`].
pub fn syev_vectors<T: SbrReal>(
    uplo: u8,
    n: usize,
    a: &mut [T],
    lda: usize,
    w: &mut [T],
    path: Path,
) -> EigReport {
    let mut report = EigReport {
        m: n as i32,
        ..EigReport::new()
    };
    let anrm = (path != Path::Lapack && n > 1).then(|| triangle_max_abs(uplo, n, a, lda));
    let Some(anrm) = anrm.filter(|x| x.is_finite()) else {
        lapack_syev_vectors(&mut report, uplo, n, a, lda, w);
        return report;
    };
    let work = match VectorWork::new(n, path, true) {
        Ok(work) => work,
        Err(why) => {
            let note = Some(format!("{why}; system LAPACK"));
            report.reduction = Some(SyrdbReport::new(Backend::Cpu, note));
            lapack_syev_vectors(&mut report, uplo, n, a, lda, w);
            return report;
        }
    };
    let rmax = (T::ONE / (T::SAFE_MIN / T::ULP)).sqrt();
    let sigma = scale_into_range(uplo, n, a, lda, anrm, rmax);
    match eigenvectors(uplo, n, a, lda, w, work, path) {
        Ok((info, reduction, stages)) => {
            report.info = info;
            report.reduction = Some(reduction);
            report.stages = Some(stages);
        }
        Err(why) => {
            no_host_memory(&mut report, &why);
            return report;
        }
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
pub fn syevx<T: SbrReal>(
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
    let sel = Selection::new(range, (vl, vu), (il, iu), abstol);
    let range = sel.range;
    let mut report = EigReport::new();
    // A NaN or ±Inf in the triangle (N ≥ 2): LAPACK's M, INFO (even −5 from xSTEBZ, as the
    // scaling by σ = 0 makes VL = VU) and W depend on its own reduction: the system LAPACK
    // answers, from the untouched A.
    let anrm = (path != Path::Lapack && n > 1).then(|| triangle_max_abs(uplo, n, a, lda));
    if path == Path::Lapack || anrm.is_some_and(|x| !x.is_finite()) || sel.nan_bound() {
        lapack_syevx(&mut report, sel, uplo, n, (a, lda), w, None);
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
    // The band before A is touched: without it, the system LAPACK answers.
    let work = match BandWork::new(n, path) {
        Ok(work) => work,
        Err(why) => {
            report.reduction = Some(lapack_instead(&why));
            lapack_syevx(&mut report, sel, uplo, n, (a, lda), w, None);
            return report;
        }
    };
    let sigma = scale_into_range(uplo, n, a, lda, anrm, rmax);
    let mut scaled = sel;
    if let Some(sigma) = sigma {
        if abstol > T::ZERO {
            scaled.abstol = abstol * sigma;
        }
        if range == b'V' {
            scaled.vl = vl * sigma;
            scaled.vu = vu * sigma;
        }
    }
    let (d, e, reduction) = match tridiagonal(uplo, n, a, lda, work, path) {
        Ok(done) => done,
        Err(why) => {
            no_host_memory(&mut report, &why);
            return report;
        }
    };
    // The GPU bisection for all of them only where nothing was scaled (see `syev`).
    let on_gpu = reduction.backend == Backend::Gpu && sigma.is_none();
    report.reduction = Some(reduction);
    if !all_eigenvalues(&mut report, sel, &d, &e, w, on_gpu) {
        selected_eigenvalues(&mut report, scaled, &d, &e, w, path);
    }
    if let Some(sigma) = sigma {
        let imax = syevx_unscaled(report.info, report.m, n);
        for x in &mut w[..imax] {
            *x = *x * (T::ONE / sigma);
        }
    }
    report
}

/// The eigenvectors `sel` asks for (its bounds and tolerance scaled with A) of the tridiagonal
/// (d, e), as xSYEVX computes them: the eigenvalues by bisection with ORDER = 'B' into `w`
/// (as [`selected_eigenvalues`]), then their vectors by the crate's inverse iteration
/// ([`crate::stein`]) into the n x M `z`, whose INFO and IFAIL (M entries) become xSYEVX's
/// (LAPACK's xSYEVX overwrites xSTEBZ's INFO with xSTEIN's). Fails, with why, for want of host
/// memory.
#[allow(clippy::too_many_arguments)]
fn selected_vectors<T: SbrReal>(
    report: &mut EigReport,
    sel: Selection<T>,
    d: &[T],
    e: &[T],
    w: &mut [T],
    z: &mut [T],
    ldz: usize,
    ifail: &mut [i32],
    path: Path,
) -> Result<(), String> {
    let n = d.len();
    let backend = if matches!(path, Path::Gpu { .. }) {
        Backend::Gpu
    } else {
        Backend::Cpu
    };
    let (Some(mut iblock), Some(mut isplit)) =
        (crate::host::try_vec(n, 0), crate::host::try_vec(n, 0))
    else {
        return Err("xSTEBZ's IBLOCK and ISPLIT".into());
    };
    let clock = std::time::Instant::now();
    let r = crate::stebz::stebz_or_lapack(
        sel.range,
        b'B',
        sel.vl,
        sel.vu,
        sel.il,
        sel.iu,
        sel.abstol,
        d,
        &e[..n - 1],
        w,
        &mut iblock,
        &mut isplit,
        backend,
        None,
    );
    if r.info == crate::stebz::INFO_NO_HOST_MEMORY {
        return Err("xSTEBZ's workspace".into());
    }
    if r.info < 0 {
        // xSTEBZ returned before setting M: xSTEIN then computes nothing.
        report.stebz_illegal = Some(r.info);
        report.m = 0;
    } else {
        report.m = r.m;
    }
    let m = report.m.max(0) as usize;
    let bisection = clock.elapsed().as_secs_f64();
    // The GPU path's inverse iteration where xSTEIN's dispatch would take it (it checks its
    // answer and falls back to the host's): at n = 16384 the host's took 0.5–0.8 s for 163
    // vectors of one cluster, on one thread.
    let stein_backend = match backend {
        Backend::Gpu => crate::dispatch::decide_stein(n, m).backend,
        Backend::Cpu => Backend::Cpu,
    };
    let (d, e, w) = (d, &e[..n - 1], &w[..m]);
    let run = crate::stein::stein_with(stein_backend, d, e, w, &iblock[..m], &isplit, z, ldz)
        .map_err(|e| format!("xSTEIN's workspace ({e})"))?;
    crate::dispatch::debug(|| {
        format!(
            "syevx: {m} eigenvalues by bisection ({:?}) in {bisection:.3} s, their vectors \
             by inverse iteration ({:?}) in {:.3} s",
            r.backend,
            run.backend,
            clock.elapsed().as_secs_f64() - bisection
        )
    });
    let s = run.report;
    report.info = s.info;
    ifail[..m].copy_from_slice(&s.ifail[..m]);
    Ok(())
}

/// xSYEVX's last step with JOBZ = 'V': the M eigenvalues ascending (selection sort, as LAPACK
/// orders bisection's blocks), each column of the n x M `z` moved with its eigenvalue, and the
/// entries of IFAIL swapped alike where INFO ≠ 0.
#[allow(clippy::too_many_arguments)]
fn sort_pairs<T: Real>(
    info: i32,
    m: usize,
    n: usize,
    w: &mut [T],
    z: &mut [T],
    ldz: usize,
    ifail: &mut [i32],
) {
    // Bisection of an unsplit matrix gives them in order: nothing would move.
    if w[..m].windows(2).all(|p| p[0] <= p[1]) {
        return;
    }
    for j in 0..m.saturating_sub(1) {
        let mut least = None;
        let mut value = w[j];
        for (jj, &x) in w.iter().enumerate().take(m).skip(j + 1) {
            if x < value {
                least = Some(jj);
                value = x;
            }
        }
        if let Some(i) = least {
            w[i] = w[j];
            w[j] = value;
            for r in 0..n {
                z.swap(r + i * ldz, r + j * ldz);
            }
            if info != 0 {
                ifail.swap(i, j);
            }
        }
    }
}

/// Selected eigenvalues of the symmetric `a`, ascending in `w[..m]`, and their orthonormal
/// eigenvectors in the n x M `z` (leading dimension `ldz` ≥ max(1, n); column j for `w[j]`),
/// as xSYEVX with JOBZ = 'V' (module notes): INFO > 0 is the number of vectors inverse
/// iteration did not converge for, whose indices IFAIL lists (`ifail`, n entries: M set, the
/// rest untouched, as LAPACK). `a` is destroyed. `Path::Lapack`, N ≤ 1, a NaN or ±Inf in the
/// triangle, or workspace that cannot be allocated before A is touched: the system LAPACK's
/// xSYEVX on the untouched A. The arguments must have passed [`syevx_check`]; `z` holds as
/// many columns as RANGE may select (n, or IU − IL + 1 for 'I').
#[allow(clippy::too_many_arguments)]
pub fn syevx_vectors<T: SbrReal>(
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
    z: &mut [T],
    ldz: usize,
    ifail: &mut [i32],
    path: Path,
) -> EigReport {
    let sel = Selection::new(range, (vl, vu), (il, iu), abstol);
    let range = sel.range;
    let mut report = EigReport::new();
    let anrm = (path != Path::Lapack && n > 1).then(|| triangle_max_abs(uplo, n, a, lda));
    let Some(anrm) = anrm.filter(|x| x.is_finite() && !sel.nan_bound()) else {
        lapack_syevx(
            &mut report,
            sel,
            uplo,
            n,
            (a, lda),
            w,
            Some((z, ldz, ifail)),
        );
        return report;
    };
    let work = match VectorWork::new(n, path, false) {
        Ok(work) => work,
        Err(why) => {
            let note = Some(format!("{why}; system LAPACK"));
            report.reduction = Some(SyrdbReport::new(Backend::Cpu, note));
            lapack_syevx(
                &mut report,
                sel,
                uplo,
                n,
                (a, lda),
                w,
                Some((z, ldz, ifail)),
            );
            return report;
        }
    };
    let rmax = (T::ONE / (T::SAFE_MIN / T::ULP))
        .sqrt()
        .min(T::ONE / T::SAFE_MIN.sqrt().sqrt());
    let sigma = scale_into_range(uplo, n, a, lda, anrm, rmax);
    let mut scaled = sel;
    if let Some(sigma) = sigma {
        if abstol > T::ZERO {
            scaled.abstol = abstol * sigma;
        }
        if range == b'V' {
            scaled.vl = vl * sigma;
            scaled.vu = vu * sigma;
        }
    }
    let most = if range == b'I' {
        (iu - il + 1).max(0) as usize
    } else {
        n
    };
    let (kept, _, reduction) = match reduce_keeping(uplo, n, a, lda, most, work, path) {
        Ok(done) => done,
        Err(why) => {
            no_host_memory(&mut report, &why);
            return report;
        }
    };
    report.reduction = Some(reduction);
    // All of them with the default tolerance: xSTEDC (xSTEQR if it fails), as LAPACK's
    // xSYEVX takes xSTEQR; bisection and inverse iteration if neither converges.
    let everything = range == b'A' || (range == b'I' && il == 1 && iu == n as i32);
    let mut vectors = |d: &mut Vec<T>, e: &mut Vec<T>, z: &mut [T]| {
        report.stebz_illegal = None;
        if everything && abstol <= T::ZERO && all_vectors(d, e, w, z, ldz, path)? {
            report.m = n as i32;
            report.info = 0;
            ifail[..n].fill(0);
        } else {
            selected_vectors(&mut report, scaled, d, e, w, z, ldz, ifail, path)?;
        }
        Ok(report.m.max(0) as usize)
    };
    match kept.vectors_and_back_transform(n, a, lda, z, ldz, path, &mut vectors) {
        Ok(stages) => report.stages = Some(stages),
        Err(why) => {
            no_host_memory(&mut report, &why);
            report.m = 0;
            return report;
        }
    }
    let m = report.m.max(0) as usize;
    if let Some(sigma) = sigma {
        let imax = syevx_unscaled(report.info, report.m, n);
        for x in &mut w[..imax] {
            *x = *x * (T::ONE / sigma);
        }
    }
    sort_pairs(report.info, m, n, w, z, ldz, ifail);
    report
}
