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
        if !self.window_fits() {
            return Ok(false);
        }
        let (n, nrhs, halo) = (self.a.n, self.nrhs, self.o.window_halo);
        let p = self.levels[0].p;
        let own = WINDOW_THREADS - 2 * halo;
        let windows = p.div_ceil(own);
        let shared = ((4 * (self.o.m + 1) + 8) * WINDOW_THREADS * sz::<T>()) as u32;
        // As many CTAs as run at once, each taking windows in turn: where one gives up, the
        // others stop at their next window instead of thousands more starting only to stop.
        let per_sm = self.window_ctas_per_sm(shared)?;
        let ctas = windows.min(per_sm * self.gpu.info.multiprocessors.max(1) as usize);
        // How many windows each CTA loaded, in the refinement's candidate buffer (unused until
        // a refinement step, after this; ctas · nrhs values, far fewer than its n · nrhs).
        let reached = self.x_next;
        self.clear()?;
        let a = self.a;
        let (rmax, smax, bmax) = self.sums_ptrs();
        let args = WindowArgs {
            n: n as i64,
            dl: a.dl,
            d: a.d,
            du: a.du,
            f: rhs.ptr,
            ldf: rhs.ld as i64,
            x: self.x,
            ldx: n as i64,
            rmax,
            smax,
            bmax,
            flags: self.flags,
        };
        let (p_i, halo_i, windows_i) = (p as i64, halo as i32, windows as i64);
        let mut launch = self.stream.launch_builder(&self.funcs.window);
        args.system(&mut launch)
            .arg(&p_i)
            .arg(&halo_i)
            .arg(&windows_i);
        args.summaries(&mut launch);
        launch.arg(&reached);
        let cfg = LaunchConfig {
            grid_dim: (ctas as u32, nrhs as u32, 1),
            block_dim: (WINDOW_THREADS as u32, 1, 1),
            shared_mem_bytes: shared,
        };
        // SAFETY: arguments match gtsv_window_{s,d}_m8; the system has n rows (rows < n only
        // are read), rhs and X nrhs columns of n rows at their leading dimensions (rhs is
        // written only in them); the windows own partitions 0 .. p (p = ⌈(n + 1) / 8⌉, the top
        // level's), a row of CTAs per column; `reached` holds ctas · nrhs i64s.
        unsafe { launch.launch(cfg) }?;
        let undo = Undo {
            n: n as i64,
            rhs,
            ldf: rhs.ld as i64,
            x: self.x,
            rows: (own * self.o.m) as i64,
            hrows: (halo * self.o.m) as i64,
            windows: windows as i64,
            ctas: ctas as i64,
            reached,
            nrhs: nrhs as u32,
        };
        let verdict = self.window_verdict(&args, &undo, meanwhile);
        match verdict {
            Ok(true) => self.window_commit(&undo)?,
            // Put back as far as the GPU still runs work; the error is the call's.
            Err(_) => drop(self.window_restore(&undo)),
            Ok(false) => self.window_restore(&undo)?,
        }
        verdict
    }

    /// The edges' check after the window kernel, then the verdict on its answer (see
    /// [`Self::try_window`]).
    fn window_verdict(
        &mut self,
        args: &WindowArgs,
        undo: &Undo,
        meanwhile: &mut Option<impl FnOnce()>,
    ) -> Result<bool, DeviceError> {
        let (windows, nrhs) = (undo.windows as usize, self.nrhs);
        if windows > 1 {
            let mut launch = self.stream.launch_builder(&self.funcs.window_edges);
            args.system(&mut launch).arg(&undo.rows).arg(&undo.windows);
            args.summaries(&mut launch);
            let cfg = LaunchConfig {
                grid_dim: ((2 * (windows - 1)).div_ceil(128) as u32, nrhs as u32, 1),
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
