//! xSBRDB: a symmetric band matrix reduced to a narrower band by orthogonal similarity (the
//! SBR toolbox's SBRDB, the second stage of Davidović & Quintana-Ortí §4), on an
//! [`Executor`]: the eigenvalue drivers' out-of-core path reduces the dense matrix to a wide
//! band first (far less traffic per flop over the bus), then narrows it here in the
//! executor's memory, where the band fits.
//!
//! From `b` to `w < b` off-diagonals (`d = b − w`), with blocks of `nb = w` columns. Sweep
//! `j = 0, nb, 2nb, …` annihilates, in columns `j..j+nb`, the entries below the new band,
//! then chases the fill-in down the band. Each step works on a block of columns `c0..c0+k`
//! (`k ≤ nb`) whose rows from `r0 = c0 + t` on are to go (`t = w` for a sweep's first step,
//! `t = b` for the chase):
//! 1. the QR of a copy of the block `A[r0..e, c0..c0+k]`, `e = min(n, r0 + k + d)`, gives
//!    `Q = I − V T Vᵀ` (and `Z = V T`) on the index range `R = r0..e`;
//! 2. from the left to `A[R, c0..r0]` (the block itself, which becomes `[R; 0]` up to
//!    rounding, and the columns between it and `R`);
//! 3. from both sides to the symmetric `A[R, R]` (the dense reduction's SYMM / SYR2K update);
//! 4. from the right to `A[e..e+b, R]`, the rows of `R`'s columns below `R`. This fills the
//!    block in below the band (in exact arithmetic `d` diagonals, as the reflectors span
//!    `d + 1` rows each; the computed ones are not that sparse, so the storage holds the
//!    whole block, down to `b + nb + d − 1` below the diagonal). The next step (`c0 = r0`,
//!    `t = b`) annihilates the fill in `R`'s first `nb` columns, whose rows all lie in its
//!    block (`nb + d` rows from `b` below its first column, down to row `e + b − 1`); the
//!    fill in the other columns of `R` lies in the blocks of the next sweep's steps, one
//!    block to the right.
//!
//! The block is multiplied by Qᵀ rather than replaced by the factorisation's R, so no entry
//! has to be zeroed on the executor: what should be zero is O(ε‖A‖), annihilated again by a
//! later step or dropped with the rest of the outer band at the end (a backward error of the
//! same order as the rounding's).
//!
//! The working band is lower band storage with `ldw = b + nb + d` rows: entry `(i, j)`, `0 ≤
//! i − j < ldw`, at `(i − j) + j·ldw = i + j·(ldw − 1)`. With leading dimension `ldw − 1` it is
//! a dense column-major matrix in which every block a step touches (all of it inside that
//! diagonal strip) is an ordinary BLAS operand.
//!
//! `HYLAPACK_SBR_PROFILE=1` (the caller's `profile`) prints the steps, the time and the QRs'
//! split on stderr.

use super::executor::{op, op_mut, ExecError, Executor};
use super::panel::device::panel_on_executor;
use super::panel::PanelSet;
use super::update::{apply_qt, finish_x};
use crate::lapack::Dense;
use crate::real::Real;

/// Entries the executor holds to narrow an n x n band from `kd` to `kd2` off-diagonals: the
/// working band and the step's buffers.
pub fn footprint(n: usize, kd: usize, kd2: usize) -> usize {
    let (nb, d) = (kd2, kd - kd2);
    let m = nb + d;
    let step = 4 * m * nb + kd * nb + 2 * nb * nb + nb + super::panel::cholqr::scratch_len(nb);
    (kd + nb + d) * n + step + (kd2 + 1) * n
}

/// The band matrix `ab` (LAPACK band storage of the `uplo` triangle with `kd` off-diagonals,
/// leading dimension `ldab`) reduced to `kd2 < kd` off-diagonals by orthogonal similarity on
/// `exec`: returned in lower band storage with leading dimension `kd2 + 1` (the entries past
/// the matrix's end zero). `profile`: print the steps and their time (the `profile` setting,
/// see [`crate::config::SbrTuning`]).
#[allow(clippy::too_many_arguments)]
pub fn narrow<T: Real + Dense, E: Executor<T>>(
    exec: &mut E,
    uplo: u8,
    n: usize,
    kd: usize,
    ab: &[T],
    ldab: usize,
    kd2: usize,
    profile: bool,
) -> Result<Vec<T>, ExecError> {
    assert!(
        (1..kd).contains(&kd2),
        "sbrdb narrows a band: {kd2} off-diagonals from {kd}"
    );
    let (b, w) = (kd, kd2);
    let (nb, d) = (w, b - w);
    let ldw = b + nb + d;
    let ld = ldw - 1;
    let at = |i: usize, j: usize| i + j * ld;
    let upper = uplo.eq_ignore_ascii_case(&b'U');

    let mut band = exec.alloc(ldw * n)?;
    let rows = b + 1;
    exec.upload_block(&mut band, 0, ldw, rows, n, &mut |start, out| {
        for (q, x) in out.iter_mut().enumerate() {
            let (r, j) = ((start + q) % rows, (start + q) / rows);
            *x = match (j + r < n, upper) {
                (false, _) => T::ZERO,
                (true, false) => ab[r + j * ldab],
                (true, true) => ab[kd - r + (j + r) * ldab],
            };
        }
    })?;
    let m_max = nb + d;
    let mut block = exec.alloc(m_max * nb)?;
    let mut x = exec.alloc(m_max * nb)?;
    let mut w_side = exec.alloc(nb * b)?;
    let mut tau = exec.alloc(nb)?;
    let mut set = PanelSet {
        v: exec.alloc(m_max * nb)?,
        z: exec.alloc(m_max * nb)?,
        s: exec.alloc(nb * nb)?,
        t: exec.alloc(nb * nb)?,
        q: exec.alloc(super::panel::cholqr::scratch_len(nb))?,
    };

    let (started, mut steps) = (std::time::Instant::now(), 0);
    let mut j = 0;
    while j + w + 1 < n {
        let (mut c0, mut t) = (j, w);
        while c0 + t < n {
            let r0 = c0 + t;
            let k = nb.min(n - c0);
            let e = n.min(r0 + k + d);
            let m = e - r0;
            if m >= 2 {
                steps += 1;
                let q = op_mut(&mut block, 0, m);
                exec.copy(m, k, op(&band, at(r0, c0), ld), q)?;
                let qr = op_mut(&mut block, 0, m);
                panel_on_executor(exec, qr, &mut tau, &mut set, m, k, 0, profile)?;
                let pk = m.min(k);
                // From the left: A[R, c0..r0] := Qᵀ A[R, c0..r0].
                let (v, z) = (op(&set.v, 0, m), op(&set.z, 0, m));
                apply_qt(exec, m, pk, t, v, z, &mut band, at(r0, c0), ld, &mut w_side)?;
                // Both sides of A[R, R].
                let sym = op(&band, at(r0, r0), ld);
                exec.symm(
                    m,
                    pk,
                    T::ONE,
                    sym,
                    op(&set.z, 0, m),
                    T::ZERO,
                    op_mut(&mut x, 0, m),
                )?;
                finish_x(exec, m, pk, &set.v, &set.z, &mut x, &mut set.s)?;
                let (v, z) = (&set.v, &set.z);
                let sym = op_mut(&mut band, at(r0, r0), ld);
                exec.syr2k(m, pk, -T::ONE, op(v, 0, m), op(&x, 0, m), T::ONE, sym)?;
                // From the right: A[S, R] −= (A[S, R] Z) Vᵀ, S the rows below R.
                let s = n.min(e + b) - e;
                if s > 0 {
                    let right = op(&band, at(e, r0), ld);
                    let ws = op_mut(&mut w_side, 0, s);
                    exec.gemm(
                        false,
                        false,
                        s,
                        pk,
                        m,
                        T::ONE,
                        right,
                        op(z, 0, m),
                        T::ZERO,
                        ws,
                    )?;
                    let right = op_mut(&mut band, at(e, r0), ld);
                    let ws = op(&w_side, 0, s);
                    exec.gemm(
                        false,
                        true,
                        s,
                        m,
                        pk,
                        -T::ONE,
                        ws,
                        op(v, 0, m),
                        T::ONE,
                        right,
                    )?;
                }
            }
            c0 = r0;
            t = b;
        }
        j += nb;
    }

    let h = kd2 + 1;
    let mut narrow = exec.alloc(h * n)?;
    exec.copy(h, n, op(&band, 0, ldw), op_mut(&mut narrow, 0, h))?;
    let mut out = super::executor::host_zeros(h * n)?;
    exec.download(&narrow, 0, h * n, &mut |start, piece| {
        out[start..start + piece.len()].copy_from_slice(piece)
    })?;
    if profile {
        let split = super::panel::cholqr::report().unwrap_or_default();
        let secs = started.elapsed().as_secs_f64();
        eprintln!(
            "hylapack: sbrdb n={n} {kd}→{kd2}: {steps} steps in {secs:.3} s; QR steps: {split}"
        );
    }
    // The working band's rows past the matrix's end were zero and stay untouched.
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sbr::executor::cpu::CpuExecutor;
    use crate::testmat::Rng;

    /// A random symmetric band matrix in LAPACK band storage of `uplo` (entries past the end
    /// left as garbage, which must not be read).
    fn random_band(uplo: u8, n: usize, kd: usize, rng: &mut Rng) -> Vec<f64> {
        let ld = kd + 1;
        let mut ab: Vec<f64> = (0..ld * n).map(|_| 1e30).collect();
        for j in 0..n {
            for r in 0..=kd.min(n - 1 - j) {
                let x = rng.uniform() * 2.0 - 1.0;
                if uplo == b'L' {
                    ab[r + j * ld] = x;
                } else {
                    ab[kd - r + (j + r) * ld] = x;
                }
            }
        }
        ab
    }

    /// Eigenvalues of a band matrix by the system LAPACK's xSBEV (lower storage).
    fn band_eigenvalues(uplo: u8, n: usize, kd: usize, ab: &[f64], ldab: usize) -> Vec<f64> {
        let mut dense = vec![0.0; n * n];
        for j in 0..n {
            for r in 0..=kd.min(n - 1 - j) {
                let x = if uplo == b'L' {
                    ab[r + j * ldab]
                } else {
                    ab[kd - r + (j + r) * ldab]
                };
                dense[j + r + j * n] = x;
                dense[j + (j + r) * n] = x;
            }
        }
        let mut w = vec![0.0; n];
        assert_eq!(f64::syev_values(b'L', n, &mut dense, n, &mut w), 0);
        w
    }

    #[test]
    fn narrowed_band_keeps_the_eigenvalues() {
        let mut rng = Rng::new(crate::testmat::seed_from_time());
        // (n, kd, kd2): steps that clip at the end, kd2 = 1 (tridiagonal), a d larger and
        // smaller than nb, n barely above the bands.
        for &(n, kd, kd2) in &[
            (200, 24, 6),
            (257, 40, 8),
            (97, 30, 1),
            (40, 39, 38),
            (150, 12, 9),
            (31, 20, 4),
            (64, 8, 2),
        ] {
            for uplo in [b'L', b'U'] {
                let ab = random_band(uplo, n, kd, &mut rng);
                let want = band_eigenvalues(uplo, n, kd, &ab, kd + 1);
                let out = narrow(
                    &mut CpuExecutor::new(u64::MAX),
                    uplo,
                    n,
                    kd,
                    &ab,
                    kd + 1,
                    kd2,
                    false,
                )
                .expect("the CPU executor does not fail");
                let got = band_eigenvalues(b'L', n, kd2, &out, kd2 + 1);
                let norm = want.iter().fold(0.0f64, |m, x| m.max(x.abs()));
                let err = want
                    .iter()
                    .zip(&got)
                    .fold(0.0f64, |m, (a, b)| m.max((a - b).abs()));
                let scaled = err / (n as f64 * f64::EPSILON * norm);
                assert!(
                    scaled < 1.0,
                    "n={n} kd={kd}→{kd2} uplo={}: eigenvalue error {err:.3e} = {scaled:.3} n ε ‖A‖",
                    uplo as char
                );
            }
        }
    }
}
