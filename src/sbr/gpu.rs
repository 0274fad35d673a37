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

use super::{DirectBlock, ExecError, Executor, Op, OpMut};
use crate::device::linalg::{Linalg, PooledLinalg};
use crate::device::memory::{copy_2d, Pinned, Registered, Reservation, Side};
use crate::device::{self, DeviceError, Gpu, PooledStream};
use crate::real::Real;
use cudarc::cublas::result::CublasError;
use cudarc::cublas::sys::{
    self as cb, cublasFillMode_t, cublasHandle_t, cublasOperation_t, cublasSideMode_t,
    cublasStatus_t,
};
use cudarc::cublas::CudaBlas;
use cudarc::cusolver::sys as cs;
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

/// The cuBLAS routines of one precision.
#[allow(clippy::too_many_arguments)]
pub trait CublasReal: Real {
    /// cublas<t>gemm.
    ///
    /// # Safety
    /// The pointers are device memory spanning the operands that the sizes describe.
    unsafe fn gemm(
        h: cublasHandle_t,
        ta: cublasOperation_t,
        tb: cublasOperation_t,
        m: i32,
        n: i32,
        k: i32,
        alpha: &Self,
        a: *const Self,
        lda: i32,
        b: *const Self,
        ldb: i32,
        beta: &Self,
        c: *mut Self,
        ldc: i32,
    ) -> cublasStatus_t;
    /// cublas<t>symm with SIDE = left, UPLO = lower.
    ///
    /// # Safety
    /// As for `gemm`.
    unsafe fn symm(
        h: cublasHandle_t,
        m: i32,
        n: i32,
        alpha: &Self,
        a: *const Self,
        lda: i32,
        b: *const Self,
        ldb: i32,
        beta: &Self,
        c: *mut Self,
        ldc: i32,
    ) -> cublasStatus_t;
    /// C := A through cublas<t>geam (m x n, no transposes).
    ///
    /// # Safety
    /// As for `gemm`.
    unsafe fn geam_copy(
        h: cublasHandle_t,
        ta: bool,
        m: i32,
        n: i32,
        a: *const Self,
        lda: i32,
        c: *mut Self,
        ldc: i32,
    ) -> cublasStatus_t;
    /// cusolverDn<t>geqrf_bufferSize.
    ///
    /// # Safety
    /// As for `gemm`; `lwork` is host memory.
    unsafe fn geqrf_buffer_size(
        h: cs::cusolverDnHandle_t,
        m: i32,
        n: i32,
        a: *mut Self,
        lda: i32,
        lwork: *mut i32,
    ) -> cs::cusolverStatus_t;
    /// cusolverDn<t>geqrf.
    ///
    /// # Safety
    /// As for `gemm`, with a workspace of `lwork` elements and a device `info`.
    unsafe fn geqrf(
        h: cs::cusolverDnHandle_t,
        m: i32,
        n: i32,
        a: *mut Self,
        lda: i32,
        tau: *mut Self,
        work: *mut Self,
        lwork: i32,
        info: *mut i32,
    ) -> cs::cusolverStatus_t;
    /// cusolverDn<t>potrf_bufferSize with UPLO = upper.
    ///
    /// # Safety
    /// As for `gemm`; `lwork` is host memory.
    unsafe fn potrf_buffer_size(
        h: cs::cusolverDnHandle_t,
        n: i32,
        a: *mut Self,
        lda: i32,
        lwork: *mut i32,
    ) -> cs::cusolverStatus_t;
    /// cusolverDn<t>potrf with UPLO = upper.
    ///
    /// # Safety
    /// As for `gemm`, with a workspace of `lwork` elements and a device `info`.
    unsafe fn potrf(
        h: cs::cusolverDnHandle_t,
        n: i32,
        a: *mut Self,
        lda: i32,
        work: *mut Self,
        lwork: i32,
        info: *mut i32,
    ) -> cs::cusolverStatus_t;
    /// cublas<t>trsm with SIDE = right, UPLO = upper, no transpose, non-unit: B := B R⁻¹.
    ///
    /// # Safety
    /// As for `gemm`.
    unsafe fn trsm_right_upper(
        h: cublasHandle_t,
        m: i32,
        n: i32,
        r: *const Self,
        ldr: i32,
        b: *mut Self,
        ldb: i32,
    ) -> cublasStatus_t;
    /// cublas<t>syr2k with UPLO = lower, TRANS = N.
    ///
    /// # Safety
    /// As for `gemm`.
    unsafe fn syr2k(
        h: cublasHandle_t,
        n: i32,
        k: i32,
        alpha: &Self,
        a: *const Self,
        lda: i32,
        b: *const Self,
        ldb: i32,
        beta: &Self,
        c: *mut Self,
        ldc: i32,
    ) -> cublasStatus_t;
}

macro_rules! impl_cublas {
    ($t:ty, $gemm:ident, $symm:ident, $syr2k:ident, $geam:ident, $geqrf_ws:ident, $geqrf:ident,
     $trsm:ident, $potrf_ws:ident, $potrf:ident) => {
        impl CublasReal for $t {
            unsafe fn potrf_buffer_size(
                h: cs::cusolverDnHandle_t,
                n: i32,
                a: *mut Self,
                lda: i32,
                lwork: *mut i32,
            ) -> cs::cusolverStatus_t {
                cs::$potrf_ws(
                    h,
                    cs::cublasFillMode_t::CUBLAS_FILL_MODE_UPPER,
                    n,
                    a,
                    lda,
                    lwork,
                )
            }
            unsafe fn potrf(
                h: cs::cusolverDnHandle_t,
                n: i32,
                a: *mut Self,
                lda: i32,
                work: *mut Self,
                lwork: i32,
                info: *mut i32,
            ) -> cs::cusolverStatus_t {
                let upper = cs::cublasFillMode_t::CUBLAS_FILL_MODE_UPPER;
                cs::$potrf(h, upper, n, a, lda, work, lwork, info)
            }
            unsafe fn trsm_right_upper(
                h: cublasHandle_t,
                m: i32,
                n: i32,
                r: *const Self,
                ldr: i32,
                b: *mut Self,
                ldb: i32,
            ) -> cublasStatus_t {
                let one: Self = 1.0;
                cb::$trsm(
                    h,
                    cublasSideMode_t::CUBLAS_SIDE_RIGHT,
                    cublasFillMode_t::CUBLAS_FILL_MODE_UPPER,
                    cublasOperation_t::CUBLAS_OP_N,
                    cb::cublasDiagType_t::CUBLAS_DIAG_NON_UNIT,
                    m,
                    n,
                    &one,
                    r,
                    ldr,
                    b,
                    ldb,
                )
            }
            unsafe fn geam_copy(
                h: cublasHandle_t,
                ta: bool,
                m: i32,
                n: i32,
                a: *const Self,
                lda: i32,
                c: *mut Self,
                ldc: i32,
            ) -> cublasStatus_t {
                let (one, zero): (Self, Self) = (1.0, 0.0);
                // With beta = 0, B is C itself (geam's in-place form): never read.
                cb::$geam(
                    h,
                    trans(ta),
                    cublasOperation_t::CUBLAS_OP_N,
                    m,
                    n,
                    &one,
                    a,
                    lda,
                    &zero,
                    c,
                    ldc,
                    c,
                    ldc,
                )
            }
            unsafe fn geqrf_buffer_size(
                h: cs::cusolverDnHandle_t,
                m: i32,
                n: i32,
                a: *mut Self,
                lda: i32,
                lwork: *mut i32,
            ) -> cs::cusolverStatus_t {
                cs::$geqrf_ws(h, m, n, a, lda, lwork)
            }
            unsafe fn geqrf(
                h: cs::cusolverDnHandle_t,
                m: i32,
                n: i32,
                a: *mut Self,
                lda: i32,
                tau: *mut Self,
                work: *mut Self,
                lwork: i32,
                info: *mut i32,
            ) -> cs::cusolverStatus_t {
                cs::$geqrf(h, m, n, a, lda, tau, work, lwork, info)
            }
            unsafe fn gemm(
                h: cublasHandle_t,
                ta: cublasOperation_t,
                tb: cublasOperation_t,
                m: i32,
                n: i32,
                k: i32,
                alpha: &Self,
                a: *const Self,
                lda: i32,
                b: *const Self,
                ldb: i32,
                beta: &Self,
                c: *mut Self,
                ldc: i32,
            ) -> cublasStatus_t {
                cb::$gemm(h, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
            }
            unsafe fn symm(
                h: cublasHandle_t,
                m: i32,
                n: i32,
                alpha: &Self,
                a: *const Self,
                lda: i32,
                b: *const Self,
                ldb: i32,
                beta: &Self,
                c: *mut Self,
                ldc: i32,
            ) -> cublasStatus_t {
                cb::$symm(
                    h,
                    cublasSideMode_t::CUBLAS_SIDE_LEFT,
                    cublasFillMode_t::CUBLAS_FILL_MODE_LOWER,
                    m,
                    n,
                    alpha,
                    a,
                    lda,
                    b,
                    ldb,
                    beta,
                    c,
                    ldc,
                )
            }
            unsafe fn syr2k(
                h: cublasHandle_t,
                n: i32,
                k: i32,
                alpha: &Self,
                a: *const Self,
                lda: i32,
                b: *const Self,
                ldb: i32,
                beta: &Self,
                c: *mut Self,
                ldc: i32,
            ) -> cublasStatus_t {
                cb::$syr2k(
                    h,
                    cublasFillMode_t::CUBLAS_FILL_MODE_LOWER,
                    cublasOperation_t::CUBLAS_OP_N,
                    n,
                    k,
                    alpha,
                    a,
                    lda,
                    b,
                    ldb,
                    beta,
                    c,
                    ldc,
                )
            }
        }
    };
}

impl_cublas!(
    f64,
    cublasDgemm_v2,
    cublasDsymm_v2,
    cublasDsyr2k_v2,
    cublasDgeam,
    cusolverDnDgeqrf_bufferSize,
    cusolverDnDgeqrf,
    cublasDtrsm_v2,
    cusolverDnDpotrf_bufferSize,
    cusolverDnDpotrf
);
impl_cublas!(
    f32,
    cublasSgemm_v2,
    cublasSsymm_v2,
    cublasSsyr2k_v2,
    cublasSgeam,
    cusolverDnSgeqrf_bufferSize,
    cusolverDnSgeqrf,
    cublasStrsm_v2,
    cusolverDnSpotrf_bufferSize,
    cusolverDnSpotrf
);

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
    ExecError::Device(DeviceError::Driver(format!("cuBLAS: {e:?}")))
}

fn driver_err(e: cudarc::driver::DriverError) -> ExecError {
    ExecError::Device(e.into())
}

fn trans(t: bool) -> cublasOperation_t {
    if t {
        cublasOperation_t::CUBLAS_OP_T
    } else {
        cublasOperation_t::CUBLAS_OP_N
    }
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
        solver_ok(st, "geqrf_bufferSize")?;
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
                let blas = CudaBlas::new(Arc::clone(s)).map_err(|e| {
                    ExecError::Device(DeviceError::Driver(format!("cublasCreate: {e:?}")))
                })?;
                // GEAM needs no workspace, and CUBLAS_MARGIN counts the lanes' handles only.
                // SAFETY: a handle of ours; no workspace is a documented setting.
                unsafe { cb::cublasSetWorkspace_v2(*blas.handle(), std::ptr::null_mut(), 0) }
                    .result()
                    .map_err(blas_err)?;
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
                    trans(false),
                    trans(false),
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

fn solver_ok(s: cs::cusolverStatus_t, what: &str) -> Result<(), ExecError> {
    if s == cs::cusolverStatus_t::CUSOLVER_STATUS_SUCCESS {
        Ok(())
    } else {
        Err(ExecError::Device(DeviceError::Driver(format!(
            "cuSOLVER {what}: {s:?}"
        ))))
    }
}

impl<T: CublasReal> Executor<T> for GpuExecutor<T> {
    type Buf = GpuBuf<T>;

    fn budget(&self) -> u64 {
        self.budget
    }

    fn alloc(&mut self, len: usize) -> Result<GpuBuf<T>, ExecError> {
        let bytes = (len * std::mem::size_of::<T>()) as u64;
        let reserved = self.gpu.budget.reserve(bytes)?;
        let slice = self.la.stream.alloc_zeros::<T>(len).map_err(driver_err)?;
        Ok(GpuBuf {
            slice,
            _reserved: reserved,
        })
    }

    fn upload(
        &mut self,
        dst: &mut GpuBuf<T>,
        off: usize,
        len: usize,
        fill: &mut dyn FnMut(usize, &mut [T]),
    ) -> Result<(), ExecError> {
        assert!(off + len <= dst.slice.len(), "upload past the buffer's end");
        self.staged_upload(
            dst,
            len,
            CHUNK,
            fill,
            &mut |stage, start, piece, base, stream| {
                // SAFETY: the destination lies inside `dst` (asserted), which outlives the copy:
                // freeing it is ordered after the recorded write on the stream.
                unsafe { stage.copy_to_device(piece, at::<T>(base, off + start), stream) }
            },
        )
    }

    fn upload_block(
        &mut self,
        dst: &mut GpuBuf<T>,
        off: usize,
        ld: usize,
        rows: usize,
        cols: usize,
        fill: &mut dyn FnMut(usize, &mut [T]),
    ) -> Result<(), ExecError> {
        if rows == 0 || cols == 0 {
            return Ok(());
        }
        assert!(
            rows <= ld,
            "block rows {rows} exceed the leading dimension {ld}"
        );
        assert!(
            off + (cols - 1) * ld + rows <= dst.slice.len(),
            "upload past the buffer's end"
        );
        // Whole columns per staging buffer (a column longer than one is not expected: rows ≤ n).
        assert!(
            rows <= CHUNK,
            "a column of {rows} exceeds the staging buffer"
        );
        let per = CHUNK / rows * rows;
        self.staged_upload(
            dst,
            rows * cols,
            per,
            fill,
            &mut |stage, start, piece, base, stream| {
                // SAFETY: the columns start / rows .. (start + piece) / rows of the block lie inside
                // `dst` (asserted above), which outlives the copy: freeing it is ordered after the
                // recorded write.
                unsafe {
                    stage.copy_to_device_strided(
                        rows,
                        piece / rows,
                        at::<T>(base, off + start / rows * ld),
                        ld,
                        stream,
                    )
                }
            },
        )
    }

    fn download(
        &mut self,
        src: &GpuBuf<T>,
        off: usize,
        len: usize,
        take: &mut dyn FnMut(usize, &[T]),
    ) -> Result<(), ExecError> {
        assert!(
            off + len <= src.slice.len(),
            "download past the buffer's end"
        );
        self.staged_download(
            src,
            len,
            CHUNK,
            take,
            &mut |stage, start, piece, base, stream| {
                // SAFETY: the source lies inside `src` (asserted), whose queued writes the
                // stream waits for; the staging buffer holds CHUNK ≥ piece elements.
                unsafe { stage.copy_from_device(piece, at::<T>(base, off + start), stream) }
            },
        )
    }

    fn download_block(
        &mut self,
        src: &GpuBuf<T>,
        off: usize,
        ld: usize,
        rows: usize,
        cols: usize,
        take: &mut dyn FnMut(usize, &[T]),
    ) -> Result<(), ExecError> {
        if rows == 0 || cols == 0 {
            return Ok(());
        }
        assert!(
            rows <= ld && rows <= CHUNK,
            "block rows {rows}: above the leading dimension {ld} or the staging buffer"
        );
        assert!(
            off + (cols - 1) * ld + rows <= src.slice.len(),
            "download past the buffer's end"
        );
        self.staged_download(
            src,
            rows * cols,
            CHUNK / rows * rows,
            take,
            &mut |stage, start, piece, base, stream| {
                // SAFETY: whole columns of the block, inside `src` (asserted).
                unsafe {
                    stage.copy_from_device_strided(
                        rows,
                        piece / rows,
                        at::<T>(base, off + start / rows * ld),
                        ld,
                        stream,
                    )
                }
            },
        )
    }

    /// Page-locks the user's matrix (see `memory::Registered`): block columns then move by
    /// DMA at the bus's rate (54 GB/s each way on an H100's host) instead of through the
    /// staging buffers, whose host copies ran at 10-29 GB/s.
    unsafe fn map_host(&mut self, a: *mut T, len: usize) -> bool {
        // SAFETY: the caller keeps the entries allocated until `unmap_host`, which runs before
        // the registration is dropped (or the executor is).
        match unsafe {
            self.gpu
                .register_host(a.cast(), len * std::mem::size_of::<T>())
        } {
            Ok(r) => {
                self.mapped.push(r);
                true
            }
            Err(e) => {
                crate::dispatch::debug(|| format!("sbr: host matrix not page-locked ({e})"));
                false
            }
        }
    }

    fn unmap_host(&mut self) {
        self.release_host();
    }

    unsafe fn upload_direct(
        &mut self,
        dst: &mut GpuBuf<T>,
        off: usize,
        ld: usize,
        rows: usize,
        cols: usize,
        src: *const T,
        lda: usize,
    ) -> Result<(), ExecError> {
        if rows == 0 || cols == 0 {
            return Ok(());
        }
        assert!(
            off + (cols - 1) * ld + rows <= dst.slice.len(),
            "upload past the buffer's end"
        );
        let stream: &CudaStream = &self.h2d;
        // Waits for queued work on `dst`; records the upload as its last write.
        let (base, _written) = dst.slice.device_ptr_mut(stream);
        let from = Side::Host(src.cast_mut().cast(), lda);
        // SAFETY: the destination lies inside `dst` (asserted), freed only after the recorded
        // write; the caller guarantees the host block stays valid and is not written meanwhile.
        unsafe {
            copy_2d::<T>(
                from,
                Side::Device(at::<T>(base, off), ld),
                rows,
                cols,
                stream,
            )?
        };
        Ok(())
    }

    unsafe fn download_direct(
        &mut self,
        src: &GpuBuf<T>,
        off: usize,
        ld: usize,
        rows: usize,
        cols: usize,
        dst: *mut T,
        lda: usize,
    ) -> Result<(), ExecError> {
        if rows == 0 || cols == 0 {
            return Ok(());
        }
        assert!(
            off + (cols - 1) * ld + rows <= src.slice.len(),
            "download past the buffer's end"
        );
        let stream: &CudaStream = &self.d2h;
        {
            // Waits for queued writes to `src`.
            let (base, _read) = src.slice.device_ptr(stream);
            let to = Side::Host(dst.cast(), lda);
            // SAFETY: the source lies inside `src` (asserted); the caller guarantees the host
            // block is valid and untouched during the call, which waits for the copy below.
            unsafe { copy_2d::<T>(Side::Device(at::<T>(base, off), ld), to, rows, cols, stream)? };
        }
        // The copy was queued: a failure from here on may come after part of it landed.
        let torn = |e: cudarc::driver::DriverError| ExecError::Torn(e.into());
        stream.synchronize().map_err(torn)?;
        self.gpu.ctx.check_err().map_err(torn)
    }

    /// Queues every block's copy on the download stream, then waits once.
    unsafe fn download_direct_blocks(
        &mut self,
        src: &GpuBuf<T>,
        blocks: &[DirectBlock<T>],
    ) -> Result<(), ExecError> {
        let stream: &CudaStream = &self.d2h;
        let torn = |e: cudarc::driver::DriverError| ExecError::Torn(e.into());
        {
            // Waits for queued writes to `src`.
            let (base, _read) = src.slice.device_ptr(stream);
            for (k, b) in blocks.iter().enumerate() {
                if b.rows == 0 || b.cols == 0 {
                    continue;
                }
                assert!(
                    b.off + (b.cols - 1) * b.ld + b.rows <= src.slice.len(),
                    "download past the buffer's end"
                );
                let (from, to) = (
                    Side::Device(at::<T>(base, b.off), b.ld),
                    Side::Host(b.dst.cast(), b.lda),
                );
                // SAFETY: the source lies inside `src` (asserted); the caller guarantees each
                // host block is valid and untouched during the call, which waits below.
                let queued = unsafe { copy_2d::<T>(from, to, b.rows, b.cols, stream) };
                queued.map_err(|e| {
                    if k == 0 {
                        ExecError::Device(e)
                    } else {
                        ExecError::Torn(e)
                    }
                })?;
            }
        }
        stream.synchronize().map_err(torn)?;
        self.gpu.ctx.check_err().map_err(torn)
    }

    fn gemm(
        &mut self,
        ta: bool,
        tb: bool,
        m: usize,
        n: usize,
        k: usize,
        alpha: T,
        a: Op<GpuBuf<T>>,
        b: Op<GpuBuf<T>>,
        beta: T,
        c: OpMut<GpuBuf<T>>,
    ) -> Result<(), ExecError> {
        if m == 0 || n == 0 {
            return Ok(());
        }
        let handle = self.handle();
        let stream: &CudaStream = &self.cur().stream;
        let (pa, _ra) = a.buf.slice.device_ptr(stream);
        let (pb, _rb) = b.buf.slice.device_ptr(stream);
        let (pc, _wc) = c.buf.slice.device_ptr_mut(stream);
        // SAFETY: the operands lie inside their buffers (the driver's tiling keeps them there)
        // and are ordered after their last writes by the events waited on above.
        unsafe {
            T::gemm(
                handle,
                trans(ta),
                trans(tb),
                dim(m),
                dim(n),
                dim(k),
                &alpha,
                at::<T>(pa, a.off) as *const T,
                dim(a.ld),
                at::<T>(pb, b.off) as *const T,
                dim(b.ld),
                &beta,
                at::<T>(pc, c.off) as *mut T,
                dim(c.ld),
            )
        }
        .result()
        .map_err(blas_err)
    }

    fn symm(
        &mut self,
        m: usize,
        n: usize,
        alpha: T,
        a: Op<GpuBuf<T>>,
        b: Op<GpuBuf<T>>,
        beta: T,
        c: OpMut<GpuBuf<T>>,
    ) -> Result<(), ExecError> {
        if m == 0 || n == 0 {
            return Ok(());
        }
        #[cfg(test)]
        self.stall()?;
        let handle = self.handle();
        let stream: &CudaStream = &self.cur().stream;
        let (pa, _ra) = a.buf.slice.device_ptr(stream);
        let (pb, _rb) = b.buf.slice.device_ptr(stream);
        let (pc, _wc) = c.buf.slice.device_ptr_mut(stream);
        // SAFETY: as in gemm.
        unsafe {
            symm_by_halves(
                handle,
                m,
                n,
                alpha,
                at::<T>(pa, a.off) as *const T,
                a.ld,
                at::<T>(pb, b.off) as *const T,
                b.ld,
                beta,
                at::<T>(pc, c.off) as *mut T,
                c.ld,
            )
        }
        .map_err(blas_err)
    }

    fn geqrf(
        &mut self,
        m: usize,
        k: usize,
        a: OpMut<GpuBuf<T>>,
        tau: OpMut<GpuBuf<T>>,
    ) -> Result<(), ExecError> {
        if m == 0 || k == 0 {
            return Ok(());
        }
        assert!(
            tau.off + m.min(k) <= tau.buf.slice.len(),
            "tau past the buffer's end"
        );
        let base = {
            let stream: &CudaStream = &self.cur().stream;
            let (pa, _wa) = a.buf.slice.device_ptr_mut(stream);
            at::<T>(pa, a.off)
        };
        self.qr_workspace(m, k, base, a.ld)?;
        let solver = self.cur_mut().solver()?.cu();
        let stream = self.cur().stream.clone();
        let stream: &CudaStream = &stream;
        let qr = self.qr.as_mut().expect("reserved above");
        let (pa, _wa) = a.buf.slice.device_ptr_mut(stream);
        let (pt, _wt) = tau.buf.slice.device_ptr_mut(stream);
        let (pw, _ww) = qr.work.device_ptr_mut(stream);
        let (pi, _wi) = qr.info.device_ptr_mut(stream);
        // SAFETY: the panel and tau lie inside their buffers, the workspace has the length
        // cuSOLVER asked for; all are ordered on the solver's stream (the compute stream).
        let st = unsafe {
            T::geqrf(
                solver,
                dim(m),
                dim(k),
                at::<T>(pa, a.off) as *mut T,
                dim(a.ld),
                at::<T>(pt, tau.off) as *mut T,
                pw as *mut T,
                dim(qr.lwork),
                pi as *mut i32,
            )
        };
        solver_ok(st, "geqrf")
    }

    fn potrf_upper(&mut self, n: usize, a: OpMut<GpuBuf<T>>) -> Result<(), ExecError> {
        if n == 0 {
            return Ok(());
        }
        let solver = self.cur_mut().solver()?.cu();
        let stream = self.cur().stream.clone();
        let stream: &CudaStream = &stream;
        let mut lwork = 0i32;
        {
            let (pa, _wa) = a.buf.slice.device_ptr_mut(stream);
            let pa = at::<T>(pa, a.off) as *mut T;
            // SAFETY: the matrix lies inside its buffer; only lwork is written.
            let st = unsafe { T::potrf_buffer_size(solver, dim(n), pa, dim(a.ld), &mut lwork) };
            solver_ok(st, "potrf_bufferSize")?;
        }
        self.solver_workspace(lwork)?;
        let qr = self.qr.as_mut().expect("reserved above");
        let (pa, _wa) = a.buf.slice.device_ptr_mut(stream);
        let (pw, _ww) = qr.work.device_ptr_mut(stream);
        let (pi, _wi) = qr.info.device_ptr_mut(stream);
        // SAFETY: as in geqrf. INFO stays on the device: the caller checks the factor.
        let st = unsafe {
            T::potrf(
                solver,
                dim(n),
                at::<T>(pa, a.off) as *mut T,
                dim(a.ld),
                pw as *mut T,
                dim(qr.lwork),
                pi as *mut i32,
            )
        };
        solver_ok(st, "potrf")
    }

    fn trsm_right_upper(
        &mut self,
        m: usize,
        n: usize,
        r: Op<GpuBuf<T>>,
        b: OpMut<GpuBuf<T>>,
    ) -> Result<(), ExecError> {
        if m == 0 || n == 0 {
            return Ok(());
        }
        let handle = self.handle();
        let stream: &CudaStream = &self.cur().stream;
        let (pr, _rr) = r.buf.slice.device_ptr(stream);
        let (pb, _wb) = b.buf.slice.device_ptr_mut(stream);
        // SAFETY: as in gemm.
        unsafe {
            T::trsm_right_upper(
                handle,
                dim(m),
                dim(n),
                at::<T>(pr, r.off) as *const T,
                dim(r.ld),
                at::<T>(pb, b.off) as *mut T,
                dim(b.ld),
            )
        }
        .result()
        .map_err(blas_err)
    }

    fn copy(
        &mut self,
        m: usize,
        n: usize,
        a: Op<GpuBuf<T>>,
        c: OpMut<GpuBuf<T>>,
    ) -> Result<(), ExecError> {
        self.geam(false, m, n, a, c)
    }

    fn transpose(
        &mut self,
        m: usize,
        n: usize,
        a: Op<GpuBuf<T>>,
        c: OpMut<GpuBuf<T>>,
    ) -> Result<(), ExecError> {
        self.geam(true, n, m, a, c)
    }

    fn transpose_in_transfer(
        &mut self,
        up: bool,
        m: usize,
        n: usize,
        a: Op<GpuBuf<T>>,
        c: OpMut<GpuBuf<T>>,
    ) -> Result<(), ExecError> {
        let (handle, stream) = self.copy_lane(up)?;
        geam_on(handle, stream, true, n, m, a, c)
    }

    fn can_factor(&self) -> bool {
        device::libraries().cusolver
    }

    fn lane(&mut self, lane: usize) -> Result<(), ExecError> {
        assert!(lane < 2, "the GPU executor has two lanes");
        if lane == 1 && self.la1.is_none() {
            self.la1 = Some(self.gpu.linalg_urgent()?);
        }
        self.lane = lane;
        Ok(())
    }

    fn sync(&mut self) -> Result<(), ExecError> {
        if let Some(l) = &self.la1 {
            l.stream.synchronize().map_err(driver_err)?;
        }
        self.la.stream.synchronize().map_err(driver_err)?;
        self.h2d.synchronize().map_err(driver_err)?;
        self.d2h.synchronize().map_err(driver_err)
    }

    fn syr2k(
        &mut self,
        n: usize,
        k: usize,
        alpha: T,
        a: Op<GpuBuf<T>>,
        b: Op<GpuBuf<T>>,
        beta: T,
        c: OpMut<GpuBuf<T>>,
    ) -> Result<(), ExecError> {
        if n == 0 {
            return Ok(());
        }
        // The pairs buffer serves lane 0 only (lane 1 may run at the same time).
        let by_halves = n > HALVES_LEAF && self.lane == 0 && self.ensure_pairs(3 * n * k);
        let handle = self.handle();
        let stream = self.cur().stream.clone();
        let stream: &CudaStream = &stream;
        let (pa, _ra) = a.buf.slice.device_ptr(stream);
        let (pb, _rb) = b.buf.slice.device_ptr(stream);
        let (pc, _wc) = c.buf.slice.device_ptr_mut(stream);
        let (pa, pb, pc) = (
            at::<T>(pa, a.off) as *const T,
            at::<T>(pb, b.off) as *const T,
            at::<T>(pc, c.off) as *mut T,
        );
        let mut pairs = None;
        let _wp;
        if by_halves {
            let buf = &mut self.pairs.as_mut().expect("ensured above").buf;
            let (pp, wp) = buf.device_ptr_mut(stream);
            _wp = wp;
            // SAFETY: the copies write three n x k blocks inside the pairs buffer (3nk
            // elements ensured above) and read A and B as SYR2K would.
            unsafe {
                for (src, ld, block) in [(pa, a.ld, 0), (pb, b.ld, 1), (pa, a.ld, 2)] {
                    let dst = at::<T>(pp, block * n * k) as *mut T;
                    T::geam_copy(handle, false, dim(n), dim(k), src, dim(ld), dst, dim(n))
                        .result()
                        .map_err(blas_err)?;
                }
            }
            pairs = Some(pp as *const T);
        }
        let pairs = pairs.map(|p| Pairs2k { p, ld: n, k });
        // SAFETY: as in gemm; the pairs hold [A B A] with leading dimension n.
        unsafe {
            syr2k_by_halves(
                handle, n, k, alpha, pa, a.ld, pb, b.ld, beta, pc, c.ld, pairs, 0,
            )
        }
        .map_err(blas_err)
    }
}

/// Orders above which `syr2k` splits into halves. cuBLAS's DSYR2K ran at 9 TFLOP/s on an H100
/// in the band reduction at n = 16384, kd = 64 (DGEMM 65 at order 8192); there, with
/// HYLAPACK_SBR_PROFILE=1, its phase took 0.31 s whole, 0.39 s by halves down to blocks of
/// 512, 0.32 s to 1024 and 0.28 s to 2048. (SYMM by halves pays only with leaves of 4096:
/// see [`SYMM_LEAF`].)
const HALVES_LEAF: usize = 2048;

/// Orders above which `symm` splits into halves, for at most [`SYMM_HALVES_MAX_COLS`]
/// columns. cuBLAS's DSYMM took the same time for 32, 64 and 128 columns on an H100 (1.15 ms at
/// order 16384, 4.5 ms at 32768: 15 TFLOP/s at 32 columns); by halves down to 4096 it took
/// 0.86 and 3.2 ms at 32 columns, 0.93 and 3.3 ms at 64, but was slower at 128 (1.42 ms) and
/// with leaves of 2048 or less (docs/bench/2026-11-22-h100-syev-8.txt).
const SYMM_LEAF: usize = 4096;
/// See [`SYMM_LEAF`].
const SYMM_HALVES_MAX_COLS: usize = 64;

/// C := alpha A B + beta C, A n x n symmetric (read from its lower triangle), B and C n x k: by
/// halves, `A₂₁` through two GEMMs (C₁ += alpha A₂₁ᵀ B₂, C₂ += alpha A₂₁ B₁) after the diagonal
/// blocks' own products, down to blocks of order [`SYMM_LEAF`] that cuBLAS's SYMM takes.
///
/// # Safety
/// As for `CublasReal::gemm`; C overlaps neither A nor B.
#[allow(clippy::too_many_arguments)]
unsafe fn symm_by_halves<T: CublasReal>(
    h: cublasHandle_t,
    n: usize,
    k: usize,
    alpha: T,
    a: *const T,
    lda: usize,
    b: *const T,
    ldb: usize,
    beta: T,
    c: *mut T,
    ldc: usize,
) -> Result<(), CublasError> {
    if n <= SYMM_LEAF || k > SYMM_HALVES_MAX_COLS {
        return T::symm(
            h,
            dim(n),
            dim(k),
            &alpha,
            a,
            dim(lda),
            b,
            dim(ldb),
            &beta,
            c,
            dim(ldc),
        )
        .result();
    }
    let (n1, n2) = (half(n), n - half(n));
    let a21 = a.add(n1);
    symm_by_halves(h, n1, k, alpha, a, lda, b, ldb, beta, c, ldc)?;
    let a22 = a.add(n1 + n1 * lda);
    let (b2, c2) = (b.add(n1), c.add(n1));
    symm_by_halves(h, n2, k, alpha, a22, lda, b2, ldb, beta, c2, ldc)?;
    let one = T::ONE;
    T::gemm(
        h,
        trans(true),
        trans(false),
        dim(n1),
        dim(k),
        dim(n2),
        &alpha,
        a21,
        dim(lda),
        b2,
        dim(ldb),
        &one,
        c,
        dim(ldc),
    )
    .result()?;
    T::gemm(
        h,
        trans(false),
        trans(false),
        dim(n2),
        dim(k),
        dim(n1),
        &alpha,
        a21,
        dim(lda),
        b,
        dim(ldb),
        &one,
        c2,
        dim(ldc),
    )
    .result()
}

/// Where the two halves of an order-n block split: near the middle, on a multiple of 64.
fn half(n: usize) -> usize {
    (n / 2).div_ceil(64) * 64
}

/// [A B A] of a rank-2k update (leading dimension ld): rows r.. of [A B] start at p + r, of
/// [B A] at p + k ld + r.
#[derive(Clone, Copy)]
struct Pairs2k<T> {
    p: *const T,
    ld: usize,
    k: usize,
}

/// The lower triangle of C := alpha (A Bᵀ + B Aᵀ) + beta C, C n x n, A and B n x k: by halves,
/// the block below the diagonal as one GEMM of rank 2k, [A2 B2] [B1 A1]ᵀ, from the pairs
/// (whose rows start at `row`); SYR2K on diagonal blocks of order at most HALVES_LEAF, or on
/// the whole without pairs.
///
/// # Safety
/// As for `CublasReal::gemm`; the pairs hold [A B A] of the whole update.
#[allow(clippy::too_many_arguments)]
unsafe fn syr2k_by_halves<T: CublasReal>(
    h: cublasHandle_t,
    n: usize,
    k: usize,
    alpha: T,
    a: *const T,
    lda: usize,
    b: *const T,
    ldb: usize,
    beta: T,
    c: *mut T,
    ldc: usize,
    pairs: Option<Pairs2k<T>>,
    row: usize,
) -> Result<(), CublasError> {
    let Some(pp) = pairs.filter(|_| n > HALVES_LEAF) else {
        return T::syr2k(
            h,
            dim(n),
            dim(k),
            &alpha,
            a,
            dim(lda),
            b,
            dim(ldb),
            &beta,
            c,
            dim(ldc),
        )
        .result();
    };
    let (n1, n2) = (half(n), n - half(n));
    T::gemm(
        h,
        trans(false),
        trans(true),
        dim(n2),
        dim(n1),
        dim(2 * k),
        &alpha,
        pp.p.add(row + n1),
        dim(pp.ld),
        pp.p.add(pp.k * pp.ld + row),
        dim(pp.ld),
        &beta,
        c.add(n1),
        dim(ldc),
    )
    .result()?;
    syr2k_by_halves(h, n1, k, alpha, a, lda, b, ldb, beta, c, ldc, pairs, row)?;
    syr2k_by_halves(
        h,
        n2,
        k,
        alpha,
        a.add(n1),
        lda,
        b.add(n1),
        ldb,
        beta,
        c.add(n1 + n1 * ldc),
        ldc,
        pairs,
        row + n1,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lapack::Dense;
    use crate::sbr::cpu::CpuExecutor;
    use crate::sbr::{op, op_mut};
    use crate::testmat::{seed_from_time, Rng};

    /// `data` uploaded to a new buffer of `exec`.
    fn put<T: Real, E: Executor<T>>(exec: &mut E, data: &[T]) -> E::Buf {
        let mut buf = exec.alloc(data.len()).unwrap();
        exec.upload(&mut buf, 0, data.len(), &mut |start, out| {
            out.copy_from_slice(&data[start..start + out.len()])
        })
        .unwrap();
        buf
    }

    fn get<T: Real, E: Executor<T>>(exec: &mut E, buf: &E::Buf, len: usize) -> Vec<T> {
        let mut out = vec![T::ZERO; len];
        exec.download(buf, 0, len, &mut |start, piece| {
            out[start..start + piece.len()].copy_from_slice(piece)
        })
        .unwrap();
        out
    }

    /// The GPU executor's SYR2K (by halves: the order is above HALVES_LEAF, and one half
    /// splits again) and SYMM against the CPU executor's BLAS: the lower triangle within the two computations' rounding bound
    /// (2 (terms + 2) ulp times the sum of the terms' magnitudes, which the BLAS computes from
    /// absolute values), C's strict upper triangle untouched, and A's strict upper triangle
    /// (NaN here) never read.
    fn syr2k_symm_match_blas<T: CublasReal + Dense>() {
        if let Err(e) = device::gpu() {
            let required = crate::config::get().require_gpu;
            assert!(!required, "HYLAPACK_REQUIRE_GPU=1 but no GPU: {e}");
            return;
        }
        let seed = seed_from_time();
        let mut rng = Rng::new(seed);
        let (n, k) = (2 * HALVES_LEAF + 77, 64);
        let mut rand = |len: usize| -> Vec<T> {
            (0..len)
                .map(|_| T::from_f64(rng.range(-1.0, 1.0)))
                .collect()
        };
        let abs = |v: &[T]| -> Vec<T> { v.iter().map(|x| x.abs()).collect() };
        let (a, b, z, x) = (rand(n * k), rand(n * k), rand(n * k), rand(n * k));
        let (mut c, mut sym) = (rand(n * n), rand(n * n));
        for j in 0..n {
            for i in 0..j {
                c[i + j * n] = T::from_f64(7.0);
                sym[i + j * n] = T::from_f64(f64::NAN);
            }
        }
        let mut gpu = GpuExecutor::<T>::new(None).unwrap();
        let mut cpu = CpuExecutor::new(u64::MAX);
        let ulp = T::ULP.to_f64();
        let what = |name: &str| format!("GPU {}{name} n={n} seed={seed}", T::PREFIX);
        let minus = -T::ONE;

        // C := −(A Bᵀ + B Aᵀ) + C on both, and |A| |B|ᵀ + |B| |A|ᵀ + |C| on the CPU.
        let mut on_cpu = |a: &[T], b: &[T], c: &[T], alpha: T| {
            let (pa, pb, mut pc) = (put(&mut cpu, a), put(&mut cpu, b), put(&mut cpu, c));
            let out = op_mut(&mut pc, 0, n);
            cpu.syr2k(n, k, alpha, op(&pa, 0, n), op(&pb, 0, n), T::ONE, out)
                .unwrap();
            get(&mut cpu, &pc, n * n)
        };
        let want = on_cpu(&a, &b, &c, minus);
        let size = on_cpu(&abs(&a), &abs(&b), &abs(&c), T::ONE);
        let (ga, gb, mut gc) = (put(&mut gpu, &a), put(&mut gpu, &b), put(&mut gpu, &c));
        let out = op_mut(&mut gc, 0, n);
        gpu.syr2k(n, k, minus, op(&ga, 0, n), op(&gb, 0, n), T::ONE, out)
            .unwrap();
        let got = get(&mut gpu, &gc, n * n);
        let bound = 2.0 * (2 * k + 2) as f64 * ulp;
        for j in 0..n {
            for i in 0..n {
                let q = i + j * n;
                let (g, w) = (got[q].to_f64(), want[q].to_f64());
                if i < j {
                    assert_eq!(g, 7.0, "{}: upper ({i}, {j}) written", what("syr2k"));
                } else {
                    let tol = bound * size[q].to_f64();
                    assert!(
                        (g - w).abs() <= tol,
                        "{}: ({i}, {j}) {g} vs {w}",
                        what("syr2k")
                    );
                }
            }
        }

        // X := S Z − X with S symmetric, read from its lower triangle; the bound from
        // |S| |Z| + |X|.
        let mut on_cpu = |s: &[T], z: &[T], x: &[T], beta: T| {
            let (ps, pz, mut px) = (put(&mut cpu, s), put(&mut cpu, z), put(&mut cpu, x));
            let out = op_mut(&mut px, 0, n);
            cpu.symm(n, k, T::ONE, op(&ps, 0, n), op(&pz, 0, n), beta, out)
                .unwrap();
            get(&mut cpu, &px, n * k)
        };
        let want = on_cpu(&sym, &z, &x, minus);
        let size = on_cpu(&abs(&sym), &abs(&z), &abs(&x), T::ONE);
        let (gs, gz, mut gx) = (put(&mut gpu, &sym), put(&mut gpu, &z), put(&mut gpu, &x));
        let out = op_mut(&mut gx, 0, n);
        gpu.symm(n, k, T::ONE, op(&gs, 0, n), op(&gz, 0, n), minus, out)
            .unwrap();
        let got = get(&mut gpu, &gx, n * k);
        let bound = 2.0 * (n + 2) as f64 * ulp;
        for (q, (g, w)) in got.iter().zip(&want).enumerate() {
            let (g, w) = (g.to_f64(), w.to_f64());
            let tol = bound * size[q].to_f64();
            assert!(
                (g - w).abs() <= tol,
                "{}: entry {q} {g} vs {w}",
                what("symm")
            );
        }
    }

    /// `upload_block` in several staging pieces (two columns each) puts every column at its
    /// place and leaves the rows between them as they were.
    #[test]
    fn gpu_upload_block_places_columns() {
        if let Err(e) = device::gpu() {
            let required = crate::config::get().require_gpu;
            assert!(!required, "HYLAPACK_REQUIRE_GPU=1 but no GPU: {e}");
            return;
        }
        let (rows, cols, ld, off) = (CHUNK / 2 - 3, 5, CHUNK / 2 + 4, 11);
        let len = off + cols * ld;
        let mut gpu = GpuExecutor::<f64>::new(None).unwrap();
        let mut buf = put(&mut gpu, &vec![-1.0; len]);
        let value = |q: usize| (q % 1_000_003) as f64 + 0.5;
        gpu.upload_block(&mut buf, off, ld, rows, cols, &mut |start, out| {
            for (i, x) in out.iter_mut().enumerate() {
                *x = value(start + i);
            }
        })
        .unwrap();
        let got = get(&mut gpu, &buf, len);
        for (q, &x) in got.iter().enumerate() {
            let (j, i) = ((q.max(off) - off) / ld, (q.max(off) - off) % ld);
            let inside = q >= off && j < cols && i < rows;
            let want = if inside { value(j * rows + i) } else { -1.0 };
            assert_eq!(x, want, "entry {q}");
        }
    }

    /// Direct transfers between a page-locked host matrix and device blocks, and strided
    /// downloads through the staging, put every entry where it belongs and nothing else.
    #[test]
    fn gpu_direct_transfers_and_download_block() {
        if let Err(e) = device::gpu() {
            let required = crate::config::get().require_gpu;
            assert!(!required, "HYLAPACK_REQUIRE_GPU=1 but no GPU: {e}");
            return;
        }
        let (lda, hcols) = (1003, 40);
        let value = |q: usize| (q % 1_000_003) as f64 + 0.25;
        let mut host: Vec<f64> = (0..lda * hcols).map(value).collect();
        let mut gpu = GpuExecutor::<f64>::new(None).unwrap();
        // SAFETY: `host` outlives the executor's use of it (unmapped below).
        assert!(unsafe { gpu.map_host(host.as_mut_ptr(), host.len()) });
        // Rows 7..7+rows of columns 3..3+cols of the host matrix into a block at `off` (ld).
        let (rows, cols, ld, off) = (900, 30, 950, 13);
        let len = off + cols * ld;
        let mut buf = put(&mut gpu, &vec![-1.0; len]);
        let src = host[7 + 3 * lda..].as_ptr();
        // SAFETY: the block lies inside `host`, not written until the sync below.
        unsafe { gpu.upload_direct(&mut buf, off, ld, rows, cols, src, lda) }.unwrap();
        gpu.sync().unwrap();
        let got = get(&mut gpu, &buf, len);
        for (q, &x) in got.iter().enumerate() {
            let (j, i) = ((q.max(off) - off) / ld, (q.max(off) - off) % ld);
            let inside = q >= off && j < cols && i < rows;
            let want = if inside {
                value(7 + i + (3 + j) * lda)
            } else {
                -1.0
            };
            assert_eq!(x, want, "uploaded entry {q}");
        }
        // A sub-block back through the staging, packed.
        let (r2, c2, off2) = (500, 20, off + 2 * ld + 40);
        let mut packed = vec![0.0; r2 * c2];
        gpu.download_block(&buf, off2, ld, r2, c2, &mut |start, piece| {
            packed[start..start + piece.len()].copy_from_slice(piece)
        })
        .unwrap();
        for j in 0..c2 {
            for i in 0..r2 {
                assert_eq!(
                    packed[i + j * r2],
                    got[off2 + i + j * ld],
                    "packed ({i}, {j})"
                );
            }
        }
        // The same sub-block straight into rows 100.. of host columns 5.., nothing else.
        let before = host.clone();
        let dst = host[100 + 5 * lda..].as_mut_ptr();
        // SAFETY: the block lies inside `host`, untouched during the call.
        unsafe { gpu.download_direct(&buf, off2, ld, r2, c2, dst, lda) }.unwrap();
        gpu.unmap_host();
        for (q, (&x, &was)) in host.iter().zip(&before).enumerate() {
            let (i, j) = (q % lda, q / lda);
            let inside = (100..100 + r2).contains(&i) && (5..5 + c2).contains(&j);
            let want = if inside {
                packed[(i - 100) + (j - 5) * r2]
            } else {
                was
            };
            assert_eq!(x, want, "host entry ({i}, {j})");
        }
    }

    #[test]
    fn gpu_dsyr2k_dsymm_match_blas() {
        syr2k_symm_match_blas::<f64>();
    }

    #[test]
    fn gpu_ssyr2k_ssymm_match_blas() {
        syr2k_symm_match_blas::<f32>();
    }
}
