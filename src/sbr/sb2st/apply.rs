//! Q2 of the bulge chasing, kept in compact form, and its application to a block of vectors
//! (the layout is in the parent module's notes).

use super::cpu::dot;
use super::sweep_offset;
use crate::host::workers::{or_resume, run_parts};
use crate::real::Real;

/// Columns of Z that one pass over the reflectors updates: each reflector is read once per
/// block, and the block's rows under it stay in cache between its dot product and its update.
const BLOCK: usize = 16;

/// Q2 of a bulge chasing of order `n` and bandwidth `b` (parent module's notes).
pub struct Reflectors<T> {
    pub(super) n: usize,
    pub(super) b: usize,
    /// Sweep i's vectors from [`sweep_offset`]`(n, i)`, step k's at `k b` after it: τ, then
    /// v's entries after the unit one.
    pub(super) v: Vec<T>,
}

impl<T: Real> Reflectors<T> {
    /// Room for Q2 of order n after a chase of the band with `kd` off-diagonals (Q2 = I until
    /// then), or None if it cannot be allocated (n(n − 1)/2 entries).
    pub fn new(n: usize, kd: usize) -> Option<Self> {
        let v = crate::host::try_zeroed(n * n.saturating_sub(1) / 2)?;
        Some(Reflectors { n, b: kd.max(1), v })
    }

    /// Whether this is the room for order n and bandwidth b.
    pub(super) fn fits(&self, n: usize, b: usize) -> bool {
        self.n == n && self.b == b
    }

    /// Q2 := I (a chase records only the reflectors it makes).
    pub(super) fn clear(&mut self) {
        self.v.fill(T::ZERO);
    }

    /// The bytes of its layout.
    pub fn bytes(&self) -> u64 {
        std::mem::size_of_val(&self.v[..]) as u64
    }

    /// The order n.
    pub fn order(&self) -> usize {
        self.n
    }

    /// Z := Q2 Z for the n x m `z` (leading dimension `ldz`), on `threads` threads (0: all
    /// available), each taking a share of the columns.
    pub fn apply_left(&self, m: usize, z: &mut [T], ldz: usize, threads: usize) {
        let n = self.n;
        if n < 3 || m == 0 {
            return;
        }
        assert!(ldz >= n && z.len() >= ldz * (m - 1) + n, "Z too short");
        let threads = if threads == 0 {
            crate::host::threads()
        } else {
            threads
        };
        let threads = threads.clamp(1, m.div_ceil(BLOCK));
        let per = m.div_ceil(threads);
        let run = apply_fn::<T>();
        if threads == 1 {
            // SAFETY: the CPU runs the variant chosen (`apply_fn`).
            unsafe { run(self, z, m, ldz) };
            return;
        }
        let parts: Vec<_> = z
            .chunks_mut(per * ldz)
            .enumerate()
            .map(|(t, part)| (part, per.min(m.saturating_sub(t * per))))
            .filter(|&(_, cols)| cols > 0)
            .collect();
        // SAFETY: as above.
        or_resume(run_parts(parts, &|(part, cols)| unsafe {
            run(self, part, cols, ldz)
        }));
    }
}

/// The signature of [`apply_cols`], for the choice between its instruction-set variants.
type ApplyFn<T> = unsafe fn(&Reflectors<T>, &mut [T], usize, usize);

/// The fastest variant of `apply_cols` this CPU runs.
fn apply_fn<T: Real>() -> ApplyFn<T> {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        return apply_cols_avx2::<T>;
    }
    apply_cols::<T>
}

/// `apply_cols` compiled for AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn apply_cols_avx2<T: Real>(q: &Reflectors<T>, z: &mut [T], cols: usize, ldz: usize) {
    apply_cols(q, z, cols, ldz)
}

/// Z := Q2 Z on the `cols` columns of `z`: the reflectors from the last sweep's last step
/// back to the first sweep's first, on blocks of [`BLOCK`] columns.
#[inline(always)]
unsafe fn apply_cols<T: Real>(q: &Reflectors<T>, z: &mut [T], cols: usize, ldz: usize) {
    let (n, b) = (q.n, q.b);
    for c0 in (0..cols).step_by(BLOCK) {
        let c1 = (c0 + BLOCK).min(cols);
        for i in (0..n - 2).rev() {
            let (at, rows) = (sweep_offset(n, i), n - 1 - i);
            for k in (0..rows.div_ceil(b)).rev() {
                let len = b.min(rows - k * b);
                let v = &q.v[at + k * b..at + k * b + len];
                let tau = v[0];
                if tau == T::ZERO {
                    continue;
                }
                let first = i + 1 + k * b;
                for c in c0..c1 {
                    let col = &mut z[c * ldz + first..c * ldz + first + len];
                    let s = (col[0] + dot(&v[1..], &col[1..])) * tau;
                    col[0] = col[0] - s;
                    for (x, &vr) in col[1..].iter_mut().zip(&v[1..]) {
                        *x = *x - s * vr;
                    }
                }
            }
        }
    }
}
