//! `hylapack tune`: measures the costs the stebz performance model needs on this machine and
//! stores them in the cache directory, where later calls on the same GPU model read them.

use crate::table::timings;
use hylapack::real::Real;
use hylapack::stebz::count::{Counter, SturmProblem};
use hylapack::stebz::cpu::CpuCounter;
use hylapack::stebz::gpu::{tuning_file, CountModel, GpuCounter};
use hylapack::testmat::{self, Rng, TridiagFamily};

fn best_of(reps: usize, f: impl FnMut()) -> f64 {
    timings(reps, f)[0]
}

/// A random block of order `n`, prepared for counts.
fn block<T: Real>(n: usize, rng: &mut Rng) -> (Vec<T>, Vec<T>) {
    let (d, e) = testmat::tridiag::<T>(TridiagFamily::Random, n, rng);
    let mut e2: Vec<T> = e.iter().map(|&x| x * x).collect();
    e2.push(T::ZERO);
    (d, e2)
}

/// Seconds for one batch of `points` counts over the whole of a block of order `n`.
fn batch_time<T: Real>(n: usize, points: usize, gpu: bool, rng: &mut Rng) -> Result<f64, String> {
    let (d, e2) = block::<T>(n, rng);
    let ends = [n];
    let p = SturmProblem {
        d: &d,
        e2: &e2,
        pivmin: T::SAFE_MIN,
        block_ends: &ends,
    };
    let x: Vec<T> = (0..points)
        .map(|_| T::from_f64(rng.range(-3.0, 3.0)))
        .collect();
    let blocks = vec![0u32; points];
    let mut counts = vec![0; points];
    if gpu {
        let mut c =
            GpuCounter::with_model(&p, CountModel::always_gpu()).map_err(|e| e.to_string())?;
        c.count(&blocks, &x, &mut counts)
            .map_err(|e| e.to_string())?;
        Ok(best_of(5, || {
            c.count(&blocks, &x, &mut counts)
                .expect("counted once already")
        }))
    } else {
        let c = CpuCounter::new(&p);
        Ok(best_of(3, || c.count_into(&blocks, &x, &mut counts)))
    }
}

/// Measures each term of the model on batches that isolate it.
fn measure<T: Real>(rng: &mut Rng) -> Result<CountModel, String> {
    let rows = 20_000;
    let gpu_overhead_s = batch_time::<T>(2, 1, true, rng)?;
    let gpu_chain = batch_time::<T>(rows, 1, true, rng)?;
    let gpu_full = batch_time::<T>(rows, 131_072, true, rng)?;
    let cpu_chain = batch_time::<T>(rows, 1, false, rng)?;
    let cpu_full = batch_time::<T>(rows, 4096, false, rng)?;
    // Just above the CPU counter's threading threshold: the excess over arithmetic is start-up.
    let small_points = hylapack::stebz::cpu::PARALLEL_STEPS.div_ceil(rows) + 1;
    let cpu_threaded = batch_time::<T>(rows, small_points, false, rng)?;
    Ok(CountModel {
        gpu_overhead_s,
        gpu_step_latency_s: (gpu_chain - gpu_overhead_s).max(0.0) / rows as f64,
        gpu_steps_per_s: (131_072 * rows) as f64 / (gpu_full - gpu_overhead_s).max(1e-9),
        cpu_step_latency_s: cpu_chain / rows as f64,
        cpu_steps_per_s: (4096 * rows) as f64 / cpu_full,
        cpu_thread_start_s: (cpu_threaded
            - (small_points * rows) as f64 * cpu_full / (4096 * rows) as f64)
            .max(0.0),
    })
}

pub fn run() -> i32 {
    let gpu = match hylapack::device::gpu() {
        Ok(g) => g,
        Err(e) => {
            eprintln!("hylapack tune: no GPU ({e}); nothing to tune");
            return 1;
        }
    };
    let mut rng = Rng::new(testmat::seed_from_time());
    let mut text = format!(
        "# Sturm-count cost model measured by `hylapack tune` on {}\n",
        gpu.info.name
    );
    for (key, model) in [
        ("f64", measure::<f64>(&mut rng)),
        ("f32", measure::<f32>(&mut rng)),
    ] {
        match model {
            Ok(m) => {
                println!(
                    "{key}: GPU batch overhead {:.1} us, row latency {:.1} ns, {:.3} T steps/s; CPU row latency {:.1} ns, {:.2} G steps/s, thread start {:.1} us",
                    m.gpu_overhead_s * 1e6,
                    m.gpu_step_latency_s * 1e9,
                    m.gpu_steps_per_s / 1e12,
                    m.cpu_step_latency_s * 1e9,
                    m.cpu_steps_per_s / 1e9,
                    m.cpu_thread_start_s * 1e6
                );
                text += &format!(
                    "[{key}]\ngpu_overhead_s = {:e}\ngpu_step_latency_s = {:e}\ngpu_steps_per_s = {:e}\ncpu_step_latency_s = {:e}\ncpu_steps_per_s = {:e}\ncpu_thread_start_s = {:e}\n",
                    m.gpu_overhead_s, m.gpu_step_latency_s, m.gpu_steps_per_s, m.cpu_step_latency_s, m.cpu_steps_per_s, m.cpu_thread_start_s
                );
            }
            Err(e) => {
                eprintln!("hylapack tune: {key}: {e}");
                return 1;
            }
        }
    }
    let path = tuning_file(gpu);
    let written = path
        .parent()
        .map_or(Ok(()), std::fs::create_dir_all)
        .and_then(|_| std::fs::write(&path, text));
    match written {
        Ok(()) => {
            println!("written to {}", path.display());
            0
        }
        Err(e) => {
            eprintln!("hylapack tune: cannot write {}: {e}", path.display());
            1
        }
    }
}
