//! `hylapack bench syev --vectors --large`: orders whose matrix the host holds only once
//! (n = 100 000: 80 GB), so that neither a copy of A nor a peer fits. Only hylapack runs:
//! dsyevx_ooc with the lowest 1% of the pairs, or with `--all` dsyev_ooc with all of them (for
//! A and Z together above GPU memory; the host then holds A, the driver's Z and Q2, about
//! 2.5 n² entries: n = 73 728 takes 109 GB), and it is checked without a copy: the
//! entries come from a hash of their position, so that A z for the sampled columns is formed
//! afterwards by generating each entry again (on the host's threads).

use crate::bench_syev_vectors::{sampled_ratios_with, stage_note};
use crate::table::time;
use hylapack::host::workers::run_on_threads;
use hylapack::sbr::Path;
use std::sync::{Mutex, PoisonError};
use std::time::Instant;

/// Entry (i, j) = entry (j, i) of the symmetric test matrix: uniform in [−1, 1), a splitmix64
/// hash of the seed and the position.
fn entry(seed: u64, i: usize, j: usize) -> f64 {
    let (r, c) = if i >= j { (i, j) } else { (j, i) };
    let mut x = seed ^ ((r as u64) << 32 | c as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^= x >> 31;
    (x >> 11) as f64 * (2.0 / (1u64 << 53) as f64) - 1.0
}

/// Runs `work(first, chunk)` over `out` in chunks of `len` elements (the index of the chunk's
/// first element), on the host's threads.
fn by_chunks(out: &mut [f64], len: usize, work: impl Fn(usize, &mut [f64]) + Sync) {
    let queue = Mutex::new(out.chunks_mut(len).enumerate());
    let next = || queue.lock().unwrap_or_else(PoisonError::into_inner).next();
    run_on_threads(hylapack::host::threads(), || {
        while let Some((c, chunk)) = next() {
            work(c * len, chunk);
        }
    });
}

/// One order n: generate, time dsyevx_ooc (RANGE = I, the lowest 1%) or, with `all`,
/// dsyev_ooc (every pair, Z into A) on the GPU path within `budget` bytes (None: the GPU's),
/// check. Returns the number of results off (0 or 1).
pub fn large_order(n: usize, uplo: u8, seed: u64, budget: Option<u64>, all: bool) -> usize {
    let clock = Instant::now();
    let mut a = match hylapack::host::try_vec(n * n, 0.0f64) {
        Some(a) => a,
        None => {
            println!(
                "n={n}: the matrix ({} GB) cannot be allocated",
                n * n * 8 / 1_000_000_000
            );
            return 1;
        }
    };
    by_chunks(&mut a, n, |first, col| {
        let j = first / n;
        for (i, x) in col.iter_mut().enumerate() {
            *x = entry(seed, i, j);
        }
    });
    println!(
        "n={n}: matrix generated in {} (seed {seed})",
        time(clock.elapsed().as_secs_f64())
    );
    let within = budget.map_or(String::new(), |b| format!(", budget {} MiB", b >> 20));
    let Some(mut w) = hylapack::host::try_vec(n, 0.0) else {
        println!("n={n}: the eigenvalues cannot be allocated");
        return 1;
    };
    let clock = Instant::now();
    let (what, report, cols, z) = if all {
        let report = hylapack::syev::syev_vectors(uplo, n, &mut a, n, &mut w, Path::Gpu { budget });
        let what = format!("hylapack dsyev_ooc JOBZ=V UPLO={}{within}", uplo as char);
        (what, report, n, a)
    } else {
        let (il, iu) = (1, (n / 100).max(1) as i32);
        let cols = (iu - il + 1) as usize;
        let (Some(mut z), Some(mut ifail)) = (
            hylapack::host::try_vec(n * cols, 0.0),
            hylapack::host::try_vec(n, 0i32),
        ) else {
            println!("n={n}: the vectors cannot be allocated");
            return 1;
        };
        let report = hylapack::syev::syevx_vectors(
            b'I',
            uplo,
            n,
            &mut a,
            n,
            0.0,
            0.0,
            il,
            iu,
            0.0,
            &mut w,
            &mut z,
            n,
            &mut ifail,
            Path::Gpu { budget },
        );
        drop(a);
        let what = format!(
            "hylapack dsyevx_ooc JOBZ=V RANGE=I {il}..{iu} UPLO={}{within}",
            uplo as char
        );
        (what, report, cols, z)
    };
    let secs = clock.elapsed().as_secs_f64();
    let m = report.m.max(0) as usize;
    if report.info != 0 || m != cols {
        println!("{n:>6}  {what}: {}; {m} pairs", stage_note(&report));
        return 1;
    }
    let clock = Instant::now();
    let (resid, ortho, anorm1) = sampled_ratios(seed, n, &w[..m], &z[..n * m]);
    // With every pair, the whole spectrum too: Σλ = tr A, in units of n ε ‖A‖₁.
    let trace = all.then(|| {
        let tr: f64 = (0..n).map(|i| entry(seed, i, i)).sum();
        (w.iter().sum::<f64>() - tr).abs() / (n as f64 * f64::EPSILON * anorm1)
    });
    println!(
        "{n:>6}  {what:<52} {:>10}  resid {resid:.3}  ortho {ortho:.3}{}  (‖A‖₁ {anorm1:.4e}, \
         λ from {:.6e} to {:.6e}; checked in {})  {}",
        time(secs),
        trace.map_or(String::new(), |t| format!("  Σλ − tr A {t:.3}")),
        w[0],
        w[m - 1],
        time(clock.elapsed().as_secs_f64()),
        stage_note(&report)
    );
    let off = !(resid < 20.0 && ortho < 20.0) || trace.is_some_and(|t| t.is_nan() || t >= 20.0);
    usize::from(off || w[..m].windows(2).any(|p| p[0] > p[1]))
}

/// The residual and orthogonality ratios of the sampled columns, as the other rows' (see
/// `bench_syev_vectors`), with A zs formed by rows from the regenerated entries; and ‖A‖₁
/// (their row sums, in the same pass).
fn sampled_ratios(seed: u64, n: usize, w: &[f64], z: &[f64]) -> (f64, f64, f64) {
    let mut anorm1 = 0.0;
    let (resid, ortho) = sampled_ratios_with(n, 1.0, w, z, |(zs, ld), k| {
        // The sampled columns by rows (k values per row).
        let mut zt = vec![0.0; n * k];
        for q in 0..k {
            for i in 0..n {
                zt[i * k + q] = zs[i + q * ld];
            }
        }
        // Rows of A zs, each row's 1-norm after, in chunks of 256 rows; columns in blocks of
        // 1024 (their zt stays in cache for the chunk).
        let mut y = vec![0.0; n * (k + 1)];
        by_chunks(&mut y, 256 * (k + 1), |first, rows| {
            let i0 = first / (k + 1);
            for j0 in (0..n).step_by(1024) {
                let block = &zt[j0 * k..(j0 + 1024).min(n) * k];
                for (di, row) in rows.chunks_mut(k + 1).enumerate() {
                    let i = i0 + di;
                    let (acc, norm) = row.split_at_mut(k);
                    for (dj, zj) in block.chunks(k).enumerate() {
                        let x = entry(seed, i, j0 + dj);
                        norm[0] += x.abs();
                        for (sum, zv) in acc.iter_mut().zip(zj) {
                            *sum += x * zv;
                        }
                    }
                }
            }
        });
        anorm1 = (0..n).map(|i| y[i * (k + 1) + k]).fold(0.0, f64::max);
        let mut r = vec![0.0; n * k];
        for q in 0..k {
            for i in 0..n {
                r[i + q * n] = y[i * (k + 1) + q];
            }
        }
        r
    });
    (resid / anorm1, ortho, anorm1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use hylapack::lapack::Dense;

    #[test]
    fn entries_are_symmetric_and_spread_over_the_interval() {
        let seed = hylapack::testmat::seed_from_time();
        println!("seed {seed}");
        let mut sum = 0.0;
        let mut extremes = (1.0f64, -1.0f64);
        for i in 0..200 {
            for j in 0..200 {
                let x = entry(seed, i, j);
                assert_eq!(x, entry(seed, j, i));
                assert!((-1.0..1.0).contains(&x), "{x}");
                sum += x;
                extremes = (extremes.0.min(x), extremes.1.max(x));
            }
        }
        // 40 000 uniform draws: mean within 5 standard deviations (0.577 / 200) of 0.
        assert!(
            (sum / 40_000.0).abs() < 5.0 * 0.577 / 200.0,
            "mean {}",
            sum / 40_000.0
        );
        assert!(extremes.0 < -0.99 && extremes.1 > 0.99, "{extremes:?}");
    }

    /// The check by regeneration passes LAPACK's eigenpairs of the hashed matrix, and fails
    /// them once an eigenvalue or a vector is off.
    #[test]
    fn regenerated_residuals_judge_lapack_pairs() {
        let seed = hylapack::testmat::seed_from_time();
        println!("seed {seed}");
        let n = 300;
        let mut z: Vec<f64> = (0..n * n).map(|e| entry(seed, e % n, e / n)).collect();
        let mut w = vec![0.0; n];
        assert_eq!(f64::syevd(b'V', b'L', n, &mut z, n, &mut w), 0);
        let anorm1 = (0..n)
            .map(|j| (0..n).map(|i| entry(seed, i, j).abs()).sum::<f64>())
            .fold(0.0, f64::max);
        let (resid, ortho, norm) = sampled_ratios(seed, n, &w, &z);
        assert!(resid < 1.0 && ortho < 1.0, "resid {resid} ortho {ortho}");
        assert!(
            (norm - anorm1).abs() <= 1e-12 * anorm1,
            "{norm} against {anorm1}"
        );
        // The last sampled pair, off by 1e-9 in its eigenvalue, then in one entry of its vector.
        let mut w_off = w.clone();
        w_off[n - 1] += 1e-9 * anorm1;
        assert!(sampled_ratios(seed, n, &w_off, &z).0 > 20.0);
        let mut z_off = z.clone();
        z_off[n * n - 1] += 1e-9;
        let (resid, ortho, _) = sampled_ratios(seed, n, &w, &z_off);
        assert!(resid > 20.0 && ortho > 20.0, "resid {resid} ortho {ortho}");
    }
}
