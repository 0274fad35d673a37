//! The SPIKE decomposition on CPU threads (`std::thread::scope`): each thread factors its
//! contiguous run of blocks by diagonal pivoting and computes `Y`, `W`, `V`; the reduced
//! separator system (one unknown per block boundary) is solved by LAPACK xGTSV; the threads then
//! back-substitute and evaluate the residual check. The block factors are kept, so that a step of
//! iterative refinement (when the residual is above LAPACK's level) reuses them. The user's
//! arrays are only read until the answer is accepted; `B` is then overwritten with `X`.

use super::pivoting::BlockFactor;
use super::{judge, refine, residual_cols, residual_rows, split_rows, Reject, Residual};
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
    /// The reduced (separator) matrix, unfactored (it is small: LAPACK refactors it per solve).
    rdl: Vec<T>,
    rd: Vec<T>,
    rdu: Vec<T>,
}

impl<'a, T: Lapack> Spike<'a, T> {
    fn threads(&self) -> usize {
        self.jb.len() - 1
    }

    /// Pass 1 of the first solve: copies the rows of `b` into `x` (leading dimension `n`),
    /// factors every block, computes its spikes and `Y_j = A_j⁻¹ f_j` in `x` (block rows; the
    /// separator rows keep `f`), then builds the reduced matrix.
    #[allow(clippy::too_many_arguments)]
    fn factor(
        dl: &'a [T],
        d: &'a [T],
        du: &'a [T],
        lay: Layout,
        jb: Vec<usize>,
        rb: Vec<usize>,
        x: &mut [T],
        b: &[T],
        ldb: usize,
        nrhs: usize,
    ) -> Result<Self, Reject> {
        let n = lay.n;
        let mut w = vec![T::ZERO; n];
        let mut v = vec![T::ZERO; n];
        let facs: Option<Vec<Vec<BlockFactor<T>>>> = {
            let xs = split_rows(x, n, nrhs, &rb);
            let ws = split_rows(&mut w, n, 1, &rb);
            let vs = split_rows(&mut v, n, 1, &rb);
            let (jb, rb) = (&jb, &rb);
            std::thread::scope(|s| {
                let handles: Vec<_> = xs
                    .into_iter()
                    .zip(ws)
                    .zip(vs)
                    .enumerate()
                    .map(|(t, ((mut xt, mut wt), mut vt))| {
                        let (js, r0, r1) = (jb[t]..jb[t + 1], rb[t], rb[t + 1]);
                        s.spawn(move || {
                            for (col, xc) in xt.iter_mut().enumerate() {
                                xc.copy_from_slice(&b[col * ldb + r0..col * ldb + r1]);
                            }
                            let mut facs = Vec::with_capacity(js.len());
                            for j in js {
                                let rows = lay.block(j);
                                let (lo, hi) = (rows.start, rows.end);
                                let (bdl, bd, bdu) = (&dl[lo..hi - 1], &d[lo..hi], &du[lo..hi - 1]);
                                let mut fac = BlockFactor::new();
                                if fac.factor(bdl, bd, bdu).is_err() {
                                    return None;
                                }
                                let local = lo - r0..hi - r0;
                                let wj = &mut wt[0][local.clone()];
                                if j > 0 {
                                    wj[0] = dl[lo - 1];
                                    fac.solve(bdl, bd, bdu, wj);
                                }
                                let vj = &mut vt[0][local.clone()];
                                if j < lay.q {
                                    let last = vj.len() - 1;
                                    vj[last] = du[hi - 1];
                                    fac.solve(bdl, bd, bdu, vj);
                                }
                                for xc in xt.iter_mut() {
                                    fac.solve(bdl, bd, bdu, &mut xc[local.clone()]);
                                }
                                facs.push(fac);
                            }
                            Some(facs)
                        })
                    })
                    .collect();
                handles
                    .into_iter()
                    .map(|h| h.join().ok().flatten())
                    .collect()
            })
        };
        let facs = facs.ok_or(Reject::ZeroPivot)?;
        let q = lay.q;
        let (mut rdl, mut rd, mut rdu) = (
            vec![T::ZERO; q.max(1) - 1],
            vec![T::ZERO; q],
            vec![T::ZERO; q.max(1) - 1],
        );
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
            rdl,
            rd,
            rdu,
        })
    }

    /// Pass 1 of a further solve (refinement): `Y_j = A_j⁻¹ f_j` in place in the block rows of
    /// `x` (`ncols` columns, leading dimension `n`), with the stored factors.
    fn solve_blocks(&self, x: &mut [T], ncols: usize) {
        let (lay, n) = (self.lay, self.lay.n);
        let xs = split_rows(x, n, ncols, &self.rb);
        std::thread::scope(|s| {
            for (t, mut xt) in xs.into_iter().enumerate() {
                let (js, r0, facs) = (self.jb[t]..self.jb[t + 1], self.rb[t], &self.facs[t]);
                let (dl, d, du) = (self.dl, self.d, self.du);
                s.spawn(move || {
                    for (fac, j) in facs.iter().zip(js) {
                        let rows = lay.block(j);
                        let (lo, hi) = (rows.start, rows.end);
                        let (bdl, bd, bdu) = (&dl[lo..hi - 1], &d[lo..hi], &du[lo..hi - 1]);
                        for xc in xt.iter_mut() {
                            fac.solve(bdl, bd, bdu, &mut xc[lo - r0..hi - r0]);
                        }
                    }
                });
            }
        });
    }

    /// After pass 1 (`x` holds `Y` in the block rows and `f` in the separator rows): the reduced
    /// system, then the back substitution `x = Y − W x_L − V x_R`.
    fn finish(&self, x: &mut [T], ncols: usize) -> Result<(), Reject> {
        let (lay, n, q) = (self.lay, self.lay.n, self.lay.q);
        let (dl, du) = (self.dl, self.du);
        let mut xs = vec![T::ZERO; q * ncols];
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
            let (mut rdl, mut rd, mut rdu) = (self.rdl.clone(), self.rd.clone(), self.rdu.clone());
            if T::gtsv(&mut rdl, &mut rd, &mut rdu, &mut xs, q, ncols) != 0 {
                return Err(Reject::ReducedSingular);
            }
        }
        let xparts = split_rows(x, n, ncols, &self.rb);
        let (w, v, xs) = (&self.w, &self.v, &xs);
        std::thread::scope(|s| {
            for (t, mut xt) in xparts.into_iter().enumerate() {
                let (js, r0) = (self.jb[t]..self.jb[t + 1], self.rb[t]);
                s.spawn(move || {
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
                });
            }
        });
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
        .unwrap_or_else(|| crate::host::threads())
        .clamp(1, n.div_ceil(2).max(1));
    let lay = Layout::new(n, blocks.unwrap_or(4 * threads).max(1));
    let nblocks = lay.q + 1;
    let threads = threads.min(nblocks);
    let jb: Vec<usize> = (0..=threads).map(|t| t * nblocks / threads).collect();
    let rb: Vec<usize> = (0..=threads)
        .map(|t| if t < threads { jb[t] * lay.m } else { n })
        .collect();

    let mut x = vec![T::ZERO; n * nrhs];
    let spike = Spike::factor(dl, d, du, lay, jb, rb, &mut x, b, ldb, nrhs)?;
    spike.finish(&mut x, nrhs)?;
    let threads = spike.threads();
    let all: Vec<usize> = (0..nrhs).collect();
    let mut checks = residual_cols(dl, d, du, &x, n, &all, b, ldb, &all, None, threads, false);
    refine(
        dl,
        d,
        du,
        &mut x,
        n,
        b,
        ldb,
        &mut checks,
        threads,
        |r, k| {
            spike.solve_blocks(r, k);
            Ok::<bool, Reject>(spike.finish(r, k).is_ok())
        },
    )?;
    judge(checks)?;
    for col in 0..nrhs {
        b[col * ldb..col * ldb + n].copy_from_slice(&x[col * n..(col + 1) * n]);
    }
    Ok(())
}

/// The residual `max_i |b − A x|` of every column (tests and benchmarks).
pub fn max_residuals<T: Real>(
    dl: &[T],
    d: &[T],
    du: &[T],
    x: &[T],
    ldx: usize,
    f: &[T],
    ldf: usize,
    nrhs: usize,
) -> Vec<Residual<T>> {
    let n = d.len();
    (0..nrhs)
        .map(|c| {
            residual_rows(
                dl,
                d,
                du,
                &x[c * ldx..c * ldx + n],
                &f[c * ldf..c * ldf + n],
                0..n,
            )
        })
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
