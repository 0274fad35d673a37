//! The GPU executor: the blocked algorithm's matrices in device memory, the arithmetic in
//! cuBLAS (GEMM, SYMM, SYR2K, GEAM for copies) and cuSOLVER (the resident mode's panel QR,
//! where it is installed) on one stream (a second one for the look-ahead), uploads and
//! downloads on two more through pinned
//! staging buffers, so that the next block column's upload and the previous one's download
//! overlap the current block's arithmetic. Every device buffer is reserved from the memory
//! budget first; cross-stream order comes from cudarc's per-buffer read/write events.

use super::{ExecError, Executor, Op, OpMut};
use crate::device::linalg::{Linalg, PooledLinalg};
use crate::device::memory::{Pinned, Reservation};
use crate::device::{self, DeviceError, Gpu, PooledStream};
use crate::real::Real;
use cudarc::cublas::sys::{
    self as cb, cublasFillMode_t, cublasHandle_t, cublasOperation_t, cublasSideMode_t,
    cublasStatus_t,
};
use cudarc::cusolver::sys as cs;
use cudarc::driver::sys::CUdeviceptr;
use cudarc::driver::{CudaSlice, CudaStream, DevicePtr, DevicePtrMut};

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
                m: i32,
                n: i32,
                a: *const Self,
                lda: i32,
                c: *mut Self,
                ldc: i32,
            ) -> cublasStatus_t {
                let (one, zero): (Self, Self) = (1.0, 0.0);
                // With beta = 0, B is A itself: any valid operand serves.
                cb::$geam(
                    h,
                    cublasOperation_t::CUBLAS_OP_N,
                    cublasOperation_t::CUBLAS_OP_N,
                    m,
                    n,
                    &one,
                    a,
                    lda,
                    &zero,
                    a,
                    lda,
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

pub struct GpuExecutor<T> {
    gpu: &'static Gpu,
    qr: Option<QrWork<T>>,
    /// The compute stream with its cuBLAS and cuSOLVER handles (pooled: creating handles
    /// costs milliseconds per call otherwise).
    la: PooledLinalg,
    /// Lane 1's stream (of the highest priority: the look-ahead's panel goes ahead of the
    /// update's blocks) and handles, made when first asked for.
    la1: Option<PooledLinalg>,
    /// The lane operations go to (0: `la`, 1: `la1`).
    lane: usize,
    h2d: PooledStream,
    d2h: PooledStream,
    budget: u64,
    up: Vec<Pinned<T>>,
    next_up: usize,
    down: Vec<Pinned<T>>,
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
            la,
            la1: None,
            lane: 0,
            h2d,
            d2h,
            budget: budget(limit).unwrap_or(0),
            up: Vec::new(),
            next_up: 0,
            down: Vec::new(),
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
        while self.up.len() < UP_BUFFERS {
            self.up.push(self.gpu.pinned::<T>(CHUNK)?);
        }
        let stream: &CudaStream = &self.h2d;
        // Waits for queued arithmetic on `dst`; records the upload as its last write.
        let (base, _written) = dst.slice.device_ptr_mut(stream);
        let mut start = 0;
        while start < len {
            let piece = (len - start).min(CHUNK);
            let stage = &mut self.up[self.next_up];
            self.next_up = (self.next_up + 1) % UP_BUFFERS;
            // as_mut_slice waits for this staging buffer's previous transfer.
            fill(start, &mut stage.as_mut_slice()?[..piece]);
            // SAFETY: the destination lies inside `dst` (asserted), which outlives the copy:
            // freeing it is ordered after the recorded write on the stream.
            unsafe { stage.copy_to_device(piece, at::<T>(base, off + start), stream)? };
            start += piece;
        }
        Ok(())
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
        while self.down.len() < 2 {
            self.down.push(self.gpu.pinned::<T>(CHUNK)?);
        }
        let stream: &CudaStream = &self.d2h;
        let pieces: Vec<(usize, usize)> = (0..len)
            .step_by(CHUNK)
            .map(|s| (s, CHUNK.min(len - s)))
            .collect();
        {
            // Waits for queued writes to `src`.
            let (base, _read) = src.slice.device_ptr(stream);
            for (q, &(start, piece)) in pieces.iter().enumerate() {
                // SAFETY: the source lies inside `src` (asserted); the staging buffer holds
                // CHUNK ≥ piece elements and its previous contents were consumed below.
                unsafe {
                    self.down[q % 2].copy_from_device(piece, at::<T>(base, off + start), stream)?
                };
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
        let handle = self.handle();
        let stream: &CudaStream = &self.cur().stream;
        let (pa, _ra) = a.buf.slice.device_ptr(stream);
        let (pb, _rb) = b.buf.slice.device_ptr(stream);
        let (pc, _wc) = c.buf.slice.device_ptr_mut(stream);
        // SAFETY: as in gemm.
        unsafe {
            T::symm(
                handle,
                dim(m),
                dim(n),
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
        if m == 0 || n == 0 {
            return Ok(());
        }
        let handle = self.handle();
        let stream: &CudaStream = &self.cur().stream;
        let (pa, _ra) = a.buf.slice.device_ptr(stream);
        let (pc, _wc) = c.buf.slice.device_ptr_mut(stream);
        // SAFETY: as in gemm.
        unsafe {
            T::geam_copy(
                handle,
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
        let handle = self.handle();
        let stream: &CudaStream = &self.cur().stream;
        let (pa, _ra) = a.buf.slice.device_ptr(stream);
        let (pb, _rb) = b.buf.slice.device_ptr(stream);
        let (pc, _wc) = c.buf.slice.device_ptr_mut(stream);
        // SAFETY: as in gemm.
        unsafe {
            T::syr2k(
                handle,
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
}
