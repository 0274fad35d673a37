//! Panel QR by CholeskyQR2 and Householder reconstruction (the idea of Ballard, Demmel,
//! Grigori, Jacquelin, Nguyen and Solomonik, "Reconstructing Householder vectors from
//! tall-skinny QR", 2015): a few large BLAS calls on the executor and one round trip of 3k²
//! entries per panel, where xGEQRF sweeps the panel column by column (on the GPU, hundreds of
//! small launches). The result has xGEQRF's form, so the rest of the reduction is unchanged.
//!
//! For the m x k panel P (m > k):
//! 1. `G₁ = PᵀP`, `R₁ = chol(G₁)`, `Q₁ = P R₁⁻¹` by TRSM, all on the executor (a triangular
//!    solve's backward error keeps `‖P − Q₁R₁‖` at O(ε)‖P‖ for any finite R₁ with a positive
//!    diagonal, whatever κ(P)), and `G₂ = Q₁ᵀQ₁`; R₁, G₂ and Q₁'s top block go to the host.
//! 2. If `‖G₂ − I‖_F ≤ 1/10`, Q₁ is well conditioned and `Q₂ = Q₁R₂⁻¹`, `R₂ = chol(G₂)` on
//!    the host, is orthonormal to O(ε) (CholeskyQR2); `P = Q₂ R₂R₁`. (So a Cholesky
//!    factorisation of G₁ that failed on the executor is caught whatever it left in R₁.)
//! 3. The LU without pivoting `Q₂ − [S; 0] = V U`, the signs `S = diag(±1)` chosen during the
//!    elimination as minus each pivot's sign (so every pivot has modulus ≥ 1), gives
//!    `Q₂S = (I − V T Vᵀ)[I; 0]` with `T = −U S V₁⁻ᵀ`: the Householder QR
//!    `P = (I − V T Vᵀ)[S R₂R₁; 0]`, `τ_j = T_jj ∈ [1, 2]`, xGEQRF's sign convention. Only the
//!    top k x k block needs the LU (on the host); V's rows below it are Q₂'s times U⁻¹, i.e.
//!    Q₁'s times `(U R₂)⁻¹`: one more TRSM on the executor.
//!
//! Where a Cholesky factorisation fails or G₂ is far from I (rank-deficient or badly
//! conditioned panels, NaN, overflow of `PᵀP`), [`factor`] returns false with the panel
//! untouched and the caller runs xGEQRF.

use super::device::gram_matrix;
use super::PanelSet;
use crate::lapack::Dense;
use crate::real::Real;
use crate::sbr::executor::{op, op_mut, ExecError, Executor, OpMut};
use std::cell::RefCell;
use std::time::Instant;

/// Largest `‖Q₁ᵀQ₁ − I‖_F` accepted: it bounds κ(Q₁) by √(1.1/0.9) ≈ 1.11, so the second pass
/// loses nothing to conditioning.
const MAX_GRAM_DEFECT: f64 = 0.1;

/// Names of the panel's steps timed under `HYLAPACK_SBR_PROFILE=1`.
const STEPS: [&str; 4] = ["round trip", "R1 check", "host", "V,Z"];

thread_local! {
    /// Seconds spent in each of [`STEPS`] since the last [`report`], and the panels counted.
    static SPLIT: RefCell<([f64; 4], usize)> = const { RefCell::new(([0.0; 4], 0)) };
}

/// Profiling: the executor synchronised at the end of each step (the round trips already
/// are), the times summed per thread.
struct Clock {
    on: bool,
    last: Instant,
    secs: [f64; 4],
}

impl Clock {
    fn new(on: bool) -> Self {
        Clock {
            on,
            last: Instant::now(),
            secs: [0.0; 4],
        }
    }

    fn end<T: Real, E: Executor<T>>(&mut self, exec: &mut E, step: usize) -> Result<(), ExecError> {
        if self.on {
            exec.sync()?;
            let now = Instant::now();
            self.secs[step] += (now - self.last).as_secs_f64();
            self.last = now;
        }
        Ok(())
    }
}

impl Drop for Clock {
    /// Adds this panel's times to the thread's sums (a refused panel's too).
    fn drop(&mut self) {
        if self.on {
            SPLIT.with(|s| {
                let mut s = s.borrow_mut();
                for (sum, x) in s.0.iter_mut().zip(self.secs) {
                    *sum += x;
                }
                s.1 += 1;
            });
        }
    }
}

/// The summed step times of the CholeskyQR2 panels since the last call (profiling), if any.
pub(in crate::sbr) fn report() -> Option<String> {
    let (secs, panels) = SPLIT.with(|s| std::mem::take(&mut *s.borrow_mut()));
    (panels > 0).then(|| {
        let parts: Vec<String> = (STEPS.iter().zip(secs))
            .map(|(name, s)| format!("{name} {s:.3} s"))
            .collect();
        format!("{panels} CholeskyQR2 panels tried: {}", parts.join(", "))
    })
}

/// Entries of the executor buffer [`PanelSet::q`] for panels of k columns: `[R₁ | G₂ | Q₁'s
/// top block]` on the way down, `[top | V₁ | U R₂ | T]` on the way up.
pub(in crate::sbr) fn scratch_len(k: usize) -> usize {
    4 * k * k
}

/// Factors the m x k `panel` (m > k, else nothing is done) into what xGEQRF and the executor
/// path of `panel_on_executor` leave: R and the reflectors in the panel, τ in
/// `taubuf[tau_at..tau_at + k]`, V (unit diagonal, zeros above) in `bufs.v` and `Z = V T` in
/// `bufs.z`. Returns false, with the panel and `taubuf` untouched, where CholeskyQR2 cannot be
/// trusted. `profile`: time the steps (see [`report`]).
#[allow(clippy::too_many_arguments)]
pub(in crate::sbr) fn factor<T: Real + Dense, E: Executor<T>>(
    exec: &mut E,
    panel: OpMut<E::Buf>,
    taubuf: &mut E::Buf,
    bufs: &mut PanelSet<E::Buf>,
    m: usize,
    k: usize,
    tau_at: usize,
    profile: bool,
) -> Result<bool, ExecError> {
    // A square panel's last reflector has nothing below its diagonal: xGEQRF makes it the
    // identity (τ = 0), the reconstruction a sign flip (τ = 2). Keep LAPACK's.
    if m <= k || k == 0 {
        return Ok(false);
    }
    let mut clock = Clock::new(profile);
    let kk = k * k;
    let (p, at, ld) = (panel.buf, panel.off, panel.ld);
    let (q, v) = (&mut bufs.q, &mut bufs.v);
    // R₁, G₂ and Q₁'s top block come down together: one round trip. R₁ is factored on the
    // executor, its failure seen on the host (NaN, a non-positive pivot, or G₂ far from I).
    gram_matrix(exec, m, k, op(p, at, ld), op_mut(q, 0, k))?;
    exec.potrf_upper(k, op_mut(q, 0, k))?;
    exec.copy(m, k, op(p, at, ld), op_mut(v, 0, m))?;
    exec.trsm_right_upper(m, k, op(q, 0, k), op_mut(v, 0, m))?;
    gram_matrix(exec, m, k, op(v, 0, m), op_mut(q, kk, k))?;
    exec.copy(k, k, op(v, 0, m), op_mut(q, 2 * kk, k))?;
    let mut g = vec![T::ZERO; 3 * kk];
    exec.download(q, 0, 3 * kk, &mut |start, piece| {
        g[start..start + piece.len()].copy_from_slice(piece)
    })?;
    clock.end(exec, 0)?;
    let (r1, rest) = g.split_at_mut(kk);
    let (g2, q1_top) = rest.split_at(kk);
    zero_below_diagonal(k, r1);
    let pivots_ok = (0..k).all(|j| r1[j + j * k] > T::ZERO);
    if !pivots_ok || !r1.iter().all(|x| x.is_finite()) {
        return Ok(false);
    }
    clock.end(exec, 1)?;
    let defect = gram_defect(k, g2);
    if defect.is_nan() || defect > MAX_GRAM_DEFECT {
        return Ok(false);
    }
    let Some(r2) = cholesky(k, g2) else {
        return Ok(false);
    };
    let h = reconstruct(k, r1, &r2, q1_top);
    if !h.iter().all(|x| x.is_finite()) {
        return Ok(false);
    }
    clock.end(exec, 2)?;
    exec.upload(q, 0, h.len(), &mut |start, out| {
        out.copy_from_slice(&h[start..start + out.len()])
    })?;
    // τ is T's diagonal: a 1 x k copy whose source columns are k + 1 apart.
    exec.copy(1, k, op(q, 3 * kk, k + 1), op_mut(taubuf, tau_at, 1))?;
    if m > k {
        exec.trsm_right_upper(m - k, k, op(q, 2 * kk, k), op_mut(v, k, m))?;
        exec.copy(m - k, k, op(v, k, m), op_mut(p, at + k, ld))?;
    }
    exec.copy(k, k, op(q, 0, k), op_mut(p, at, ld))?;
    exec.copy(k, k, op(q, kk, k), op_mut(v, 0, m))?;
    let z = op_mut(&mut bufs.z, 0, m);
    exec.gemm(
        false,
        false,
        m,
        k,
        k,
        T::ONE,
        op(v, 0, m),
        op(q, 3 * kk, k),
        T::ZERO,
        z,
    )?;
    clock.end(exec, 3)?;
    Ok(true)
}

/// `‖G − I‖_F` of the k x k `g`.
fn gram_defect<T: Real>(k: usize, g: &[T]) -> f64 {
    let mut sum = 0.0;
    for c in 0..k {
        for r in 0..k {
            let d = g[r + c * k].to_f64() - if r == c { 1.0 } else { 0.0 };
            sum += d * d;
        }
    }
    sum.sqrt()
}

/// Zeros below the diagonal of the k x k `a` (xPOTRF leaves G's entries there).
fn zero_below_diagonal<T: Real>(k: usize, a: &mut [T]) {
    for c in 0..k {
        a[c * k + c + 1..(c + 1) * k].fill(T::ZERO);
    }
}

/// The upper triangular R with `RᵀR = G` (k x k, both triangles set), zeros below its
/// diagonal; None where G is not finite or not numerically positive definite.
fn cholesky<T: Real>(k: usize, g: &[T]) -> Option<Vec<T>> {
    if !g.iter().all(|x| x.is_finite()) {
        return None;
    }
    let mut r = vec![T::ZERO; k * k];
    for j in 0..k {
        for i in 0..=j {
            let x = g[i + j * k] - tiny::dot(&r[i * k..i * k + i], &r[j * k..j * k + i]);
            if i < j {
                r[i + j * k] = x / r[i + i * k];
            } else if x > T::ZERO {
                r[j + j * k] = x.sqrt();
            } else {
                return None;
            }
        }
    }
    r.iter().all(|x| x.is_finite()).then_some(r)
}

/// The host half of step 3 from `R₁`, `R₂` and Q₁'s top block (k x k each): returns, one after
/// the other, the panel's top block as xGEQRF leaves it (`S R₂R₁` on and above the diagonal,
/// V₁ below), V₁ (unit lower triangular, zeros above), `U R₂` and T.
fn reconstruct<T: Real>(k: usize, r1: &[T], r2: &[T], q1_top: &[T]) -> Vec<T> {
    let kk = k * k;
    // Q₂'s top block, then its LU with the signs S: V₁ strictly below the diagonal, U on and
    // above it.
    let mut lu = q1_top.to_vec();
    tiny::solve_right_upper(k, r2, &mut lu);
    let mut s = vec![T::ONE; k];
    for j in 0..k {
        let d = lu[j + j * k];
        s[j] = if d < T::ZERO { T::ONE } else { -T::ONE };
        let pivot = d - s[j];
        lu[j + j * k] = pivot;
        for x in &mut lu[j * k + j + 1..(j + 1) * k] {
            *x = *x / pivot;
        }
        let (left, right) = lu.split_at_mut((j + 1) * k);
        let l = &left[j * k + j + 1..];
        for col in right.chunks_exact_mut(k) {
            let u = col[j];
            if u != T::ZERO {
                for (x, &y) in col[j + 1..].iter_mut().zip(l) {
                    *x = *x - y * u;
                }
            }
        }
    }
    let mut out = vec![T::ZERO; 4 * kk];
    let (top, rest) = out.split_at_mut(kk);
    let (v1, rest) = rest.split_at_mut(kk);
    let (w, t) = rest.split_at_mut(kk);
    // R = R₂R₁; the top block holds S R above V₁.
    let mut r = r1.to_vec();
    tiny::multiply_left_upper(k, r2, &mut r);
    for c in 0..k {
        for (i, &si) in s.iter().enumerate() {
            let x = i + c * k;
            top[x] = if i <= c { si * r[x] } else { lu[x] };
            v1[x] = match i.cmp(&c) {
                std::cmp::Ordering::Less => T::ZERO,
                std::cmp::Ordering::Equal => T::ONE,
                std::cmp::Ordering::Greater => lu[x],
            };
        }
    }
    w.copy_from_slice(r2);
    tiny::multiply_left_upper(k, &lu, w);
    // T = −U S V₁⁻ᵀ (upper triangular).
    for c in 0..k {
        for i in 0..=c {
            t[i + c * k] = -(lu[i + c * k] * s[c]);
        }
    }
    tiny::solve_right_lower_transposed_unit(k, &lu, t);
    out
}

/// The k x k triangular products of the host half, column-major (k is at most the band width).
/// The system BLAS spreads even a 64 x 64 TRSM over all its threads; on the H100's 16-core
/// host their wake-ups made the panel loop's host part vary from 0.06 to 0.66 s at n = 16384
/// (kd = 64), against about 0.06 s with one thread. Each column is updated from four others
/// per pass (`combine`), so that it is loaded and stored once per four products.
mod tiny {
    use crate::real::Real;

    /// `col += Σ_i coef(i) · src[i k .. i k + col.len()]` over `cols`, four at a time.
    fn combine<T: Real>(
        col: &mut [T],
        src: &[T],
        k: usize,
        cols: std::ops::Range<usize>,
        coef: impl Fn(usize) -> T,
    ) {
        let len = col.len();
        let at = |i: usize| &src[i * k..i * k + len];
        let mut i = cols.start;
        while i + 4 <= cols.end {
            let (c0, c1, c2, c3) = (coef(i), coef(i + 1), coef(i + 2), coef(i + 3));
            let (s0, s1, s2, s3) = (at(i), at(i + 1), at(i + 2), at(i + 3));
            for x in 0..len {
                col[x] = col[x] + (c0 * s0[x] + c1 * s1[x] + (c2 * s2[x] + c3 * s3[x]));
            }
            i += 4;
        }
        for i in i..cols.end {
            let c = coef(i);
            for (x, &y) in col.iter_mut().zip(at(i)) {
                *x = *x + c * y;
            }
        }
    }

    /// R's upper triangle with zeros below (R's strict lower part is not read).
    fn upper_part<T: Real>(k: usize, r: &[T]) -> Vec<T> {
        let mut u = vec![T::ZERO; k * k];
        for c in 0..k {
            u[c * k..c * k + c + 1].copy_from_slice(&r[c * k..c * k + c + 1]);
        }
        u
    }

    /// B := B R⁻¹, R upper triangular (its strict lower part is not read).
    pub fn solve_right_upper<T: Real>(k: usize, r: &[T], b: &mut [T]) {
        for j in 0..k {
            let (done, rest) = b.split_at_mut(j * k);
            let col = &mut rest[..k];
            combine(col, done, k, 0..j, |i| T::ZERO - r[i + j * k]);
            let d = r[j + j * k];
            for x in col.iter_mut() {
                *x = *x / d;
            }
        }
    }

    /// B := R B, R upper triangular (its strict lower part is not read).
    pub fn multiply_left_upper<T: Real>(k: usize, r: &[T], b: &mut [T]) {
        let u = upper_part(k, r);
        let mut out = vec![T::ZERO; k];
        for col in b.chunks_exact_mut(k) {
            // Rows past the column's last nonzero entry get nothing (B is often triangular).
            let used = col.iter().rposition(|x| *x != T::ZERO).map_or(0, |l| l + 1);
            out.fill(T::ZERO);
            combine(&mut out[..used], &u, k, 0..used, |l| col[l]);
            col[..used].copy_from_slice(&out[..used]);
        }
    }

    /// B := B L⁻ᵀ, L unit lower triangular (its diagonal and upper part are not read).
    pub fn solve_right_lower_transposed_unit<T: Real>(k: usize, l: &[T], b: &mut [T]) {
        for j in 0..k {
            let (done, rest) = b.split_at_mut(j * k);
            combine(&mut rest[..k], done, k, 0..j, |i| T::ZERO - l[j + i * k]);
        }
    }

    /// `Σ a_i b_i` with four partial sums.
    pub fn dot<T: Real>(a: &[T], b: &[T]) -> T {
        let mut s = [T::ZERO; 4];
        let (a4, b4) = (a.chunks_exact(4), b.chunks_exact(4));
        let (ra, rb) = (a4.remainder(), b4.remainder());
        for (x, y) in a4.zip(b4) {
            for q in 0..4 {
                s[q] = s[q] + x[q] * y[q];
            }
        }
        let tail = ra.iter().zip(rb).fold(T::ZERO, |t, (&x, &y)| t + x * y);
        (s[0] + s[1]) + (s[2] + s[3]) + tail
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sbr::executor::cpu::CpuExecutor;
    use crate::testmat::Rng;

    /// Runs [`factor`] on the CPU executor for the m x k `p` (leading dimension m + 3, in the
    /// middle of a larger buffer as a resident panel is); returns the factored panel, τ, V, Z.
    #[allow(clippy::type_complexity)]
    fn run(p: &[f64], m: usize, k: usize) -> Option<(Vec<f64>, Vec<f64>, Vec<f64>, Vec<f64>)> {
        let (ld, at) = (m + 3, 2);
        let mut whole = vec![f64::NAN; ld * (k + 1)];
        for c in 0..k {
            whole[at + c * ld..][..m].copy_from_slice(&p[c * m..][..m]);
        }
        let before = whole.clone();
        let mut exec = CpuExecutor::new(u64::MAX);
        let mut bufs = PanelSet {
            v: vec![0.0; m * k],
            z: vec![0.0; m * k],
            s: vec![0.0; k * k],
            t: vec![0.0; k * k],
            q: vec![0.0; scratch_len(k)],
        };
        let mut taubuf = vec![7.0; k + 5];
        let panel = op_mut(&mut whole, at, ld);
        let done = factor(&mut exec, panel, &mut taubuf, &mut bufs, m, k, 5, false).unwrap();
        if !done {
            assert!(
                whole
                    .iter()
                    .zip(&before)
                    .all(|(x, y)| x.to_bits() == y.to_bits()),
                "a refused panel was written"
            );
            assert!(
                taubuf.iter().all(|&x| x == 7.0),
                "τ written for a refused panel"
            );
            return None;
        }
        let mut a = vec![0.0; m * k];
        for c in 0..k {
            a[c * m..][..m].copy_from_slice(&whole[at + c * ld..][..m]);
        }
        Some((a, taubuf[5..].to_vec(), bufs.v, bufs.z))
    }

    /// `H₁ ⋯ H_k` applied to the m x n `x` (leading dimension m), `H_j = I − τ_j v_j v_jᵀ`.
    fn apply_q(v: &[f64], tau: &[f64], m: usize, k: usize, x: &mut [f64], n: usize) {
        for j in (0..k).rev() {
            let vj = &v[j * m..][..m];
            for c in 0..n {
                let col = &mut x[c * m..][..m];
                let d: f64 = vj.iter().zip(col.iter()).map(|(a, b)| a * b).sum();
                for (y, a) in col.iter_mut().zip(vj) {
                    *y -= tau[j] * d * a;
                }
            }
        }
    }

    /// The panel's result against the exact properties of a Householder QR of `p`:
    /// `H₁ ⋯ H_k [R; 0] = P`, `Q = H₁ ⋯ H_k` orthogonal, V as stored in the panel, `Z = V T`
    /// with xLARFT's T, and R equal to xGEQRF's (same signs, same τ up to rounding).
    fn check(p: &[f64], m: usize, k: usize, cond: f64, what: &str) {
        let (a, tau, v, z) = run(p, m, k).unwrap_or_else(|| panic!("{what}: refused"));
        let eps = f64::EPSILON;
        let norm = p.iter().fold(0.0f64, |x, y| x.max(y.abs()));
        // V in the panel below the diagonal, unit diagonal and zeros above in `v`.
        for c in 0..k {
            for r in 0..m {
                let want = match r.cmp(&c) {
                    std::cmp::Ordering::Less => 0.0,
                    std::cmp::Ordering::Equal => 1.0,
                    std::cmp::Ordering::Greater => a[r + c * m],
                };
                assert_eq!(v[r + c * m], want, "{what}: V({r},{c})");
            }
        }
        // H₁ ⋯ H_k [R; 0] = P.
        let mut x = vec![0.0; m * k];
        for c in 0..k {
            for r in 0..=c {
                x[r + c * m] = a[r + c * m];
            }
        }
        apply_q(&v, &tau, m, k, &mut x, k);
        let res = x
            .iter()
            .zip(p)
            .fold(0.0f64, |e, (x, y)| e.max((x - y).abs()));
        assert!(
            res <= 4.0 * (m as f64) * eps * norm,
            "{what}: |QR − P| = {res:e}"
        );
        // Q orthogonal: QᵀQ = I on its m columns.
        let mut q = vec![0.0; m * m];
        for j in 0..m {
            q[j + j * m] = 1.0;
        }
        apply_q(&v, &tau, m, k, &mut q, m);
        let mut qtq = vec![0.0; m * m];
        f64::gemm(b'T', b'N', m, m, m, 1.0, (&q, m), (&q, m), 0.0, &mut qtq, m);
        for c in 0..m {
            for r in 0..m {
                let d = (qtq[r + c * m] - if r == c { 1.0 } else { 0.0 }).abs();
                assert!(
                    d <= 4.0 * (m as f64) * eps,
                    "{what}: QᵀQ({r},{c}) off by {d:e}"
                );
            }
        }
        // Z = V T with T from the stored V and τ.
        let mut t = vec![0.0; k * k];
        f64::larft(m, k, (&v, m), &tau, &mut t, k);
        let mut zt = vec![0.0; m * k];
        f64::gemm(b'N', b'N', m, k, k, 1.0, (&v, m), (&t, k), 0.0, &mut zt, m);
        let dz = z
            .iter()
            .zip(&zt)
            .fold(0.0f64, |e, (x, y)| e.max((x - y).abs()));
        assert!(
            dz <= 8.0 * (m as f64) * eps,
            "{what}: Z − V T off by {dz:e}"
        );
        // xGEQRF's R and τ: the same signs, equal to within the conditioning of the panel.
        let mut g = p.to_vec();
        let mut tau_l = vec![0.0; k];
        assert_eq!(f64::geqrf(m, k, &mut g, m, &mut tau_l), 0);
        let tol = 8.0 * (m as f64) * eps * cond;
        for c in 0..k {
            assert!(
                (tau[c] - tau_l[c]).abs() <= tol,
                "{what}: τ{c} {} vs {}",
                tau[c],
                tau_l[c]
            );
            for r in 0..=c {
                let (x, y) = (a[r + c * m], g[r + c * m]);
                assert!(
                    (x - y).abs() <= tol * norm * (m as f64).sqrt(),
                    "{what}: R({r},{c}) {x} vs {y}"
                );
            }
        }
    }

    fn random(m: usize, k: usize, rng: &mut Rng) -> Vec<f64> {
        (0..m * k).map(|_| rng.range(-1.0, 1.0)).collect()
    }

    /// Random panels of the shapes the reduction meets (tall, barely tall, one column), and
    /// one with columns graded over 10⁶ (κ ≈ 10⁶, G₁ at 10¹²: still within CholeskyQR2's
    /// reach in double precision).
    /// The k x k kernels against the BLAS's TRSM and TRMM and LAPACK's POTRF (both within a
    /// few ulps: the triangles are well conditioned), their unread triangles holding NaN.
    #[test]
    fn tiny_kernels_match_blas() {
        use crate::lapack::Triangular;
        use crate::lapack::TriangularOp::{Multiply, Solve};
        let mut rng = Rng::new(crate::testmat::seed_from_time());
        let k = 37;
        let mut rand = |diag: f64, keep: &dyn Fn(usize, usize) -> bool| -> Vec<f64> {
            let mut a = vec![f64::NAN; k * k];
            for c in 0..k {
                for r in 0..k {
                    if keep(r, c) {
                        a[r + c * k] = rng.range(-0.5, 0.5) + if r == c { diag } else { 0.0 };
                    }
                }
            }
            a
        };
        let upper = rand(4.0, &|r, c| r <= c);
        let unit_lower = rand(0.0, &|r, c| r > c);
        let b = rand(0.0, &|_, _| true);
        let close = |x: &[f64], y: &[f64], what: &str| {
            for (q, (a, b)) in x.iter().zip(y).enumerate() {
                assert!(
                    (a - b).abs() <= 1e-13 * (1.0 + b.abs()),
                    "{what}: entry {q}: {a} vs {b}"
                );
            }
        };
        let (mut got, mut want) = (b.clone(), b.clone());
        tiny::solve_right_upper(k, &upper, &mut got);
        f64::triangular(Solve, *b"RUNN", k, k, 1.0, (&upper, k), &mut want, k);
        close(&got, &want, "B R⁻¹");
        let (mut got, mut want) = (b.clone(), b.clone());
        tiny::multiply_left_upper(k, &upper, &mut got);
        f64::triangular(Multiply, *b"LUNN", k, k, 1.0, (&upper, k), &mut want, k);
        close(&got, &want, "R B");
        let (mut got, mut want) = (b.clone(), b.clone());
        tiny::solve_right_lower_transposed_unit(k, &unit_lower, &mut got);
        f64::triangular(Solve, *b"RLTU", k, k, 1.0, (&unit_lower, k), &mut want, k);
        close(&got, &want, "B L⁻ᵀ");
        // G = RᵀR of the upper triangle (zeros below), then Cholesky back.
        let r0: Vec<f64> = (0..k * k)
            .map(|q| if q % k <= q / k { upper[q] } else { 0.0 })
            .collect();
        let mut g = vec![0.0; k * k];
        for c in 0..k {
            for r in 0..k {
                g[r + c * k] = (0..k).map(|p| r0[p + r * k] * r0[p + c * k]).sum();
            }
        }
        let mut want = g.clone();
        assert_eq!(f64::potrf_upper(k, &mut want, k), 0);
        let want: Vec<f64> = (0..k * k)
            .map(|q| if q % k <= q / k { want[q] } else { 0.0 })
            .collect();
        close(
            &cholesky(k, &g).expect("positive definite"),
            &want,
            "Cholesky",
        );
        g[5 + 5 * k] = -1.0;
        assert!(cholesky(k, &g).is_none(), "an indefinite G must be refused");
    }

    #[test]
    fn panels_match_householder_qr() {
        let seed = crate::testmat::seed_from_time();
        let mut rng = Rng::new(seed);
        for &(m, k) in &[(300, 16), (97, 32), (41, 40), (200, 1), (65, 64)] {
            let p = random(m, k, &mut rng);
            check(&p, m, k, 1e3, &format!("{m}x{k} seed {seed}"));
        }
        let (m, k) = (150, 12);
        let mut p = random(m, k, &mut rng);
        for c in 0..k {
            let scale = 10f64.powf(-6.0 * c as f64 / (k - 1) as f64);
            for x in &mut p[c * m..][..m] {
                *x *= scale;
            }
        }
        check(&p, m, k, 1e6, &format!("graded seed {seed}"));
    }

    /// Panels CholeskyQR2 cannot factor are refused untouched: a zero column (rank
    /// deficiency), two equal columns, columns 10¹⁰ apart (G₁'s Cholesky is meaningless),
    /// NaN, entries whose squares overflow, and panels not taller than wide.
    #[test]
    fn hard_panels_are_refused() {
        let seed = crate::testmat::seed_from_time();
        let mut rng = Rng::new(seed);
        let (m, k) = (80, 6);
        let what = format!("seed {seed}");
        let mut p = random(m, k, &mut rng);
        p[2 * m..3 * m].fill(0.0);
        assert!(run(&p, m, k).is_none(), "zero column {what}");
        let mut p = random(m, k, &mut rng);
        p.copy_within(0..m, 4 * m);
        assert!(run(&p, m, k).is_none(), "equal columns {what}");
        let mut p = random(m, k, &mut rng);
        let c: Vec<f64> = (0..m).map(|r| p[r] + 1e-10 * p[r + m]).collect();
        p[3 * m..4 * m].copy_from_slice(&c);
        assert!(run(&p, m, k).is_none(), "nearly dependent columns {what}");
        let mut p = random(m, k, &mut rng);
        p[7] = f64::NAN;
        assert!(run(&p, m, k).is_none(), "NaN {what}");
        let mut p = random(m, k, &mut rng);
        p[m + 3] = 1e200;
        assert!(run(&p, m, k).is_none(), "overflow {what}");
        let p = random(5, k, &mut rng);
        assert!(run(&p, 5, k).is_none(), "wide {what}");
        let p = random(k, k, &mut rng);
        assert!(run(&p, k, k).is_none(), "square {what}");
    }
}
