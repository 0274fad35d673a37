//! The one-pass window solve (`gtsv_window`, truncated SPIKE): tried first where the top level's
//! separator system is strongly diagonally dominant, it reads the system once and writes `X`
//! once, with no levels below; where a CTA finds it unsuited, or the check wants refinement,
//! the full recursion runs instead.

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

    /// Tries the window solve for `rhs` into `self.x`: `Ok(true)` when its answer passed the
    /// check with no refinement wanted (then it is the call's), `Ok(false)` when the full
    /// recursion must run (`self.x` then holds nothing of use). Runs `meanwhile` (taking it) on
    /// the host while the GPU works, then waits for the GPU.
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
        let cfg = LaunchConfig {
            grid_dim: (ctas as u32, nrhs as u32, 1),
            block_dim: (WINDOW_THREADS as u32, 1, 1),
            shared_mem_bytes: shared,
        };
        // SAFETY: arguments match gtsv_window_{s,d}_m8; the system has n rows (rows < n only
        // are read), rhs and X nrhs columns of n rows at their leading dimensions; the windows
        // own partitions 0 .. p (p = ⌈(n + 1) / 8⌉, the top level's), a row of CTAs per column.
        unsafe { launch.launch(cfg) }?;
        if windows > 1 {
            let (rows, ctas_i) = ((own * self.o.m) as i64, windows as i64);
            let mut launch = self.stream.launch_builder(&self.funcs.window_edges);
            args.system(&mut launch).arg(&rows).arg(&ctas_i);
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
