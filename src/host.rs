//! Facts about the host machine, read once per process.

use std::sync::OnceLock;

/// The number of threads the process may run at once. `available_parallelism` reads cgroup
/// files on every call (tens of system calls), which dominated tiny LAPACK calls, so it is
/// read once.
pub fn threads() -> usize {
    static THREADS: OnceLock<usize> = OnceLock::new();
    *THREADS.get_or_init(|| std::thread::available_parallelism().map_or(1, |t| t.get()))
}
