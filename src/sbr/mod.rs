//! xSYRDB: reduction of a dense symmetric matrix to symmetric band form by orthogonal
//! similarity, out of core (Davidović & Quintana-Ortí; the SBR toolbox's SYRDB), with the
//! contract of LAPACK's xSYTRD_SY2SB; the eigenvalue drivers built on it are [`crate::syev`].
//!
//! Step `i` (`i = 0, kd, 2kd, …` while `i + kd < n`) works on the lower view `L` of `A`
//! (`UPLO = 'U'` is read transposed, so both triangles run the same code):
//! 1. QR of the panel `L[s.., i..i+kd]`, `s = i + kd`: `Q = I − V T Vᵀ`, and `Z = V T` on
//!    the executor. Resident: the executor factors the panel in place by CholeskyQR2 with
//!    Householder reconstruction (see [`cholqr`]), or by xGEQRF (cuSOLVER on the GPU) where
//!    that cannot be trusted, the host forming the small `T` from `VᵀV` (see
//!    [`panel_on_executor`]), so the panel never travels; with look-ahead (the default) the
//!    next panel is factored on a second lane (a stream of the highest priority) while the
//!    rest of the trailing matrix is updated (see [`resident_steps`]). Streaming: the panel
//!    is factored on the executor by sub-panels of 64 columns (each as the resident panels,
//!    see [`blocked_panel`]; a wide band's panel on the host's xGEQRT3 took 0.7 s of each 1 s
//!    step at n = 32768, kd = 1024) and comes back to the host; `V` and `Z` stay. Unless
//!    `HYLAPACK_SBR_STREAM_AHEAD=0` it is factored where the last step's update pass left it,
//!    during that pass.
//! 2. Two-sided update of the trailing `A₂ = L[s.., s..]` as in the paper's (8)–(11), with
//!    LAPACK's signs: `X = A₂ Z` (SYMM), `X −= ½ V (Zᵀ X)`, `A₂ −= V Xᵀ + X Vᵀ` (SYR2K).
//!
//! The host matrix is the only full copy. An [`Executor`] (the CPU's BLAS, or cuBLAS) holds
//! `V`, `Z`, `X` and either the whole lower triangle ("resident", when the budget allows) or a
//! ring of three block columns of the trailing matrix that stream through it ("streaming"):
//! each step's SYMM takes a pass that uploads them, and its SYR2K a pass that uploads, updates
//! and downloads them, the next upload and the previous download overlapping the current
//! block's arithmetic. The SYR2K pass also factors the next panel and forms the next step's
//! SYMM (see [`syr2k_pass`]; `HYLAPACK_SBR_STREAM_AHEAD=0` turns this off), so that the
//! trailing matrix travels once each way per step (not for the first step, a resumed pass, or
//! blocks no wider than kd). The block width comes from the executor's byte budget.
//!
//! Streaming block columns move straight between the user's matrix and the executor
//! (`Executor::map_host`: the GPU page-locks the matrix for the call and moves them by DMA at
//! the bus's 54 GB/s each way; through the pinned staging the host's own copies held the passes
//! to 10-29 GB/s at n = 32768). With `UPLO = 'U'` a block column of `L` is a block row of `A`,
//! transposed on the executor in two more buffers (the ring's room then holds five of 3/5 the
//! width). Only a block column's diagonal block comes back through a host buffer, so that the
//! other triangle, which is not ours, is never written. X and the panels use host buffers
//! mapped once per call. `HYLAPACK_SBR_DIRECT=0` copies through the staging on several host
//! threads (see `host`).
//!
//! Phase times: `HYLAPACK_SBR_PROFILE=1` synchronises the executor after each phase and prints
//! the sums on stderr; `HYLAPACK_SBR_PANEL=geqrf` factors the resident mode's panels with
//! xGEQRF on the executor, `=host` on the host, as before, for comparison;
//! `HYLAPACK_SBR_LOOKAHEAD=0` turns the look-ahead off.
//!
//! Data safety: in resident mode the host `A` is written only at the end (the final download,
//! then the band and LAPACK's unit-diagonal layout of the panels), so a failure before then
//! restarts the call on the CPU from the untouched input. A failure in the middle of that final
//! download leaves neither the input nor the result on the host: it panics (the API turns the
//! panic into INFO = HYLAPACK_INFO_INTERNAL_ERROR with the message) rather than restart LAPACK
//! on a half-written matrix, as it did before. In streaming mode the host `A`
//! is consistent after every block column of the SYR2K pass (each is written back whole), and
//! `V`, `X` of the step are kept on the host, so a failure resumes on the CPU executor where it
//! stopped. A write-back that fails after part of its column may have reached the host (a copy
//! that dies half way) leaves a column that the resumption would update twice: that call stops
//! with an error, as a torn final download does. A pass that takes the next step along keeps
//! that step's panel, `Z` and partial `X` off the host matrix (its band columns and τ are
//! written early, and again by a resumption, which redoes that step whole).

mod cholqr;
pub mod cpu;
pub mod gpu;
mod host;
pub mod sb2st;
pub mod sbrdb;

use crate::config::SbrPanel;
use crate::device::memory::{copy_threads, par_copy};
use crate::device::DeviceError;
use crate::dispatch::Backend;
use crate::lapack::Dense;
use crate::real::Real;
pub use host::HostMat;
use std::time::Instant;

/// LAPACK's FACTOPTNB: the block size ILAENV gives xGEQRF/xGELQF, which sizes xSYTRD_SY2SB's
/// workspace.
const FACTOPTNB: usize = 32;

/// xSYTRD_SY2SB's LWMIN, which a workspace query returns. Saturates at `usize::MAX` rather
/// than wrapping (no LWORK, and no memory, is that large).
pub fn lwork_min(n: usize, kd: usize) -> usize {
    if n <= kd.saturating_add(1) {
        1
    } else {
        let nkd = n.saturating_mul(kd);
        let nb = n.saturating_mul(kd.max(FACTOPTNB));
        let kd2 = kd.saturating_mul(kd).saturating_mul(2);
        nkd.saturating_add(nb).saturating_add(kd2)
    }
}

/// xSYTRD_SY2SB's argument checks, in LAPACK's order: 0, or −i for an illegal i-th argument
/// (1 UPLO, 2 N, 3 KD, 5 LDA, 7 LDAB, 10 LWORK; LWORK = −1 is a query, never illegal, and is
/// what a caller with no workspace argument passes). Sizes are compared in 64-bit arithmetic,
/// so that KD + 1 or LWMIN cannot wrap around at INT_MAX as LAPACK's 32-bit INTEGERs do.
/// KD = 0 with N ≥ 2 is illegal here: no orthogonal similarity made of reflectors turns a
/// matrix diagonal, and LAPACK, which accepts it, then loops with a step of zero (a division
/// by zero that kills the program).
pub fn check_args(uplo: u8, n: i32, kd: i32, lda: i32, ldab: i32, lwork: i32) -> i32 {
    if !matches!(uplo.to_ascii_uppercase(), b'U' | b'L') {
        return -1;
    }
    if n < 0 {
        return -2;
    }
    if kd < 0 || (kd == 0 && n >= 2) {
        return -3;
    }
    if i64::from(lda) < i64::from(n).max(1) {
        return -5;
    }
    if i64::from(ldab) < (i64::from(kd) + 1).max(1) {
        return -7;
    }
    let lwmin = lwork_min(n as usize, kd as usize) as u64;
    if lwork != -1 && (lwork < 0 || (lwork as u64) < lwmin) {
        return -10;
    }
    0
}

/// Which code reduces the matrix.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Path {
    /// The system LAPACK's xSYTRD_SY2SB, in place.
    Lapack,
    /// This module's blocked out-of-core algorithm on the CPU's BLAS, with a budget of `budget`
    /// bytes for the executor's matrices (what the GPU's memory would hold): exercises the
    /// out-of-core tiling without a GPU.
    CpuBlocked { budget: u64 },
    /// The blocked algorithm on the GPU within the GPU memory budget (and within `budget`
    /// bytes, if given: benchmarks and tests force the out-of-core mode with it); falls back
    /// to the CPU.
    Gpu { budget: Option<u64> },
}

/// How a reduction ran.
#[derive(Clone, Debug, PartialEq)]
pub struct SyrdbReport {
    pub backend: Backend,
    /// Resident, streaming with the block width used, or why the GPU was left.
    pub note: Option<String>,
    /// In the resident mode: the seconds spent uploading the matrix and downloading the result
    /// (each timed between synchronisations of the executor, in this run).
    pub transfer_secs: Option<f64>,
}

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
        }
    }
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

/// Where band column `j` of the lower view goes in LAPACK's band storage: entry `d` (row
/// `j + d` of `L`) for `d = 0..=kd`.
fn band_index(upper: bool, kd: usize, ldab: usize, j: usize, d: usize) -> usize {
    if upper {
        (kd - d) + (j + d) * ldab
    } else {
        d + j * ldab
    }
}

/// How the trailing matrix is held by the executor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// The whole lower triangle (as an n x n array) stays in the executor.
    Resident,
    /// Block columns of `nb` columns stream through a ring of three buffers (five of 3/5 the
    /// width where an upper-stored matrix's block rows are transposed, see `Ring`).
    Streaming { nb: usize },
}

/// Chooses the mode for an n x n problem with bandwidth kd in `budget` bytes: resident if the
/// whole matrix fits beside the panels (and the look-ahead's second panel set, the next
/// panel's columns and tau), else the widest block columns that fit beside the panels, up to
/// max(2kd, 1024).
pub fn plan(n: usize, kd: usize, elem: usize, budget: u64) -> Result<Mode, ExecError> {
    let fixed = streaming_budget(n, kd, 0, elem);
    let whole = (n * n * elem) as u64;
    // With the band's staging buffer for band-only runs (`band_from_device`); less the
    // streaming mode's next `X`.
    let resident_extra =
        ((2 * n * kd + (3 + 2 * cholqr::scratch_len(1)) * kd * kd + n + (kd + 1) * (n + kd + 1))
            * elem) as u64;
    if fixed + resident_extra + whole <= budget {
        return Ok(Mode::Resident);
    }
    let per_col = (3 * n * elem) as u64;
    let nb = budget.saturating_sub(fixed) / per_col;
    if nb == 0 {
        return Err(ExecError::Budget {
            needed: fixed + per_col,
            budget,
        });
    }
    // Blocks wider than this gain nothing in the BLAS and lengthen the passes' first upload
    // and last download, which nothing overlaps.
    let widest = (2 * kd).max(1024);
    Ok(Mode::Streaming {
        nb: (nb as usize).min(n).min(widest),
    })
}

/// The bytes a streaming run with block columns of `nb` columns holds on its executor: `V`,
/// `Z`, `X` and the next step's `X` (n x kd each; `X` also holds the panel while it is factored
/// between passes, the next `X` its `V` while it is factored in a pass), two kd x kd matrices,
/// τ, the sub-panels' buffers and the ring of three block columns.
pub fn streaming_budget(n: usize, kd: usize, nb: usize, elem: usize) -> u64 {
    ((4 * n * kd + 2 * kd * kd + kd + sub_panels_len(n, kd) + 3 * n * nb) * elem) as u64
}

/// Where a run stands, kept on the host so that another executor can take over.
struct Progress<T> {
    /// The next step's first column.
    i: usize,
    /// Band columns `0..banded` are in AB.
    banded: usize,
    /// A SYR2K pass interrupted after its first `done` columns of the trailing matrix, with
    /// its `V` and `X` (streaming mode only).
    pending: Option<Pending<T>>,
    /// The host matrix may hold part of a write-back: of the resident mode's final download, or
    /// of a streaming block column. No path can finish the call after a failure then.
    written_back: bool,
    /// Resident panels factored on the executor by CholeskyQR2 and by xGEQRF.
    panels: [usize; 2],
    /// How streaming block columns moved straight between the host matrix and the executor,
    /// if they did (for the report).
    direct: Option<String>,
    /// Seconds the resident mode spent moving the matrix to the executor and back.
    transfer_secs: Option<f64>,
}

impl<T> Progress<T> {
    /// Adds panels factored by CholeskyQR2 and by xGEQRF.
    fn count(&mut self, how: [usize; 2]) {
        self.panels[0] += how[0];
        self.panels[1] += how[1];
    }
}

struct Pending<T> {
    x: Vec<T>,
    pk: usize,
    /// Trailing columns `0..done` are written back (a column count, not a block count: a
    /// resumed pass may cut the rest into blocks of another width).
    done: usize,
    /// The factored panel (rows `i..`, columns `i..i+kd`), written to the host when the pass
    /// ends, so that the host never holds a factored panel beside a trailing matrix that has
    /// not been updated with it. Its rows `kd..` hold `V` in LAPACK's layout.
    panel: Vec<T>,
}

/// Shared arguments of a run.
struct Job<'h, 'a, T> {
    host: &'h mut HostMat<'a, T>,
    n: usize,
    kd: usize,
    ab: &'h mut [T],
    ldab: usize,
    tau: &'h mut [T],
    /// Only AB is wanted (see [`syrdb_band`]).
    band_only: bool,
    /// See [`Problem::stream_ahead`].
    stream_ahead: bool,
    /// The executor has mapped the host matrix (`Executor::map_host`): streaming block columns
    /// move straight between it and the executor.
    direct: bool,
}

/// Writes band column `j` (entry `d` is row `j + d` of `L`) into AB.
fn put_band<T: Real>(
    ab: &mut [T],
    ldab: usize,
    kd: usize,
    n: usize,
    upper: bool,
    j: usize,
    column: impl Fn(usize) -> T,
) {
    for d in 0..=kd.min(n - 1 - j) {
        ab[band_index(upper, kd, ldab, j, d)] = column(d);
    }
}

/// Panel QR on the host: `p` holds `L[i.., i..i+kd]` (leading dimension `h`); on return its
/// rows `kd..` hold `V` (unit diagonal, zeros above) where the reflectors are, the band of
/// columns `i..i+pk` is in AB and `tau[i..i+pk]` is set. Returns `V` (pn x pk) and the pk x pk
/// triangular `T` of `Q = I − V T Vᵀ`.
fn factor_panel<T: Real + Dense>(
    job: &mut Job<T>,
    i: usize,
    p: &mut [T],
    h: usize,
) -> (Vec<T>, Vec<T>) {
    let (n, kd) = (job.n, job.kd);
    let pn = n - i - kd;
    let pk = pn.min(kd);
    // The recursive xGEQRT3 gives T with the reflectors and runs at BLAS 3 speed; it needs a
    // panel at least as tall as wide, which only the last one may not be.
    let mut t = vec![T::ZERO; pk * pk];
    if pn >= kd {
        let info = T::geqrt3(pn, kd, &mut p[kd..], h, &mut t, pk);
        assert_eq!(info, 0, "xGEQRT3 rejected its arguments");
        for c in 0..pk {
            job.tau[i + c] = t[c + c * pk];
        }
    } else {
        let info = T::geqrf(pn, kd, &mut p[kd..], h, &mut job.tau[i..i + pk]);
        assert_eq!(info, 0, "xGEQRF rejected its arguments");
    }
    finish_panel(job, i, p, h);
    let v = panel_v(p, h, kd, pn, pk);
    if pn < kd {
        T::larft(pn, pk, (&v, pn), &job.tau[i..i + pk], &mut t, pk);
    }
    (v, t)
}

/// After a panel's QR (xGEQRF's layout in rows `kd..` of `p`, as [`factor_panel`]): its band
/// into AB, and LAPACK's layout in `p` (unit diagonal, zeros above it).
fn finish_panel<T: Real>(job: &mut Job<T>, i: usize, p: &mut [T], h: usize) {
    let (n, kd) = (job.n, job.kd);
    let pn = n - i - kd;
    let pk = pn.min(kd);
    for c in 0..pk {
        let upper = job.host.upper;
        put_band(job.ab, job.ldab, kd, n, upper, i + c, |d| p[c + d + c * h]);
        for r in 0..=c {
            p[kd + r + c * h] = if r == c { T::ONE } else { T::ZERO };
        }
    }
}

/// `V` (pn x pk, leading dimension pn) of a finished panel `p` (leading dimension `h`).
fn panel_v<T: Real>(p: &[T], h: usize, kd: usize, pn: usize, pk: usize) -> Vec<T> {
    let mut v = vec![T::ZERO; pn * pk];
    for (c, col) in v.chunks_exact_mut(pn).enumerate() {
        col.copy_from_slice(&p[kd + c * h..kd + c * h + pn]);
    }
    v
}

/// Columns of the sub-panels a streaming panel is factored by on the executor.
const SUB_PANEL: usize = 64;

/// The buffers of [`blocked_panel`]: one sub-panel's set, a k x w scratch and k x w zeros.
struct SubPanels<B> {
    set: PanelSet<B>,
    scratch: B,
    zeros: B,
}

impl<B> SubPanels<B> {
    fn new<T: Real, E: Executor<T, Buf = B>>(
        exec: &mut E,
        m: usize,
        k: usize,
    ) -> Result<Self, ExecError> {
        let w = SUB_PANEL.min(k).max(1);
        Ok(SubPanels {
            set: PanelSet {
                v: exec.alloc(m * w)?,
                z: exec.alloc(m * w)?,
                s: exec.alloc(w * w)?,
                t: exec.alloc(w * w)?,
                q: exec.alloc(cholqr::scratch_len(w))?,
            },
            scratch: exec.alloc(k * w)?,
            zeros: exec.alloc(k * w)?,
        })
    }
}

/// Executor entries of [`SubPanels`] for panels of at most m x k.
fn sub_panels_len(m: usize, k: usize) -> usize {
    let w = SUB_PANEL.min(k).max(1);
    2 * m * w + 2 * w * w + cholqr::scratch_len(w) + 2 * k * w
}

/// QR of the m x k panel `p` (m > k) on the executor, by sub-panels of [`SUB_PANEL`] columns
/// ([`panel_on_executor`] each, applied to the columns on its right): the panel ends in
/// xGEQRF's layout, τ in `taubuf[tau_at..tau_at + k]`, `V` in `v` and `Z = V T` in `z` (both
/// m x k, leading dimension m). `T` itself is never formed: with `Z_q = V_q T_q` from sub-panel q
/// (columns a..a+w), `Z[.., a..a+w] = Z_q − Z[.., ..a] (V[.., ..a]ᵀ Z_q)`. Returns how many
/// sub-panels went by CholeskyQR2 and by xGEQRF.
#[allow(clippy::too_many_arguments)]
fn blocked_panel<T: Real + Dense, E: Executor<T>>(
    exec: &mut E,
    p: OpMut<E::Buf>,
    m: usize,
    k: usize,
    taubuf: &mut E::Buf,
    tau_at: usize,
    v: &mut E::Buf,
    z: &mut E::Buf,
    sub: &mut SubPanels<E::Buf>,
) -> Result<[usize; 2], ExecError> {
    let (p, off, ld) = (p.buf, p.off, p.ld);
    let mut how = [0, 0];
    let mut a = 0;
    while a < k {
        let w = SUB_PANEL.min(k - a);
        let ma = m - a;
        let set = &mut sub.set;
        let panel = op_mut(p, off + a + a * ld, ld);
        how[panel_on_executor(exec, panel, taubuf, set, ma, w, tau_at + a)?] += 1;
        let rest = k - a - w;
        if rest > 0 {
            // The columns on the right.
            let (vq, zq) = (op(&set.v, 0, ma), op(&set.z, 0, ma));
            let at = off + a + (a + w) * ld;
            apply_qt(exec, ma, w, rest, vq, zq, p, at, ld, &mut sub.scratch)?;
        }
        let zeros = || op(&sub.zeros, 0, k);
        if a > 0 {
            exec.copy(a, w, zeros(), op_mut(v, a * m, m))?;
        }
        exec.copy(ma, w, op(&set.v, 0, ma), op_mut(v, a + a * m, m))?;
        if a == 0 {
            exec.copy(ma, w, op(&set.z, 0, ma), op_mut(z, 0, m))?;
        } else {
            // Y = V[a.., ..a]ᵀ Z_q (Z_q is zero above row a); the new block is built in
            // `set.v` (free once V_q is in place, read as m x w) and copied into Z.
            let y = op_mut(&mut sub.scratch, 0, a);
            exec.gemm(
                true,
                false,
                a,
                w,
                ma,
                T::ONE,
                op(v, a, m),
                op(&set.z, 0, ma),
                T::ZERO,
                y,
            )?;
            exec.copy(a, w, op(&sub.zeros, 0, k), op_mut(&mut set.v, 0, m))?;
            exec.copy(ma, w, op(&set.z, 0, ma), op_mut(&mut set.v, a, m))?;
            let (zl, y) = (op(z, 0, m), op(&sub.scratch, 0, a));
            let block = op_mut(&mut set.v, 0, m);
            exec.gemm(false, false, m, w, a, -T::ONE, zl, y, T::ONE, block)?;
            exec.copy(m, w, op(&set.v, 0, m), op_mut(z, a * m, m))?;
        }
        a += w;
    }
    Ok(how)
}

/// Runs the reduction from `progress` on `exec`, updating `progress` as it goes.
fn run<T: Real + Dense, E: Executor<T>>(
    exec: &mut E,
    job: &mut Job<T>,
    progress: &mut Progress<T>,
    mode: Mode,
) -> Result<(), ExecError> {
    let (n, kd) = (job.n, job.kd);
    let pk_max = kd.min(n.saturating_sub(kd + progress.i));
    let panel_len = n * pk_max.max(1);
    let mut vbuf = exec.alloc(panel_len)?;
    let mut zbuf = exec.alloc(panel_len)?;
    let mut xbuf = exec.alloc(panel_len)?;
    let mut sbuf = exec.alloc((pk_max * pk_max).max(1))?;
    let mut tbuf = exec.alloc((pk_max * pk_max).max(1))?;

    match mode {
        Mode::Resident => {
            let on_host = panel_mode() == SbrPanel::Host || !exec.can_factor();
            let mut ph = Phases::new(&["upload", "panel", "symm", "syr2k", "download", "band"]);
            let mut whole = exec.alloc(n * n)?;
            let mut taubuf = exec.alloc(n)?;
            // The lower triangle only, by block columns (rows c.. of columns c..c + w): the
            // strict upper triangle of the resident copy is never read.
            let host = &*job.host;
            let t_up = Instant::now();
            for (c, w) in block_columns(n, TRANSFER_BLOCK) {
                exec.upload_block(&mut whole, c + c * n, n, n - c, w, &mut |start, out| {
                    host.gather(c, n - c, c, start, out)
                })?;
            }
            exec.sync()?;
            let up = t_up.elapsed().as_secs_f64();
            ph.end(exec, 0)?;
            if on_host {
                while progress.i + kd < n {
                    let i = progress.i;
                    let (h, s) = (n - i, i + kd);
                    let (pn, pk) = (n - s, (n - s).min(kd));
                    // Columns i..i+kd, rows i.. of the resident copy, through a contiguous span.
                    let span_off = i + i * n;
                    let span_len = n * (kd - 1) + h;
                    let mut span = vec![T::ZERO; span_len];
                    exec.download(&whole, span_off, span_len, &mut |start, piece| {
                        span[start..start + piece.len()].copy_from_slice(piece)
                    })?;
                    let (v, t) = factor_panel(job, i, &mut span, n);
                    exec.upload(&mut whole, span_off, span_len, &mut |start, out| {
                        out.copy_from_slice(&span[start..start + out.len()])
                    })?;
                    progress.banded = i + pk;
                    upload_panel(exec, &mut vbuf, &mut tbuf, &mut zbuf, &v, &t, pn, pk)?;
                    ph.end(exec, 1)?;
                    let trailing = s + s * n;
                    exec.symm(
                        pn,
                        pk,
                        T::ONE,
                        op(&whole, trailing, n),
                        op(&zbuf, 0, pn),
                        T::ZERO,
                        op_mut(&mut xbuf, 0, pn),
                    )?;
                    finish_x(exec, pn, pk, &vbuf, &zbuf, &mut xbuf, &mut sbuf)?;
                    ph.end(exec, 2)?;
                    exec.syr2k(
                        pn,
                        pk,
                        -T::ONE,
                        op(&vbuf, 0, pn),
                        op(&xbuf, 0, pn),
                        T::ONE,
                        op_mut(&mut whole, trailing, n),
                    )?;
                    ph.end(exec, 3)?;
                    progress.i += kd;
                }
            } else {
                let first = PanelSet {
                    v: vbuf,
                    z: zbuf,
                    s: sbuf,
                    t: tbuf,
                    q: exec.alloc(cholqr::scratch_len(pk_max).max(1))?,
                };
                let ahead = if lookahead() {
                    let small = (pk_max * pk_max).max(1);
                    let second = PanelSet {
                        v: exec.alloc(panel_len)?,
                        z: exec.alloc(panel_len)?,
                        s: exec.alloc(small)?,
                        t: exec.alloc(small)?,
                        q: exec.alloc(cholqr::scratch_len(pk_max).max(1))?,
                    };
                    Some((second, exec.alloc(panel_len)?))
                } else {
                    None
                };
                let resident = Resident {
                    whole: &mut whole,
                    taubuf: &mut taubuf,
                    xbuf: &mut xbuf,
                };
                // Panels wider than a sub-panel are factored by sub-panels, as the streaming
                // mode's: one CholeskyQR2 of k columns costs O(k³) on the host (40 s at
                // n = 32768, kd = 1024).
                let sub = if kd > SUB_PANEL {
                    Some(SubPanels::new(exec, n - kd, kd)?)
                } else {
                    None
                };
                resident_steps(exec, n, kd, progress, resident, first, ahead, sub, &mut ph)?;
            }
            exec.sync()?;
            let t_down = Instant::now();
            if job.band_only && !on_host {
                // Only the band goes back; the host's A keeps the input.
                band_from_device(exec, &whole, job)?;
                progress.banded = n;
                ph.end(exec, 4)?;
            } else {
                if !on_host {
                    let tau = &mut *job.tau;
                    exec.download(&taubuf, 0, n - kd, &mut |start, piece| {
                        tau[start..start + piece.len()].copy_from_slice(piece)
                    })?;
                }
                // The lower triangle by block columns, as it went up: the rest is not ours.
                let host = &mut *job.host;
                for (c, w) in block_columns(n, TRANSFER_BLOCK) {
                    let written = &mut progress.written_back;
                    exec.download_block(&whole, c + c * n, n, n - c, w, &mut |start, piece| {
                        *written = true;
                        host.scatter(c, n - c, c, start, piece)
                    })?;
                }
                ph.end(exec, 4)?;
                if !on_host {
                    progress.banded = band_from_panels(job);
                }
            }
            progress.transfer_secs = Some(up + t_down.elapsed().as_secs_f64());
            ph.end(exec, 5)?;
            ph.report(n, kd, "resident");
            if let (true, Some(split)) = (ph.on, cholqr::report()) {
                eprintln!("hylapack: syrdb panel steps n={n} kd={kd}: {split}");
            }
        }
        Mode::Streaming { nb } => {
            let mut host_ph = Phases::new(&["map", "buffers", "unmap"]);
            // SAFETY: the host matrix outlives the run; `unmap_host` ends it below.
            // Upper storage: block columns of L are block rows of A, which go through two
            // buffers to be transposed, in the ring's room (five buffers of 3/5 its width).
            job.direct = crate::config::get().sbr.direct
                && (!job.host.upper || nb >= 2)
                && unsafe { exec.map_host(job.host.a.as_mut_ptr(), job.host.a.len()) };
            let turn = job.direct && job.host.upper;
            let nb = if turn { nb * 3 / 5 } else { nb };
            if job.direct && progress.direct.is_none() {
                progress.direct = Some(if turn {
                    format!("direct transfers of block rows, transposed, {nb} wide")
                } else {
                    "direct block-column transfers".into()
                });
            }
            // Timing only: a failing wait shows again in the run below, which unmaps.
            host_ph.end(exec, 0).ok();
            // The host buffers of the steps (X, two panels, the diagonal block's tiles),
            // allocated once so that their pages are in place, and mapped beside the matrix.
            // They live here, in `spare` (between steps and during a step's panel and SYMM
            // pass) or in `progress.pending`, all of which outlive `unmap_host`; `p_next` holds
            // the next step's panel while a pass factors it.
            let (mut x, mut p, mut p_next, mut diagonal) = (
                Vec::with_capacity(n * kd),
                Vec::with_capacity(n * kd),
                Vec::with_capacity(n * kd),
                Vec::with_capacity(DIAG_TILE.min(nb) * nb),
            );
            if job.direct {
                for b in [&mut x, &mut p, &mut p_next, &mut diagonal] {
                    // SAFETY: the buffers are not reallocated (they stay within their
                    // capacity) and outlive the run, which ends with `unmap_host`.
                    unsafe { exec.map_host(b.as_mut_ptr(), b.capacity()) };
                }
            }
            let mut spare: Option<(Vec<T>, Vec<T>)> = None;
            host_ph.end(exec, 1).ok();
            let ran = (|| -> Result<(), ExecError> {
                let mut x_next = exec.alloc(panel_len)?;
                let ring_len = n * nb;
                let mut ring = Ring {
                    slots: [
                        exec.alloc(ring_len)?,
                        exec.alloc(ring_len)?,
                        exec.alloc(ring_len)?,
                    ],
                    turn: if turn {
                        Some([exec.alloc(ring_len)?, exec.alloc(ring_len)?])
                    } else {
                        None
                    },
                };
                let mut ph = Phases::new(&["panel", "symm pass", "X", "syr2k pass"]);
                let on_executor = panel_mode() != SbrPanel::Host && exec.can_factor();
                let mut sub = SubPanels::new(exec, n.saturating_sub(kd + progress.i), kd)?;
                let mut taubuf = exec.alloc(kd)?;
                // The last pass factored this step's panel (in `p_next`, Z in `zbuf`) and
                // formed its A₂ Z (in `x_next`), see `syr2k_pass`.
                let mut ahead = false;
                while progress.i + kd < n {
                    let i = progress.i;
                    let (h, s) = (n - i, i + kd);
                    let (pn, pk) = (n - s, (n - s).min(kd));
                    if let Some(pending) = &progress.pending {
                        // A SYR2K pass another executor left: its V and X come from the host.
                        let v = panel_v(&pending.panel, h, kd, pn, pending.pk);
                        upload_panels(exec, &mut vbuf, &mut xbuf, &v, &pending.x)?;
                    } else {
                        let (x, p) = spare.get_or_insert_with(|| {
                            (std::mem::take(&mut x), std::mem::take(&mut p))
                        });
                        if ahead {
                            std::mem::swap(p, &mut p_next);
                            std::mem::swap(&mut xbuf, &mut x_next);
                            upload_v(exec, job, &mut vbuf, p, h, pn, pk)?;
                            ph.end(exec, 0)?;
                            ph.end(exec, 1)?;
                        } else if on_executor && pn > kd {
                            p.resize(h * kd, T::ZERO);
                            // The diagonal block: the rows below come back factored.
                            for c in 0..kd {
                                job.host.gather(i, kd, i + c, 0, &mut p[c * h..c * h + kd]);
                            }
                            let bufs = PanelBufs {
                                p: &mut xbuf,
                                tau: &mut taubuf,
                                v: &mut vbuf,
                                z: &mut zbuf,
                                sub: &mut sub,
                                // (n · nb entries: room for the panel's n · kd if kd ≤ nb)
                                turn: ring.turn.as_mut().filter(|_| kd <= nb).map(|t| &mut t[0]),
                            };
                            let how = panel_through_executor(exec, job, i, p, h, bufs)?;
                            progress.count(how);
                        } else {
                            p.resize(h * kd, T::ZERO);
                            job.host.gather(i, h, i, 0, p);
                            let (v, t) = factor_panel(job, i, p, h);
                            upload_panel(exec, &mut vbuf, &mut tbuf, &mut zbuf, &v, &t, pn, pk)?;
                        }
                        if !ahead {
                            ph.end(exec, 0)?;
                            let cols = symm_columns(pn, nb, kd);
                            symm_pass(exec, job, &cols, &mut ring, &zbuf, &mut xbuf, s, pk)?;
                            ph.end(exec, 1)?;
                        }
                        finish_x(exec, pn, pk, &vbuf, &zbuf, &mut xbuf, &mut sbuf)?;
                        x.resize(pn * pk, T::ZERO);
                        if job.direct {
                            // SAFETY: `x` holds pn·pk entries and is ours alone.
                            let to = x.as_mut_ptr();
                            unsafe { exec.download_direct(&xbuf, 0, pn, pn, pk, to, pn)? };
                        } else {
                            exec.download(&xbuf, 0, pn * pk, &mut |start, piece| {
                                par_copy(&mut x[start..start + piece.len()], piece)
                            })?;
                        }
                        progress.pending = Some(Pending {
                            x: std::mem::take(x),
                            pk,
                            done: 0,
                            panel: std::mem::take(p),
                        });
                        ph.end(exec, 2)?;
                    }
                    // The next step's panel and SYMM ride along where its panel is the first
                    // kd columns of this pass's first block column and is factored on the
                    // executor (as `panel_through_executor` would, pn − kd > kd).
                    let fresh = progress.pending.as_ref().is_some_and(|p| p.done == 0);
                    let fuse = job.stream_ahead && on_executor && nb > kd && pn > 2 * kd && fresh;
                    let next = fuse.then_some(NextStep {
                        z: &mut zbuf,
                        x: &mut x_next,
                        tau: &mut taubuf,
                        sub: &mut sub,
                        panel: &mut p_next,
                    });
                    let (done, how) = syr2k_pass(
                        exec,
                        job,
                        progress,
                        nb,
                        &mut ring,
                        &vbuf,
                        &xbuf,
                        s,
                        &mut diagonal,
                        next,
                    )?;
                    spare = Some((done.x, done.panel));
                    // The step is on the host: count it before anything else can fail.
                    progress.i += kd;
                    progress.count(how);
                    ahead = fuse;
                    ph.end(exec, 3)?;
                }
                ph.report(n, kd, &describe(mode));
                if let (true, Some(split)) = (ph.on, cholqr::report()) {
                    eprintln!("hylapack: syrdb panel steps n={n} kd={kd}: {split}");
                }
                Ok(())
            })();
            if job.direct {
                host_ph.last = Instant::now();
                exec.unmap_host();
                job.direct = false;
                host_ph.end(exec, 2)?;
                host_ph.report(n, kd, "host memory");
            }
            ran?;
        }
    }
    Ok(())
}

/// Copies `src`, whole columns of `rows` entries, into the columns of `dst` (`ld` apart), on
/// several threads for large copies.
fn copy_columns<T: Real>(dst: &mut [T], ld: usize, src: &[T], rows: usize) {
    let cols = src.len() / rows;
    let per = cols.div_ceil(copy_threads(std::mem::size_of_val(src)));
    let copy = |d: &mut [T], from: &[T]| {
        for (j, col) in from.chunks(rows).enumerate() {
            d[j * ld..j * ld + rows].copy_from_slice(col);
        }
    };
    if per == cols {
        return copy(dst, src);
    }
    std::thread::scope(|t| {
        for (d, from) in dst.chunks_mut(per * ld).zip(src.chunks(per * rows)) {
            t.spawn(move || copy(d, from));
        }
    });
}

/// The executor buffers a streaming panel is factored in ([`panel_through_executor`]).
struct PanelBufs<'a, B> {
    /// For an upper-stored matrix's direct upload (room for the panel): the panel goes
    /// through it to be transposed.
    turn: Option<&'a mut B>,
    p: &'a mut B,
    tau: &'a mut B,
    v: &'a mut B,
    z: &'a mut B,
    sub: &'a mut SubPanels<B>,
}

/// A streaming step's panel (`p`, gathered from the host as for [`factor_panel`], pn > kd)
/// factored on the executor ([`blocked_panel`]): its rows `kd..` go up into `bufs.p`, come back
/// factored, and end as [`finish_panel`] leaves them, `tau[i..]` set; `V` and `Z` stay on the
/// executor. Returns the sub-panel counts.
fn panel_through_executor<T: Real + Dense, E: Executor<T>>(
    exec: &mut E,
    job: &mut Job<T>,
    i: usize,
    p: &mut [T],
    h: usize,
    bufs: PanelBufs<E::Buf>,
) -> Result<[usize; 2], ExecError> {
    let (n, kd) = (job.n, job.kd);
    let (s, pn) = (i + kd, n - i - kd);
    // Rows s.. straight from the host matrix.
    let (src, lda) = (job.host.ptr(s, i), job.host.lda);
    // SAFETY (both): the block lies in the mapped matrix, which the host writes only at the end
    // of the step's SYR2K pass, after the download below has waited for this upload.
    if job.direct && !job.host.upper {
        unsafe { exec.upload_direct(bufs.p, 0, pn, pn, kd, src, lda)? };
    } else if let Some(turn) = bufs.turn {
        // Rows i..i+kd, columns s.. of A, transposed.
        unsafe { exec.upload_direct(turn, 0, kd, kd, pn, src, lda)? };
        exec.transpose(kd, pn, op(turn, 0, kd), op_mut(bufs.p, 0, pn))?;
    } else {
        let host = &*job.host;
        exec.upload(bufs.p, 0, pn * kd, &mut |start, out| {
            host.gather(s, pn, i, start, out)
        })?;
    }
    let panel = op_mut(&mut *bufs.p, 0, pn);
    let how = blocked_panel(exec, panel, pn, kd, bufs.tau, 0, bufs.v, bufs.z, bufs.sub)?;
    panel_home(exec, job, bufs.p, bufs.tau, i, p, h, kd)?;
    Ok(how)
}

/// Step `i`'s panel factored on the executor, rows `from..h` of its kd columns in `buf`
/// (leading dimension h − from), into the host's `p` (h x kd, leading dimension h), τ into
/// `tau[i..]` from `taubuf`; then as [`finish_panel`] leaves it.
#[allow(clippy::too_many_arguments)]
fn panel_home<T: Real + Dense, E: Executor<T>>(
    exec: &mut E,
    job: &mut Job<T>,
    buf: &E::Buf,
    taubuf: &E::Buf,
    i: usize,
    p: &mut [T],
    h: usize,
    from: usize,
) -> Result<(), ExecError> {
    let (kd, rows) = (job.kd, h - from);
    if job.direct {
        // SAFETY: rows from.. of the kd columns of `p` (h x kd), which is ours alone.
        let to = p[from..].as_mut_ptr();
        unsafe { exec.download_direct(buf, 0, rows, rows, kd, to, h) }?;
    } else {
        exec.download_block(buf, 0, rows, rows, kd, &mut |start, piece| {
            copy_columns(&mut p[from + start / rows * h..], h, piece, rows)
        })?;
    }
    let tau = &mut job.tau[i..i + kd];
    exec.download(taubuf, 0, kd, &mut |start, piece| {
        tau[start..start + piece.len()].copy_from_slice(piece)
    })?;
    finish_panel(job, i, p, h);
    Ok(())
}

/// How the resident mode factors its panels: by CholeskyQR2 on the executor (the default),
/// xGEQRF there, or on the host (`HYLAPACK_SBR_PANEL`, the last two kept for comparison).
fn panel_mode() -> SbrPanel {
    crate::config::get().sbr.panel
}

/// Phase times of a run (`HYLAPACK_SBR_PROFILE=1`): the executor is synchronised at the end
/// of each phase, and the sums are printed on stderr when the run ends.
struct Phases {
    on: bool,
    last: Instant,
    names: &'static [&'static str],
    secs: Vec<f64>,
}

impl Phases {
    fn new(names: &'static [&'static str]) -> Self {
        Phases {
            on: crate::config::get().sbr.profile,
            last: Instant::now(),
            names,
            secs: vec![0.0; names.len()],
        }
    }

    fn end<T: Real, E: Executor<T>>(
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

    fn report(&self, n: usize, kd: usize, what: &str) {
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

/// Whether the resident mode factors the next panel on a second lane of the executor while the
/// rest of the trailing matrix is updated: on unless `HYLAPACK_SBR_LOOKAHEAD=0`. On the H100
/// (n = 16384) with CholeskyQR2 panels on a lane of the highest priority it takes the
/// reduction from 0.74 to 0.55 s at kd = 64 and from 0.96 to 0.81 s at kd = 32
/// (docs/bench/2026-11-22-h100-syev-3.txt); with cuSOLVER geqrf panels and lane 1 at the
/// default priority it had not paid (1.06 s against 0.98 s at kd = 32).
fn lookahead() -> bool {
    crate::config::get().sbr.lookahead
}

/// A panel's buffers on the executor: `V`, `Z = V T`, two k x k scratch matrices (`T`), and
/// the small matrices of the CholeskyQR2 panel ([`cholqr::scratch_len`]).
struct PanelSet<B> {
    v: B,
    z: B,
    s: B,
    t: B,
    q: B,
}

/// The resident matrix and the buffers every step uses.
struct Resident<'a, B> {
    whole: &'a mut B,
    taubuf: &'a mut B,
    xbuf: &'a mut B,
}

/// The resident steps with the panels factored on the executor. Step i: `X = A₂ Z`; then,
/// with look-ahead (`ahead`: a second panel set and room for the next panel's columns), the
/// next panel's columns (the first kd of `A₂`) are updated first and copied aside, the rest of
/// `A₂` is updated on lane 0 while lane 1 factors the copy (the host waits only for lane 1's
/// small round trip), and the factored copy goes back into place. Without it, the whole of
/// `A₂` is updated and the next panel factored in place.
#[allow(clippy::too_many_arguments)]
fn resident_steps<T: Real + Dense, E: Executor<T>>(
    exec: &mut E,
    n: usize,
    kd: usize,
    progress: &mut Progress<T>,
    r: Resident<E::Buf>,
    first: PanelSet<E::Buf>,
    ahead: Option<(PanelSet<E::Buf>, E::Buf)>,
    mut sub: Option<SubPanels<E::Buf>>,
    ph: &mut Phases,
) -> Result<(), ExecError> {
    let Resident {
        whole,
        taubuf,
        xbuf,
    } = r;
    let (mut sets, mut next_cols) = match ahead {
        Some((second, next)) => (vec![first, second], Some(next)),
        None => (vec![first], None),
    };
    // The set that holds the current panel.
    let mut k = 0;
    let i0 = progress.i;
    if i0 + kd < n {
        let s = i0 + kd;
        let panel = op_mut(whole, s + i0 * n, n);
        let how = resident_panel(exec, panel, taubuf, &mut sets[0], &mut sub, n - s, kd, i0)?;
        progress.count(how);
    }
    while progress.i + kd < n {
        let i = progress.i;
        let s = i + kd;
        let (pn, pk) = (n - s, (n - s).min(kd));
        ph.end(exec, 1)?;
        let trailing = s + s * n;
        let c = &mut sets[k];
        exec.symm(
            pn,
            pk,
            T::ONE,
            op(whole, trailing, n),
            op(&c.z, 0, pn),
            T::ZERO,
            op_mut(xbuf, 0, pn),
        )?;
        finish_x(exec, pn, pk, &c.v, &c.z, xbuf, &mut c.s)?;
        ph.end(exec, 2)?;
        // Is there a next step (i + kd + kd < n)?
        let more = pn > kd;
        match &mut next_cols {
            Some(next) if more => {
                let (a, b) = sets.split_at_mut(1);
                let (c, o) = if k == 0 {
                    (&mut a[0], &mut b[0])
                } else {
                    (&mut b[0], &mut a[0])
                };
                // The next panel's columns first: A₂[.., 0..kd] −= V X[0..kd]ᵀ + X V[0..kd]ᵀ.
                let minus = -T::ONE;
                exec.syr2k(
                    kd,
                    pk,
                    minus,
                    op(&c.v, 0, pn),
                    op(xbuf, 0, pn),
                    T::ONE,
                    op_mut(whole, trailing, n),
                )?;
                let below = pn - kd;
                let (v0, x0) = (op(&c.v, 0, pn), op(xbuf, 0, pn));
                let (vk, xk) = (op(&c.v, kd, pn), op(xbuf, kd, pn));
                let col = op_mut(whole, trailing + kd, n);
                exec.gemm(false, true, below, kd, pk, minus, vk, x0, T::ONE, col)?;
                let col = op_mut(whole, trailing + kd, n);
                exec.gemm(false, true, below, kd, pk, minus, xk, v0, T::ONE, col)?;
                exec.copy(pn, kd, op(whole, trailing, n), op_mut(next, 0, pn))?;
                // The rest of A₂ on lane 0, the next panel meanwhile on lane 1.
                exec.syr2k(
                    below,
                    pk,
                    minus,
                    op(&c.v, kd, pn),
                    op(xbuf, kd, pn),
                    T::ONE,
                    op_mut(whole, trailing + kd + kd * n, n),
                )?;
                exec.lane(1)?;
                let panel = op_mut(next, kd, pn);
                let factored = resident_panel(exec, panel, taubuf, o, &mut sub, pn - kd, kd, s);
                exec.lane(0)?;
                progress.count(factored?);
                exec.copy(pn, kd, op(next, 0, pn), op_mut(whole, trailing, n))?;
                k = 1 - k;
            }
            _ => {
                exec.syr2k(
                    pn,
                    pk,
                    -T::ONE,
                    op(&c.v, 0, pn),
                    op(xbuf, 0, pn),
                    T::ONE,
                    op_mut(whole, trailing, n),
                )?;
                // The next panel's time goes to the panel phase (the loop's first `end`).
                ph.end(exec, 3)?;
                if more {
                    let panel = op_mut(whole, s + kd + s * n, n);
                    let how = resident_panel(exec, panel, taubuf, c, &mut sub, pn - kd, kd, s)?;
                    progress.count(how);
                }
            }
        }
        if next_cols.is_some() {
            ph.end(exec, 3)?;
        }
        progress.i += kd;
    }
    Ok(())
}

/// A resident step's panel (`panel_on_executor`'s arguments): by sub-panels where `sub` is
/// given and the panel is taller than wide ([`blocked_panel`]), else whole. Returns the
/// CholeskyQR2 and xGEQRF counts.
#[allow(clippy::too_many_arguments)]
fn resident_panel<T: Real + Dense, E: Executor<T>>(
    exec: &mut E,
    panel: OpMut<E::Buf>,
    taubuf: &mut E::Buf,
    set: &mut PanelSet<E::Buf>,
    sub: &mut Option<SubPanels<E::Buf>>,
    pn: usize,
    kd: usize,
    tau_at: usize,
) -> Result<[usize; 2], ExecError> {
    match sub {
        Some(sub) if pn > kd => {
            let (v, z) = (&mut set.v, &mut set.z);
            blocked_panel(exec, panel, pn, kd, taubuf, tau_at, v, z, sub)
        }
        _ => {
            let mut how = [0, 0];
            how[panel_on_executor(exec, panel, taubuf, set, pn, kd, tau_at)?] += 1;
            Ok(how)
        }
    }
}

/// Panel QR on the executor: the m x k `panel` (the resident mode's `L[s.., i..i+kd]`, or a
/// block of [`sbrdb`]'s) is factored in place (xGEQRF's layout, R kept until
/// [`band_from_panels`]), `tau[tau_at..]` set; `V` (m x min(m, k), unit diagonal, zeros above
/// it) goes to `&mut bufs.v` and `Z = V T` to `&mut bufs.z`, both of leading dimension m. By CholeskyQR2 (see
/// [`cholqr`]) where it can be trusted, else by xGEQRF: then T follows
/// xLARFT's recurrence `T(0..j, j) = −τ_j T(0..j, 0..j) (VᵀV)(0..j, j)` on the host from the
/// Gram matrix `VᵀV` (its rows below the panel's top block formed on the executor): one
/// round trip of k² entries per panel instead of the panel itself. Returns 0 (CholeskyQR2) or
/// 1 (xGEQRF).
#[allow(clippy::too_many_arguments)]
fn panel_on_executor<T: Real + Dense, E: Executor<T>>(
    exec: &mut E,
    panel: OpMut<E::Buf>,
    taubuf: &mut E::Buf,
    bufs: &mut PanelSet<E::Buf>,
    pn: usize,
    kd: usize,
    tau_at: usize,
) -> Result<usize, ExecError> {
    let pk = pn.min(kd);
    let (at, ld) = (panel.off, panel.ld);
    if panel_mode() == SbrPanel::CholQr
        && cholqr::factor(
            exec,
            op_mut(panel.buf, at, ld),
            taubuf,
            bufs,
            pn,
            kd,
            tau_at,
        )?
    {
        return Ok(0);
    }
    exec.geqrf(pn, kd, op_mut(panel.buf, at, ld), op_mut(taubuf, tau_at, 1))?;
    exec.copy(pn, pk, op(panel.buf, at, ld), op_mut(&mut bufs.v, 0, pn))?;
    exec.copy(pk, pk, op(&bufs.v, 0, pn), op_mut(&mut bufs.t, 0, pk))?;
    let mut gram = vec![T::ZERO; pk * pk];
    if pn > pk {
        gram_matrix(
            exec,
            pn - pk,
            pk,
            op(&bufs.v, pk, pn),
            op_mut(&mut bufs.s, 0, pk),
        )?;
        exec.download(&bufs.s, 0, pk * pk, &mut |start, piece| {
            gram[start..start + piece.len()].copy_from_slice(piece)
        })?;
    }
    let mut top = vec![T::ZERO; pk * pk];
    exec.download(&bufs.t, 0, pk * pk, &mut |start, piece| {
        top[start..start + piece.len()].copy_from_slice(piece)
    })?;
    let mut tau = vec![T::ZERO; pk];
    exec.download(taubuf, tau_at, pk, &mut |start, piece| {
        tau[start..start + piece.len()].copy_from_slice(piece)
    })?;
    // V's top block: unit diagonal, zeros above it; its part of the Gram matrix.
    for c in 0..pk {
        for r in 0..c {
            top[r + c * pk] = T::ZERO;
        }
        top[c + c * pk] = T::ONE;
    }
    for b in 0..pk {
        for a in 0..pk {
            let mut acc = gram[a + b * pk];
            for r in a.max(b)..pk {
                acc = acc + top[r + a * pk] * top[r + b * pk];
            }
            gram[a + b * pk] = acc;
        }
    }
    let t = t_from_gram(pk, &gram, &tau);
    upload_panels(exec, &mut bufs.s, &mut bufs.t, &top, &t)?;
    exec.copy(pk, pk, op(&bufs.s, 0, pk), op_mut(&mut bufs.v, 0, pn))?;
    exec.gemm(
        false,
        false,
        pn,
        pk,
        pk,
        T::ONE,
        op(&bufs.v, 0, pn),
        op(&bufs.t, 0, pk),
        T::ZERO,
        op_mut(&mut bufs.z, 0, pn),
    )?;
    Ok(1)
}

/// The Gram matrix C := AᵀA of the m x k `a` (C k x k).
fn gram_matrix<T: Real, E: Executor<T>>(
    exec: &mut E,
    m: usize,
    k: usize,
    a: Op<E::Buf>,
    c: OpMut<E::Buf>,
) -> Result<(), ExecError> {
    let (x, y) = (op(a.buf, a.off, a.ld), op(a.buf, a.off, a.ld));
    exec.gemm(true, false, k, k, m, T::ONE, x, y, T::ZERO, c)
}

/// The k x k upper triangular `T` of `I − V T Vᵀ = H₁ ⋯ H_k` from `G = VᵀV` and the `τ`s, by
/// xLARFT's forward, column-wise recurrence (a zero τ gives a zero column).
fn t_from_gram<T: Real>(k: usize, g: &[T], tau: &[T]) -> Vec<T> {
    let mut t = vec![T::ZERO; k * k];
    let mut w = vec![T::ZERO; k];
    for j in 0..k {
        t[j + j * k] = tau[j];
        if tau[j] == T::ZERO {
            continue;
        }
        for l in 0..j {
            w[l] = T::ZERO - tau[j] * g[l + j * k];
        }
        for r in 0..j {
            let mut acc = T::ZERO;
            for l in r..j {
                acc = acc + t[r + l * k] * w[l];
            }
            t[r + j * k] = acc;
        }
    }
    t
}

/// After a resident run with the panels factored on the executor, the host's panels hold R
/// where xSYTRD_SY2SB leaves a unit diagonal and zeros: the band of each panel's columns is
/// read from the host matrix, then R is replaced. Returns the first column not yet in AB.
fn band_from_panels<T: Real>(job: &mut Job<T>) -> usize {
    let (n, kd, upper) = (job.n, job.kd, job.host.upper);
    let (mut i, mut banded) = (0, 0);
    while i + kd < n {
        let s = i + kd;
        let pk = (n - s).min(kd);
        for c in 0..pk {
            let j = i + c;
            let host = &*job.host;
            put_band(job.ab, job.ldab, kd, n, upper, j, |d| host.get(j + d, j));
        }
        for c in 0..pk {
            for r in 0..=c {
                let x = if r == c { T::ONE } else { T::ZERO };
                job.host.set(s + r, i + c, x);
            }
        }
        banded = i + pk;
        i += kd;
    }
    banded
}

/// A band-only resident run's result: the band of the reduced n x n matrix `whole`, straight
/// into AB (the eigenvalue drivers need neither the reflectors nor τ). Entry (j + d, j) lies at
/// j (n + 1) + d, so the band of the first n − kd columns is a (kd + 1) x (n − kd) matrix of
/// leading dimension n + 1; the last kd columns' lie in the trailing (kd + 1)² block.
fn band_from_device<T: Real, E: Executor<T>>(
    exec: &mut E,
    whole: &E::Buf,
    job: &mut Job<T>,
) -> Result<(), ExecError> {
    let (n, kd, upper) = (job.n, job.kd, job.host.upper);
    let h = kd + 1;
    let head = n - kd; // n > kd + 1 here
    let t0 = head - 1; // the trailing block's first row and column
    let len = h * head + h * h;
    let mut buf = exec.alloc(len)?;
    exec.copy(h, head, op(whole, 0, n + 1), op_mut(&mut buf, 0, h))?;
    exec.copy(
        h,
        h,
        op(whole, t0 + t0 * n, n),
        op_mut(&mut buf, h * head, h),
    )?;
    let mut band = vec![T::ZERO; len];
    exec.download(&buf, 0, len, &mut |start, piece| {
        band[start..start + piece.len()].copy_from_slice(piece)
    })?;
    let (head_part, tail) = band.split_at(h * head);
    for j in 0..n {
        if j < head {
            put_band(job.ab, job.ldab, kd, n, upper, j, |d| head_part[d + j * h]);
        } else {
            let c = j - t0;
            put_band(job.ab, job.ldab, kd, n, upper, j, |d| tail[c + d + c * h]);
        }
    }
    Ok(())
}

/// Uploads `V` and `T` and forms `Z = V T` on the executor.
#[allow(clippy::too_many_arguments)]
fn upload_panel<T: Real, E: Executor<T>>(
    exec: &mut E,
    vbuf: &mut E::Buf,
    tbuf: &mut E::Buf,
    zbuf: &mut E::Buf,
    v: &[T],
    t: &[T],
    pn: usize,
    pk: usize,
) -> Result<(), ExecError> {
    upload_panels(exec, vbuf, tbuf, v, t)?;
    exec.gemm(
        false,
        false,
        pn,
        pk,
        pk,
        T::ONE,
        op(vbuf, 0, pn),
        op(tbuf, 0, pk),
        T::ZERO,
        op_mut(zbuf, 0, pn),
    )
}

fn upload_panels<T: Real, E: Executor<T>>(
    exec: &mut E,
    first: &mut E::Buf,
    second: &mut E::Buf,
    a: &[T],
    b: &[T],
) -> Result<(), ExecError> {
    exec.upload(first, 0, a.len(), &mut |start, out| {
        out.copy_from_slice(&a[start..start + out.len()])
    })?;
    exec.upload(second, 0, b.len(), &mut |start, out| {
        out.copy_from_slice(&b[start..start + out.len()])
    })
}

/// `B := Qᵀ B = B − V (Zᵀ B)` for `Q = I − V T Vᵀ` with `Z = V T` (`v`, `z`: m x k), B the m x
/// c block of `b` at `off` (leading dimension `ld`); `w` takes the k x c product `Zᵀ B`.
#[allow(clippy::too_many_arguments)]
fn apply_qt<T: Real, E: Executor<T>>(
    exec: &mut E,
    m: usize,
    k: usize,
    c: usize,
    v: Op<E::Buf>,
    z: Op<E::Buf>,
    b: &mut E::Buf,
    off: usize,
    ld: usize,
    w: &mut E::Buf,
) -> Result<(), ExecError> {
    let (zb, wk) = (op(b, off, ld), op_mut(w, 0, k));
    exec.gemm(true, false, k, c, m, T::ONE, z, zb, T::ZERO, wk)?;
    let (wk, bm) = (op(w, 0, k), op_mut(b, off, ld));
    exec.gemm(false, false, m, c, k, -T::ONE, v, wk, T::ONE, bm)
}

/// `X −= ½ V (Zᵀ X)`.
#[allow(clippy::too_many_arguments)]
fn finish_x<T: Real, E: Executor<T>>(
    exec: &mut E,
    pn: usize,
    pk: usize,
    vbuf: &E::Buf,
    zbuf: &E::Buf,
    xbuf: &mut E::Buf,
    sbuf: &mut E::Buf,
) -> Result<(), ExecError> {
    exec.gemm(
        true,
        false,
        pk,
        pk,
        pn,
        T::ONE,
        op(zbuf, 0, pn),
        op(xbuf, 0, pn),
        T::ZERO,
        op_mut(sbuf, 0, pk),
    )?;
    exec.gemm(
        false,
        false,
        pn,
        pk,
        pk,
        -T::HALF,
        op(vbuf, 0, pn),
        op(sbuf, 0, pk),
        T::ONE,
        op_mut(xbuf, 0, pn),
    )
}

/// Columns per block of the resident mode's upload and download: about half the matrix's bytes
/// move each way, since only the blocks' parts above the diagonal go too. Wide enough that a
/// download's pipeline (it drains at the end of each block) is many pieces long.
const TRANSFER_BLOCK: usize = 1024;

/// The block columns `(first column, width)` of a trailing matrix of order `pn`, relative to
/// its start.
fn block_columns(pn: usize, nb: usize) -> Vec<(usize, usize)> {
    (0..pn).step_by(nb).map(|c| (c, nb.min(pn - c))).collect()
}

/// The streaming mode's executor buffers: three block columns, and for direct transfers of an
/// upper-stored matrix two more (up, down) that A's block rows go through to be transposed.
struct Ring<B> {
    slots: [B; 3],
    turn: Option<[B; 2]>,
}

/// Buffer `k` of `Ring::turn` (0: up, 1: down), if there are any.
fn turn_buf<B>(turn: &mut Option<[B; 2]>, k: usize) -> Option<&mut B> {
    turn.as_mut().map(|t| &mut t[k])
}

/// Uploads block column `(c, w)` of the trailing matrix starting at `s` into `buf` (ld `pn − c`):
/// straight from the host matrix where it is mapped (through `turn` to be transposed where it is
/// stored upper), else through the executor's staging.
fn upload_column<T: Real, E: Executor<T>>(
    exec: &mut E,
    job: &mut Job<T>,
    s: usize,
    (c, w): (usize, usize),
    buf: &mut E::Buf,
    turn: Option<&mut E::Buf>,
) -> Result<(), ExecError> {
    let h = job.n - s - c;
    if job.direct {
        let (src, lda) = (job.host.ptr(s + c, s + c), job.host.lda);
        // SAFETY (both): the block lies in the mapped matrix; the passes write the host matrix
        // only through `download_direct` and end with `sync` (see `symm_pass`, `syr2k_pass`).
        return match turn {
            None => unsafe { exec.upload_direct(buf, 0, h, h, w, src, lda) },
            Some(t) => {
                // A's rows s + c.. + w of columns s + c.., w x h.
                unsafe { exec.upload_direct(t, 0, w, w, h, src, lda)? };
                exec.transpose_in_transfer(true, w, h, op(t, 0, w), op_mut(buf, 0, h))
            }
        };
    }
    let host = &*job.host;
    exec.upload(buf, 0, h * w, &mut |start, out| {
        host.gather(s + c, h, s + c, start, out)
    })
}

/// Columns of the tiles along a block column's diagonal block that come back through a host
/// buffer (see [`download_column`]); 3 in the unit tests, so that their small blocks have
/// several.
const DIAG_TILE: usize = if cfg!(test) { 3 } else { 64 };

/// Writes block column `(c, w)` of the trailing matrix starting at `s` back from `buf`
/// (ld `pn − c`), entries on and below the diagonal only. Where the host matrix is mapped, the
/// tiles of [`DIAG_TILE`] columns along the diagonal block (their other triangle is not ours to
/// write) come down into `diagonal` first; then everything below them goes straight into the
/// host matrix in one batch (for an upper-stored matrix, through `turn`, transposed, as the
/// rows of `A` left of each tile and below the block), and the tiles are copied in last. So a
/// failure reported before the batch leaves the column as it was, for the resumption to redo.
/// Where a failure may have left part of the column on the host (a staged download that had
/// handed over a piece, an [`ExecError::Torn`] batch), `landing` is set: neither the
/// resumption (it would update that part twice) nor LAPACK (the input is gone) can finish that
/// call, which stops with an error (see [`with_fallback`]).
#[allow(clippy::too_many_arguments)]
fn download_column<T: Real, E: Executor<T>>(
    exec: &mut E,
    job: &mut Job<T>,
    s: usize,
    (c, w): (usize, usize),
    buf: &E::Buf,
    turn: Option<&mut E::Buf>,
    diagonal: &mut Vec<T>,
    landing: &mut bool,
) -> Result<(), ExecError> {
    let h = job.n - s - c;
    let host = &mut *job.host;
    if !job.direct {
        exec.download(buf, 0, h * w, &mut |start, piece| {
            *landing = true;
            host.scatter(s + c, h, s + c, start, piece)
        })?;
        *landing = false;
        return Ok(());
    }
    let b = DIAG_TILE.min(w);
    let tiles = block_columns(w, b);
    // Tile (t, bt) at entry t·b of `diagonal`, leading dimension bt.
    diagonal.resize(b * w, T::ZERO);
    let at = diagonal.as_mut_ptr();
    let to_buffer: Vec<DirectBlock<T>> = tiles
        .iter()
        .map(|&(t, bt)| DirectBlock {
            off: t + t * h,
            ld: h,
            rows: bt,
            cols: bt,
            // (in bounds: t·b + bt² ≤ w·b)
            dst: at.wrapping_add(t * b),
            lda: bt,
        })
        .collect();
    // SAFETY: the tiles lie in `diagonal`, which is ours alone. Nothing of A is written.
    match unsafe { exec.download_direct_blocks(buf, &to_buffer) } {
        Err(ExecError::Torn(e)) => return Err(ExecError::Device(e)),
        r => r?,
    }
    let lda = host.lda;
    let below: Vec<DirectBlock<T>> = match turn {
        None => tiles
            .iter()
            .filter(|&&(t, bt)| t + bt < h)
            .map(|&(t, bt)| DirectBlock {
                off: t + bt + t * h,
                ld: h,
                rows: h - t - bt,
                cols: bt,
                dst: host.ptr(s + c + t + bt, s + c + t),
                lda,
            })
            .collect(),
        Some(tb) => {
            // The column as A's block row (w x h): L(i, j) at j + i·w.
            exec.transpose_in_transfer(false, h, w, op(buf, 0, h), op_mut(tb, 0, w))?;
            let mut blocks: Vec<DirectBlock<T>> = tiles
                .iter()
                .filter(|&&(t, _)| t > 0)
                .map(|&(t, bt)| DirectBlock {
                    off: t * w,
                    ld: w,
                    rows: t,
                    cols: bt,
                    dst: host.ptr(s + c + t, s + c),
                    lda,
                })
                .collect();
            if h > w {
                blocks.push(DirectBlock {
                    off: w * w,
                    ld: w,
                    rows: w,
                    cols: h - w,
                    dst: host.ptr(s + c + w, s + c),
                    lda,
                });
            }
            return finish_column(exec, job, s, c, tb, &blocks, &tiles, diagonal, landing);
        }
    };
    finish_column(exec, job, s, c, buf, &below, &tiles, diagonal, landing)
}

/// The end of [`download_column`]: the batch `below` from `src` into the host matrix, then
/// the tiles from `diagonal`, their entries on and below the diagonal only.
#[allow(clippy::too_many_arguments)]
fn finish_column<T: Real, E: Executor<T>>(
    exec: &mut E,
    job: &mut Job<T>,
    s: usize,
    c: usize,
    src: &E::Buf,
    below: &[DirectBlock<T>],
    tiles: &[(usize, usize)],
    diagonal: &[T],
    landing: &mut bool,
) -> Result<(), ExecError> {
    // SAFETY: the blocks lie in the mapped host matrix, strictly below the tiles of this block
    // column's diagonal block; nothing else touches them during the call.
    if let Err(e) = unsafe { exec.download_direct_blocks(src, below) } {
        *landing = matches!(e, ExecError::Torn(_));
        return Err(e);
    }
    let b = tiles[0].1;
    for &(t, bt) in tiles {
        let tile = &diagonal[t * b..t * b + bt * bt];
        job.host.scatter(s + c + t, bt, s + c + t, 0, tile);
    }
    Ok(())
}

/// The block columns of a SYMM pass over a trailing matrix of order `pn`: those of the last
/// step's SYR2K pass (`block_columns` of pn + kd) less the kd columns of this step's panel, so
/// that a pass that took the SYMM along ([`syr2k_pass`]) and one that did not (after a
/// resumption) sum in the same order.
fn symm_columns(pn: usize, nb: usize, kd: usize) -> Vec<(usize, usize)> {
    if nb <= kd {
        return block_columns(pn, nb);
    }
    let first = (nb - kd).min(pn);
    let mut cols = vec![(0, first)];
    cols.extend(
        block_columns(pn - first, nb)
            .into_iter()
            .map(|(c, w)| (first + c, w)),
    );
    cols
}

/// Block column `(c, w)` of `A₂` (order pn) in `d` (its rows c.., the first at `off`, leading
/// dimension `ld`) applied to `X = A₂ Z`: `X[c..c+w] += A₂[c.., c..c+w]ᵀ Z[c..]`,
/// `X[c+w..] += A₂[c+w.., c..c+w] Z[c..c+w]`. The first block column spans every row of X, so
/// it sets X instead of adding to it.
#[allow(clippy::too_many_arguments)]
fn symm_block<T: Real, E: Executor<T>>(
    exec: &mut E,
    (d, off, ld): (&E::Buf, usize, usize),
    (c, w): (usize, usize),
    pn: usize,
    pk: usize,
    zbuf: &E::Buf,
    xbuf: &mut E::Buf,
) -> Result<(), ExecError> {
    let h = pn - c;
    let beta = if c == 0 { T::ZERO } else { T::ONE };
    let (z, x) = (op(zbuf, c, pn), op_mut(xbuf, c, pn));
    exec.symm(w, pk, T::ONE, op(d, off, ld), z, beta, x)?;
    if h > w {
        let below = op(d, off + w, ld);
        let (z, x) = (op(zbuf, c + w, pn), op_mut(xbuf, c, pn));
        exec.gemm(true, false, w, pk, h - w, T::ONE, below, z, T::ONE, x)?;
        let below = op(d, off + w, ld);
        let (z, x) = (op(zbuf, c, pn), op_mut(xbuf, c + w, pn));
        exec.gemm(false, false, h - w, pk, w, T::ONE, below, z, beta, x)?;
    }
    Ok(())
}

/// `X = A₂ Z`, one block column of `A₂` at a time (the next one uploading meanwhile).
#[allow(clippy::too_many_arguments)]
fn symm_pass<T: Real + Dense, E: Executor<T>>(
    exec: &mut E,
    job: &mut Job<T>,
    cols: &[(usize, usize)],
    ring: &mut Ring<E::Buf>,
    zbuf: &E::Buf,
    xbuf: &mut E::Buf,
    s: usize,
    pk: usize,
) -> Result<(), ExecError> {
    let pn = job.n - s;
    upload_column(
        exec,
        job,
        s,
        cols[0],
        &mut ring.slots[0],
        turn_buf(&mut ring.turn, 0),
    )?;
    for (q, &(c, w)) in cols.iter().enumerate() {
        if q + 1 < cols.len() {
            let slot = &mut ring.slots[(q + 1) % 3];
            upload_column(exec, job, s, cols[q + 1], slot, turn_buf(&mut ring.turn, 0))?;
        }
        let d = (&ring.slots[q % 3], 0, pn - c);
        symm_block(exec, d, (c, w), pn, pk, zbuf, xbuf)?;
    }
    if job.direct {
        // The direct uploads read the host matrix until they are done.
        exec.sync()?;
    }
    Ok(())
}

/// What a SYR2K pass needs to take the next step along (see [`syr2k_pass`]).
struct NextStep<'a, B, T> {
    /// `Z` of the next panel.
    z: &'a mut B,
    /// The next step's `A₂ Z`; its `V` while the panel is factored.
    x: &'a mut B,
    tau: &'a mut B,
    sub: &'a mut SubPanels<B>,
    /// The next panel on the host, as [`Pending::panel`] holds it.
    panel: &'a mut Vec<T>,
}

/// The next step's panel, the first kd columns of the block column in `slot` (rows s.. of
/// columns s..s + kd, leading dimension pn), factored in place on lane 1 once the host holds
/// the column as this pass left it: it ends on the host as `panel_through_executor` leaves
/// it, `Z` in `next.z`. Returns the sub-panel counts.
fn factor_ahead<T: Real + Dense, E: Executor<T>>(
    exec: &mut E,
    job: &mut Job<T>,
    s: usize,
    slot: &mut E::Buf,
    next: &mut NextStep<E::Buf, T>,
) -> Result<[usize; 2], ExecError> {
    let (n, kd) = (job.n, job.kd);
    let pn = n - s;
    exec.lane(1)?;
    let panel = op_mut(slot, kd, pn);
    let how = blocked_panel(
        exec,
        panel,
        pn - kd,
        kd,
        next.tau,
        0,
        next.x,
        next.z,
        next.sub,
    );
    exec.lane(0)?;
    let how = how?;
    let p = &mut *next.panel;
    p.resize(pn * kd, T::ZERO);
    panel_home(exec, job, slot, next.tau, s, p, pn, 0)?;
    Ok(how)
}

/// `V` (pn x pk) of the finished panel `p` (leading dimension `h`) into `vbuf`.
fn upload_v<T: Real, E: Executor<T>>(
    exec: &mut E,
    job: &Job<T>,
    vbuf: &mut E::Buf,
    p: &[T],
    h: usize,
    pn: usize,
    pk: usize,
) -> Result<(), ExecError> {
    let kd = job.kd;
    if job.direct {
        // SAFETY: `p` is mapped (one of the run's panel buffers) and is not written before the
        // step's SYR2K pass ends, which waits for the upload.
        return unsafe { exec.upload_direct(vbuf, 0, pn, pn, pk, p[kd..].as_ptr(), h) };
    }
    let v = panel_v(p, h, kd, pn, pk);
    exec.upload(vbuf, 0, pn * pk, &mut |start, out| {
        out.copy_from_slice(&v[start..start + out.len()])
    })
}

/// `A₂ −= V Xᵀ + X Vᵀ` block column by block column: upload the next, update this one, write
/// back the previous one, in blocks of `nb` columns. Resumes after `progress.pending.done`
/// columns; returns the finished step's `Pending`, whose host buffers the next step reuses.
///
/// With `next` (a pass from its first column, nb > kd, and a next step whose panel is taller
/// than wide) the pass takes the next step along, so that the trailing matrix travels once per
/// step: once the first block column is back on the host, its first kd columns (the next
/// panel) are factored on lane 1 while the second block column is updated, and every block
/// column then adds its part of the next step's `X = A₂ Z` ([`symm_block`], in the block
/// columns of [`symm_columns`]) before its buffer is reused. That part is queued after the
/// column's write-back: an executor buffer keeps the event of its last read only, so the
/// upload that reuses it waits for the last one queued. (Queued before it, the SYMM's read on
/// lane 0 was forgotten behind the write-back's, and at n = 100000 the next upload overwrote
/// columns the SYMM had yet to read.) Returns the sub-panel counts too.
#[allow(clippy::too_many_arguments)]
fn syr2k_pass<T: Real + Dense, E: Executor<T>>(
    exec: &mut E,
    job: &mut Job<T>,
    progress: &mut Progress<T>,
    nb: usize,
    ring: &mut Ring<E::Buf>,
    vbuf: &E::Buf,
    xbuf: &E::Buf,
    s: usize,
    diagonal: &mut Vec<T>,
    mut next: Option<NextStep<E::Buf, T>>,
) -> Result<(Pending<T>, [usize; 2]), ExecError> {
    let (n, kd) = (job.n, job.kd);
    let pn = n - s;
    let (done, pk) = {
        let p = progress.pending.as_ref().expect("a pass in progress");
        (p.done, p.pk)
    };
    let cols: Vec<(usize, usize)> = block_columns(pn - done, nb)
        .into_iter()
        .map(|(c, w)| (done + c, w))
        .collect();
    let mut how = [0, 0];
    // Block columns whose part of the next X is queued.
    let mut added = 0;
    // The next step's SYMM: block columns `..=last` of this pass, the first less the panel.
    let mut add = |exec: &mut E, ring: &Ring<E::Buf>, next: &mut NextStep<E::Buf, T>, last| {
        while added <= last {
            let (c, w) = cols[added];
            let (d, off, ld) = (&ring.slots[added % 3], 0, pn - c);
            let (d, col) = if c == 0 {
                ((d, off + kd + kd * ld, ld), (0, w - kd))
            } else {
                ((d, off, ld), (c - kd, w))
            };
            symm_block(exec, d, col, pn - kd, kd, next.z, next.x)?;
            added += 1;
        }
        Ok::<(), ExecError>(())
    };
    if cols.is_empty() {
        // Resumed after its last column was written back.
        return Ok((finish_pass(job, progress), how));
    }
    let slot = &mut ring.slots[0];
    upload_column(exec, job, s, cols[0], slot, turn_buf(&mut ring.turn, 0))?;
    for q in 0..cols.len() {
        let (c, w) = cols[q];
        if q + 1 < cols.len() {
            let slot = &mut ring.slots[(q + 1) % 3];
            upload_column(exec, job, s, cols[q + 1], slot, turn_buf(&mut ring.turn, 0))?;
        }
        let h = pn - c;
        let [r0, r1, r2] = &mut ring.slots;
        let d = match q % 3 {
            0 => r0,
            1 => r1,
            _ => r2,
        };
        exec.syr2k(
            w,
            pk,
            -T::ONE,
            op(vbuf, c, pn),
            op(xbuf, c, pn),
            T::ONE,
            op_mut(d, 0, h),
        )?;
        if h > w {
            exec.gemm(
                false,
                true,
                h - w,
                w,
                pk,
                -T::ONE,
                op(vbuf, c + w, pn),
                op(xbuf, c, pn),
                T::ONE,
                op_mut(d, w, h),
            )?;
            exec.gemm(
                false,
                true,
                h - w,
                w,
                pk,
                -T::ONE,
                op(xbuf, c + w, pn),
                op(vbuf, c, pn),
                T::ONE,
                op_mut(d, w, h),
            )?;
        }
        if q > 0 {
            let slot = &ring.slots[(q - 1) % 3];
            download_column(
                exec,
                job,
                s,
                cols[q - 1],
                slot,
                turn_buf(&mut ring.turn, 1),
                diagonal,
                &mut progress.written_back,
            )?;
            progress.pending.as_mut().expect("in progress").done = c;
            if let Some(next) = &mut next {
                if q == 1 {
                    how = factor_ahead(exec, job, s, &mut ring.slots[0], next)?;
                }
                // After the write-back: a buffer keeps only its last read's event, and the
                // upload that reuses it must wait for this read on lane 0 (see above).
                add(exec, ring, next, q - 1)?;
            }
        }
    }
    if job.direct {
        // The direct uploads read the host matrix until they are done; a failure here
        // leaves the last block column to redo, unwritten.
        exec.sync()?;
    }
    let last = cols.len() - 1;
    let slot = &ring.slots[last % 3];
    download_column(
        exec,
        job,
        s,
        cols[last],
        slot,
        turn_buf(&mut ring.turn, 1),
        diagonal,
        &mut progress.written_back,
    )?;
    // Every column is home: a failure from here on must not have one redone.
    progress.pending.as_mut().expect("in progress").done = pn;
    if let Some(next) = &mut next {
        if last == 0 {
            how = factor_ahead(exec, job, s, &mut ring.slots[0], next)?;
        }
        add(exec, ring, next, last)?;
    }
    Ok((finish_pass(job, progress), how))
}

/// The end of a SYR2K pass whose columns are all written back: the factored panel into the
/// host matrix, its band columns counted. Returns the step's `Pending`.
fn finish_pass<T: Real>(job: &mut Job<T>, progress: &mut Progress<T>) -> Pending<T> {
    let pending = progress.pending.take().expect("in progress");
    let i = progress.i;
    job.host.scatter(i, job.n - i, i, 0, &pending.panel);
    progress.banded = i + pending.pk;
    pending
}

/// The arguments of one reduction.
struct Problem<'a, T> {
    uplo: u8,
    n: usize,
    kd: usize,
    a: &'a mut [T],
    lda: usize,
    ab: &'a mut [T],
    ldab: usize,
    tau: &'a mut [T],
    band_only: bool,
    /// Streaming passes take the next step along (`HYLAPACK_SBR_STREAM_AHEAD`, see
    /// [`syr2k_pass`]).
    stream_ahead: bool,
}

impl<'a, T: Real + Dense> Problem<'a, T> {
    /// A problem whose reflectors are wanted (`band_only` false).
    #[allow(clippy::too_many_arguments)]
    fn new(
        uplo: u8,
        n: usize,
        kd: usize,
        a: &'a mut [T],
        lda: usize,
        ab: &'a mut [T],
        ldab: usize,
        tau: &'a mut [T],
    ) -> Self {
        Problem {
            uplo,
            n,
            kd,
            a,
            lda,
            ab,
            ldab,
            tau,
            band_only: false,
            stream_ahead: crate::config::get().sbr.stream_ahead,
        }
    }

    fn upper(&self) -> bool {
        self.uplo.eq_ignore_ascii_case(&b'U')
    }

    /// The system LAPACK's xSYTRD_SY2SB, in place.
    fn lapack(&mut self) {
        let (n, kd) = (self.n, self.kd);
        // The general formula: LAPACK releases before 3.12 ask for it even when N ≤ KD + 1.
        let mut work = vec![T::ZERO; (n * kd + n * kd.max(FACTOPTNB) + 2 * kd * kd).max(1)];
        let info = T::sytrd_sy2sb(
            self.uplo, n, kd, self.a, self.lda, self.ab, self.ldab, self.tau, &mut work, false,
        );
        assert_eq!(info, 0, "xSYTRD_SY2SB rejected checked arguments");
    }
}

/// Reduces the n x n symmetric `a` (its `uplo` triangle) to band form with `kd` off-diagonals:
/// the band into `ab` (LAPACK band storage, `ldab ≥ kd + 1`), the reflectors into `a` and
/// `tau` (n − kd entries) exactly where xSYTRD_SY2SB leaves them. The arguments must have
/// passed [`check_args`].
#[allow(clippy::too_many_arguments)]
pub fn syrdb<T: Real + Dense + gpu::CublasReal>(
    uplo: u8,
    n: usize,
    kd: usize,
    a: &mut [T],
    lda: usize,
    ab: &mut [T],
    ldab: usize,
    tau: &mut [T],
    path: Path,
) -> SyrdbReport {
    reduce_on(Problem::new(uplo, n, kd, a, lda, ab, ldab, tau), path)
}

/// As [`syrdb`] when only the band is wanted (the eigenvalue drivers): `ab` as there, `a` and
/// `tau` left unspecified. A resident run then brings back the band alone instead of the whole
/// matrix (at n = 16384, 2 GiB less over the bus).
#[allow(clippy::too_many_arguments)]
pub fn syrdb_band<T: Real + Dense + gpu::CublasReal>(
    uplo: u8,
    n: usize,
    kd: usize,
    a: &mut [T],
    lda: usize,
    ab: &mut [T],
    ldab: usize,
    tau: &mut [T],
    path: Path,
) -> SyrdbReport {
    let mut p = Problem::new(uplo, n, kd, a, lda, ab, ldab, tau);
    p.band_only = true;
    reduce_on(p, path)
}

fn reduce_on<T: Real + Dense + gpu::CublasReal>(mut p: Problem<T>, path: Path) -> SyrdbReport {
    let (n, kd, lda, ldab) = (p.n, p.kd, p.lda, p.ldab);
    let cpu = |note: Option<String>| SyrdbReport {
        backend: Backend::Cpu,
        note,
        transfer_secs: None,
    };
    if n <= kd + 1 {
        // Already a band: LAPACK's quick return copies the triangle into AB.
        let upper = p.upper();
        let host = HostMat { a: p.a, lda, upper };
        for j in 0..n {
            put_band(p.ab, ldab, kd, n, upper, j, |d| host.get(j + d, j));
        }
        return cpu(None);
    }
    let elem = std::mem::size_of::<T>();
    match path {
        Path::Lapack => {
            p.lapack();
            cpu(None)
        }
        Path::CpuBlocked { budget } => match plan(n, kd, elem, budget) {
            Ok(mode) => with_fallback(&mut cpu::CpuExecutor::new(budget), Backend::Cpu, mode, p),
            Err(e) => {
                p.lapack();
                cpu(Some(format!("{e}; system LAPACK")))
            }
        },
        Path::Gpu { budget } => match gpu::GpuExecutor::<T>::new(budget) {
            Ok(mut exec) => match plan(n, kd, elem, exec.budget()) {
                Ok(mode) => with_fallback(&mut exec, Backend::Gpu, mode, p),
                Err(e) => {
                    p.lapack();
                    cpu(Some(format!("GPU not used ({e}); system LAPACK")))
                }
            },
            Err(e) => {
                p.lapack();
                cpu(Some(format!("GPU not used ({e}); system LAPACK")))
            }
        },
    }
}

/// Runs the blocked reduction on `exec`; if it stops, finishes on the CPU without losing the
/// user's data (see the module's notes).
fn with_fallback<T: Real + Dense, E: Executor<T>>(
    exec: &mut E,
    backend: Backend,
    mode: Mode,
    mut p: Problem<T>,
) -> SyrdbReport {
    let (n, kd, ldab, upper) = (p.n, p.kd, p.ldab, p.upper());
    let mut progress = Progress {
        i: 0,
        banded: 0,
        pending: None,
        written_back: false,
        panels: [0, 0],
        direct: None,
        transfer_secs: None,
    };
    let mut host = HostMat {
        a: &mut *p.a,
        lda: p.lda,
        upper,
    };
    let mut job = Job {
        host: &mut host,
        n,
        kd,
        ab: &mut *p.ab,
        ldab,
        tau: &mut *p.tau,
        band_only: p.band_only,
        stream_ahead: p.stream_ahead,
        direct: false,
    };
    let mut report = SyrdbReport {
        backend,
        note: Some(describe(mode)),
        transfer_secs: None,
    };
    let ran = run(exec, &mut job, &mut progress, mode);
    let [chol, geqrf] = progress.panels;
    if chol + geqrf > 0 {
        report.note = Some(format!(
            "{} (panels: {chol} CholeskyQR2, {geqrf} xGEQRF)",
            describe(mode)
        ));
    }
    if let Some(how) = &progress.direct {
        let note = report.note.get_or_insert_with(String::new);
        note.push_str(&format!("; {how}"));
    }
    report.transfer_secs = progress.transfer_secs;
    if let Err(e) = ran {
        // Neither the input nor the result is on the host: no path can finish the call.
        assert!(
            !progress.written_back,
            "syrdb: the {} failed ({e}) while writing the reduced matrix back; the input is lost",
            backend.name()
        );
        let untouched = mode == Mode::Resident || (progress.i == 0 && progress.pending.is_none());
        report.backend = Backend::Cpu;
        if untouched {
            // The host A was not written yet: LAPACK starts over from it.
            crate::dispatch::debug(|| format!("syrdb: executor stopped ({e}); restarting"));
            drop(job);
            p.lapack();
            report.note = Some(format!("{} stopped ({e}); system LAPACK", backend.name()));
            return report;
        }
        // The host holds every finished block column: the CPU goes on from there.
        crate::dispatch::debug(|| format!("syrdb: executor stopped ({e}); resuming on the CPU"));
        let at = progress.i;
        let mut cpu = cpu::CpuExecutor::new(u64::MAX);
        run(&mut cpu, &mut job, &mut progress, mode).expect("the CPU executor does not fail");
        report.note = Some(format!(
            "{} stopped ({e}) at column {at}; finished on the CPU",
            backend.name()
        ));
    }
    let host = &*job.host;
    for j in progress.banded..n {
        put_band(job.ab, ldab, kd, n, upper, j, |d| host.get(j + d, j));
    }
    report
}

fn describe(mode: Mode) -> String {
    match mode {
        Mode::Resident => "resident".into(),
        Mode::Streaming { nb } => format!("streaming, block columns of {nb}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testmat::{dense_symmetric, DenseFamily, Rng};

    /// The CPU executor, failing (as a GPU might) once `left` operations have run.
    struct Flaky {
        cpu: cpu::CpuExecutor,
        left: usize,
        /// `map_host` refuses (as the GPU's does for memory locked by someone else), so the
        /// resuming CPU executor, which maps, runs with another block width.
        refuse_map: bool,
        /// A download that fails delivers the first half of its range first.
        tear: bool,
    }

    impl Flaky {
        fn new(left: usize, refuse_map: bool, tear: bool) -> Self {
            Flaky {
                cpu: cpu::CpuExecutor::new(0),
                left,
                refuse_map,
                tear,
            }
        }

        fn tick(&mut self) -> Result<(), ExecError> {
            if self.left == 0 {
                return Err(ExecError::Device(DeviceError::Driver("injected".into())));
            }
            self.left -= 1;
            Ok(())
        }
    }

    impl Executor<f64> for Flaky {
        type Buf = Vec<f64>;
        fn budget(&self) -> u64 {
            Executor::<f64>::budget(&self.cpu)
        }
        fn alloc(&mut self, len: usize) -> Result<Vec<f64>, ExecError> {
            self.tick()?;
            self.cpu.alloc(len)
        }
        fn upload(
            &mut self,
            dst: &mut Vec<f64>,
            off: usize,
            len: usize,
            fill: &mut dyn FnMut(usize, &mut [f64]),
        ) -> Result<(), ExecError> {
            self.tick()?;
            self.cpu.upload(dst, off, len, fill)
        }
        fn download(
            &mut self,
            src: &Vec<f64>,
            off: usize,
            len: usize,
            take: &mut dyn FnMut(usize, &[f64]),
        ) -> Result<(), ExecError> {
            if self.left == 0 && self.tear {
                self.cpu.download(src, off, len / 2, take)?;
            }
            self.tick()?;
            self.cpu.download(src, off, len, take)
        }
        fn download_block(
            &mut self,
            src: &Vec<f64>,
            off: usize,
            ld: usize,
            rows: usize,
            cols: usize,
            take: &mut dyn FnMut(usize, &[f64]),
        ) -> Result<(), ExecError> {
            // As the default, one download per column, but torn between whole columns (the
            // contract hands whole columns).
            for j in 0..cols {
                self.tick()?;
                self.cpu
                    .download(src, off + j * ld, rows, &mut |start, piece| {
                        take(j * rows + start, piece)
                    })?;
            }
            Ok(())
        }
        fn gemm(
            &mut self,
            ta: bool,
            tb: bool,
            m: usize,
            n: usize,
            k: usize,
            alpha: f64,
            a: Op<Vec<f64>>,
            b: Op<Vec<f64>>,
            beta: f64,
            c: OpMut<Vec<f64>>,
        ) -> Result<(), ExecError> {
            self.tick()?;
            self.cpu.gemm(ta, tb, m, n, k, alpha, a, b, beta, c)
        }
        fn symm(
            &mut self,
            m: usize,
            n: usize,
            alpha: f64,
            a: Op<Vec<f64>>,
            b: Op<Vec<f64>>,
            beta: f64,
            c: OpMut<Vec<f64>>,
        ) -> Result<(), ExecError> {
            self.tick()?;
            self.cpu.symm(m, n, alpha, a, b, beta, c)
        }
        fn geqrf(
            &mut self,
            m: usize,
            k: usize,
            a: OpMut<Vec<f64>>,
            tau: OpMut<Vec<f64>>,
        ) -> Result<(), ExecError> {
            self.tick()?;
            self.cpu.geqrf(m, k, a, tau)
        }
        fn copy(
            &mut self,
            m: usize,
            n: usize,
            a: Op<Vec<f64>>,
            c: OpMut<Vec<f64>>,
        ) -> Result<(), ExecError> {
            self.tick()?;
            self.cpu.copy(m, n, a, c)
        }
        fn trsm_right_upper(
            &mut self,
            m: usize,
            n: usize,
            r: Op<Vec<f64>>,
            b: OpMut<Vec<f64>>,
        ) -> Result<(), ExecError> {
            self.tick()?;
            self.cpu.trsm_right_upper(m, n, r, b)
        }
        fn potrf_upper(&mut self, n: usize, a: OpMut<Vec<f64>>) -> Result<(), ExecError> {
            self.tick()?;
            Executor::<f64>::potrf_upper(&mut self.cpu, n, a)
        }
        fn transpose(
            &mut self,
            m: usize,
            n: usize,
            a: Op<Vec<f64>>,
            c: OpMut<Vec<f64>>,
        ) -> Result<(), ExecError> {
            self.tick()?;
            Executor::<f64>::transpose(&mut self.cpu, m, n, a, c)
        }
        unsafe fn map_host(&mut self, a: *mut f64, len: usize) -> bool {
            // SAFETY: forwarded contract.
            !self.refuse_map && unsafe { Executor::<f64>::map_host(&mut self.cpu, a, len) }
        }
        unsafe fn upload_direct(
            &mut self,
            dst: &mut Vec<f64>,
            off: usize,
            ld: usize,
            rows: usize,
            cols: usize,
            src: *const f64,
            lda: usize,
        ) -> Result<(), ExecError> {
            self.tick()?;
            // SAFETY: forwarded contract.
            unsafe { self.cpu.upload_direct(dst, off, ld, rows, cols, src, lda) }
        }
        unsafe fn download_direct(
            &mut self,
            src: &Vec<f64>,
            off: usize,
            ld: usize,
            rows: usize,
            cols: usize,
            dst: *mut f64,
            lda: usize,
        ) -> Result<(), ExecError> {
            if self.left == 0 && self.tear {
                // SAFETY: forwarded contract (the first half of the block's columns).
                unsafe {
                    self.cpu
                        .download_direct(src, off, ld, rows, cols / 2, dst, lda)
                }?;
                let e = DeviceError::Driver("injected after half the copy".into());
                return Err(ExecError::Torn(e));
            }
            self.tick()?;
            // SAFETY: forwarded contract.
            unsafe { self.cpu.download_direct(src, off, ld, rows, cols, dst, lda) }
        }
        /// One operation, as the GPU's batch (queued, then one wait): a failure before it
        /// writes nothing; a tearing one delivers the first half of the blocks first.
        unsafe fn download_direct_blocks(
            &mut self,
            src: &Vec<f64>,
            blocks: &[DirectBlock<f64>],
        ) -> Result<(), ExecError> {
            if self.left == 0 && self.tear {
                let half = &blocks[..blocks.len() / 2];
                // SAFETY: forwarded contract.
                unsafe { self.cpu.download_direct_blocks(src, half) }?;
                let e = DeviceError::Driver("injected after half the blocks".into());
                return Err(ExecError::Torn(e));
            }
            self.tick()?;
            // SAFETY: forwarded contract.
            unsafe { self.cpu.download_direct_blocks(src, blocks) }
        }
        fn sync(&mut self) -> Result<(), ExecError> {
            self.tick()?;
            Executor::<f64>::sync(&mut self.cpu)
        }
        fn syr2k(
            &mut self,
            n: usize,
            k: usize,
            alpha: f64,
            a: Op<Vec<f64>>,
            b: Op<Vec<f64>>,
            beta: f64,
            c: OpMut<Vec<f64>>,
        ) -> Result<(), ExecError> {
            self.tick()?;
            self.cpu.syr2k(n, k, alpha, a, b, beta, c)
        }
    }

    /// Gather and scatter in arbitrary pieces (as the GPU's staging chunks cut them) agree with
    /// entry-by-entry copies, and scatter writes nothing above the diagonal of `L`.
    #[test]
    fn gather_and_scatter_in_pieces() {
        gather_and_scatter(
            70,
            75,
            &[(0, 0, 70, 70), (5, 5, 65, 40), (30, 3, 40, 33)],
            5,
        );
    }

    /// The same with blocks large enough to be copied by several threads (pieces that start
    /// and end inside columns).
    #[test]
    fn gather_and_scatter_on_threads() {
        gather_and_scatter(1100, 1103, &[(0, 0, 1100, 1100), (9, 9, 1091, 900)], 2);
    }

    fn gather_and_scatter(
        n: usize,
        lda: usize,
        blocks: &[(usize, usize, usize, usize)],
        extra_cuts: usize,
    ) {
        let mut rng = Rng::new(crate::testmat::seed_from_time());
        for upper in [false, true] {
            for &(r0, c0, h, w) in blocks {
                let a0: Vec<f64> = (0..lda * n).map(|_| rng.range(-1.0, 1.0)).collect();
                let mut a = a0.clone();
                let host = HostMat {
                    a: &mut a,
                    lda,
                    upper,
                };
                let want: Vec<f64> = (0..h * w)
                    .map(|t| host.get(r0 + t % h, c0 + t / h))
                    .collect();
                let mut cuts = vec![0, h * w];
                for _ in 0..extra_cuts {
                    cuts.push(rng.below(h * w));
                }
                cuts.sort();
                let mut got = vec![0.0; h * w];
                for p in cuts.windows(2) {
                    host.gather(r0, h, c0, p[0], &mut got[p[0]..p[1]]);
                }
                assert_eq!(got, want, "gather upper={upper} {:?}", (r0, c0, h, w));
                let data: Vec<f64> = (0..h * w).map(|_| rng.range(2.0, 3.0)).collect();
                let mut host = HostMat {
                    a: &mut a,
                    lda,
                    upper,
                };
                for p in cuts.windows(2) {
                    host.scatter(r0, h, c0, p[0], &data[p[0]..p[1]]);
                }
                for t in 0..h * w {
                    let (r, c) = (r0 + t % h, c0 + t / h);
                    let idx = host.index(r, c);
                    let expect = if r >= c { data[t] } else { a0[idx] };
                    assert_eq!(host.a[idx], expect, "scatter upper={upper} ({r},{c})");
                }
                let mut touched = vec![false; lda * n];
                for t in 0..h * w {
                    touched[host.index(r0 + t % h, c0 + t / h)] = true;
                }
                for i in (0..lda * n).step_by(7) {
                    if !touched[i] {
                        assert_eq!(host.a[i], a0[i], "scatter wrote outside the block");
                    }
                }
            }
        }
    }

    /// `T` from the Gram matrix equals xLARFT's, zero τs included.
    #[test]
    fn t_from_gram_matches_larft() {
        let mut rng = Rng::new(crate::testmat::seed_from_time());
        let (m, k) = (40, 9);
        let mut v: Vec<f64> = (0..m * k).map(|_| rng.range(-1.0, 1.0)).collect();
        let mut tau = vec![0.0; k];
        assert_eq!(f64::geqrf(m, k, &mut v, m, &mut tau), 0);
        tau[3] = 0.0;
        for c in 0..k {
            for r in 0..c {
                v[r + c * m] = 0.0;
            }
            v[c + c * m] = 1.0;
        }
        let mut want = vec![0.0; k * k];
        f64::larft(m, k, (&v, m), &tau, &mut want, k);
        let mut g = vec![0.0; k * k];
        f64::gemm(b'T', b'N', k, k, m, 1.0, (&v, m), (&v, m), 0.0, &mut g, k);
        let got = t_from_gram(k, &g, &tau);
        for c in 0..k {
            for r in 0..=c {
                let (x, y) = (got[r + c * k], want[r + c * k]);
                assert!(
                    (x - y).abs() <= 1e-13 * (1.0 + y.abs()),
                    "T({r},{c}): {x} vs {y}"
                );
            }
        }
    }

    type Outputs = (Vec<f64>, Vec<f64>, Vec<f64>, SyrdbReport);

    /// A random symmetric matrix of order n, and the seed it was drawn from.
    fn random_input(n: usize) -> (Vec<f64>, u64) {
        let seed = crate::testmat::seed_from_time();
        (
            dense_symmetric(DenseFamily::Random, n, &mut Rng::new(seed)),
            seed,
        )
    }

    /// The message of a caught panic.
    fn panic_message(payload: Box<dyn std::any::Any + Send>) -> String {
        payload
            .downcast_ref::<String>()
            .cloned()
            .unwrap_or_default()
    }

    /// A reduction on `exec` (LAPACK's where None), streaming passes taking the next step
    /// along (`stream_ahead`): these tests exercise both kinds of pass.
    fn reduce(a0: &[f64], uplo: u8, n: usize, kd: usize, exec: Option<(Flaky, Mode)>) -> Outputs {
        reduce_with(a0, uplo, n, kd, exec, false, true)
    }

    fn reduce_with(
        a0: &[f64],
        uplo: u8,
        n: usize,
        kd: usize,
        exec: Option<(Flaky, Mode)>,
        band_only: bool,
        stream_ahead: bool,
    ) -> Outputs {
        let (mut a, mut ab, mut tau) = (a0.to_vec(), vec![0.0; (kd + 1) * n], vec![0.0; n - kd]);
        let mut p = Problem::new(uplo, n, kd, &mut a, n, &mut ab, kd + 1, &mut tau);
        p.band_only = band_only;
        p.stream_ahead = stream_ahead;
        let report = match exec {
            Some((mut flaky, mode)) => with_fallback(&mut flaky, Backend::Gpu, mode, p),
            None => {
                let mut p = p;
                p.lapack();
                SyrdbReport {
                    backend: Backend::Cpu,
                    note: None,
                    transfer_secs: None,
                }
            }
        };
        (a, ab, tau, report)
    }

    /// An executor that stops at any point leaves a result identical to an uninterrupted run:
    /// resumed on the CPU from the host's state (streaming), or LAPACK's from the untouched
    /// input (resident, or nothing written yet).
    #[test]
    fn failure_at_any_operation_is_recovered() {
        let (n, kd) = (60, 5);
        let (a0, seed) = random_input(n);
        for uplo in [b'L', b'U'] {
            for mode in [Mode::Streaming { nb: 7 }, Mode::Resident] {
                let whole = |left| Some((Flaky::new(left, false, false), mode));
                let clean = reduce(&a0, uplo, n, kd, whole(usize::MAX));
                let lapack = reduce(&a0, uplo, n, kd, None);
                let (mut resumed, mut torn) = (0, 0);
                for left in 0..4000 {
                    let what = format!("uplo={} {mode:?} left={left} seed {seed}", uplo as char);
                    // The resident write-back goes column by column into A: a failure after its
                    // first column must stop the call, and so must every later failure point
                    // up to the run that completes.
                    let run = std::panic::catch_unwind(|| reduce(&a0, uplo, n, kd, whole(left)));
                    let got = match run {
                        Err(payload) => {
                            let msg = panic_message(payload);
                            assert!(mode == Mode::Resident, "{what}: {msg}");
                            assert!(msg.contains("the input is lost"), "{what}: {msg}");
                            torn += 1;
                            continue;
                        }
                        Ok(got) => got,
                    };
                    let note = got.3.note.clone().unwrap_or_default();
                    assert!(
                        torn == 0 || got.3.backend == Backend::Gpu,
                        "{what}: after a tear"
                    );
                    let want = if note.contains("system LAPACK") {
                        &lapack
                    } else if note.contains("finished on the CPU") {
                        resumed += 1;
                        &clean
                    } else {
                        assert_eq!(got.3.backend, Backend::Gpu, "seed {seed}");
                        &clean
                    };
                    let what = format!("{what} ({note})");
                    assert!(got.0 == want.0, "A differs: {what}");
                    assert!(got.1 == want.1, "AB differs: {what}");
                    assert!(got.2 == want.2, "TAU differs: {what}");
                }
                if matches!(mode, Mode::Streaming { .. }) {
                    assert!(
                        resumed > 10,
                        "only {resumed} runs resumed: the test misses the point"
                    );
                } else {
                    assert_eq!(torn, n - 1, "uplo={}: torn write-backs", uplo as char);
                }
            }
        }
    }

    /// Streaming passes that take the next step along (its panel factored in the pass, its SYMM
    /// formed block column by block column) give the same bits as passes that do not, through
    /// staged and direct transfers, both triangles.
    #[test]
    fn passes_taking_the_next_step_along_change_nothing() {
        let (n, kd) = (60, 5);
        let (a0, seed) = random_input(n);
        for uplo in [b'L', b'U'] {
            for refuse_map in [false, true] {
                let run = |ahead| {
                    let exec = Some((
                        Flaky::new(usize::MAX, refuse_map, false),
                        Mode::Streaming { nb: 7 },
                    ));
                    reduce_with(&a0, uplo, n, kd, exec, false, ahead)
                };
                let (with, without) = (run(true), run(false));
                let what = format!("uplo={} refuse_map={refuse_map} seed {seed}", uplo as char);
                assert!(with.0 == without.0, "A differs: {what}");
                assert!(with.1 == without.1, "AB differs: {what}");
                assert!(with.2 == without.2, "TAU differs: {what}");
            }
        }
    }

    /// On the GPU, with lane 0 held back before every SYMM (as the copies outran it at
    /// n = 100000, see `GpuExecutor::stall_lane_0`), streaming passes that take the next step
    /// along agree with plain passes to rounding: no buffer is refilled before lane 0 has read
    /// it (a refilled one gives errors of the order of ‖A‖). Both triangles, direct transfers.
    #[test]
    fn gpu_passes_wait_for_a_slow_lane_0() {
        if let Err(e) = crate::device::gpu() {
            let required = crate::config::get().require_gpu;
            assert!(!required, "HYLAPACK_REQUIRE_GPU=1 but no GPU: {e}");
            return;
        }
        let (n, kd, nb) = (900, 24, 100);
        let (a0, seed) = random_input(n);
        let norm = a0.iter().fold(0.0f64, |m, x| m.max(x.abs()));
        let tol = 1e3 * n as f64 * f64::EPSILON * norm;
        for uplo in [b'L', b'U'] {
            let run = |ahead: bool| {
                let mut exec = gpu::GpuExecutor::<f64>::new(None).expect("a GPU executor");
                if ahead {
                    exec.stall_lane_0().expect("stall buffers");
                }
                let (mut a, mut ab) = (a0.clone(), vec![0.0; (kd + 1) * n]);
                let mut tau = vec![0.0; n - kd];
                let mut p = Problem::new(uplo, n, kd, &mut a, n, &mut ab, kd + 1, &mut tau);
                p.stream_ahead = ahead;
                let report = with_fallback(&mut exec, Backend::Gpu, Mode::Streaming { nb }, p);
                assert_eq!(report.backend, Backend::Gpu, "{:?}", report.note);
                (a, ab, tau)
            };
            let (with, without) = (run(true), run(false));
            let far = |x: &[f64], y: &[f64]| {
                x.iter()
                    .zip(y)
                    .fold(0.0f64, |m, (x, y)| m.max((x - y).abs()))
            };
            let what = format!("uplo={} seed {seed}", uplo as char);
            assert!(far(&with.1, &without.1) <= tol, "AB differs: {what}");
            assert!(far(&with.0, &without.0) <= tol, "A differs: {what}");
            assert!(far(&with.2, &without.2) <= tol, "TAU differs: {what}");
        }
    }

    /// A streaming run whose executor could not map the host matrix, stopped at any operation,
    /// resumes on a CPU executor that can, and so cuts the rest of the interrupted pass into
    /// blocks of another width (3/5 for an upper-stored matrix): the result agrees with an
    /// uninterrupted run's to rounding (the block width changes the summation order, so not
    /// bit for bit; a column updated twice would differ by O(‖A‖)).
    #[test]
    fn resumption_with_another_block_width() {
        let (n, kd) = (60, 5);
        let (a0, seed) = random_input(n);
        let norm = a0.iter().fold(0.0f64, |m, x| m.max(x.abs()));
        let tol = 1e3 * n as f64 * f64::EPSILON * norm;
        let far = |a: &[f64], b: &[f64]| {
            a.iter()
                .zip(b)
                .filter(|(x, y)| !(x.is_nan() && y.is_nan()))
                .fold(0.0f64, |m, (x, y)| m.max((x - y).abs()))
        };
        for uplo in [b'L', b'U'] {
            let whole = |left| Some((Flaky::new(left, true, false), Mode::Streaming { nb: 7 }));
            let clean = reduce(&a0, uplo, n, kd, whole(usize::MAX));
            let mut resumed = 0;
            for left in 0..4000 {
                let got = reduce(&a0, uplo, n, kd, whole(left));
                let note = got.3.note.clone().unwrap_or_default();
                if !note.contains("finished on the CPU") {
                    continue;
                }
                resumed += 1;
                let what = format!("uplo={} left={left} ({note}) seed {seed}", uplo as char);
                assert!(far(&got.0, &clean.0) <= tol, "A differs: {what}");
                assert!(far(&got.1, &clean.1) <= tol, "AB differs: {what}");
                assert!(far(&got.2, &clean.2) <= tol, "TAU differs: {what}");
            }
            assert!(resumed > 10, "only {resumed} runs resumed");
        }
    }

    /// A band-only resident run (the eigenvalue drivers) gives a full run's band bit for bit
    /// and leaves the host's A as it was; stopped at any operation, it ends with LAPACK's band.
    #[test]
    fn band_only_run_matches_full_run() {
        let (n, kd) = (60, 5);
        let (a0, seed) = random_input(n);
        let whole = |left| Some((Flaky::new(left, false, true), Mode::Resident));
        for uplo in [b'L', b'U'] {
            let full = reduce(&a0, uplo, n, kd, whole(usize::MAX));
            let band = reduce_with(&a0, uplo, n, kd, whole(usize::MAX), true, true);
            let what = format!("uplo={} seed {seed}", uplo as char);
            assert_eq!(band.3.backend, Backend::Gpu, "{what}");
            assert!(band.1 == full.1, "AB differs: {what}");
            assert!(band.0 == a0, "A changed: {what}");
            let lapack = reduce(&a0, uplo, n, kd, None);
            let mut stopped = 0;
            for left in (0..1000).step_by(7) {
                let got = reduce_with(&a0, uplo, n, kd, whole(left), true, true);
                if got.3.backend == Backend::Gpu {
                    assert!(got.1 == full.1, "AB differs: {what} left={left}");
                } else {
                    stopped += 1;
                    assert!(
                        got.1 == lapack.1,
                        "AB differs from LAPACK's: {what} left={left}"
                    );
                }
            }
            assert!(stopped > 10, "{what}: only {stopped} runs stopped");
        }
    }

    /// A streaming run stopped at any operation, with the failing download or direct transfer
    /// delivering half its block first: it ends with an uninterrupted run's result, LAPACK's
    /// from the untouched input, or (where a block column of the host matrix was half written
    /// back, so that a resumption would update part of it twice) an error; never another result.
    #[test]
    fn torn_streaming_write_back_is_an_error() {
        let (n, kd) = (40, 4);
        let (a0, seed) = random_input(n);
        for uplo in [b'L', b'U'] {
            for refuse_map in [false, true] {
                let whole = |left| {
                    Some((
                        Flaky::new(left, refuse_map, true),
                        Mode::Streaming { nb: 6 },
                    ))
                };
                let clean = reduce(&a0, uplo, n, kd, whole(usize::MAX));
                let lapack = reduce(&a0, uplo, n, kd, None);
                let what = format!("uplo={} refuse_map={refuse_map} seed {seed}", uplo as char);
                let (mut torn, mut resumed) = (0, 0);
                for left in 0..3000 {
                    let run = std::panic::catch_unwind(|| reduce(&a0, uplo, n, kd, whole(left)));
                    let got = match run {
                        Err(payload) => {
                            let msg = panic_message(payload);
                            assert!(
                                msg.contains("the input is lost"),
                                "{what} left={left}: {msg}"
                            );
                            torn += 1;
                            continue;
                        }
                        Ok(got) => got,
                    };
                    let note = got.3.note.clone().unwrap_or_default();
                    if got.3.backend == Backend::Gpu {
                        assert!(got.0 == clean.0 && got.1 == clean.1, "{what} left={left}");
                        break;
                    }
                    let want = if note.contains("system LAPACK") {
                        &lapack
                    } else {
                        resumed += 1;
                        &clean
                    };
                    // A resumption with another block width agrees to rounding only.
                    let tol = if refuse_map { 1e-10 } else { 0.0 };
                    let far = |a: &[f64], b: &[f64]| {
                        a.iter()
                            .zip(b)
                            .fold(0.0f64, |m, (x, y)| m.max((x - y).abs()))
                    };
                    assert!(
                        far(&got.0, &want.0) <= tol,
                        "A differs: {what} left={left} ({note})"
                    );
                    assert!(
                        far(&got.1, &want.1) <= tol,
                        "AB differs: {what} left={left} ({note})"
                    );
                }
                assert!(torn > 3, "{what}: only {torn} torn write-backs");
                assert!(resumed > 3, "{what}: only {resumed} resumptions");
            }
        }
    }

    /// A resident run whose final download fails half way has neither the input nor the
    /// result on the host: it must stop with an error, never restart LAPACK on the half-written
    /// matrix. Downloads that fail before writing anything still restart from the input.
    #[test]
    fn torn_final_download_is_an_error() {
        let (n, kd) = (40, 4);
        let (a0, _) = random_input(n);
        let lapack = reduce(&a0, b'L', n, kd, None);
        let (mut torn, mut restarted) = (0, 0);
        for left in 0..2000 {
            let exec = Flaky::new(left, false, true);
            let run =
                std::panic::catch_unwind(|| reduce(&a0, b'L', n, kd, Some((exec, Mode::Resident))));
            match run {
                Err(payload) => {
                    let msg = panic_message(payload);
                    assert!(msg.contains("the input is lost"), "left={left}: {msg}");
                    torn += 1;
                }
                Ok(got) if got.3.backend == Backend::Gpu => break, // ran to the end
                Ok(got) => {
                    assert!(got.0 == lapack.0 && got.1 == lapack.1, "left={left}");
                    restarted += 1;
                }
            }
        }
        // The final download hands one column per operation (one block: n < TRANSFER_BLOCK):
        // a failure at any column but the first tears it.
        assert_eq!(torn, n - 1, "failure points that tear the final download");
        assert!(restarted > 10);
    }
}
