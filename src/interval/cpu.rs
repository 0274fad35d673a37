//! The CPU path of the interval family: directed-rounding products emulated with error-free
//! transformations ([`super::round`]), and the midpoint–radius product on the system BLAS.
//! The elementwise steps of the midpoint–radius product live here and the GPU kernels mirror
//! them operation for operation.

use super::round::{self, Dir, ETA};
use super::{alloc, IntervalOperand, NoMemory, Operand, Trans};
use crate::lapack::Dense;

/// Threads for `work` multiply–adds: one per ~4M, at most the cores.
fn threads_for(work: f64) -> usize {
    let cores = crate::host::threads();
    cores.min((work / 4.0e6) as usize).max(1)
}

/// Runs `f(j0, count, columns)` over chunks of the `n` columns of `c` (leading dimension
/// `ldc`) on up to `threads` threads; each chunk owns its `count` columns (the last may be
/// short). A thread that cannot be started leaves its chunks to the others.
fn for_column_chunks<F>(c: &mut [f64], ldc: usize, n: usize, threads: usize, f: F)
where
    F: Fn(usize, usize, &mut [f64]) + Sync,
{
    let threads = threads.clamp(1, n.clamp(1, MAX_THREADS));
    let per = n.div_ceil(threads).max(1);
    let mut chunks: [Option<(usize, usize, &mut [f64])>; MAX_THREADS] =
        std::array::from_fn(|_| None);
    let mut rest = c;
    let mut j0 = 0;
    for slot in chunks.iter_mut() {
        if j0 >= n {
            break;
        }
        let cols = per.min(n - j0);
        let take = if j0 + cols == n {
            rest.len()
        } else {
            cols * ldc
        };
        let take = take.min(rest.len());
        let (chunk, tail) = std::mem::take(&mut rest).split_at_mut(take);
        rest = tail;
        *slot = Some((j0, cols, chunk));
        j0 += cols;
    }
    let queue = std::sync::Mutex::new(chunks);
    crate::host::workers::run_on_threads(threads, || loop {
        let next = {
            let mut q = queue.lock().unwrap_or_else(|p| p.into_inner());
            q.iter_mut().find_map(Option::take)
        };
        match next {
            Some((j0, cols, chunk)) => f(j0, cols, chunk),
            None => break,
        }
    });
}

/// At most this many column chunks (and threads) per product.
const MAX_THREADS: usize = 256;

/// `op(X)` rows (or columns, for the right operand) packed contiguously: `rows` vectors of `k`.
fn pack_rows(x: Operand, rows: usize, k: usize) -> Result<Vec<f64>, NoMemory> {
    let len = rows.saturating_mul(k);
    let mut p = Vec::new();
    p.try_reserve_exact(len).map_err(|_| NoMemory {
        bytes: len.saturating_mul(8),
    })?;
    for i in 0..rows {
        p.extend((0..k).map(|l| x.at(i, l)));
    }
    Ok(p)
}

/// `op(B)` columns packed contiguously.
fn pack_cols(b: Operand, k: usize, n: usize) -> Result<Vec<f64>, NoMemory> {
    let t = Operand {
        trans: match b.trans {
            Trans::No => Trans::Yes,
            Trans::Yes => Trans::No,
        },
        ..b
    };
    pack_rows(t, n, k)
}

/// `Σ x_l·y_l` with every product and sum rounded `dir` (four interleaved partial sums).
#[inline(always)]
fn dot_directed(x: &[f64], y: &[f64], dir: Dir) -> f64 {
    let mut acc = [0.0f64; 4];
    let (xc, yc) = (x.chunks_exact(4), y.chunks_exact(4));
    let (xr, yr) = (xc.remainder(), yc.remainder());
    for (xs, ys) in xc.zip(yc) {
        for l in 0..4 {
            acc[l] = round::add(acc[l], round::mul(xs[l], ys[l], dir), dir);
        }
    }
    for (xv, yv) in xr.iter().zip(yr) {
        acc[0] = round::add(acc[0], round::mul(*xv, *yv, dir), dir);
    }
    round::add(
        round::add(acc[0], acc[1], dir),
        round::add(acc[2], acc[3], dir),
        dir,
    )
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "fma")]
unsafe fn dot_directed_fma(x: &[f64], y: &[f64], dir: Dir) -> f64 {
    dot_directed(x, y, dir)
}

/// [`dot_directed`] with hardware FMA where the CPU has it (the error-free product needs an
/// FMA, which is a slow library call otherwise).
fn dot_directed_best(x: &[f64], y: &[f64], dir: Dir) -> f64 {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("fma") {
        // SAFETY: the CPU supports FMA (checked).
        return unsafe { dot_directed_fma(x, y, dir) };
    }
    dot_directed(x, y, dir)
}

/// The epilogue of a directed GEMM: `alpha·acc + beta·c` rounded `dir`; `c` unread if beta = 0.
#[inline(always)]
pub fn epilogue(dir: Dir, alpha: f64, acc: f64, beta: f64, c: f64) -> f64 {
    let t = if alpha == 0.0 {
        0.0
    } else {
        round::mul(alpha, acc, dir)
    };
    if beta == 0.0 {
        t
    } else {
        round::add(t, round::mul(beta, c, dir), dir)
    }
}

/// CPU `dgemm_rounded` (see [`super::gemm_rounded`]); aborts if the packed operands cannot
/// be allocated (for tools; the library calls [`try_gemm_rounded`]).
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
) {
    try_gemm_rounded(dir, m, n, k, alpha, a, b, beta, c, ldc).unwrap_or_else(|e| panic!("{e}"))
}

/// CPU `dgemm_rounded` (see [`super::gemm_rounded`]). The packed operands (`(m + n)·k`
/// entries) are allocated first: on [`NoMemory`] C is untouched.
#[allow(clippy::too_many_arguments)]
pub fn try_gemm_rounded(
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
) -> Result<(), NoMemory> {
    // alpha·x decreases in x when alpha < 0: accumulate the other way.
    let acc_dir = if alpha < 0.0 { dir.flip() } else { dir };
    let skip_product = alpha == 0.0 || k == 0;
    let (ap, bp) = if skip_product {
        (Vec::new(), Vec::new())
    } else {
        (pack_rows(a, m, k)?, pack_cols(b, k, n)?)
    };
    let threads = threads_for(m as f64 * n as f64 * k as f64);
    for_column_chunks(c, ldc, n, threads, |j0, count, cols| {
        for (jj, col) in cols.chunks_mut(ldc).take(count).enumerate() {
            let j = j0 + jj;
            for i in 0..m {
                let acc = if skip_product {
                    0.0
                } else {
                    dot_directed_best(&ap[i * k..(i + 1) * k], &bp[j * k..(j + 1) * k], acc_dir)
                };
                col[i] = epilogue(dir, alpha, acc, beta, col[i]);
            }
        }
    });
    Ok(())
}

/// One bound of an interval product: `x·y` rounded `dir`, with 0·∞ = 0 (an interval holds
/// reals only, and 0 times any real is 0).
#[inline(always)]
fn mul_bound(x: f64, y: f64, dir: Dir) -> f64 {
    if x == 0.0 || y == 0.0 {
        0.0
    } else {
        round::mul(x, y, dir)
    }
}

/// `[a]·[b]` rounded outward.
#[inline(always)]
pub fn interval_mul(ai: f64, asup: f64, bi: f64, bsup: f64) -> (f64, f64) {
    let lo = mul_bound(ai, bi, Dir::Down)
        .min(mul_bound(ai, bsup, Dir::Down))
        .min(mul_bound(asup, bi, Dir::Down))
        .min(mul_bound(asup, bsup, Dir::Down));
    let hi = mul_bound(ai, bi, Dir::Up)
        .max(mul_bound(ai, bsup, Dir::Up))
        .max(mul_bound(asup, bi, Dir::Up))
        .max(mul_bound(asup, bsup, Dir::Up));
    (lo, hi)
}

/// CPU infimum–supremum interval product: every term's interval product and every sum
/// rounded outward. Its workspace (`2(m + n)·k + 2·m·n` entries) is allocated first: on
/// [`NoMemory`] `[C]` is untouched.
#[allow(clippy::too_many_arguments)]
pub fn igemm_infsup(
    m: usize,
    n: usize,
    k: usize,
    a: IntervalOperand,
    b: IntervalOperand,
    c_inf: &mut [f64],
    c_sup: &mut [f64],
    ldc: usize,
) -> Result<(), NoMemory> {
    let (ai, asup) = (pack_rows(a.inf, m, k)?, pack_rows(a.sup, m, k)?);
    let (bi, bsup) = (pack_cols(b.inf, k, n)?, pack_cols(b.sup, k, n)?);
    let threads = threads_for(4.0 * m as f64 * n as f64 * k as f64);
    // The two outputs are filled column by column: compute both into one buffer of pairs.
    let mut both = alloc(2 * m * n, 0.0f64)?;
    for_column_chunks(&mut both, 2 * m, n, threads, |j0, count, cols| {
        for (jj, col) in cols.chunks_mut(2 * m).take(count).enumerate() {
            let j = j0 + jj;
            let (bcol_i, bcol_s) = (&bi[j * k..(j + 1) * k], &bsup[j * k..(j + 1) * k]);
            for i in 0..m {
                let (arow_i, arow_s) = (&ai[i * k..(i + 1) * k], &asup[i * k..(i + 1) * k]);
                let (mut lo, mut hi) = (0.0f64, 0.0f64);
                for l in 0..k {
                    let (pl, ph) = interval_mul(arow_i[l], arow_s[l], bcol_i[l], bcol_s[l]);
                    lo = round::add(lo, pl, Dir::Down);
                    hi = round::add(hi, ph, Dir::Up);
                }
                col[2 * i] = lo;
                col[2 * i + 1] = hi;
            }
        }
    });
    for j in 0..n {
        for i in 0..m {
            c_inf[i + j * ldc] = both[2 * (i + j * m)];
            c_sup[i + j * ldc] = both[2 * (i + j * m) + 1];
        }
    }
    Ok(())
}

/// An interval operand split into the arrays the midpoint–radius product multiplies, in the
/// operand's stored layout (packed, leading dimension = stored rows).
pub struct MidRadParts {
    /// Midpoints.
    pub mid: Vec<f64>,
    /// |mid|.
    pub abs: Vec<f64>,
    /// Radii (rounded up).
    pub rad: Vec<f64>,
    /// Whether every radius is zero (a point matrix).
    pub point: bool,
}

/// Splits `rows × cols` stored entries into midpoints and radii.
pub fn split_mid_rad(
    x: &IntervalOperand,
    rows: usize,
    cols: usize,
) -> Result<MidRadParts, NoMemory> {
    let len = rows * cols;
    let (mut mid, mut abs, mut rad) = (alloc(0, 0.0)?, alloc(0, 0.0)?, alloc(0, 0.0)?);
    for v in [&mut mid, &mut abs, &mut rad] {
        v.try_reserve_exact(len)
            .map_err(|_| NoMemory { bytes: 8 * len })?;
    }
    let mut point = true;
    for j in 0..cols {
        for i in 0..rows {
            let (m, r) = super::mid_rad(x.inf.data[i + j * x.inf.ld], x.sup.data[i + j * x.sup.ld]);
            point &= r == 0.0;
            mid.push(m);
            abs.push(m.abs());
            rad.push(r);
        }
    }
    Ok(MidRadParts {
        mid,
        abs,
        rad,
        point,
    })
}

/// `RU(x + g·y)`: a radius plus the rounding allowance `g·|mid|`.
#[inline(always)]
pub fn add_scaled_up(x: f64, g: f64, y: f64) -> f64 {
    round::add(x, round::mul(g, y, Dir::Up), Dir::Up)
}

/// How the radius product of a midpoint–radius interval product is formed: which arrays are
/// multiplied, by the operand's layout (`left·right`, then `+ left2·right2` if present).
/// With `γ = γ_k` bounding the rounding of `mid(A)·mid(B)`, the radius needed is
/// `|mA|·rB + rA·(|mB| + rB) + γ·|mA|·|mB|`; a point operand (radius 0) saves one product.
pub struct RadiusTerms {
    pub left: Vec<f64>,
    pub right: Vec<f64>,
    pub second: Option<(Vec<f64>, Vec<f64>)>,
}

/// The arrays of the radius product (see [`RadiusTerms`]). Takes the parts by value and
/// reuses their arrays (A's midpoints are not needed once `P` is formed): it allocates at most
/// one array of B's size, fallibly.
pub fn radius_terms(a: MidRadParts, b: MidRadParts, k: usize) -> Result<RadiusTerms, NoMemory> {
    let g = round::gamma(k);
    // out[i] := f(x[i], y[i]) in place of `out`'s old contents.
    let map2 = |mut out: Vec<f64>, x: &[f64], y: &[f64], f: &dyn Fn(f64, f64) -> f64| {
        for ((o, &p), &q) in out.iter_mut().zip(x).zip(y) {
            *o = f(p, q);
        }
        out
    };
    if b.point {
        // (γ|mA| + rA)·|mB|
        let left = map2(a.mid, &a.rad, &a.abs, &|r, m| add_scaled_up(r, g, m));
        return Ok(RadiusTerms {
            left,
            right: b.abs,
            second: None,
        });
    }
    // |mA|·(rB + γ|mB|)
    let right = map2(b.mid, &b.rad, &b.abs, &|r, m| add_scaled_up(r, g, m));
    if a.point {
        return Ok(RadiusTerms {
            left: a.abs,
            right,
            second: None,
        });
    }
    // + rA·(|mB| + rB)
    let right2 = map2(alloc(b.abs.len(), 0.0)?, &b.abs, &b.rad, &|m, r| {
        round::add(m, r, Dir::Up)
    });
    Ok(RadiusTerms {
        left: a.abs,
        right,
        second: Some((a.rad, right2)),
    })
}

/// The final step of the midpoint–radius product: from `P = fl(mA·mB)` and
/// `T = fl(radius product)` (`terms` products of non-negative numbers summed) to `[C]`.
/// `T`'s own rounding is covered by `(T + terms·η)(1 + 2γ_terms)`, `P`'s underflow by `k·η`.
#[inline(always)]
pub fn midrad_bounds(p: f64, t: f64, inflate: f64, t_eta: f64, p_eta: f64) -> (f64, f64) {
    let r = round::add(
        round::mul(round::add(t, t_eta, Dir::Up), inflate, Dir::Up),
        p_eta,
        Dir::Up,
    );
    if !p.is_finite() || r.is_nan() {
        return (f64::NEG_INFINITY, f64::INFINITY);
    }
    (round::sub(p, r, Dir::Down), round::add(p, r, Dir::Up))
}

/// The constants of [`midrad_bounds`] for a product of inner dimension `k` whose radius
/// product sums `terms` products: (inflate, t_eta, p_eta).
pub fn midrad_constants(k: usize, terms: usize) -> (f64, f64, f64) {
    let inflate = round::add(1.0, round::mul(2.0, round::gamma(terms), Dir::Up), Dir::Up);
    (
        inflate,
        round::mul(terms as f64, ETA, Dir::Up),
        round::mul(k as f64, ETA, Dir::Up),
    )
}

/// CPU midpoint–radius interval product on the system BLAS (bounds must be finite); aborts if
/// its workspace cannot be allocated (for tools; the library calls [`try_igemm_midrad`]).
#[allow(clippy::too_many_arguments)]
pub fn igemm_midrad(
    m: usize,
    n: usize,
    k: usize,
    a: IntervalOperand,
    b: IntervalOperand,
    c_inf: &mut [f64],
    c_sup: &mut [f64],
    ldc: usize,
) {
    try_igemm_midrad(m, n, k, a, b, c_inf, c_sup, ldc).unwrap_or_else(|e| panic!("{e}"))
}

/// CPU midpoint–radius interval product on the system BLAS (bounds must be finite). Its
/// workspace (three arrays per operand, one more for B, two m × n) is allocated before
/// `[C]` is written: on [`NoMemory`] `[C]` is untouched.
#[allow(clippy::too_many_arguments)]
pub fn try_igemm_midrad(
    m: usize,
    n: usize,
    k: usize,
    a: IntervalOperand,
    b: IntervalOperand,
    c_inf: &mut [f64],
    c_sup: &mut [f64],
    ldc: usize,
) -> Result<(), NoMemory> {
    let (ar, ac) = a.inf.stored_shape(m, k);
    let (br, bc) = b.inf.stored_shape(k, n);
    let (pa, pb) = (split_mid_rad(&a, ar, ac)?, split_mid_rad(&b, br, bc)?);
    // C (+)= op(X)·op(Y) on the operands' stored layouts, packed to leading dimensions ar, br.
    let gemm = |x: &[f64], y: &[f64], beta: f64, c: &mut [f64]| {
        let (ta, tb) = (a.inf.trans.blas(), b.inf.trans.blas());
        <f64 as Dense>::gemm(ta, tb, m, n, k, 1.0, (x, ar), (y, br), beta, c, m);
    };
    let (mut p, mut t) = (alloc(m * n, 0.0f64)?, alloc(m * n, 0.0f64)?);
    let mut summed = k;
    if k > 0 {
        gemm(&pa.mid, &pb.mid, 0.0, &mut p);
        let terms = radius_terms(pa, pb, k)?;
        gemm(&terms.left, &terms.right, 0.0, &mut t);
        if let Some((l2, r2)) = &terms.second {
            gemm(l2, r2, 1.0, &mut t);
            summed = 2 * k;
        }
    }
    let (inflate, t_eta, p_eta) = midrad_constants(k, summed);
    for j in 0..n {
        for i in 0..m {
            let (lo, hi) = midrad_bounds(p[i + j * m], t[i + j * m], inflate, t_eta, p_eta);
            c_inf[i + j * ldc] = lo;
            c_sup[i + j * ldc] = hi;
        }
    }
    Ok(())
}
