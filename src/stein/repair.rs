//! The checks after a cluster's inverse iteration: orthogonality, restored by one more
//! Gram–Schmidt where it is lost, and residuals, with the cluster's vectors from the QR
//! algorithm where they are far too large.
//!
//! Modified Gram–Schmidt once per solve can leave a large cluster of graded eigenvalues far
//! from orthogonal (n = 4000, geometric: 1.5·10⁴ n ulp; LAPACK's test threshold is 50). The
//! check is one GEMM of O(n k²) flops for a cluster of k, less than one of its iterations.
//!
//! Inverse iteration breaks down on a cluster whose eigenvalues agree to working precision
//! and whose shifts therefore factor `T − σI` into nearly the same singular matrix: every
//! solve returns, whatever its right-hand side, the few directions the rounding of the
//! factorization singles out, and Gram–Schmidt against the cluster's earlier vectors leaves
//! only rounding noise. xSTEIN then returns unit vectors with residuals of order ‖T‖ (weakly
//! coupled copies of one small block do this; LAPACK's own vectors fail there as often as
//! ours, on other seeds). The residual of each vector costs O(n), next to the iteration's
//! O(n k) per vector; where one is far above what inverse iteration reaches, the block's
//! eigenvectors from xSTEQR replace the cluster's, if theirs pass the same check.

use super::cpu::{normalize, ClusterJob};
use crate::host::try_vec;
use crate::lapack::{Dense, TriangularOp};
use crate::real::Real;

/// The largest residual, in units of `b · ulp · ‖T_b‖₁` (b the block's order), that a
/// cluster's vectors may have before they are recomputed. Inverse iteration that works
/// stays below 1; LAPACK's tests fail a ratio above 50.
const RECOMPUTE_ABOVE: f64 = 10.0;

/// The largest block recomputed: xSTEQR takes O(b³) time and b² entries of memory.
const LARGEST_BLOCK: usize = 4096;

/// The largest cluster whose orthogonality is checked: its Gram matrix takes k² entries.
const LARGEST_CLUSTER: usize = 4096;

/// Checks that the cluster's `count` columns (block rows from `row0`, columns `ldz` apart)
/// are orthonormal to within RECOMPUTE_ABOVE `b · ulp` in ‖ZᵀZ − I‖₁, from their Gram matrix
/// `G = ZᵀZ` (one GEMM); where they are not, orthonormalizes them in column order
/// (`Z ← Z R⁻¹` with `G = RᵀR`, the Gram–Schmidt vectors of Z, in two BLAS 3 calls) and
/// normalizes each as xSTEIN does. Returns the loss found, in units of `b · ulp`, or None when the Gram matrix
/// cannot be had.
fn restore_orthogonality<T: Real + Dense>(
    z: &mut [T],
    ldz: usize,
    row0: usize,
    b: usize,
    count: usize,
) -> Option<f64> {
    let mut gram = try_vec(count * count, T::ZERO)?;
    let zc = &z[row0..];
    T::gemm(
        b'T',
        b'N',
        count,
        count,
        b,
        T::ONE,
        (zc, ldz),
        (zc, ldz),
        T::ZERO,
        &mut gram,
        count,
    );
    // ‖ZᵀZ − I‖₁, the norm LAPACK's tests judge: in a cluster of 60 equal eigenvalues its
    // largest entry was 2.4 b ulp while its column sums reached 52 (the tests' limit is 50).
    let mut lost = 0.0f64;
    for k in 0..count {
        let column = gram[k * count..(k + 1) * count].iter().enumerate();
        let sum = column.fold(0.0f64, |s, (i, g)| {
            let target = if i == k { 1.0 } else { 0.0 };
            s + (g.to_f64() - target).abs()
        });
        lost = lost.max(sum);
    }
    let lost = lost / (b as f64 * T::ULP.to_f64());
    if lost <= RECOMPUTE_ABOVE {
        return Some(lost);
    }
    if T::potrf_upper(count, &mut gram, count) == 0 {
        let chars = *b"RUNN";
        let zc = &mut z[row0..];
        T::triangular(
            TriangularOp::Solve,
            chars,
            b,
            count,
            T::ONE,
            (&gram, count),
            zc,
            ldz,
        );
    }
    for k in 0..count {
        normalize(&mut z[k * ldz + row0..k * ldz + row0 + b]);
    }
    Some(lost)
}

/// The largest of `‖(T_b − w_k I) z_k‖₁` over the columns `z_k` (their block rows start at
/// `row0` of columns `ldz` apart), in units of `b · ulp · ‖T_b‖₁`; NaN if any is NaN.
fn worst_residual<T: Real>(
    job: &ClusterJob<'_, T>,
    w: &[T],
    z: &[T],
    ldz: usize,
    row0: usize,
) -> f64 {
    let (d, e) = (job.d, job.e);
    let b = d.len();
    let unit = b as f64 * T::ULP.to_f64() * job.onenrm.to_f64().max(f64::MIN_POSITIVE);
    let mut worst = 0.0f64;
    for (k, &lambda) in w.iter().enumerate() {
        let x = &z[k * ldz + row0..k * ldz + row0 + b];
        let lambda = lambda.to_f64();
        let mut sum = 0.0f64;
        for i in 0..b {
            let mut t = (d[i].to_f64() - lambda) * x[i].to_f64();
            if i > 0 {
                t += e[i - 1].to_f64() * x[i - 1].to_f64();
            }
            if i + 1 < b {
                t += e[i].to_f64() * x[i + 1].to_f64();
            }
            sum += t.abs();
        }
        let ratio = sum / unit;
        if ratio.is_nan() {
            return f64::NAN;
        }
        worst = worst.max(ratio);
    }
    worst
}

/// The first of the `w.len()` consecutive eigenvalues in `lambda` (ascending) that lie
/// closest to `w` (ascending) in the sum of the distances.
fn nearest_window<T: Real>(lambda: &[T], w: &[T]) -> usize {
    let c = w.len();
    let distance = |p: usize| -> f64 {
        w.iter()
            .zip(&lambda[p..p + c])
            .map(|(a, b)| (a.to_f64() - b.to_f64()).abs())
            .sum()
    };
    (0..=lambda.len() - c)
        .map(|p| (p, distance(p)))
        .fold((0, f64::INFINITY), |best, (p, dist)| {
            if dist < best.1 {
                (p, dist)
            } else {
                best
            }
        })
        .0
}

/// Checks the vectors of a cluster whose iterations all converged (columns `0..w.len()` of
/// `z`, for the eigenvalues `w`; `failed` their flags): orthonormalizes them once if they
/// are not orthonormal, then, if their residuals fail the check, replaces them by the block's
/// xSTEQR eigenvectors of the eigenvalues nearest `w` if those pass it.
/// Normalized and signed as xSTEIN's. Leaves the vectors as they are if the block is too
/// large or its memory cannot be had. A cluster with a failed column keeps LAPACK's answer
/// (the last iterates, reported in IFAIL): its eigenvalues may not be T's.
pub fn check_cluster<T: Real + Dense>(
    job: &ClusterJob<'_, T>,
    w: &[T],
    z: &mut [T],
    ldz: usize,
    failed: &[bool],
) {
    let b = job.d.len();
    if failed.iter().any(|&f| f) {
        return;
    }
    let count = w.len();
    if (2..=LARGEST_CLUSTER).contains(&count) {
        let lost = restore_orthogonality(z, ldz, job.row0, b, count);
        if let Some(lost) = lost.filter(|&l| l > RECOMPUTE_ABOVE || l.is_nan()) {
            crate::dispatch::debug(|| {
                format!("stein: a cluster of {count} vectors had orthogonality {lost:.3e} (b ulp)")
            });
        }
    }
    if b > LARGEST_BLOCK {
        return;
    }
    let ours = worst_residual(job, w, z, ldz, job.row0);
    if ours <= RECOMPUTE_ABOVE {
        return;
    }
    let (Some(mut lambda), Some(mut e), Some(mut v), Some(mut work)) = (
        try_vec(b, T::ZERO),
        try_vec(b, T::ZERO),
        try_vec(b * b, T::ZERO),
        try_vec(2 * b, T::ZERO),
    ) else {
        return;
    };
    lambda.copy_from_slice(job.d);
    e[..b - 1].copy_from_slice(job.e);
    if T::steqr_vectors(&mut lambda, &mut e[..b - 1], &mut v, b, &mut work) != 0 {
        return;
    }
    let first = nearest_window(&lambda, w);
    let theirs = worst_residual(job, w, &v[first * b..], b, 0);
    if theirs <= RECOMPUTE_ABOVE {
        let rows = job.row0..job.row0 + b;
        for (k, x) in v[first * b..].chunks_exact_mut(b).take(w.len()).enumerate() {
            normalize(x);
            z[k * ldz + rows.start..k * ldz + rows.end].copy_from_slice(x);
        }
        crate::dispatch::debug(|| {
            format!(
                "stein: a cluster of {} vectors in a block of {b} had residual {ours:.3e} \
                 (b ulp ‖T‖); xSTEQR's have {theirs:.3e}",
                w.len()
            )
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Columns whose Gram matrix has every entry within 2 b ulp of I but column sums of
    /// 2 k b ulp are orthonormalized (the 1-norm is what LAPACK's tests judge).
    #[test]
    fn the_one_norm_decides_and_the_repair_restores_it() {
        let (b, k) = (64, 32);
        let delta = b as f64 * f64::EPSILON;
        let mut z: Vec<f64> = (0..b * k)
            .map(|at| if at % b == at / b { 1.0 } else { 0.0 } + delta)
            .collect();
        for col in z.chunks_exact_mut(b) {
            normalize(col);
        }
        let lost = restore_orthogonality(&mut z, b, 0, b, k).unwrap();
        assert!(lost > 2.0 * RECOMPUTE_ABOVE, "lost {lost}");
        let after = restore_orthogonality(&mut z, b, 0, b, k).unwrap();
        assert!(after < 1.0, "after the repair {after}");
    }

    #[test]
    fn the_window_follows_the_eigenvalues() {
        let lambda = [-3.0f64, -1.0, 0.0, 0.0, 0.0, 2.0];
        assert_eq!(nearest_window(&lambda, &[0.0, 0.0]), 2);
        assert_eq!(nearest_window(&lambda, &[0.0, 2.0]), 4);
        assert_eq!(nearest_window(&lambda, &[-3.0]), 0);
        assert_eq!(nearest_window(&lambda, &lambda), 0);
    }
}
