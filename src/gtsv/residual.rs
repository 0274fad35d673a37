//! The residual check (summaries per right-hand side, the acceptance decision) and iterative
//! refinement, shared by the CPU and GPU paths.

use super::{try_vec, Reject, RESIDUAL_TOL_EPS};
use crate::host::workers::{or_resume, run_parts};
use crate::real::Real;

/// One right-hand side's residual summary over some rows (see the module comment of `gtsv`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Residual<T> {
    /// `max_i |r_i|`, `r = b − A x`.
    pub rmax: T,
    /// `max_i (|a_i x_{i−1}| + |d_i x_i| + |c_i x_{i+1}| + |b_i|)`, the scale of the check.
    pub smax: T,
    /// `max_i |b_i|`.
    pub bmax: T,
    /// Whether every entry of `x`, `r` and the scale was finite.
    pub finite: bool,
}

impl<T: Real> Residual<T> {
    /// The summary of no rows.
    pub fn empty() -> Self {
        Residual {
            rmax: T::ZERO,
            smax: T::ZERO,
            bmax: T::ZERO,
            finite: true,
        }
    }

    /// The summary of the rows of both.
    pub fn merge(self, other: Self) -> Self {
        Residual {
            rmax: self.rmax.max(other.rmax),
            smax: self.smax.max(other.smax),
            bmax: self.bmax.max(other.bmax),
            finite: self.finite && other.finite,
        }
    }
}

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
    residual_rows_into(Bands { dl, d, du }, x, f, rows, None, false)
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
    a: Bands<'_, T>,
    x: &[T],
    f: &[T],
    rows: std::ops::Range<usize>,
    mut r_out: Option<&mut [T]>,
    accurate: bool,
) -> Residual<T> {
    let Bands { dl, d, du } = a;
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
    Residual {
        rmax,
        smax,
        bmax,
        finite,
    }
}

/// The levels [`judge`] accepts a column's `max |r|` below: `RESIDUAL_TOL_EPS · ε` times its
/// scale `max(|A||x| + |b|)`, and `√ε` times `max |b|` (above it the answer is too large for
/// its right-hand side: an ill-conditioned system, left to LAPACK).
pub fn accept_levels<T: Real>() -> (T, T) {
    (T::from_f64(RESIDUAL_TOL_EPS) * T::EPS, T::EPS.sqrt())
}

/// Turns per-RHS residual summaries into the acceptance decision.
// `!(r <= tol · s)` on purpose: a NaN fails the check.
#[allow(clippy::neg_cmp_op_on_partial_ord)]
pub fn judge<T: Real>(per_rhs: impl IntoIterator<Item = Residual<T>>) -> Result<(), Reject> {
    let (tol, tol_b) = accept_levels::<T>();
    let mut worst = 0.0f64;
    let mut ill = 0.0f64;
    for Residual {
        rmax: r,
        smax: s,
        bmax,
        finite,
    } in per_rhs
    {
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
    res.finite
        && res.rmax > T::from_f64(REFINE_TOL_EPS) * T::EPS * res.smax
        && res.rmax > T::from_f64(REFINE_B_EPS) * T::EPS * res.bmax
}

/// Splits each of the `ncols` columns (leading dimension `ld`, first `n` rows used) of `buf` at
/// `bounds` (row indices, `bounds[0] = 0`, last `= n`): `out[t][col]` is rows
/// `bounds[t]..bounds[t+1]` of column `col`. `None` when the lists cannot be allocated (they
/// grow with NRHS: issue #23).
pub(crate) fn split_rows<'a, T>(
    buf: &'a mut [T],
    ld: usize,
    ncols: usize,
    bounds: &[usize],
) -> Option<Vec<Vec<&'a mut [T]>>> {
    let parts = bounds.len() - 1;
    let mut out: Vec<Vec<&'a mut [T]>> = Vec::with_capacity(parts);
    for _ in 0..parts {
        let mut cols = Vec::new();
        cols.try_reserve_exact(ncols).ok()?;
        out.push(cols);
    }
    for col in buf.chunks_mut(ld).take(ncols) {
        let mut rest = col;
        for t in 0..parts {
            let (head, tail) = rest.split_at_mut(bounds[t + 1] - bounds[t]);
            out[t].push(head);
            rest = tail;
        }
    }
    Some(out)
}

/// A tridiagonal matrix by reference, LAPACK's layout (`dl`, `du`: n − 1 entries, `d`: n).
#[derive(Clone, Copy, Debug)]
pub struct Bands<'a, T> {
    pub dl: &'a [T],
    pub d: &'a [T],
    pub du: &'a [T],
}

/// Some columns of a column-major array of leading dimension `ld`: the k-th is column
/// `pick[k]`, or column k without `pick`.
#[derive(Clone, Copy, Debug)]
pub struct Columns<'a, T> {
    pub data: &'a [T],
    pub ld: usize,
    pub pick: Option<&'a [usize]>,
}

impl<'a, T> Columns<'a, T> {
    /// Columns 0, 1, … of `data`.
    pub fn all(data: &'a [T], ld: usize) -> Self {
        Columns {
            data,
            ld,
            pick: None,
        }
    }

    /// Columns `pick[0]`, `pick[1]`, … of `data`.
    pub fn picked(data: &'a [T], ld: usize, pick: &'a [usize]) -> Self {
        Columns {
            data,
            ld,
            pick: Some(pick),
        }
    }

    /// The first `n` rows of the k-th column.
    pub fn col(&self, k: usize, n: usize) -> &'a [T] {
        let c = self.pick.map_or(k, |p| p[k]);
        &self.data[c * self.ld..c * self.ld + n]
    }
}

/// The residual summaries of the first `ncols` columns of `x` against those of `f`, over all
/// rows of `a`, on `threads` threads. With `r_out` (`n × ncols`, leading dimension `n`) the
/// residuals `f − A x` are stored too; `accurate` evaluates them with exact products and a
/// compensated sum. `None` when host memory for the summaries cannot be allocated (they grow
/// with NRHS: issue #23).
pub fn residual_cols<T: Real>(
    a: Bands<'_, T>,
    x: Columns<'_, T>,
    f: Columns<'_, T>,
    ncols: usize,
    r_out: Option<&mut [T]>,
    threads: usize,
    accurate: bool,
) -> Option<Vec<Residual<T>>> {
    let (n, k) = (a.d.len(), ncols);
    let threads = threads.clamp(1, n.max(1));
    let bounds: Vec<usize> = (0..=threads).map(|t| t * n / threads).collect();
    let r_parts: Vec<Option<Vec<&mut [T]>>> = match r_out {
        Some(r) => split_rows(&mut r[..n * k], n, k, &bounds)?
            .into_iter()
            .map(Some)
            .collect(),
        None => (0..threads).map(|_| None).collect(),
    };
    // Each thread's summaries of its rows, k per thread, merged below.
    let mut partial = try_vec(threads.checked_mul(k)?, Residual::empty())?;
    let one = |part: RowsPart<'_, T>| {
        let RowsPart { rows, mut r, out } = part;
        for (c, sum) in out.iter_mut().enumerate() {
            let rc = r.as_mut().map(|v| &mut *v[c]);
            *sum = residual_rows_into(a, x.col(c, n), f.col(c, n), rows.clone(), rc, accurate);
        }
    };
    let parts: Vec<_> = r_parts
        .into_iter()
        .zip(partial.chunks_mut(k.max(1)))
        .enumerate()
        .map(|(t, (r, out))| RowsPart {
            rows: bounds[t]..bounds[t + 1],
            r,
            out,
        })
        .collect();
    if threads == 1 {
        parts.into_iter().for_each(one);
    } else {
        // A thread's panic is raised again here, as before the threads were joined one by one.
        or_resume(run_parts(parts, &one));
    }
    let mut sums = try_vec(k, Residual::empty())?;
    for (c, sum) in sums.iter_mut().enumerate() {
        *sum = (0..threads).fold(Residual::empty(), |acc, t| acc.merge(partial[t * k + c]));
    }
    Some(sums)
}

/// One thread's share of [`residual_cols`]: its rows, their residuals' place in each column
/// (if stored), and its summaries, one per column.
struct RowsPart<'a, T> {
    rows: std::ops::Range<usize>,
    r: Option<Vec<&'a mut [T]>>,
    out: &'a mut [Residual<T>],
}

/// Per column of an iterative refinement: its current residual summary and whether
/// refinement stalled on it; and the columns of the step in progress. Sized by NRHS and
/// allocated before the solve starts ([`Self::try_new`]), so that no step allocates for them
/// (issue #23). Shared by the CPU and GPU drivers.
pub(crate) struct RefineState<T> {
    /// Every column's summary, kept current.
    pub(crate) checks: Vec<Residual<T>>,
    stalled: Vec<bool>,
    /// The columns the step in progress corrects.
    cols: Vec<usize>,
    /// Positions in `cols` of the columns it improved.
    better: Vec<usize>,
}

impl<T: Real> RefineState<T> {
    /// The state of `nrhs` columns, or [`Reject::NoHostMemory`].
    pub(crate) fn try_new(nrhs: usize) -> Result<Self, Reject> {
        let per_col = std::mem::size_of::<Residual<T>>() + 1 + 2 * std::mem::size_of::<usize>();
        let fail = || Reject::NoHostMemory(nrhs.saturating_mul(per_col));
        let mut cols = try_vec(nrhs, 0).ok_or_else(fail)?;
        let mut better = try_vec(nrhs, 0).ok_or_else(fail)?;
        // Empty, with room for every column: pushes never reallocate.
        cols.clear();
        better.clear();
        Ok(RefineState {
            checks: try_vec(nrhs, Residual::empty()).ok_or_else(fail)?,
            stalled: try_vec(nrhs, false).ok_or_else(fail)?,
            cols,
            better,
        })
    }

    /// Chooses the columns of the next step, those not stalled whose residual
    /// [`wants_refinement`], and returns them (none: refinement is done).
    pub(crate) fn next_step(&mut self) -> &[usize] {
        self.cols.clear();
        for (c, check) in self.checks.iter().enumerate() {
            if !self.stalled[c] && wants_refinement(check) {
                self.cols.push(c);
            }
        }
        &self.cols
    }

    /// The columns of the step in progress.
    pub(crate) fn cols(&self) -> &[usize] {
        &self.cols
    }

    /// The step's starting point: `old(kk, c)`, the accurate summary of the solution it
    /// started from for its `kk`-th column `c`, replaces that column's.
    pub(crate) fn start_from(&mut self, old: impl Fn(usize, usize) -> Residual<T>) {
        for (kk, &c) in self.cols.iter().enumerate() {
            self.checks[c] = old(kk, c);
        }
    }

    /// The step's verdict: a column takes its candidate's summary `new(kk, c)` where that is
    /// finite and smaller; the others stall ([`Self::improved`] lists those that did not).
    pub(crate) fn keep_improved(&mut self, new: impl Fn(usize, usize) -> Residual<T>) {
        self.better.clear();
        for (kk, &c) in self.cols.iter().enumerate() {
            let cand = new(kk, c);
            if cand.finite && cand.rmax < self.checks[c].rmax {
                self.checks[c] = cand;
                self.better.push(kk);
            } else {
                self.stalled[c] = true;
            }
        }
    }

    /// The columns the last step improved, as `(kk, c)`: its `kk`-th, column `c`.
    pub(crate) fn improved(&self) -> impl Iterator<Item = (usize, usize)> + '_ {
        self.better.iter().map(|&kk| (kk, self.cols[kk]))
    }
}

/// Iterative refinement in working precision, shared by the CPU and chunked GPU drivers:
/// while some column of `x` (leading dimension `ldx`) [`wants_refinement`], at most
/// [`refine_steps`] times: compute `r = f − A x` for those columns, solve `A δ = r` with the
/// factorization SPIKE already has (`correct(r, k)`: `r` holds `k` packed columns of leading
/// dimension `n` on entry and `δ` on return; `Ok(false)` if it could not solve), and replace a
/// column by `x + δ` only where that lowers its residual. `state.checks` (one summary per column
/// of `x`) is kept current. Returns the number of steps taken.
pub(crate) fn refine<T: Real, E>(
    a: Bands<'_, T>,
    x: &mut [T],
    ldx: usize,
    f: Columns<'_, T>,
    state: &mut RefineState<T>,
    threads: usize,
    mut correct: impl FnMut(&mut [T], usize) -> Result<bool, E>,
) -> Result<usize, E> {
    let n = a.d.len();
    let mut steps = 0;
    for _ in 0..refine_steps() {
        let k = state.next_step().len();
        if k == 0 {
            break;
        }
        // Refinement is optional: without memory for the residuals, the answer is judged as
        // it is (and LAPACK runs if it falls short).
        let Some(mut r) = try_vec(n * k, T::ZERO) else {
            break;
        };
        let (cols, fc) = (state.cols(), Columns::picked(f.data, f.ld, state.cols()));
        // The residual with exact products: the current x's true residual, both the right-hand
        // side of the correction and the baseline to beat.
        let xc = Columns::picked(&*x, ldx, cols);
        let Some(old) = residual_cols(a, xc, fc, k, Some(&mut r), threads, true) else {
            break;
        };
        state.start_from(|kk, _| old[kk]);
        if !correct(&mut r, k)? {
            break;
        }
        steps += 1;
        // r := x + δ, then keep it where its residual is smaller.
        for (kk, &c) in state.cols().iter().enumerate() {
            let (xc, dc) = (&x[c * ldx..c * ldx + n], &mut r[kk * n..(kk + 1) * n]);
            for (di, &xi) in dc.iter_mut().zip(xc) {
                *di = xi + *di;
            }
        }
        let fc = Columns::picked(f.data, f.ld, state.cols());
        let rc = Columns::all(&r, n);
        let Some(new) = residual_cols(a, rc, fc, k, None, threads, true) else {
            break;
        };
        state.keep_improved(|kk, _| new[kk]);
        for (kk, c) in state.improved() {
            x[c * ldx..c * ldx + n].copy_from_slice(&r[kk * n..(kk + 1) * n]);
        }
    }
    Ok(steps)
}
