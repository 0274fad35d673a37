//! The bulge chasing on the CPU's threads (the schedule is in the parent module's notes).
//! LAPACK's xSYTRD_SB2ST runs the sweeps one after another on one core here (it needs OpenMP,
//! which the system OpenBLAS is built without), and it dominated the eigenvalue path.
//!
//! Groups of consecutive sweeps are taken by the threads in order; a thread runs its group's
//! sweeps interleaved, each [`LAG`] steps behind the previous one, so that the entries
//! they share stay in one core's cache (see `chase`), and the group's first sweep waits on the
//! previous group's progress counter. The inner loops are also compiled for AVX2, chosen at run
//! time.

use super::LAG;
use crate::host::workers::{run_on_threads_with, OsThreads, Spawner};
use crate::real::Real;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The band matrix being reduced, shared by the threads. Every access goes through `at`; the
/// schedule (module notes) keeps concurrent sweeps on disjoint entries.
struct Band<T> {
    ptr: *mut T,
    ld: usize,
    n: usize,
    /// The compact reflectors ([`super::Reflectors`]) when they are kept, else null.
    q: *mut T,
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

    /// Records sweep `i`'s reflector `h` in its slot of the compact layout
    /// ([`super::Reflectors`]): τ in place of the implicit unit entry, then v's others.
    ///
    /// # Safety
    /// `q` holds the layout of order `n`; only this step writes the slot.
    #[inline(always)]
    unsafe fn keep(&self, i: usize, h: &Reflector<T>) {
        let at = super::sweep_offset(self.n, i) + (h.first - i - 1);
        let slot = std::slice::from_raw_parts_mut(self.q.add(at), h.v.len());
        slot[0] = h.tau;
        slot[1..].copy_from_slice(&h.v[1..]);
    }
}

/// A Householder reflector `I − τ v vᵀ` over rows `first ..`, `v[0] = 1`. One per sweep,
/// overwritten by each step (its buffer is reused).
struct Reflector<T> {
    first: usize,
    v: Vec<T>,
    tau: T,
}

/// Per-thread scratch of `two_sided` and of the right-hand application.
struct Scratch<T> {
    y: Vec<T>,
}

/// Sets `h` to the reflector over rows `first ..` that maps `x` (in `h.v` on entry) to `β e₁`
/// (LAPACK xLARFG's choice of sign) and returns β. Norms are taken on `x` scaled by its largest
/// entry, so that squares neither underflow nor overflow (the drivers keep matrices within
/// LAPACK's safe range, not within √ of it).
#[inline(always)]
fn householder<T: Real>(h: &mut Reflector<T>, first: usize) -> T {
    h.first = first;
    let x = &mut h.v;
    let alpha = x[0];
    x[0] = T::ONE;
    let big = x[1..].iter().fold(alpha.abs(), |m, &t| m.max(t.abs()));
    let mut tail2 = T::ZERO;
    if big > T::ZERO {
        for &t in &x[1..] {
            let u = t / big;
            tail2 = tail2 + u * u;
        }
    }
    if tail2 == T::ZERO {
        for t in &mut x[1..] {
            *t = T::ZERO;
        }
        h.tau = T::ZERO;
        return alpha;
    }
    let a = alpha / big;
    let norm = big * (a * a + tail2).sqrt();
    let beta = if alpha >= T::ZERO { -norm } else { norm };
    h.tau = (beta - alpha) / beta;
    let scale = T::ONE / (alpha - beta);
    for t in &mut x[1..] {
        *t = *t * scale;
    }
    beta
}

/// `xᵀy` (over the shorter length) with eight partial sums, so that the compiler can keep
/// them in vector registers (a single running sum is one long chain of dependent additions).
#[inline(always)]
pub(super) fn dot<T: Real>(x: &[T], y: &[T]) -> T {
    let len = x.len().min(y.len());
    let (x, y) = (&x[..len], &y[..len]);
    let mut acc = [T::ZERO; 8];
    let (xc, yc) = (x.chunks_exact(8), y.chunks_exact(8));
    let (xr, yr) = (xc.remainder(), yc.remainder());
    for (a, b) in xc.zip(yc) {
        for l in 0..8 {
            acc[l] = acc[l] + a[l] * b[l];
        }
    }
    let mut tail = T::ZERO;
    for (&a, &b) in xr.iter().zip(yr) {
        tail = tail + a * b;
    }
    ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7])) + tail
}

/// D := H D H on the symmetric diagonal block of H's rows (lower triangle stored).
#[inline(always)]
unsafe fn two_sided<T: Real>(a: &Band<T>, h: &Reflector<T>, scratch: &mut Scratch<T>) {
    let (s, m, v) = (h.first, h.v.len(), &h.v);
    if h.tau == T::ZERO {
        return;
    }
    // y = τ D v, then y −= ½ τ (yᵀ v) v, D −= v yᵀ + y vᵀ. Column c of the block is
    // contiguous: rows c.. of it at a.at(s + c, s + c).
    let y = &mut scratch.y;
    y.clear();
    y.resize(m, T::ZERO);
    for c in 0..m {
        let col = std::slice::from_raw_parts(a.at(s + c, s + c), m - c);
        let vc = v[c];
        for (yr, &x) in y[c + 1..].iter_mut().zip(&col[1..]) {
            *yr = *yr + x * vc;
        }
        y[c] = y[c] + dot(col, &v[c..]);
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
        let col = std::slice::from_raw_parts_mut(a.at(s + c, s + c), m - c);
        let (vc, yc) = (v[c], y[c]);
        for (p, (&vr, &yr)) in col.iter_mut().zip(v[c..].iter().zip(&y[c..])) {
            *p = *p - vr * yc - yr * vc;
        }
    }
}

/// The signature of [`step`], for the choice between its instruction-set variants.
type StepFn<T> =
    unsafe fn(&Band<T>, usize, usize, usize, &mut Reflector<T>, &mut Scratch<T>) -> bool;

/// `step` compiled for AVX2 (the same operations in the same order, in wider vectors).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn step_avx2<T: Real, const KEEP: bool>(
    a: &Band<T>,
    b: usize,
    i: usize,
    k: usize,
    h: &mut Reflector<T>,
    scratch: &mut Scratch<T>,
) -> bool {
    step::<T, KEEP>(a, b, i, k, h, scratch)
}

/// The fastest variant of `step` this CPU runs, keeping the reflectors if `KEEP`.
fn step_fn<T: Real, const KEEP: bool>() -> StepFn<T> {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        return step_avx2::<T, KEEP>;
    }
    step::<T, KEEP>
}

/// Runs step `k` of sweep `i` with the sweep's reflector `h` (set by step k − 1; step 0 sets
/// it); returns false when the sweep is over. With `KEEP`, records each new reflector in the
/// band's compact layout (the only difference: the eigenvalue-only chase is compiled without
/// it).
#[inline(always)]
unsafe fn step<T: Real, const KEEP: bool>(
    a: &Band<T>,
    b: usize,
    i: usize,
    k: usize,
    h: &mut Reflector<T>,
    scratch: &mut Scratch<T>,
) -> bool {
    let n = a.n;
    if k == 0 {
        let (st, ed) = (i + 1, (i + b).min(n - 1));
        h.v.clear();
        h.v.extend((st..=ed).map(|r| a.get(r, i)));
        let beta = householder(h, st);
        if KEEP {
            a.keep(i, h);
        }
        a.set(st, i, beta);
        for r in st + 1..=ed {
            a.set(r, i, T::ZERO);
        }
        two_sided(a, h, scratch);
        return true;
    }
    let (st, ed) = (h.first, h.first + h.v.len() - 1);
    let (j1, j2) = (ed + 1, (ed + b).min(n - 1));
    if j1 >= n {
        return false;
    }
    // B := B H on rows j1..=j2, columns st..=ed: s = τ B v, then B −= s vᵀ, column by column
    // (the band's columns are contiguous).
    let lm = j2 - j1 + 1;
    if h.tau != T::ZERO {
        let s = &mut scratch.y;
        s.clear();
        s.resize(lm, T::ZERO);
        for (c, &vc) in h.v.iter().enumerate() {
            let col = std::slice::from_raw_parts(a.at(j1, st + c), lm);
            for (sr, &x) in s.iter_mut().zip(col) {
                *sr = *sr + x * vc;
            }
        }
        for sr in s.iter_mut() {
            *sr = *sr * h.tau;
        }
        for (c, &vc) in h.v.iter().enumerate() {
            let col = std::slice::from_raw_parts_mut(a.at(j1, st + c), lm);
            for (x, &sr) in col.iter_mut().zip(s.iter()) {
                *x = *x - sr * vc;
            }
        }
    }
    // A new H (overwriting the old one) annihilates the first column of B below its first
    // row ...
    h.v.clear();
    h.v.extend_from_slice(std::slice::from_raw_parts(a.at(j1, st), lm));
    let beta = householder(h, j1);
    if KEEP {
        a.keep(i, h);
    }
    a.set(j1, st, beta);
    for r in j1 + 1..=j2 {
        a.set(r, st, T::ZERO);
    }
    // ... and goes to the rest of B from the left, then to the next diagonal block.
    if h.tau != T::ZERO {
        for c in st + 1..=ed {
            let col = std::slice::from_raw_parts_mut(a.at(j1, c), lm);
            let s = dot(&h.v, col) * h.tau;
            for (x, &vr) in col.iter_mut().zip(&h.v) {
                *x = *x - vr * s;
            }
        }
    }
    two_sided(a, h, scratch);
    true
}

/// The sweeps per group (see `chase`) on `threads` threads when none is asked for: 4 when the
/// pipeline is deep enough to keep every thread busy with groups of 4, else 1. A sweep has
/// about n / 2b steps and trails the previous sweep by [`LAG`] steps of its thread, so about
/// n / (2 · LAG · b) sweeps are active at once, and `threads` groups of g need `threads · g` of
/// them. Measured on the H100's 16-core host at kd = 32, when sweeps trailed by three steps:
/// n = 16384 took 1.29–1.40 s with 4 per group, 1.49–1.58 s with 1, 1.9 s with 8 and
/// 3.0–3.2 s with 16 (too shallow a pipeline); n = 4096 0.14–0.20 s with 1 or 4.
pub fn sweep_group(n: usize, kd: usize, threads: usize) -> usize {
    if n / (2 * LAG * kd.max(1)) >= 4 * threads {
        4
    } else {
        1
    }
}

/// Sweeps `0 .. n − 2` (the last sweeps have nothing to annihilate) in groups of `group`
/// consecutive sweeps, the groups taken in order by up to `threads` threads. A thread runs the
/// sweeps of its group interleaved, sweep `j` of the group [`LAG`] steps behind sweep `j − 1`
/// (exactly what the schedule allows): neighbouring sweeps touch nearly the same entries a few
/// steps apart, so the entries stay in that core's cache instead of moving to another core
/// after every step, which is what limited the one-sweep-per-thread pipeline. The first sweep
/// of a group waits on the last sweep of the previous group (another thread's, while it runs).
/// With `q` (the compact layout of [`super::Reflectors`], zeros, n(n − 1)/2 entries), every
/// reflector is recorded there. None if the progress counters (one per sweep) cannot be
/// allocated.
pub(super) fn chase<T: Real>(
    w: &mut [T],
    ld: usize,
    n: usize,
    b: usize,
    threads: usize,
    group: usize,
    q: Option<&mut [T]>,
) -> Option<()> {
    chase_with(&OsThreads, w, ld, n, b, threads, group, q)
}

/// [`chase`] with threads from `spawner`.
#[allow(clippy::too_many_arguments)]
fn chase_with<T: Real, S: Spawner>(
    spawner: &S,
    w: &mut [T],
    ld: usize,
    n: usize,
    b: usize,
    threads: usize,
    group: usize,
    q: Option<&mut [T]>,
) -> Option<()> {
    let sweeps = n - 2;
    let group = group.max(1);
    let stepper = match &q {
        Some(q) => {
            assert!(
                q.len() >= super::sweep_offset(n, n - 1),
                "Q2's layout too short"
            );
            step_fn::<T, true>()
        }
        None => step_fn::<T, false>(),
    };
    let band = Band {
        ptr: w.as_mut_ptr(),
        ld,
        n,
        q: q.map_or(std::ptr::null_mut(), |q| q.as_mut_ptr()),
    };
    // Steps finished per sweep; usize::MAX once the sweep is over.
    let mut done: Vec<AtomicUsize> = Vec::new();
    done.try_reserve_exact(sweeps).ok()?;
    done.extend((0..sweeps).map(|_| AtomicUsize::new(0)));
    let ready = |i: usize, k: usize| i == 0 || done[i - 1].load(Ordering::Acquire) >= k + LAG;
    let run_group = |q: usize, hs: &mut Vec<Reflector<T>>, scratch: &mut Scratch<T>| {
        let lo = q * group;
        let g = group.min(sweeps - lo);
        if hs.len() < g {
            hs.resize_with(g, || Reflector {
                first: 0,
                v: Vec::with_capacity(b),
                tau: T::ZERO,
            });
        }
        // The next step of each sweep of the group; usize::MAX once it is over.
        let mut next = vec![0usize; g];
        let (mut live, mut round) = (g, 0usize);
        while live > 0 {
            for j in 0..g.min(round / LAG + 1) {
                let (i, k) = (lo + j, next[j]);
                if k == usize::MAX {
                    continue;
                }
                if j == 0 {
                    // Sweep i − 1 (another thread's) must be past every entry this step
                    // touches.
                    let mut spins = 0u32;
                    while !ready(i, k) {
                        spins += 1;
                        if spins.is_multiple_of(64) {
                            std::thread::yield_now();
                        } else {
                            std::hint::spin_loop();
                        }
                    }
                } else if !ready(i, k) {
                    // Sweep i − 1 is this thread's and runs ahead by construction; never wait
                    // on it.
                    continue;
                }
                // SAFETY: `ready` orders this step after every step of the previous sweeps
                // that touches the same entries; later sweeps wait for this one the same way.
                let more = unsafe { stepper(&band, b, i, k, &mut hs[j], scratch) };
                let now = if more { k + 1 } else { usize::MAX };
                if !more {
                    live -= 1;
                }
                next[j] = now;
                done[i].store(now, Ordering::Release);
            }
            round += 1;
        }
    };
    // The groups are taken in order from a shared counter, not dealt to the threads in advance:
    // a group waits on the one before, and a group dealt to a thread that the OS then refused
    // would be waited on forever. Taken in order, every earlier group is running or done, so
    // the chase finishes on however many threads start (the caller alone included).
    let groups = sweeps.div_ceil(group);
    let next_group = AtomicUsize::new(0);
    let worker = || {
        let (mut hs, mut scratch) = (Vec::new(), Scratch { y: Vec::new() });
        loop {
            let q = next_group.fetch_add(1, Ordering::Relaxed);
            if q >= groups {
                break;
            }
            run_group(q, &mut hs, &mut scratch);
        }
    };
    run_on_threads_with(spawner, threads.min(groups), worker);
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::workers::Refusing;

    /// A pseudo-random band of order n with kd off-diagonals, lower storage.
    fn band(n: usize, kd: usize) -> Vec<f64> {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        (0..(kd + 1) * n)
            .map(|_| {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                (x >> 11) as f64 / (1u64 << 53) as f64 - 0.5
            })
            .collect()
    }

    /// The band and the reflectors after a chase with threads from `spawner`.
    fn chased<S: Spawner>(spawner: &S, threads: usize, group: usize) -> (Vec<f64>, Vec<f64>) {
        let (n, kd) = (60, 4);
        let (mut w, ld, b) = super::super::workspace(b'L', n, kd, &band(n, kd), kd + 1).unwrap();
        let mut q = vec![0.0; n * (n - 1) / 2];
        chase_with(spawner, &mut w, ld, n, b, threads, group, Some(&mut q)).unwrap();
        (w, q)
    }

    /// Threads refused by the OS leave their groups to those started (a group dealt to a
    /// refused thread would stall the pipeline for good): the chase finishes, as the caller
    /// alone would have done it.
    #[test]
    fn refused_threads_give_the_chase_of_the_threads_started() {
        for group in [1, 4] {
            let alone = chased(&Refusing::after(0), 1, group);
            for allow in 0..4 {
                let got = chased(&Refusing::after(allow), 4, group);
                assert!(got == alone, "allow {allow} group {group}");
            }
        }
    }
}
