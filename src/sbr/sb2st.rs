//! Band → tridiagonal by bulge chasing with Householder reflectors (the second stage of the
//! two-stage reduction, as LAPACK's xSYTRD_SB2ST does it), with the sweeps pipelined over
//! threads: LAPACK's routine runs them one after another on one core here (it needs OpenMP,
//! which the system OpenBLAS is built without), and it dominated the eigenvalue path.
//!
//! Sweep `i` annihilates column `i` below the subdiagonal and chases the bulge down:
//! - step 0: a reflector H from column `i` (rows `i+1 ..= i+b`), applied from both sides to
//!   the diagonal block of those rows;
//! - step k ≥ 1: the previous H applied from the right to the block below the last diagonal
//!   block (this creates the bulge), a new H annihilating the bulge's first column, applied from
//!   the left to the rest of that block and from both sides to the next diagonal block.
//!   The rest of the bulge is removed by the following sweeps.
//!
//! Step k of sweep i touches rows and columns `i+1+(k−1)b ..= i+(k+1)b` only, so step k of
//! sweep i+1 may run as soon as sweep i has finished its steps `0 ..= k+2`: sweep `i` runs on
//! thread `i mod T` and waits on its predecessor's progress counter.
//!
//! The band is held in lower band storage with `2b + 1` rows: entry (r, c), `r ≥ c`, at
//! `(r − c) + c · ld`, the extra rows holding the bulge.

use crate::real::Real;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The band matrix being reduced, shared by the threads. Every access goes through `at`; the
/// schedule (module notes) keeps concurrent sweeps on disjoint entries.
struct Band<T> {
    ptr: *mut T,
    ld: usize,
    n: usize,
}

// SAFETY: the threads touch disjoint entries (module notes); the pointer outlives the scope.
unsafe impl<T: Send> Sync for Band<T> {}

impl<T: Real> Band<T> {
    /// Entry (r, c) of the lower triangle (r ≥ c, r − c ≤ 2b).
    ///
    /// # Safety
    /// The indices are inside the band storage and no other thread touches the entry now.
    #[inline(always)]
    unsafe fn at(&self, r: usize, c: usize) -> *mut T {
        debug_assert!(r >= c && r - c < self.ld && r < self.n);
        self.ptr.add((r - c) + c * self.ld)
    }

    #[inline(always)]
    unsafe fn get(&self, r: usize, c: usize) -> T {
        *self.at(r, c)
    }

    #[inline(always)]
    unsafe fn set(&self, r: usize, c: usize, x: T) {
        *self.at(r, c) = x;
    }
}

/// A Householder reflector `I − τ v vᵀ` over rows `first ..`, `v[0] = 1`.
struct Reflector<T> {
    first: usize,
    v: Vec<T>,
    tau: T,
}

/// The reflector that maps `x` to `β e₁` (LAPACK xLARFG's choice of sign): returns it and β.
/// Norms are taken on `x` scaled by its largest entry, so that squares neither underflow nor
/// overflow (the drivers keep matrices within LAPACK's safe range, not within √ of it).
fn householder<T: Real>(first: usize, x: &[T]) -> (Reflector<T>, T) {
    let alpha = x[0];
    let mut v = vec![T::ZERO; x.len()];
    v[0] = T::ONE;
    let big = x.iter().fold(T::ZERO, |m, &t| m.max(t.abs()));
    let mut tail2 = T::ZERO;
    if big > T::ZERO {
        for &t in &x[1..] {
            let u = t / big;
            tail2 = tail2 + u * u;
        }
    }
    if tail2 == T::ZERO {
        return (
            Reflector {
                first,
                v,
                tau: T::ZERO,
            },
            alpha,
        );
    }
    let a = alpha / big;
    let norm = big * (a * a + tail2).sqrt();
    let beta = if alpha >= T::ZERO { -norm } else { norm };
    let tau = (beta - alpha) / beta;
    let scale = T::ONE / (alpha - beta);
    for (vi, &xi) in v[1..].iter_mut().zip(&x[1..]) {
        *vi = xi * scale;
    }
    (Reflector { first, v, tau }, beta)
}

/// D := H D H on the symmetric diagonal block of H's rows (lower triangle stored).
unsafe fn two_sided<T: Real>(a: &Band<T>, h: &Reflector<T>) {
    let (s, m, v) = (h.first, h.v.len(), &h.v);
    if h.tau == T::ZERO {
        return;
    }
    // y = τ D v, then y −= ½ τ (yᵀ v) v, D −= v yᵀ + y vᵀ.
    let mut y = vec![T::ZERO; m];
    for c in 0..m {
        let mut acc = a.get(s + c, s + c) * v[c];
        for r in c + 1..m {
            let x = a.get(s + r, s + c);
            acc = acc + x * v[r];
            y[r] = y[r] + x * v[c];
        }
        y[c] = y[c] + acc;
    }
    let mut yv = T::ZERO;
    for k in 0..m {
        y[k] = y[k] * h.tau;
        yv = yv + y[k] * v[k];
    }
    let alpha = -T::HALF * h.tau * yv;
    for k in 0..m {
        y[k] = y[k] + alpha * v[k];
    }
    for c in 0..m {
        for r in c..m {
            let p = a.at(s + r, s + c);
            *p = *p - v[r] * y[c] - y[r] * v[c];
        }
    }
}

/// Runs step `k` of sweep `i`; returns the reflector the next step applies, or None when the
/// sweep is over.
unsafe fn step<T: Real>(
    a: &Band<T>,
    b: usize,
    i: usize,
    k: usize,
    prev: Option<Reflector<T>>,
) -> Option<Reflector<T>> {
    let n = a.n;
    if k == 0 {
        let (st, ed) = (i + 1, (i + b).min(n - 1));
        let x: Vec<T> = (st..=ed).map(|r| a.get(r, i)).collect();
        let (h, beta) = householder(st, &x);
        a.set(st, i, beta);
        for r in st + 1..=ed {
            a.set(r, i, T::ZERO);
        }
        two_sided(a, &h);
        return Some(h);
    }
    let h = prev.expect("a reflector from the previous step");
    let (st, ed) = (h.first, h.first + h.v.len() - 1);
    let (j1, j2) = (ed + 1, (ed + b).min(n - 1));
    if j1 >= n {
        return None;
    }
    // B := B H on rows j1..=j2, columns st..=ed: s = τ B v, then B −= s vᵀ, column by column
    // (the band's columns are contiguous).
    if h.tau != T::ZERO {
        let lm = j2 - j1 + 1;
        let mut s = vec![T::ZERO; lm];
        for (c, &vc) in h.v.iter().enumerate() {
            let col = a.at(j1, st + c);
            for (r, sr) in s.iter_mut().enumerate() {
                *sr = *sr + *col.add(r) * vc;
            }
        }
        for sr in &mut s {
            *sr = *sr * h.tau;
        }
        for (c, &vc) in h.v.iter().enumerate() {
            let col = a.at(j1, st + c);
            for (r, &sr) in s.iter().enumerate() {
                *col.add(r) = *col.add(r) - sr * vc;
            }
        }
    }
    // A new H annihilates the first column of B below its first row ...
    let x: Vec<T> = (j1..=j2).map(|r| a.get(r, st)).collect();
    let (g, beta) = householder(j1, &x);
    a.set(j1, st, beta);
    for r in j1 + 1..=j2 {
        a.set(r, st, T::ZERO);
    }
    // ... and goes to the rest of B from the left, then to the next diagonal block.
    if g.tau != T::ZERO {
        for c in st + 1..=ed {
            let mut s = T::ZERO;
            for (r, &vr) in g.v.iter().enumerate() {
                s = s + vr * a.get(j1 + r, c);
            }
            let s = s * g.tau;
            for (r, &vr) in g.v.iter().enumerate() {
                let p = a.at(j1 + r, c);
                *p = *p - vr * s;
            }
        }
    }
    two_sided(a, &g);
    Some(g)
}

/// The symmetric tridiagonal matrix (d, e) orthogonally similar to the band matrix `ab`
/// (LAPACK band storage of the `uplo` triangle, `kd` off-diagonals, leading dimension `ldab`),
/// on `threads` threads (0: all available). `d` gets n entries, `e` n − 1.
pub fn tridiagonalize<T: Real>(
    uplo: u8,
    n: usize,
    kd: usize,
    ab: &[T],
    ldab: usize,
    threads: usize,
) -> (Vec<T>, Vec<T>) {
    let b = kd.max(1);
    let ld = 2 * b + 1;
    let mut w = vec![T::ZERO; ld * n];
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
    if n > 2 && kd > 1 {
        let threads = if threads == 0 {
            std::thread::available_parallelism().map_or(1, |t| t.get())
        } else {
            threads
        };
        chase(&mut w, ld, n, b, threads.clamp(1, n - 2));
    }
    let d = (0..n).map(|j| w[j * ld]).collect();
    let e = (0..n.saturating_sub(1)).map(|j| w[1 + j * ld]).collect();
    (d, e)
}

/// Runs sweeps `0 .. n − 2` (the last sweeps have nothing to annihilate) over `threads`.
fn chase<T: Real>(w: &mut [T], ld: usize, n: usize, b: usize, threads: usize) {
    let sweeps = n - 2;
    let band = Band {
        ptr: w.as_mut_ptr(),
        ld,
        n,
    };
    // Steps finished per sweep; usize::MAX once the sweep is over.
    let done: Vec<AtomicUsize> = (0..sweeps).map(|_| AtomicUsize::new(0)).collect();
    let run_sweep = |i: usize| {
        let mut h = None;
        let mut k = 0;
        loop {
            if i > 0 {
                // Sweep i − 1 must be past every entry this step touches.
                let mut spins = 0u32;
                while done[i - 1].load(Ordering::Acquire) < k + 3 {
                    spins += 1;
                    if spins % 64 == 0 {
                        std::thread::yield_now();
                    } else {
                        std::hint::spin_loop();
                    }
                }
            }
            // SAFETY: the wait above orders this step after every step of the previous sweeps
            // that touches the same entries; later sweeps wait for this one the same way.
            h = unsafe { step(&band, b, i, k, h.take()) };
            if h.is_none() {
                done[i].store(usize::MAX, Ordering::Release);
                return;
            }
            k += 1;
            done[i].store(k, Ordering::Release);
        }
    };
    if threads == 1 {
        (0..sweeps).for_each(run_sweep);
        return;
    }
    std::thread::scope(|scope| {
        for t in 0..threads {
            let run_sweep = &run_sweep;
            scope.spawn(move || (t..sweeps).step_by(threads).for_each(run_sweep));
        }
    });
}
