//! The GPU executor: the blocked algorithm's matrices in device memory, the arithmetic in
//! cuBLAS (GEMM, SYMM, SYR2K, GEAM for copies) and cuSOLVER (the resident mode's panel QR,
//! where it is installed) on one stream (a second one for the look-ahead), uploads and
//! downloads on two more, through pinned staging buffers or straight from host memory it
//! page-locked (`map_host`), so that the next block column's upload and the previous one's
//! download overlap the current block's arithmetic (an upper-stored block row's transposition
//! goes with its transfer, on the copy stream, by handles of its own). Every device buffer is
//! reserved from the memory budget first; cross-stream order comes from cudarc's per-buffer
//! read/write events, which keep one read per buffer: a buffer read on two streams must have
//! the read that its next writer has to wait for queued last.

mod halves;
mod ops;

pub use crate::device::blas::CublasReal;

use crate::device::linalg::{Linalg, PooledLinalg};
use crate::device::memory::{Pinned, Registered, Reservation};
use crate::device::{self, DeviceError, Gpu, PooledStream};
use crate::sbr::executor::{ExecError, Op, OpMut};
use cudarc::cublas::sys::cublasHandle_t;
use cudarc::cublas::CudaBlas;
use cudarc::driver::sys::CUdeviceptr;
use cudarc::driver::{CudaSlice, CudaStream, DevicePtr, DevicePtrMut};
use std::sync::Arc;

/// Elements per pinned staging buffer (32 MiB in double precision): large enough to keep a
/// copy engine busy, small enough that the staging pool keeps them between calls.
const CHUNK: usize = 1 << 22;
/// Staging buffers for uploads (filled by the host while earlier ones are in flight).
const UP_BUFFERS: usize = 3;
/// GPU memory left outside the budget for cuBLAS's own workspace.
const CUBLAS_MARGIN: u64 = 64 << 20;

/// A device matrix buffer and its share of the memory budget.
pub struct GpuBuf<T> {
    slice: CudaSlice<T>,
    _reserved: Reservation<'static>,
}

/// cuSOLVER's workspace for the panel's geqrf and potrf, sized for the largest asked so far.
struct QrWork<T> {
    work: CudaSlice<T>,
    lwork: usize,
    info: CudaSlice<i32>,
    _reserved: Reservation<'static>,
}

/// [A B A] for the rank-2k update by halves (`syr2k`): three n x k blocks, leading dimension n.
struct Pairs<T> {
    buf: CudaSlice<T>,
    _reserved: Reservation<'static>,
}

pub struct GpuExecutor<T> {
    gpu: &'static Gpu,
    qr: Option<QrWork<T>>,
    /// [A B A] for `syr2k`, sized for the largest asked so far.
    pairs: Option<Pairs<T>>,
    /// The compute stream with its cuBLAS and cuSOLVER handles (pooled: creating handles
    /// costs milliseconds per call otherwise).
    la: PooledLinalg,
    /// Lane 1's stream (of the highest priority: the look-ahead's panel goes ahead of the
    /// update's blocks) and handles, made when first asked for.
    la1: Option<PooledLinalg>,
    /// The lane operations go to (0: `la`, 1: `la1`).
    lane: usize,
    /// cuBLAS handles on `h2d` and `d2h`, for `transpose_in_transfer` (made when first asked
    /// for: only an upper-stored matrix streamed by DMA needs them).
    copy_blas: Option<[CudaBlas; 2]>,
    h2d: PooledStream,
    d2h: PooledStream,
    budget: u64,
    up: Vec<Pinned<T>>,
    next_up: usize,
    down: Vec<Pinned<T>>,
    /// Host memory page-locked for direct transfers (`map_host`): the user's matrix and the
    /// host buffers of the steps.
    mapped: Vec<Registered>,
    /// Unit tests only: the operands of the dummy products that `stall_lane_0` queues.
    #[cfg(test)]
    stall: Option<CudaSlice<T>>,
}

impl<T> GpuExecutor<T> {
    /// Unlocks the mapped host memory once every stream is idle (or leaves it locked if the
    /// wait fails: a copy might still touch it).
    fn release_host(&mut self) {
        if self.mapped.is_empty() {
            return;
        }
        let la1 = self.la1.as_ref().map(|l| &l.stream);
        let idle = [
            Some(&self.la.stream),
            la1,
            Some(&*self.h2d),
            Some(&*self.d2h),
        ]
        .into_iter()
        .flatten()
        .all(|s| s.synchronize().is_ok());
        for r in self.mapped.drain(..) {
            if idle {
                drop(r)
            } else {
                r.keep()
            }
        }
    }
}

impl<T> Drop for GpuExecutor<T> {
    fn drop(&mut self) {
        self.release_host();
    }
}

/// C (m x n) := op(A) by cuBLAS GEAM with `handle` on `stream`, `ta`: A transposed (n x m).
fn geam_on<T: CublasReal>(
    handle: cublasHandle_t,
    stream: &CudaStream,
    ta: bool,
    m: usize,
    n: usize,
    a: Op<GpuBuf<T>>,
    c: OpMut<GpuBuf<T>>,
) -> Result<(), ExecError> {
    if m == 0 || n == 0 {
        return Ok(());
    }
    let (pa, _ra) = a.buf.slice.device_ptr(stream);
    let (pc, _wc) = c.buf.slice.device_ptr_mut(stream);
    // SAFETY: as in gemm (`handle` is bound to `stream`).
    unsafe {
        T::geam_copy(
            handle,
            ta,
            dim(m),
            dim(n),
            at::<T>(pa, a.off) as *const T,
            dim(a.ld),
            at::<T>(pc, c.off) as *mut T,
            dim(c.ld),
        )
    }
    .result()
    .map_err(blas_err)
}

fn blas_err(e: cudarc::cublas::result::CublasError) -> ExecError {
    ExecError::Device(e.into())
}

fn driver_err(e: cudarc::driver::DriverError) -> ExecError {
    ExecError::Device(e.into())
}

/// The device address of entry `off` of a buffer at `base`.
fn at<T>(base: CUdeviceptr, off: usize) -> CUdeviceptr {
    base + (off * std::mem::size_of::<T>()) as CUdeviceptr
}

fn dim(x: usize) -> i32 {
    i32::try_from(x).expect("dimension exceeds cuBLAS's 32-bit int")
}

/// The bytes a new executor may use: what is free of `HYLAPACK_GPU_MEMORY_LIMIT` (or of the
/// device) now, less room for cuBLAS's workspace, and at most `limit`; None without a GPU.
pub fn budget(limit: Option<u64>) -> Option<u64> {
    let gpu = device::gpu().ok()?;
    Some(
        gpu.budget
            .available()
            .saturating_sub(CUBLAS_MARGIN)
            .min(limit.unwrap_or(u64::MAX)),
    )
}

impl<T: CublasReal> GpuExecutor<T> {
    /// Streams, cuBLAS and cuSOLVER handles and the budget (see [`budget`]).
    pub fn new(limit: Option<u64>) -> Result<Self, ExecError> {
        let gpu = device::gpu()?;
        let la = gpu.linalg()?;
        let h2d = gpu.stream()?;
        let d2h = gpu.stream()?;
        Ok(GpuExecutor {
            gpu,
            qr: None,
            pairs: None,
            la,
            la1: None,
            lane: 0,
            copy_blas: None,
            h2d,
            d2h,
            budget: budget(limit).unwrap_or(0),
            up: Vec::new(),
            next_up: 0,
            down: Vec::new(),
            mapped: Vec::new(),
            #[cfg(test)]
            stall: None,
        })
    }

    /// The current lane's stream and handles.
    fn cur(&self) -> &Linalg {
        match (&self.la1, self.lane) {
            (Some(l), 1) => l,
            _ => &self.la,
        }
    }

    fn cur_mut(&mut self) -> &mut Linalg {
        match (&mut self.la1, self.lane) {
            (Some(l), 1) => l,
            _ => &mut self.la,
        }
    }

    fn handle(&self) -> cublasHandle_t {
        *self.cur().blas.handle()
    }

    /// Makes room for `len` elements of [`Pairs`]; false if the budget has none (then `syr2k`
    /// leaves the whole update to cuBLAS's SYR2K, which needs no buffer).
    fn ensure_pairs(&mut self, len: usize) -> bool {
        if self.pairs.as_ref().is_some_and(|p| p.buf.len() >= len) {
            return true;
        }
        self.pairs = None;
        let bytes = (len * std::mem::size_of::<T>()) as u64;
        let Ok(reserved) = self.gpu.budget.reserve(bytes) else {
            return false;
        };
        // SAFETY: `syr2k` writes the blocks it reads (three GEAM copies) before reading them.
        match unsafe { self.la.stream.alloc::<T>(len) } {
            Ok(buf) => {
                self.pairs = Some(Pairs {
                    buf,
                    _reserved: reserved,
                });
                true
            }
            Err(_) => false,
        }
    }

    /// Makes room for cuSOLVER's geqrf on an m x k panel (ld `lda`) at `a`.
    fn qr_workspace(
        &mut self,
        m: usize,
        k: usize,
        a: CUdeviceptr,
        lda: usize,
    ) -> Result<(), ExecError> {
        let solver = self.cur_mut().solver()?.cu();
        let mut lwork = 0i32;
        // SAFETY: the sizes describe a panel inside a live buffer; only lwork is written.
        let st = unsafe {
            T::geqrf_buffer_size(solver, dim(m), dim(k), a as *mut T, dim(lda), &mut lwork)
        };
        DeviceError::check_cusolver("geqrf_bufferSize", st)?;
        self.solver_workspace(lwork)
    }

    /// Makes cuSOLVER's workspace hold at least `lwork` elements.
    fn solver_workspace(&mut self, lwork: i32) -> Result<(), ExecError> {
        let lwork = (lwork.max(1)) as usize;
        if self.qr.as_ref().is_some_and(|q| q.lwork >= lwork) {
            return Ok(());
        }
        self.qr = None;
        let bytes = (lwork * std::mem::size_of::<T>() + 256) as u64;
        let reserved = self.gpu.budget.reserve(bytes)?;
        let stream = &self.cur().stream;
        self.qr = Some(QrWork {
            work: stream.alloc_zeros::<T>(lwork).map_err(driver_err)?,
            lwork,
            info: stream.alloc_zeros::<i32>(1).map_err(driver_err)?,
            _reserved: reserved,
        });
        Ok(())
    }

    /// C (m x n) := op(A) by cuBLAS GEAM on the current lane, `ta`: A transposed (n x m).
    fn geam(
        &mut self,
        ta: bool,
        m: usize,
        n: usize,
        a: Op<GpuBuf<T>>,
        c: OpMut<GpuBuf<T>>,
    ) -> Result<(), ExecError> {
        geam_on(self.handle(), &self.cur().stream, ta, m, n, a, c)
    }

    /// The streams and handles of `transpose_in_transfer` (up: the upload stream).
    fn copy_lane(&mut self, up: bool) -> Result<(cublasHandle_t, &CudaStream), ExecError> {
        if self.copy_blas.is_none() {
            let make = |s: &PooledStream| {
                let blas = CudaBlas::new(Arc::clone(s)).map_err(DeviceError::from)?;
                // GEAM needs no workspace, and CUBLAS_MARGIN counts the lanes' handles only.
                // SAFETY: a new handle, nothing queued through it yet.
                unsafe { device::blas::set_no_workspace(&blas) }?;
                Ok::<_, ExecError>(blas)
            };
            self.copy_blas = Some([make(&self.h2d)?, make(&self.d2h)?]);
        }
        let blas = self.copy_blas.as_ref().expect("made above");
        Ok(if up {
            (*blas[0].handle(), &self.h2d)
        } else {
            (*blas[1].handle(), &self.d2h)
        })
    }

    /// The host-to-device staging loop of `upload` and `upload_block`: `total` elements are
    /// filled (`fill(first, piece)`) into the pinned buffers in turn, at most `per` at a time,
    /// and each piece's transfer is queued by `copy(buffer, first, elements, dst's address,
    /// stream)` on the upload stream. Filling a buffer waits for its previous transfer.
    fn staged_upload(
        &mut self,
        dst: &mut GpuBuf<T>,
        total: usize,
        per: usize,
        fill: &mut dyn FnMut(usize, &mut [T]),
        copy: &mut StagedCopy<'_, T>,
    ) -> Result<(), ExecError> {
        while self.up.len() < UP_BUFFERS {
            self.up.push(self.gpu.pinned::<T>(CHUNK)?);
        }
        let stream: &CudaStream = &self.h2d;
        // Waits for queued arithmetic on `dst`; records the upload as its last write.
        let (base, _written) = dst.slice.device_ptr_mut(stream);
        let mut start = 0;
        while start < total {
            let piece = per.min(total - start);
            let stage = &mut self.up[self.next_up];
            self.next_up = (self.next_up + 1) % UP_BUFFERS;
            fill(start, &mut stage.as_mut_slice()?[..piece]);
            copy(stage, start, piece, base, stream)?;
            start += piece;
        }
        Ok(())
    }

    /// The device-to-host staging loop of `download` and `download_block`: `total` elements,
    /// at most `per` a piece, go into the two pinned buffers in turn, each piece's transfer
    /// queued by `copy(buffer, first, elements, src's address, stream)` on the download stream
    /// and handed to `take` once it has arrived and the next piece's transfer is queued.
    fn staged_download(
        &mut self,
        src: &GpuBuf<T>,
        total: usize,
        per: usize,
        take: &mut dyn FnMut(usize, &[T]),
        copy: &mut StagedCopy<'_, T>,
    ) -> Result<(), ExecError> {
        while self.down.len() < 2 {
            self.down.push(self.gpu.pinned::<T>(CHUNK)?);
        }
        let stream: &CudaStream = &self.d2h;
        let pieces: Vec<(usize, usize)> = (0..total)
            .step_by(per)
            .map(|s| (s, per.min(total - s)))
            .collect();
        {
            // Waits for queued writes to `src`.
            let (base, _read) = src.slice.device_ptr(stream);
            for (q, &(start, piece)) in pieces.iter().enumerate() {
                copy(&mut self.down[q % 2], start, piece, base, stream)?;
                if q > 0 {
                    let (prev, prev_len) = pieces[q - 1];
                    take(prev, &self.down[(q - 1) % 2].as_slice()?[..prev_len]);
                }
            }
        }
        if let Some(&(last, last_len)) = pieces.last() {
            take(
                last,
                &self.down[(pieces.len() - 1) % 2].as_slice()?[..last_len],
            );
        }
        // Errors cudarc deferred while recording its events surface here.
        self.gpu.ctx.check_err().map_err(driver_err)
    }
}

/// Queues one staged piece's transfer: (buffer, first element, elements, the device buffer's
/// address, stream); see `GpuExecutor::staged_upload` and `staged_download`.
type StagedCopy<'a, T> = dyn FnMut(&mut Pinned<T>, usize, usize, CUdeviceptr, &CudaStream) -> Result<(), DeviceError>
    + 'a;

#[cfg(test)]
impl<T: CublasReal> GpuExecutor<T> {
    /// Order of the dummy products of [`GpuExecutor::stall_lane_0`].
    const STALL_ORDER: usize = 2048;

    /// Holds lane 0 back as the copies outran it at n = 100000: from now on every SYMM on
    /// lane 0 is queued behind a few dummy products of order 2048 (a millisecond or more), so
    /// that a buffer refilled before a read on lane 0 is done shows in the result.
    pub(crate) fn stall_lane_0(&mut self) -> Result<(), ExecError> {
        let n = Self::STALL_ORDER;
        let scratch = self.la.stream.alloc_zeros::<T>(2 * n * n);
        self.stall = Some(scratch.map_err(driver_err)?);
        Ok(())
    }

    fn stall(&mut self) -> Result<(), ExecError> {
        let (Some(scratch), 0) = (&mut self.stall, self.lane) else {
            return Ok(());
        };
        let n = Self::STALL_ORDER;
        let stream: &CudaStream = &self.la.stream;
        let handle = *self.la.blas.handle();
        let (p, _w) = scratch.device_ptr_mut(stream);
        for _ in 0..4 {
            // SAFETY: both operands lie inside the scratch buffer (2 n² elements).
            unsafe {
                T::gemm(
                    handle,
                    crate::device::blas::trans(false),
                    crate::device::blas::trans(false),
                    dim(n),
                    dim(n),
                    dim(n),
                    &T::ONE,
                    p as *const T,
                    dim(n),
                    p as *const T,
                    dim(n),
                    &T::ZERO,
                    at::<T>(p, n * n) as *mut T,
                    dim(n),
                )
            }
            .result()
            .map_err(blas_err)?;
        }
        Ok(())
    }
}
