//! Facts about the host machine, read once per process; fallible allocation; work spread over
//! its threads ([`workers`]).

use std::sync::OnceLock;

pub mod workers;

/// The number of threads the process may run at once. `available_parallelism` reads cgroup
/// files on every call (tens of system calls), which dominated tiny LAPACK calls, so it is
/// read once.
pub fn threads() -> usize {
    static THREADS: OnceLock<usize> = OnceLock::new();
    *THREADS.get_or_init(|| std::thread::available_parallelism().map_or(1, |t| t.get()))
}

/// A vector of `len` copies of `value`, or `None` when the allocation fails (instead of
/// aborting the host program, as `vec![value; len]` would). The shared way for a family to
/// allocate host memory whose size depends on the problem.
pub fn try_vec<T: Clone>(len: usize, value: T) -> Option<Vec<T>> {
    let mut v = Vec::new();
    v.try_reserve_exact(len).ok()?;
    v.resize(len, value);
    Some(v)
}

/// Host memory that a call needs could not be allocated. Nothing the caller gave has been
/// written when this is returned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NoMemory {
    /// The bytes of the allocation that failed.
    pub bytes: usize,
}

impl NoMemory {
    /// The failure of an allocation of `len` elements of `T`.
    pub fn of<T>(len: usize) -> NoMemory {
        NoMemory {
            bytes: len.saturating_mul(std::mem::size_of::<T>()),
        }
    }
}

impl std::fmt::Display for NoMemory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "cannot allocate {} MiB of host memory",
            self.bytes.div_ceil(1 << 20)
        )
    }
}

impl std::error::Error for NoMemory {}

/// An empty vector with room for `len` elements, or `None` if that memory cannot be had.
/// Nothing is written (or, for fresh pages, touched) until the caller fills it.
pub fn try_room<T>(len: usize) -> Option<Vec<T>> {
    let mut v = Vec::new();
    v.try_reserve_exact(len).ok()?;
    Some(v)
}

/// The first `len` elements of `room`, set to zero: only they are written, so a step that
/// uses a small part of a large reservation pays for that part only.
///
/// # Panics
/// If `len` exceeds the room reserved (a sizing bug: it would reallocate infallibly).
pub fn take_room<T: ZeroBits>(room: &mut Vec<T>, len: usize) -> &mut [T] {
    assert!(len <= room.capacity(), "workspace sized too small");
    room.clear();
    room.resize(len, unsafe_zero());
    room
}

/// Types for which all-zero bytes are a valid value.
///
/// # Safety
/// Only for types whose every field is a number (no references, no niches).
pub unsafe trait ZeroBits: Copy {}
// SAFETY: plain numbers; zero bytes are 0 (or +0.0).
unsafe impl ZeroBits for f32 {}
unsafe impl ZeroBits for f64 {}
unsafe impl ZeroBits for i32 {}
unsafe impl ZeroBits for u32 {}
unsafe impl ZeroBits for u8 {}
unsafe impl ZeroBits for usize {}

/// A vector of `len` zeros, or `None` when the allocation fails. Unlike [`try_vec`] it writes
/// nothing: a large block comes zeroed from the system (calloc), and only the pages a stage
/// touches cost anything, so a generous workspace that a small problem barely uses is cheap.
pub fn try_zeroed<T: ZeroBits>(len: usize) -> Option<Vec<T>> {
    if len == 0 || std::mem::size_of::<T>() == 0 {
        return try_vec(len, unsafe_zero());
    }
    let layout = std::alloc::Layout::array::<T>(len).ok()?;
    // SAFETY: a layout of non-zero size; the memory is zeroed, which is a valid `T`.
    let ptr = unsafe { std::alloc::alloc_zeroed(layout) } as *mut T;
    if ptr.is_null() {
        return None;
    }
    // SAFETY: allocated by the global allocator with `T`'s layout for `len` elements, all
    // initialised (zero).
    Some(unsafe { Vec::from_raw_parts(ptr, len, len) })
}

/// Writes a zero into each page of `room` (from [`try_zeroed`]: its pages still unmapped) on
/// `threads` of the host's threads, so that the OS maps them now, not during a later write by
/// one thread (which maps only 1–2 GB/s). Only for memory that holds zeros or will be wholly
/// overwritten.
pub fn fault_in<T: ZeroBits + Send>(room: &mut [T], threads: usize) {
    let per_page = (4096 / std::mem::size_of::<T>().max(1)).max(1);
    let part = room
        .len()
        .div_ceil(threads.max(1))
        .next_multiple_of(per_page);
    let parts: Vec<&mut [T]> = room.chunks_mut(part.max(1)).collect();
    // A part whose thread panicked only leaves its pages to be mapped later.
    let _ = workers::run_parts(parts, &|p: &mut [T]| {
        for x in p.iter_mut().step_by(per_page) {
            *x = unsafe_zero();
        }
    });
}

/// The zero of a `ZeroBits` type.
fn unsafe_zero<T: ZeroBits>() -> T {
    // SAFETY: all-zero bytes are a valid `T` (the trait's contract).
    unsafe { std::mem::zeroed() }
}

/// Copies the columns of `n` rows packed in `from` into `to` (leading dimension `ldz`, from
/// its first column) on up to 8 of the host's threads (eigenvectors into the caller's array):
/// the first touch of a caller's freshly allocated Z faults its pages in, and one thread
/// copying 2 GB that way took most of an n = 16000 call's 2.2 s on an H200 host (the GPU's
/// stages took 0.42 s).
pub fn scatter_columns<T: Copy + Send + Sync>(from: &[T], n: usize, to: &mut [T], ldz: usize) {
    let w = from.len() / n;
    let threads = threads().clamp(1, 8).min(w.max(1));
    let per = w.div_ceil(threads).max(1);
    let mut parts = Vec::with_capacity(threads);
    let mut rest = to;
    for src in from.chunks(per * n) {
        let cols = src.len() / n;
        // Every part but the last ends at its last column's end of LDZ rows.
        let take = ((cols - 1) * ldz + n).max(rest.len().min(cols * ldz));
        let (head, tail) = std::mem::take(&mut rest).split_at_mut(take);
        parts.push((src, head));
        rest = tail;
    }
    let copy = |(src, dst): (&[T], &mut [T])| {
        for (j, col) in src.chunks(n).enumerate() {
            dst[j * ldz..j * ldz + n].copy_from_slice(col);
        }
    };
    workers::or_resume(workers::run_parts(parts, &copy));
}

#[cfg(test)]
mod tests {
    use super::{fault_in, scatter_columns};

    /// Writes only zeros, one per page, within the slice, at any thread count, lengths that
    /// split unevenly and a slice shorter than a page.
    #[test]
    fn fault_in_writes_a_zero_per_page_and_nothing_else() {
        for len in [1, 511, 512, 513, 100_003] {
            for threads in [0, 1, 3, 16] {
                let mut v = vec![7.0f64; len + 2];
                fault_in(&mut v[1..len + 1], threads);
                let zeros: Vec<usize> = (0..len + 2).filter(|&i| v[i] == 0.0).collect();
                let want: Vec<usize> = (0..len + 2).filter(|&i| i >= 1 && i <= len).collect();
                assert!(
                    zeros.iter().all(|i| want.contains(i)),
                    "len {len}: outside the slice"
                );
                assert!(
                    want.chunks(512)
                        .all(|page| page.iter().any(|i| zeros.contains(i))),
                    "len {len}, threads {threads}: a page without its zero"
                );
            }
        }
    }

    /// Every column lands at its LDZ offset, rows past N and columns past the last untouched,
    /// for column counts that split unevenly over the threads.
    #[test]
    fn scatter_columns_places_every_column() {
        let (n, ldz) = (5, 7);
        for w in [1, 2, 3, 9, 17, 64] {
            let from: Vec<f64> = (0..w * n).map(|i| i as f64).collect();
            let mut to = vec![-1.0; (w + 1) * ldz];
            scatter_columns(&from, n, &mut to[..(w - 1) * ldz + n], ldz);
            for j in 0..=w {
                for i in 0..ldz {
                    let want = if j < w && i < n {
                        (j * n + i) as f64
                    } else {
                        -1.0
                    };
                    assert_eq!(to[j * ldz + i], want, "w = {w}, row {i}, column {j}");
                }
            }
        }
    }
}
