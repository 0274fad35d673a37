//! The blocks of T: where it splits (LAPACK's test on e(j−1)² against |d(j−1) d(j)|), each
//! block's starting interval (its Gerschgorin interval, widened by FUDGE, cut to the wanted
//! (WL, WU]) with the counts at its ends, and how each block enters the bisection.

use super::args::Job;
use super::count::SturmProblem;
use super::counting::{Counting, Trace};
use super::multisection::{BlockRun, Interval, Output};
use super::tolerance::iteration_cap;
use crate::real::Real;

/// How a block enters the bisection.
#[derive(Clone, Copy, Debug)]
pub(super) enum Prep<T> {
    /// A 1 × 1 block: its eigenvalue is its entry.
    Single,
    /// No eigenvalue wanted from it.
    Skip,
    /// Bisect `(gl, gu]` with absolute tolerance `atol`.
    Bisect { gl: T, gu: T, atol: T },
}

/// The eigenvalues wanted: all of them (`all`), else those in (`wl`, `wu`].
#[derive(Clone, Copy, Debug)]
pub(super) struct Window<T> {
    pub(super) wl: T,
    pub(super) wu: T,
    pub(super) all: bool,
}

/// Splits T into blocks: the squared couplings that stay into `e2`, the blocks' ends into
/// `ends` and ISPLIT. Returns (NSPLIT, PIVMIN).
pub(super) fn split_blocks<T: Real>(
    d: &[T],
    e: &[T],
    ulp: T,
    safemn: T,
    e2: &mut [T],
    ends: &mut [usize],
    isplit: &mut [i32],
) -> (usize, T) {
    let n = d.len();
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
    let pivmin = pivmin * safemn;
    for (s, &end) in isplit.iter_mut().zip(&ends[..nsplit]) {
        *s = end as i32;
    }
    (nsplit, pivmin)
}

/// Per block: its [`Prep`], and for those to bisect the counts at the ends of the starting
/// interval (the first entries of `blocks`, `xs`, `counts`, two per block). Returns how many
/// ends were counted, and NWL and NWU so far (the rows of blocks wholly below WL).
#[allow(clippy::too_many_arguments)]
pub(super) fn start_intervals<T: Real>(
    job: &Job<'_, T>,
    problem: &SturmProblem<'_, T>,
    window: Window<T>,
    fudge: T,
    preps: &mut [Prep<T>],
    blocks: &mut [u32],
    xs: &mut [T],
    counts: &mut [i32],
    counting: &mut Counting<'_, T>,
    trace: &mut Trace,
) -> (usize, i64, i64) {
    let (d, e) = (job.d, job.e);
    let (ulp, pivmin) = (T::ULP, problem.pivmin);
    let Window { wl, wu, all } = window;
    // Per block: the starting interval, and the counts at its ends, batched over all blocks
    // (in the step buffers: at least 2 per block).
    let mut nwl: i64 = 0;
    let mut nwu: i64 = 0;
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
    (nends, nwl, nwu)
}

/// Enters every block (after [`start_intervals`], whose end counts are `end_counts`): a 1 × 1
/// block's eigenvalue goes to `out` now, a block to bisect gets its [`BlockRun`] and, if it
/// holds wanted eigenvalues, an interval in `active`. Adds to NWL and NWU; returns M so far,
/// whether an interval is already unconverged, and the number of active intervals.
#[allow(clippy::too_many_arguments)]
pub(super) fn enter_blocks<T: Real>(
    problem: &SturmProblem<'_, T>,
    window: Window<T>,
    preps: &[Prep<T>],
    end_counts: &[i32],
    runs: &mut [BlockRun<T>],
    active: &mut [Interval<T>],
    out: &mut Output<'_, T>,
    nwl: &mut i64,
    nwu: &mut i64,
) -> (i64, bool, usize) {
    let (d, pivmin) = (problem.d, problem.pivmin);
    let Window { wl, wu, all } = window;
    let mut m: i64 = 0;
    let mut ncnvrg = false;
    let mut nactive = 0;
    let mut next_end = 0;
    for (b, prep) in preps.iter().enumerate() {
        let jb = b as i32 + 1;
        match *prep {
            Prep::Single => {
                let di = d[problem.block_rows(b).start];
                let edge = di - pivmin;
                if all || wl >= edge {
                    *nwl += 1;
                }
                if all || wu >= edge {
                    *nwu += 1;
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
                *nwl += nlo as i64;
                *nwu += nhi as i64;
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
    (m, ncnvrg, nactive)
}
