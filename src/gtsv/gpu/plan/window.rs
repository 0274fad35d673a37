//! The one-pass window solve (`gtsv_window`, truncated SPIKE): tried first where the top level's
//! separator system is strongly diagonally dominant, it reads the system once and writes `X`
//! once, with no levels below; where a CTA finds it unsuited, or the check wants refinement,
//! the full recursion runs instead.
//!
//! `X` goes into the right-hand sides in place, so that an accepted answer needs no copy of `X`
//! into `B` (a pass over both, a fifth of the solve at n = 2^26): the kernel first saves the
//! right-hand sides it overwrites in the plan's `X`, and a rejected answer is undone from
//! there. The rows near the windows' boundaries, which the neighbours read as their halos, wait
//! in `X` until the answer is accepted.
//!
//! A host-pointer solve whose arrays move by DMA launches the windows stretch by stretch as
//! their rows arrive, out of place (all of `X` in the plan's, the right-hand sides only read),
//! and judges them once all have run (`overlapped.rs`).

use super::*;
use crate::gtsv::wants_refinement;
use cudarc::driver::LaunchArgs;

/// Threads (partitions) per CTA of the window kernel (a compile-time constant there, `NT`): its
/// owned partitions are this less the halo on both sides. Its shared memory,
/// (4 (m + 1) + 8) · 128 elements, stays under 48 KiB with m = 8 in double precision.
const WINDOW_THREADS: usize = 128;

/// CTAs of the window kernel one multiprocessor holds, per precision (index: `T` is f64), asked
/// of the driver once per process rather than at every call.
static WINDOW_CTAS_PER_SM: [std::sync::OnceLock<usize>; 2] =
    [std::sync::OnceLock::new(), std::sync::OnceLock::new()];

/// Where one system's windows lie: window k owns rows `k · rows ..` and loads its halos too.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Windows {
    /// Windows in all (they own the top level's partitions `0 .. p`).
    pub(crate) count: usize,
    p: usize,
    halo: usize,
    /// Rows each window owns.
    pub(crate) rows: usize,
    /// Rows per partition.
    m: usize,
    /// The CTAs one launch of them all runs (as many as run at once).
    ctas: usize,
    shared: u32,
}

impl Windows {
    /// How many windows (from the first) read only rows below `r` of a system of `n` rows: all
    /// of them once `r ≥ n`.
    pub(crate) fn ready(&self, r: usize, n: usize) -> usize {
        if r >= n {
            return self.count;
        }
        // Window k reads rows up to (k · own − halo + WINDOW_THREADS) · m, own = rows / m.
        let own = self.rows / self.m;
        match (r / self.m + self.halo).checked_sub(WINDOW_THREADS) {
            Some(room) => (room / own + 1).min(self.count),
            None => 0,
        }
    }
}

impl<T: Real> Plan<T> {
    /// Whether this solve tries the window first: a top level of partitions of 8 rows, a halo
    /// that leaves the CTA partitions of its own, and a column count the grid can hold.
    fn window_fits(&self) -> bool {
        let h = self.o.window_halo;
        !self.levels.is_empty()
            && self.o.m == 8
            && h > 0
            && 2 * h < WINDOW_THREADS
            && self.a.n >= self.o.window_min_n
            && (1..=65535).contains(&self.nrhs)
    }

    /// This solve's windows, where it tries the window solve.
    pub(crate) fn windows(&self) -> Result<Option<Windows>, DeviceError> {
        if !self.window_fits() {
            return Ok(None);
        }
        let (m, halo) = (self.o.m, self.o.window_halo);
        let p = self.levels[0].p;
        let own = WINDOW_THREADS - 2 * halo;
        let count = p.div_ceil(own);
        let shared = ((4 * (m + 1) + 8) * WINDOW_THREADS * sz::<T>()) as u32;
        // As many CTAs as run at once, each taking windows in turn: where one gives up, the
        // others stop at their next window instead of thousands more starting only to stop.
        let per_sm = self.window_ctas_per_sm(shared)?;
        let ctas = count.min(per_sm * self.gpu.info.multiprocessors.max(1) as usize);
        Ok(Some(Windows {
            count,
            p,
            halo,
            rows: own * m,
            m,
            ctas,
            shared,
        }))
    }

    /// The window solve is not tried again (the caller tried it already).
    pub(crate) fn skip_window(&mut self) {
        self.o.window_halo = 0;
    }

    /// Launches windows `first .. last` of `w` for `rhs`: X into `rhs` in place (see
    /// `gtsv_window`), or all of it into the plan's X, `rhs` only read. The summaries and
    /// flags accumulate from the last [`Self::clear`].
    pub(crate) fn launch_windows(
        &self,
        w: &Windows,
        rhs: DevCols,
        first: usize,
        last: usize,
        in_place: bool,
    ) -> Result<(), DeviceError> {
        if first >= last {
            return Ok(());
        }
        let args = self.window_args(rhs);
        let (p_i, halo_i, windows_i) = (w.p as i64, w.halo as i32, w.count as i64);
        let (first_i, last_i, in_place_i) = (first as i64, last as i64, i32::from(in_place));
        // How many windows each CTA loaded, in the refinement's candidate buffer (unused until
        // a refinement step, after this; ctas · nrhs values, far fewer than its n · nrhs).
        let reached = self.x_next;
        let mut launch = self.stream.launch_builder(&self.funcs.window);
        args.system(&mut launch)
            .arg(&p_i)
            .arg(&halo_i)
            .arg(&windows_i)
            .arg(&first_i)
            .arg(&last_i)
            .arg(&in_place_i);
        args.summaries(&mut launch);
        launch.arg(&reached);
        let cfg = LaunchConfig {
            grid_dim: (w.ctas.min(last - first) as u32, self.nrhs as u32, 1),
            block_dim: (WINDOW_THREADS as u32, 1, 1),
            shared_mem_bytes: w.shared,
        };
        // SAFETY: arguments match gtsv_window_{s,d}_m8; the system has n rows (rows < n only
        // are read), rhs and X nrhs columns of n rows at their leading dimensions (rhs is
        // written only in them, and only in place); the windows own partitions 0 .. p
        // (p = ⌈(n + 1) / 8⌉, the top level's), a row of at most w.ctas CTAs per column;
        // `reached` holds w.ctas · nrhs i64s.
        unsafe { launch.launch(cfg) }?;
        Ok(())
    }

    /// Tries the window solve for `rhs`: `Ok(true)` when its answer passed the check with no
    /// refinement wanted (then it is the call's, in `rhs`), `Ok(false)` when the full
    /// recursion must run (`rhs` then holds what it held before; `self.x` nothing of use). Runs
    /// `meanwhile` (taking it) on the host while the GPU works, then waits for the GPU. On an
    /// error `rhs` is put back as far as the GPU still runs work.
    pub(crate) fn try_window(
        &mut self,
        rhs: DevCols,
        meanwhile: &mut Option<impl FnOnce()>,
    ) -> Result<bool, DeviceError> {
        let Some(w) = self.windows()? else {
            return Ok(false);
        };
        self.clear()?;
        self.launch_windows(&w, rhs, 0, w.count, true)?;
        let undo = Undo {
            n: self.a.n as i64,
            rhs,
            ldf: rhs.ld as i64,
            x: self.x,
            rows: w.rows as i64,
            hrows: (w.halo * w.m) as i64,
            windows: w.count as i64,
            ctas: w.ctas as i64,
            reached: self.x_next,
            nrhs: self.nrhs as u32,
        };
        let verdict = self.window_verdict(&w, rhs, meanwhile);
        match verdict {
            Ok(true) => self.window_commit(&undo)?,
            // Put back as far as the GPU still runs work; the error is the call's.
            Err(_) => drop(self.window_restore(&undo)),
            Ok(false) => self.window_restore(&undo)?,
        }
        verdict
    }

    /// The arguments of the window kernels for `rhs`, X the plan's.
    fn window_args(&self, rhs: DevCols) -> WindowArgs {
        let (rmax, smax, bmax) = self.sums_ptrs();
        WindowArgs {
            n: self.a.n as i64,
            dl: self.a.dl,
            d: self.a.d,
            du: self.a.du,
            f: rhs.ptr,
            ldf: rhs.ld as i64,
            x: self.x,
            ldx: self.a.n as i64,
            rmax,
            smax,
            bmax,
            flags: self.flags,
        }
    }

    /// The edges' check after all windows of `w` ran for `rhs`, then the verdict on their
    /// answer (see [`Self::try_window`]); `meanwhile` runs on the host before the wait.
    pub(crate) fn window_verdict(
        &mut self,
        w: &Windows,
        rhs: DevCols,
        meanwhile: &mut Option<impl FnOnce()>,
    ) -> Result<bool, DeviceError> {
        let nrhs = self.nrhs;
        if w.count > 1 {
            let args = self.window_args(rhs);
            let (rows, windows) = (w.rows as i64, w.count as i64);
            let mut launch = self.stream.launch_builder(&self.funcs.window_edges);
            args.system(&mut launch).arg(&rows).arg(&windows);
            args.summaries(&mut launch);
            let cfg = LaunchConfig {
                grid_dim: ((2 * (w.count - 1)).div_ceil(128) as u32, nrhs as u32, 1),
                block_dim: (128, 1, 1),
                shared_mem_bytes: 0,
            };
            // SAFETY: arguments match gtsv_window_edges_{s,d}; it reads rows < n of the
            // system, of rhs and of X (written by the window kernel before it on this stream).
            unsafe { launch.launch(cfg) }?;
        }
        if let Some(f) = meanwhile.take() {
            f();
        }
        let sums = self.read_sums()?;
        if sums.flags != 0 {
            return Ok(false);
        }
        let checks: Vec<Residual<T>> = (0..nrhs).map(|c| sums.check(c)).collect();
        Ok(checks.iter().all(|c| !wants_refinement(c)) && judge(checks).is_ok())
    }

    /// An accepted answer's rows near the boundaries, from X into the right-hand sides.
    fn window_commit(&self, u: &Undo) -> Result<(), DeviceError> {
        let threads = (u.windows - 1) * 2 * u.hrows;
        if threads <= 0 {
            return Ok(());
        }
        let mut launch = self.stream.launch_builder(&self.funcs.window_commit);
        u.common(&mut launch);
        let cfg = LaunchConfig {
            grid_dim: ((threads as u64).div_ceil(256) as u32, u.nrhs, 1),
            block_dim: (256, 1, 1),
            shared_mem_bytes: 0,
        };
        // SAFETY: arguments match gtsv_window_commit_{s,d}; rows < n of both, nrhs columns.
        unsafe { launch.launch(cfg) }?;
        Ok(())
    }

    /// A rejected answer undone: the right-hand sides' rows that took X in place, back from X,
    /// for the windows the kernel loaded.
    fn window_restore(&self, u: &Undo) -> Result<(), DeviceError> {
        let mut launch = self.stream.launch_builder(&self.funcs.window_restore);
        u.common(&mut launch).arg(&u.ctas).arg(&u.reached);
        let cfg = LaunchConfig {
            grid_dim: (u.windows as u32, u.nrhs, 1),
            block_dim: (256, 1, 1),
            shared_mem_bytes: 0,
        };
        // SAFETY: arguments match gtsv_window_restore_{s,d}; rows < n of both, nrhs columns;
        // `reached` as the window kernel wrote it (ctas · nrhs i64s).
        unsafe { launch.launch(cfg) }?;
        Ok(())
    }

    /// [`WINDOW_CTAS_PER_SM`] for `T`.
    fn window_ctas_per_sm(&self, shared: u32) -> Result<usize, DeviceError> {
        let cell = &WINDOW_CTAS_PER_SM[usize::from(sz::<T>() == 8)];
        if let Some(&k) = cell.get() {
            return Ok(k);
        }
        let k = self
            .funcs
            .window
            .occupancy_max_active_blocks_per_multiprocessor(
                WINDOW_THREADS as u32,
                shared as usize,
                None,
            )?
            .max(1) as usize;
        Ok(*cell.get_or_init(|| k))
    }
}

/// What the commit and the restore of a window answer need (i64s as the kernels take them).
struct Undo {
    n: i64,
    rhs: DevCols,
    /// The right-hand sides' leading dimension (X's is n).
    ldf: i64,
    x: CUdeviceptr,
    /// Rows each window owns, and those within a halo of a boundary.
    rows: i64,
    hrows: i64,
    windows: i64,
    ctas: i64,
    reached: CUdeviceptr,
    nrhs: u32,
}

impl Undo {
    /// The arguments the commit and the restore kernels both start with.
    fn common<'a, 'l>(&'a self, l: &'l mut LaunchArgs<'a>) -> &'l mut LaunchArgs<'a> {
        l.arg(&self.n)
            .arg(&self.rhs.ptr)
            .arg(&self.ldf)
            .arg(&self.x)
            .arg(&self.n)
            .arg(&self.rows)
            .arg(&self.hrows)
            .arg(&self.windows)
    }
}

/// The arguments both window kernels take around their own: the system, F and X first, the
/// summaries and the flags last.
struct WindowArgs {
    n: i64,
    dl: CUdeviceptr,
    d: CUdeviceptr,
    du: CUdeviceptr,
    f: CUdeviceptr,
    ldf: i64,
    x: CUdeviceptr,
    ldx: i64,
    rmax: CUdeviceptr,
    smax: CUdeviceptr,
    bmax: CUdeviceptr,
    flags: CUdeviceptr,
}

impl WindowArgs {
    fn system<'a, 'l>(&'a self, l: &'l mut LaunchArgs<'a>) -> &'l mut LaunchArgs<'a> {
        l.arg(&self.n)
            .arg(&self.dl)
            .arg(&self.d)
            .arg(&self.du)
            .arg(&self.f)
            .arg(&self.ldf)
            .arg(&self.x)
            .arg(&self.ldx)
    }

    fn summaries<'a>(&'a self, l: &mut LaunchArgs<'a>) {
        l.arg(&self.rmax)
            .arg(&self.smax)
            .arg(&self.bmax)
            .arg(&self.flags);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `ready(r)` counts exactly the windows whose loaded rows (halos included) end by row r.
    #[test]
    fn ready_windows_read_only_rows_below() {
        let (m, halo) = (8usize, 6);
        let own = WINDOW_THREADS - 2 * halo;
        let n: usize = 1_000_003;
        let p = (n + 1).div_ceil(m);
        let w = Windows {
            count: p.div_ceil(own),
            p,
            halo,
            rows: own * m,
            m,
            ctas: 1,
            shared: 0,
        };
        // Window k loads rows (k own − halo) m .. (k own − halo + WINDOW_THREADS) m.
        let end = |k: usize| (k * own + WINDOW_THREADS - halo) * m;
        for r in (0..n)
            .step_by(997)
            .chain([end(0) - 1, end(0), end(5), end(5) + 7, n - 1])
        {
            let k = w.ready(r, n);
            assert!(
                k == 0 || end(k - 1) <= r,
                "r {r}: window {} reads past it",
                k - 1
            );
            assert!(k == w.count || end(k) > r, "r {r}: window {k} could run");
        }
        assert_eq!(w.ready(n, n), w.count);
    }
}
