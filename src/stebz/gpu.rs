//! Sturm counts on the GPU (`kernels/stebz.cu`), in tandem with the CPU.
//!
//! The matrix is uploaded once per call; each multisection step sends its points and block
//! indices through pinned staging buffers and reads the counts back. Small steps, where a
//! launch costs more than the arithmetic, are counted on the CPU instead (same recurrence,
//! same counts). How many points each interval gets comes from the performance model of the
//! paper: maximise bits gained per second, log2(ML + 1) / time(ML).

use super::count::{sturm_count, CountError, Counter, SturmProblem};
use crate::device::memory::Reservation;
use crate::device::{self, kernels, DeviceError, Gpu, PooledStream};
use crate::real::Real;
use cudarc::driver::{
    result as cu, CudaFunction, CudaSlice, DevicePtr, LaunchConfig, PinnedHostSlice, PushKernelArg,
};

/// Costs of one multisection step, in seconds and Sturm steps (one row of one count) per second.
#[derive(Clone, Copy, Debug)]
pub struct CountModel {
    /// Fixed cost of a GPU step: launch, two small transfers, one synchronisation.
    pub gpu_overhead_s: f64,
    pub gpu_steps_per_s: f64,
    pub cpu_steps_per_s: f64,
}

impl CountModel {
    /// Defaults for double precision on an H100; single precision counts run about 1.7x faster.
    pub fn default_for<T: Real>() -> Self {
        let single = T::PREFIX == 's';
        CountModel {
            gpu_overhead_s: 40e-6,
            gpu_steps_per_s: if single { 9.0e11 } else { 5.0e11 },
            cpu_steps_per_s: if single { 1.5e9 } else { 1.0e9 },
        }
    }

    pub fn gpu_time(&self, steps: f64) -> f64 {
        self.gpu_overhead_s + steps / self.gpu_steps_per_s
    }

    pub fn cpu_time(&self, steps: f64) -> f64 {
        steps / self.cpu_steps_per_s
    }

    /// The ML in 1..=1024 that gains the most bits per second for `intervals` intervals whose
    /// counts cost `rows` steps each.
    pub fn best_points(&self, intervals: usize, rows: f64) -> usize {
        let mut best = (1usize, 0.0f64);
        let mut ml = 1usize;
        while ml <= 1024 {
            let steps = (intervals * ml) as f64 * rows;
            let time = self.gpu_time(steps).min(self.cpu_time(steps));
            let efficiency = ((ml + 1) as f64).log2() / time;
            if efficiency > best.1 {
                best = (ml, efficiency);
            }
            ml = 2 * ml + 1; // ML + 1 a power of two: each step gains whole bits
        }
        best.0
    }
}

/// Device-side state of one call.
pub struct GpuCounter<'a, T: Real> {
    problem: SturmProblem<'a, T>,
    model: CountModel,
    gpu: &'static Gpu,
    stream: PooledStream,
    func: CudaFunction,
    d: CudaSlice<T>,
    e2: CudaSlice<T>,
    block_ends: CudaSlice<u32>,
    batch: Option<Batch<T>>,
    _matrix_memory: Reservation<'static>,
    /// Average rows per block, for the model.
    mean_rows: f64,
    gpu_steps: u64,
    cpu_steps: u64,
}

/// Buffers for one step's points, grown on demand.
struct Batch<T> {
    capacity: usize,
    x: CudaSlice<T>,
    blocks: CudaSlice<u32>,
    counts: CudaSlice<i32>,
    x_host: PinnedHostSlice<T>,
    blocks_host: PinnedHostSlice<u32>,
    counts_host: PinnedHostSlice<i32>,
    _memory: Reservation<'static>,
}

fn err(e: impl std::fmt::Display) -> CountError {
    CountError(e.to_string())
}

impl<'a, T: Real> GpuCounter<'a, T> {
    /// Uploads the matrix once; fails (with nothing changed) when no GPU path is possible.
    pub fn new(problem: &SturmProblem<'a, T>) -> Result<Self, CountError> {
        Self::with_model(problem, CountModel::default_for::<T>())
    }

    pub fn with_model(
        problem: &SturmProblem<'a, T>,
        model: CountModel,
    ) -> Result<Self, CountError> {
        let gpu = device::gpu().map_err(err)?;
        let n = problem.d.len();
        if n >= u32::MAX as usize {
            return Err(CountError("matrix too large for 32-bit row indices".into()));
        }
        let bytes = (2 * n * std::mem::size_of::<T>() + 4 * problem.block_ends.len()) as u64;
        let reservation = gpu.budget.reserve(bytes).map_err(err)?;
        let module = gpu.module(&kernels::STEBZ).map_err(err)?;
        let func = module
            .load_function(&format!("stebz_count_{}", T::PREFIX))
            .map_err(err)?;
        let stream = gpu.stream().map_err(err)?;
        let ends: Vec<u32> = problem.block_ends.iter().map(|&e| e as u32).collect();
        let d = stream.clone_htod(problem.d).map_err(err)?;
        let e2 = stream.clone_htod(problem.e2).map_err(err)?;
        let block_ends = stream.clone_htod(&ends).map_err(err)?;
        Ok(GpuCounter {
            problem: *problem,
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
            gpu_steps: 0,
            cpu_steps: 0,
        })
    }

    /// Sturm steps evaluated on (GPU, CPU) so far.
    pub fn steps(&self) -> (u64, u64) {
        (self.gpu_steps, self.cpu_steps)
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
            let (x_ptr, _x_sync) = batch.x.device_ptr(&stream);
            let (b_ptr, _b_sync) = batch.blocks.device_ptr(&stream);
            // SAFETY: both device buffers hold at least `len` elements of the copied type, and
            // the pinned sources stay alive and untouched until the synchronisation below.
            unsafe {
                cu::memcpy_htod_async(x_ptr, &batch.x_host.as_slice()?[..len], stream.cu_stream())?;
                cu::memcpy_htod_async(
                    b_ptr,
                    &batch.blocks_host.as_slice()?[..len],
                    stream.cu_stream(),
                )?;
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
            let out = &mut batch.counts_host.as_mut_slice()?[..len];
            // SAFETY: the pinned destination holds `len` entries and is not read until the
            // stream is synchronised.
            unsafe { cu::memcpy_dtoh_async(out, c_ptr, stream.cu_stream())? };
        }
        stream.synchronize()?;
        counts.copy_from_slice(&batch.counts_host.as_slice()?[..len]);
        Ok(())
    }
}

impl<T: Real> Counter<T> for GpuCounter<'_, T> {
    fn points_per_interval(&self, intervals: usize) -> usize {
        self.model.best_points(intervals.max(1), self.mean_rows)
    }

    fn count(&mut self, blocks: &[u32], x: &[T], counts: &mut [i32]) -> Result<(), CountError> {
        let p = &self.problem;
        let steps: u64 = blocks
            .iter()
            .map(|&b| p.block_rows(b as usize).len() as u64)
            .sum();
        if self.model.cpu_time(steps as f64) < self.model.gpu_time(steps as f64) {
            for ((c, &b), &xi) in counts.iter_mut().zip(blocks).zip(x) {
                *c = sturm_count(p.d, p.e2, p.pivmin, p.block_rows(b as usize), xi);
            }
            self.cpu_steps += steps;
            return Ok(());
        }
        self.count_on_gpu(blocks, x, counts).map_err(err)?;
        self.gpu_steps += steps;
        Ok(())
    }

    fn name(&self) -> &'static str {
        "gpu"
    }
}
