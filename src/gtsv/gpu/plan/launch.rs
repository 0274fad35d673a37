//! The launch sequence of one solve: the top level, the levels below, the tail kernel and the
//! bottom, each kernel with its launch shape.

use super::*;

/// What the top level's back substitution does besides solving.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Top {
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

/// The partitions one level kernel answers for: partitions `j0 ..` of system `a` (a whole
/// level, or a slice of the top level), reduced into (or solved from) the separator system of
/// `lev`. The kernel sees `seen` partitions: the span's own and, for a slice with more after
/// it, the next one.
struct Partitions<'a> {
    a: DevMatrix,
    lev: &'a Level,
    seen: usize,
    span: Span,
    j0: usize,
}

impl<'a> Partitions<'a> {
    /// Every partition of `a`, the system whose separator system is `lev`'s.
    fn whole(a: DevMatrix, lev: &'a Level) -> Self {
        let p = lev.p;
        Partitions {
            a,
            lev,
            seen: p,
            span: Span {
                own: p as i64,
                ldp: p as i64,
                prev: 0,
            },
            j0: 0,
        }
    }

    /// The partitions of slice `s` of the top level (whose separator system is `lev`'s).
    fn slice(s: &TopSlice, lev: &'a Level) -> Self {
        Partitions {
            a: s.a,
            lev,
            seen: s.own + s.more as usize,
            span: Span {
                own: s.own as i64,
                ldp: lev.p as i64,
                prev: (s.j0 > 0) as i32,
            },
            j0: s.j0,
        }
    }

    /// Whether a slice kernel (with a [`Span`] argument) runs them.
    fn sliced(&self) -> bool {
        self.span.own != self.seen as i64 || self.span.prev != 0
    }

    /// Their first entry in a separator-system array (`ptr`, entries of `T`).
    fn at<T>(&self, ptr: CUdeviceptr) -> CUdeviceptr {
        ptr + (self.j0 * sz::<T>()) as u64
    }
}

/// A slice of the top level's rows as one launch sees it: the rows of partitions `j0 ..
/// j0 + own` and, when more follow, the next partition's rows (`a.n` counts them all). With
/// `prev`, DL's address is that of row 0's coupling to the row before, which the slice's
/// buffers hold at index −1 (as X0's).
#[derive(Clone, Copy, Debug)]
pub(crate) struct TopSlice {
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
}

impl<T: Real> Plan<T> {
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
    pub(super) fn launch(
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
    pub(crate) fn reduce_top(
        &self,
        s: &TopSlice,
        ncols: usize,
        rhs: DevCols,
        x0: Option<DevCols>,
    ) -> Result<(), DeviceError> {
        self.reduce_level(&Partitions::slice(s, &self.levels[0]), rhs, ncols, x0)
    }

    /// Reduces `part` for `ncols` columns of `f` into its rows of the separator system; with
    /// `x0`, as [`Self::reduce_top`] does.
    fn reduce_level(
        &self,
        part: &Partitions,
        f: DevCols,
        ncols: usize,
        x0: Option<DevCols>,
    ) -> Result<(), DeviceError> {
        let (a, lev, span, sliced) = (part.a, part.lev, part.span, part.sliced());
        let funcs = self.part_funcs(sliced);
        let (n_l, p_l, ldf, nrhs_i) = (a.n as i64, part.seen as i64, f.ld as i64, ncols as i32);
        let at = |ptr: CUdeviceptr| part.at::<T>(ptr);
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
    pub(crate) fn solve_below(&self, ncols: usize) -> Result<(), DeviceError> {
        let nrhs_i = ncols as i32;
        let upper = self.tail.unwrap_or(self.levels.len());
        for l in 1..upper {
            let (a, f) = self.level_system(l);
            self.reduce_level(&Partitions::whole(a, &self.levels[l]), f, ncols, None)?;
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
            let part = Partitions::whole(a, &self.levels[l]);
            self.backsub_level(&part, f, f, ncols, Top::Solve)?;
        }
        Ok(())
    }

    /// The back substitution of a slice of the top level: its rows of the solution go to
    /// `out`; `top` says what else it does.
    pub(crate) fn backsub_top(
        &self,
        s: &TopSlice,
        ncols: usize,
        rhs: DevCols,
        out: DevCols,
        top: Top,
    ) -> Result<(), DeviceError> {
        let part = Partitions::slice(s, &self.levels[0]);
        self.backsub_level(&part, rhs, out, ncols, top)
    }

    /// The back substitution of `part` for `ncols` columns of `f` into `x`, from its rows of
    /// the separator system's solution; `top` says what else it does.
    fn backsub_level(
        &self,
        part: &Partitions,
        f: DevCols,
        x: DevCols,
        ncols: usize,
        top: Top,
    ) -> Result<(), DeviceError> {
        let (a, lev, span, sliced) = (part.a, part.lev, part.span, part.sliced());
        let funcs = self.part_funcs(sliced);
        let flags = self.flags;
        let (rmax, smax, bmax) = self.sums_ptrs();
        let (n_l, p_l, ldf, ldx, nrhs_i) = (
            a.n as i64,
            part.seen as i64,
            f.ld as i64,
            x.ld as i64,
            ncols as i32,
        );
        let at = |ptr: CUdeviceptr| part.at::<T>(ptr);
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
    pub(super) fn rows_cfg(&self) -> LaunchConfig {
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
}
