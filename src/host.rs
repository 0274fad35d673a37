//! Facts about the host machine, read once per process.

use std::sync::OnceLock;

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
