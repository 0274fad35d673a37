//! The verified solver `dgesv_verified` (the paper's Algorithm 1.2 after Hammer et al.):
//!
//! 1. R ≈ A⁻¹ from an LU factorization; x̃ = R·b.
//! 2. Residual iteration: d = b − A·x̃ in twofold precision (Ogita–Rump–Oishi Dot2), x̃ += R·d.
//! 3. Enclosures [C] ⊇ I − R·A and [z] ⊇ R·(b − A·x̃), the residual's exact value enclosed by
//!    bounding the Dot2 tail with directed sums.
//! 4. Verification: with ε-inflation, [y] ← [z] + [C]·[y]; once the new [y] lies in the interior
//!    of the old one, R and A are nonsingular and A⁻¹b ∈ x̃ + [y] (Rump's theorem).
//!
//! The algorithm is written once here; an [`Engine`] (CPU or GPU) does the O(n³) and O(n²)
//! work, the O(n) interval bookkeeping stays on the host.

use super::round::{self, Dir};
use super::{alloc, NoMemory};
use crate::lapack::Dense;
use std::ops::Range;

/// The per-engine operations; vectors are n × nrhs, column-major with leading dimension n, on
/// the host.
pub trait Engine {
    type Error;
    /// Factors A and forms R ≈ A⁻¹. `Ok(Some(i))`: U(i,i) is exactly zero (1-based).
    fn invert(&mut self) -> Result<Option<usize>, Self::Error>;
    /// `out = fl(R·v)`.
    fn apply_r(&mut self, v: &[f64], out: &mut [f64]) -> Result<(), Self::Error>;
    /// For `x`: `d ≈ b − A·x` (Dot2, nearest) and `lo ≤ b − A·x ≤ hi` exactly.
    fn residual(
        &mut self,
        x: &[f64],
        d: &mut [f64],
        lo: &mut [f64],
        hi: &mut [f64],
    ) -> Result<(), Self::Error>;
    /// Builds and keeps [C] ⊇ I − R·A; `false` if some bound is not finite.
    fn build_c(&mut self) -> Result<bool, Self::Error>;
    /// `[lo, hi] ⊇ R·⟨vm, vr⟩` (midpoint, radius).
    fn enclose_r(
        &mut self,
        vm: &[f64],
        vr: &[f64],
        lo: &mut [f64],
        hi: &mut [f64],
    ) -> Result<(), Self::Error>;
    /// `[lo, hi] ⊇ [C]·⟨vm, vr⟩`.
    fn enclose_c(
        &mut self,
        vm: &[f64],
        vr: &[f64],
        lo: &mut [f64],
        hi: &mut [f64],
    ) -> Result<(), Self::Error>;
}

/// Most residual-iteration steps, and most verification steps (the paper's p_max).
const MAX_REFINE: usize = 8;
const MAX_VERIFY: usize = 10;
/// ε-inflation: each step widens [y] by this fraction of its width on both sides, plus the
/// smallest normal number so that a point interval gains an interior.
const INFLATE: f64 = 0.1;

/// What the solver found.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// 0: every column verified; i in 1..=n: U(i,i) = 0 exactly; n + 1: some column not verified.
    pub info: i32,
    /// Per column: whether its enclosure is verified (unverified columns are [−∞, +∞]).
    pub verified: Vec<bool>,
    /// Residual-iteration and verification steps taken.
    pub refine_steps: usize,
    pub verify_steps: usize,
}

/// The outcome when nothing can be verified (INFO = n + 1): every column [−∞, +∞].
/// [`NoMemory`] (the per-column flags cannot be allocated): the outputs are untouched.
pub fn unverifiable(
    n: usize,
    nrhs: usize,
    x_inf: &mut [f64],
    x_sup: &mut [f64],
    ldx: usize,
) -> Result<Outcome, NoMemory> {
    let verified = alloc(nrhs, false)?;
    for c in 0..nrhs {
        x_inf[c * ldx..c * ldx + n].fill(f64::NEG_INFINITY);
        x_sup[c * ldx..c * ldx + n].fill(f64::INFINITY);
    }
    Ok(Outcome {
        info: n as i32 + 1,
        verified,
        refine_steps: 0,
        verify_steps: 0,
    })
}

/// The host workspace of [`solve_in`]: every vector it needs (n × nrhs each), allocated at
/// once, before anything is computed.
pub struct Workspace {
    bp: Vec<f64>,
    x: Vec<f64>,
    d: Vec<f64>,
    lo: Vec<f64>,
    hi: Vec<f64>,
    dx: Vec<f64>,
    vm: Vec<f64>,
    vr: Vec<f64>,
    z_lo: Vec<f64>,
    z_hi: Vec<f64>,
    y_lo: Vec<f64>,
    y_hi: Vec<f64>,
    cy_lo: Vec<f64>,
    cy_hi: Vec<f64>,
    verified: Vec<bool>,
}

impl Workspace {
    /// Vectors of n × nrhs entries the solver holds.
    const VECTORS: usize = 14;

    /// Bytes of the workspace of an n × nrhs solve.
    pub fn bytes(n: usize, nrhs: usize) -> usize {
        (n.saturating_mul(nrhs))
            .saturating_mul(8 * Self::VECTORS)
            .saturating_add(nrhs)
    }

    /// The workspace of an n × nrhs solve, or [`NoMemory`] (then nothing is held).
    pub fn try_new(n: usize, nrhs: usize) -> Result<Workspace, NoMemory> {
        let len = n.saturating_mul(nrhs);
        let fail = |_| NoMemory {
            bytes: Self::bytes(n, nrhs),
        };
        let v = || alloc(len, 0.0).map_err(fail);
        Ok(Workspace {
            bp: v()?,
            x: v()?,
            d: v()?,
            lo: v()?,
            hi: v()?,
            dx: v()?,
            vm: v()?,
            vr: v()?,
            z_lo: v()?,
            z_hi: v()?,
            y_lo: v()?,
            y_hi: v()?,
            cy_lo: v()?,
            cy_hi: v()?,
            verified: alloc(nrhs, false).map_err(fail)?,
        })
    }
}

/// [`solve_in`] with a workspace allocated here; aborts if it cannot be allocated (for tools:
/// the library allocates a [`Workspace`] first and calls [`solve_in`]).
#[allow(clippy::too_many_arguments)]
pub fn solve<E: Engine>(
    engine: &mut E,
    n: usize,
    nrhs: usize,
    b: &[f64],
    ldb: usize,
    x_inf: &mut [f64],
    x_sup: &mut [f64],
    ldx: usize,
) -> Result<Outcome, E::Error> {
    let mut ws = Workspace::try_new(n, nrhs).unwrap_or_else(|e| panic!("{e}"));
    solve_in(engine, &mut ws, n, nrhs, b, ldb, x_inf, x_sup, ldx)
}

/// Solves with `engine` on the workspace `ws` (of an n × nrhs solve; used up: one call per
/// workspace), writing the enclosures (n × nrhs, leading dimension `ldx`). Allocates nothing
/// whose size depends on n or nrhs.
#[allow(clippy::too_many_arguments)]
pub fn solve_in<E: Engine>(
    engine: &mut E,
    ws: &mut Workspace,
    n: usize,
    nrhs: usize,
    b: &[f64],
    ldb: usize,
    x_inf: &mut [f64],
    x_sup: &mut [f64],
    ldx: usize,
) -> Result<Outcome, E::Error> {
    let len = n * nrhs;
    assert!(
        ws.x.len() == len && ws.verified.len() == nrhs,
        "the workspace of another size"
    );
    let mut outcome = Outcome {
        info: 0,
        verified: std::mem::take(&mut ws.verified),
        refine_steps: 0,
        verify_steps: 0,
    };
    let Workspace {
        bp,
        x,
        d,
        lo,
        hi,
        dx,
        vm,
        vr,
        z_lo,
        z_hi,
        y_lo,
        y_hi,
        cy_lo,
        cy_hi,
        ..
    } = ws;
    let unbounded = |x_inf: &mut [f64], x_sup: &mut [f64], cols: &[bool]| {
        for (c, _) in cols.iter().enumerate().filter(|(_, v)| !**v) {
            for i in 0..n {
                x_inf[i + c * ldx] = f64::NEG_INFINITY;
                x_sup[i + c * ldx] = f64::INFINITY;
            }
        }
    };
    if let Some(i) = engine.invert()? {
        outcome.info = i as i32;
        unbounded(x_inf, x_sup, &outcome.verified);
        return Ok(outcome);
    }

    // x̃ = R·b, then residual iteration while the correction keeps shrinking.
    for c in 0..nrhs {
        bp[c * n..(c + 1) * n].copy_from_slice(&b[c * ldb..c * ldb + n]);
    }
    engine.apply_r(bp, x)?;
    let mut last = f64::INFINITY;
    for _ in 0..MAX_REFINE {
        engine.residual(x, d, lo, hi)?;
        engine.apply_r(d, dx)?;
        outcome.refine_steps += 1;
        // Largest correction relative to its column of x̃.
        let mut rel = 0.0f64;
        for c in 0..nrhs {
            let xmax = x[c * n..(c + 1) * n]
                .iter()
                .fold(0.0f64, |a, v| a.max(v.abs()));
            let dmax = dx[c * n..(c + 1) * n]
                .iter()
                .fold(0.0f64, |a, v| a.max(v.abs()));
            rel = rel.max(if xmax > 0.0 { dmax / xmax } else { dmax });
        }
        if !rel.is_finite() || rel >= last {
            break;
        }
        for (xi, di) in x.iter_mut().zip(dx.iter()) {
            *xi += di;
        }
        last = rel;
        if rel <= round::U {
            break;
        }
    }

    if !engine.build_c()? {
        outcome.info = n as i32 + 1;
        unbounded(x_inf, x_sup, &outcome.verified);
        return Ok(outcome);
    }
    // [z] ⊇ R·(b − A·x̃), from the residual's exact enclosure [lo, hi].
    engine.residual(x, d, lo, hi)?;
    for i in 0..len {
        (vm[i], vr[i]) = super::mid_rad(lo[i], hi[i]);
    }
    engine.enclose_r(vm, vr, z_lo, z_hi)?;

    // Verification iteration on [y], starting from [z].
    y_lo.copy_from_slice(z_lo);
    y_hi.copy_from_slice(z_hi);
    for _ in 0..MAX_VERIFY {
        if outcome.verified.iter().all(|v| *v) {
            break;
        }
        outcome.verify_steps += 1;
        for i in 0..len {
            let w = round::sub(y_hi[i], y_lo[i], Dir::Up);
            let grow = round::add(round::mul(INFLATE, w, Dir::Up), f64::MIN_POSITIVE, Dir::Up);
            y_lo[i] = round::sub(y_lo[i], grow, Dir::Down);
            y_hi[i] = round::add(y_hi[i], grow, Dir::Up);
            (vm[i], vr[i]) = super::mid_rad(y_lo[i], y_hi[i]);
        }
        engine.enclose_c(vm, vr, cy_lo, cy_hi)?;
        for c in 0..nrhs {
            if outcome.verified[c] {
                continue;
            }
            let mut inside = true;
            for i in c * n..(c + 1) * n {
                let new_lo = round::add(z_lo[i], cy_lo[i], Dir::Down);
                let new_hi = round::add(z_hi[i], cy_hi[i], Dir::Up);
                // Strictly inside the interior (NaN compares false: not verified).
                inside &= new_lo > y_lo[i] && new_hi < y_hi[i];
                y_lo[i] = new_lo;
                y_hi[i] = new_hi;
            }
            if inside {
                outcome.verified[c] = true;
                for i in 0..n {
                    let (k, o) = (c * n + i, i + c * ldx);
                    x_inf[o] = round::add(x[k], y_lo[k], Dir::Down);
                    x_sup[o] = round::add(x[k], y_hi[k], Dir::Up);
                }
            }
        }
    }
    if !outcome.verified.iter().all(|v| *v) {
        outcome.info = n as i32 + 1;
        unbounded(x_inf, x_sup, &outcome.verified);
    }
    Ok(outcome)
}

/// One Dot2 step for the residual `b_i − Σ a_il·x_l`: adds `−a·x` to the running sum `p`
/// (error-free), the rounded tail `s`, and the tail's directed bounds `(t_lo, t_hi)`.
#[inline(always)]
pub fn dot2_step(a: f64, x: f64, p: &mut f64, s: &mut f64, t_lo: &mut f64, t_hi: &mut f64) {
    let (h, r) = round::two_prod(-a, x);
    let (p2, q) = round::two_sum(*p, h);
    *p = p2;
    let qr = q + r;
    *s += qr;
    *t_lo = round::add(*t_lo, round::add(q, r, Dir::Down), Dir::Down);
    *t_hi = round::add(*t_hi, round::add(q, r, Dir::Up), Dir::Up);
}

/// Finishes a Dot2 residual of `terms` products: `(d, lo, hi)` with `d` the nearest value and
/// `lo ≤ exact ≤ hi`. A product's TwoProduct error can itself underflow (η/2 each): `terms·η`
/// covers it.
#[inline(always)]
pub fn dot2_finish(p: f64, s: f64, t_lo: f64, t_hi: f64, terms: usize) -> (f64, f64, f64) {
    let slack = round::mul(terms as f64, round::ETA, Dir::Up);
    let lo = round::sub(round::add(p, t_lo, Dir::Down), slack, Dir::Down);
    let hi = round::add(round::add(p, t_hi, Dir::Up), slack, Dir::Up);
    (p + s, lo, hi)
}

/// The elementwise step of [C] ⊇ I − R·A from `P = fl(R·A)` and upper bounds of the row norms
/// of R and column norms of A: `|P − R·A| ≤ γ_n·|R|·|A| + n·η` and, by Cauchy–Schwarz,
/// `(|R|·|A|)_ij ≤ ‖R_i,:‖₂·‖A_:,j‖₂`. Returns the midpoint and radius of `[C]_ij`.
#[inline(always)]
pub fn c_entry(
    p: f64,
    diagonal: bool,
    r_norm: f64,
    a_norm: f64,
    gamma: f64,
    n_eta: f64,
) -> (f64, f64) {
    let e = round::add(
        round::mul(gamma, round::mul(r_norm, a_norm, Dir::Up), Dir::Up),
        n_eta,
        Dir::Up,
    );
    let delta = if diagonal { 1.0 } else { 0.0 };
    let (lo, hi) = (
        round::sub(delta, p, Dir::Down),
        round::sub(delta, p, Dir::Up),
    );
    let (mid, rad) = super::mid_rad(lo, hi);
    (mid, round::add(rad, e, Dir::Up))
}

/// An upper bound of the 2-norm of `x`.
pub fn norm2_up(x: impl Iterator<Item = f64>) -> f64 {
    let ss = x.fold(0.0, |s, v| {
        round::add(s, round::mul(v, v, Dir::Up), Dir::Up)
    });
    round::sqrt(ss, Dir::Up)
}

/// `[lo, hi] ⊇ M·⟨vm, vr⟩ (+ [−Mr, Mr]·⟨vm, vr⟩)` for the rows `rows` of the column-major
/// n × n `m` (and `mr`), walking columns so that the matrix is read contiguously. `lo`, `hi`
/// and the scratch `r` hold the rows' entries (`lo[0]` is row `rows.start`).
#[allow(clippy::too_many_arguments)]
pub fn enclose_rows(
    m: &[f64],
    mr: Option<&[f64]>,
    n: usize,
    rows: Range<usize>,
    vm: &[f64],
    vr: &[f64],
    lo: &mut [f64],
    hi: &mut [f64],
    r: &mut [f64],
) {
    let len = rows.len();
    let (s_lo, s_hi, r) = (&mut lo[..len], &mut hi[..len], &mut r[..len]);
    for v in [&mut *s_lo, &mut *s_hi, &mut *r] {
        v.fill(0.0);
    }
    for l in 0..n {
        let col = &m[l * n + rows.start..l * n + rows.end];
        let (x, xr) = (vm[l], vr[l]);
        let mag = round::add(x.abs(), xr, Dir::Up);
        for (k, a) in col.iter().enumerate() {
            s_lo[k] = round::add(s_lo[k], round::mul(*a, x, Dir::Down), Dir::Down);
            s_hi[k] = round::add(s_hi[k], round::mul(*a, x, Dir::Up), Dir::Up);
            r[k] = round::add(r[k], round::mul(a.abs(), xr, Dir::Up), Dir::Up);
        }
        if let Some(mr) = mr {
            for (k, a) in mr[l * n + rows.start..l * n + rows.end].iter().enumerate() {
                r[k] = round::add(r[k], round::mul(*a, mag, Dir::Up), Dir::Up);
            }
        }
    }
    for k in 0..len {
        s_lo[k] = round::sub(s_lo[k], r[k], Dir::Down);
        s_hi[k] = round::add(s_hi[k], r[k], Dir::Up);
    }
}

/// One block of [`par_rows`]: its rows and their pieces of each array.
type RowBlock<'a, const K: usize> = (Range<usize>, [&'a mut [f64]; K]);

/// At most this many row blocks (and threads) in [`par_rows`].
const MAX_BLOCKS: usize = 256;

/// Runs `f(rows, parts)` on blocks of the rows `0..n` on the host's threads, `parts` being
/// the block's rows of each of the `K` arrays (n entries each). Allocates nothing; a thread
/// that cannot be started leaves its blocks to the others.
fn par_rows<const K: usize>(
    n: usize,
    arrays: [&mut [f64]; K],
    f: impl Fn(Range<usize>, [&mut [f64]; K]) + Sync,
) {
    let cores = crate::host::threads();
    // About 64K matrix entries per block is where a thread pays for itself.
    let threads = cores.min((n * n) >> 16).clamp(1, MAX_BLOCKS);
    let per = n.div_ceil(threads).max(1);
    let mut blocks: [Option<RowBlock<'_, K>>; MAX_BLOCKS] = std::array::from_fn(|_| None);
    let mut rest = arrays;
    let mut start = 0;
    for slot in blocks.iter_mut() {
        if start >= n {
            break;
        }
        let len = per.min(n - start);
        let mut heads: [&mut [f64]; K] = std::array::from_fn(|_| Default::default());
        for (head, tail) in heads.iter_mut().zip(rest.iter_mut()) {
            let (h, t) = std::mem::take(tail).split_at_mut(len);
            (*head, *tail) = (h, t);
        }
        *slot = Some((start..start + len, heads));
        start += len;
    }
    let queue = std::sync::Mutex::new(blocks);
    crate::host::workers::run_on_threads(threads, || loop {
        let next = {
            let mut q = queue.lock().unwrap_or_else(|p| p.into_inner());
            q.iter_mut().find_map(Option::take)
        };
        match next {
            Some((rows, parts)) => f(rows, parts),
            None => break,
        }
    });
}

/// The CPU engine: LAPACK's LU and BLAS's DGEMM, the rest in the loops above. Its host
/// memory (three n × n matrices and a few vectors of n) is allocated by [`CpuEngine::try_new`],
/// before anything is computed.
pub struct CpuEngine<'a> {
    n: usize,
    a: &'a [f64],
    lda: usize,
    b: &'a [f64],
    ldb: usize,
    /// The LU factors, then (once R is formed) the radii of [C].
    lu_c_rad: Vec<f64>,
    ipiv: Vec<i32>,
    r: Vec<f64>,
    /// fl(R·A), then the midpoints of [C].
    c_mid: Vec<f64>,
    r_norms: Vec<f64>,
    a_norms: Vec<f64>,
    /// Per-row scratch of the residual and the enclosures.
    scratch: Vec<f64>,
}

impl<'a> CpuEngine<'a> {
    /// Bytes of host memory the engine of order `n` holds.
    pub fn bytes(n: usize) -> usize {
        n.saturating_mul(n)
            .saturating_mul(3 * 8)
            .saturating_add(n.saturating_mul(4 + 3 * 8))
    }

    /// The engine for A (n × n) and B, or [`NoMemory`] when its memory cannot be allocated.
    pub fn try_new(
        n: usize,
        a: &'a [f64],
        lda: usize,
        b: &'a [f64],
        ldb: usize,
    ) -> Result<Self, NoMemory> {
        let fail = |_| NoMemory {
            bytes: Self::bytes(n),
        };
        let nn = n.saturating_mul(n);
        Ok(CpuEngine {
            n,
            a,
            lda,
            b,
            ldb,
            lu_c_rad: alloc(nn, 0.0).map_err(fail)?,
            ipiv: alloc(n, 0).map_err(fail)?,
            r: alloc(nn, 0.0).map_err(fail)?,
            c_mid: alloc(nn, 0.0).map_err(fail)?,
            r_norms: alloc(n, 0.0).map_err(fail)?,
            a_norms: alloc(n, 0.0).map_err(fail)?,
            scratch: alloc(n, 0.0).map_err(fail)?,
        })
    }

    /// [`CpuEngine::try_new`] that aborts when the memory cannot be allocated (for tools).
    pub fn new(n: usize, a: &'a [f64], lda: usize, b: &'a [f64], ldb: usize) -> Self {
        Self::try_new(n, a, lda, b, ldb).unwrap_or_else(|e| panic!("{e}"))
    }
}

/// Stack of the thread that runs the LU (see [`CpuEngine::invert`]).
const LU_STACK: usize = 64 << 20;

impl Engine for CpuEngine<'_> {
    /// Only a thread that cannot be started (its stack is host memory).
    type Error = NoMemory;

    fn invert(&mut self) -> Result<Option<usize>, Self::Error> {
        let n = self.n;
        let (lu, ipiv, r) = (&mut self.lu_c_rad, &mut self.ipiv, &mut self.r);
        for j in 0..n {
            lu[j * n..(j + 1) * n].copy_from_slice(&self.a[j * self.lda..j * self.lda + n]);
        }
        r.fill(0.0);
        for i in 0..n {
            r[i + i * n] = 1.0;
        }
        // OpenBLAS's threaded DGETRF keeps large buffers on the stack and overflows the 2 MiB
        // of a typical secondary thread: run it on a thread with room.
        let info = crate::host::workers::run_with_stack(LU_STACK, || {
            let info = crate::lapack::dgetrf(n, lu, n, ipiv);
            if info == 0 {
                crate::lapack::dgetrs(n, n, lu, n, ipiv, r, n);
            }
            info
        });
        match info {
            Ok(Ok(0)) => Ok(None),
            Ok(Ok(i)) if i > 0 => Ok(Some(i as usize)),
            Ok(Ok(i)) => panic!("DGETRF rejected its arguments (INFO {i})"),
            Ok(Err(p)) => std::panic::resume_unwind(p),
            Err(_) => Err(NoMemory { bytes: LU_STACK }),
        }
    }

    fn apply_r(&mut self, v: &[f64], out: &mut [f64]) -> Result<(), Self::Error> {
        let (n, nrhs) = (self.n, v.len() / self.n.max(1));
        <f64 as Dense>::gemm(
            b'N',
            b'N',
            n,
            nrhs,
            n,
            1.0,
            (&self.r, n),
            (v, n),
            0.0,
            out,
            n,
        );
        Ok(())
    }

    fn residual(
        &mut self,
        x: &[f64],
        d: &mut [f64],
        lo: &mut [f64],
        hi: &mut [f64],
    ) -> Result<(), Self::Error> {
        let n = self.n;
        for c in 0..x.len() / n.max(1) {
            let xc = &x[c * n..(c + 1) * n];
            let b = &self.b[c * self.ldb..c * self.ldb + n];
            let (a, lda) = (self.a, self.lda);
            let col = c * n..(c + 1) * n;
            let arrays = [
                &mut d[col.clone()],
                &mut lo[col.clone()],
                &mut hi[col],
                &mut self.scratch[..],
            ];
            // Column by column, so that A is read contiguously; d holds the running sum p,
            // lo and hi the tail's bounds, the scratch its rounded value s.
            par_rows(n, arrays, |rows, [p, t_lo, t_hi, s]| {
                p.copy_from_slice(&b[rows.clone()]);
                for v in [&mut *t_lo, &mut *t_hi, &mut *s] {
                    v.fill(0.0);
                }
                for (l, xl) in xc.iter().enumerate() {
                    let col = &a[l * lda + rows.start..l * lda + rows.end];
                    for k in 0..rows.len() {
                        dot2_step(
                            col[k],
                            *xl,
                            &mut p[k],
                            &mut s[k],
                            &mut t_lo[k],
                            &mut t_hi[k],
                        );
                    }
                }
                for k in 0..rows.len() {
                    (p[k], t_lo[k], t_hi[k]) = dot2_finish(p[k], s[k], t_lo[k], t_hi[k], n);
                }
            });
        }
        Ok(())
    }

    fn build_c(&mut self) -> Result<bool, Self::Error> {
        let n = self.n;
        // P = fl(R·A) into c_mid; the LU factors are no longer needed: their array takes the
        // radii.
        let (r, p, c_rad) = (&self.r, &mut self.c_mid, &mut self.lu_c_rad);
        <f64 as Dense>::gemm(
            b'N',
            b'N',
            n,
            n,
            n,
            1.0,
            (r, n),
            (self.a, self.lda),
            0.0,
            p,
            n,
        );
        for (i, v) in self.r_norms.iter_mut().enumerate() {
            *v = norm2_up((0..n).map(|l| r[i + l * n]));
        }
        for (j, v) in self.a_norms.iter_mut().enumerate() {
            *v = norm2_up(self.a[j * self.lda..j * self.lda + n].iter().copied());
        }
        let (gamma, n_eta) = (round::gamma(n), round::mul(n as f64, round::ETA, Dir::Up));
        let mut finite = true;
        for j in 0..n {
            for i in 0..n {
                let at = i + j * n;
                let (m, rad) = c_entry(
                    p[at],
                    i == j,
                    self.r_norms[i],
                    self.a_norms[j],
                    gamma,
                    n_eta,
                );
                finite &= m.is_finite() && rad.is_finite();
                p[at] = m;
                c_rad[at] = rad;
            }
        }
        Ok(finite)
    }

    fn enclose_r(
        &mut self,
        vm: &[f64],
        vr: &[f64],
        lo: &mut [f64],
        hi: &mut [f64],
    ) -> Result<(), Self::Error> {
        self.enclose(false, vm, vr, lo, hi);
        Ok(())
    }

    fn enclose_c(
        &mut self,
        vm: &[f64],
        vr: &[f64],
        lo: &mut [f64],
        hi: &mut [f64],
    ) -> Result<(), Self::Error> {
        self.enclose(true, vm, vr, lo, hi);
        Ok(())
    }
}

impl CpuEngine<'_> {
    fn enclose(
        &mut self,
        interval_c: bool,
        vm: &[f64],
        vr: &[f64],
        lo: &mut [f64],
        hi: &mut [f64],
    ) {
        let n = self.n;
        let (m, mr) = if interval_c {
            (&self.c_mid[..], Some(&self.lu_c_rad[..]))
        } else {
            (&self.r[..], None)
        };
        for c in 0..vm.len() / n.max(1) {
            let col = c * n..(c + 1) * n;
            let (x, xr) = (&vm[col.clone()], &vr[col.clone()]);
            let arrays = [&mut lo[col.clone()], &mut hi[col], &mut self.scratch[..]];
            par_rows(n, arrays, |rows, [l, h, r]| {
                enclose_rows(m, mr, n, rows, x, xr, l, h, r)
            });
        }
    }
}
