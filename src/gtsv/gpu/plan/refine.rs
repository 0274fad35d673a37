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

    /// Reads the flags and the summaries of `ncols` columns (waits for the stream).
    pub(crate) fn read_sums(
        &mut self,
        ncols: usize,
    ) -> Result<(i32, Vec<Residual<T>>), DeviceError> {
        let (flags, sums, _) = self.read_both_sums(ncols)?;
        Ok((flags, sums))
    }

    /// [`Self::read_sums`] for both sets of summaries: the check's and the old residual's of a
    /// refinement step ([`Top::Update`]).
    #[allow(clippy::type_complexity)]
    pub(crate) fn read_both_sums(
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
                .map(|c| Residual {
                    rmax: s[at + c],
                    smax: s[at + k + c],
                    bmax: s[at + 2 * k + c],
                    finite,
                })
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
    pub(crate) fn run(
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
        if checks.iter().any(|c| !c.finite) {
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
pub(crate) fn columns_to_refine<T: Real>(checks: &[Residual<T>], stalled: &[bool]) -> Vec<usize> {
    (0..checks.len())
        .filter(|&c| !stalled[c] && wants_refinement(&checks[c]))
        .collect()
}

/// One refinement step's verdict per column of `cols`: its summaries become `old` (the
/// accurate residual of the solution it started from), then `new` where that is finite and
/// smaller; the columns that did not improve stall. Returns the improved columns.
pub(crate) fn keep_improved<T: Real>(
    cols: &[usize],
    checks: &mut [Residual<T>],
    old: &[Residual<T>],
    new: &[Residual<T>],
    stalled: &mut [bool],
) -> Vec<usize> {
    let mut better = Vec::new();
    for &c in cols {
        checks[c] = old[c];
        if new[c].finite && new[c].rmax < checks[c].rmax {
            checks[c] = new[c];
            better.push(c);
        } else {
            stalled[c] = true;
        }
    }
    better
}
