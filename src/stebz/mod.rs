//! xSTEBZ: eigenvalues of a real symmetric tridiagonal matrix `T` — all of them, those in the
//! half-open interval (VL, VU], or the IL-th through IU-th — by bisection on Sturm counts
//! (Kahan 1966; LAPACK's xSTEBZ and xLAEBZ), run as multisection so that each step evaluates
//! many counts in one batch on a backend (Volkov & Demmel 2007).
//!
//! `Count(x)` (see [`count`]) is the number of eigenvalues of a block not greater than `x`.
//! An interval `(a, b]` with counts `nl < nu` holds eigenvalues `nl + 1 ..= nu` of its block.
//! Each step places points inside every active interval, counts them all in one
//! [`Counter::count`](count::Counter::count) call, and keeps the sub-intervals that still hold
//! eigenvalues, until an interval is narrower than LAPACK's tolerance
//! `max(ABSTOL, PIVMIN, RELTOL · max(|a|, |b|))`; its eigenvalues are then its midpoint.
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

//!
//! ## Stages
//! `args` decodes and checks the arguments; `blocks` splits T and sets each block's starting
//! interval; `nonfinite` holds the NaN and overflow rules; `index` finds (WL, WU] for
//! RANGE = 'I'; `multisection` bisects, counting through `counting` (the backend and its
//! fallback) with LAPACK's `tolerance`; `ordering` drops what RANGE = 'I' does not want and
//! sorts for ORDER = 'E'. [`scratch`] sizes their memory.

mod args;
mod blocks;
pub mod count;
mod counting;
pub mod cpu;
pub mod gpu;
mod index;
mod multisection;
mod nonfinite;
mod ordering;
pub mod scratch;
mod tolerance;

use crate::dispatch::Backend;
use crate::host::{take_room, try_vec};
use crate::lapack::Lapack;
use crate::real::Real;
pub use args::check_args;
use args::{decode_order, decode_range, Job, Order, Range};
use blocks::{enter_blocks, split_blocks, start_intervals, Window};
use count::SturmProblem;
use counting::{Counting, Trace};
use multisection::{multisection, Output, StepBuffers};
use nonfinite::undefined_by_nan;
pub use scratch::scratch_bytes;
use scratch::{Plan, Scratch};
use tolerance::{fudge, RELFAC};

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

    let (nsplit, pivmin) = split_blocks(d, e, ulp, safemn, e2, ends, isplit);
    let (e2, ends): (&[T], &[usize]) = (e2, &ends[..nsplit]);
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
            match index::wanted_interval(job, &problem, &mut counting, trace, backend, fudge, rtol)
            {
                Ok((wl, wu, bounds)) => (wl, wu, Some(bounds)),
                Err(info) => return (0, nsplit as i32, info),
            }
        }
    };
    let all = job.range == Range::All;
    let window = Window { wl, wu, all };

    let preps = &mut preps[..nsplit];
    let (nends, mut nwl, mut nwu) = start_intervals(
        job,
        &problem,
        window,
        fudge,
        preps,
        take_room(blocks, 2 * nsplit),
        take_room(xs, 2 * nsplit),
        take_room(counts, 2 * nsplit),
        &mut counting,
        trace,
    );
    let end_counts = &counts[..nends];

    // Place every block's eigenvalues (1 × 1 blocks now, the others as they converge).
    let mut out = Output {
        w: &mut w[..n],
        iblock: &mut iblock[..n],
    };
    let runs = &mut runs[..nsplit];
    let (mut m, mut ncnvrg, nactive) = enter_blocks(
        &problem, window, preps, end_counts, runs, active, &mut out, &mut nwl, &mut nwu,
    );

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
        (m, toofew) = ordering::discard(job, &mut out, m, nwl, nwu, (wl, wu), (wlu, wul));
    }

    if job.order == Order::Entire && nsplit > 1 {
        let mm = m.clamp(0, n as i64) as usize;
        ordering::sort_like_lapack(&mut out.w[..mm], &mut out.iblock[..mm], tree);
    }

    let info = ncnvrg as i32 + 2 * toofew as i32;
    (m as i32, nsplit as i32, info)
}
