//! xSYRDB: reduction of a dense symmetric matrix to symmetric band form by orthogonal
//! similarity, out of core (Davidović & Quintana-Ortí; the SBR toolbox's SYRDB), with the
//! contract of LAPACK's xSYTRD_SY2SB; the eigenvalue drivers built on it are [`crate::syev`].
//!
//! Step `i` (`i = 0, kd, 2kd, …` while `i + kd < n`) works on the lower view `L` of `A`
//! (`UPLO = 'U'` is read transposed, so both triangles run the same code):
//! 1. QR of the panel `L[s.., i..i+kd]`, `s = i + kd`: `Q = I − V T Vᵀ`, and `Z = V T` on
//!    the executor. Resident: the executor factors the panel in place by CholeskyQR2 with
//!    Householder reconstruction (see [`panel::cholqr`]), or by xGEQRF (cuSOLVER on the GPU) where
//!    that cannot be trusted, the host forming the small `T` from `VᵀV` (see
//!    [`panel::device::panel_on_executor`]), so the panel never travels; with look-ahead the
//!    next panel is factored on a second lane (a stream of the highest priority) while the
//!    rest of the trailing matrix is updated (see [`resident::resident_steps`]); an executor
//!    that cannot factor (a GPU without cuSOLVER) has its panels factored on the host by
//!    xGEQRT3. Streaming: the panel
//!    is factored on the executor by sub-panels of 64 columns (each as the resident panels,
//!    see [`panel::device::blocked_panel`]; a wide band's panel on the host's xGEQRT3 took 0.7 s of each 1 s
//!    step at n = 32768, kd = 1024) and comes back to the host; `V` and `Z` stay. Where it can,
//!    it is factored where the last step's update pass left it, during that pass.
//! 2. Two-sided update of the trailing `A₂ = L[s.., s..]` as in the paper's (8)–(11), with
//!    LAPACK's signs: `X = A₂ Z` (SYMM), `X −= ½ V (Zᵀ X)`, `A₂ −= V Xᵀ + X Vᵀ` (SYR2K).
//!
//! The host matrix is the only full copy. An [`Executor`] (the CPU's BLAS, or cuBLAS) holds
//! `V`, `Z`, `X` and either the whole lower triangle ("resident", when the budget allows) or a
//! ring of three block columns of the trailing matrix that stream through it ("streaming"):
//! each step's SYMM takes a pass that uploads them, and its SYR2K a pass that uploads, updates
//! and downloads them, the next upload and the previous download overlapping the current
//! block's arithmetic. The SYR2K pass also factors the next panel and forms the next step's
//! SYMM (see [`streaming::syr2k_pass`]), so that the trailing matrix travels once each way per
//! step (not for the first step, a resumed pass, or blocks no wider than kd) instead of up, up
//! and down: on the H100 with a quarter of the matrix on the GPU (lower triangle) n = 16384
//! took 1.11–1.57 s against 1.15–1.42 s with two passes per step, n = 32768 3.54 s against
//! 4.37 s (docs/bench/2026-11-22-h100-syev-12.txt). The block width comes from the executor's
//! byte budget.
//!
//! Streaming block columns move straight between the user's matrix and the executor
//! (`Executor::map_host`: the GPU page-locks the matrix for the call and moves them by DMA at
//! the bus's 54 GB/s each way; through the pinned staging the host's own copies held the passes
//! to 10-29 GB/s at n = 32768). With `UPLO = 'U'` a block column of `L` is a block row of `A`,
//! transposed on the executor in two more buffers (the ring's room then holds five of 3/5 the
//! width). Only a block column's diagonal block comes back through a host buffer, so that the
//! other triangle, which is not ours, is never written. X and the panels use host buffers
//! mapped once per call (`streaming::Mapped` undoes the mapping on every exit).
//! `HYLAPACK_SBR_DIRECT=0` copies through the staging on several host threads (see `host`):
//! for a matrix that page-locking costs more than it saves (80 GB never written took 23 s).
//!
//! Settings: the driver reads them once per call (`driver::reduce_on`) and passes them down
//! (`config::SbrTuning`). Phase times: `HYLAPACK_SBR_PROFILE=1` synchronises the executor after
//! each phase and prints the sums on stderr.
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

mod back_transform;
mod driver;
pub mod executor;
mod host;
mod panel;
mod plan;
mod reflectors;
mod resident;
pub mod sb2st;
pub mod sbrdb;
mod streaming;
mod update;

pub use back_transform::{apply_q1_on, q1_bytes, Q1Run, Q1Stopped};
pub use executor::{DirectBlock, ExecError, Executor, Op, OpMut};
pub use host::HostMat;
pub use plan::{plan, streaming_budget, Mode};
pub use reflectors::apply_q1;

use crate::dispatch::Backend;
use crate::lapack::Dense;
use crate::real::Real;
use driver::{reduce_on, Problem};

/// The element types the reduction runs on: LAPACK's and, for the GPU path, cuBLAS's routines
/// of that precision (f32 and f64).
pub trait SbrReal: Real + Dense + crate::device::blas::CublasReal {}

impl<T: Real + Dense + crate::device::blas::CublasReal> SbrReal for T {}

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

/// INFO when host memory that no path can do without cannot be allocated (the exported
/// routines' `HYLAPACK_INFO_INTERNAL_ERROR`): the workspace of the system LAPACK's
/// xSYTRD_SY2SB (the arrays then untouched, and the report's `lapack_without_workspace` set),
/// or the CPU's buffers to finish a run the GPU left half done (the input is then lost). The
/// reason is in the report's note and on stderr.
pub const INFO_NO_HOST_MEMORY: i32 = -1000;

/// How a reduction ran.
#[derive(Clone, Debug, PartialEq)]
pub struct SyrdbReport {
    /// 0, or [`INFO_NO_HOST_MEMORY`].
    pub info: i32,
    pub backend: Backend,
    /// Resident, streaming with the block width used, or why the GPU was left.
    pub note: Option<String>,
    /// In the resident mode: the seconds spent uploading the matrix and downloading the result
    /// (each timed between synchronisations of the executor, in this run).
    pub transfer_secs: Option<f64>,
    /// The system LAPACK was to answer on the untouched A, but its workspace could not be
    /// allocated (INFO = [`INFO_NO_HOST_MEMORY`], A, AB and TAU untouched): a caller that holds
    /// a workspace of LAPACK's size (the Fortran names' WORK) can run it there instead.
    pub lapack_without_workspace: bool,
}

impl SyrdbReport {
    /// INFO = 0, on `backend`, with `note`.
    pub fn new(backend: Backend, note: Option<String>) -> SyrdbReport {
        SyrdbReport {
            info: 0,
            backend,
            note,
            transfer_secs: None,
            lapack_without_workspace: false,
        }
    }
}

/// Reduces the n x n symmetric `a` (its `uplo` triangle) to band form with `kd` off-diagonals:
/// the band into `ab` (LAPACK band storage, `ldab ≥ kd + 1`), the reflectors into `a` and
/// `tau` (n − kd entries) exactly where xSYTRD_SY2SB leaves them. The arguments must have
/// passed [`check_args`].
#[allow(clippy::too_many_arguments)]
pub fn syrdb<T: SbrReal>(
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
pub fn syrdb_band<T: SbrReal>(
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
