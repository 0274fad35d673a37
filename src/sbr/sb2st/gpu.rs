//! The bulge chasing on the GPU (`kernels/sb2st.cu`): one kernel whose CTAs each run one sweep
//! at a time, waiting on the previous sweep's progress counter in global memory. The band
//! (n · (2b + 1) entries, 8.5 MB at n = 16384, b = 32) stays in L2, so a step costs a few
//! microseconds of latency; the pipeline's length, about LAG · n steps, sets the time.

use super::{diagonals, needs_chase, workspace, Reflectors, LAG};
use crate::device::memory::Reservation;
use crate::device::{self, kernels, DeviceError};
use crate::real::Real;
use cudarc::driver::sys::CUfunction_attribute_enum;
use cudarc::driver::{CudaSlice, DevicePtrMut, LaunchConfig, PushKernelArg};

/// How long a CTA waits on the sweep before its own before the kernel gives up (then the
/// caller chases on the CPU instead). A step takes microseconds; only a fault gets near this.
const WAIT_TIMEOUT_NS: u64 = 10_000_000_000;

/// The widest band the kernel takes: its blocks have 32 or 64 rows.
pub const MAX_BANDWIDTH: usize = 64;

/// As [`super::tridiagonalize`], on the GPU; `kd` at most [`MAX_BANDWIDTH`]. `profile` (the
/// `profile` setting, see [`crate::config::SbrTuning`]): print the cycles per phase of the steps.
pub fn tridiagonalize<T: Real>(
    uplo: u8,
    n: usize,
    kd: usize,
    ab: &[T],
    ldab: usize,
    profile: bool,
) -> Result<(Vec<T>, Vec<T>), DeviceError> {
    assert!(kd <= MAX_BANDWIDTH, "bandwidth {kd} above {MAX_BANDWIDTH}");
    let no_memory = || DeviceError::Driver("cannot allocate the band's host memory".into());
    let (mut w, ld, b) = workspace(uplo, n, kd, ab, ldab).ok_or_else(no_memory)?;
    if needs_chase(n, kd) {
        chase(&mut w, ld, n, b, profile, None)?;
    }
    diagonals(&w, ld, n).ok_or_else(no_memory)
}

/// As [`super::tridiagonalize_keeping`], on the GPU (`kd` at most [`MAX_BANDWIDTH`]): the
/// kernel records Q2's reflectors, which are copied into `q` (the same layout as the CPU
/// chase's). On an error `q` holds no usable Q2.
pub fn tridiagonalize_keeping<T: Real>(
    uplo: u8,
    n: usize,
    kd: usize,
    ab: &[T],
    ldab: usize,
    q: &mut Reflectors<T>,
) -> Result<(Vec<T>, Vec<T>), DeviceError> {
    assert!(
        q.fits(n, kd.max(1)),
        "Q2's layout is for another order or bandwidth"
    );
    let (de, kept) = tridiagonalize_keeping_on_gpu(uplo, n, kd, ab, ldab)?;
    kept.download(q)?;
    Ok(de)
}

/// As [`tridiagonalize_keeping`], with Q2 left on the GPU for its application there (a round
/// trip through host memory cost more than the chase: 3.4 s for 4.3 GB at n = 32768).
pub fn tridiagonalize_keeping_on_gpu<T: Real>(
    uplo: u8,
    n: usize,
    kd: usize,
    ab: &[T],
    ldab: usize,
) -> Result<(Tridiagonal<T>, DeviceReflectors<T>), DeviceError> {
    assert!(kd <= MAX_BANDWIDTH, "bandwidth {kd} above {MAX_BANDWIDTH}");
    let no_memory = || DeviceError::Driver("cannot allocate the band's host memory".into());
    let (mut w, ld, b) = workspace(uplo, n, kd, ab, ldab).ok_or_else(no_memory)?;
    let gpu = device::gpu()?;
    let len = n * n.saturating_sub(1) / 2;
    let memory = gpu
        .budget
        .reserve((len * std::mem::size_of::<T>()) as u64)?;
    let stream = gpu.stream()?;
    // Steps write every entry of Q2's layout they own; the rest (none today) stays zero.
    let mut v = stream.alloc_zeros::<T>(len.max(1))?;
    if needs_chase(n, kd) {
        chase(&mut w, ld, n, b, false, Some(&mut v))?;
    }
    let kept = DeviceReflectors {
        n,
        b,
        v,
        _memory: memory,
    };
    Ok((diagonals(&w, ld, n).ok_or_else(no_memory)?, kept))
}

/// The diagonal and subdiagonal of a chase's tridiagonal matrix.
pub type Tridiagonal<T> = (Vec<T>, Vec<T>);

/// Q2 of a chase on the GPU, in [`Reflectors`]' layout in GPU memory, with its share of the
/// budget.
pub struct DeviceReflectors<T> {
    pub(super) n: usize,
    pub(super) b: usize,
    pub(super) v: CudaSlice<T>,
    _memory: Reservation<'static>,
}

impl<T: Real> DeviceReflectors<T> {
    /// The bytes it holds on the GPU.
    pub fn bytes(&self) -> u64 {
        (self.v.len() * std::mem::size_of::<T>()) as u64
    }

    /// Copies Q2 into `q` (room for this order and bandwidth, [`Reflectors::new`]).
    pub fn download(&self, q: &mut Reflectors<T>) -> Result<(), DeviceError> {
        assert!(
            q.fits(self.n, self.b),
            "Q2's layout is for another order or bandwidth"
        );
        let clock = std::time::Instant::now();
        let stream = device::gpu()?.stream()?;
        // The room is allocated lazily, and the driver's pageable copy would map its pages on
        // one thread: at n = 73728 (20 GiB) the download took 22 s on an H100 host.
        crate::host::fault_in(&mut q.v, crate::host::threads());
        stream.memcpy_dtoh(&self.v.slice(0..q.v.len()), &mut q.v[..])?;
        stream.synchronize()?;
        crate::dispatch::debug(|| {
            format!(
                "sb2st gpu: Q2 of order {} down in {:.3} s",
                self.n,
                clock.elapsed().as_secs_f64()
            )
        });
        Ok(())
    }
}

fn chase<T: Real>(
    w: &mut [T],
    ld: usize,
    n: usize,
    b: usize,
    profile: bool,
    mut keep: Option<&mut CudaSlice<T>>,
) -> Result<(), DeviceError> {
    let gpu = device::gpu()?;
    // Blocks of R = 32 or 64 rows, G threads per row (kernels/sb2st.cu).
    let rows = if b <= 32 { 32 } else { 64 };
    let groups = 8;
    let threads = groups * rows;
    let sweeps = n - 2;
    let int = |x: usize| {
        i32::try_from(x)
            .map_err(|_| DeviceError::Unsupported(format!("n = {n} exceeds 32-bit rows")))
    };
    let (n_arg, b_arg, ld_arg) = (int(n)?, int(b)?, int(ld)?);
    let elem = std::mem::size_of::<T>();
    let _memory = gpu
        .budget
        .reserve((std::mem::size_of_val(w) + 4 * (sweeps + 1)) as u64)?;
    // The function attribute and occupancy queries below need the context current here.
    gpu.ctx.bind_to_thread()?;
    let name = format!("sb2st_chase_{}{rows}", T::PREFIX);
    let func = gpu.function(kernels::module_named(&kernels::SB2ST, &name)?, &name)?;
    // Two blocks of R × (R + 1), G + 2 vectors of R and one entry per warp.
    let smem = (2 * rows * (rows + 1) + (groups + 2) * rows + threads / 32) * elem;
    if smem > 48 * 1024 {
        func.set_attribute(
            CUfunction_attribute_enum::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
            smem as i32,
        )?;
    }
    // Every CTA must be resident at once (a sweep spins until the one before it moves), and
    // about n / (LAG · b) sweeps are under way at a time: more CTAs would only spin.
    let per_sm = func.occupancy_max_active_blocks_per_multiprocessor(threads as u32, smem, None)?;
    let resident = per_sm as usize * gpu.info.multiprocessors.max(1) as usize;
    if resident == 0 {
        return Err(DeviceError::Driver(
            "bulge chasing kernel: no CTA fits on a multiprocessor".into(),
        ));
    }
    let grid = sweeps.min(resident).min(n.div_ceil(LAG * b) + 1);
    let stream = gpu.stream()?;
    let clock = std::time::Instant::now();
    let mut band = stream.clone_htod(w)?;
    let mut done = stream.alloc_zeros::<u32>(sweeps)?;
    let mut failed = stream.alloc_zeros::<u32>(1)?;
    // HYLAPACK_SBR_PROFILE=1: clock cycles per phase of the steps, summed over the CTAs.
    let mut cycles = stream.alloc_zeros::<u64>(PHASES.len() + 1)?;
    let cycles_ptr: u64 = if profile {
        let (ptr, _sync) = cycles.device_ptr_mut(&stream);
        ptr
    } else {
        0
    };
    let kept_ptr: u64 = match keep.as_mut() {
        Some(q) => q.device_ptr_mut(&stream).0,
        None => 0,
    };
    let cfg = LaunchConfig {
        grid_dim: (grid as u32, 1, 1),
        block_dim: (threads as u32, 1, 1),
        shared_mem_bytes: smem as u32,
    };
    let lag = LAG as u32;
    let mut launch = stream.launch_builder(&func);
    launch
        .arg(&mut band)
        .arg(&n_arg)
        .arg(&b_arg)
        .arg(&ld_arg)
        .arg(&lag)
        .arg(&mut done)
        .arg(&mut failed)
        .arg(&WAIT_TIMEOUT_NS)
        .arg(&cycles_ptr)
        .arg(&kept_ptr);
    // SAFETY: the arguments match sb2st_chase_{s,d}{32,64} in kernels/sb2st.cu: the band holds
    // n · ld entries with ld = 2b + 1 and b ≤ rows, `done` one counter per sweep (zeroed),
    // `failed` one flag, `cycles_ptr` null or PHASES + 1 counters (zeroed), `kept_ptr` null
    // or Q2's layout of order n (n(n − 1)/2 entries, `Reflectors::new`); every CTA is
    // resident (grid ≤ occupancy × multiprocessors), so no sweep waits on one that cannot run.
    unsafe { launch.launch(cfg) }?;
    if stream.clone_dtoh(&failed)?[0] != 0 {
        return Err(DeviceError::Driver(
            "bulge chasing kernel: a sweep waited past its timeout".into(),
        ));
    }
    stream.memcpy_dtoh(&band, w)?;
    stream.synchronize()?;
    crate::dispatch::debug(|| {
        format!(
            "sb2st gpu: n={n} b={b} grid={grid}: {:.3} s",
            clock.elapsed().as_secs_f64()
        )
    });
    if profile {
        let sums = stream.clone_dtoh(&cycles)?;
        let steps = sums[PHASES.len()].max(1) as f64;
        let parts: Vec<String> = (PHASES.iter().zip(&sums))
            .map(|(name, &c)| format!("{name} {:.0}", c as f64 / steps))
            .collect();
        eprintln!(
            "hylapack: sb2st GPU n={n} b={b} grid={grid}: cycles per step: {}",
            parts.join(", ")
        );
    }
    Ok(())
}

/// The phases `kernels/sb2st.cu` profiles, in its order.
const PHASES: [&str; 6] = [
    "wait",
    "load",
    "update B",
    "store B",
    "two-sided",
    "publish",
];
