//! RANGE = 'I': the boundaries of eigenvalues IL and IU on the whole matrix, by the binary
//! search of xLAEBZ (IJOB = 3), mirrored point for point (`k` levels per batch), because which
//! members of a cluster LAPACK keeps depends on exactly where that search stops.

use super::args::Job;
use super::count::SturmProblem;
use super::counting::{Counting, Trace};
use super::multisection::{levels_for, MAX_LEVELS};
use super::nonfinite::search_overflowed;
use super::tolerance::{converged, iteration_cap};
use crate::dispatch::Backend;
use crate::real::Real;

/// RANGE = 'I': the interval (WL, WU] that holds eigenvalues IL ..= IU, and the inner
/// boundaries (WLU, WUL) of the search (see [`crate::stebz::ordering::discard`]), found by
/// [`index_search`] on the whole matrix from its Gerschgorin interval; `Err(INFO)` when the
/// search failed (4) or overflowed (1), with M = 0.
pub(super) fn wanted_interval<T: Real>(
    job: &Job<'_, T>,
    problem: &SturmProblem<'_, T>,
    counting: &mut Counting<'_, T>,
    trace: &mut Trace,
    backend: Backend,
    fudge: T,
    rtol: T,
) -> Result<(T, T, (T, T)), i32> {
    let (d, e2, pivmin) = (problem.d, problem.e2, problem.pivmin);
    let (n, nsplit) = (d.len(), problem.block_ends.len());
    let ulp = T::ULP;
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
        index_search(counting, trace, &search)
    } else {
        // The search counts the whole matrix at once, as LAPACK does (the zero
        // couplings make that the sum of the block counts).
        let whole_end = [n];
        let whole = SturmProblem {
            block_ends: &whole_end,
            ..*problem
        };
        let mut whole_counting = Counting::new(whole, backend);
        index_search(&mut whole_counting, trace, &search)
    };
    let (nwl, nwu) = (lower.nlo, upper.nhi);
    if nwl < 0 || nwl >= n as i32 || nwu < 1 || nwu > n as i32 {
        return Err(4);
    }
    if search_overflowed(&lower, &upper) {
        return Err(1);
    }
    Ok((lower.lo, upper.hi, (lower.hi, upper.lo)))
}

/// Inputs of the RANGE = 'I' boundary search.
pub(super) struct SearchSetup<T> {
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
pub(super) struct Search<T> {
    pub(super) lo: T,
    pub(super) hi: T,
    pub(super) nlo: i32,
    pub(super) nhi: i32,
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
