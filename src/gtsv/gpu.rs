//! SPIKE on the GPU (`kernels/gtsv.cu`), for host arrays (the LAPACK interface): upload through
//! pinned staging buffers, solve, check, and download only an accepted answer.
//!
//! Each level of the recursion cuts its system into partitions of `m` rows (one thread each,
//! diagonal pivoting), builds the tridiagonal separator system (one row per partition) and
//! recurses on it until it has at most `base_n` rows, which one CTA solves. The back
//! substitution then runs level by level upwards; on the top level it also computes the residual
//! check (interior rows in the back-substitution kernel, separator rows in a small kernel), so
//! the decision to accept costs no extra pass over the matrix. A step of iterative refinement
//! runs only when that check finds a residual above LAPACK's level (see [`solve`]).
//!
//! `B` is saved before anything is written to it and restored unless the answer is accepted
//! ([`SavedB`]), so a download that fails partway cannot leave it half-overwritten.

use super::{host_threads, judge, refine, residual_cols, wants_refinement, Reject};
use crate::device::memory::Pinned;
use crate::device::{self, kernels, DeviceError, Gpu};
use crate::real::Real;
use cudarc::driver::{
    CudaFunction, CudaSlice, CudaStream, DevicePtr, DevicePtrMut, LaunchConfig, PushKernelArg,
};
use std::sync::Arc;

/// Tuning of the GPU path.
#[derive(Clone, Debug)]
pub struct GpuOptions {
    /// Rows per partition, separator included (2..=32).
    pub m: usize,
    /// Threads (partitions) per CTA: a multiple of 32.
    pub threads: u32,
    /// Systems of at most this many rows are solved by one CTA (the bottom of the recursion).
    pub base_n: usize,
    /// Elements per pinned staging buffer (two are used, alternately).
    pub staging_elems: usize,
}

impl Default for GpuOptions {
    fn default() -> Self {
        GpuOptions {
            m: 32,
            threads: 32,
            base_n: 1024,
            staging_elems: 1 << 20,
        }
    }
}

fn sz<T>() -> usize {
    std::mem::size_of::<T>()
}

/// A tridiagonal system on the device, LAPACK's layout, `f` with leading dimension `n`.
struct System<T> {
    n: usize,
    dl: CudaSlice<T>,
    d: CudaSlice<T>,
    du: CudaSlice<T>,
    f: CudaSlice<T>,
}

/// One level's per-partition spike data.
struct Level<T> {
    p: usize,
    wt: CudaSlice<T>,
    wb: CudaSlice<T>,
    vt: CudaSlice<T>,
    vb: CudaSlice<T>,
    yt: CudaSlice<T>,
    yb: CudaSlice<T>,
    fs: CudaSlice<T>,
}

/// The partition counts of the levels for a system of `n` rows.
fn level_sizes(n: usize, o: &GpuOptions) -> Vec<usize> {
    let base = o.base_n.max(o.m).max(4);
    let mut sizes = Vec::new();
    let mut rows = n;
    while rows > base {
        let p = (rows + 1).div_ceil(o.m);
        sizes.push(p);
        rows = p;
    }
    sizes
}

/// Device bytes one call needs (what is reserved from the budget).
pub fn bytes_needed<T>(n: usize, nrhs: usize, o: &GpuOptions) -> u64 {
    let mut elems = 3 * n + n * nrhs + 3 * nrhs;
    for p in level_sizes(n, o) {
        elems += 4 * p + 3 * p * nrhs + 3 * p + p * nrhs;
    }
    (elems * sz::<T>() + 64) as u64
}

/// Two pinned buffers used alternately (each waits for its own last copy before it is reused).
struct Staging<T> {
    bufs: [Pinned<T>; 2],
    next: usize,
}

impl<T: Real> Staging<T> {
    fn new(gpu: &'static Gpu, elems: usize) -> Result<Self, DeviceError> {
        Ok(Staging {
            bufs: [gpu.pinned(elems)?, gpu.pinned(elems)?],
            next: 0,
        })
    }

    fn chunk(&self) -> usize {
        self.bufs[0].len()
    }

    /// Copies `src` to device memory at `dst` (which holds at least `src.len()` elements).
    fn upload(
        &mut self,
        stream: &Arc<CudaStream>,
        src: &[T],
        dst: &mut CudaSlice<T>,
        offset: usize,
    ) -> Result<(), DeviceError> {
        let chunk = self.chunk();
        for (k, piece) in src.chunks(chunk).enumerate() {
            let i = self.next;
            self.next ^= 1;
            self.bufs[i].as_mut_slice()?[..piece.len()].copy_from_slice(piece);
            let at = offset + k * chunk;
            let mut view = dst.slice_mut(at..at + piece.len());
            let (ptr, _sync) = view.device_ptr_mut(stream);
            // SAFETY: the view holds piece.len() elements; the pinned buffer records the end of
            // the copy and is not reused before it.
            unsafe { self.bufs[i].copy_to_device(piece.len(), ptr, stream)? };
        }
        Ok(())
    }

    /// Copies device memory `src[offset..offset + dst.len()]` into `dst`.
    fn download(
        &mut self,
        stream: &Arc<CudaStream>,
        src: &CudaSlice<T>,
        offset: usize,
        dst: &mut [T],
    ) -> Result<(), DeviceError> {
        let chunk = self.chunk();
        let pieces = dst.len().div_ceil(chunk);
        // Copy piece k into buffer k % 2, then drain piece k − 1 while piece k is in flight.
        let mut pending: Option<(usize, usize)> = None; // (buffer, piece)
        for k in 0..=pieces {
            if k < pieces {
                let i = k % 2;
                let len = chunk.min(dst.len() - k * chunk);
                let at = offset + k * chunk;
                let view = src.slice(at..at + len);
                let (ptr, _sync) = view.device_ptr(stream);
                // SAFETY: the view holds len elements; reading the pinned buffer waits for the
                // end of this copy.
                unsafe { self.bufs[i].copy_from_device(len, ptr, stream)? };
            }
            if let Some((i, piece)) = pending.take() {
                let len = chunk.min(dst.len() - piece * chunk);
                dst[piece * chunk..piece * chunk + len]
                    .copy_from_slice(&self.bufs[i].as_slice()?[..len]);
            }
            if k < pieces {
                pending = Some((k % 2, k));
            }
        }
        Ok(())
    }
}

struct Funcs {
    reduce: CudaFunction,
    build: CudaFunction,
    backsub: CudaFunction,
    sep_check: CudaFunction,
    base: CudaFunction,
}

/// The device buffers of one call: the systems of every level (the top one holds the user's
/// system, `f` overwritten by `X` in place), the levels' spike data, the flags and the per-column
/// residual summaries of the top level.
struct Plan<T> {
    systems: Vec<System<T>>,
    levels: Vec<Level<T>>,
    flags: CudaSlice<i32>,
    rmax: CudaSlice<T>,
    smax: CudaSlice<T>,
    bmax: CudaSlice<T>,
}

impl<T: Real> Plan<T> {
    /// Enqueues the whole SPIKE pipeline for the first `ncols` columns of the top system's `f`
    /// (leading dimension `n`), in place: the downward reduction, the bottom solve, the upward
    /// back substitution. With `check` (and at least one level) the top level also accumulates
    /// the residual summaries into `rmax`, `smax`, `bmax` (which must then be zero).
    ///
    /// The kernels keep no factorization in memory: each partition's diagonal-pivoting
    /// factorization is recomputed in registers from DL, D, DU by every kernel that needs it
    /// (cheaper than storing and re-reading it). The pivoting decisions depend only on A, so a
    /// second run on another right-hand side (a refinement step) solves with exactly the same
    /// factorization; it only repeats that arithmetic, and rewrites the spikes and the reduced
    /// matrices with the same values.
    fn launch(
        &mut self,
        stream: &Arc<CudaStream>,
        funcs: &Funcs,
        o: &GpuOptions,
        ncols: usize,
        check: bool,
    ) -> Result<(), DeviceError> {
        let (m_i, nrhs_i) = (o.m as i32, ncols as i32);
        let tile_cfg = |p: usize| LaunchConfig {
            grid_dim: (p.div_ceil(o.threads as usize) as u32, 1, 1),
            block_dim: (o.threads, 1, 1),
            shared_mem_bytes: (4 * o.threads as usize * (o.m + 1) * sz::<T>()) as u32,
        };
        let flat_cfg = |p: usize| LaunchConfig {
            grid_dim: (p.div_ceil(256) as u32, 1, 1),
            block_dim: (256, 1, 1),
            shared_mem_bytes: 0,
        };
        let Plan {
            systems,
            levels,
            flags,
            rmax,
            smax,
            bmax,
        } = self;

        // Downward: reduce each level to its separator system.
        for (l, lev) in levels.iter_mut().enumerate() {
            let (upper, lower) = systems.split_at_mut(l + 1);
            let (sys, next) = (&upper[l], &mut lower[0]);
            let (n_l, p_l) = (sys.n as i64, lev.p as i64);
            let mut launch = stream.launch_builder(&funcs.reduce);
            launch
                .arg(&n_l)
                .arg(&sys.dl)
                .arg(&sys.d)
                .arg(&sys.du)
                .arg(&sys.f)
                .arg(&n_l)
                .arg(&nrhs_i)
                .arg(&m_i)
                .arg(&p_l);
            launch
                .arg(&mut lev.wt)
                .arg(&mut lev.wb)
                .arg(&mut lev.vt)
                .arg(&mut lev.vb)
                .arg(&mut lev.yt)
                .arg(&mut lev.yb)
                .arg(&mut *flags);
            // SAFETY: arguments match gtsv_reduce_{s,d}; the level arrays hold p (x nrhs >= ncols)
            // entries, the system n rows with f of leading dimension n; the kernel reads rows < n only.
            unsafe { launch.launch(tile_cfg(lev.p)) }?;
            let mut launch = stream.launch_builder(&funcs.build);
            launch
                .arg(&n_l)
                .arg(&sys.dl)
                .arg(&sys.d)
                .arg(&sys.du)
                .arg(&sys.f)
                .arg(&n_l)
                .arg(&nrhs_i)
                .arg(&m_i)
                .arg(&p_l);
            launch
                .arg(&lev.wt)
                .arg(&lev.wb)
                .arg(&lev.vt)
                .arg(&lev.vb)
                .arg(&lev.yt)
                .arg(&lev.yb);
            launch
                .arg(&mut next.dl)
                .arg(&mut next.d)
                .arg(&mut next.du)
                .arg(&mut next.f)
                .arg(&mut lev.fs);
            // SAFETY: arguments match gtsv_build_{s,d}; the next system has p rows (p − 1
            // off-diagonal entries), f and fs p x nrhs (>= ncols).
            unsafe { launch.launch(flat_cfg(lev.p)) }?;
        }
        // The bottom: one CTA.
        {
            let sys = systems.last_mut().expect("at least the top system");
            let n_b = sys.n as i64;
            let cfg = LaunchConfig {
                grid_dim: (1, 1, 1),
                block_dim: (128, 1, 1),
                shared_mem_bytes: (sys.n * (5 * sz::<T>() + 1)) as u32,
            };
            let mut launch = stream.launch_builder(&funcs.base);
            launch
                .arg(&n_b)
                .arg(&sys.dl)
                .arg(&sys.d)
                .arg(&sys.du)
                .arg(&mut sys.f)
                .arg(&n_b)
                .arg(&nrhs_i)
                .arg(&mut *flags);
            // SAFETY: arguments match gtsv_base_{s,d}; n_b <= base_n rows fit the shared arrays
            // requested (5 arrays of T and one of bytes).
            unsafe { launch.launch(cfg) }?;
        }
        // Upward: back substitution; the top level also evaluates the residual check.
        for l in (0..levels.len()).rev() {
            let (upper, lower) = systems.split_at_mut(l + 1);
            let (sys, next) = (&mut upper[l], &lower[0]);
            let lev = &levels[l];
            let (n_l, p_l) = (sys.n as i64, lev.p as i64);
            let top_check = l == 0 && check;
            let check_i = top_check as i32;
            let mut launch = stream.launch_builder(&funcs.backsub);
            launch
                .arg(&n_l)
                .arg(&sys.dl)
                .arg(&sys.d)
                .arg(&sys.du)
                .arg(&mut sys.f)
                .arg(&n_l)
                .arg(&nrhs_i)
                .arg(&m_i)
                .arg(&p_l);
            launch
                .arg(&next.f)
                .arg(&check_i)
                .arg(&mut *rmax)
                .arg(&mut *smax)
                .arg(&mut *bmax)
                .arg(&mut *flags);
            // SAFETY: arguments match gtsv_backsub_{s,d}; XS (the next system's solution) is p x nrhs.
            unsafe { launch.launch(tile_cfg(lev.p)) }?;
            if top_check {
                let mut launch = stream.launch_builder(&funcs.sep_check);
                launch
                    .arg(&n_l)
                    .arg(&sys.dl)
                    .arg(&sys.d)
                    .arg(&sys.du)
                    .arg(&sys.f)
                    .arg(&n_l)
                    .arg(&nrhs_i)
                    .arg(&m_i)
                    .arg(&p_l);
                launch
                    .arg(&lev.fs)
                    .arg(&mut *rmax)
                    .arg(&mut *smax)
                    .arg(&mut *bmax)
                    .arg(&mut *flags);
                // SAFETY: arguments match gtsv_sep_check_{s,d}; FS is p x nrhs.
                unsafe { launch.launch(flat_cfg(lev.p)) }?;
            }
        }
        Ok(())
    }
}

/// The user's `B` (its first `n` rows of each column), saved on entry: restored on drop unless
/// the answer was committed, so a download that fails partway (or a rejected refinement, or a
/// panic) leaves `B` exactly as it came, for the CPU path or LAPACK to run on. The saved copy,
/// packed with leading dimension `n`, is also the right-hand side of the host residual.
struct SavedB<'a, T: Copy> {
    b: &'a mut [T],
    ldb: usize,
    n: usize,
    saved: Vec<T>,
    committed: bool,
}

impl<'a, T: Copy> SavedB<'a, T> {
    fn new(b: &'a mut [T], ldb: usize, n: usize, nrhs: usize) -> Self {
        let mut saved = Vec::with_capacity(n * nrhs);
        for c in 0..nrhs {
            saved.extend_from_slice(&b[c * ldb..c * ldb + n]);
        }
        SavedB {
            b,
            ldb,
            n,
            saved,
            committed: false,
        }
    }

    /// Column `c` of `B` (the first `n` rows).
    fn col(&mut self, c: usize) -> &mut [T] {
        &mut self.b[c * self.ldb..c * self.ldb + self.n]
    }
}

impl<T: Copy> Drop for SavedB<'_, T> {
    fn drop(&mut self) {
        if !self.committed {
            let n = self.n;
            for (c, col) in self.saved.chunks(n.max(1)).enumerate() {
                self.b[c * self.ldb..c * self.ldb + n].copy_from_slice(col);
            }
        }
    }
}

/// Solves on the GPU. `Err`: the GPU could not run it (nothing changed); `Ok(Err)`: SPIKE's
/// answer was rejected (nothing changed); `Ok(Ok)`: `X` is in `b`.
///
/// When some column's residual is above LAPACK's level ([`super::wants_refinement`]), the
/// answer is downloaded and refined ([`super::refine`]): the residual is computed on the host,
/// the correction solved on the GPU by re-running the pipeline ([`Plan::launch`]) on it, and
/// `x + δ` formed and re-checked on the host.
#[allow(clippy::too_many_arguments)]
pub fn solve<T: Real>(
    o: &GpuOptions,
    dl: &[T],
    d: &[T],
    du: &[T],
    b: &mut [T],
    ldb: usize,
    nrhs: usize,
) -> Result<Result<(), Reject>, DeviceError> {
    let n = d.len();
    if !(2..=32).contains(&o.m) || o.threads == 0 || o.threads % 32 != 0 {
        return Err(DeviceError::Driver(format!(
            "bad GPU options m = {}, threads = {}",
            o.m, o.threads
        )));
    }
    if n >= (i64::MAX as usize) / 64 || nrhs > i32::MAX as usize {
        return Err(DeviceError::Driver("system too large".into()));
    }
    let gpu = device::gpu()?;
    let _memory = gpu.budget.reserve(bytes_needed::<T>(n, nrhs, o))?;
    let module = gpu.module(&kernels::GTSV)?;
    let f = |name: &str| module.load_function(&format!("gtsv_{name}_{}", T::PREFIX));
    let funcs = Funcs {
        reduce: f("reduce")?,
        build: f("build")?,
        backsub: f("backsub")?,
        sep_check: f("sep_check")?,
        base: f("base")?,
    };
    let stream = gpu.stream()?;
    let stream: Arc<CudaStream> = (*stream).clone();
    let mut staging = Staging::<T>::new(gpu, o.staging_elems.max(1024))?;

    // Upload the user's system (B packed to leading dimension n).
    // SAFETY (allocations): every element is written by an upload or a kernel before it is read.
    let mut top = unsafe {
        System {
            n,
            dl: stream.alloc::<T>(n.max(2) - 1)?,
            d: stream.alloc::<T>(n)?,
            du: stream.alloc::<T>(n.max(2) - 1)?,
            f: stream.alloc::<T>(n * nrhs)?,
        }
    };
    staging.upload(&stream, &dl[..n - 1], &mut top.dl, 0)?;
    staging.upload(&stream, d, &mut top.d, 0)?;
    staging.upload(&stream, &du[..n - 1], &mut top.du, 0)?;
    for col in 0..nrhs {
        staging.upload(&stream, &b[col * ldb..col * ldb + n], &mut top.f, col * n)?;
    }

    let sizes = level_sizes(n, o);
    let mut systems = vec![top];
    let mut levels = Vec::with_capacity(sizes.len());
    for &p in &sizes {
        // SAFETY: written by the reduce and build kernels before any read.
        unsafe {
            levels.push(Level {
                p,
                wt: stream.alloc::<T>(p)?,
                wb: stream.alloc::<T>(p)?,
                vt: stream.alloc::<T>(p)?,
                vb: stream.alloc::<T>(p)?,
                yt: stream.alloc::<T>(p * nrhs)?,
                yb: stream.alloc::<T>(p * nrhs)?,
                fs: stream.alloc::<T>(p * nrhs)?,
            });
            systems.push(System {
                n: p,
                dl: stream.alloc::<T>(p.max(2) - 1)?,
                d: stream.alloc::<T>(p)?,
                du: stream.alloc::<T>(p.max(2) - 1)?,
                f: stream.alloc::<T>(p * nrhs)?,
            });
        }
    }
    let mut plan = Plan {
        systems,
        levels,
        flags: stream.alloc_zeros::<i32>(1)?,
        rmax: stream.alloc_zeros::<T>(nrhs.max(1))?,
        smax: stream.alloc_zeros::<T>(nrhs.max(1))?,
        bmax: stream.alloc_zeros::<T>(nrhs.max(1))?,
    };
    let device_check = !plan.levels.is_empty();
    plan.launch(&stream, &funcs, o, nrhs, device_check)?;

    // While the GPU works: save B, so that nothing below can leave it half-written.
    let mut saved = SavedB::new(b, ldb, n, nrhs);

    let flags_h = stream.clone_dtoh(&plan.flags)?;
    if flags_h[0] & 1 != 0 {
        return Ok(Err(Reject::ZeroPivot));
    }
    if device_check && flags_h[0] & 2 != 0 {
        return Ok(Err(Reject::NonFinite));
    }
    // Per-column residual summaries: from the device, or (one CTA solved it: no levels) None yet.
    let mut checks: Option<Vec<super::Residual<T>>> = if device_check {
        let (r_h, s_h, b_h) = (
            stream.clone_dtoh(&plan.rmax)?,
            stream.clone_dtoh(&plan.smax)?,
            stream.clone_dtoh(&plan.bmax)?,
        );
        Some((0..nrhs).map(|c| (r_h[c], s_h[c], b_h[c], true)).collect())
    } else {
        None
    };
    let refine_wanted = checks
        .as_ref()
        .is_none_or(|c| c.iter().any(wants_refinement));
    if !refine_wanted {
        // The usual case: decide on the device's summaries, then download straight into B.
        if let Err(r) = judge(checks.expect("device summaries")) {
            return Ok(Err(r));
        }
        for col in 0..nrhs {
            staging.download(&stream, &plan.systems[0].f, col * n, saved.col(col))?;
        }
        stream.synchronize()?;
        saved.committed = true;
        return Ok(Ok(()));
    }

    // Download X into B (restored from `saved` unless accepted), check and refine on the host.
    for col in 0..nrhs {
        staging.download(&stream, &plan.systems[0].f, col * n, saved.col(col))?;
    }
    stream.synchronize()?;
    let threads = host_threads(n);
    let SavedB {
        b: ref mut bx,
        saved: ref f0,
        ..
    } = saved;
    let all: Vec<usize> = (0..nrhs).collect();
    let mut checks = match checks.take() {
        Some(c) => c,
        None => residual_cols(dl, d, du, bx, ldb, &all, f0, n, &all, None, threads, false),
    };
    refine(
        dl,
        d,
        du,
        bx,
        ldb,
        f0,
        n,
        &mut checks,
        threads,
        |r: &mut [T], k: usize| -> Result<bool, DeviceError> {
            // The correction A δ = r on the GPU, with the same (recomputed) factorization.
            staging.upload(&stream, r, &mut plan.systems[0].f, 0)?;
            plan.launch(&stream, &funcs, o, k, false)?;
            let flags_h = stream.clone_dtoh(&plan.flags)?;
            if flags_h[0] & 1 != 0 {
                return Ok(false);
            }
            staging.download(&stream, &plan.systems[0].f, 0, r)?;
            stream.synchronize()?;
            Ok(true)
        },
    )?;
    if let Err(r) = judge(checks) {
        return Ok(Err(r));
    }
    saved.committed = true;
    Ok(Ok(()))
}
