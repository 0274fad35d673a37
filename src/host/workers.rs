//! Work spread over scoped host threads without a panic when the OS refuses one:
//! `std::thread::scope`'s `spawn` panics then, which would abort a host program that cannot
//! unwind. A part whose thread is refused runs on the calling thread instead. The library
//! starts its threads here only (`clippy.toml` disallows the spawns elsewhere).

use std::io;
use std::sync::Mutex;
use std::thread::{Scope, ScopedJoinHandle};

/// What starts a scoped thread: the OS ([`OsThreads`]), or a test's stand-in that refuses.
pub(crate) trait Spawner: Sync {
    fn spawn<'scope, 'env, F, R>(
        &self,
        scope: &'scope Scope<'scope, 'env>,
        f: F,
    ) -> io::Result<ScopedJoinHandle<'scope, R>>
    where
        F: FnOnce() -> R + Send + 'scope,
        R: Send + 'scope;
}

/// Threads from the OS.
pub(crate) struct OsThreads;

impl Spawner for OsThreads {
    #[allow(clippy::disallowed_methods)] // The refusal goes back to the caller.
    fn spawn<'scope, 'env, F, R>(
        &self,
        scope: &'scope Scope<'scope, 'env>,
        f: F,
    ) -> io::Result<ScopedJoinHandle<'scope, R>>
    where
        F: FnOnce() -> R + Send + 'scope,
        R: Send + 'scope,
    {
        std::thread::Builder::new().spawn_scoped(scope, f)
    }
}

/// Runs `work` on a thread of its own with a stack of `stack_bytes`, for work that needs more
/// stack than the calling thread may have. `Err` when the OS refuses the thread (there is no
/// falling back on the caller's stack); `Ok(Err(payload))` when `work` panicked.
#[allow(clippy::disallowed_methods)] // The refusal goes back to the caller.
pub(crate) fn run_with_stack<R: Send>(
    stack_bytes: usize,
    work: impl FnOnce() -> R + Send,
) -> io::Result<std::thread::Result<R>> {
    std::thread::scope(|s| {
        std::thread::Builder::new()
            .stack_size(stack_bytes)
            .spawn_scoped(s, work)
            .map(|h| h.join())
    })
}

/// Runs `background` on a thread of its own while the calling thread runs `foreground` (work
/// that must stay on this thread, e.g. for its CUDA context), and returns both results; where
/// the OS refuses the thread, `background` runs here afterwards. A panic in `background` is
/// raised again here.
pub(crate) fn alongside<A: Send, B>(
    background: impl FnOnce() -> A + Send,
    foreground: impl FnOnce() -> B,
) -> (A, B) {
    alongside_with(&OsThreads, background, foreground)
}

/// [`alongside`] with threads from `spawner`.
fn alongside_with<S: Spawner, A: Send, B>(
    spawner: &S,
    background: impl FnOnce() -> A + Send,
    foreground: impl FnOnce() -> B,
) -> (A, B) {
    // A refused spawn drops its closure: the work waits in a slot the closure only borrows.
    let slot = Mutex::new(Some(background));
    let take = || slot.lock().unwrap_or_else(|e| e.into_inner()).take();
    std::thread::scope(|s| {
        let helper = spawner.spawn(s, || take().map(|f| f())).ok();
        let b = foreground();
        let a = match helper.map(|h| h.join()) {
            Some(Ok(Some(a))) => a,
            Some(Err(payload)) => std::panic::resume_unwind(payload),
            _ => take().expect("work not taken by a thread")(),
        };
        (a, b)
    })
}

/// A part that waits for its thread, or for the calling thread.
enum Runner<'scope, R> {
    Thread(ScopedJoinHandle<'scope, Option<R>>),
    Here,
}

/// Runs `work` once on each of up to `threads` threads (the calling one included), all at
/// once; `work` takes its pieces from a queue that the threads share, until none is left. A
/// thread that cannot be started is not an error: the threads that did start, and the caller,
/// do its share. So `work` must finish on any number of threads from 1 (the caller alone).
pub fn run_on_threads(threads: usize, work: impl Fn() + Sync) {
    run_on_threads_with(&OsThreads, threads, work)
}

/// [`run_on_threads`] with threads from `spawner`.
pub(crate) fn run_on_threads_with<S: Spawner>(spawner: &S, threads: usize, work: impl Fn() + Sync) {
    std::thread::scope(|s| {
        for _ in 1..threads {
            if spawner.spawn(s, &work).is_err() {
                break;
            }
        }
        work();
    });
}

/// Runs `work` on every part, each on a thread of its own, and returns the results in the
/// parts' order. Once the OS refuses a thread, no more are asked for: the parts left run on
/// the calling thread, one after another, while the started threads work. A part whose thread
/// panicked gives `Err` with the panic's payload, for the caller to reject or re-raise (never
/// to pass for a result).
pub(crate) fn run_parts<I: Send, R: Send>(
    parts: Vec<I>,
    work: &(impl Fn(I) -> R + Sync),
) -> Vec<std::thread::Result<R>> {
    run_parts_with(&OsThreads, parts, work)
}

/// [`run_parts`] with threads from `spawner`.
pub(crate) fn run_parts_with<S: Spawner, I: Send, R: Send>(
    spawner: &S,
    parts: Vec<I>,
    work: &(impl Fn(I) -> R + Sync),
) -> Vec<std::thread::Result<R>> {
    // A refused spawn drops its closure, so a part travels in a slot that the closure only
    // borrows: the calling thread takes it back from there.
    let slots: Vec<Mutex<Option<I>>> = parts.into_iter().map(|p| Mutex::new(Some(p))).collect();
    let take = |slot: &Mutex<Option<I>>| slot.lock().unwrap_or_else(|e| e.into_inner()).take();
    std::thread::scope(|s| {
        let mut refused = false;
        let runners: Vec<Runner<'_, R>> = slots
            .iter()
            .map(|slot| {
                if refused {
                    return Runner::Here;
                }
                match spawner.spawn(s, move || take(slot).map(work)) {
                    Ok(h) => Runner::Thread(h),
                    Err(_) => {
                        refused = true;
                        Runner::Here
                    }
                }
            })
            .collect();
        let mut here: Vec<Option<std::thread::Result<Option<R>>>> = slots
            .iter()
            .zip(&runners)
            .map(|(slot, r)| match r {
                // Caught, so that a part run here fails as one on a thread does.
                Runner::Here => Some(std::panic::catch_unwind(std::panic::AssertUnwindSafe(
                    || take(slot).map(work),
                ))),
                Runner::Thread(_) => None,
            })
            .collect();
        runners
            .into_iter()
            .zip(here.iter_mut())
            .map(|(r, done)| match r {
                Runner::Here => done
                    .take()
                    .expect("a part left here ran here")
                    .map(|r| r.expect("a part left here found its slot")),
                // A thread that ran found its part in the slot (nothing else takes it).
                Runner::Thread(h) => h
                    .join()
                    .map(|r| r.expect("a started thread found its part")),
            })
            .collect()
    })
}

/// The results of [`run_parts`], or the first part's panic raised again on this thread (as a
/// panic in a scoped thread did before these were joined one by one).
pub(crate) fn or_resume<R>(results: Vec<std::thread::Result<R>>) -> Vec<R> {
    results
        .into_iter()
        .map(|r| r.unwrap_or_else(|payload| std::panic::resume_unwind(payload)))
        .collect()
}

/// A stand-in for an OS that starts only the first `allow` threads asked for, for the tests of
/// code that must finish with fewer threads than it asks for.
#[cfg(test)]
pub(crate) struct Refusing {
    pub(crate) allow: usize,
    pub(crate) asked: std::sync::atomic::AtomicUsize,
}

#[cfg(test)]
impl Refusing {
    pub(crate) fn after(allow: usize) -> Self {
        Refusing {
            allow,
            asked: std::sync::atomic::AtomicUsize::new(0),
        }
    }
}

#[cfg(test)]
impl Spawner for Refusing {
    fn spawn<'scope, 'env, F, R>(
        &self,
        scope: &'scope Scope<'scope, 'env>,
        f: F,
    ) -> io::Result<ScopedJoinHandle<'scope, R>>
    where
        F: FnOnce() -> R + Send + 'scope,
        R: Send + 'scope,
    {
        use std::sync::atomic::Ordering;
        if self.asked.fetch_add(1, Ordering::SeqCst) < self.allow {
            OsThreads.spawn(scope, f)
        } else {
            Err(io::Error::other("refused"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn alongside_runs_both_with_or_without_a_thread() {
        for allow in 0..2 {
            let spawner = Refusing::after(allow);
            let data = [2u64, 3, 5];
            let (a, b) = alongside_with(&spawner, || data.iter().sum::<u64>(), || data[0] * 7);
            assert_eq!((a, b), (10, 14), "{allow} threads allowed");
        }
        let panicked = std::panic::catch_unwind(|| {
            alongside(|| panic!("background"), || 1);
        });
        assert!(panicked.is_err());
    }

    #[test]
    fn refused_threads_run_here() {
        for allow in 0..6 {
            let spawner = Refusing::after(allow);
            let mut data = vec![1u64; 40];
            let parts: Vec<&mut [u64]> = data.chunks_mut(8).collect();
            let sums = run_parts_with(&spawner, parts, &|p: &mut [u64]| {
                p.iter_mut().for_each(|v| *v *= 3);
                p.iter().sum::<u64>()
            });
            let sums: Vec<u64> = or_resume(sums);
            assert_eq!(sums, vec![24; 5], "allow {allow}");
            assert!(data.iter().all(|&v| v == 3), "allow {allow}");
            // No more threads are asked for after the first refusal.
            assert_eq!(spawner.asked.load(Ordering::SeqCst), (allow + 1).min(5));
        }
    }

    #[test]
    fn a_panicked_part_is_an_error() {
        let results = run_parts((0..4).collect(), &|i: i32| {
            if i == 2 {
                panic!("part 2");
            }
            i
        });
        assert!(results[2].is_err());
        assert_eq!(results[3].as_ref().ok(), Some(&3));
        // Also when the part runs on this thread because its own was refused.
        let refusing = Refusing::after(1);
        let results = run_parts_with(&refusing, (0..4).collect(), &|i: i32| {
            if i == 2 {
                panic!("part 2 here");
            }
            i
        });
        assert!(results[2].is_err());
        assert_eq!(results[3].as_ref().ok(), Some(&3));
    }

    #[test]
    fn refused_threads_leave_the_queue_to_those_started() {
        for allow in 0..4 {
            let spawner = Refusing::after(allow);
            let (next, runs) = (AtomicUsize::new(0), AtomicUsize::new(0));
            let done: Vec<AtomicUsize> = (0..100).map(|_| AtomicUsize::new(0)).collect();
            run_on_threads_with(&spawner, 6, || {
                runs.fetch_add(1, Ordering::SeqCst);
                while let Some(d) = done.get(next.fetch_add(1, Ordering::SeqCst)) {
                    d.fetch_add(1, Ordering::SeqCst);
                }
            });
            assert!(
                done.iter().all(|d| d.load(Ordering::SeqCst) == 1),
                "allow {allow}"
            );
            // The threads started and the caller; none asked for after the first refusal.
            assert_eq!(runs.load(Ordering::SeqCst), allow + 1);
            assert_eq!(spawner.asked.load(Ordering::SeqCst), allow + 1);
        }
    }
}
