//! Host arrays that move by DMA (page-locked by the caller, or for the call) and a system the
//! window solve may answer: the transfers overlap the solve ([`solve_overlapped`]). The rows
//! go up in stretches on a stream of their own, queued before the plan is made (which then
//! costs nothing beside them); each stretch's windows run as soon as their rows are there; the
//! X they own goes down into `B` on a third stream while later rows still go up (the bus
//! carries both directions at once). At n = 2^23 on an H200 host the call took 7.0 ms where
//! its upload alone takes 5.8 ms, and uploading, solving and downloading one after another
//! 7.7 ms.
//!
//! The download is speculative: `B` is saved on the host first ([`SavedB`]), in row order by
//! helper threads ([`SaveInOrder`]), and a stretch goes down only once its rows are saved and
//! while no window has given up. Where the window answer is rejected after all, the full
//! recursion runs on the uploaded system (the windows only read it here), and `B` is restored
//! unless its answer is accepted.

use super::*;
use crate::host::workers::run_on_threads;
use cudarc::driver::sys;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// Stretches per system: enough that the last stretch's solve and download, which nothing
/// overlaps, are short beside the upload.
const STRETCHES: usize = 16;

/// Fewest rows per stretch: each costs some transfers, a launch and a wait.
const MIN_STRETCH_ROWS: usize = 1 << 16;

/// One stretch of rows as queued: the windows it launched and the point of the plan's stream
/// after them, where its copy of the flags is read.
struct Stretch {
    rows: std::ops::Range<usize>,
    windows: std::ops::Range<usize>,
    done: cudarc::driver::CudaEvent,
}

/// Solves as [`solve_whole`] does, its transfers overlapped with the window solve: `io` moves
/// by DMA, `a` and `f` are the system's device arrays, `stream` the call's. Where the plan does
/// not try the window solve after all, the full recursion runs once the upload is done.
#[allow(clippy::too_many_arguments)]
pub(super) fn solve_overlapped<T: Real>(
    gpu: &'static Gpu,
    stream: &Arc<CudaStream>,
    o: &GpuOptions,
    io: &mut HostIo<T>,
    m: Bands<'_, T>,
    b: &mut [T],
    ldb: usize,
    nrhs: usize,
    a: DevMatrix,
    f: DevCols,
) -> Result<Result<(), Reject>, DeviceError> {
    let n = a.n;
    let t0 = Instant::now();
    let words = match SavedB::<T>::reserve(n, nrhs) {
        Ok(words) => words,
        Err(r) => return Ok(Err(r)),
    };
    let mut saved = SavedB::empty(b, ldb, n, nrhs, words);
    // Declared after `saved`, so dropped (each waits for its stream) before it: no transfer
    // touches B when a rejected answer restores it.
    let up = gpu.stream()?;
    let down = gpu.stream()?;
    // The uploads first: they need only the device arrays, and the plan is made while they run.
    let per = n.div_ceil(STRETCHES).max(MIN_STRETCH_ROWS);
    let mut arrived = Vec::new();
    for r0 in (0..n).step_by(per) {
        let r1 = (r0 + per).min(n);
        upload_rows(&up, m, saved.b, ldb, nrhs, a, f, r0..r1)?;
        arrived.push((r1, up.record_event(None)?));
    }
    let mut plan = Plan::<T>::new(gpu, stream.clone(), o, a, nrhs)?;
    if let Err(r) = plan.reserve_host_sums() {
        return Ok(Err(r));
    }
    let w = plan.windows()?;
    let mut polls = gpu.pinned::<i32>(STRETCHES + 1)?;
    let slots = polls.as_mut_slice()?.as_mut_ptr();
    plan.clear()?;
    let mut stretches = Vec::new();
    let mut launched = 0;
    let rows = w.map_or(0, |w| w.rows);
    for (k, (r1, uploaded)) in arrived.iter().enumerate() {
        stream.wait(uploaded)?;
        let ready = w.map_or(0, |w| w.ready(*r1, n));
        if let Some(w) = &w {
            plan.launch_windows(w, f, launched, ready, false)?;
        }
        // SAFETY: slot k of `polls` (STRETCHES + 1 > k elements, n / per ≤ STRETCHES), which
        // `mark` keeps from being reused until the copy is done; the flags are an i32 in the
        // plan's device memory.
        unsafe {
            sys::cuMemcpyDtoHAsync_v2(
                slots.add(k).cast(),
                plan.flags(),
                std::mem::size_of::<i32>(),
                stream.cu_stream(),
            )
            .result()?
        };
        polls.mark(stream)?;
        stretches.push(Stretch {
            rows: (launched * rows).min(n)..(ready * rows).min(n),
            windows: launched..ready,
            done: stream.record_event(None)?,
        });
        launched = ready;
    }
    // B is saved in row order by helper threads (and by this one where a stretch it is about
    // to overwrite is not saved yet); while no window has given up, each stretch's X goes down
    // once its windows are done and its rows are saved.
    let parts = crate::device::memory::copy_threads(n * nrhs * sz::<T>());
    let save = SaveInOrder::new(&mut saved, per, parts);
    let (_, looped) = alongside(
        || run_on_threads(parts.saturating_sub(1), || while save.run_one() {}),
        || -> Result<usize, DeviceError> {
            let mut down_to = 0;
            for (k, s) in stretches.iter().enumerate() {
                if down_to < s.rows.start || s.windows.is_empty() {
                    continue;
                }
                s.done.synchronize()?;
                // SAFETY: written by the copy `done` follows.
                if unsafe { std::ptr::read_volatile(slots.add(k)) } != 0 {
                    continue;
                }
                save.wait_for(s.rows.end)?;
                down.wait(&s.done)?;
                // SAFETY: B's rows below s.rows.end are saved, and no thread reads them any
                // more; B is page-locked and outlives the download (waited for before return).
                unsafe { download_rows(&down, plan.x_cols(), save.b, ldb, nrhs, s.rows.clone())? };
                down_to = s.rows.end;
            }
            Ok(down_to)
        },
    );
    // Whatever the helpers left (none started, or the loop ended early).
    while save.run_one() {}
    let all_saved = save.complete();
    drop(save);
    if all_saved {
        saved.rows = n;
    }
    let down_to = looped?;
    let t1 = Instant::now();
    let accepted = match &w {
        Some(w) => plan.window_verdict(w, f, &mut None::<fn()>)? && down_to == n,
        None => false,
    };
    down.synchronize()?;
    let t2 = Instant::now();
    let (mut steps, mut window) = (0, accepted);
    if !accepted {
        plan.skip_window();
        let x = match plan.run(f, || ())? {
            Ok(x) => x,
            Err(r) => return Ok(Err(r)),
        };
        io.download(stream, x, saved.b, ldb, n, nrhs)?;
        let p = last_phases();
        (steps, window) = (p.refine_steps, p.window);
    }
    saved.committed = true;
    let t3 = Instant::now();
    let ms = |from: Instant, to: Instant| (to - from).as_secs_f64() * 1e3;
    crate::dispatch::debug(|| {
        format!(
            "gtsv gpu: n={n} {}, overlapped in {} stretches: up and windows {:.3} ms, verdict \
             {:.3} ms ({}), rest {:.3} ms",
            io.mode(),
            stretches.len(),
            ms(t0, t1),
            ms(t1, t2),
            if accepted { "accepted" } else { "rejected" },
            ms(t2, t3)
        )
    });
    PHASES.with(|p| {
        p.set(Phases {
            upload: (t1 - t0).as_secs_f64(),
            solve: (t2 - t1).as_secs_f64(),
            download: (t3 - t2).as_secs_f64(),
            refine_steps: steps,
            window,
            chunks: 1,
            transfer: Some(io.mode()),
            overlapped: true,
        })
    });
    Ok(Ok(()))
}

/// Queues the upload of rows `rows` of the matrix `m` into `a` and of B's `nrhs` columns
/// (leading dimension `ldb`) into `f` on `stream`.
#[allow(clippy::too_many_arguments)]
fn upload_rows<T: Real>(
    stream: &CudaStream,
    m: Bands<'_, T>,
    b: &[T],
    ldb: usize,
    nrhs: usize,
    a: DevMatrix,
    f: DevCols,
    rows: std::ops::Range<usize>,
) -> Result<(), DeviceError> {
    let n = a.n;
    let at = |ptr: CUdeviceptr, i: usize| ptr + (i * sz::<T>()) as u64;
    let off = (rows.start.min(n - 1), rows.end.min(n - 1));
    let mut parts = vec![
        (&m.dl[off.0..off.1], at(a.dl, off.0)),
        (&m.d[rows.clone()], at(a.d, rows.start)),
        (&m.du[off.0..off.1], at(a.du, off.0)),
    ];
    for col in 0..nrhs {
        let src = &b[col * ldb + rows.start..col * ldb + rows.end];
        parts.push((src, at(f.ptr, col * f.ld + rows.start)));
    }
    for (src, dst) in parts.into_iter().filter(|(s, _)| !s.is_empty()) {
        // SAFETY: dst holds src.len() elements (the solve's allocations); src is page-locked
        // (by the caller, or until the transfers are dropped, after this stream is waited for).
        unsafe { cu::memcpy_htod_async(dst, src, stream.cu_stream())? };
    }
    Ok(())
}

/// Queues the download of rows `rows` of X into B's (at `b`, leading dimension `ldb`) on
/// `stream`.
///
/// # Safety
/// `b` holds `nrhs` columns of at least `rows.end` rows; those rows of B are page-locked, not
/// accessed otherwise until the stream is waited for, and outlive the copy.
unsafe fn download_rows<T: Real>(
    stream: &CudaStream,
    x: DevCols,
    b: *mut T,
    ldb: usize,
    nrhs: usize,
    rows: std::ops::Range<usize>,
) -> Result<(), DeviceError> {
    for col in 0..nrhs {
        // SAFETY: this function's contract.
        let dst =
            unsafe { std::slice::from_raw_parts_mut(b.add(col * ldb + rows.start), rows.len()) };
        let src = x.ptr + ((col * x.ld + rows.start) * sz::<T>()) as u64;
        // SAFETY: src holds dst.len() elements; dst as above.
        unsafe { cu::memcpy_dtoh_async(dst, src, stream.cu_stream())? };
    }
    Ok(())
}

/// B's first `n` rows copied into [`SavedB`]'s words in row order: stretch by stretch (of
/// `per` rows), each cut into `parts` pieces that threads claim in turn ([`Self::run_one`]).
/// Works through raw pointers, since X goes down into rows already saved (by DMA) while later
/// rows are still read.
struct SaveInOrder<T> {
    b: *mut T,
    ldb: usize,
    n: usize,
    nrhs: usize,
    saved: *mut T,
    per: usize,
    parts: usize,
    /// The next piece to claim: piece i is part i % parts of stretch i / parts.
    next: AtomicUsize,
    /// Pieces done, per stretch.
    done: Vec<AtomicUsize>,
    /// A piece's thread panicked: its stretch will never be complete.
    failed: AtomicBool,
}

// SAFETY: the pointers are B's and its saved copy's, which outlive the value (it borrows the
// `SavedB`); threads write disjoint pieces of the copy and only read B's rows, which the DMA
// overwrites only once they are saved.
unsafe impl<T: Send> Send for SaveInOrder<T> {}
unsafe impl<T: Send> Sync for SaveInOrder<T> {}

impl<T: Real> SaveInOrder<T> {
    fn new(saved: &mut SavedB<'_, T>, per: usize, parts: usize) -> Self {
        let stretches = saved.n.div_ceil(per);
        assert!(saved.saved.len() * 8 >= saved.n * saved.nrhs * sz::<T>());
        SaveInOrder {
            b: saved.b.as_mut_ptr(),
            ldb: saved.ldb,
            n: saved.n,
            nrhs: saved.nrhs,
            saved: saved.saved.as_mut_ptr().cast(),
            per,
            parts: parts.max(1),
            next: AtomicUsize::new(0),
            done: (0..stretches).map(|_| AtomicUsize::new(0)).collect(),
            failed: AtomicBool::new(false),
        }
    }

    /// Claims the next piece and copies it: false when none was left.
    fn run_one(&self) -> bool {
        let i = self.next.fetch_add(1, Ordering::Relaxed);
        let (k, part) = (i / self.parts, i % self.parts);
        if k >= self.done.len() {
            return false;
        }
        let failed = PanicFlag(&self.failed);
        let r0 = k * self.per;
        let len = self.per.min(self.n - r0);
        let piece = len.div_ceil(self.parts);
        let rows = (r0 + part * piece).min(r0 + len)..(r0 + (part + 1) * piece).min(r0 + len);
        for c in 0..self.nrhs {
            // SAFETY: rows < n of column c, in B (leading dimension ldb) and in the copy
            // (columns of n); this piece is claimed by this thread only.
            unsafe {
                std::ptr::copy_nonoverlapping(
                    self.b.add(c * self.ldb + rows.start),
                    self.saved.add(c * self.n + rows.start),
                    rows.len(),
                )
            };
        }
        std::mem::forget(failed);
        self.done[k].fetch_add(1, Ordering::Release);
        true
    }

    /// Returns once B's rows below `rows` are saved, copying unclaimed pieces meanwhile.
    fn wait_for(&self, rows: usize) -> Result<(), DeviceError> {
        let last = rows.div_ceil(self.per).min(self.done.len());
        for d in &self.done[..last] {
            while d.load(Ordering::Acquire) < self.parts {
                if self.failed.load(Ordering::Relaxed) {
                    return Err(DeviceError::Driver("gtsv: saving B failed".into()));
                }
                if !self.run_one() {
                    std::thread::yield_now();
                }
            }
        }
        Ok(())
    }

    /// Whether every piece is done (once no thread works on one).
    fn complete(&self) -> bool {
        self.done
            .iter()
            .all(|d| d.load(Ordering::Acquire) == self.parts)
    }
}

/// Marks a piece's thread failed unless it is forgotten (it drops only while unwinding).
struct PanicFlag<'a>(&'a AtomicBool);

impl Drop for PanicFlag<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}
