//! The residual check (summaries per right-hand side, the acceptance decision) and iterative
//! refinement, shared by the CPU and GPU paths.

use super::{try_vec, Reject, RESIDUAL_TOL_EPS};
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
    Residual {
        rmax,
        smax,
        bmax,
        finite,
    }
}

/// Turns per-RHS residual summaries into the acceptance decision.
pub fn judge<T: Real>(per_rhs: impl IntoIterator<Item = Residual<T>>) -> Result<(), Reject> {
    let tol = T::from_f64(RESIDUAL_TOL_EPS) * T::EPS;
    let tol_b = T::EPS.sqrt();
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
                .fold(Residual::empty(), |acc, p| acc.merge(p[c]))
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
            if new[kk].finite && new[kk].rmax < checks[c].rmax {
                x[c * ldx..c * ldx + n].copy_from_slice(&r[kk * n..(kk + 1) * n]);
                checks[c] = new[kk];
            } else {
                stalled[c] = true;
            }
        }
    }
    Ok(steps)
}
