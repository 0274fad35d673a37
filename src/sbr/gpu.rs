//! The GPU executor: the blocked algorithm's matrices in device memory, the arithmetic in
//! cuBLAS (GEMM, SYMM, SYR2K) on one stream, uploads and downloads on two more through pinned
//! staging buffers, so that the next block column's upload and the previous one's download
//! overlap the current block's arithmetic. Every device buffer is reserved from the memory
//! budget first; cross-stream order comes from cudarc's per-buffer read/write events.

use super::{ExecError, Executor, Op, OpMut};
use crate::device::memory::{Pinned, Reservation};
use crate::device::{self, DeviceError, Gpu, PooledStream};
use crate::real::Real;
use cudarc::cublas::sys::{
    self as cb, cublasFillMode_t, cublasHandle_t, cublasOperation_t, cublasSideMode_t,
    cublasStatus_t,
};
use cudarc::cublas::CudaBlas;
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
    ($t:ty, $gemm:ident, $symm:ident, $syr2k:ident) => {
        impl CublasReal for $t {
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

impl_cublas!(f64, cublasDgemm_v2, cublasDsymm_v2, cublasDsyr2k_v2);
impl_cublas!(f32, cublasSgemm_v2, cublasSsymm_v2, cublasSsyr2k_v2);

/// A device matrix buffer and its share of the memory budget.
pub struct GpuBuf<T> {
    slice: CudaSlice<T>,
    _reserved: Reservation<'static>,
}

pub struct GpuExecutor<T> {
    gpu: &'static Gpu,
    blas: CudaBlas,
    compute: PooledStream,
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

impl<T: CublasReal> GpuExecutor<T> {
    /// Streams, a cuBLAS handle and the budget: what is free of `HYLAPACK_GPU_MEMORY_LIMIT`
    /// (or of the device) now, less room for cuBLAS's workspace, and at most `limit`.
    pub fn new(limit: Option<u64>) -> Result<Self, ExecError> {
        let gpu = device::gpu()?;
        let compute = gpu.stream()?;
        let h2d = gpu.stream()?;
        let d2h = gpu.stream()?;
        let blas = gpu.blas(&compute)?;
        Ok(GpuExecutor {
            gpu,
            blas,
            compute,
            h2d,
            d2h,
            budget: gpu
                .budget
                .available()
                .saturating_sub(CUBLAS_MARGIN)
                .min(limit.unwrap_or(u64::MAX)),
            up: Vec::new(),
            next_up: 0,
            down: Vec::new(),
        })
    }

    fn handle(&self) -> cublasHandle_t {
        *self.blas.handle()
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
        let slice = self.compute.alloc_zeros::<T>(len).map_err(driver_err)?;
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
        let stream: &CudaStream = &self.compute;
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
        let stream: &CudaStream = &self.compute;
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
        let stream: &CudaStream = &self.compute;
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
