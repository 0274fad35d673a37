//! The stage of the eigenvector drivers between the two reductions: the tridiagonal's
//! eigenvectors, by the GPU's bisection and inverse iteration or by xSTEDC (xSTEQR where its
//! memory is refused).

use crate::dispatch::{self, Backend};
use crate::host::try_vec;
use crate::real::Real;
use crate::sbr::{Path, SbrReal};
use std::time::Instant;

/// The order from which the GPU path finds all of the tridiagonal's eigenvectors by bisection
/// and inverse iteration on the GPU ([`inverse_iteration`]) rather than by xSTEDC: on an H200
/// host at n = 16384 they took 0.77 s (before the GPU path checked its answer) where xSTEDC
/// took 45 s inside the driver (docs/bench/2026-11-26-h200-session18.txt); below about this
/// order the GPU's inverse iteration does not pay (`dispatch::decide_stein`).
pub const INVERSE_ITERATION_FROM: usize = 1024;

/// Whether `path` first tries [`inverse_iteration`] for all of an order-n tridiagonal's
/// eigenvectors. Not the CPU executor's path: the host's inverse iteration (LAPACK's
/// algorithm) left a rank-deficient matrix's vectors at n = 1100 up to 11 n ε from orthogonal
/// where xSTEDC's were 0.5 n ε.
pub(super) fn by_inverse_iteration(path: Path, n: usize) -> bool {
    n >= INVERSE_ITERATION_FROM && matches!(path, Path::Gpu { .. })
}

/// All eigenvalues of the tridiagonal (d, e) (order n ≥ 2) ascending into `w` and their
/// eigenvectors into the n x n `z` (leading dimension `ldz`) on the GPU: bisection with
/// ORDER = 'B' ([`crate::stebz`]) and inverse iteration ([`crate::stein`]'s GPU path alone,
/// which checks its answer's residuals and orthogonality), then the pairs sorted. False when
/// either did not converge everywhere, or the GPU path failed or refused its answer (a
/// cluster of eigenvalues equal to working precision can make it do so): then `w` and `z`
/// hold nothing of use, and xSTEDC takes over. Fails, with why, for want of host memory.
pub(super) fn inverse_iteration<T: SbrReal>(
    d: &[T],
    e: &[T],
    w: &mut [T],
    z: &mut [T],
    ldz: usize,
) -> Result<bool, String> {
    let n = d.len();
    let (Some(mut iblock), Some(mut isplit)) = (try_vec(n, 0), try_vec(n, 0)) else {
        return Err("xSTEBZ's IBLOCK and ISPLIT".into());
    };
    let zero = T::ZERO;
    let clock = Instant::now();
    let r = crate::stebz::stebz_or_lapack(
        b'A',
        b'B',
        zero,
        zero,
        0,
        0,
        zero,
        d,
        &e[..n - 1],
        w,
        &mut iblock,
        &mut isplit,
        Backend::Gpu,
        None,
    );
    if r.info == crate::stebz::INFO_NO_HOST_MEMORY {
        return Err("xSTEBZ's workspace".into());
    }
    if r.info != 0 || r.m != n as i32 {
        dispatch::debug(|| format!("syev: bisection ended with INFO = {}", r.info));
        return Ok(false);
    }
    let bisected = clock.elapsed().as_secs_f64();
    let run = longest_multiple_run(&w[..n], &iblock[..n]);
    if run > crate::stein::gpu::PANEL {
        dispatch::debug(|| {
            format!("syev: {run} eigenvalues equal to working precision; xSTEDC instead")
        });
        return Ok(false);
    }
    let run = crate::stein::stein_gpu_only(d, &e[..n - 1], &w[..n], &iblock, &isplit, z, ldz)
        .map_err(|e| format!("xSTEIN's workspace ({e})"))?;
    let iterated = clock.elapsed().as_secs_f64();
    match run {
        Some(report) if report.info == 0 => {}
        other => {
            let why = other.map_or("the GPU path failed".into(), |r| {
                format!("{} vectors did not converge", r.info)
            });
            dispatch::debug(|| format!("syev: inverse iteration: {why}; xSTEDC instead"));
            return Ok(false);
        }
    }
    super::sort_pairs(0, n, n, w, z, ldz, &mut []);
    dispatch::debug(|| {
        format!(
            "syev: bisection {bisected:.3} s, inverse iteration {:.3} s, sorting {:.3} s",
            iterated - bisected,
            clock.elapsed().as_secs_f64() - iterated
        )
    });
    Ok(true)
}

/// The most eigenvalues of one block in a row (`w` by blocks of `iblock`, ascending in each, as
/// xSTEBZ's ORDER = 'B' leaves them) each within 16 ulp of max |w| of the one before: more
/// than bisection resolves, so numerically one multiple eigenvalue. The GPU's inverse
/// iteration orthogonalizes such a run across its panels by Gram–Schmidt; a clustered
/// matrix's run of 441 (n = 1324) came out 24.9 n ε from orthogonal where DSYEV's were 2.4,
/// while xSTEDC deflates such runs, cheaply. (Not n ε: in single precision a random matrix's
/// distinct eigenvalues, about 1/n of the largest apart, fall below that from n ≈ 5000.)
fn longest_multiple_run<T: Real>(w: &[T], iblock: &[i32]) -> usize {
    let norm = w.iter().fold(T::ZERO, |m, x| m.max(x.abs()));
    let tol = T::from_f64(16.0) * T::ULP * norm;
    let (mut longest, mut run) = (usize::from(!w.is_empty()), 1);
    for k in 1..w.len() {
        let joined = iblock[k] == iblock[k - 1] && (w[k] - w[k - 1]).abs() <= tol;
        run = if joined { run + 1 } else { 1 };
        longest = longest.max(run);
    }
    longest
}

/// All eigenvalues of the tridiagonal (d, e) (order n ≥ 2) into `w` (ascending) and its
/// eigenvectors into the n x n `z` (leading dimension `ldz`), as xSYEVX's shortcut: by
/// [`inverse_iteration`] where [`by_inverse_iteration`] says so, else (or if it did not
/// succeed) by xSTEDC, or where its workspace cannot be allocated or it fails, by xSTEQR, on
/// copies of (d, e). False when none converged (then bisection and inverse iteration take
/// over); fails, with why, when not even xSTEQR's memory can be had.
pub(super) fn all_vectors<T: SbrReal>(
    d: &[T],
    e: &[T],
    w: &mut [T],
    z: &mut [T],
    ldz: usize,
    path: Path,
) -> Result<bool, String> {
    let n = d.len();
    if by_inverse_iteration(path, n) && inverse_iteration(d, e, w, z, ldz)? {
        return Ok(true);
    }
    let (lw, liw) = T::stedc_sizes(n);
    let copies = (
        crate::host::try_vec(n, T::ZERO),
        crate::host::try_vec(n, T::ZERO),
    );
    let (Some(mut d2), Some(mut e2)) = copies else {
        return Err("a copy of the tridiagonal matrix".into());
    };
    let fresh = |d2: &mut [T], e2: &mut [T]| {
        d2.copy_from_slice(d);
        e2[..n - 1].copy_from_slice(&e[..n - 1]);
    };
    let room = (
        crate::host::try_zeroed::<T>(lw),
        crate::host::try_vec(liw, 0i32),
    );
    if let (Some(mut work), Some(mut iwork)) = room {
        fresh(&mut d2, &mut e2);
        if T::stedc_vectors(&mut d2, &mut e2[..n - 1], z, ldz, &mut work, &mut iwork) == 0 {
            w[..n].copy_from_slice(&d2);
            return Ok(true);
        }
        dispatch::debug(|| "syevx: xSTEDC failed; xSTEQR instead".to_string());
    }
    let mut work = crate::host::try_zeroed::<T>((2 * n).saturating_sub(2).max(1))
        .ok_or("the workspace of xSTEQR")?;
    fresh(&mut d2, &mut e2);
    if T::steqr_vectors(&mut d2, &mut e2, z, ldz, &mut work) == 0 {
        w[..n].copy_from_slice(&d2);
        return Ok(true);
    }
    Ok(false)
}

/// The eigenvalues of the tridiagonal (d, e) into `d` (ascending) and its eigenvectors into
/// the n x n `z`: by xSTEDC, or where its workspace cannot be allocated or it fails, by
/// xSTEQR from the same (d, e), whose INFO (xSYEV's) is returned.
pub(super) fn divide_and_conquer<T: SbrReal>(
    d: &mut [T],
    e: &mut [T],
    z: &mut [T],
    n: usize,
) -> Result<i32, String> {
    let (lw, liw) = T::stedc_sizes(n);
    let room = (
        crate::host::try_zeroed::<T>(lw),
        crate::host::try_vec(liw, 0i32),
        crate::host::try_vec(n, T::ZERO),
        crate::host::try_vec(n, T::ZERO),
    );
    if let (Some(mut work), Some(mut iwork), Some(mut d2), Some(mut e2)) = room {
        d2.copy_from_slice(d);
        e2[..n - 1].copy_from_slice(&e[..n - 1]);
        if T::stedc_vectors(&mut d2, &mut e2[..n - 1], z, n, &mut work, &mut iwork) == 0 {
            d.copy_from_slice(&d2);
            return Ok(0);
        }
        dispatch::debug(|| "syev: xSTEDC failed; xSTEQR instead".to_string());
    }
    let mut work = crate::host::try_zeroed::<T>((2 * n).saturating_sub(2).max(1))
        .ok_or("the workspace of xSTEQR")?;
    Ok(T::steqr_vectors(d, e, z, n, &mut work))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn multiple_eigenvalues_are_counted_within_a_block() {
        let eps = f64::EPSILON;
        // Blocks 1 and 2 meet at 0.5; block 2 holds three values within 16 ulp of each other.
        let w = [0.1, 0.5, 0.5, 0.5 + eps, 0.5 + 3.0 * eps, 0.9, 1.0];
        let iblock = [1, 1, 2, 2, 2, 2, 2];
        assert_eq!(longest_multiple_run(&w, &iblock), 3);
        // One block: the four values run together.
        assert_eq!(longest_multiple_run(&w, &[1; 7]), 4);
        // Spread by more than 16 ulp of max |w|: no run.
        let spread: Vec<f64> = (0..7).map(|k| 0.5 + 32.0 * eps * k as f64).collect();
        assert_eq!(longest_multiple_run(&spread, &[1; 7]), 1);
        assert_eq!(longest_multiple_run::<f64>(&[], &[]), 0);
        // Single precision, distinct eigenvalues 2/n apart at n = 16384: no run (a tolerance
        // growing with n would join them all).
        let n = 16384;
        let w: Vec<f32> = (0..n).map(|k| -1.0 + 2.0 * k as f32 / n as f32).collect();
        assert_eq!(longest_multiple_run(&w, &vec![1; n]), 1);
    }
}
