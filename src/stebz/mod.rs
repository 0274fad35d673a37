//! xSTEBZ: eigenvalues of a real symmetric tridiagonal matrix `T` — all of them, those in the
//! half-open interval (VL, VU], or the IL-th through IU-th — by bisection on Sturm counts
//! (Kahan 1966; LAPACK's xSTEBZ and xLAEBZ), run as multisection so that each step evaluates
//! many counts in one batch on a backend (Volkov & Demmel 2007).
//!
//! `Count(x)` (see [`count`]) is the number of eigenvalues of a block not greater than `x`.
//! An interval `(a, b]` with counts `nl < nu` holds eigenvalues `nl + 1 ..= nu` of its block.
//! Each step places points inside every active interval, counts them all in one
//! [`Counter::count`] call, and keeps the sub-intervals that still hold eigenvalues, until an
//! interval is narrower than LAPACK's tolerance `max(ABSTOL, PIVMIN, RELTOL · max(|a|, |b|))`;
//! its eigenvalues are then its midpoint.
//!
//! ## Dyadic multisection
//! With `ML = 2^k − 1` points per interval the points are the midpoints of `k` levels of
//! bisection (`l + j (u − l) / 2^k`, each computed as LAPACK computes a midpoint,
//! `½ (a + b)`, from the endpoints of its parent), and the counts are consumed level by level
//! as bisection would consume them: each split keeps LAPACK's monotonicity adjustment
//! `n_m = min(n_u, max(n_l, Count(m)))` (the paper's §2.3 rule, applied at every node, so counts
//! mixed from different backends or non-monotone arithmetic still give disjoint intervals with
//! `Count(a) ≤ n_l < n_u ≤ Count(b)`), and each sub-interval is tested for convergence after
//! every level, with LAPACK's iteration cap counted in levels. The counts at points under a
//! sub-interval that has already converged or emptied are simply not used. A step of `ML`
//! points thus costs one batch instead of `k`, and the intervals, the midpoints returned and
//! the convergence decisions are exactly those of LAPACK's bisection for the same counts, so the
//! results do not depend on the backend or on how many points it asked for.
//!
//! RANGE = 'I' first finds the boundaries of eigenvalues IL and IU on the whole matrix with the
//! binary search of xLAEBZ (IJOB = 3), mirrored point for point (again `k` levels per batch),
//! because which members of a cluster LAPACK keeps depends on exactly where that search stops.
//!
//! ## Differences from LAPACK
//! - LAPACK's bisection loop (xLAEBZ, IJOB = 2, 3) counts a pivot equal to `+PIVMIN` exactly as
//!   negative, while its IJOB = 1 count and [`count::sturm_count`] do not. Only a pivot that is
//!   exactly `PIVMIN` at a bisection point tells them apart.
//! - We follow the fixes of Reference-LAPACK PR #1039 (merged 2026): a block whose Gerschgorin
//!   interval ends exactly at WL counts as below WL (`GU ≤ WL`; older releases, such as the one
//!   inside OpenBLAS 0.3.21, test `GU < WL` and then miscount NWL), and no write through a zero
//!   index when discarding. We keep `FUDGE = 2.1` in both precisions, as those releases do; the
//!   same PR widens it to 2.3 in single precision, which moves the starting intervals and so the
//!   bisection points, never the results beyond the tolerance.
//! - Where a NaN would reach one of LAPACK's MAX/MIN — a NaN in D or E (N ≥ 2), a NaN VL or
//!   VU with RANGE = 'V', or ±Inf entries whose Gerschgorin terms give ∞ − ∞ (e.g. D and E all
//!   infinite) — LAPACK's M, W and INFO depend on how its compiler ordered the operands (Fortran
//!   leaves MAX(x, NaN) open; the system LAPACK's build returns INFO = 1 or 4 in most such
//!   cases, and INFO = 0 with M = 0 or with a partial W in some). We return no eigenvalues and
//!   report the failure, whatever the backend: M = 0, INFO = 4 for RANGE = 'I' (a proper
//!   subset), else INFO = 1, with NSPLIT and ISPLIT as LAPACK computes them (see
//!   [`undefined_by_nan`]). ±Inf that never meets ∞ − ∞ there (an infinite entry split off as
//!   its own block, an infinite coupling) runs LAPACK's arithmetic and gives LAPACK's answer.
//! - RANGE = 'I' on a matrix whose Gerschgorin bound is within a factor FUDGE of the overflow
//!   threshold: FUDGE·TNORM overflows, the index search starts from (−∞, ∞), and a boundary it
//!   needs (IL > 1) comes out NaN. LAPACK then returns NaN eigenvalues with INFO = 1; we return
//!   M = 0 and INFO = 1.

pub mod count;
pub mod cpu;
pub mod gpu;
pub mod scratch;

use crate::dispatch::Backend;
use crate::host::try_vec;
use crate::lapack::Lapack;
use crate::real::Real;
use count::{Counter, SturmProblem};
use cpu::CpuCounter;
pub use scratch::scratch_bytes;
use scratch::{Plan, Scratch};

/// INFO when neither this crate's workspace nor the system LAPACK's (4N reals, 3N integers)
/// can be allocated (the exported routines' `HYLAPACK_INFO_INTERNAL_ERROR`; the reason is in
/// the report's note).
pub const INFO_NO_HOST_MEMORY: i32 = -1000;

/// The host workspace of a call (see [`scratch`]) could not be allocated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NoMemory {
    /// The bytes the workspace asked for.
    pub bytes: usize,
}

impl std::fmt::Display for NoMemory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "cannot allocate {} MiB of host workspace",
            self.bytes.div_ceil(1 << 20)
        )
    }
}

/// What [`stebz`] returns besides the arrays: LAPACK's M, NSPLIT, INFO, and how it ran.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StebzReport {
    /// The number of eigenvalues found (LAPACK's M).
    pub m: i32,
    /// The number of diagonal blocks (LAPACK's NSPLIT; 0 when N = 0).
    pub nsplit: i32,
    /// LAPACK's INFO: 0; −i for an illegal i-th argument; 1 (or 3): some intervals did not
    /// converge, their IBLOCK is negative; 2 (or 3): RANGE = 'I' found fewer than IU − IL + 1
    /// eigenvalues; 4: RANGE = 'I' and the Gerschgorin interval was too small.
    pub info: i32,
    /// The backend that evaluated the Sturm counts: the one asked for, unless it fell back to
    /// the CPU (or nothing needed counting).
    pub backend: Backend,
    /// Why the run did not stay on the backend asked for, if it did not.
    pub note: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Range {
    All,
    Value,
    Index,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Order {
    ByBlock,
    Entire,
}

fn decode_range(c: u8) -> Option<Range> {
    match c.to_ascii_uppercase() {
        b'A' => Some(Range::All),
        b'V' => Some(Range::Value),
        b'I' => Some(Range::Index),
        _ => None,
    }
}

fn decode_order(c: u8) -> Option<Order> {
    match c.to_ascii_uppercase() {
        b'B' => Some(Order::ByBlock),
        b'E' => Some(Order::Entire),
        _ => None,
    }
}

/// xSTEBZ's argument checks, in LAPACK's order: 0, or −i when the i-th argument (1 RANGE,
/// 2 ORDER, 3 N, 5 VU, 6 IL, 7 IU) is illegal. RANGE and ORDER are case-insensitive.
pub fn check_args<T: Real>(range: u8, order: u8, n: i32, vl: T, vu: T, il: i32, iu: i32) -> i32 {
    let Some(range) = decode_range(range) else {
        return -1;
    };
    if decode_order(order).is_none() {
        return -2;
    }
    if n < 0 {
        return -3;
    }
    match range {
        Range::Value if vl >= vu => -5,
        Range::Index if il < 1 || il > n.max(1) => -6,
        Range::Index if iu < n.min(il) || iu > n => -7,
        _ => 0,
    }
}

/// LAPACK's FUDGE: widens the Gerschgorin intervals (see the module notes).
fn fudge<T: Real>() -> T {
    T::from_f64(if T::PREFIX == 's' { 2.1f32 as f64 } else { 2.1 })
}

/// LAPACK's RELFAC: the relative tolerance is RELFAC · ulp.
const RELFAC: f64 = 2.0;

/// Natural logarithm in the working precision (LAPACK's LOG of a REAL is single precision).
fn ln<T: Real>(x: T) -> T {
    if T::PREFIX == 's' {
        T::from_f64((x.to_f64() as f32).ln() as f64)
    } else {
        T::from_f64(x.to_f64().ln())
    }
}

/// Fortran's INT on x86: truncation, and the "integer indefinite" value for NaN or overflow.
fn fortran_int<T: Real>(v: T) -> i32 {
    let v = v.to_f64();
    if v.is_nan() || v >= 2_147_483_648.0 || v <= -2_147_483_649.0 {
        i32::MIN
    } else {
        v.trunc() as i32
    }
}

/// LAPACK's iteration cap: `INT((LOG(width) − LOG(PIVMIN)) / LOG(2)) + 2` levels of bisection.
fn iteration_cap<T: Real>(width: T, pivmin: T) -> i32 {
    fortran_int((ln(width) - ln(pivmin)) / ln(T::TWO)).wrapping_add(2)
}

/// xLAEBZ's convergence test for `(lo, hi]` with counts `nlo`, `nhi`.
#[inline]
fn converged<T: Real>(lo: T, hi: T, nlo: i32, nhi: i32, atol: T, pivmin: T, rtol: T) -> bool {
    let width = (hi - lo).abs();
    let mag = hi.abs().max(lo.abs());
    width < atol.max(pivmin).max(rtol * mag) || nlo >= nhi
}

/// Most levels of bisection in one batch (1023 points per interval).
const MAX_LEVELS: u32 = 10;

/// Levels of bisection that `points` points per interval buy: the largest `k` with
/// `2^k − 1 ≤ points`, between 1 and [`MAX_LEVELS`].
fn levels_for(points: usize) -> u32 {
    let p = points.clamp(1, (1 << MAX_LEVELS) - 1) + 1;
    usize::BITS - 1 - p.leading_zeros()
}

/// Eigenvalues of the symmetric tridiagonal matrix with diagonal `d` (N = `d.len()`) and
/// off-diagonal `e` (N − 1 entries), with LAPACK xSTEBZ's contract and outputs:
///
/// - `range`: `b'A'` all; `b'V'` those in (`vl`, `vu`]; `b'I'` the `il`-th to `iu`-th.
/// - `order`: `b'B'` grouped by block, ascending within each; `b'E'` ascending overall.
/// - `abstol`: absolute tolerance; `≤ 0` means `ulp · ‖T‖` per block, as LAPACK.
/// - `w`, `iblock`, `isplit` (N entries each): the first M eigenvalues, the block of each
///   (negative if it did not converge), and the last row (1-based) of each of the NSPLIT
///   blocks.
/// - `backend`: where to evaluate the Sturm counts. A GPU that cannot start or fails mid-run
///   hands the rest of the run to the CPU (same counts, so the same result); the report says so.
///
/// The arguments should have passed [`check_args`]; if they have not, nothing is computed and
/// the report carries its INFO.
///
/// The host workspace (see [`scratch`]) is allocated after the quick returns (N = 0, N = 1),
/// before anything is computed; when it cannot be, the report has M = 0, NSPLIT = 0, INFO =
/// [`INFO_NO_HOST_MEMORY`] and the reason in its note, and the outputs are untouched.
/// [`stebz_or_lapack`] falls back to the system LAPACK instead.
#[allow(clippy::too_many_arguments)]
pub fn stebz<T: Real>(
    range: u8,
    order: u8,
    vl: T,
    vu: T,
    il: i32,
    iu: i32,
    abstol: T,
    d: &[T],
    e: &[T],
    w: &mut [T],
    iblock: &mut [i32],
    isplit: &mut [i32],
    backend: Backend,
) -> StebzReport {
    let run = try_stebz(
        range, order, vl, vu, il, iu, abstol, d, e, w, iblock, isplit, backend,
    );
    run.unwrap_or_else(|why| StebzReport {
        m: 0,
        nsplit: 0,
        info: INFO_NO_HOST_MEMORY,
        backend,
        note: Some(why.to_string()),
    })
}

/// [`stebz`], falling back to the system LAPACK's xSTEBZ when this crate's workspace cannot be
/// allocated: on `lapack_work` (LAPACK's WORK, 4N entries, and IWORK, 3N) when the caller gave
/// them, else on a workspace of that size allocated here. Only when that cannot be allocated
/// either is INFO [`INFO_NO_HOST_MEMORY`] (with M = 0 and the outputs untouched).
#[allow(clippy::too_many_arguments)]
pub fn stebz_or_lapack<T: Lapack>(
    range: u8,
    order: u8,
    vl: T,
    vu: T,
    il: i32,
    iu: i32,
    abstol: T,
    d: &[T],
    e: &[T],
    w: &mut [T],
    iblock: &mut [i32],
    isplit: &mut [i32],
    backend: Backend,
    lapack_work: Option<(&mut [T], &mut [i32])>,
) -> StebzReport {
    let why = match try_stebz(
        range, order, vl, vu, il, iu, abstol, d, e, w, iblock, isplit, backend,
    ) {
        Ok(report) => return report,
        Err(why) => why,
    };
    let n = d.len();
    let mut own = None;
    let work = match lapack_work {
        Some((work, iwork)) => Some((work, iwork)),
        None => {
            own = try_vec(4 * n, T::ZERO).zip(try_vec(3 * n, 0i32));
            own.as_mut().map(|(w, i)| (&mut w[..], &mut i[..]))
        }
    };
    let Some((work, iwork)) = work else {
        return StebzReport {
            m: 0,
            nsplit: 0,
            info: INFO_NO_HOST_MEMORY,
            backend,
            note: Some(format!(
                "{why}, nor the system LAPACK's workspace of {} MiB",
                (4 * n * std::mem::size_of::<T>() + 12 * n).div_ceil(1 << 20)
            )),
        };
    };
    let e = &e[..n.saturating_sub(1)];
    let lapack = T::stebz_in(
        range, order, vl, vu, il, iu, abstol, d, e, w, iblock, isplit, work, iwork,
    );
    drop(own);
    crate::dispatch::debug(|| format!("stebz: {why}; ran the system LAPACK"));
    StebzReport {
        m: lapack.m,
        nsplit: lapack.nsplit,
        info: lapack.info,
        backend: Backend::Cpu,
        note: Some(format!("{why}; ran the system LAPACK")),
    }
}

/// [`stebz`], or `Err` (with nothing computed and the outputs untouched) when the host
/// workspace cannot be allocated.
#[allow(clippy::too_many_arguments)]
pub fn try_stebz<T: Real>(
    range: u8,
    order: u8,
    vl: T,
    vu: T,
    il: i32,
    iu: i32,
    abstol: T,
    d: &[T],
    e: &[T],
    w: &mut [T],
    iblock: &mut [i32],
    isplit: &mut [i32],
    backend: Backend,
) -> Result<StebzReport, NoMemory> {
    let n = d.len();
    let mut report = StebzReport {
        m: 0,
        nsplit: 0,
        info: 0,
        backend,
        note: None,
    };
    let n_i32 = i32::try_from(n).expect("N exceeds LAPACK's 32-bit INTEGER");
    report.info = check_args(range, order, n_i32, vl, vu, il, iu);
    if report.info != 0 || n == 0 {
        return Ok(report);
    }
    assert!(
        e.len() + 1 >= n && w.len() >= n && iblock.len() >= n && isplit.len() >= n,
        "xSTEBZ arrays too short for N = {n}"
    );
    let mut range = decode_range(range).expect("checked");
    let order = decode_order(order).expect("checked");
    if range == Range::Index && il == 1 && iu == n_i32 {
        range = Range::All;
    }

    if n == 1 {
        report.nsplit = 1;
        isplit[0] = 1;
        if range == Range::Value && (vl >= d[0] || vu < d[0]) {
            report.m = 0;
        } else {
            w[0] = d[0];
            iblock[0] = 1;
            report.m = 1;
        }
        return Ok(report);
    }

    let plan = Plan::new(n, order);
    let Some(mut scratch) = Scratch::try_new(&plan) else {
        return Err(NoMemory {
            bytes: plan.bytes::<T>(),
        });
    };
    let mut trace = Trace::default();
    let job = Job {
        range,
        order,
        vl,
        vu,
        il,
        iu,
        abstol,
        d,
        e,
    };
    let (m, nsplit, info) = solve(&job, &mut scratch, w, iblock, isplit, backend, &mut trace);
    report.m = m;
    report.nsplit = nsplit;
    report.info = info;
    if trace.fell_back {
        report.backend = Backend::Cpu;
    }
    if !trace.notes.is_empty() {
        report.note = Some(trace.notes.join("; "));
    }
    Ok(report)
}

/// The decoded arguments of one call with N ≥ 2.
struct Job<'a, T> {
    range: Range,
    order: Order,
    vl: T,
    vu: T,
    il: i32,
    iu: i32,
    abstol: T,
    d: &'a [T],
    e: &'a [T],
}

/// What the counters did, for the report.
#[derive(Default)]
struct Trace {
    fell_back: bool,
    notes: Vec<String>,
}

impl Trace {
    fn fall_back(&mut self, why: String) {
        crate::dispatch::debug(|| format!("stebz: {why}"));
        self.fell_back = true;
        self.notes.push(why);
    }
}

/// The counter of one problem, built on first use, with the GPU-to-CPU fallback.
struct Counting<'p, T: Real> {
    problem: SturmProblem<'p, T>,
    want: Backend,
    counter: Option<Box<dyn Counter<T> + 'p>>,
}

impl<'p, T: Real> Counting<'p, T> {
    fn new(problem: SturmProblem<'p, T>, want: Backend) -> Self {
        Counting {
            problem,
            want,
            counter: None,
        }
    }

    fn counter(&mut self, trace: &mut Trace) -> &mut (dyn Counter<T> + 'p) {
        #[cfg(test)]
        if self.counter.is_none() {
            if let Some(calls) = tests::FLAKY_GPU.with(|f| f.get()) {
                let cpu = CpuCounter::new(&self.problem);
                self.counter = Some(Box::new(tests::Flaky { cpu, calls }));
            }
        }
        if self.counter.is_none() {
            let counter: Box<dyn Counter<T> + 'p> = match self.want {
                Backend::Gpu => match gpu::GpuCounter::new(&self.problem) {
                    Ok(gpu) => Box::new(gpu),
                    Err(why) => {
                        trace.fall_back(format!("GPU not used ({why}); counted on the CPU"));
                        Box::new(CpuCounter::new(&self.problem))
                    }
                },
                Backend::Cpu => Box::new(CpuCounter::new(&self.problem)),
            };
            self.counter = Some(counter);
        }
        self.counter.as_deref_mut().expect("just built")
    }

    fn points_per_interval(&mut self, trace: &mut Trace, intervals: usize) -> usize {
        self.counter(trace).points_per_interval(intervals).max(1)
    }

    fn count(&mut self, trace: &mut Trace, blocks: &[u32], x: &[T], counts: &mut [i32]) {
        let counter = self.counter(trace);
        if let Err(why) = counter.count(blocks, x, counts) {
            let name = counter.name();
            trace.fall_back(format!("{name} count failed ({why}); finished on the CPU"));
            let cpu = CpuCounter::new(&self.problem);
            cpu.count_into(blocks, x, counts);
            self.counter = Some(Box::new(cpu));
        }
    }
}

/// Writes eigenvalues by LAPACK position, ignoring positions outside `W` (reachable only with
/// NaN input, where LAPACK's own counts stop making sense).
struct Output<'o, T> {
    w: &'o mut [T],
    iblock: &'o mut [i32],
}

impl<T: Real> Output<'_, T> {
    /// Eigenvalues `nlo + 1 ..= nhi` of a block whose eigenvalue `j` goes to `W(j + iwoff)`.
    fn fill(&mut self, iwoff: i64, nlo: i32, nhi: i32, value: T, ib: i32) {
        for j in nlo as i64 + 1..=nhi as i64 {
            let pos = j + iwoff - 1;
            if pos >= 0 && (pos as usize) < self.w.len() {
                self.w[pos as usize] = value;
                self.iblock[pos as usize] = ib;
            }
        }
    }
}

/// An interval `(lo, hi]` holding eigenvalues `nlo + 1 ..= nhi` of block `blk`, after `depth`
/// levels of bisection.
#[derive(Clone, Copy, Debug)]
struct Interval<T> {
    lo: T,
    hi: T,
    nlo: i32,
    nhi: i32,
    depth: i32,
    blk: u32,
}

/// Per-block constants of the bisection.
#[derive(Clone, Copy, Debug, Default)]
struct BlockRun<T> {
    atol: T,
    itmax: i32,
    /// Eigenvalue `j` of the block goes to `W(j + iwoff)` (LAPACK's IWOFF).
    iwoff: i64,
    /// 1-based block number.
    jb: i32,
}

/// How a block enters the bisection.
#[derive(Clone, Copy, Debug)]
enum Prep<T> {
    /// A 1 × 1 block: its eigenvalue is its entry.
    Single,
    /// No eigenvalue wanted from it.
    Skip,
    /// Bisect `(gl, gu]` with absolute tolerance `atol`.
    Bisect { gl: T, gu: T, atol: T },
}

/// The whole computation for N ≥ 2: returns (M, NSPLIT, INFO).
fn solve<T: Real>(
    job: &Job<'_, T>,
    scratch: &mut Scratch<T>,
    w: &mut [T],
    iblock: &mut [i32],
    isplit: &mut [i32],
    backend: Backend,
    trace: &mut Trace,
) -> (i32, i32, i32) {
    let (d, e) = (job.d, job.e);
    let n = d.len();
    let ulp = T::ULP;
    let safemn = T::SAFE_MIN;
    let rtol = ulp * T::from_f64(RELFAC);
    let fudge = fudge::<T>();

    let Scratch {
        e2,
        ends,
        preps,
        runs,
        active,
        next,
        fills,
        levels,
        xs,
        blocks,
        counts,
        tree,
    } = scratch;

    // Splitting: T splits between rows j−1 and j when e(j−1)² is negligible against
    // |d(j−1) d(j)|; e2 keeps the squares of the couplings that stay (zero where it splits;
    // the workspace starts zeroed).
    let mut nsplit = 0;
    let mut pivmin = T::ONE;
    let ulp2 = ulp * ulp;
    for j in 1..n {
        let sq = e[j - 1] * e[j - 1];
        if (d[j] * d[j - 1]).abs() * ulp2 + safemn > sq {
            ends[nsplit] = j;
            nsplit += 1;
        } else {
            e2[j - 1] = sq;
            pivmin = pivmin.max(sq);
        }
    }
    ends[nsplit] = n;
    nsplit += 1;
    let (e2, ends): (&[T], &[usize]) = (e2, &ends[..nsplit]);
    let pivmin = pivmin * safemn;
    for (s, &end) in isplit.iter_mut().zip(ends) {
        *s = end as i32;
    }
    if undefined_by_nan(job, e2, ends) {
        let info = if job.range == Range::Index { 4 } else { 1 };
        return (0, nsplit as i32, info);
    }

    let problem = SturmProblem {
        d,
        e2,
        pivmin,
        block_ends: ends,
    };
    let mut counting = Counting::new(problem, backend);

    // The interval (WL, WU] of wanted eigenvalues; for RANGE = 'I' found by searching.
    let (wl, wu, index_bounds) = match job.range {
        Range::All => (T::ZERO, T::ZERO, None),
        Range::Value => (job.vl, job.vu, None),
        Range::Index => {
            // Gerschgorin interval of the whole (split) matrix.
            let mut gu = d[0];
            let mut gl = d[0];
            let mut prev = T::ZERO;
            for j in 0..n - 1 {
                let off = e2[j].sqrt();
                gu = gu.max(d[j] + prev + off);
                gl = gl.min(d[j] - prev - off);
                prev = off;
            }
            gu = gu.max(d[n - 1] + prev);
            gl = gl.min(d[n - 1] - prev);
            let tnorm = gl.abs().max(gu.abs());
            let widen = fudge * tnorm * ulp * T::from_usize(n);
            let gl = gl - widen - fudge * T::TWO * pivmin;
            let gu = gu + widen + fudge * pivmin;
            let itmax = iteration_cap(tnorm + pivmin, pivmin);
            let atol = if job.abstol <= T::ZERO {
                ulp * tnorm
            } else {
                job.abstol
            };
            let search = SearchSetup {
                gl,
                gu,
                n: n as i32,
                il: job.il,
                iu: job.iu,
                itmax,
                atol,
                rtol,
                pivmin,
            };
            let [lower, upper] = if nsplit == 1 {
                index_search(&mut counting, trace, &search)
            } else {
                // The search counts the whole matrix at once, as LAPACK does (the zero
                // couplings make that the sum of the block counts).
                let whole_end = [n];
                let whole = SturmProblem {
                    block_ends: &whole_end,
                    ..problem
                };
                let mut whole_counting = Counting::new(whole, backend);
                index_search(&mut whole_counting, trace, &search)
            };
            let (nwl, nwu) = (lower.nlo, upper.nhi);
            if nwl < 0 || nwl >= n as i32 || nwu < 1 || nwu > n as i32 {
                return (0, nsplit as i32, 4);
            }
            // Entries near the overflow threshold make FUDGE·TNORM overflow, so the search
            // starts from (−∞, ∞) and a midpoint is NaN; a NaN boundary would reach LAPACK's
            // per-block MAX/MIN (its W is then NaN and INFO = 1): report that failure.
            if lower.lo.is_nan() || upper.hi.is_nan() {
                return (0, nsplit as i32, 1);
            }
            (lower.lo, upper.hi, Some((lower.hi, upper.lo)))
        }
    };
    let all = job.range == Range::All;

    // Per block: the starting interval, and the counts at its ends, batched over all blocks
    // (in the step buffers: at least 2 per block).
    let mut nwl: i64 = 0;
    let mut nwu: i64 = 0;
    let preps = &mut preps[..nsplit];
    let mut nends = 0;
    for (b, prep) in preps.iter_mut().enumerate() {
        let rows = problem.block_rows(b);
        let size = rows.len();
        if size == 1 {
            *prep = Prep::Single;
            continue;
        }
        let (ib, ie) = (rows.start, rows.end - 1);
        let mut gu = d[ib];
        let mut gl = d[ib];
        let mut prev = T::ZERO;
        for j in ib..ie {
            let off = e[j].abs();
            gu = gu.max(d[j] + prev + off);
            gl = gl.min(d[j] - prev - off);
            prev = off;
        }
        gu = gu.max(d[ie] + prev);
        gl = gl.min(d[ie] - prev);
        let bnorm = gl.abs().max(gu.abs());
        let widen = fudge * bnorm * ulp * T::from_usize(size);
        gl = gl - widen - fudge * pivmin;
        gu = gu + widen + fudge * pivmin;
        let atol = if job.abstol <= T::ZERO {
            ulp * gl.abs().max(gu.abs())
        } else {
            job.abstol
        };
        if !all {
            if gu <= wl {
                nwl += size as i64;
                nwu += size as i64;
                *prep = Prep::Skip;
                continue;
            }
            gl = gl.max(wl);
            gu = gu.min(wu);
            if gl >= gu {
                *prep = Prep::Skip;
                continue;
            }
        }
        blocks[nends..nends + 2].copy_from_slice(&[b as u32, b as u32]);
        xs[nends..nends + 2].copy_from_slice(&[gl, gu]);
        nends += 2;
        *prep = Prep::Bisect { gl, gu, atol };
    }
    if nends > 0 {
        let (blocks, xs) = (&blocks[..nends], &xs[..nends]);
        counting.count(trace, blocks, xs, &mut counts[..nends]);
    }
    let end_counts = &counts[..nends];

    // Place every block's eigenvalues (1 × 1 blocks now, the others as they converge).
    let mut out = Output {
        w: &mut w[..n],
        iblock: &mut iblock[..n],
    };
    let mut m: i64 = 0;
    let mut ncnvrg = false;
    let runs = &mut runs[..nsplit];
    let mut nactive = 0;
    let mut next_end = 0;
    for (b, prep) in preps.iter().enumerate() {
        let jb = b as i32 + 1;
        match *prep {
            Prep::Single => {
                let di = d[problem.block_rows(b).start];
                let edge = di - pivmin;
                if all || wl >= edge {
                    nwl += 1;
                }
                if all || wu >= edge {
                    nwu += 1;
                }
                if all || (wl < edge && wu >= edge) {
                    out.fill(m, 0, 1, di, jb);
                    m += 1;
                }
            }
            Prep::Skip => {}
            Prep::Bisect { gl, gu, atol } => {
                let (nlo, nhi) = (end_counts[next_end], end_counts[next_end + 1]);
                next_end += 2;
                nwl += nlo as i64;
                nwu += nhi as i64;
                let iwoff = m - nlo as i64;
                let itmax = iteration_cap(gu - gl + pivmin, pivmin);
                runs[b] = BlockRun {
                    atol,
                    itmax,
                    iwoff,
                    jb,
                };
                if itmax < 1 {
                    // LAPACK does no iteration: the interval is reported unconverged.
                    ncnvrg = true;
                    out.fill(iwoff, nlo, nhi, T::HALF * (gl + gu), -jb);
                } else if nlo < nhi {
                    active[nactive] = Interval {
                        lo: gl,
                        hi: gu,
                        nlo,
                        nhi,
                        depth: 0,
                        blk: b as u32,
                    };
                    nactive += 1;
                }
                m += nhi as i64 - nlo as i64;
            }
        }
    }

    let buffers = StepBuffers {
        active,
        next,
        fills,
        levels,
        xs,
        blocks,
        counts,
    };
    ncnvrg |= multisection(
        &mut counting,
        trace,
        buffers,
        nactive,
        runs,
        pivmin,
        rtol,
        &mut out,
    );
    drop(counting);

    // RANGE = 'I': (WL, WU] holds eigenvalues NWL + 1 ..= NWU; drop those outside IL ..= IU.
    let mut toofew = false;
    if let Some((wlu, wul)) = index_bounds {
        let (w, iblock) = (&mut *out.w, &mut *out.iblock);
        let mut idiscl = job.il as i64 - 1 - nwl;
        let mut idiscu = nwu - job.iu as i64;
        let mut mm = m.clamp(0, n as i64) as usize;
        if idiscl > 0 || idiscu > 0 {
            let mut kept = 0;
            for je in 0..mm {
                if w[je] <= wlu && idiscl > 0 {
                    idiscl -= 1;
                } else if w[je] >= wul && idiscu > 0 {
                    idiscu -= 1;
                } else {
                    w[kept] = w[je];
                    iblock[kept] = iblock[je];
                    kept += 1;
                }
            }
            mm = kept;
            m = kept as i64;
        }
        if idiscl > 0 || idiscu > 0 {
            // Non-monotone counts left eigenvalues to discard outside (WL, WLU] or
            // (WUL, WU]: drop the smallest IDISCL and the largest IDISCU instead.
            kill_extremes(&w[..mm], &mut iblock[..mm], idiscl, wu, |a, b| a < b);
            kill_extremes(&w[..mm], &mut iblock[..mm], idiscu, wl, |a, b| a > b);
            let mut kept = 0;
            for je in 0..mm {
                if iblock[je] != 0 {
                    w[kept] = w[je];
                    iblock[kept] = iblock[je];
                    kept += 1;
                }
            }
            m = kept as i64;
        }
        toofew = idiscl < 0 || idiscu < 0;
    }

    if job.order == Order::Entire && nsplit > 1 {
        let mm = m.clamp(0, n as i64) as usize;
        sort_like_lapack(&mut out.w[..mm], &mut out.iblock[..mm], tree);
    }

    let info = ncnvrg as i32 + 2 * toofew as i32;
    (m as i32, nsplit as i32, info)
}

/// Whether LAPACK's xSTEBZ (N ≥ 2, after splitting: `e2` and the block `ends` as in
/// [`solve`]) would pass a NaN to MAX or MIN, where its answer is the compiler's: a NaN in D,
/// E or the pivot bound, a NaN VL or VU with RANGE = 'V', or a NaN Gerschgorin term
/// `d(j) ± (|e(j−1)| + |e(j)|)` (∞ − ∞) in the loops LAPACK runs — over the whole matrix with
/// √e2 for RANGE = 'I', then per block of two or more rows with |e|. The caller then reports
/// the failure (see the module notes). Runs before anything is allocated for the bisection.
fn undefined_by_nan<T: Real>(job: &Job<'_, T>, e2: &[T], ends: &[usize]) -> bool {
    let (d, e) = (job.d, job.e);
    let n = d.len();
    if d.iter().chain(&e[..n - 1]).any(|x| x.is_nan()) {
        return true;
    }
    if job.range == Range::Value && (job.vl.is_nan() || job.vu.is_nan()) {
        return true;
    }
    let nan_terms = |rows: std::ops::Range<usize>, off: &dyn Fn(usize) -> T| {
        let mut prev = T::ZERO;
        rows.clone().any(|j| {
            let next = if j + 1 < rows.end { off(j) } else { T::ZERO };
            let (hi, lo) = (d[j] + prev + next, d[j] - prev - next);
            prev = next;
            hi.is_nan() || lo.is_nan()
        })
    };
    if job.range == Range::Index && nan_terms(0..n, &|j| e2[j].sqrt()) {
        return true;
    }
    let mut start = 0;
    ends.iter().any(|&end| {
        let rows = start..end;
        start = end;
        rows.len() > 1 && nan_terms(rows, &|j| e[j].abs())
    })
}

/// Marks with IBLOCK = 0 the `count` most extreme eigenvalues (by `beyond`), as LAPACK does:
/// each round takes the first not yet marked, then any further beyond the last one taken.
fn kill_extremes<T: Real>(
    w: &[T],
    iblock: &mut [i32],
    count: i64,
    start: T,
    beyond: impl Fn(T, T) -> bool,
) {
    let mut wkill = start;
    for _ in 0..count.max(0) {
        let mut iw = None;
        for je in 0..w.len() {
            if iblock[je] != 0 && (beyond(w[je], wkill) || iw.is_none()) {
                iw = Some(je);
                wkill = w[je];
            }
        }
        if let Some(iw) = iw {
            iblock[iw] = 0;
        }
    }
}

/// The memory one multisection step works in, taken from the call's [`Scratch`]: the active
/// intervals and those of the next step (N each), the fills a step finds (N), the levels each
/// interval gets (N), and the step's points, their blocks and counts.
struct StepBuffers<'s, T> {
    active: &'s mut [Interval<T>],
    next: &'s mut [Interval<T>],
    fills: &'s mut [Fill<T>],
    levels: &'s mut [u8],
    xs: &'s mut [T],
    blocks: &'s mut [u32],
    counts: &'s mut [i32],
}

/// Runs the dyadic multisection (see the module notes) on the first `nactive` intervals of
/// `buffers.active` until every interval has converged or reached its block's iteration cap.
/// Returns whether some did not converge.
///
/// Placing a step's points and consuming its counts is independent per interval, so a large
/// step spreads that bookkeeping over the host's threads (chunks of intervals, in order); the
/// results do not depend on how the intervals were chunked. A chunk's points, next intervals
/// and fills go to its own slices of the step buffers: its points after those of the chunks
/// before it (their number is known once each interval's levels are), its next intervals and
/// fills at the offset of its first eigenvalue (each holds at least one of the chunk's
/// eigenvalues, and no two hold the same).
#[allow(clippy::too_many_arguments)]
fn multisection<T: Real>(
    counting: &mut Counting<'_, T>,
    trace: &mut Trace,
    buffers: StepBuffers<'_, T>,
    mut nactive: usize,
    runs: &[BlockRun<T>],
    pivmin: T,
    rtol: T,
    out: &mut Output<'_, T>,
) -> bool {
    let StepBuffers {
        mut active,
        mut next,
        fills,
        levels,
        xs,
        blocks,
        counts,
    } = buffers;
    let threads = crate::host::threads();
    let room = xs.len();
    let mut ncnvrg = false;
    while nactive > 0 {
        let mut kmax = levels_for(counting.points_per_interval(trace, nactive));
        // Fewer levels when the points would not fit (one level always does: room ≥ N).
        while kmax > 1 && nactive * ((1 << kmax) - 1) > room {
            kmax -= 1;
        }
        let points = nactive << kmax;
        let parts = if points >= PARALLEL_POINTS {
            threads.min(nactive)
        } else {
            1
        };
        let chunk = nactive.div_ceil(parts);
        let live = &active[..nactive];

        // Levels per interval; per chunk, its points and its eigenvalues.
        let sized: Vec<(usize, usize)> = in_parallel(
            live.chunks(chunk).zip(levels.chunks_mut(chunk)).collect(),
            |(ivs, ks)| plan_levels(ivs, ks, kmax, runs, pivmin, rtol),
        );
        let levels = &levels[..nactive];
        let total: usize = sized.iter().map(|&(p, _)| p).sum();

        let mut work = Vec::with_capacity(sized.len());
        let (mut x_rest, mut b_rest) = (&mut xs[..total], &mut blocks[..total]);
        for ((ivs, ks), &(p, _)) in live.chunks(chunk).zip(levels.chunks(chunk)).zip(&sized) {
            let (x, x_tail) = std::mem::take(&mut x_rest).split_at_mut(p);
            let (b, b_tail) = std::mem::take(&mut b_rest).split_at_mut(p);
            (x_rest, b_rest) = (x_tail, b_tail);
            work.push((ivs, ks, x, b));
        }
        in_parallel(work, |(ivs, ks, x, b)| place(ivs, ks, x, b));
        let (xs, blocks) = (&xs[..total], &blocks[..total]);
        counting.count(trace, blocks, xs, &mut counts[..total]);

        let mut work = Vec::with_capacity(sized.len());
        let (mut n_rest, mut f_rest) = (&mut next[..], &mut fills[..]);
        let mut first = 0;
        for ((ivs, ks), &(p, eigs)) in live.chunks(chunk).zip(levels.chunks(chunk)).zip(&sized) {
            let step = Step {
                xs: &xs[first..first + p],
                counts: &counts[first..first + p],
            };
            first += p;
            let (nx, n_tail) = std::mem::take(&mut n_rest).split_at_mut(eigs);
            let (fl, f_tail) = std::mem::take(&mut f_rest).split_at_mut(eigs);
            (n_rest, f_rest) = (n_tail, f_tail);
            work.push((ivs, ks, step, nx, fl));
        }
        let consumed = in_parallel(work, |(ivs, ks, step, nx, fl)| {
            consume(ivs, ks, step, runs, pivmin, rtol, nx, fl)
        });

        // Fills in order, and the next intervals packed to the front, in order.
        let (mut kept, mut first) = (0, 0);
        for (c, &(_, eigs)) in consumed.iter().zip(&sized) {
            ncnvrg |= c.ncnvrg;
            for f in &fills[first..first + c.fills] {
                out.fill(f.iwoff, f.nlo, f.nhi, f.value, f.ib);
            }
            next.copy_within(first..first + c.next, kept);
            kept += c.next;
            first += eigs;
        }
        std::mem::swap(&mut active, &mut next);
        nactive = kept;
    }
    ncnvrg
}

/// Steps with at least this many points spread their bookkeeping over threads. Measured on a
/// 16-core host: a step of 56k points took ~1.2 ms of bookkeeping either way (starting the
/// threads cost what they saved), so only larger steps use them.
const PARALLEL_POINTS: usize = 1 << 17;

/// `f` on every item, each on its own scoped thread when there is more than one.
fn in_parallel<I: Send, R: Send>(items: Vec<I>, f: impl Fn(I) -> R + Sync) -> Vec<R> {
    if items.len() <= 1 {
        return items.into_iter().map(f).collect();
    }
    std::thread::scope(|scope| {
        let f = &f;
        let handles: Vec<_> = items
            .into_iter()
            .map(|item| scope.spawn(move || f(item)))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("multisection bookkeeping panicked"))
            .collect()
    })
}

/// The levels `ks[i]` of this step for each interval `active[i]` (at most `kmax`, at most what
/// its block's iteration cap leaves, and no more than it needs); returns the points they place
/// and the eigenvalues the intervals hold.
fn plan_levels<T: Real>(
    active: &[Interval<T>],
    ks: &mut [u8],
    kmax: u32,
    runs: &[BlockRun<T>],
    pivmin: T,
    rtol: T,
) -> (usize, usize) {
    let (mut points, mut eigs) = (0, 0);
    for (iv, k) in active.iter().zip(ks.iter_mut()) {
        let run = &runs[iv.blk as usize];
        let left = (run.itmax - iv.depth).max(1) as u32;
        let levels = levels_needed(iv, run.atol, pivmin, rtol, kmax.min(left));
        *k = levels as u8;
        points += (1usize << levels) - 1;
        eigs += (iv.nhi - iv.nlo).max(0) as usize;
    }
    (points, eigs)
}

/// A heap-ordered tree of midpoints under each interval, node h covering the interval of its
/// parent's left (h even) or right (h odd) half, `2^k − 1` points for an interval of `k`
/// levels, intervals one after the other in `xs` (with their blocks in `blocks`).
fn place<T: Real>(active: &[Interval<T>], ks: &[u8], xs: &mut [T], blocks: &mut [u32]) {
    let mut lo = [T::ZERO; 1 << MAX_LEVELS];
    let mut hi = [T::ZERO; 1 << MAX_LEVELS];
    let mut off = 0;
    for (iv, &k) in active.iter().zip(ks) {
        let size = (1usize << k) - 1;
        for h in 1..=size {
            let (a, b) = if h == 1 {
                (iv.lo, iv.hi)
            } else if h % 2 == 0 {
                (lo[h / 2], xs[off + h / 2 - 1])
            } else {
                (xs[off + h / 2 - 1], hi[h / 2])
            };
            lo[h] = a;
            hi[h] = b;
            xs[off + h - 1] = T::HALF * (a + b);
        }
        blocks[off..off + size].fill(iv.blk);
        off += size;
    }
}

/// Eigenvalues `nlo + 1 ..= nhi` found at `value` (see [`Output::fill`]).
#[derive(Clone, Copy, Debug)]
struct Fill<T> {
    iwoff: i64,
    nlo: i32,
    nhi: i32,
    value: T,
    ib: i32,
}

/// The points of one chunk of intervals and their counts.
struct Step<'a, T> {
    xs: &'a [T],
    counts: &'a [i32],
}

/// What consuming one step's counts left for a chunk of intervals: the first `next` entries of
/// its next-interval slice and the first `fills` of its fill slice.
struct Consumed {
    next: usize,
    fills: usize,
    ncnvrg: bool,
}

/// Consumes the counts level by level, as bisection would, writing the intervals still to
/// bisect to `next` and the eigenvalues found to `fills`.
#[allow(clippy::too_many_arguments)]
fn consume<T: Real>(
    active: &[Interval<T>],
    ks: &[u8],
    step: Step<'_, T>,
    runs: &[BlockRun<T>],
    pivmin: T,
    rtol: T,
    next: &mut [Interval<T>],
    fills: &mut [Fill<T>],
) -> Consumed {
    let mut out = Consumed {
        next: 0,
        fills: 0,
        ncnvrg: false,
    };
    // Depth-first over at most MAX_LEVELS levels: never more than MAX_LEVELS + 1 entries.
    let mut stack: Vec<(usize, Interval<T>)> = Vec::with_capacity(2 * MAX_LEVELS as usize);
    let mut off = 0;
    for (iv, &k) in active.iter().zip(ks) {
        let run = runs[iv.blk as usize];
        let size = (1usize << k) - 1;
        stack.push((1, *iv));
        while let Some((h, s)) = stack.pop() {
            let mid = step.xs[off + h - 1];
            let c = step.counts[off + h - 1].max(s.nlo).min(s.nhi);
            let depth = s.depth + 1;
            let half = |lo, hi, nlo, nhi| Interval {
                lo,
                hi,
                nlo,
                nhi,
                depth,
                blk: s.blk,
            };
            let kids = if c == s.nhi {
                [Some(half(s.lo, mid, s.nlo, s.nhi)), None]
            } else if c == s.nlo {
                [None, Some(half(mid, s.hi, s.nlo, s.nhi))]
            } else {
                [
                    Some(half(s.lo, mid, s.nlo, c)),
                    Some(half(mid, s.hi, c, s.nhi)),
                ]
            };
            let leaf = 2 * h > size;
            let mut deeper = [None, None];
            for (side, kid) in kids.into_iter().enumerate() {
                let Some(kid) = kid else { continue };
                let value = T::HALF * (kid.lo + kid.hi);
                let fill = |ib| Fill {
                    iwoff: run.iwoff,
                    nlo: kid.nlo,
                    nhi: kid.nhi,
                    value,
                    ib,
                };
                if converged(kid.lo, kid.hi, kid.nlo, kid.nhi, run.atol, pivmin, rtol) {
                    fills[out.fills] = fill(run.jb);
                    out.fills += 1;
                } else if depth >= run.itmax {
                    out.ncnvrg = true;
                    fills[out.fills] = fill(-run.jb);
                    out.fills += 1;
                } else if leaf {
                    next[out.next] = kid;
                    out.next += 1;
                } else {
                    deeper[side] = Some((2 * h + side, kid));
                }
            }
            // Right first, so that the left half is walked (and queued) first.
            stack.extend(deeper.into_iter().rev().flatten());
        }
        off += size;
    }
    out
}

/// An upper estimate of the levels of bisection `iv` still needs (at least 1, at most `cap`, the
/// levels this step places): spending more points than that on it would be wasted.
fn levels_needed<T: Real>(iv: &Interval<T>, atol: T, pivmin: T, rtol: T, cap: u32) -> u32 {
    let (lo, hi) = (iv.lo.to_f64(), iv.hi.to_f64());
    // The smallest magnitude in the interval bounds the relative part of the tolerance below.
    let floor = if lo > 0.0 {
        lo
    } else if hi < 0.0 {
        -hi
    } else {
        0.0
    };
    let tol = atol
        .to_f64()
        .max(pivmin.to_f64())
        .max(rtol.to_f64() * floor);
    let mut width = hi - lo;
    let mut k = 0;
    // (NaN ends count as never narrow enough.)
    while k < cap && !matches!(width.partial_cmp(&tol), Some(std::cmp::Ordering::Less)) {
        width *= 0.5;
        k += 1;
    }
    k.max(1)
}

/// Inputs of the RANGE = 'I' boundary search.
struct SearchSetup<T> {
    gl: T,
    gu: T,
    n: i32,
    il: i32,
    iu: i32,
    itmax: i32,
    atol: T,
    rtol: T,
    pivmin: T,
}

/// One binary search of xLAEBZ (IJOB = 3) for a point `w` with `Count(w) = nval`.
#[derive(Clone, Copy, Debug)]
struct Search<T> {
    lo: T,
    hi: T,
    nlo: i32,
    nhi: i32,
    nval: i32,
    iters: i32,
    done: bool,
}

impl<T: Real> Search<T> {
    /// Takes the count `c` at `x`; returns whether the search goes on in the right half.
    fn step(&mut self, x: T, c: i32) -> bool {
        if c <= self.nval {
            self.lo = x;
            self.nlo = c;
        }
        if c >= self.nval {
            self.hi = x;
            self.nhi = c;
        }
        c < self.nval
    }

    fn finish_iteration(&mut self, setup: &SearchSetup<T>) {
        self.iters += 1;
        self.done = converged(
            self.lo,
            self.hi,
            self.nlo,
            self.nhi,
            setup.atol,
            setup.pivmin,
            setup.rtol,
        ) || self.iters >= setup.itmax;
    }
}

/// LAPACK's search for the boundaries of eigenvalues IL and IU (xLAEBZ, IJOB = 3, on the whole
/// matrix): two binary searches in (GL, GU], for `Count = IL − 1` starting at GL and for
/// `Count = IU` starting at GU, then at midpoints. Mirrored point for point, `k` levels per
/// batch. Returns the two searches, lower first; a search that never met its target keeps the
/// flag value −1 or N + 1 that LAPACK tests for INFO = 4.
fn index_search<T: Real>(
    counting: &mut Counting<'_, T>,
    trace: &mut Trace,
    setup: &SearchSetup<T>,
) -> [Search<T>; 2] {
    let start = |nval| Search {
        lo: setup.gl,
        hi: setup.gu,
        nlo: -1,
        nhi: setup.n + 1,
        nval,
        iters: 0,
        done: false,
    };
    let mut searches = [start(setup.il - 1), start(setup.iu)];
    if setup.itmax < 1 {
        return searches;
    }
    let first = [setup.gl, setup.gu];
    let mut counts = [0i32; 2];
    counting.count(trace, &[0, 0], &first, &mut counts);
    for (s, (&x, &c)) in searches.iter_mut().zip(first.iter().zip(&counts)) {
        s.step(x, c);
        s.finish_iteration(setup);
    }
    let mut xs = Vec::new();
    let mut counts = Vec::new();
    let mut lo = [T::ZERO; 1 << MAX_LEVELS];
    let mut hi = [T::ZERO; 1 << MAX_LEVELS];
    loop {
        let live: Vec<usize> = (0..2).filter(|&i| !searches[i].done).collect();
        if live.is_empty() {
            break;
        }
        let left = live
            .iter()
            .map(|&i| setup.itmax - searches[i].iters)
            .max()
            .unwrap_or(1)
            .max(1) as u32;
        let k = levels_for(counting.points_per_interval(trace, live.len())).min(left);
        let size = (1usize << k) - 1;
        xs.clear();
        for &i in &live {
            let s = &searches[i];
            let off = xs.len();
            for h in 1..=size {
                let (a, b) = if h == 1 {
                    (s.lo, s.hi)
                } else if h % 2 == 0 {
                    (lo[h / 2], xs[off + h / 2 - 1])
                } else {
                    (xs[off + h / 2 - 1], hi[h / 2])
                };
                lo[h] = a;
                hi[h] = b;
                xs.push(T::HALF * (a + b));
            }
        }
        counts.clear();
        counts.resize(xs.len(), 0);
        let blocks = vec![0u32; xs.len()];
        counting.count(trace, &blocks, &xs, &mut counts);
        for (slot, &i) in live.iter().enumerate() {
            let s = &mut searches[i];
            let off = slot * size;
            let mut h = 1;
            while h <= size && !s.done {
                let right = s.step(xs[off + h - 1], counts[off + h - 1]);
                s.finish_iteration(setup);
                h = 2 * h + right as usize;
            }
        }
    }
    searches
}

/// LAPACK's ORDER = 'E' sort: for each position in turn, swap in the first occurrence of the
/// smallest later value if it is smaller. It is not stable, and which of two equal eigenvalues
/// of different blocks comes first shows in IBLOCK, so it is reproduced exactly — in
/// O(M log M) with a tournament tree over positions (ties go to the earlier position), or
/// literally when M is small or W holds a NaN (no total order). `tree` holds the tree's
/// `2 · M.next_power_of_two()` nodes (M < 2^31).
fn sort_like_lapack<T: Real>(w: &mut [T], iblock: &mut [i32], tree: &mut [u32]) {
    let m = w.len();
    if m < 2 {
        return;
    }
    if m <= 32 || w.iter().any(|v| v.is_nan()) {
        for je in 0..m - 1 {
            let mut ie = None;
            let mut low = w[je];
            for (j, &v) in w.iter().enumerate().skip(je + 1) {
                if v < low {
                    ie = Some(j);
                    low = v;
                }
            }
            if let Some(ie) = ie {
                w.swap(ie, je);
                iblock.swap(ie, je);
            }
        }
        return;
    }
    let size = m.next_power_of_two();
    const NONE: u32 = u32::MAX;
    // tree[node] = position of the first minimum among the leaves under node.
    let tree = &mut tree[..2 * size];
    tree.fill(NONE);
    let pick = |w: &[T], a: u32, b: u32| -> u32 {
        if a == NONE {
            b
        } else if b == NONE {
            a
        } else if w[b as usize] < w[a as usize] {
            b
        } else {
            a
        }
    };
    for (p, slot) in tree[size..size + m].iter_mut().enumerate() {
        *slot = p as u32;
    }
    for node in (1..size).rev() {
        tree[node] = pick(w, tree[2 * node], tree[2 * node + 1]);
    }
    for je in 0..m - 1 {
        // First minimum of w[je + 1 ..].
        let (mut l, mut r) = (je + 1 + size, m + size);
        let (mut best_l, mut best_r) = (NONE, NONE);
        while l < r {
            if l & 1 == 1 {
                best_l = pick(w, best_l, tree[l]);
                l += 1;
            }
            if r & 1 == 1 {
                r -= 1;
                best_r = pick(w, tree[r], best_r);
            }
            l >>= 1;
            r >>= 1;
        }
        let ie = pick(w, best_l, best_r);
        if ie != NONE && w[ie as usize] < w[je] {
            let ie = ie as usize;
            w.swap(ie, je);
            iblock.swap(ie, je);
            let mut node = (ie + size) / 2;
            while node >= 1 {
                tree[node] = pick(w, tree[2 * node], tree[2 * node + 1]);
                node /= 2;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stebz::count::CountError;
    use crate::testmat::{self, Rng, TridiagFamily};
    use std::cell::Cell;

    thread_local! {
        /// When set, counters of this thread are a "GPU" that fails after that many batches.
        pub(super) static FLAKY_GPU: Cell<Option<usize>> = const { Cell::new(None) };
    }

    /// A counter that answers like the CPU, then fails like a lost GPU.
    pub(super) struct Flaky<'a, T> {
        pub cpu: CpuCounter<'a, T>,
        pub calls: usize,
    }

    impl<T: Real> Counter<T> for Flaky<'_, T> {
        fn points_per_interval(&self, intervals: usize) -> usize {
            (64 / intervals.max(1)).max(1)
        }
        fn count(&mut self, blocks: &[u32], x: &[T], counts: &mut [i32]) -> Result<(), CountError> {
            if self.calls == 0 {
                // A failed launch may leave garbage behind.
                counts.iter_mut().for_each(|c| *c = -7);
                return Err(CountError("launch failed".into()));
            }
            self.calls -= 1;
            self.cpu.count_into(blocks, x, counts);
            Ok(())
        }
        fn name(&self) -> &'static str {
            "gpu"
        }
    }

    /// A GPU lost mid-run: the CPU finishes, with the same results, and the report says so.
    #[test]
    fn gpu_failing_mid_run_falls_back() {
        let mut rng = Rng::new(5);
        for (family, range) in [
            (TridiagFamily::Random, b'A'),
            (TridiagFamily::Split, b'I'),
            (TridiagFamily::Clustered, b'V'),
        ] {
            let (d, e) = testmat::tridiag::<f64>(family, 120, &mut rng);
            let run = |flaky: Option<usize>| {
                FLAKY_GPU.with(|f| f.set(flaky));
                let (mut w, mut ib, mut is) = (vec![0.0; 120], vec![0; 120], vec![0; 120]);
                let r = stebz(
                    range,
                    b'E',
                    -10.0,
                    10.0,
                    10,
                    90,
                    0.0,
                    &d,
                    &e,
                    &mut w,
                    &mut ib,
                    &mut is,
                    Backend::Gpu,
                );
                FLAKY_GPU.with(|f| f.set(None));
                (r, w, ib, is)
            };
            let (clean, w0, ib0, is0) = run(Some(usize::MAX));
            assert_eq!((clean.backend, clean.note.as_deref()), (Backend::Gpu, None));
            assert!(clean.m > 0);
            for calls in [0, 1, 2] {
                let (r, w, ib, is) = run(Some(calls));
                assert_eq!(
                    (r.m, r.nsplit, r.info),
                    (clean.m, clean.nsplit, clean.info),
                    "{calls}"
                );
                assert_eq!(r.backend, Backend::Cpu, "{} {calls} {r:?}", family.name());
                assert!(
                    r.note.as_deref().unwrap_or("").contains("launch failed"),
                    "{:?}",
                    r.note
                );
                let m = r.m as usize;
                assert_eq!(
                    (&ib[..m], &is[..r.nsplit as usize]),
                    (&ib0[..m], &is0[..r.nsplit as usize])
                );
                assert!(
                    w[..m]
                        .iter()
                        .zip(&w0)
                        .all(|(a, b)| a.to_bits() == b.to_bits()),
                    "{calls}"
                );
            }
        }
    }

    /// The tournament-tree sort gives LAPACK's permutation, ties across blocks included.
    #[test]
    fn sort_matches_selection_sort() {
        let mut rng = Rng::new(11);
        for m in [33usize, 50, 200, 1000] {
            let w0: Vec<f64> = (0..m)
                .map(|_| [0.0, -0.0, 1.0, 2.5, -3.0][rng.below(5)] + rng.below(3) as f64)
                .collect();
            let b0: Vec<i32> = (0..m as i32).collect();
            let (mut w1, mut b1) = (w0.clone(), b0.clone());
            let mut tree = vec![0; 2 * m.next_power_of_two()];
            sort_like_lapack(&mut w1, &mut b1, &mut tree);
            let (mut w2, mut b2) = (w0.clone(), b0.clone());
            for je in 0..m - 1 {
                let mut ie = None;
                let mut low = w2[je];
                for (j, &v) in w2.iter().enumerate().skip(je + 1) {
                    if v < low {
                        ie = Some(j);
                        low = v;
                    }
                }
                if let Some(ie) = ie {
                    w2.swap(ie, je);
                    b2.swap(ie, je);
                }
            }
            assert_eq!(b1, b2, "m = {m}");
            assert!(w1.iter().zip(&w2).all(|(a, b)| a.to_bits() == b.to_bits()));
        }
    }

    #[test]
    fn levels() {
        let got = [0, 1, 2, 3, 4, 7, 8, 15, 16, 63, 64, 1023, 5000].map(levels_for);
        assert_eq!(got, [1, 1, 1, 2, 2, 3, 3, 4, 4, 6, 6, 10, 10]);
    }
}
