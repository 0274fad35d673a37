//! Systems too large for the GPU memory allowed whose top-level separator system still fits:
//! the top level streams through the GPU in slices, the levels below stay in device memory
//! ([`solve_streamed`]). The partitions, their arithmetic and the refinement are the in-core
//! pipeline's, so the answer is the one an unlimited GPU would give; only the transfers differ.
//!
//! A slice is the rows of `own` consecutive top-level partitions and, where more follow, the
//! next partition's rows (its first rows' couplings are what the slice's last separator row
//! needs), one row before them (the coupling to the previous slice) in the buffers' first
//! element. Each pass over the top level (the reduce, the checking back substitution, a
//! refinement step's) uploads every slice in turn; only the back substitutions download, into
//! a host copy of `X` that reaches `B` once the answer is accepted.

use super::*;

/// Fewest top-level partitions per slice worth streaming (a floor set by judgment, not by
/// measurement): with fewer, every slice's launches and uploads would be tiny, and the chunked
/// solve takes over.
const MIN_SLICE_PARTITIONS: usize = 1 << 12;

/// Device bytes of the slice buffers for slices of `own` partitions (DL, D, DU with one row
/// before, F and X, and X0 with one row before).
fn slice_bytes<T>(own: usize, nrhs: usize, o: &GpuOptions) -> u64 {
    let rows = (own + 1) * o.m + 1;
    ((3 + 3 * nrhs) * rows * sz::<T>()) as u64
}

/// Device bytes of a streamed solve with slices of `own` top-level partitions: the levels'
/// work buffer and the slice buffers.
pub fn streamed_bytes<T>(n: usize, nrhs: usize, o: &GpuOptions, own: usize) -> u64 {
    streamed_work_bytes::<T>(n, nrhs, o) + slice_bytes::<T>(own, nrhs, o)
}

/// The most top-level partitions per slice whose solve fits in `limit` ([`streamed_bytes`]);
/// `None` when fewer than [`MIN_SLICE_PARTITIONS`] fit (or all of them would: the system is
/// then solved whole).
pub fn slice_partitions<T>(n: usize, nrhs: usize, o: &GpuOptions, limit: u64) -> Option<usize> {
    let room = limit.checked_sub(streamed_bytes::<T>(n, nrhs, o, 0))?;
    let per = slice_bytes::<T>(1, nrhs, o) - slice_bytes::<T>(0, nrhs, o);
    let own = (room / per) as usize;
    let all = (n + 1).div_ceil(o.m);
    (own >= MIN_SLICE_PARTITIONS && own < all).then_some(own)
}

/// The device buffers of one slice (see the module comment), reused by every slice.
struct SliceBufs<T> {
    dl: CudaSlice<T>,
    d: CudaSlice<T>,
    du: CudaSlice<T>,
    f: CudaSlice<T>,
    x: CudaSlice<T>,
    x0: CudaSlice<T>,
    /// Rows a buffer holds (F's and X's leading dimension; X0's is one more).
    cap: usize,
}

/// Solves on the GPU for host arrays as [`solve`] does, streaming the top level in slices of
/// `own` partitions ([`slice_partitions`] of the budget). `Err`: the GPU could not run it
/// (nothing changed); `Ok(Err)`: the answer was rejected (nothing changed); `Ok(Ok)`: `X` is
/// in `b`.
#[allow(clippy::too_many_arguments)]
pub fn solve_streamed<T: Real>(
    o: &GpuOptions,
    dl: &[T],
    d: &[T],
    du: &[T],
    b: &mut [T],
    ldb: usize,
    nrhs: usize,
    own: usize,
) -> Result<Result<(), Reject>, DeviceError> {
    let n = d.len();
    let call = Call::begin(o, n, nrhs, streamed_bytes::<T>(n, nrhs, o, own))?;
    let (gpu, stream) = (call.gpu, call.stream.clone());
    let t0 = Instant::now();
    let plan = Plan::<T>::new_streamed(gpu, stream.clone(), o, n, nrhs)?;
    let p = plan.top_partitions();
    let cap = (own + 1) * o.m;
    // SAFETY (allocations): every element a kernel reads is uploaded first.
    let bufs = unsafe {
        SliceBufs {
            dl: stream.alloc::<T>(cap + 1)?,
            d: stream.alloc::<T>(cap)?,
            du: stream.alloc::<T>(cap)?,
            f: stream.alloc::<T>(cap * nrhs)?,
            x: stream.alloc::<T>(cap * nrhs)?,
            x0: stream.alloc::<T>((cap + 1) * nrhs)?,
            cap,
        }
    };
    let io = SliceIo {
        staging: Staging::<T>::new(gpu, o.staging_elems.max(1024))?,
        stream: &stream,
        bufs: &bufs,
        dl,
        d,
        du,
        b,
        ldb,
        nrhs,
    };
    let mut passes = Passes {
        plan,
        io,
        own,
        m: o.m,
        p,
    };
    // Host memory first (issue #23): the solution, the summaries' copy, the refinement's state.
    let mut x = match host::<T>(n * nrhs) {
        Ok(x) => x,
        Err(r) => return Ok(Err(r)),
    };
    if let Err(r) = passes.plan.reserve_host_sums() {
        return Ok(Err(r));
    }
    let mut state = match RefineState::try_new(nrhs) {
        Ok(s) => s,
        Err(r) => return Ok(Err(r)),
    };
    passes.check(&mut x)?;
    let sums = passes.plan.read_sums()?;
    if sums.flags & 1 != 0 {
        return Ok(Err(Reject::ZeroPivot));
    }
    for (c, check) in state.checks.iter_mut().enumerate() {
        *check = sums.check(c);
    }
    if state.checks.iter().any(|c| !c.finite) {
        return Ok(Err(Reject::NonFinite));
    }
    let steps = passes.refine(o, &mut x, &mut state)?;
    stream.synchronize()?;
    PHASES.with(|ph| {
        ph.set(Phases {
            solve: t0.elapsed().as_secs_f64(),
            chunks: passes.slices().count(),
            refine_steps: steps,
            ..Phases::default()
        })
    });
    if let Err(r) = judge(state.checks.iter().copied()) {
        return Ok(Err(r));
    }
    let b = passes.io.b;
    for col in 0..nrhs {
        par_copy(&mut b[col * ldb..col * ldb + n], &x[col * n..(col + 1) * n]);
    }
    Ok(Ok(()))
}

/// One streamed solve's passes over the top level, each uploading every slice in turn.
struct Passes<'a, T> {
    plan: Plan<T>,
    io: SliceIo<'a, T>,
    /// Partitions per slice (the last may have fewer).
    own: usize,
    m: usize,
    /// The top level's partitions.
    p: usize,
}

impl<T: Real> Passes<'_, T> {
    /// Each slice's first partition and partition count.
    fn slices(&self) -> impl Iterator<Item = (usize, usize)> {
        let (p, own) = (self.p, self.own);
        (0..p).step_by(own).map(move |j0| (j0, own.min(p - j0)))
    }

    /// The top-level slice of partitions `j0 .. j0 + k` in the slice buffers.
    fn slice(&self, j0: usize, k: usize) -> TopSlice {
        let (m, n) = (self.m, self.io.d.len());
        let rows = ((j0 + k + 1) * m).min(n) - j0 * m;
        TopSlice {
            a: slice_matrix(self.io.bufs, self.io.stream, rows),
            j0,
            own: k,
            more: j0 + k < self.p,
        }
    }

    /// The slice buffers' F, X and X0 (X0 from its second row: the first holds the row before).
    fn cols(&self) -> (DevCols, DevCols, DevCols) {
        let (bufs, stream) = (self.io.bufs, self.io.stream);
        let col = |ptr: CUdeviceptr, ld: usize| DevCols { ptr, ld };
        (
            col(addr(&bufs.f, stream), bufs.cap),
            col(addr(&bufs.x, stream), bufs.cap),
            col(addr(&bufs.x0, stream) + sz::<T>() as u64, bufs.cap + 1),
        )
    }

    /// The checking pass: reduce every slice, solve below, back-substitute every slice; its
    /// solution goes to `x` (n × nrhs on the host), its summaries stay in the plan.
    fn check(&mut self, x: &mut [T]) -> Result<(), DeviceError> {
        let (m, n, nrhs) = (self.m, self.io.d.len(), self.io.nrhs);
        let (f, xc, _) = self.cols();
        self.plan.clear()?;
        for (j0, k) in self.slices() {
            let s = self.slice(j0, k);
            self.io.upload(&s, m, None)?;
            self.plan.reduce_top(&s, nrhs, f, None)?;
        }
        self.plan.solve_below(nrhs)?;
        for (j0, k) in self.slices() {
            let s = self.slice(j0, k);
            self.io.upload(&s, m, None)?;
            self.plan.backsub_top(&s, nrhs, f, xc, Top::Check)?;
            self.io.download(&s, m, n, x)?;
        }
        Ok(())
    }

    /// A refinement step from `x`: its candidate goes to `cand`, its summaries (the
    /// candidate's, and `x`'s unless `from_spec`) stay in the plan.
    fn refine_step(&mut self, x: &[T], cand: &mut [T], from_spec: bool) -> Result<(), DeviceError> {
        let (m, n, nrhs) = (self.m, self.io.d.len(), self.io.nrhs);
        let (f, xc, x0c) = self.cols();
        if from_spec {
            self.plan.take_spec();
        }
        self.plan.clear()?;
        if !from_spec {
            for (j0, k) in self.slices() {
                let s = self.slice(j0, k);
                self.io.upload(&s, m, Some((x, n)))?;
                self.plan.reduce_top(&s, nrhs, f, Some(x0c))?;
            }
        }
        self.plan.solve_below(nrhs)?;
        for (j0, k) in self.slices() {
            let s = self.slice(j0, k);
            self.io.upload(&s, m, Some((x, n)))?;
            let top = Top::Update { x0: x0c, from_spec };
            self.plan.backsub_top(&s, nrhs, f, xc, top)?;
            self.io.download(&s, m, n, cand)?;
        }
        Ok(())
    }

    /// Refinement, as `Plan::run`'s with levels: every column corrected together, kept where
    /// it lowers the residual. Returns the steps taken.
    fn refine(
        &mut self,
        o: &GpuOptions,
        x: &mut [T],
        state: &mut RefineState<T>,
    ) -> Result<usize, DeviceError> {
        let n = self.io.d.len();
        let mut steps = 0;
        let mut spec_ready = o.speculate;
        let mut cand: Vec<T> = Vec::new();
        while steps < refine_steps() {
            if state.next_step().is_empty() {
                break;
            }
            if cand.is_empty() {
                // Refinement is optional: without memory for the candidate, the answer is
                // judged as it is.
                match host::<T>(x.len()) {
                    Ok(v) => cand = v,
                    Err(_) => break,
                }
            }
            let from_spec = std::mem::take(&mut spec_ready);
            self.refine_step(x, &mut cand, from_spec)?;
            let sums = self.plan.read_sums()?;
            // Without a top-level reduce, x's accurate summaries are the check's.
            if !from_spec {
                state.start_from(|_, c| sums.old(c));
            }
            state.keep_improved(|_, c| sums.check(c));
            steps += 1;
            for (_, c) in state.improved() {
                x[c * n..(c + 1) * n].copy_from_slice(&cand[c * n..(c + 1) * n]);
            }
        }
        Ok(steps)
    }
}

/// The slice's matrix as the kernels see it: DL's address is that of the slice's first row's
/// coupling to the row before (the buffer's second element).
fn slice_matrix<T>(bufs: &SliceBufs<T>, stream: &CudaStream, rows: usize) -> DevMatrix {
    DevMatrix {
        n: rows,
        dl: addr(&bufs.dl, stream) + sz::<T>() as u64,
        d: addr(&bufs.d, stream),
        du: addr(&bufs.du, stream),
    }
}

/// The transfers of one streamed solve.
struct SliceIo<'a, T> {
    staging: Staging<T>,
    stream: &'a Arc<CudaStream>,
    bufs: &'a SliceBufs<T>,
    dl: &'a [T],
    d: &'a [T],
    du: &'a [T],
    b: &'a mut [T],
    ldb: usize,
    nrhs: usize,
}

impl<T: Real> SliceIo<'_, T> {
    /// Uploads slice `s`'s rows of A and B (and of `x0`, the current solution with its leading
    /// dimension, for a refinement step), each with the row before where there is one.
    fn upload(
        &mut self,
        s: &TopSlice,
        m: usize,
        x0: Option<(&[T], usize)>,
    ) -> Result<(), DeviceError> {
        let (r0, rows) = (s.j0 * m, s.a.n);
        let (stream, bufs) = (self.stream, self.bufs);
        let at = |buf: &CudaSlice<T>, e: usize| addr(buf, stream) + (e * sz::<T>()) as u64;
        // DL's entry for row r couples it to row r − 1: rows r0 − 1 .. r0 + rows − 1 of it
        // (from r0 for the first slice, which has no row before).
        let lo = r0.saturating_sub(1);
        self.staging.upload(
            stream,
            &self.dl[lo..r0 + rows - 1],
            at(&bufs.dl, lo + 1 - r0),
        )?;
        self.staging
            .upload(stream, &self.d[r0..r0 + rows], at(&bufs.d, 0))?;
        self.staging
            .upload(stream, &self.du[r0..r0 + rows - 1], at(&bufs.du, 0))?;
        for col in 0..self.nrhs {
            let src = &self.b[col * self.ldb + r0..col * self.ldb + r0 + rows];
            self.staging
                .upload(stream, src, at(&bufs.f, col * bufs.cap))?;
            if let Some((x0, ld)) = x0 {
                let src = &x0[col * ld + lo..col * ld + r0 + rows];
                let first = col * (bufs.cap + 1) + 1 - (r0 - lo);
                self.staging.upload(stream, src, at(&bufs.x0, first))?;
            }
        }
        Ok(())
    }

    /// Downloads the slice's own rows of the solution into `x` (leading dimension `n`).
    fn download(
        &mut self,
        s: &TopSlice,
        m: usize,
        n: usize,
        x: &mut [T],
    ) -> Result<(), DeviceError> {
        let r0 = s.j0 * m;
        let rows = ((s.j0 + s.own) * m).min(n) - r0;
        for col in 0..self.nrhs {
            let src = addr(&self.bufs.x, self.stream) + (col * self.bufs.cap * sz::<T>()) as u64;
            let dst = &mut x[col * n + r0..col * n + r0 + rows];
            self.staging.download(self.stream, src, dst)?;
        }
        Ok(())
    }
}
