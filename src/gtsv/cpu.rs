//! The SPIKE decomposition on CPU threads (`std::thread::scope`): each thread factors its
//! contiguous run of blocks by diagonal pivoting and computes `Y`, `W`, `V`; the reduced
//! separator system (one unknown per block boundary) is solved by LAPACK xGTSV; the threads then
//! back-substitute and evaluate the residual check. The block factors are kept, so that a step of
//! iterative refinement (when the residual is above LAPACK's level) reuses them. The user's
//! arrays are only read until the answer is accepted; `B` is then overwritten with `X`.

use super::pivoting::BlockFactor;
use super::{
    judge, refine, residual_cols, residual_rows, split_rows, try_vec, Bands, Columns, RefineState,
    Reject, Residual,
};
use crate::host::workers::{or_resume, run_parts};
use crate::lapack::Lapack;
use crate::real::Real;
use std::ops::Range;

/// Blocks of `m − 1` rows separated by single rows; block `q` (the last) takes the rest.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    pub n: usize,
    /// Rows per block plus its separator (≥ 2).
    pub m: usize,
    /// Number of separators; there are `q + 1` blocks.
    pub q: usize,
}

impl Layout {
    /// About `blocks` blocks for `n ≥ 2` rows.
    pub fn new(n: usize, blocks: usize) -> Self {
        let m = n.div_ceil(blocks.max(1)).max(2);
        Layout {
            n,
            m,
            q: (n - 1) / m,
        }
    }

    pub fn block(&self, j: usize) -> Range<usize> {
        let lo = j * self.m;
        lo..if j < self.q { lo + self.m - 1 } else { self.n }
    }

    pub fn separator(&self, j: usize) -> usize {
        (j + 1) * self.m - 1
    }
}

/// The host workspace of one CPU SPIKE solve, allocated at once before anything is computed
/// (issue #23): on failure the caller runs LAPACK xGTSV, which needs none.
struct Workspace<T> {
    /// The solution, n × nrhs (leading dimension n).
    x: Vec<T>,
    w: Vec<T>,
    v: Vec<T>,
    /// Per thread, per block: a factorization with room for the block's rows.
    facs: Vec<Vec<BlockFactor<T>>>,
    reduced: Reduced<T>,
}

/// The reduced (separator) system's arrays: the matrix (`rdl`, `rd`, `rdu`, kept unfactored:
/// it is small, LAPACK refactors it per solve), a copy for LAPACK to factor, and its
/// right-hand sides (`q × nrhs`).
struct Reduced<T> {
    rdl: Vec<T>,
    rd: Vec<T>,
    rdu: Vec<T>,
    copy: [Vec<T>; 3],
    xs: Vec<T>,
}

impl<T: Real> Workspace<T> {
    /// Bytes of the workspace (an estimate of the failed request, for the note).
    fn bytes(lay: &Layout, nrhs: usize) -> usize {
        let (n, q) = (lay.n, lay.q);
        let per_block = std::mem::size_of::<BlockFactor<T>>();
        let t = std::mem::size_of::<T>();
        (n.saturating_mul(nrhs + 2) + q.saturating_mul(6 + nrhs))
            .saturating_mul(t)
            .saturating_add(n.saturating_mul(1 + 2 * t))
            .saturating_add((q + 1).saturating_mul(per_block))
    }

    /// Allocates the workspace of a solve with `nrhs` columns, threads owning the blocks
    /// `jb[t]..jb[t+1]`; [`Reject::NoHostMemory`] when any part cannot be allocated.
    fn try_new(lay: &Layout, jb: &[usize], nrhs: usize) -> Result<Self, Reject> {
        let fail = || Reject::NoHostMemory(Self::bytes(lay, nrhs));
        let (n, q) = (lay.n, lay.q);
        let zeros = |len: usize| try_vec(len, T::ZERO).ok_or_else(fail);
        let mut facs = Vec::new();
        facs.try_reserve_exact(jb.len() - 1).map_err(|_| fail())?;
        for t in 0..jb.len() - 1 {
            let mut own = Vec::new();
            own.try_reserve_exact(jb[t + 1] - jb[t])
                .map_err(|_| fail())?;
            for j in jb[t]..jb[t + 1] {
                own.push(BlockFactor::try_with_capacity(lay.block(j).len()).ok_or_else(fail)?);
            }
            facs.push(own);
        }
        let m1 = q.max(1) - 1;
        Ok(Workspace {
            x: zeros(n.saturating_mul(nrhs))?,
            w: zeros(n)?,
            v: zeros(n)?,
            facs,
            reduced: Reduced {
                rdl: zeros(m1)?,
                rd: zeros(q)?,
                rdu: zeros(m1)?,
                copy: [zeros(m1)?, zeros(q)?, zeros(m1)?],
                xs: zeros(q.saturating_mul(nrhs))?,
            },
        })
    }
}

/// Thread `t`'s share of the first pass: its rows of the columns of X, W and V, and its
/// blocks' factorizations.
struct FactorPart<'a, T> {
    t: usize,
    x: Vec<&'a mut [T]>,
    w: &'a mut [T],
    v: &'a mut [T],
    facs: &'a mut Vec<BlockFactor<T>>,
}

/// The SPIKE decomposition of `A`, factored: the diagonal-pivoting factors of every block (kept,
/// so that a refinement step solves with them again without refactoring), the spikes `W`, `V`
/// and the reduced separator matrix.
struct Spike<'a, T> {
    dl: &'a [T],
    d: &'a [T],
    du: &'a [T],
    lay: Layout,
    /// Thread t owns blocks jb[t]..jb[t+1] and the rows rb[t]..rb[t+1] (with their separators).
    jb: Vec<usize>,
    rb: Vec<usize>,
    /// facs[t][j − jb[t]]: block j's factorization.
    facs: Vec<Vec<BlockFactor<T>>>,
    w: Vec<T>,
    v: Vec<T>,
    reduced: Reduced<T>,
}

impl<'a, T: Lapack> Spike<'a, T> {
    fn threads(&self) -> usize {
        self.jb.len() - 1
    }

    /// Pass 1 of the first solve, on the workspace `ws` (whose `x` the caller has taken:
    /// `x`, leading dimension `n`): copies the rows of `b` into `x`, factors every block,
    /// computes its spikes and `Y_j = A_j⁻¹ f_j` in `x` (block rows; the separator rows keep
    /// `f`), then builds the reduced matrix.
    #[allow(clippy::too_many_arguments)]
    fn factor(
        dl: &'a [T],
        d: &'a [T],
        du: &'a [T],
        lay: Layout,
        jb: Vec<usize>,
        rb: Vec<usize>,
        ws: Workspace<T>,
        x: &mut [T],
        b: &[T],
        ldb: usize,
        nrhs: usize,
    ) -> Result<Self, Reject> {
        let n = lay.n;
        let Workspace {
            mut w,
            mut v,
            mut facs,
            mut reduced,
            ..
        } = ws;
        let no_memory = || Reject::NoHostMemory(Workspace::<T>::bytes(&lay, nrhs));
        let xs = split_rows(x, n, nrhs, &rb).ok_or_else(no_memory)?;
        let ws = split_rows(&mut w, n, 1, &rb).ok_or_else(no_memory)?;
        let vs = split_rows(&mut v, n, 1, &rb).ok_or_else(no_memory)?;
        let parts: Vec<_> = xs
            .into_iter()
            .zip(ws)
            .zip(vs)
            .zip(facs.iter_mut())
            .enumerate()
            .map(|(t, (((x, w), v), facs))| FactorPart {
                t,
                x,
                // W and V have one column each.
                w: w.into_iter().next().expect("W's rows"),
                v: v.into_iter().next().expect("V's rows"),
                facs,
            })
            .collect();
        let one = |part: FactorPart<'_, T>| {
            let FactorPart {
                t,
                x: mut xt,
                w: wt,
                v: vt,
                facs,
            } = part;
            let (js, r0, r1) = (jb[t]..jb[t + 1], rb[t], rb[t + 1]);
            for (col, xc) in xt.iter_mut().enumerate() {
                xc.copy_from_slice(&b[col * ldb + r0..col * ldb + r1]);
            }
            for (j, fac) in js.zip(facs.iter_mut()) {
                let rows = lay.block(j);
                let (lo, hi) = (rows.start, rows.end);
                let (bdl, bd, bdu) = (&dl[lo..hi - 1], &d[lo..hi], &du[lo..hi - 1]);
                // Within the capacity reserved by Workspace::try_new.
                if fac.factor(bdl, bd, bdu).is_err() {
                    return false;
                }
                let local = lo - r0..hi - r0;
                let wj = &mut wt[local.clone()];
                if j > 0 {
                    wj[0] = dl[lo - 1];
                    fac.solve(bdl, bd, bdu, wj);
                }
                let vj = &mut vt[local.clone()];
                if j < lay.q {
                    let last = vj.len() - 1;
                    vj[last] = du[hi - 1];
                    fac.solve(bdl, bd, bdu, vj);
                }
                for xc in xt.iter_mut() {
                    fac.solve(bdl, bd, bdu, &mut xc[local.clone()]);
                }
            }
            true
        };
        // A thread that panicked counts as a failed factorization: the answer is rejected
        // (LAPACK then runs on the caller's untouched arrays), never taken as a success.
        if !run_parts(parts, &one)
            .into_iter()
            .all(|r| r.unwrap_or(false))
        {
            return Err(Reject::ZeroPivot);
        }
        let q = lay.q;
        let (rdl, rd, rdu) = (&mut reduced.rdl, &mut reduced.rd, &mut reduced.rdu);
        for j in 0..q {
            let s = lay.separator(j);
            let (a, c) = (dl[s - 1], du[s]);
            if j > 0 {
                rdl[j - 1] = -(a * w[s - 1]);
            }
            rd[j] = d[s] - a * v[s - 1] - c * w[s + 1];
            if j + 1 < q {
                rdu[j] = -(c * v[s + 1]);
            }
        }
        Ok(Spike {
            dl,
            d,
            du,
            lay,
            jb,
            rb,
            facs,
            w,
            v,
            reduced,
        })
    }

    /// Pass 1 of a further solve (refinement): `Y_j = A_j⁻¹ f_j` in place in the block rows of
    /// `x` (`ncols` columns, leading dimension `n`), with the stored factors. `None` when the
    /// column lists cannot be allocated.
    fn solve_blocks(&self, x: &mut [T], ncols: usize) -> Option<()> {
        let (lay, n) = (self.lay, self.lay.n);
        let xs = split_rows(x, n, ncols, &self.rb)?;
        let (dl, d, du) = (self.dl, self.d, self.du);
        let one = |(t, mut xt): (usize, Vec<&mut [T]>)| {
            let (js, r0, facs) = (self.jb[t]..self.jb[t + 1], self.rb[t], &self.facs[t]);
            for (fac, j) in facs.iter().zip(js) {
                let rows = lay.block(j);
                let (lo, hi) = (rows.start, rows.end);
                let (bdl, bd, bdu) = (&dl[lo..hi - 1], &d[lo..hi], &du[lo..hi - 1]);
                for xc in xt.iter_mut() {
                    fac.solve(bdl, bd, bdu, &mut xc[lo - r0..hi - r0]);
                }
            }
        };
        or_resume(run_parts(xs.into_iter().enumerate().collect(), &one));
        Some(())
    }

    /// After pass 1 (`x` holds `Y` in the block rows and `f` in the separator rows): the reduced
    /// system, then the back substitution `x = Y − W x_L − V x_R`.
    fn finish(&mut self, x: &mut [T], ncols: usize) -> Result<(), Reject> {
        let (lay, n, q) = (self.lay, self.lay.n, self.lay.q);
        let (dl, du) = (self.dl, self.du);
        let red = &mut self.reduced;
        // At most nrhs columns: within the workspace.
        let xs = &mut red.xs[..q * ncols];
        // xGTSV writes a column of its B even for NRHS = 0: never call it without one.
        if q > 0 && ncols > 0 {
            for j in 0..q {
                let s = lay.separator(j);
                let (a, c) = (dl[s - 1], du[s]);
                for col in 0..ncols {
                    xs[j + col * q] =
                        x[s + col * n] - a * x[s - 1 + col * n] - c * x[s + 1 + col * n];
                }
            }
            let [rdl, rd, rdu] = &mut red.copy;
            rdl.copy_from_slice(&red.rdl);
            rd.copy_from_slice(&red.rd);
            rdu.copy_from_slice(&red.rdu);
            if T::gtsv(rdl, rd, rdu, xs, q, ncols) != 0 {
                return Err(Reject::ReducedSingular);
            }
        }
        let xparts = split_rows(x, n, ncols, &self.rb)
            .ok_or(Reject::NoHostMemory(ncols * (self.jb.len() - 1) * 16))?;
        let (w, v, xs) = (&self.w, &self.v, &*xs);
        let (jb, rb) = (&self.jb, &self.rb);
        let one = |(t, mut xt): (usize, Vec<&mut [T]>)| {
            let (js, r0) = (jb[t]..jb[t + 1], rb[t]);
            for j in js {
                let rows = lay.block(j);
                for (col, xc) in xt.iter_mut().enumerate() {
                    let xl = if j > 0 { xs[j - 1 + col * q] } else { T::ZERO };
                    let xr = if j < q { xs[j + col * q] } else { T::ZERO };
                    for i in rows.clone() {
                        xc[i - r0] = xc[i - r0] - w[i] * xl - v[i] * xr;
                    }
                    if j < q {
                        xc[lay.separator(j) - r0] = xr;
                    }
                }
            }
        };
        or_resume(run_parts(xparts.into_iter().enumerate().collect(), &one));
        Ok(())
    }
}

/// SPIKE on the CPU: `Ok` with `X` in `b`, or `Err` with every argument unchanged. The answer is
/// refined ([`super::refine`], with the stored block factors) before the acceptance check.
#[allow(clippy::too_many_arguments)]
pub fn solve<T: Lapack>(
    dl: &[T],
    d: &[T],
    du: &[T],
    b: &mut [T],
    ldb: usize,
    nrhs: usize,
    blocks: Option<usize>,
    threads: Option<usize>,
) -> Result<(), Reject> {
    let n = d.len();
    let threads = threads
        .unwrap_or_else(crate::host::threads)
        .clamp(1, n.div_ceil(2).max(1));
    let lay = Layout::new(n, blocks.unwrap_or(4 * threads).max(1));
    let nblocks = lay.q + 1;
    let threads = threads.min(nblocks);
    let jb: Vec<usize> = (0..=threads).map(|t| t * nblocks / threads).collect();
    let rb: Vec<usize> = (0..=threads)
        .map(|t| if t < threads { jb[t] * lay.m } else { n })
        .collect();

    let mut ws = Workspace::try_new(&lay, &jb, nrhs)?;
    let mut x = std::mem::take(&mut ws.x);
    let mut spike = Spike::factor(dl, d, du, lay, jb, rb, ws, &mut x, b, ldb, nrhs)?;
    spike.finish(&mut x, nrhs)?;
    let threads = spike.threads();
    let a = Bands { dl, d, du };
    let mut state = RefineState::try_new(nrhs)?;
    let (xc, bc) = (Columns::all(&x, n), Columns::all(b, ldb));
    let checks = residual_cols(a, xc, bc, nrhs, None, threads, false)
        .ok_or(Reject::NoHostMemory(nrhs * threads * 32))?;
    state.checks.copy_from_slice(&checks);
    refine(a, &mut x, n, bc, &mut state, threads, |r, k| {
        // Refinement is optional: a correction that cannot run ends it.
        let solved = spike.solve_blocks(r, k).is_some() && spike.finish(r, k).is_ok();
        Ok::<bool, Reject>(solved)
    })?;
    judge(state.checks.iter().copied())?;
    for col in 0..nrhs {
        b[col * ldb..col * ldb + n].copy_from_slice(&x[col * n..(col + 1) * n]);
    }
    Ok(())
}

/// The residual `max_i |b − A x|` of the first `nrhs` columns (tests and benchmarks).
pub fn max_residuals<T: Real>(
    a: Bands<'_, T>,
    x: Columns<'_, T>,
    f: Columns<'_, T>,
    nrhs: usize,
) -> Vec<Residual<T>> {
    let n = a.d.len();
    (0..nrhs)
        .map(|c| residual_rows(a.dl, a.d, a.du, x.col(c, n), f.col(c, n), 0..n))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_covers_every_row_once() {
        for n in 2..60 {
            for blocks in 1..12 {
                let lay = Layout::new(n, blocks);
                let mut seen = vec![0; n];
                for j in 0..=lay.q {
                    let r = lay.block(j);
                    assert!(!r.is_empty(), "n {n} blocks {blocks} j {j}");
                    r.for_each(|i| seen[i] += 1);
                    if j < lay.q {
                        seen[lay.separator(j)] += 1;
                    }
                }
                assert!(
                    seen.iter().all(|&c| c == 1),
                    "n {n} blocks {blocks}: {seen:?}"
                );
            }
        }
    }
}
