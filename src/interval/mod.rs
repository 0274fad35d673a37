//! Guaranteed bounds for matrix products and linear systems (Dallmann, Beck, Wolff von
//! Gudenberg): a GEMM whose every operation rounds one way, the interval matrix product
//! (infimum–supremum and midpoint–radius), and a verified enclosure of the solution of `A x = b`
//! (approximate inverse, residual iteration in twofold precision, Rump's verification step).
//!
//! Column-major, f64 only. The GPU rounds with CUDA's directed-rounding intrinsics; the CPU
//! never switches the FPU's mode and builds directed results from error-free transformations
//! ([`round`]). Where a fast round-to-nearest BLAS does the work (midpoint–radius products, the
//! verified solver's `R·A`), its rounding error is bounded a priori with Higham's γ_k, which
//! holds for any summation order in IEEE double precision with or without FMA.

pub mod cpu;
pub mod gpu;
pub mod round;
pub mod verify;

use crate::dispatch::{self, Backend, Family};
use round::Dir;
use std::cmp::Ordering;
use std::time::Instant;

/// Whether an operand is used as stored or transposed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Trans {
    No,
    Yes,
}

impl Trans {
    /// The BLAS TRANS character.
    pub fn blas(self) -> u8 {
        match self {
            Trans::No => b'N',
            Trans::Yes => b'T',
        }
    }
}

/// A column-major operand as stored (`ld` ≥ its stored row count) and how it is used.
/// `op(A)[i, l]` is `data[i + l·ld]` untransposed, `data[l + i·ld]` transposed.
#[derive(Clone, Copy)]
pub struct Operand<'a> {
    pub data: &'a [f64],
    pub ld: usize,
    pub trans: Trans,
}

impl Operand<'_> {
    #[inline(always)]
    pub fn at(&self, i: usize, l: usize) -> f64 {
        match self.trans {
            Trans::No => self.data[i + l * self.ld],
            Trans::Yes => self.data[l + i * self.ld],
        }
    }

    /// Stored (rows, cols) of an operand used as `rows_op × cols_op`.
    pub fn stored_shape(&self, rows_op: usize, cols_op: usize) -> (usize, usize) {
        match self.trans {
            Trans::No => (rows_op, cols_op),
            Trans::Yes => (cols_op, rows_op),
        }
    }
}

/// An interval operand: two operands of the same shape, layout and transposition.
#[derive(Clone, Copy)]
pub struct IntervalOperand<'a> {
    pub inf: Operand<'a>,
    pub sup: Operand<'a>,
}

pub use crate::config::DigemmMethod as Method;

/// INFO when host memory that a call needs cannot be allocated (the exported routines'
/// `HYLAPACK_INFO_INTERNAL_ERROR`; the reason is printed on stderr).
pub const INFO_NO_HOST_MEMORY: i32 = -1000;

pub use crate::host::NoMemory;

/// `len` copies of `value`, or [`NoMemory`] (the family's fallible `vec![value; len]`).
pub(crate) fn alloc<T: Clone>(len: usize, value: T) -> Result<Vec<T>, NoMemory> {
    crate::host::try_vec(len, value).ok_or(NoMemory::of::<T>(len))
}

/// The size a product counts as for the GPU threshold: the cube root of `m·n·k`.
fn product_order(m: usize, n: usize, k: usize) -> usize {
    ((m as f64) * (n as f64) * (k as f64)).cbrt() as usize
}

/// `C := alpha·op(A)·op(B) + beta·C` with every operation rounded `dir`, so that (for any
/// signs of alpha and beta) C is an upper (`Up`) or lower (`Down`) bound of the exact result.
/// When `alpha < 0` the products are accumulated the other way, since `alpha·x` then
/// decreases in `x`. `beta = 0` means C is not read. Arguments are assumed checked.
/// [`NoMemory`]: the host workspace could not be allocated; C is untouched.
#[allow(clippy::too_many_arguments)]
pub fn gemm_rounded(
    dir: Dir,
    m: usize,
    n: usize,
    k: usize,
    alpha: f64,
    a: Operand,
    b: Operand,
    beta: f64,
    c: &mut [f64],
    ldc: usize,
) -> Result<Backend, NoMemory> {
    let start = Instant::now();
    if m == 0 || n == 0 {
        dispatch::finish_call("dgemm_rounded", 0, Backend::Cpu, start.elapsed(), None);
        return Ok(Backend::Cpu);
    }
    if k == 0 || alpha == 0.0 {
        // DGEMM's rule: no product at all (alpha is not multiplied, so alpha = ±∞ with K = 0
        // gives no NaN); C := beta·C rounded `dir`, C := 0 without reading it when beta = 0.
        cpu::try_gemm_rounded(dir, m, n, 0, 0.0, a, b, beta, c, ldc)?;
        dispatch::finish_call("dgemm_rounded", 0, Backend::Cpu, start.elapsed(), None);
        return Ok(Backend::Cpu);
    }
    let order = product_order(m, n, k);
    let decision = dispatch::decide(Family::Interval, order);
    let mut note = decision.why_not_gpu.clone();
    let mut backend = decision.backend;
    if backend == Backend::Gpu {
        match gpu::gemm_rounded(dir, m, n, k, alpha, a, b, beta, c, ldc) {
            Ok(()) => {}
            Err(e) => {
                note = Some(format!("GPU failed, ran on the CPU: {e}"));
                backend = Backend::Cpu;
            }
        }
    }
    if backend == Backend::Cpu {
        if let Err(e) = cpu::try_gemm_rounded(dir, m, n, k, alpha, a, b, beta, c, ldc) {
            let note = note.map(|s| format!("{s}; {e}")).unwrap_or(e.to_string());
            dispatch::finish_call(
                "dgemm_rounded",
                order,
                backend,
                start.elapsed(),
                Some(&note),
            );
            return Err(e);
        }
    }
    dispatch::finish_call(
        "dgemm_rounded",
        order,
        backend,
        start.elapsed(),
        note.as_deref(),
    );
    Ok(backend)
}

/// Why an interval operand was refused: the bounds of some entry are not a (possibly
/// unbounded) real interval (NaN, inf > sup, inf = +∞ or sup = −∞).
#[derive(Debug, PartialEq, Eq)]
pub struct BadInterval;

/// Checks the `rows × cols` stored entries of an interval operand; returns whether every bound
/// is finite.
pub fn check_interval(x: &IntervalOperand, rows: usize, cols: usize) -> Result<bool, BadInterval> {
    let mut finite = true;
    if rows == 0 {
        return Ok(true);
    }
    for j in 0..cols {
        let (lo, hi) = (&x.inf.data[j * x.inf.ld..], &x.sup.data[j * x.sup.ld..]);
        for i in 0..rows {
            let (l, h) = (lo[i], hi[i]);
            // NaN ends are bad too: they compare neither way.
            let ordered = matches!(l.partial_cmp(&h), Some(Ordering::Less | Ordering::Equal));
            if !ordered || l == f64::INFINITY || h == f64::NEG_INFINITY {
                return Err(BadInterval);
            }
            finite &= l.is_finite() && h.is_finite();
        }
    }
    Ok(finite)
}

/// `[C] := [A]·[B]`: `[C] ⊇ {A·B : A ∈ [A], B ∈ [B]}`. Returns the method and backend used.
/// The operands must have passed [`check_interval`] (`finite` is what it returned for both).
/// [`NoMemory`]: the host workspace could not be allocated; `[C]` is untouched.
#[allow(clippy::too_many_arguments)]
pub fn igemm(
    method: Method,
    finite: bool,
    m: usize,
    n: usize,
    k: usize,
    a: IntervalOperand,
    b: IntervalOperand,
    c_inf: &mut [f64],
    c_sup: &mut [f64],
    ldc: usize,
) -> Result<(Method, Backend), NoMemory> {
    let start = Instant::now();
    // The midpoint–radius form cannot hold an unbounded interval.
    let method = match method {
        Method::MidRad | Method::Auto if finite => Method::MidRad,
        _ => Method::InfSup,
    };
    if m == 0 || n == 0 {
        return Ok((method, Backend::Cpu));
    }
    if k == 0 {
        // An empty sum: [C] = [0, 0] exactly.
        for j in 0..n {
            c_inf[j * ldc..j * ldc + m].fill(0.0);
            c_sup[j * ldc..j * ldc + m].fill(0.0);
        }
        dispatch::finish_call("digemm", 0, Backend::Cpu, start.elapsed(), None);
        return Ok((method, Backend::Cpu));
    }
    let order = product_order(m, n, k);
    let decision = dispatch::decide(Family::Interval, order);
    let mut note = decision.why_not_gpu.clone();
    let mut backend = decision.backend;
    // The GPU kernels assume finite bounds (0·∞ would be NaN there).
    if backend == Backend::Gpu && !finite {
        note = Some("unbounded entries are multiplied on the CPU".into());
        backend = Backend::Cpu;
    }
    if backend == Backend::Gpu {
        let done = match method {
            Method::MidRad => gpu::igemm_midrad(m, n, k, a, b, c_inf, c_sup, ldc),
            _ => gpu::igemm_infsup(m, n, k, a, b, c_inf, c_sup, ldc),
        };
        if let Err(e) = done {
            note = Some(format!("GPU failed, ran on the CPU: {e}"));
            backend = Backend::Cpu;
        }
    }
    let mut done = Ok(());
    if backend == Backend::Cpu {
        done = match method {
            Method::MidRad => cpu::try_igemm_midrad(m, n, k, a, b, c_inf, c_sup, ldc),
            _ => cpu::igemm_infsup(m, n, k, a, b, c_inf, c_sup, ldc),
        };
        if let Err(e) = done {
            note = Some(note.map(|s| format!("{s}; {e}")).unwrap_or(e.to_string()));
        }
    }
    let note = match note {
        Some(s) => format!("method={}; {s}", method.name()),
        None => format!("method={}", method.name()),
    };
    dispatch::finish_call("digemm", order, backend, start.elapsed(), Some(&note));
    done.map(|()| (method, backend))
}

/// Turns `[lo, hi]` (elementwise) into a midpoint and a radius with `[mid ± rad] ⊇ [lo, hi]`.
#[inline(always)]
pub fn mid_rad(lo: f64, hi: f64) -> (f64, f64) {
    // Halving first cannot overflow.
    let mid = 0.5 * lo + 0.5 * hi;
    let rad = round::sub(hi, mid, Dir::Up).max(round::sub(mid, lo, Dir::Up));
    (mid, rad)
}

/// Encloses the solution of `A X = B` (`A` n×n, `B` n×nrhs): `X_inf ≤ A⁻¹B ≤ X_sup` for every
/// verified column. See [`verify`] for the algorithm and [`verify::Outcome`] for INFO.
/// [`NoMemory`]: the host workspace ([`verify::Workspace`], and the CPU engine's three n × n
/// matrices when the CPU runs) could not be allocated; the outputs are untouched.
#[allow(clippy::too_many_arguments)]
pub fn gesv_verified(
    n: usize,
    nrhs: usize,
    a: &[f64],
    lda: usize,
    b: &[f64],
    ldb: usize,
    x_inf: &mut [f64],
    x_sup: &mut [f64],
    ldx: usize,
) -> Result<(verify::Outcome, Backend), NoMemory> {
    let start = Instant::now();
    let fail = |e: NoMemory, note: Option<String>| {
        let note = note.map(|s| format!("{s}; {e}")).unwrap_or(e.to_string());
        dispatch::finish_call(
            "dgesv_verified",
            n,
            Backend::Cpu,
            start.elapsed(),
            Some(&note),
        );
        e
    };
    // A NaN or ±∞ in A is not a real matrix: nothing can be verified, and no pivot is exactly
    // zero. Both engines would reach that by different routes (cuSOLVER's and the system
    // LAPACK's LU treat NaN differently), so it is decided here, once, for both.
    if (0..n).any(|j| a[j * lda..j * lda + n].iter().any(|v| !v.is_finite())) {
        let outcome =
            verify::unverifiable(n, nrhs, x_inf, x_sup, ldx).map_err(|e| fail(e, None))?;
        let summary = "info=n+1: A has an entry that is not finite";
        dispatch::finish_call(
            "dgesv_verified",
            n,
            Backend::Cpu,
            start.elapsed(),
            Some(summary),
        );
        return Ok((outcome, Backend::Cpu));
    }
    let decision = dispatch::decide(Family::Interval, n);
    let mut note = decision.why_not_gpu.clone();
    let mut result = None;
    if decision.backend == Backend::Gpu && n > 0 && nrhs > 0 {
        let ws = verify::Workspace::try_new(n, nrhs).map_err(|e| fail(e, note.clone()))?;
        let attempt = gpu::Engine::new(n, a, lda, b, ldb).and_then(|mut e| {
            let mut ws = ws;
            verify::solve_in(&mut e, &mut ws, n, nrhs, b, ldb, x_inf, x_sup, ldx)
        });
        match attempt {
            Ok(o) => result = Some((o, Backend::Gpu)),
            Err(e) => note = Some(format!("GPU failed, ran on the CPU: {e}")),
        }
    }
    let (outcome, backend) = match result {
        Some(r) => r,
        None => {
            let cpu = verify::Workspace::try_new(n, nrhs)
                .and_then(|ws| Ok((ws, verify::CpuEngine::try_new(n, a, lda, b, ldb)?)))
                .and_then(|(mut ws, mut e)| {
                    verify::solve_in(&mut e, &mut ws, n, nrhs, b, ldb, x_inf, x_sup, ldx)
                });
            (cpu.map_err(|e| fail(e, note.clone()))?, Backend::Cpu)
        }
    };
    let summary = format!(
        "info={} refine={} verify={}{}",
        outcome.info,
        outcome.refine_steps,
        outcome.verify_steps,
        note.map(|s| format!("; {s}")).unwrap_or_default()
    );
    dispatch::finish_call(
        "dgesv_verified",
        n,
        backend,
        start.elapsed(),
        Some(&summary),
    );
    Ok((outcome, backend))
}
