//! How a host-pointer solve moves the caller's arrays to the GPU and `X` back (the
//! `gtsv_host_transfer` setting, [`GtsvTransfer`]): through two pinned buffers filled by the
//! calling thread (`pageable`, the original path), through pinned buffers filled by worker
//! threads while earlier pieces are in flight (`staged`), or by DMA straight from the caller's
//! arrays, page-locked for the call (`register`). Arrays the caller keeps page-locked already
//! move by DMA whatever the setting (`locked`). The solve is the same in every mode, so the
//! answers agree bit for bit; only the time differs.

use super::{sz, DevCols, DevMatrix, Staging};
use crate::config::{GtsvHostTransfer, GtsvTransfer};
use crate::device::memory::{copy_threads, Pinned, Registered};
use crate::device::{DeviceError, Gpu};
use crate::host::workers::{or_resume, run_parts};
use crate::real::Real;
use cudarc::driver::sys::CUdeviceptr;
use cudarc::driver::{result as cu, CudaStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// Bytes per piece of the staged transfers: small enough that the first piece's host copy,
/// which nothing overlaps, is short (a fraction of a millisecond), large enough that a piece's
/// launch and event cost little beside its DMA. On an H100 host pieces of 1 MiB gave the same
/// times at n = 2^23 (upload 8.9–10.5 ms against 8.0–9.2, download 2.4–3.2 against 2.7–3.5).
pub(super) const STAGED_PIECE_BYTES: usize = 4 << 20;

/// The caller's arrays, page-locked for the call. Dropping it first waits for every copy
/// queued on the stream (so no DMA touches the memory once it is unlocked), then unlocks; where
/// that wait fails the memory stays locked (a copy may still run), as in the band reduction.
pub(super) struct Locked {
    regs: Vec<Registered>,
    stream: Arc<CudaStream>,
}

impl Drop for Locked {
    fn drop(&mut self) {
        let regs = std::mem::take(&mut self.regs);
        if self.stream.synchronize().is_err() {
            regs.into_iter().for_each(Registered::keep);
        }
    }
}

/// The transfers of one host-pointer solve, in the mode chosen for its size.
pub(super) enum HostIo<T> {
    Pageable(Staging<T>),
    Staged {
        gpu: &'static Gpu,
        piece: usize,
    },
    /// By DMA straight from the caller's arrays: page-locked for the call (the registration,
    /// undone when the transfers are dropped), or by the caller (`None`).
    Direct {
        _locked: Option<Locked>,
    },
}

/// The host arrays of one solve: the matrix (`n − 1`, `n`, `n − 1` entries) and `B`.
pub(super) struct HostSystem<'a, T> {
    pub dl: &'a [T],
    pub d: &'a [T],
    pub du: &'a [T],
    pub b: &'a [T],
    pub ldb: usize,
    pub nrhs: usize,
}

impl<T: Real> HostIo<T> {
    /// The transfers for `sys` as `choice` wants them for its order; where page-locking is
    /// refused (memory locked already, e.g. by the caller or by a concurrent call on
    /// neighbouring data, or a locking limit), the unregistered choice.
    pub(super) fn open(
        gpu: &'static Gpu,
        stream: &Arc<CudaStream>,
        choice: &GtsvTransfer,
        staging_elems: usize,
        sys: &HostSystem<'_, T>,
    ) -> Result<Self, DeviceError> {
        let n = sys.d.len();
        let bytes = |s: &[T]| (s.as_ptr().cast::<u8>(), std::mem::size_of_val(s));
        let b = &sys.b[..sys.ldb * (sys.nrhs - 1) + n];
        let ranges = [
            bytes(&sys.dl[..n - 1]),
            bytes(sys.d),
            bytes(&sys.du[..n - 1]),
            bytes(b),
        ];
        if ranges
            .iter()
            .all(|&(p, len)| len == 0 || gpu.host_locked(p, len))
        {
            return Ok(HostIo::Direct { _locked: None });
        }
        let mut mode = choice.for_n(n);
        if mode == GtsvHostTransfer::Register {
            // SAFETY: the caller's slices, which outlive this value (it lives in the solve).
            match unsafe { gpu.register_ranges(&ranges) } {
                Ok(regs) => {
                    let locked = Locked {
                        regs,
                        stream: stream.clone(),
                    };
                    return Ok(HostIo::Direct {
                        _locked: Some(locked),
                    });
                }
                Err(e) => {
                    crate::dispatch::debug(|| format!("gtsv: host arrays not page-locked ({e})"));
                    mode = choice.unregistered(n);
                }
            }
        }
        Ok(match mode {
            GtsvHostTransfer::Staged => HostIo::Staged {
                gpu,
                piece: (STAGED_PIECE_BYTES / sz::<T>()).max(1),
            },
            _ => HostIo::Pageable(Staging::new(gpu, staging_elems.max(1024))?),
        })
    }

    /// The mode these transfers run in: a [`GtsvHostTransfer`]'s name, or `locked`.
    pub(super) fn mode(&self) -> &'static str {
        match self {
            HostIo::Pageable(_) => GtsvHostTransfer::Pageable.name(),
            HostIo::Staged { .. } => GtsvHostTransfer::Staged.name(),
            HostIo::Direct { _locked: Some(_) } => GtsvHostTransfer::Register.name(),
            HostIo::Direct { _locked: None } => "locked",
        }
    }

    /// Uploads the matrix into `a` and B's first `n` rows into `f` (leading dimension `n`).
    /// Returns once the copies are done (`register`, `staged`) or all but the last piece
    /// (`pageable`).
    pub(super) fn upload(
        &mut self,
        stream: &Arc<CudaStream>,
        sys: &HostSystem<'_, T>,
        a: DevMatrix,
        f: DevCols,
    ) -> Result<(), DeviceError> {
        let n = sys.d.len();
        let (ldb, nrhs) = (sys.ldb, sys.nrhs);
        let mut parts = vec![
            (&sys.dl[..n - 1], a.dl),
            (sys.d, a.d),
            (&sys.du[..n - 1], a.du),
        ];
        if ldb == n {
            parts.push((&sys.b[..n * nrhs], f.ptr));
        } else {
            for col in 0..nrhs {
                let src = &sys.b[col * ldb..col * ldb + n];
                parts.push((src, f.ptr + (col * n * sz::<T>()) as u64));
            }
        }
        match self {
            HostIo::Pageable(staging) => {
                for (src, dst) in parts {
                    staging.upload(stream, src, dst)?;
                }
                Ok(())
            }
            HostIo::Staged { gpu, piece } => staged_upload(gpu, stream, parts, *piece),
            HostIo::Direct { .. } => {
                for (src, dst) in parts.into_iter().filter(|(s, _)| !s.is_empty()) {
                    // SAFETY: dst holds src.len() elements (allocated by the solve); src is
                    // page-locked by the caller, or until `Locked` is dropped, which first
                    // waits for this copy.
                    unsafe { cu::memcpy_htod_async(dst, src, stream.cu_stream())? };
                }
                // Waited for, so that the phases' upload time holds the DMA (else the solve's
                // would): the solve needs all of it before it starts anyway.
                stream.synchronize()?;
                Ok(())
            }
        }
    }

    /// Downloads `X` (n × nrhs at leading dimension `n`) into B's first `n` rows (leading
    /// dimension `ldb`), and returns once it is there.
    pub(super) fn download(
        &mut self,
        stream: &Arc<CudaStream>,
        x: DevCols,
        b: &mut [T],
        ldb: usize,
        n: usize,
        nrhs: usize,
    ) -> Result<(), DeviceError> {
        let at = |col: usize| x.ptr + (col * x.ld * sz::<T>()) as u64;
        match self {
            HostIo::Pageable(staging) => {
                if ldb == n {
                    // The columns are contiguous: one stream of pieces.
                    staging.download(stream, x.ptr, &mut b[..n * nrhs])?;
                } else {
                    for col in 0..nrhs {
                        let dst = &mut b[col * ldb..col * ldb + n];
                        staging.download(stream, at(col), dst)?;
                    }
                }
            }
            HostIo::Staged { gpu, piece } => {
                staged_download(gpu, stream, columns(x, b, ldb, n, nrhs), *piece)?;
            }
            HostIo::Direct { .. } => {
                // Column by column where LDB > N rather than one 2D copy, whose pitch the
                // driver limits (about 2 GB).
                for (src, dst) in columns(x, b, ldb, n, nrhs) {
                    // SAFETY: src holds dst.len() elements; dst is page-locked (by the caller,
                    // or until `Locked` is dropped), and the copy is waited for below (or by
                    // `Locked` on an error).
                    unsafe { cu::memcpy_dtoh_async(dst, src, stream.cu_stream())? };
                }
            }
        }
        stream.synchronize()?;
        Ok(())
    }
}

/// X's columns (leading dimension `x.ld`) and where each goes in B: one piece where B's
/// columns are contiguous.
fn columns<T>(
    x: DevCols,
    b: &mut [T],
    ldb: usize,
    n: usize,
    nrhs: usize,
) -> Vec<(CUdeviceptr, &mut [T])> {
    if ldb == n && x.ld == n {
        return vec![(x.ptr, &mut b[..n * nrhs])];
    }
    b.chunks_mut(ldb)
        .take(nrhs)
        .enumerate()
        .map(|(col, c)| (x.ptr + (col * x.ld * sz::<T>()) as u64, &mut c[..n]))
        .collect()
}

/// The next piece of a queue shared by the workers.
fn next_piece<I: Iterator>(queue: &Mutex<I>) -> Option<I::Item> {
    queue.lock().unwrap_or_else(|e| e.into_inner()).next()
}

/// Workers for `bytes` of staged transfers, each with two pinned buffers of `piece` elements.
fn worker_buffers<T: Real>(
    gpu: &'static Gpu,
    bytes: usize,
    pieces: usize,
    piece: usize,
) -> Result<Vec<[Pinned<T>; 2]>, DeviceError> {
    let workers = copy_threads(bytes).min(pieces).max(1);
    (0..workers)
        .map(|_| Ok([gpu.pinned(piece)?, gpu.pinned(piece)?]))
        .collect()
}

/// The next piece for a worker: `None` once the queue is empty or a worker has failed.
type NextPiece<'a, P> = &'a (dyn Fn() -> Option<P> + Sync);

/// Runs `work` on workers (host threads), each with two pinned buffers of `piece` elements,
/// taking `pieces` (of `bytes` in all) from a shared queue until it is empty or one fails.
/// Returns the first error (a worker's panic is raised again here). Each buffer waits for its
/// last transfer when the worker drops it.
fn on_workers<T: Real, P: Send>(
    gpu: &'static Gpu,
    pieces: Vec<P>,
    bytes: usize,
    piece: usize,
    work: &(impl Fn(&mut [Pinned<T>; 2], NextPiece<'_, P>) -> Result<(), DeviceError> + Sync),
) -> Result<(), DeviceError> {
    let workers = worker_buffers::<T>(gpu, bytes, pieces.len(), piece)?;
    let queue = Mutex::new(pieces.into_iter());
    let failed = AtomicBool::new(false);
    let next = || {
        if failed.load(Ordering::Relaxed) {
            None
        } else {
            next_piece(&queue)
        }
    };
    let results = run_parts(workers, &|mut bufs: [Pinned<T>; 2]| {
        let done = match gpu.ctx.bind_to_thread() {
            Ok(()) => work(&mut bufs, &next),
            Err(e) => Err(e.into()),
        };
        if done.is_err() {
            failed.store(true, Ordering::Relaxed);
        }
        done
    });
    or_resume(results).into_iter().collect()
}

/// Copies each `(src, dst)` to device memory: each worker copies a piece into one of its
/// pinned buffers and queues its DMA, then fills its other buffer while that DMA runs.
/// Returns when every DMA is done.
pub(super) fn staged_upload<T: Real>(
    gpu: &'static Gpu,
    stream: &Arc<CudaStream>,
    parts: Vec<(&[T], CUdeviceptr)>,
    piece: usize,
) -> Result<(), DeviceError> {
    let pieces: Vec<(&[T], CUdeviceptr)> = parts
        .into_iter()
        .flat_map(|(src, dst)| {
            src.chunks(piece)
                .enumerate()
                .map(move |(k, p)| (p, dst + (k * piece * sz::<T>()) as u64))
        })
        .collect();
    let bytes = pieces.iter().map(|(p, _)| std::mem::size_of_val(*p)).sum();
    let work = |bufs: &mut [Pinned<T>; 2], next: NextPiece<'_, (&[T], CUdeviceptr)>| {
        let mut i = 0;
        while let Some((src, dst)) = next() {
            bufs[i].as_mut_slice()?[..src.len()].copy_from_slice(src);
            // SAFETY: dst holds src.len() elements; the buffer records the copy's end and is
            // neither refilled nor freed before it.
            unsafe { bufs[i].copy_to_device(src.len(), dst, stream)? };
            i ^= 1;
        }
        Ok(())
    };
    on_workers(gpu, pieces, bytes, piece, &work)
}

/// Copies device memory at each `src` into its `dst`: each worker queues the DMA of a piece
/// into one of its pinned buffers, then copies its previous piece out of the other while the
/// DMA runs.
pub(super) fn staged_download<T: Real>(
    gpu: &'static Gpu,
    stream: &Arc<CudaStream>,
    parts: Vec<(CUdeviceptr, &mut [T])>,
    piece: usize,
) -> Result<(), DeviceError> {
    let pieces: Vec<(CUdeviceptr, &mut [T])> = parts
        .into_iter()
        .flat_map(|(src, dst)| {
            dst.chunks_mut(piece)
                .enumerate()
                .map(move |(k, p)| (src + (k * piece * sz::<T>()) as u64, p))
        })
        .collect();
    let bytes = pieces.iter().map(|(_, p)| std::mem::size_of_val(*p)).sum();
    let work = |bufs: &mut [Pinned<T>; 2], next: NextPiece<'_, (CUdeviceptr, &mut [T])>| {
        let mut i = 0;
        let mut pending: Option<(usize, &mut [T])> = None;
        loop {
            let piece = next();
            if let Some((src, dst)) = &piece {
                // SAFETY: src holds dst.len() elements; reading the buffer waits for the
                // copy's end.
                unsafe { bufs[i].copy_from_device(dst.len(), *src, stream)? };
            }
            if let Some((j, dst)) = pending.take() {
                let len = dst.len();
                dst.copy_from_slice(&bufs[j].as_slice()?[..len]);
            }
            let Some((_, dst)) = piece else {
                return Ok(());
            };
            pending = Some((i, dst));
            i ^= 1;
        }
    };
    on_workers(gpu, pieces, bytes, piece, &work)
}
