//! The residual check's summaries and iterative refinement on the device.

use super::*;

impl<T: Real> Plan<T> {
    /// The speculating check's separator right-hand sides become level 0's, for a refinement
    /// step that starts one level down.
    pub(crate) fn take_spec(&mut self) {
        std::mem::swap(&mut self.levels[0].next_f, &mut self.spec);
    }

    /// Clears the flags and summaries before a kernel accumulates into them.
    pub(crate) fn clear(&mut self) -> Result<(), DeviceError> {
        let cs = self.stream.cu_stream();
        // SAFETY: the summaries and the flags' element after them lie inside this plan's
        // allocation (work_layout); the stream orders the writes.
        unsafe { cu::memset_d8_async(self.sums, 0, (6 * self.nrhs.max(1) + 1) * sz::<T>(), cs)? };
        Ok(())
    }

    /// Reads the flags and the summaries (waits for the stream).
    pub(crate) fn read_sums(&mut self) -> Result<Summaries<'_, T>, DeviceError> {
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
        self.stream.synchronize()?;
        Ok(self.summaries())
    }

    /// The summaries and flags last read by [`Self::read_sums`].
    fn summaries(&self) -> Summaries<'_, T> {
        let k = self.nrhs.max(1);
        let raw = &self.host_sums[..6 * k + 1];
        // The kernels' int flags are the first 4 bytes of the last element (T has 4 or 8).
        // SAFETY: an i32 is no larger than T and every bit pattern is a valid i32.
        let flags = unsafe { std::mem::transmute_copy::<T, i32>(&raw[6 * k]) };
        Summaries { flags, raw, k }
    }

    /// The accurate residual summaries of `ncols` columns of `x` against `f`, storing
    /// `r = f − A x` into `r` if given.
    fn residual(
        &mut self,
        ncols: usize,
        x: DevCols,
        f: DevCols,
        r: Option<DevCols>,
    ) -> Result<Summaries<'_, T>, DeviceError> {
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
        self.read_sums()
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

    /// Solves for `rhs` (n × nrhs on the device): `Ok(Ok(x))` when the answer is accepted, with
    /// where it is (`self.x`, or `rhs` itself where the window solve answered in place),
    /// `Ok(Err)` when it is rejected (`rhs` then holds what it held before).
    ///
    /// When some column's residual is above LAPACK's level ([`super::wants_refinement`]), up to
    /// [`refine_steps`] steps of iterative refinement run here, as [`super::refine`] does on
    /// the host: `r = f − A x` accurately, `A δ = r` by the same pipeline, and `x + δ` kept for
    /// a column only where it lowers that column's residual.
    ///
    /// `meanwhile` runs on the host while the GPU solves (before the first wait).
    pub(crate) fn run(
        &mut self,
        rhs: DevCols,
        meanwhile: impl FnOnce(),
    ) -> Result<Result<DevCols, Reject>, DeviceError> {
        let (n, nrhs) = (self.a.n, self.nrhs);
        let device_check = !self.levels.is_empty();
        if let Err(r) = self.reserve_host_sums() {
            return Ok(Err(r));
        }
        let mut state = match RefineState::try_new(nrhs) {
            Ok(s) => s,
            Err(r) => return Ok(Err(r)),
        };
        let x = self.x_cols();
        let mut meanwhile = Some(meanwhile);
        let window = self.try_window(rhs, &mut meanwhile)?;
        PHASES.with(|p| {
            let mut v = p.get();
            v.window = window;
            v.refine_steps = 0;
            p.set(v);
        });
        if window {
            return Ok(Ok(rhs));
        }
        self.clear()?;
        let top = if device_check { Top::Check } else { Top::Solve };
        self.launch(nrhs, rhs, x, top)?;
        if let Some(f) = meanwhile.take() {
            f();
        }
        if self.read_sums()?.flags & 1 != 0 {
            return Ok(Err(Reject::ZeroPivot));
        }
        // Without levels (one CTA solved it) nothing was checked yet.
        let sums = if device_check {
            self.summaries()
        } else {
            self.residual(nrhs, x, rhs, None)?
        };
        for (c, check) in state.checks.iter_mut().enumerate() {
            *check = sums.check(c);
        }
        if state.checks.iter().any(|c| !c.finite) {
            return Ok(Err(Reject::NonFinite));
        }
        let mut steps = 0;
        // The speculating check left the first step's top-level separator system ready.
        let mut spec_ready = device_check && self.o.speculate;
        while steps < refine_steps() {
            if state.next_step().is_empty() {
                break;
            }
            // All columns are corrected together (the kernels take a column count); only those
            // of the step may change. The pivoting depends on A only, so the correction's solve
            // meets no zero pivot the first one did not.
            let (x, rc) = (self.x_cols(), DevCols { ptr: self.r, ld: n });
            let cand = if self.levels.is_empty() {
                // One CTA solves A δ = r in place; then r := x + δ and its residual.
                let old = self.residual(nrhs, x, rhs, Some(rc))?;
                state.start_from(|_, c| old.check(c));
                self.clear()?;
                self.launch(nrhs, rc, rc, Top::Solve)?;
                self.add_into(x, rc)?;
                let new = self.residual(nrhs, rc, rhs, None)?;
                state.keep_improved(|_, c| new.check(c));
                rc
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
                let sums = self.read_sums()?;
                // Without a top-level reduce, x's accurate summaries are the check's.
                if !from_spec {
                    state.start_from(|_, c| sums.old(c));
                }
                state.keep_improved(|_, c| sums.check(c));
                xn
            };
            steps += 1;
            if state.improved().count() == nrhs {
                // Every column improved: the candidate becomes the solution.
                let into = if cand.ptr == self.r {
                    &mut self.r
                } else {
                    &mut self.x_next
                };
                std::mem::swap(&mut self.x, into);
            } else {
                for (_, c) in state.improved() {
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
        Ok(judge(state.checks.iter().copied()).map(|()| self.x_cols()))
    }
}

/// The summaries and flags of the device check, as read back ([`Plan::read_sums`]): per
/// column, the check's (or a refinement step's candidate's) and a refinement step's old
/// residual's ([`Top::Update`]).
pub(crate) struct Summaries<'a, T> {
    /// Bit 0: a zero pivot; bit 1: a value that was not finite.
    pub(crate) flags: i32,
    /// rmax | smax | bmax, `k` each, twice, then the flags.
    raw: &'a [T],
    k: usize,
}

impl<T: Real> Summaries<'_, T> {
    fn summary(&self, at: usize, c: usize) -> Residual<T> {
        let (s, k) = (self.raw, self.k);
        Residual {
            rmax: s[at + c],
            smax: s[at + k + c],
            bmax: s[at + 2 * k + c],
            finite: self.flags & 2 == 0,
        }
    }

    /// Column `c`'s summary of the check, or of a refinement step's candidate.
    pub(crate) fn check(&self, c: usize) -> Residual<T> {
        self.summary(0, c)
    }

    /// Column `c`'s summary of the solution a refinement step started from.
    pub(crate) fn old(&self, c: usize) -> Residual<T> {
        self.summary(3 * self.k, c)
    }
}
