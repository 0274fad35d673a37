//! The executors: the BLAS 3 operations and transfers the blocked reduction needs, on the
//! matrices an executor holds, behind one trait ([`Executor`]), with the CPU's BLAS
//! ([`cpu`]) and cuBLAS/cuSOLVER ([`gpu`]) behind it; the unit tests' executor that fails on
//! demand (`flaky`); and the phase timing that synchronises an executor ([`Phases`]).

pub mod cpu;
#[cfg(test)]
pub(super) mod flaky;
pub mod gpu;

use crate::device::DeviceError;
use crate::real::Real;
use std::time::Instant;

/// One block of [`Executor::download_direct_blocks`]: `rows` x `cols` of the source at `off`
/// (leading dimension `ld`) into host memory at `dst` (leading dimension `lda`).
pub struct DirectBlock<T> {
    pub off: usize,
    pub ld: usize,
    pub rows: usize,
    pub cols: usize,
    pub dst: *mut T,
    pub lda: usize,
}

/// Why an executor stopped. Device errors lead to the CPU fallback.
#[derive(Debug)]
pub enum ExecError {
    Device(DeviceError),
    /// A transfer into host memory failed after it may have written part of its destination.
    Torn(DeviceError),
    /// The budget cannot hold the panels and one block column.
    Budget {
        needed: u64,
        budget: u64,
    },
    /// Host memory (a host buffer of the run, or the CPU executor's matrices) could not be
    /// allocated.
    HostMemory {
        bytes: u64,
    },
}

impl std::fmt::Display for ExecError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ExecError::Device(e) => write!(f, "{e}"),
            ExecError::Torn(e) => write!(f, "{e} (during a transfer into host memory)"),
            ExecError::Budget { needed, budget } => write!(
                f,
                "needs at least {needed} bytes of executor memory, the budget is {budget}"
            ),
            ExecError::HostMemory { bytes } => {
                write!(f, "cannot allocate {bytes} bytes of host memory")
            }
        }
    }
}

/// `len` zeros in host memory, or [`ExecError::HostMemory`] (never an abort): how the band
/// reduction allocates host memory whose size depends on the problem. The zeros come from the
/// system (calloc), so pages a stage never touches cost nothing.
pub(crate) fn host_zeros<T: crate::host::ZeroBits>(len: usize) -> Result<Vec<T>, ExecError> {
    crate::host::try_zeroed(len).ok_or(ExecError::HostMemory {
        bytes: (len as u64).saturating_mul(std::mem::size_of::<T>() as u64),
    })
}

impl From<DeviceError> for ExecError {
    fn from(e: DeviceError) -> Self {
        ExecError::Device(e)
    }
}

/// An operand of an executor operation: a buffer, the offset of its first entry, and its
/// leading dimension.
pub struct Op<'a, B> {
    pub buf: &'a B,
    pub off: usize,
    pub ld: usize,
}

/// An output operand.
pub struct OpMut<'a, B> {
    pub buf: &'a mut B,
    pub off: usize,
    pub ld: usize,
}

pub(crate) fn op<B>(buf: &B, off: usize, ld: usize) -> Op<'_, B> {
    Op { buf, off, ld }
}

pub(crate) fn op_mut<B>(buf: &mut B, off: usize, ld: usize) -> OpMut<'_, B> {
    OpMut { buf, off, ld }
}

/// The BLAS 3 operations and transfers the blocked algorithm needs, on matrices the executor
/// holds (column-major, in buffers of `T`). Operations are queued in program order; an
/// executor may run them asynchronously as long as each sees the results of the earlier ones.
#[allow(clippy::too_many_arguments)]
pub trait Executor<T: Real> {
    type Buf;
    /// Bytes this executor may hold at once.
    fn budget(&self) -> u64;
    fn alloc(&mut self, len: usize) -> Result<Self::Buf, ExecError>;
    /// Sets entries `off..off + len` of `dst`; `fill(start, out)` writes entries
    /// `start..start + out.len()` of that range into a host slice (called in order, in one or
    /// more pieces).
    fn upload(
        &mut self,
        dst: &mut Self::Buf,
        off: usize,
        len: usize,
        fill: &mut dyn FnMut(usize, &mut [T]),
    ) -> Result<(), ExecError>;
    /// Sets the `rows` x `cols` block of `dst` whose first entry is at `off` (leading dimension
    /// `ld` ≥ rows); `fill(start, out)` writes entries `start..start + out.len()` of the block
    /// stored with leading dimension `rows` (in order, whole columns at a time). Here one
    /// `upload` per column; the GPU executor makes it a few strided copies.
    fn upload_block(
        &mut self,
        dst: &mut Self::Buf,
        off: usize,
        ld: usize,
        rows: usize,
        cols: usize,
        fill: &mut dyn FnMut(usize, &mut [T]),
    ) -> Result<(), ExecError> {
        assert!(
            rows <= ld,
            "block rows {rows} exceed the leading dimension {ld}"
        );
        for j in 0..cols {
            self.upload(dst, off + j * ld, rows, &mut |start, out| {
                fill(j * rows + start, out)
            })?;
        }
        Ok(())
    }
    /// Hands entries `off..off + len` of `src`, once all queued work on it is done, to
    /// `take(start, piece)` (in order, in one or more pieces).
    fn download(
        &mut self,
        src: &Self::Buf,
        off: usize,
        len: usize,
        take: &mut dyn FnMut(usize, &[T]),
    ) -> Result<(), ExecError>;
    /// Hands the `rows` x `cols` block of `src` whose first entry is at `off` (leading
    /// dimension `ld` ≥ rows), once all queued work on it is done, to `take(start, piece)`:
    /// entries `start..` of the block stored with leading dimension `rows`, whole columns at a
    /// time, in order. Here one `download` per column; the GPU executor makes it strided copies.
    fn download_block(
        &mut self,
        src: &Self::Buf,
        off: usize,
        ld: usize,
        rows: usize,
        cols: usize,
        take: &mut dyn FnMut(usize, &[T]),
    ) -> Result<(), ExecError> {
        assert!(
            rows <= ld,
            "block rows {rows} exceed the leading dimension {ld}"
        );
        for j in 0..cols {
            self.download(src, off + j * ld, rows, &mut |start, piece| {
                take(j * rows + start, piece)
            })?;
        }
        Ok(())
    }
    /// Makes the `len` entries of host memory at `a` (the user's matrix, a host buffer) fast to
    /// reach by `upload_direct` and `download_direct` until `unmap_host` (for the GPU:
    /// page-locked, so that they move by DMA); false where this executor cannot (a run then
    /// stages its transfers through `upload` and `download`). Several regions may be mapped.
    ///
    /// # Safety
    /// The entries stay allocated until `unmap_host` returns.
    unsafe fn map_host(&mut self, _a: *mut T, _len: usize) -> bool {
        false
    }
    /// Ends `map_host`, once every direct transfer is done.
    fn unmap_host(&mut self) {}
    /// Sets the `rows` x `cols` block of `dst` at `off` (leading dimension `ld`) from the host
    /// block at `src` (best mapped), whose columns are `lda` apart, without a staging copy.
    ///
    /// # Safety
    /// The block is valid host memory, and nothing but this executor's own `download_direct`
    /// writes it until the executor's next `sync`.
    unsafe fn upload_direct(
        &mut self,
        _dst: &mut Self::Buf,
        _off: usize,
        _ld: usize,
        _rows: usize,
        _cols: usize,
        _src: *const T,
        _lda: usize,
    ) -> Result<(), ExecError> {
        unreachable!("upload_direct without map_host")
    }
    /// Writes the `rows` x `cols` block of `src` at `off` (leading dimension `ld`), once all
    /// queued work on it is done, into the host block at `dst` (best mapped; columns `lda`
    /// apart); returns when it is written. An error after part of the block may have been
    /// written is [`ExecError::Torn`].
    ///
    /// # Safety
    /// The block is valid host memory, and nothing else reads or writes it during the call.
    unsafe fn download_direct(
        &mut self,
        _src: &Self::Buf,
        _off: usize,
        _ld: usize,
        _rows: usize,
        _cols: usize,
        _dst: *mut T,
        _lda: usize,
    ) -> Result<(), ExecError> {
        unreachable!("download_direct without map_host")
    }
    /// The blocks of `src` into host memory as [`Executor::download_direct`] would, one after
    /// the other, waiting once at the end. An error after any block may have been written is
    /// [`ExecError::Torn`].
    ///
    /// # Safety
    /// As `download_direct`'s, for every block.
    unsafe fn download_direct_blocks(
        &mut self,
        src: &Self::Buf,
        blocks: &[DirectBlock<T>],
    ) -> Result<(), ExecError> {
        for (k, b) in blocks.iter().enumerate() {
            // SAFETY: forwarded contract.
            let done =
                unsafe { self.download_direct(src, b.off, b.ld, b.rows, b.cols, b.dst, b.lda) };
            done.map_err(|e| match e {
                ExecError::Device(d) if k > 0 => ExecError::Torn(d),
                e => e,
            })?;
        }
        Ok(())
    }
    /// C := alpha op(A) op(B) + beta C, C m x n; `ta`/`tb`: transpose A/B.
    fn gemm(
        &mut self,
        ta: bool,
        tb: bool,
        m: usize,
        n: usize,
        k: usize,
        alpha: T,
        a: Op<Self::Buf>,
        b: Op<Self::Buf>,
        beta: T,
        c: OpMut<Self::Buf>,
    ) -> Result<(), ExecError>;
    /// C := alpha A B + beta C with A m x m symmetric, its lower triangle read; C m x n.
    fn symm(
        &mut self,
        m: usize,
        n: usize,
        alpha: T,
        a: Op<Self::Buf>,
        b: Op<Self::Buf>,
        beta: T,
        c: OpMut<Self::Buf>,
    ) -> Result<(), ExecError>;
    /// QR of the m x k block `a` in place, as xGEQRF leaves it (R on and above the diagonal,
    /// the reflectors below), their scalars into the first min(m, k) entries of `tau`.
    fn geqrf(
        &mut self,
        m: usize,
        k: usize,
        a: OpMut<Self::Buf>,
        tau: OpMut<Self::Buf>,
    ) -> Result<(), ExecError>;
    /// The Cholesky factor R (A = RᵀR) of the n x n symmetric `a` into its upper triangle (the
    /// only one read). Failure is not reported: the caller checks R or what it computes from
    /// it (the CPU leaves NaN).
    fn potrf_upper(&mut self, n: usize, a: OpMut<Self::Buf>) -> Result<(), ExecError>;
    /// B := B R⁻¹, B m x n, R n x n upper triangular (its upper triangle read).
    fn trsm_right_upper(
        &mut self,
        m: usize,
        n: usize,
        r: Op<Self::Buf>,
        b: OpMut<Self::Buf>,
    ) -> Result<(), ExecError>;
    /// C := A, both m x n.
    fn copy(
        &mut self,
        m: usize,
        n: usize,
        a: Op<Self::Buf>,
        c: OpMut<Self::Buf>,
    ) -> Result<(), ExecError>;
    /// C := Aᵀ, A m x n (C n x m).
    fn transpose(
        &mut self,
        m: usize,
        n: usize,
        a: Op<Self::Buf>,
        c: OpMut<Self::Buf>,
    ) -> Result<(), ExecError>;
    /// `transpose`, queued behind the uploads (`up`) or the downloads rather than on a lane:
    /// an upper-stored block row turned into a block column right after its upload, or back
    /// right before its write-back, waits for no arithmetic but that which wrote its source.
    fn transpose_in_transfer(
        &mut self,
        up: bool,
        m: usize,
        n: usize,
        a: Op<Self::Buf>,
        c: OpMut<Self::Buf>,
    ) -> Result<(), ExecError> {
        let _ = up;
        self.transpose(m, n, a, c)
    }
    /// Waits until all queued work is done (phase timing only).
    fn sync(&mut self) -> Result<(), ExecError>;
    /// Whether `geqrf` can run here (the resident mode factors its panels on the host if not).
    fn can_factor(&self) -> bool {
        true
    }
    /// Runs the operations queued from now on on lane 0 (the default) or 1: an executor may
    /// run the two lanes concurrently, each operation still seeing the results of every
    /// earlier one on the buffers it touches.
    fn lane(&mut self, _lane: usize) -> Result<(), ExecError> {
        Ok(())
    }
    /// Lower triangle of the n x n C := alpha (A Bᵀ + B Aᵀ) + beta C, A and B n x k.
    fn syr2k(
        &mut self,
        n: usize,
        k: usize,
        alpha: T,
        a: Op<Self::Buf>,
        b: Op<Self::Buf>,
        beta: T,
        c: OpMut<Self::Buf>,
    ) -> Result<(), ExecError>;
}

/// Phase times of a run (`HYLAPACK_SBR_PROFILE=1`): the executor is synchronised at the end
/// of each phase, and the sums are printed on stderr when the run ends.
pub(in crate::sbr) struct Phases {
    pub(in crate::sbr) on: bool,
    pub(in crate::sbr) last: Instant,
    pub(in crate::sbr) names: &'static [&'static str],
    pub(in crate::sbr) secs: Vec<f64>,
}

impl Phases {
    /// Phases named `names`, timed if `on` (the `profile` setting).
    pub(in crate::sbr) fn new(names: &'static [&'static str], on: bool) -> Self {
        Phases {
            on,
            last: Instant::now(),
            names,
            secs: vec![0.0; names.len()],
        }
    }

    pub(in crate::sbr) fn end<T: Real, E: Executor<T>>(
        &mut self,
        exec: &mut E,
        phase: usize,
    ) -> Result<(), ExecError> {
        if self.on {
            exec.sync()?;
            let now = Instant::now();
            self.secs[phase] += (now - self.last).as_secs_f64();
            self.last = now;
        }
        Ok(())
    }

    pub(in crate::sbr) fn report(&self, n: usize, kd: usize, what: &str) {
        if self.on {
            let parts: Vec<String> = (self.names.iter().zip(&self.secs))
                .map(|(name, s)| format!("{name} {s:.3} s"))
                .collect();
            eprintln!(
                "hylapack: syrdb phases n={n} kd={kd} {what}: {}",
                parts.join(", ")
            );
        }
    }
}
