//! One solve's device state and its kernel pipeline ([`Plan`]): the levels of the recursion,
//! the work buffer they are carved from, the tail kernel and the refinement on the GPU.

use super::*;
use crate::device::memory::Reservation;

/// What the top level's back substitution does besides solving.
#[derive(Clone, Copy, Debug)]
pub(super) enum Top {
    Solve,
    /// Accumulate the residual summaries of every row; with [`GpuOptions::speculate`], the
    /// accurate residual's, and write the top level's separator right-hand sides for a
    /// refinement step to `spec` (`gtsv_backsub_spec`).
    Check,
    /// A refinement step: the right-hand sides given are the original ones, `f0`, and the
    /// system solved is for the residual of `x0` against them (evaluated by the top level's
    /// kernels, its summaries into the second set); write `x0` + the correction and accumulate
    /// its accurate residual summaries against `f0`. With `from_spec`, the check before it left
    /// the top level's separator system ready in level 0's buffers: no top-level reduce.
    Update {
        x0: DevCols,
        from_spec: bool,
    },
}

/// The systems one `gtsv_tail` launch solves, as `TailSystems` in `kernels/gtsv.cu`: `levels`
/// reductions, system i + 1 the separator system of system i (n = its row count, F at leading
/// dimension n), the last one the bottom.
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct TailSystems {
    levels: i64,
    n: [i64; TAIL_MAX_LEVELS + 1],
    dl: [CUdeviceptr; TAIL_MAX_LEVELS + 1],
    d: [CUdeviceptr; TAIL_MAX_LEVELS + 1],
    du: [CUdeviceptr; TAIL_MAX_LEVELS + 1],
    f: [CUdeviceptr; TAIL_MAX_LEVELS + 1],
}

// SAFETY: plain integers in the kernel's struct layout (8-byte fields, no padding).
unsafe impl cudarc::driver::DeviceRepr for TailSystems {}

/// Which of a level kernel's partitions it answers for, as `Span` in `kernels/gtsv.cu`: `own`
/// partitions from the first, the separator arrays at leading dimension `ldp`, and whether a
/// row before the first exists (`prev`, a slice of a streamed top level after the first).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub(super) struct Span {
    own: i64,
    ldp: i64,
    prev: i32,
}

// SAFETY: plain integers in the kernel's struct layout (two 8-byte fields, a 4-byte one, and
// the same tail padding).
unsafe impl cudarc::driver::DeviceRepr for Span {}

/// The span of a whole level of `p` partitions, and the count the kernel sees.
fn whole_span(p: usize) -> (usize, Span) {
    (
        p,
        Span {
            own: p as i64,
            ldp: p as i64,
            prev: 0,
        },
    )
}

/// A slice of the top level's rows as one launch sees it: the rows of partitions `j0 ..
/// j0 + own` and, when more follow, the next partition's rows (`a.n` counts them all). With
/// `prev`, DL's address is that of row 0's coupling to the row before, which the slice's
/// buffers hold at index −1 (as X0's).
#[derive(Clone, Copy, Debug)]
pub(super) struct TopSlice {
    pub a: DevMatrix,
    pub j0: usize,
    pub own: usize,
    pub more: bool,
}

impl TopSlice {
    fn whole(a: DevMatrix, p: usize) -> Self {
        TopSlice {
            a,
            j0: 0,
            own: p,
            more: false,
        }
    }

    /// The kernel's partition count and span for a top level of `p` partitions.
    fn span(&self, p: usize) -> (usize, Span) {
        let seen = self.own + self.more as usize;
        (
            seen,
            Span {
                own: self.own as i64,
                ldp: p as i64,
                prev: (self.j0 > 0) as i32,
            },
        )
    }
}

/// One level: its partition count and the separator system it reduces to (the next level's).
struct Level {
    p: usize,
    /// The reduced system (p rows) and its right-hand sides / solution (p × nrhs, in place).
    next: DevMatrix,
    next_f: CUdeviceptr,
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

/// The most levels one `gtsv_tail` launch takes (`TAIL_MAX_LEVELS` in `kernels/gtsv.cu`).
const TAIL_MAX_LEVELS: usize = 12;

/// The first level the tail kernel takes for a system of `n` rows (levels of sizes `sizes`),
/// if any: the first below the top whose system has at most `tail_n` rows, or lower where
/// that would make more than [`TAIL_MAX_LEVELS`] levels.
fn tail_start(sizes: &[usize], o: &GpuOptions) -> Option<usize> {
    let first = (1..sizes.len()).find(|&l| sizes[l - 1] <= o.tail_n)?;
    Some(
        first
            .max(sizes.len().saturating_sub(TAIL_MAX_LEVELS))
            .max(1),
    )
}

/// Per level its partition count and the offsets of its separator system's DL, D, DU, F; the
/// offsets of X, R, X + δ, the summaries and flags, the tail's scratch, the speculative
/// right-hand sides; the total length (elements of `T`); the level the tail kernel starts at
/// ([`tail_start`]).
type WorkLayout = (Vec<(usize, [usize; 4])>, [usize; 6], usize, Option<usize>);

/// The pieces of one solve's work buffer, in elements of `T`, each rounded up to 32 elements:
/// per level the separator system (DL, D, DU, F); then the solution X, the refinement's
/// residual R (only without levels: with levels the top level's kernels evaluate it) and its
/// candidate X + δ (each n × nrhs), two sets of summaries with the flags in
/// the element after them (one memset clears them, one copy reads them), and the tail
/// kernel's scratch (4 + 2 nrhs entries per partition of its first level), and the top level's
/// speculative separator right-hand sides (p × nrhs, with levels).
fn work_layout(n: usize, nrhs: usize, o: &GpuOptions, resident: bool) -> WorkLayout {
    let mut total = 0usize;
    let mut carve = |len: usize| {
        let at = total;
        total += len.max(1).div_ceil(32) * 32;
        at
    };
    let sizes = level_sizes(n, o);
    let tail = tail_start(&sizes, o);
    let scratch = tail.map_or(0, |t| sizes[t] * (4 + 2 * nrhs));
    let r = if sizes.is_empty() { n * nrhs } else { 0 };
    let spec = sizes.first().map_or(0, |&p| p * nrhs);
    let levels = sizes
        .into_iter()
        .map(|p| (p, [p - 1, p, p - 1, p * nrhs].map(&mut carve)))
        .collect();
    // A streamed top level keeps its X on the host: no n-sized pieces.
    let x = if resident { n * nrhs } else { 0 };
    let r = if resident { r } else { 0 };
    let rest = [x, r, x, 6 * nrhs.max(1) + 1, scratch, spec].map(&mut carve);
    (levels, rest, total, tail)
}

/// Device bytes of the work buffer of one solve (see [`work_layout`]), not counting the
/// caller's matrix and right-hand sides.
pub fn work_bytes<T>(n: usize, nrhs: usize, o: &GpuOptions) -> u64 {
    (work_layout(n, nrhs, o, true).2 * sz::<T>()) as u64
}

/// [`work_bytes`] for a streamed top level (no n-sized pieces).
pub fn streamed_work_bytes<T>(n: usize, nrhs: usize, o: &GpuOptions) -> u64 {
    (work_layout(n, nrhs, o, false).2 * sz::<T>()) as u64
}

/// The work buffer of the last solve, kept for the next one: `cuMemAllocAsync` hands freed
/// memory back at every synchronization, and mapping ~100 MiB afresh cost more than the solve
/// itself. While idle it holds a cache reservation of the budget, which frees it
/// ([`drop_spare`]) when another reservation needs the room; buffers above 1 GiB are not kept,
/// since memory held between calls is lost to the rest of the process (other libraries do not
/// see our budget).
static SPARE: std::sync::Mutex<Option<Spare>> = std::sync::Mutex::new(None);

/// The largest work buffer kept in [`SPARE`].
const SPARE_MAX: usize = 1 << 30;

struct Spare {
    buf: CudaSlice<u8>,
    _held: Reservation<'static>,
}

fn spare() -> std::sync::MutexGuard<'static, Option<Spare>> {
    SPARE.lock().unwrap_or_else(|e| e.into_inner())
}

/// Frees the idle work buffer (the budget's reclaimer for it).
fn drop_spare() {
    let idle = spare().take();
    drop(idle);
}

/// A work buffer taken from [`SPARE`] (or allocated) for one solve and given back on drop.
struct Work {
    buf: Option<CudaSlice<u8>>,
    stream: Arc<CudaStream>,
    gpu: &'static Gpu,
}

impl Work {
    fn take(
        gpu: &'static Gpu,
        stream: &Arc<CudaStream>,
        bytes: usize,
    ) -> Result<Self, DeviceError> {
        // The solve's own reservation covers the buffer from here: the cache's is dropped.
        let idle = spare().take().map(|s| s.buf);
        let buf = match idle {
            Some(b) if b.len() >= bytes => b,
            // SAFETY: every element is written by a kernel, a copy or a memset before it is read.
            _ => unsafe { stream.alloc::<u8>(bytes) }?,
        };
        Ok(Work {
            buf: Some(buf),
            stream: stream.clone(),
            gpu,
        })
    }

    fn base(&self) -> CUdeviceptr {
        addr(self.buf.as_ref().expect("work buffer"), &self.stream)
    }
}

impl Drop for Work {
    fn drop(&mut self) {
        let Some(buf) = self.buf.take() else { return };
        // Another solve may take it on another stream: this one's kernels must be done.
        if buf.len() > SPARE_MAX || self.stream.synchronize().is_err() {
            return;
        }
        // Kept only if the budget holds it beside the solve's own reservation.
        let Ok(held) = self.gpu.budget.reserve_cache(buf.len() as u64, drop_spare) else {
            return;
        };
        let mut slot = spare();
        if slot.as_ref().is_none_or(|s| s.buf.len() < buf.len()) {
            *slot = Some(Spare { buf, _held: held });
        }
    }
}

/// The partition kernels of one kind: a whole level's, or (with a [`Span`] argument after P) a
/// slice's of a streamed top level.
#[derive(Clone)]
struct PartFuncs {
    reduce: CudaFunction,
    reduce_res: CudaFunction,
    backsub: CudaFunction,
    backsub_spec: CudaFunction,
    update: CudaFunction,
}

impl PartFuncs {
    fn load<T: Real>(
        module: &Arc<cudarc::driver::CudaModule>,
        m: usize,
        tag: &str,
    ) -> Result<Self, DeviceError> {
        let f = |name: &str| module.load_function(&format!("gtsv_{name}{tag}_{}_m{m}", T::PREFIX));
        Ok(PartFuncs {
            reduce: f("reduce")?,
            reduce_res: f("reduce_res")?,
            backsub: f("backsub")?,
            backsub_spec: f("backsub_spec")?,
            update: f("update")?,
        })
    }

    /// The slice kernels of each (precision, partition size) loaded so far, from the module
    /// compiled at the first streamed solve.
    fn slices<T: Real>(gpu: &Gpu, m: usize) -> Result<Self, DeviceError> {
        static LOADED: std::sync::Mutex<Vec<((char, usize), PartFuncs)>> =
            std::sync::Mutex::new(Vec::new());
        let key = (T::PREFIX, m);
        let mut loaded = LOADED.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, f)) = loaded.iter().find(|(k, _)| *k == key) {
            return Ok(f.clone());
        }
        let f = Self::load::<T>(&gpu.module(&kernels::GTSV_SLICE)?, m, "_slice")?;
        loaded.push((key, f.clone()));
        Ok(f)
    }
}

#[derive(Clone)]
struct Funcs {
    whole: PartFuncs,
    base: CudaFunction,
    tail: CudaFunction,
    residual: CudaFunction,
    add: CudaFunction,
}

/// The kernels of each (precision, partition size) loaded so far: looking nine functions up
/// at every call showed in the small solves.
static FUNCS: std::sync::Mutex<Vec<((char, usize), Funcs)>> = std::sync::Mutex::new(Vec::new());

impl Funcs {
    fn get<T: Real>(gpu: &Gpu, m: usize) -> Result<Self, DeviceError> {
        let key = (T::PREFIX, m);
        let mut loaded = FUNCS.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, f)) = loaded.iter().find(|(k, _)| *k == key) {
            return Ok(f.clone());
        }
        let f = Self::load::<T>(gpu, m)?;
        loaded.push((key, f.clone()));
        Ok(f)
    }

    fn load<T: Real>(gpu: &Gpu, m: usize) -> Result<Self, DeviceError> {
        let module = gpu.module(&kernels::GTSV)?;
        let f = |name: &str| module.load_function(&format!("gtsv_{name}_{}", T::PREFIX));
        let fm = |name: &str| module.load_function(&format!("gtsv_{name}_{}_m{m}", T::PREFIX));
        Ok(Funcs {
            whole: PartFuncs::load::<T>(&module, m, "")?,
            base: f("base")?,
            tail: fm("tail")?,
            residual: f("residual")?,
            add: f("add")?,
        })
    }
}

/// The raw address of a buffer this module allocated on `stream` (all its work stays on that
/// one stream, so cudarc's cross-stream event tracking is not needed).
pub(super) fn addr<T>(s: &CudaSlice<T>, stream: &CudaStream) -> CUdeviceptr {
    s.device_ptr(stream).0
}

/// Copies `cols` columns of `rows` elements between column-major device arrays on `stream`.
///
/// # Safety
/// Both arrays hold `cols` columns of `rows` elements at their leading dimensions.
pub(super) unsafe fn copy_cols<T>(
    stream: &CudaStream,
    dst: DevCols,
    src: DevCols,
    rows: usize,
    cols: usize,
) -> Result<(), DeviceError> {
    for c in 0..cols {
        cu::memcpy_dtod_async(
            dst.ptr + (c * dst.ld * sz::<T>()) as u64,
            src.ptr + (c * src.ld * sz::<T>()) as u64,
            rows * sz::<T>(),
            stream.cu_stream(),
        )?;
    }
    Ok(())
}

/// One solve's device state: the work buffers of every level, the solution `X` (n × nrhs,
/// leading dimension n), the flags and the per-column residual summaries, carved out of one
/// allocation (dozens of small allocations, each with cudarc's tracking events, cost more than
/// the kernels of a mid-sized solve).
pub(super) struct Plan<T> {
    gpu: &'static Gpu,
    stream: Arc<CudaStream>,
    funcs: Funcs,
    /// The slice kernels, for a streamed top level only.
    slice_funcs: Option<PartFuncs>,
    o: GpuOptions,
    a: DevMatrix,
    nrhs: usize,
    levels: Vec<Level>,
    /// The first level the tail kernel takes ([`tail_start`]), if any.
    tail: Option<usize>,
    x: CUdeviceptr,
    /// The refinement's residual (n × nrhs, leading dimension n; only without levels) and its
    /// candidate solution.
    r: CUdeviceptr,
    x_next: CUdeviceptr,
    /// rmax | smax | bmax, nrhs each, twice (the second set for a refinement step's old
    /// residual).
    sums: CUdeviceptr,
    flags: CUdeviceptr,
    /// The tail kernel's spike entries.
    scratch: CUdeviceptr,
    /// The speculating check's separator right-hand sides (level 0's p × nrhs).
    spec: CUdeviceptr,
    /// Owns every buffer above.
    _work: Work,
    /// The host copy of `sums` and the flags (6·nrhs + 1 elements), allocated by
    /// [`Self::reserve_host_sums`] before the GPU works.
    host_sums: Vec<T>,
    _elem: std::marker::PhantomData<T>,
}

impl<T: Real> Plan<T> {
    pub(super) fn new(
        gpu: &'static Gpu,
        stream: Arc<CudaStream>,
        o: &GpuOptions,
        a: DevMatrix,
        nrhs: usize,
    ) -> Result<Self, DeviceError> {
        Self::build(gpu, stream, o, a, nrhs, true)
    }

    /// A plan for a system of `n` rows whose top level is streamed through the GPU in slices
    /// ([`Self::reduce_top`], [`Self::backsub_top`]): its device state is the levels' only.
    pub(super) fn new_streamed(
        gpu: &'static Gpu,
        stream: Arc<CudaStream>,
        o: &GpuOptions,
        n: usize,
        nrhs: usize,
    ) -> Result<Self, DeviceError> {
        let a = DevMatrix {
            n,
            dl: 0,
            d: 0,
            du: 0,
        };
        Self::build(gpu, stream, o, a, nrhs, false)
    }

    fn build(
        gpu: &'static Gpu,
        stream: Arc<CudaStream>,
        o: &GpuOptions,
        a: DevMatrix,
        nrhs: usize,
        resident: bool,
    ) -> Result<Self, DeviceError> {
        let funcs = Funcs::get::<T>(gpu, o.m)?;
        let slice_funcs = if resident {
            None
        } else {
            Some(PartFuncs::slices::<T>(gpu, o.m)?)
        };
        let (offsets, [x_at, r_at, x_next_at, sums_at, scratch_at, spec_at], total, tail) =
            work_layout(a.n, nrhs, o, resident);
        let work = Work::take(gpu, &stream, total * sz::<T>())?;
        let base = work.base();
        let at = |e: usize| base + (e * sz::<T>()) as u64;
        let levels = offsets
            .into_iter()
            .map(|(p, o)| Level {
                p,
                next: DevMatrix {
                    n: p,
                    dl: at(o[0]),
                    d: at(o[1]),
                    du: at(o[2]),
                },
                next_f: at(o[3]),
            })
            .collect();
        Ok(Plan {
            gpu,
            funcs,
            slice_funcs,
            o: o.clone(),
            a,
            nrhs,
            levels,
            tail,
            x: at(x_at),
            r: at(r_at),
            x_next: at(x_next_at),
            sums: at(sums_at),
            flags: at(sums_at + 6 * nrhs.max(1)),
            scratch: at(scratch_at),
            spec: at(spec_at),
            _work: work,
            host_sums: Vec::new(),
            _elem: std::marker::PhantomData,
            stream,
        })
    }

    /// Allocates the host copy of the summaries (see `host_sums`); [`Reject::NoHostMemory`]
    /// when it cannot be allocated (the call then runs LAPACK xGTSV: issue #23).
    pub(super) fn reserve_host_sums(&mut self) -> Result<(), Reject> {
        let need = 6 * self.nrhs.max(1) + 1;
        if self.host_sums.len() < need {
            self.host_sums = host::<T>(need)?;
        }
        Ok(())
    }

    pub(super) fn x_cols(&self) -> DevCols {
        DevCols {
            ptr: self.x,
            ld: self.a.n,
        }
    }

    /// The three summary arrays' addresses.
    fn sums_ptrs(&self) -> (CUdeviceptr, CUdeviceptr, CUdeviceptr) {
        let k = (self.nrhs.max(1) * sz::<T>()) as u64;
        (self.sums, self.sums + k, self.sums + 2 * k)
    }

    /// The second set of summary arrays (a refinement step's old residual).
    fn old_sums_ptrs(&self) -> (CUdeviceptr, CUdeviceptr, CUdeviceptr) {
        let k = (self.nrhs.max(1) * sz::<T>()) as u64;
        let (r, s, b) = self.sums_ptrs();
        (r + 3 * k, s + 3 * k, b + 3 * k)
    }

    /// Enqueues the whole SPIKE pipeline for `ncols` columns: reads `rhs`, writes the solution to
    /// `out` (which may be `rhs` itself, but only with [`Top::Solve`]). With at least one level,
    /// `top` says what else the top level's back substitution does (the summaries go to `sums`,
    /// which must then be zero).
    ///
    /// The kernels keep no factorization in memory: each partition's diagonal-pivoting
    /// factorization is recomputed in registers from DL, D, DU by every kernel that needs it
    /// (cheaper than storing and re-reading it). The pivoting decisions depend only on A, so a
    /// second run on another right-hand side (a refinement step) solves with exactly the same
    /// factorization.
    fn launch(
        &self,
        ncols: usize,
        rhs: DevCols,
        out: DevCols,
        top: Top,
    ) -> Result<(), DeviceError> {
        if self.levels.is_empty() {
            return self.launch_bottom_only(ncols, rhs, out);
        }
        let whole = TopSlice::whole(self.a, self.levels[0].p);
        match top {
            Top::Update {
                from_spec: true, ..
            } => {}
            Top::Update { x0, .. } => self.reduce_top(&whole, ncols, rhs, Some(x0))?,
            _ => self.reduce_top(&whole, ncols, rhs, None)?,
        }
        self.solve_below(ncols)?;
        self.backsub_top(&whole, ncols, rhs, out, top)
    }

    /// The partition kernels of a whole level, or of a slice (a streamed plan's).
    fn part_funcs(&self, sliced: bool) -> &PartFuncs {
        if sliced {
            self.slice_funcs
                .as_ref()
                .expect("slices run on a streamed plan")
        } else {
            &self.funcs.whole
        }
    }

    /// The launch shape of a level kernel over `own` partitions with `tiles` staged arrays.
    /// A CTA of `threads` threads owns threads − 1 partitions (the last thread is a halo).
    /// Shared memory: `tiles` staged arrays of (m + 1) × threads and 3 × threads more. A level
    /// whose CTAs would not fill the GPU twice over gets a row of CTAs per right-hand side
    /// (each refactors its partitions: cheap next to a latency-bound loop over the columns).
    fn tile_cfg(&self, own: usize, tiles: usize, ncols: usize) -> LaunchConfig {
        let o = &self.o;
        let sms = self.gpu.info.multiprocessors.max(1) as usize;
        let ctas = own.max(1).div_ceil(o.threads as usize - 1);
        let rows = if ctas < 2 * sms {
            ncols.clamp(1, 65535)
        } else {
            1
        };
        LaunchConfig {
            grid_dim: (ctas as u32, rows as u32, 1),
            block_dim: (o.threads, 1, 1),
            shared_mem_bytes: ((tiles * (o.m + 1) + 3) * o.threads as usize * sz::<T>()) as u32,
        }
    }

    /// Level l's system and right-hand sides (l ≥ 1: the level above's separator system).
    fn level_system(&self, l: usize) -> (DevMatrix, DevCols) {
        let up = &self.levels[l - 1];
        (
            up.next,
            DevCols {
                ptr: up.next_f,
                ld: up.p,
            },
        )
    }

    /// Reduces a slice of the top level (the whole system, or a piece of a streamed one) to
    /// its rows of the separator system in level 0's buffers. With `x0`, the right-hand sides
    /// are the residual of `x0` against `rhs` (a refinement step), its summaries into the
    /// second set.
    pub(super) fn reduce_top(
        &self,
        s: &TopSlice,
        ncols: usize,
        rhs: DevCols,
        x0: Option<DevCols>,
    ) -> Result<(), DeviceError> {
        let lev = &self.levels[0];
        self.reduce_level(s.a, rhs, lev, s.span(lev.p), s.j0, ncols, x0)
    }

    #[allow(clippy::too_many_arguments)]
    fn reduce_level(
        &self,
        a: DevMatrix,
        f: DevCols,
        lev: &Level,
        (p, span): (usize, Span),
        j0: usize,
        ncols: usize,
        x0: Option<DevCols>,
    ) -> Result<(), DeviceError> {
        let sliced = span.own != p as i64 || span.prev != 0;
        let funcs = self.part_funcs(sliced);
        let (n_l, p_l, ldf, nrhs_i) = (a.n as i64, p as i64, f.ld as i64, ncols as i32);
        let at = |ptr: CUdeviceptr| ptr + (j0 * sz::<T>()) as u64;
        let (rdl, rd, rdu, rf) = (
            at(lev.next.dl),
            at(lev.next.d),
            at(lev.next.du),
            at(lev.next_f),
        );
        let flags = self.flags;
        let (old_rmax, old_smax, old_bmax) = self.old_sums_ptrs();
        let func = if x0.is_some() {
            &funcs.reduce_res
        } else {
            &funcs.reduce
        };
        let mut launch = self.stream.launch_builder(func);
        launch
            .arg(&n_l)
            .arg(&a.dl)
            .arg(&a.d)
            .arg(&a.du)
            .arg(&f.ptr)
            .arg(&ldf)
            .arg(&nrhs_i)
            .arg(&p_l);
        if sliced {
            launch.arg(&span);
        }
        launch.arg(&rdl).arg(&rd).arg(&rdu).arg(&rf).arg(&flags);
        let (x0p, ld0) = x0.map_or((0, 0), |x0| (x0.ptr, x0.ld as i64));
        if x0.is_some() {
            launch
                .arg(&x0p)
                .arg(&ld0)
                .arg(&old_rmax)
                .arg(&old_smax)
                .arg(&old_bmax);
        }
        // SAFETY: arguments match gtsv_reduce_{s,d}_m{m} (gtsv_reduce_res_{s,d}_m{m} with X0 of
        // n rows at ld0; both with _slice before the precision and the span after P when
        // sliced); the separator system holds lev.p rows (lev.p − 1 off-diagonal
        // entries) and its F lev.p x nrhs (>= ncols), of which partitions j0 .. j0 + span.own
        // are written (j0 − 1 of DL too with span.prev); the system has n rows with F of
        // leading dimension ldf, rows < n only are read (and row −1 of DL and X0 with
        // span.prev, which the caller's slice then holds).
        let tiles = if x0.is_some() { 5 } else { 4 };
        unsafe { launch.launch(self.tile_cfg(span.own as usize, tiles, ncols)) }?;
        Ok(())
    }

    /// The levels below the top: each reduced to its separator system, the bottom solved (by
    /// the tail kernel from the level it takes), then back substitution up to level 1, which
    /// leaves the top level's separator solution in level 0's `next_f`.
    pub(super) fn solve_below(&self, ncols: usize) -> Result<(), DeviceError> {
        let nrhs_i = ncols as i32;
        let upper = self.tail.unwrap_or(self.levels.len());
        for l in 1..upper {
            let (a, f) = self.level_system(l);
            let lev = &self.levels[l];
            self.reduce_level(a, f, lev, whole_span(lev.p), 0, ncols, None)?;
        }
        if let Some(t) = self.tail {
            self.launch_tail(t, nrhs_i)?;
        } else {
            let lev = self.levels.last().expect("levels");
            let f = DevCols {
                ptr: lev.next_f,
                ld: lev.p,
            };
            self.launch_base(lev.next, f, nrhs_i)?;
        }
        for l in (1..upper).rev() {
            let (a, f) = self.level_system(l);
            let lev = &self.levels[l];
            self.backsub_level(a, f, f, lev, whole_span(lev.p), 0, ncols, Top::Solve)?;
        }
        Ok(())
    }

    /// The back substitution of a slice of the top level: its rows of the solution go to
    /// `out`; `top` says what else it does.
    pub(super) fn backsub_top(
        &self,
        s: &TopSlice,
        ncols: usize,
        rhs: DevCols,
        out: DevCols,
        top: Top,
    ) -> Result<(), DeviceError> {
        let lev = &self.levels[0];
        self.backsub_level(s.a, rhs, out, lev, s.span(lev.p), s.j0, ncols, top)
    }

    #[allow(clippy::too_many_arguments)]
    fn backsub_level(
        &self,
        a: DevMatrix,
        f: DevCols,
        x: DevCols,
        lev: &Level,
        (p, span): (usize, Span),
        j0: usize,
        ncols: usize,
        top: Top,
    ) -> Result<(), DeviceError> {
        let sliced = span.own != p as i64 || span.prev != 0;
        let funcs = self.part_funcs(sliced);
        let flags = self.flags;
        let (rmax, smax, bmax) = self.sums_ptrs();
        let (n_l, p_l, ldf, ldx, nrhs_i) =
            (a.n as i64, p as i64, f.ld as i64, x.ld as i64, ncols as i32);
        let at = |ptr: CUdeviceptr| ptr + (j0 * sz::<T>()) as u64;
        let (xs, spec_at) = (at(lev.next_f), at(self.spec));
        // A CTA's halo partition is the next CTA's, which may already have overwritten it
        // when X is F: the check reads the halo's solution, so it needs X apart from F.
        assert!(
            matches!(top, Top::Solve) || x.ptr != f.ptr,
            "the residual check needs X apart from F"
        );
        let check_i = matches!(top, Top::Check) as i32;
        let spec = matches!(top, Top::Check) && self.o.speculate;
        let func = match top {
            Top::Update { .. } => &funcs.update,
            Top::Check if spec => &funcs.backsub_spec,
            _ => &funcs.backsub,
        };
        let mut launch = self.stream.launch_builder(func);
        launch
            .arg(&n_l)
            .arg(&a.dl)
            .arg(&a.d)
            .arg(&a.du)
            .arg(&f.ptr)
            .arg(&ldf)
            .arg(&x.ptr)
            .arg(&ldx)
            .arg(&nrhs_i)
            .arg(&p_l);
        if sliced {
            launch.arg(&span);
        }
        launch.arg(&xs);
        if !matches!(top, Top::Update { .. }) && !spec {
            launch.arg(&check_i);
        }
        launch.arg(&rmax).arg(&smax).arg(&bmax).arg(&flags);
        let (x0, ld0) = match top {
            Top::Update { x0, .. } => (x0.ptr, x0.ld as i64),
            _ => (0, 0),
        };
        if matches!(top, Top::Update { .. }) {
            launch.arg(&x0).arg(&ld0);
        }
        if spec {
            launch.arg(&spec_at);
        }
        // SAFETY: arguments match gtsv_backsub_{s,d}_m{m} (gtsv_update_{s,d}_m{m} with
        // Top::Update, gtsv_backsub_spec_{s,d}_m{m} with a speculating Top::Check; each with
        // _slice before the precision and the span after P when sliced), whose spec buffer holds lev.p x nrhs); XS (the separator system's solution) is lev.p x nrhs, read
        // at partitions j0 − 1 .. j0 + p; X, F (and X0) hold n rows of ncols columns at their
        // leading dimensions (and row −1 of DL and X0 with span.prev).
        let tiles = if matches!(top, Top::Update { .. }) {
            5
        } else {
            4
        };
        unsafe { launch.launch(self.tile_cfg(span.own as usize, tiles, ncols)) }?;
        Ok(())
    }

    /// A system without levels: one CTA solves it in `out` (the right-hand sides are first
    /// copied there).
    fn launch_bottom_only(
        &self,
        ncols: usize,
        rhs: DevCols,
        out: DevCols,
    ) -> Result<(), DeviceError> {
        if out.ptr != rhs.ptr {
            // SAFETY: both hold ncols columns of n rows.
            unsafe { copy_cols::<T>(&self.stream, out, rhs, self.a.n, ncols)? };
        }
        self.launch_base(self.a, out, ncols as i32)
    }

    /// The bottom: one CTA solves the system `a` for `f` in place.
    fn launch_base(&self, a: DevMatrix, f: DevCols, nrhs_i: i32) -> Result<(), DeviceError> {
        let (n_b, ldf) = (a.n as i64, f.ld as i64);
        let cfg = LaunchConfig {
            grid_dim: (1, 1, 1),
            block_dim: (128, 1, 1),
            shared_mem_bytes: (a.n * (5 * sz::<T>() + 1)) as u32,
        };
        let mut launch = self.stream.launch_builder(&self.funcs.base);
        launch
            .arg(&n_b)
            .arg(&a.dl)
            .arg(&a.d)
            .arg(&a.du)
            .arg(&f.ptr)
            .arg(&ldf)
            .arg(&nrhs_i)
            .arg(&self.flags);
        // SAFETY: arguments match gtsv_base_{s,d}; n_b <= base_n rows fit the shared arrays
        // requested (5 arrays of T and one of bytes).
        unsafe { launch.launch(cfg) }?;
        Ok(())
    }

    /// The levels from `t` (>= 1) down, the bottom included, in one CTA (`gtsv_tail`): each
    /// system is reduced and, after the bottom's solve, overwritten by its solution as the
    /// level kernels would.
    fn launch_tail(&self, t: usize, nrhs_i: i32) -> Result<(), DeviceError> {
        let count = self.levels.len() - t;
        debug_assert!(t >= 1 && count <= TAIL_MAX_LEVELS);
        let mut sys = TailSystems {
            levels: count as i64,
            ..TailSystems::default()
        };
        for (i, lev) in self.levels[t - 1..].iter().enumerate() {
            sys.n[i] = lev.p as i64;
            sys.dl[i] = lev.next.dl;
            sys.d[i] = lev.next.d;
            sys.du[i] = lev.next.du;
            sys.f[i] = lev.next_f;
        }
        let bottom = self.levels.last().expect("a tail has levels").p;
        let cfg = LaunchConfig {
            grid_dim: (1, 1, 1),
            block_dim: (256, 1, 1),
            shared_mem_bytes: (bottom * (5 * sz::<T>() + 1)) as u32,
        };
        let mut launch = self.stream.launch_builder(&self.funcs.tail);
        launch
            .arg(&sys)
            .arg(&nrhs_i)
            .arg(&self.scratch)
            .arg(&self.flags);
        // SAFETY: arguments match gtsv_tail_{s,d}_m{m}; system i + 1 is system i's separator
        // system (its partition count), every F holds nrhs columns at leading dimension n;
        // the scratch holds 4 + 2 nrhs entries per partition of the first system
        // (work_layout); the bottom's shared arrays are requested as for gtsv_base.
        unsafe { launch.launch(cfg) }?;
        Ok(())
    }

    /// A flat grid for the row-wise kernels: enough CTAs to fill the GPU, no more.
    fn rows_cfg(&self) -> LaunchConfig {
        let ctas = self
            .a
            .n
            .div_ceil(256)
            .min(8 * self.gpu.info.multiprocessors.max(1) as usize)
            .max(1);
        LaunchConfig {
            grid_dim: (ctas as u32, 1, 1),
            block_dim: (256, 1, 1),
            shared_mem_bytes: 0,
        }
    }

    /// The top level's partition count (the plan has levels).
    pub(super) fn top_partitions(&self) -> usize {
        self.levels[0].p
    }

    /// The speculating check's separator right-hand sides become level 0's, for a refinement
    /// step that starts one level down.
    pub(super) fn take_spec(&mut self) {
        std::mem::swap(&mut self.levels[0].next_f, &mut self.spec);
    }

    /// Clears the flags and summaries before a kernel accumulates into them.
    pub(super) fn clear(&mut self) -> Result<(), DeviceError> {
        let cs = self.stream.cu_stream();
        // SAFETY: the summaries and the flags' element after them lie inside this plan's
        // allocation (work_layout); the stream orders the writes.
        unsafe { cu::memset_d8_async(self.sums, 0, (6 * self.nrhs.max(1) + 1) * sz::<T>(), cs)? };
        Ok(())
    }

    /// Reads the flags and the summaries of `ncols` columns (waits for the stream).
    pub(super) fn read_sums(
        &mut self,
        ncols: usize,
    ) -> Result<(i32, Vec<Residual<T>>), DeviceError> {
        let (flags, sums, _) = self.read_both_sums(ncols)?;
        Ok((flags, sums))
    }

    /// [`Self::read_sums`] for both sets of summaries: the check's and the old residual's of a
    /// refinement step ([`Top::Update`]).
    #[allow(clippy::type_complexity)]
    pub(super) fn read_both_sums(
        &mut self,
        ncols: usize,
    ) -> Result<(i32, Vec<Residual<T>>, Vec<Residual<T>>), DeviceError> {
        let k = self.nrhs.max(1);
        let s = match self.host_sums.get_mut(..6 * k + 1) {
            Some(s) => s,
            None => {
                return Err(DeviceError::Driver(
                    "gtsv: summaries read before their host buffer was allocated".into(),
                ))
            }
        };
        let cs = self.stream.cu_stream();
        // SAFETY: the summaries and the flags' element lie inside this plan's allocation; the
        // host buffer outlives the synchronize below.
        unsafe { cu::memcpy_dtoh_async(&mut s[..], self.sums, cs)? };
        let s = &*s;
        self.stream.synchronize()?;
        // The kernels' int flags are the first 4 bytes of the last element (T has 4 or 8).
        // SAFETY: an i32 is no larger than T and every bit pattern is a valid i32.
        let flags = [unsafe { std::mem::transmute_copy::<T, i32>(&s[6 * k]) }];
        let finite = flags[0] & 2 == 0;
        let set = |at: usize| -> Vec<Residual<T>> {
            (0..ncols)
                .map(|c| (s[at + c], s[at + k + c], s[at + 2 * k + c], finite))
                .collect()
        };
        Ok((flags[0], set(0), set(3 * k)))
    }

    /// The accurate residual summaries of `ncols` columns of `x` against `f`, storing
    /// `r = f − A x` into `r` if given.
    fn residual(
        &mut self,
        ncols: usize,
        x: DevCols,
        f: DevCols,
        r: Option<DevCols>,
    ) -> Result<Vec<Residual<T>>, DeviceError> {
        self.clear()?;
        let a = self.a;
        let (n_i, ncols_i, ldx, ldf) = (a.n as i64, ncols as i32, x.ld as i64, f.ld as i64);
        let (r_ptr, ldr) = r.map_or((0u64, 1i64), |r| (r.ptr, r.ld as i64));
        let (rmax, smax, bmax) = self.sums_ptrs();
        let flags = self.flags;
        let cfg = self.rows_cfg();
        let mut launch = self.stream.launch_builder(&self.funcs.residual);
        launch
            .arg(&n_i)
            .arg(&a.dl)
            .arg(&a.d)
            .arg(&a.du)
            .arg(&x.ptr)
            .arg(&ldx)
            .arg(&f.ptr)
            .arg(&ldf)
            .arg(&ncols_i)
            .arg(&r_ptr)
            .arg(&ldr)
            .arg(&rmax)
            .arg(&smax)
            .arg(&bmax)
            .arg(&flags);
        // SAFETY: arguments match gtsv_residual_{s,d}; x, f (and r) hold ncols columns of n rows.
        unsafe { launch.launch(cfg) }?;
        Ok(self.read_sums(ncols)?.1)
    }

    /// `r := x + r` over the plan's n × nrhs columns.
    fn add_into(&self, x: DevCols, r: DevCols) -> Result<(), DeviceError> {
        let (n_i, nrhs_i, ldx, ldr) = (self.a.n as i64, self.nrhs as i32, x.ld as i64, r.ld as i64);
        let mut launch = self.stream.launch_builder(&self.funcs.add);
        launch
            .arg(&n_i)
            .arg(&nrhs_i)
            .arg(&x.ptr)
            .arg(&ldx)
            .arg(&r.ptr)
            .arg(&ldr);
        // SAFETY: arguments match gtsv_add_{s,d}; x and r hold nrhs columns of n rows.
        unsafe { launch.launch(self.rows_cfg()) }?;
        Ok(())
    }

    /// Solves for `rhs` (n × nrhs on the device): `Ok(Ok(()))` when the answer in `self.x` is
    /// accepted, `Ok(Err)` when it is rejected.
    ///
    /// When some column's residual is above LAPACK's level ([`super::wants_refinement`]), up to
    /// [`refine_steps`] steps of iterative refinement run here, as [`super::refine`] does on
    /// the host: `r = f − A x` accurately, `A δ = r` by the same pipeline, and `x + δ` kept for
    /// a column only where it lowers that column's residual.
    ///
    /// `meanwhile` runs on the host while the GPU solves (before the first wait).
    pub(super) fn run(
        &mut self,
        rhs: DevCols,
        meanwhile: impl FnOnce(),
    ) -> Result<Result<(), Reject>, DeviceError> {
        let (n, nrhs) = (self.a.n, self.nrhs);
        let device_check = !self.levels.is_empty();
        if let Err(r) = self.reserve_host_sums() {
            return Ok(Err(r));
        }
        let x = self.x_cols();
        self.clear()?;
        let top = if device_check { Top::Check } else { Top::Solve };
        self.launch(nrhs, rhs, x, top)?;
        meanwhile();
        let (flags, sums) = self.read_sums(nrhs)?;
        if flags & 1 != 0 {
            return Ok(Err(Reject::ZeroPivot));
        }
        // Without levels (one CTA solved it) nothing was checked yet.
        let mut checks = if device_check {
            sums
        } else {
            self.residual(nrhs, x, rhs, None)?
        };
        if checks.iter().any(|c| !c.3) {
            return Ok(Err(Reject::NonFinite));
        }
        let mut stalled = vec![false; nrhs];
        let mut steps = 0;
        // The speculating check left the first step's top-level separator system ready.
        let mut spec_ready = device_check && self.o.speculate;
        while steps < refine_steps() {
            let cols = columns_to_refine(&checks, &stalled);
            if cols.is_empty() {
                break;
            }
            // All columns are corrected together (the kernels take a column count); only those
            // in `cols` may change. The pivoting depends on A only, so the correction's solve
            // meets no zero pivot the first one did not.
            let (x, rc) = (self.x_cols(), DevCols { ptr: self.r, ld: n });
            let (cand, old, new) = if self.levels.is_empty() {
                // One CTA solves A δ = r in place; then r := x + δ and its residual.
                let old = self.residual(nrhs, x, rhs, Some(rc))?;
                self.clear()?;
                self.launch(nrhs, rc, rc, Top::Solve)?;
                self.add_into(x, rc)?;
                (rc, old, self.residual(nrhs, rc, rhs, None)?)
            } else {
                // The top level's kernels evaluate r = f − A x themselves; its back
                // substitution writes x + δ and checks it.
                let xn = DevCols {
                    ptr: self.x_next,
                    ld: n,
                };
                let from_spec = std::mem::take(&mut spec_ready);
                if from_spec {
                    self.take_spec();
                }
                self.clear()?;
                self.launch(nrhs, rhs, xn, Top::Update { x0: x, from_spec })?;
                let (_, new, old) = self.read_both_sums(nrhs)?;
                // Without a top-level reduce, x's accurate summaries are the check's.
                let old = if from_spec { checks.clone() } else { old };
                (xn, old, new)
            };
            steps += 1;
            let better = keep_improved(&cols, &mut checks, &old, &new, &mut stalled);
            if better.len() == nrhs {
                // Every column improved: the candidate becomes the solution.
                let into = if cand.ptr == self.r {
                    &mut self.r
                } else {
                    &mut self.x_next
                };
                std::mem::swap(&mut self.x, into);
            } else {
                for &c in &better {
                    let col = |p: CUdeviceptr| DevCols {
                        ptr: p + (c * n * sz::<T>()) as u64,
                        ld: n,
                    };
                    // SAFETY: column c of both, n elements.
                    unsafe { copy_cols::<T>(&self.stream, col(self.x), col(cand.ptr), n, 1)? };
                }
            }
        }
        self.stream.synchronize()?;
        PHASES.with(|p| {
            let mut v = p.get();
            v.refine_steps = steps;
            p.set(v);
        });
        Ok(judge(checks))
    }
}

/// The columns a refinement step corrects: those not stalled whose residual asks for it.
pub(super) fn columns_to_refine<T: Real>(checks: &[Residual<T>], stalled: &[bool]) -> Vec<usize> {
    (0..checks.len())
        .filter(|&c| !stalled[c] && wants_refinement(&checks[c]))
        .collect()
}

/// One refinement step's verdict per column of `cols`: its summaries become `old` (the
/// accurate residual of the solution it started from), then `new` where that is finite and
/// smaller; the columns that did not improve stall. Returns the improved columns.
pub(super) fn keep_improved<T: Real>(
    cols: &[usize],
    checks: &mut [Residual<T>],
    old: &[Residual<T>],
    new: &[Residual<T>],
    stalled: &mut [bool],
) -> Vec<usize> {
    let mut better = Vec::new();
    for &c in cols {
        checks[c] = old[c];
        if new[c].3 && new[c].0 < checks[c].0 {
            checks[c] = new[c];
            better.push(c);
        } else {
            stalled[c] = true;
        }
    }
    better
}
