//! The per-partition solver of SPIKE: asymmetric Bunch–Kaufman diagonal pivoting for a general
//! tridiagonal block (Erway, Marcia & Tyson 2010; Chang et al. 2012 §III), without row
//! interchanges.
//!
//! The block `A` (rows `b`, sub-diagonal `a_k = A[k][k-1]`, super-diagonal `c_k = A[k][k+1]`) is
//! factored as `A = L B Mᵀ`, `L`, `M` unit lower triangular and `B` block diagonal with 1×1 and
//! 2×2 blocks. At step `k`, with `b̃_k` the current (Schur-complement) diagonal entry, a 1×1 pivot
//! is taken when `|b̃_k| σ ≥ κ |a_{k+1} c_k|`, where
//! `σ = max(|a_{k+1}|, |a_{k+2}|, |b_{k+1}|, |c_k|, |c_{k+1}|)` and `κ = (√5 − 1)/2`; otherwise
//! the 2×2 block of rows `k, k+1` is the pivot. The Schur complement updates only the next
//! diagonal entry: `b̃_{k+1} = b_{k+1} − a_{k+1} c_k / b̃_k` after a 1×1 pivot,
//! `b̃_{k+2} = b_{k+2} − a_{k+2} b̃_k c_{k+1} / Δ` after a 2×2 pivot with
//! `Δ = b̃_k b_{k+1} − a_{k+1} c_k`.
//!
//! A 2×2 pivot chosen by this rule is never singular (`|b̃_k b_{k+1}| ≤ |b̃_k| σ < κ|a c| < |a c|`),
//! so a zero pivot can only be a 1×1 pivot `b̃_k = 0` with `a_{k+1} c_k = 0`: the block is
//! singular. `kernels/gtsv.cu` implements the same steps for one GPU thread.

use crate::real::Real;

/// `(√5 − 1)/2`, the pivoting threshold of asymmetric Bunch–Kaufman.
pub const KAPPA: f64 = 0.618_033_988_749_894_8;

/// A singular block: the 1×1 pivot at this row (0-based, within the block) was exactly zero.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ZeroPivot(pub usize);

/// The factorization `A = L B Mᵀ` of one tridiagonal block, reusable for many right-hand sides.
/// Row `k` stores: `first2[k]` (row `k` starts a 2×2 pivot); `piv[k]` (the 1×1 pivot `b̃_k`, or
/// for a 2×2 pivot at `k, k+1`: `piv[k] = b̃_k`, `piv[k+1] = Δ`); `mult[k]` (the back-substitution
/// multiplier: `x_k = y_k − mult[k] x_{k+1}`, or `x_{k+2}` when `first2[k]`).
#[derive(Clone, Debug, Default)]
pub struct BlockFactor<T> {
    first2: Vec<bool>,
    piv: Vec<T>,
    mult: Vec<T>,
}

impl<T: Real> BlockFactor<T> {
    pub fn new() -> Self {
        BlockFactor {
            first2: Vec::new(),
            piv: Vec::new(),
            mult: Vec::new(),
        }
    }

    /// An empty factorization with room for a block of `m` rows, so that [`Self::factor`] of
    /// such a block allocates nothing; `None` when that memory cannot be allocated.
    pub fn try_with_capacity(m: usize) -> Option<Self> {
        let mut f = Self::new();
        f.first2.try_reserve_exact(m).ok()?;
        f.piv.try_reserve_exact(m).ok()?;
        f.mult.try_reserve_exact(m).ok()?;
        Some(f)
    }

    /// Factors the block with sub-diagonal `dl` (`m − 1`), diagonal `d` (`m`) and super-diagonal
    /// `du` (`m − 1`), in LAPACK's layout (`dl[k] = A[k+1][k]`, `du[k] = A[k][k+1]`).
    pub fn factor(&mut self, dl: &[T], d: &[T], du: &[T]) -> Result<(), ZeroPivot> {
        let m = d.len();
        debug_assert!(dl.len() + 1 >= m && du.len() + 1 >= m);
        self.first2.clear();
        self.first2.resize(m, false);
        self.piv.clear();
        self.piv.resize(m, T::ZERO);
        self.mult.clear();
        self.mult.resize(m, T::ZERO);
        let kappa = T::from_f64(KAPPA);
        // a(k) = A[k][k-1], c(k) = A[k][k+1], zero outside the block.
        let a = |k: usize| if k >= 1 && k < m { dl[k - 1] } else { T::ZERO };
        let c = |k: usize| if k + 1 < m { du[k] } else { T::ZERO };
        let b = |k: usize| if k < m { d[k] } else { T::ZERO };
        let mut bt = if m > 0 { d[0] } else { T::ZERO };
        let mut k = 0;
        while k < m {
            let (a1, c0) = (a(k + 1), c(k));
            let sigma = a1
                .abs()
                .max(a(k + 2).abs())
                .max(b(k + 1).abs())
                .max(c0.abs())
                .max(c(k + 1).abs());
            if k + 1 >= m || bt.abs() * sigma >= kappa * (a1 * c0).abs() {
                if bt == T::ZERO {
                    return Err(ZeroPivot(k));
                }
                self.piv[k] = bt;
                self.mult[k] = c0 / bt;
                bt = b(k + 1) - a1 * c0 / bt;
                k += 1;
            } else {
                let b1 = b(k + 1);
                let delta = bt * b1 - a1 * c0;
                if delta == T::ZERO {
                    // Unreachable in exact arithmetic (see the module comment); kept for safety.
                    return Err(ZeroPivot(k));
                }
                let c1 = c(k + 1);
                self.first2[k] = true;
                self.piv[k] = bt;
                self.piv[k + 1] = delta;
                self.mult[k] = -(c0 * c1) / delta;
                self.mult[k + 1] = bt * c1 / delta;
                bt = b(k + 2) - a(k + 2) * (bt * c1 / delta);
                k += 2;
            }
        }
        Ok(())
    }

    /// Solves `A x = f` in place (`f` becomes `x`), with the block's original `dl`, `d`, `du`.
    pub fn solve(&self, dl: &[T], d: &[T], du: &[T], f: &mut [T]) {
        let m = d.len();
        // Forward: y = B⁻¹ L⁻¹ f, where the L-correction of row k is always a_k y_{k-1}.
        let mut k = 0;
        let mut y_prev = T::ZERO;
        while k < m {
            let z = if k > 0 {
                f[k] - dl[k - 1] * y_prev
            } else {
                f[k]
            };
            if self.first2[k] {
                let z2 = f[k + 1];
                let delta = self.piv[k + 1];
                let y0 = (d[k + 1] * z - du[k] * z2) / delta;
                let y1 = (self.piv[k] * z2 - dl[k] * z) / delta;
                f[k] = y0;
                f[k + 1] = y1;
                y_prev = y1;
                k += 2;
            } else {
                let y = z / self.piv[k];
                f[k] = y;
                y_prev = y;
                k += 1;
            }
        }
        // Backward: x = M⁻ᵀ y.
        for k in (0..m).rev() {
            let next = if self.first2[k] { k + 2 } else { k + 1 };
            if next < m {
                f[k] = f[k] - self.mult[k] * f[next];
            }
        }
    }
}

/// Solves one whole tridiagonal system by diagonal pivoting (tests and tiny reduced systems).
pub fn solve_system<T: Real>(dl: &[T], d: &[T], du: &[T], f: &mut [T]) -> Result<(), ZeroPivot> {
    let mut fac = BlockFactor::new();
    fac.factor(dl, d, du)?;
    fac.solve(dl, d, du, f);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn residual(dl: &[f64], d: &[f64], du: &[f64], x: &[f64], f: &[f64]) -> f64 {
        let n = d.len();
        let mut r: f64 = 0.0;
        for i in 0..n {
            let mut ax = d[i] * x[i];
            if i > 0 {
                ax += dl[i - 1] * x[i - 1];
            }
            if i + 1 < n {
                ax += du[i] * x[i + 1];
            }
            r = r.max((ax - f[i]).abs());
        }
        r
    }

    #[test]
    fn zero_diagonal_takes_2x2_pivots() {
        // Zero diagonal, even order: nonsingular, and every pivot is 2x2.
        let n = 6;
        let dl = vec![1.0, -2.0, 0.5, 3.0, -1.0];
        let du = vec![2.0, 1.0, -1.5, 0.25, 4.0];
        let d = vec![0.0; n];
        let f: Vec<f64> = (0..n).map(|i| i as f64 - 2.0).collect();
        let mut x = f.clone();
        solve_system(&dl, &d, &du, &mut x).unwrap();
        assert!(residual(&dl, &d, &du, &x, &f) < 1e-13);
    }

    #[test]
    fn singular_row_is_a_zero_pivot() {
        let dl = vec![1.0, 0.0];
        let d = vec![2.0, 0.0, 1.0];
        let du = vec![0.0, 1.0];
        let mut x = vec![1.0; 3];
        assert_eq!(solve_system(&dl, &d, &du, &mut x), Err(ZeroPivot(1)));
    }

    #[test]
    fn random_blocks_small_residual() {
        let mut rng = crate::testmat::Rng::new(7);
        for n in 1..40 {
            let g = |rng: &mut crate::testmat::Rng, k: usize| {
                (0..k).map(|_| rng.range(-1.0, 1.0)).collect::<Vec<f64>>()
            };
            let (dl, d, du, f) = (
                g(&mut rng, n - 1),
                g(&mut rng, n),
                g(&mut rng, n - 1),
                g(&mut rng, n),
            );
            let mut x = f.clone();
            solve_system(&dl, &d, &du, &mut x).unwrap();
            let xn = x.iter().fold(0.0f64, |m, v| m.max(v.abs()));
            assert!(
                residual(&dl, &d, &du, &x, &f) < 1e-12 * (1.0 + xn),
                "n = {n}"
            );
        }
    }
}
