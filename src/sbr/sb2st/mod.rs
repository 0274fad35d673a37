//! Band → tridiagonal by bulge chasing with Householder reflectors (the second stage of the
//! two-stage reduction, as LAPACK's xSYTRD_SB2ST does it), with the sweeps pipelined: over the
//! CPU's threads ([`cpu`]) or over the CTAs of one GPU kernel ([`gpu`]). Both run the same
//! steps in the same dependency order; only the arithmetic's rounding order differs.
//!
//! Sweep `i` annihilates column `i` below the subdiagonal and chases the bulge down:
//! - step 0: a reflector H from column `i` (rows `i+1 ..= i+b`), applied from both sides to
//!   the diagonal block of those rows;
//! - step k ≥ 1: the previous H applied from the right to the block below the last diagonal
//!   block (this creates the bulge), a new H annihilating the bulge's first column, applied from
//!   the left to the rest of that block and from both sides to the next diagonal block.
//!   The rest of the bulge is removed by the following sweeps.
//!
//! Step k of sweep i touches entries in rows `i+1+kb ..= i+(k+1)b` only (step 0 also column
//! i, k ≥ 1 also columns from `i+1+(k−1)b`). Step k of sweep i+1 thus shares entries with
//! steps `..= k+1` of sweep i (step k+1's block below the diagonal reaches row
//! `i+1+(k+1)b`), and none with step k+2 (rows from `i+1+(k+2)b`): it may run as soon as
//! sweep i has finished [`LAG`] steps more than it has.
//!
//! The band is held in lower band storage with `2b + 1` rows: entry (r, c), `r ≥ c`, at
//! `(r − c) + c · ld`, the extra rows holding the bulge.
//!
//! For eigenvectors the chase can keep its reflectors ([`tridiagonalize_keeping`]; the GPU's
//! also in GPU memory, [`gpu::DeviceReflectors`]):
//! T = Q2ᵀ B Q2 with Q2 = H(0, 0) H(0, 1) ⋯ H(1, 0) ⋯ in the order of the sweeps run one after
//! another (the pipeline's order gives the same matrix), H(i, k) = I − τ v vᵀ the reflector
//! of step k of sweep i over rows `i + 1 + k b ..` (at most b of them, v's first entry 1).
//! The steps of sweep i cover rows `i + 1 .. n` once, so its vectors tile a column of n − 1 − i
//! entries; [`Reflectors`] stores those columns one after another (n(n − 1)/2 entries in all),
//! τ in place of each vector's unit entry. An eigenvector y of T gives B's as Q2 y
//! ([`Reflectors::apply_left`], the reflectors in the reverse order). B is the same symmetric
//! matrix whichever triangle held it, so Q2 needs no UPLO.

mod apply;
pub mod apply_gpu;
pub mod cpu;
pub mod gpu;

pub use apply::Reflectors;

pub use cpu::sweep_group;

/// Step k of a sweep waits until the sweep before has finished its steps `0 ..= k + LAG − 1`
/// (module notes).
pub const LAG: usize = 2;

use crate::real::Real;

/// The working band of `ab` (LAPACK band storage of the `uplo` triangle, `kd` off-diagonals,
/// leading dimension `ldab`): lower storage with room for the bulge. Returns it with its
/// leading dimension and the bandwidth b = max(kd, 1), or None if it cannot be allocated.
fn workspace<T: Real>(
    uplo: u8,
    n: usize,
    kd: usize,
    ab: &[T],
    ldab: usize,
) -> Option<(Vec<T>, usize, usize)> {
    let b = kd.max(1);
    let ld = 2 * b + 1;
    let mut w = crate::host::try_zeroed(ld * n)?;
    let upper = uplo.eq_ignore_ascii_case(&b'U');
    for j in 0..n {
        for d in 0..=kd.min(n - 1 - j) {
            // Lower entry (j + d, j); the upper triangle stores it as (j, j + d).
            w[d + j * ld] = if upper {
                ab[kd - d + (j + d) * ldab]
            } else {
                ab[d + j * ldab]
            };
        }
    }
    Some((w, ld, b))
}

/// The diagonal and subdiagonal of the working band once it is tridiagonal, or None if they
/// cannot be allocated.
fn diagonals<T: Real>(w: &[T], ld: usize, n: usize) -> Option<(Vec<T>, Vec<T>)> {
    let mut d = crate::host::try_zeroed(n)?;
    let mut e = crate::host::try_zeroed(n.saturating_sub(1))?;
    for (j, x) in d.iter_mut().enumerate() {
        *x = w[j * ld];
    }
    for (j, x) in e.iter_mut().enumerate() {
        *x = w[1 + j * ld];
    }
    Some((d, e))
}

/// Whether there is anything to chase: a band wider than tridiagonal, more than two rows.
fn needs_chase(n: usize, kd: usize) -> bool {
    n > 2 && kd > 1
}

/// Where sweep `i`'s vectors start in [`Reflectors`]' layout of order `n`: after the n − 1,
/// n − 2, … entries of the sweeps before.
pub(crate) fn sweep_offset(n: usize, i: usize) -> usize {
    i * (n - 1) - i * i.saturating_sub(1) / 2
}

/// [`tridiagonalize`] keeping the reflectors: (d, e), and Q2 with T = Q2ᵀ B Q2 (module notes)
/// into `q` (from [`Reflectors::new`] for this n and kd). None when its host memory (about
/// (2 kd + 4) n entries) cannot be allocated.
pub fn tridiagonalize_keeping<T: Real>(
    uplo: u8,
    n: usize,
    kd: usize,
    ab: &[T],
    ldab: usize,
    threads: usize,
    q: &mut Reflectors<T>,
) -> Option<(Vec<T>, Vec<T>)> {
    let (mut w, ld, b) = workspace(uplo, n, kd, ab, ldab)?;
    assert!(
        q.fits(n, b),
        "Q2's layout is for another order or bandwidth"
    );
    q.clear();
    if needs_chase(n, kd) {
        let threads = if threads == 0 {
            crate::host::threads()
        } else {
            threads
        };
        let threads = threads.clamp(1, n - 2);
        let group = sweep_group(n, b, threads);
        cpu::chase(&mut w, ld, n, b, threads, group, Some(&mut q.v))?;
    }
    diagonals(&w, ld, n)
}

/// The symmetric tridiagonal matrix (d, e) orthogonally similar to the band matrix `ab`
/// (LAPACK band storage of the `uplo` triangle, `kd` off-diagonals, leading dimension `ldab`),
/// on `threads` CPU threads (0: all available). `d` gets n entries, `e` n − 1. None (never an
/// abort) when the host memory it needs (about (2 kd + 4) n entries) cannot be allocated.
pub fn tridiagonalize<T: Real>(
    uplo: u8,
    n: usize,
    kd: usize,
    ab: &[T],
    ldab: usize,
    threads: usize,
) -> Option<(Vec<T>, Vec<T>)> {
    tridiagonalize_grouped(uplo, n, kd, ab, ldab, threads, 0)
}

/// [`tridiagonalize`] with `group` sweeps per task (1: one sweep per task, as a plain
/// pipeline; 0: [`sweep_group`]'s choice); for measurements.
pub fn tridiagonalize_grouped<T: Real>(
    uplo: u8,
    n: usize,
    kd: usize,
    ab: &[T],
    ldab: usize,
    threads: usize,
    group: usize,
) -> Option<(Vec<T>, Vec<T>)> {
    let (mut w, ld, b) = workspace(uplo, n, kd, ab, ldab)?;
    if needs_chase(n, kd) {
        let threads = if threads == 0 {
            crate::host::threads()
        } else {
            threads
        };
        let threads = threads.clamp(1, n - 2);
        let group = if group == 0 {
            sweep_group(n, b, threads)
        } else {
            group
        };
        cpu::chase(&mut w, ld, n, b, threads, group, None)?;
    }
    diagonals(&w, ld, n)
}
