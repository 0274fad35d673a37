//! LAPACK xGTSV's factorization alone, for NRHS = 0.
//!
//! xGTSV with no right-hand side still runs Gaussian elimination with partial pivoting (a row
//! interchange exactly when `|sub-diagonal| > |diagonal|`) and reports the first exactly zero
//! pivot as INFO; then, nonsingular, its back substitution still writes the first column of B,
//! which a caller with NRHS = 0 need not provide. This is that elimination on the host arrays,
//! with the same comparisons and the same unfused arithmetic, leaving the same factors in
//! `dl` (second super-diagonal of U), `d` and `du`; it touches no B and allocates nothing.

use crate::real::Real;

/// Factors the tridiagonal matrix (`dl`, `du`: `n − 1` entries, `d`: `n = d.len()`) as xGTSV
/// does and returns its INFO for NRHS = 0: 0, or i > 0 if U(i,i) is exactly zero (the
/// elimination then stops at step i, as xGTSV's does). Reads at most the entries xGTSV reads,
/// in its order, so a singular leading part ends the call early.
pub fn factor_info<T: Real>(dl: &mut [T], d: &mut [T], du: &mut [T]) -> i32 {
    let n = d.len();
    if n == 0 {
        return 0;
    }
    for i in 0..n - 1 {
        // Row i+1 eliminated by row i, or the two rows swapped when row i+1's entry is larger
        // (a NaN compares false and swaps, as in xGTSV).
        if d[i].abs() >= dl[i].abs() {
            if d[i] == T::ZERO {
                return i as i32 + 1;
            }
            let fact = dl[i] / d[i];
            d[i + 1] = d[i + 1] - fact * du[i];
            if i + 2 < n {
                dl[i] = T::ZERO;
            }
        } else {
            let fact = d[i] / dl[i];
            d[i] = dl[i];
            let temp = d[i + 1];
            d[i + 1] = du[i] - fact * temp;
            if i + 2 < n {
                // The fill-in of U's second super-diagonal, kept in dl.
                dl[i] = du[i + 1];
                du[i + 1] = -fact * dl[i];
            }
            du[i] = temp;
        }
    }
    if d[n - 1] == T::ZERO {
        return n as i32;
    }
    0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lapack::Lapack;

    /// Matrices with exact zeros and ties `|d| = |dl|` at random places, so that both branches
    /// and every INFO position are reached: INFO and the factors must be LAPACK's bit for bit.
    #[test]
    fn factor_info_matches_lapack_dgtsv_on_singular_and_tied_matrices() {
        let seed = crate::testmat::seed_from_time();
        println!("seed {seed}");
        let mut rng = crate::testmat::Rng::new(seed);
        let mut nonzero_info = 0;
        for trial in 0..2000 {
            let n = 1 + rng.below(12);
            let mut pick = || match rng.below(6) {
                0 => 0.0,
                1 => 1.0,
                2 => -1.0,
                3 => 2.0,
                _ => rng.below(1000) as f64 / 250.0 - 2.0,
            };
            let dl: Vec<f64> = (0..n - 1).map(|_| pick()).collect();
            let d: Vec<f64> = (0..n).map(|_| pick()).collect();
            let du: Vec<f64> = (0..n - 1).map(|_| pick()).collect();
            let (mut l1, mut d1, mut u1) = (dl.clone(), d.clone(), du.clone());
            let (mut l2, mut d2, mut u2) = (dl.clone(), d.clone(), du.clone());
            let mut b = vec![0.0; n];
            let want = f64::gtsv(&mut l1, &mut d1, &mut u1, &mut b, n, 0);
            let got = factor_info(&mut l2, &mut d2, &mut u2);
            assert_eq!(got, want, "seed {seed} trial {trial}: {dl:?} {d:?} {du:?}");
            if want == 0 {
                let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(&d2), bits(&d1), "trial {trial}: D");
                assert_eq!(bits(&u2), bits(&u1), "trial {trial}: DU");
                assert_eq!(
                    bits(&l2[..n.saturating_sub(2)]),
                    bits(&l1[..n.saturating_sub(2)])
                );
            } else {
                nonzero_info += 1;
            }
        }
        assert!(nonzero_info > 100, "too few singular cases: {nonzero_info}");
    }
}
