//! Sturm counts on the GPU (`kernels/stebz.cu`), in tandem with the CPU.
//!
//! The matrix is uploaded once per call; each multisection step sends its points and block
//! indices through pinned staging buffers and reads the counts back. Small steps, where a
//! launch costs more than the arithmetic, are counted on the CPU instead (same recurrence,
//! same counts). How many points each interval gets comes from the performance model of the
//! paper: maximise bits gained per second, log2(ML + 1) / time(ML).

use super::count::{CountError, Counter, SturmProblem};
use super::cpu::CpuCounter;
use crate::device::memory::{Pinned, Reservation};
use crate::device::{self, kernels, DeviceError, Gpu, PooledStream};
use crate::real::Real;
use cudarc::driver::{
    CudaFunction, CudaSlice, DevicePtr, DevicePtrMut, LaunchConfig, PushKernelArg,
};

/// Costs of one multisection step. A batch of counts takes at least the time of one count,
/// a chain of dependent divisions as long as its block (`rows × latency`), and at least the time
/// to evaluate all its steps at full throughput; the GPU adds a fixed cost per batch.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CountModel {
    /// Launch, two small transfers and one synchronisation.
    pub gpu_overhead_s: f64,
    /// Time of one row of the recurrence for one point (one thread's dependent chain).
    pub gpu_step_latency_s: f64,
    pub gpu_steps_per_s: f64,
    pub cpu_step_latency_s: f64,
    pub cpu_steps_per_s: f64,
    /// Starting the CPU counter's threads, paid by batches of `cpu::PARALLEL_STEPS` or more.
    pub cpu_thread_start_s: f64,
}

impl CountModel {
    /// Defaults: `hylapack tune` on an H200 and its 16-core host (2026-11-22). The H100 has the
    /// same arithmetic; its host CPU may differ, which `hylapack tune` corrects.
    pub fn default_for<T: Real>() -> Self {
        let single = T::PREFIX == 's';
        CountModel {
            gpu_overhead_s: 24e-6,
            gpu_step_latency_s: if single { 47e-9 } else { 88e-9 },
            gpu_steps_per_s: if single { 0.84e12 } else { 0.50e12 },
            cpu_step_latency_s: if single { 5.8e-9 } else { 6.6e-9 },
            cpu_steps_per_s: if single { 25e9 } else { 10e9 },
            // A 512k-step batch took 1.1 ms on the 16-core host, 0.05 ms of it arithmetic.
            cpu_thread_start_s: 1e-3,
        }
    }

    /// A model under which the GPU always wins: every batch runs the kernel.
    pub fn always_gpu() -> Self {
        CountModel {
            gpu_overhead_s: 0.0,
            gpu_step_latency_s: 0.0,
            gpu_steps_per_s: 1e15,
            cpu_step_latency_s: 1.0,
            cpu_steps_per_s: 1.0,
            cpu_thread_start_s: 1.0,
        }
    }

    /// The model `hylapack tune` measured on this GPU, else the built-in defaults.
    pub fn for_device<T: Real>(gpu: &Gpu) -> Self {
        let key = if T::PREFIX == 's' { "f32" } else { "f64" };
        let read = || -> Option<CountModel> {
            let text = std::fs::read_to_string(tuning_file(gpu)).ok()?;
            let table: toml::Table = text.parse().ok()?;
            let t = table.get(key)?.as_table()?;
            let get = |k: &str| t.get(k)?.as_float().filter(|v| v.is_finite() && *v > 0.0);
            Some(CountModel {
                gpu_overhead_s: get("gpu_overhead_s")?,
                gpu_step_latency_s: get("gpu_step_latency_s")?,
                gpu_steps_per_s: get("gpu_steps_per_s")?,
                cpu_step_latency_s: get("cpu_step_latency_s")?,
                cpu_steps_per_s: get("cpu_steps_per_s")?,
                cpu_thread_start_s: get("cpu_thread_start_s")?,
            })
        };
        read().unwrap_or_else(Self::default_for::<T>)
    }

    /// GPU time of a batch of `steps` row-steps whose longest count has `rows` rows.
    pub fn gpu_time(&self, steps: f64, rows: f64) -> f64 {
        self.gpu_overhead_s + (rows * self.gpu_step_latency_s).max(steps / self.gpu_steps_per_s)
    }

    pub fn cpu_time(&self, steps: f64, rows: f64) -> f64 {
        let start = if steps >= super::cpu::PARALLEL_STEPS as f64 {
            self.cpu_thread_start_s
        } else {
            0.0
        };
        start + (rows * self.cpu_step_latency_s).max(steps / self.cpu_steps_per_s)
    }

    /// The ML (2^k − 1, up to 1023) that gains the most bits per second for `intervals`
    /// intervals whose counts cost `rows` steps each on average and `max_rows` at most.
    pub fn best_points(&self, intervals: usize, rows: f64, max_rows: f64) -> usize {
        let mut best = (1usize, 0.0f64);
        let mut ml = 1usize;
        while ml <= 1023 {
            let steps = (intervals * ml) as f64 * rows;
            let time = self
                .gpu_time(steps, max_rows)
                .min(self.cpu_time(steps, max_rows));
            let efficiency = ((ml + 1) as f64).log2() / time;
            if efficiency > best.1 {
                best = (ml, efficiency);
            }
            ml = 2 * ml + 1; // ML + 1 a power of two: each step gains whole bits
        }
        best.0
    }
}

/// What one call's counter did: row-steps, batches and time on each side.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CountStats {
    pub gpu_steps: u64,
    pub cpu_steps: u64,
    pub gpu_batches: u32,
    pub cpu_batches: u32,
    /// Wall time spent inside GPU and CPU batches (the rest of a call is the driver's work).
    pub gpu_seconds: f64,
    pub cpu_seconds: f64,
    /// Discovery, module lookup and the matrix upload.
    pub setup_seconds: f64,
}

thread_local! {
    static LAST_STATS: std::cell::Cell<CountStats> = const {
        std::cell::Cell::new(CountStats { gpu_steps: 0, cpu_steps: 0, gpu_batches: 0, cpu_batches: 0, gpu_seconds: 0.0, cpu_seconds: 0.0, setup_seconds: 0.0 })
    };
}

/// What the calling thread's last GPU counter did (benchmarks report sustained count
/// throughput and the share of fixed per-batch costs from it).
pub fn last_call_stats() -> CountStats {
    LAST_STATS.with(|c| c.get())
}

/// Where `hylapack tune` stores the count model of `gpu` (one file per device model and arch).
pub fn tuning_file(gpu: &Gpu) -> std::path::PathBuf {
    let name: String = gpu
        .info
        .name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    crate::config::get()
        .cache_dir
        .join(format!("stebz-model-{name}-{}.toml", gpu.info.arch()))
}

/// Device-side state of one call.
pub struct GpuCounter<'a, T: Real> {
    problem: SturmProblem<'a, T>,
    /// Counts the steps too small to pay for a launch.
    cpu: CpuCounter<'a, T>,
    model: CountModel,
    gpu: &'static Gpu,
    stream: PooledStream,
    func: CudaFunction,
    d: CudaSlice<T>,
    e2: CudaSlice<T>,
    block_ends: CudaSlice<u32>,
    batch: Option<Batch<T>>,
    _matrix_memory: Reservation<'static>,
    /// Average and largest rows per block, for the model.
    mean_rows: f64,
    max_rows: f64,
    stats: CountStats,
}

/// Buffers for one step's points, grown on demand.
struct Batch<T> {
    capacity: usize,
    x: CudaSlice<T>,
    blocks: CudaSlice<u32>,
    counts: CudaSlice<i32>,
    x_host: Pinned<T>,
    blocks_host: Pinned<u32>,
    counts_host: Pinned<i32>,
    _memory: Reservation<'static>,
}

fn err(e: impl std::fmt::Display) -> CountError {
    CountError(e.to_string())
}

impl<'a, T: Real> GpuCounter<'a, T> {
    /// Uploads the matrix once; fails (with nothing changed) when no GPU path is possible.
    pub fn new(problem: &SturmProblem<'a, T>) -> Result<Self, CountError> {
        let gpu = device::gpu().map_err(err)?;
        // HYLAPACK_DEVICE=gpu exists to exercise the GPU path: every batch then runs the kernel.
        let model = if crate::config::get().device == crate::config::DeviceMode::Gpu {
            CountModel::always_gpu()
        } else {
            CountModel::for_device::<T>(gpu)
        };
        Self::with_model(problem, model)
    }

    pub fn with_model(
        problem: &SturmProblem<'a, T>,
        model: CountModel,
    ) -> Result<Self, CountError> {
        let started = std::time::Instant::now();
        let gpu = device::gpu().map_err(err)?;
        let n = problem.d.len();
        if n >= u32::MAX as usize {
            return Err(CountError("matrix too large for 32-bit row indices".into()));
        }
        let bytes = (2 * n * std::mem::size_of::<T>() + 4 * problem.block_ends.len()) as u64;
        let reservation = gpu.budget.reserve(bytes).map_err(err)?;
        let func = gpu
            .function(&kernels::STEBZ, &format!("stebz_count_{}", T::PREFIX))
            .map_err(err)?;
        let stream = gpu.stream().map_err(err)?;
        // Host memory that can fail like device memory: the caller then counts on the CPU.
        let mut ends = crate::host::try_vec(problem.block_ends.len(), 0u32)
            .ok_or_else(|| CountError("cannot allocate host memory for the block ends".into()))?;
        for (to, &end) in ends.iter_mut().zip(problem.block_ends) {
            *to = end as u32;
        }
        let d = stream.clone_htod(problem.d).map_err(err)?;
        let e2 = stream.clone_htod(problem.e2).map_err(err)?;
        let block_ends = stream.clone_htod(&ends).map_err(err)?;
        Ok(GpuCounter {
            problem: *problem,
            cpu: CpuCounter::new(problem),
            model,
            gpu,
            stream,
            func,
            d,
            e2,
            block_ends,
            batch: None,
            _matrix_memory: reservation,
            mean_rows: n as f64 / problem.block_ends.len().max(1) as f64,
            max_rows: (0..problem.block_ends.len())
                .map(|b| problem.block_rows(b).len())
                .max()
                .unwrap_or(0) as f64,
            stats: CountStats {
                setup_seconds: started.elapsed().as_secs_f64(),
                ..CountStats::default()
            },
        })
    }

    /// Sturm steps evaluated on (GPU, CPU) so far.
    pub fn steps(&self) -> (u64, u64) {
        (self.stats.gpu_steps, self.stats.cpu_steps)
    }

    fn ensure_capacity(&mut self, len: usize) -> Result<(), DeviceError> {
        if self.batch.as_ref().is_some_and(|b| b.capacity >= len) {
            return Ok(());
        }
        let capacity = len.next_power_of_two().max(1024);
        self.batch = None; // release the old buffers and their reservation first
        let bytes = (capacity * (std::mem::size_of::<T>() + 8)) as u64;
        let memory = self.gpu.budget.reserve(bytes)?;
        // SAFETY: device buffers are written (by copies or the kernel) before they are read.
        let (x, blocks, counts) = unsafe {
            (
                self.stream.alloc::<T>(capacity)?,
                self.stream.alloc::<u32>(capacity)?,
                self.stream.alloc::<i32>(capacity)?,
            )
        };
        self.batch = Some(Batch {
            capacity,
            x,
            blocks,
            counts,
            x_host: self.gpu.pinned(capacity)?,
            blocks_host: self.gpu.pinned(capacity)?,
            counts_host: self.gpu.pinned(capacity)?,
            _memory: memory,
        });
        Ok(())
    }

    fn count_on_gpu(
        &mut self,
        blocks: &[u32],
        x: &[T],
        counts: &mut [i32],
    ) -> Result<(), DeviceError> {
        let len = x.len();
        self.ensure_capacity(len)?;
        let stream = self.stream.clone();
        let batch = self.batch.as_mut().expect("allocated above");
        batch.x_host.as_mut_slice()?[..len].copy_from_slice(x);
        batch.blocks_host.as_mut_slice()?[..len].copy_from_slice(blocks);
        {
            let (x_ptr, _x_sync) = batch.x.device_ptr_mut(&stream);
            let (b_ptr, _b_sync) = batch.blocks.device_ptr_mut(&stream);
            // SAFETY: both device buffers hold at least `len` elements of the copied type.
            unsafe {
                batch.x_host.copy_to_device(len, x_ptr, &stream)?;
                batch.blocks_host.copy_to_device(len, b_ptr, &stream)?;
            }
        }
        let threads = 256u32;
        let cfg = LaunchConfig {
            grid_dim: ((len as u32).div_ceil(threads), 1, 1),
            block_dim: (threads, 1, 1),
            shared_mem_bytes: 0,
        };
        let npoints = len as u32;
        let mut launch = stream.launch_builder(&self.func);
        launch
            .arg(&self.d)
            .arg(&self.e2)
            .arg(&self.problem.pivmin)
            .arg(&self.block_ends)
            .arg(&batch.blocks)
            .arg(&batch.x)
            .arg(&mut batch.counts)
            .arg(&npoints);
        // SAFETY: the arguments match stebz_count_{s,d}'s parameters in kernels/stebz.cu; every
        // index the kernel forms (blocks[i] < nsplit, rows < n, i < npoints) is in bounds.
        unsafe { launch.launch(cfg) }?;
        {
            let (c_ptr, _c_sync) = batch.counts.device_ptr(&stream);
            // SAFETY: the device counts hold `len` entries, written by the kernel queued above.
            unsafe { batch.counts_host.copy_from_device(len, c_ptr, &stream)? };
        }
        // Reading the pinned counts waits for the copy that fills them.
        counts.copy_from_slice(&batch.counts_host.as_slice()?[..len]);
        Ok(())
    }
}

impl<T: Real> Drop for GpuCounter<'_, T> {
    fn drop(&mut self) {
        LAST_STATS.with(|c| c.set(self.stats));
    }
}

impl<T: Real> Counter<T> for GpuCounter<'_, T> {
    fn points_per_interval(&self, intervals: usize) -> usize {
        self.model
            .best_points(intervals.max(1), self.mean_rows, self.max_rows)
    }

    fn count(&mut self, blocks: &[u32], x: &[T], counts: &mut [i32]) -> Result<(), CountError> {
        let p = &self.problem;
        let (mut steps, mut rows) = (0u64, 0usize);
        for &b in blocks {
            let len = p.block_rows(b as usize).len();
            steps += len as u64;
            rows = rows.max(len);
        }
        let (work, chain) = (steps as f64, rows as f64);
        let started = std::time::Instant::now();
        if self.model.cpu_time(work, chain) < self.model.gpu_time(work, chain) {
            self.cpu.count_into(blocks, x, counts);
            self.stats.cpu_steps += steps;
            self.stats.cpu_batches += 1;
            self.stats.cpu_seconds += started.elapsed().as_secs_f64();
            return Ok(());
        }
        self.count_on_gpu(blocks, x, counts).map_err(err)?;
        self.stats.gpu_steps += steps;
        self.stats.gpu_batches += 1;
        self.stats.gpu_seconds += started.elapsed().as_secs_f64();
        Ok(())
    }

    fn name(&self) -> &'static str {
        "gpu"
    }
}
