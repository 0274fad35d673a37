//! The user's matrix on the host, seen as its lower triangle, and the copies between it and an
//! executor's staging buffers. One thread copies at a few GB/s, below what a copy engine moves:
//! large copies are split over several threads (`copy_threads`), each on its own consecutive
//! entries of the block.

use crate::device::memory::copy_threads;
use crate::host::workers::{or_resume, run_parts};
use crate::real::Real;

/// Columns of `L` copied together when `A` is read transposed (`UPLO = 'U'`).
const TILE: usize = 32;
/// How many threads copy `len` entries of `T`.
fn threads_for<T>(len: usize) -> usize {
    copy_threads(len * std::mem::size_of::<T>())
}

/// The user's matrix seen as its lower triangle `L` (`UPLO = 'U'` is read transposed).
pub struct HostMat<'a, T> {
    pub a: &'a mut [T],
    pub lda: usize,
    pub upper: bool,
}

impl<T: Real> HostMat<'_, T> {
    #[inline]
    pub(super) fn index(&self, r: usize, c: usize) -> usize {
        index(self.upper, self.lda, r, c)
    }

    pub(super) fn get(&self, r: usize, c: usize) -> T {
        self.a[self.index(r, c)]
    }

    pub(super) fn set(&mut self, r: usize, c: usize, x: T) {
        let i = self.index(r, c);
        self.a[i] = x;
    }

    /// The address of `L[r, c]`, for a direct transfer: a block of `L` is a block of `A` with
    /// columns `lda` apart (lower storage) or, transposed, a block of its rows (upper).
    pub(super) fn ptr(&mut self, r: usize, c: usize) -> *mut T {
        let i = self.index(r, c);
        self.a[i..].as_mut_ptr()
    }

    /// Entries `start..start + out.len()` of the h-row block `L[r0.., c0..]` stored with
    /// leading dimension `h`. A column of `L` is a slice of `A` (lower) or a row of it (upper,
    /// copied in tiles of whole columns so that `A` is read along its columns).
    pub(super) fn gather(&self, r0: usize, h: usize, c0: usize, start: usize, out: &mut [T]) {
        let t = threads_for::<T>(out.len());
        if t == 1 {
            return self.gather_seq(r0, h, c0, start, out);
        }
        let piece = out.len().div_ceil(t);
        let parts = out.chunks_mut(piece).enumerate().collect();
        or_resume(run_parts(parts, &|(k, part)| {
            self.gather_seq(r0, h, c0, start + k * piece, part)
        }));
    }

    fn gather_seq(&self, r0: usize, h: usize, c0: usize, start: usize, out: &mut [T]) {
        let (mut t, mut done, lda) = (start, 0, self.lda);
        while done < out.len() {
            let (r, c) = (t % h, t / h);
            let run = (h - r).min(out.len() - done);
            let col = c0 + c;
            if self.upper && r == 0 && run == h {
                let cols = ((out.len() - done) / h).min(TILE);
                let tile = &mut out[done..done + cols * h];
                for k in 0..h {
                    let src = &self.a[col + (r0 + k) * lda..][..cols];
                    for (j, &x) in src.iter().enumerate() {
                        tile[j * h + k] = x;
                    }
                }
                done += cols * h;
                t += cols * h;
                continue;
            }
            if self.upper {
                for k in 0..run {
                    out[done + k] = self.a[col + (r0 + r + k) * lda];
                }
            } else {
                let s = (r0 + r) + col * lda;
                out[done..done + run].copy_from_slice(&self.a[s..s + run]);
            }
            done += run;
            t += run;
        }
    }

    /// The inverse of `gather`: only entries on or below the diagonal of `L` are written.
    pub(super) fn scatter(&mut self, r0: usize, h: usize, c0: usize, start: usize, data: &[T]) {
        if data.is_empty() {
            return;
        }
        let raw = RawMat {
            ptr: self.a.as_mut_ptr(),
            len: self.a.len(),
            lda: self.lda,
            upper: self.upper,
        };
        let t = threads_for::<T>(data.len());
        let piece = data.len().div_ceil(t);
        if t == 1 {
            // SAFETY: `raw` comes from the exclusive borrow of `a`, alive for this call.
            return unsafe { raw.scatter(r0, h, c0, start, data) };
        }
        let parts = data.chunks(piece).enumerate().collect();
        // SAFETY: `raw` comes from the exclusive borrow of `a`, alive for this call. Distinct
        // entries of the block are distinct entries of `A` (`index` is injective for rows and
        // columns below `lda`), and the pieces are disjoint.
        or_resume(run_parts(parts, &|(k, part)| unsafe {
            raw.scatter(r0, h, c0, start + k * piece, part)
        }));
    }
}

#[inline]
fn index(upper: bool, lda: usize, r: usize, c: usize) -> usize {
    if upper {
        c + r * lda
    } else {
        r + c * lda
    }
}

/// `A` as a pointer, written by several threads at once on disjoint entries.
#[derive(Clone, Copy)]
struct RawMat<T> {
    ptr: *mut T,
    len: usize,
    lda: usize,
    upper: bool,
}

// SAFETY: a RawMat is only used inside `HostMat::scatter`, whose threads write disjoint entries
// of a matrix it borrows exclusively.
unsafe impl<T: Send> Send for RawMat<T> {}
unsafe impl<T: Send> Sync for RawMat<T> {}

impl<T: Real> RawMat<T> {
    /// `HostMat::scatter` of one piece.
    ///
    /// # Safety
    /// `ptr` is valid for writes of `len` entries during the call, and no other thread touches
    /// the entries this piece writes.
    unsafe fn scatter(&self, r0: usize, h: usize, c0: usize, start: usize, data: &[T]) {
        let (mut t, mut done, lda, a) = (start, 0, self.lda, self.ptr);
        // Every entry written lies at or before the last row of the last column touched.
        let last_col = c0 + (start + data.len() - 1) / h;
        assert!(
            index(self.upper, lda, r0 + h - 1, last_col) < self.len,
            "scatter past the end of A"
        );
        while done < data.len() {
            let (r, c) = (t % h, t / h);
            let run = (h - r).min(data.len() - done);
            let col = c0 + c;
            if self.upper && r == 0 && run == h {
                let cols = ((data.len() - done) / h).min(TILE);
                let tile = &data[done..done + cols * h];
                for k in 0..h {
                    let row = r0 + k;
                    // Columns col.. col+j of L in row `row`: those with col + j <= row.
                    let width = cols.min((row + 1).saturating_sub(col));
                    let dst = a.add(col + row * lda);
                    for j in 0..width {
                        *dst.add(j) = tile[j * h + k];
                    }
                }
                done += cols * h;
                t += cols * h;
                continue;
            }
            let first = r0 + r;
            let lo = first.max(col);
            let hi = first + run;
            if lo < hi {
                let src = &data[done + (lo - first)..done + run];
                if self.upper {
                    for (k, &x) in src.iter().enumerate() {
                        *a.add(col + (lo + k) * lda) = x;
                    }
                } else {
                    std::ptr::copy_nonoverlapping(src.as_ptr(), a.add(lo + col * lda), src.len());
                }
            }
            done += run;
            t += run;
        }
    }
}

/// Where band column `j` of the lower view goes in LAPACK's band storage: entry `d` (row
/// `j + d` of `L`) for `d = 0..=kd`.
pub(super) fn band_index(upper: bool, kd: usize, ldab: usize, j: usize, d: usize) -> usize {
    if upper {
        (kd - d) + (j + d) * ldab
    } else {
        d + j * ldab
    }
}

/// Writes band column `j` (entry `d` is row `j + d` of `L`) into AB.
pub(super) fn put_band<T: Real>(
    ab: &mut [T],
    ldab: usize,
    kd: usize,
    n: usize,
    upper: bool,
    j: usize,
    column: impl Fn(usize) -> T,
) {
    for d in 0..=kd.min(n - 1 - j) {
        ab[band_index(upper, kd, ldab, j, d)] = column(d);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testmat::Rng;

    /// Gather and scatter in arbitrary pieces (as the GPU's staging chunks cut them) agree with
    /// entry-by-entry copies, and scatter writes nothing above the diagonal of `L`.
    #[test]
    fn gather_and_scatter_in_pieces() {
        gather_and_scatter(
            70,
            75,
            &[(0, 0, 70, 70), (5, 5, 65, 40), (30, 3, 40, 33)],
            5,
        );
    }

    /// The same with blocks large enough to be copied by several threads (pieces that start
    /// and end inside columns).
    #[test]
    fn gather_and_scatter_on_threads() {
        gather_and_scatter(1100, 1103, &[(0, 0, 1100, 1100), (9, 9, 1091, 900)], 2);
    }

    // t indexes the data and the positions it maps to.
    #[allow(clippy::needless_range_loop)]
    fn gather_and_scatter(
        n: usize,
        lda: usize,
        blocks: &[(usize, usize, usize, usize)],
        extra_cuts: usize,
    ) {
        let mut rng = Rng::new(crate::testmat::seed_from_time());
        for upper in [false, true] {
            for &(r0, c0, h, w) in blocks {
                let a0: Vec<f64> = (0..lda * n).map(|_| rng.range(-1.0, 1.0)).collect();
                let mut a = a0.clone();
                let host = HostMat {
                    a: &mut a,
                    lda,
                    upper,
                };
                let want: Vec<f64> = (0..h * w)
                    .map(|t| host.get(r0 + t % h, c0 + t / h))
                    .collect();
                let mut cuts = vec![0, h * w];
                for _ in 0..extra_cuts {
                    cuts.push(rng.below(h * w));
                }
                cuts.sort();
                let mut got = vec![0.0; h * w];
                for p in cuts.windows(2) {
                    host.gather(r0, h, c0, p[0], &mut got[p[0]..p[1]]);
                }
                assert_eq!(got, want, "gather upper={upper} {:?}", (r0, c0, h, w));
                let data: Vec<f64> = (0..h * w).map(|_| rng.range(2.0, 3.0)).collect();
                let mut host = HostMat {
                    a: &mut a,
                    lda,
                    upper,
                };
                for p in cuts.windows(2) {
                    host.scatter(r0, h, c0, p[0], &data[p[0]..p[1]]);
                }
                for t in 0..h * w {
                    let (r, c) = (r0 + t % h, c0 + t / h);
                    let idx = host.index(r, c);
                    let expect = if r >= c { data[t] } else { a0[idx] };
                    assert_eq!(host.a[idx], expect, "scatter upper={upper} ({r},{c})");
                }
                let mut touched = vec![false; lda * n];
                for t in 0..h * w {
                    touched[host.index(r0 + t % h, c0 + t / h)] = true;
                }
                for i in (0..lda * n).step_by(7) {
                    if !touched[i] {
                        assert_eq!(host.a[i], a0[i], "scatter wrote outside the block");
                    }
                }
            }
        }
    }
}
