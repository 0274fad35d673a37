//! The GPU Sturm-count kernel against the CPU recurrence: the counts must be equal, point for
//! point, since both evaluate LAPACK's recurrence in IEEE arithmetic without contraction.
//! Without a GPU the tests check that the GPU path declines cleanly; with
//! HYLAPACK_REQUIRE_GPU=1 a missing GPU is a failure.

use hylapack::real::Real;
use hylapack::stebz::count::{sturm_count, Counter, SturmProblem};
use hylapack::stebz::gpu::{CountModel, GpuCounter};
use hylapack::testmat::{seed_from_time, Rng};

fn require_gpu() -> bool {
    std::env::var("HYLAPACK_REQUIRE_GPU").as_deref() == Ok("1")
}

/// A random tridiagonal matrix split into blocks, prepared the way xSTEBZ prepares it. The first
/// blocks have every length from 1 to 20, so the kernel's row groups (of 8, loaded one group
/// ahead) meet every boundary case; the rest split at random.
// j indexes E² and the block ends alike.
#[allow(clippy::needless_range_loop)]
fn problem<T: Real>(n: usize, rng: &mut Rng) -> (Vec<T>, Vec<T>, T, Vec<usize>) {
    let d: Vec<T> = (0..n)
        .map(|_| T::from_f64(rng.range(-1.0, 1.0) * 4.0))
        .collect();
    let mut e2 = vec![T::ZERO; n];
    let mut ends = Vec::new();
    let mut max_e2 = T::ONE;
    let mut fixed_ends = (1..=20).scan(0, |end, len| {
        *end += len;
        Some(*end)
    });
    let mut next_fixed = fixed_ends.next();
    for j in 0..n - 1 {
        if next_fixed == Some(j + 1) {
            ends.push(j + 1);
            next_fixed = fixed_ends.next();
        } else if next_fixed.is_none() && rng.range(-1.0, 1.0) > 0.98 {
            ends.push(j + 1); // a split
        } else {
            let e = T::from_f64(rng.range(-1.0, 1.0));
            e2[j] = e * e;
            max_e2 = max_e2.max(e2[j]);
        }
    }
    ends.push(n);
    (d, e2, max_e2 * T::SAFE_MIN, ends)
}

/// `pivmin_scale` > 0 replaces LAPACK's pivmin by a large one, so that the small-pivot
/// replacement branch runs often.
fn gpu_counts_equal_cpu_counts<T: Real>(pivmin_scale: f64) {
    let seed = seed_from_time();
    let mut rng = Rng::new(seed);
    let n = 3000;
    let (d, e2, pivmin, ends) = problem::<T>(n, &mut rng);
    let pivmin = if pivmin_scale > 0.0 {
        T::from_f64(pivmin_scale)
    } else {
        pivmin
    };
    let p = SturmProblem {
        d: &d,
        e2: &e2,
        pivmin,
        block_ends: &ends,
    };
    // A model that always prefers the GPU, so every batch below runs the kernel.
    let always_gpu = CountModel::always_gpu();
    let mut counter = match GpuCounter::with_model(&p, always_gpu) {
        Ok(c) => c,
        Err(e) => {
            assert!(
                !require_gpu(),
                "HYLAPACK_REQUIRE_GPU=1 but the GPU path is unavailable: {e}"
            );
            eprintln!("skipped: no GPU ({e})");
            return;
        }
    };
    for round in 0..3 {
        let points = [10, 1000, 70_000][round];
        let mut blocks = Vec::with_capacity(points);
        let mut x = Vec::with_capacity(points);
        for i in 0..points {
            let b = rng.below(ends.len());
            blocks.push(b as u32);
            let rows = p.block_rows(b);
            // Mix random points with exact diagonal entries and signed zeros: the hard cases.
            x.push(match i % 4 {
                0 => d[rows.start + i % rows.len()],
                1 => T::from_f64(if i % 8 == 1 { 0.0 } else { -0.0 }),
                _ => T::from_f64(rng.range(-1.0, 1.0) * 6.0),
            });
        }
        let mut gpu = vec![-1; points];
        counter.count(&blocks, &x, &mut gpu).unwrap();
        for i in 0..points {
            let cpu = sturm_count(&d, &e2, pivmin, p.block_rows(blocks[i] as usize), x[i]);
            assert_eq!(
                gpu[i],
                cpu,
                "{}: seed {seed}, point {i} x = {:?} block {}",
                T::PREFIX,
                x[i],
                blocks[i]
            );
        }
    }
    let (gpu_steps, cpu_steps) = counter.steps();
    assert!(
        gpu_steps > 0 && cpu_steps == 0,
        "every batch must have run on the GPU"
    );
}

#[test]
fn gpu_counts_equal_cpu_counts_f64() {
    gpu_counts_equal_cpu_counts::<f64>(0.0);
}

#[test]
fn gpu_counts_equal_cpu_counts_with_large_pivmin() {
    gpu_counts_equal_cpu_counts::<f64>(0.3);
    gpu_counts_equal_cpu_counts::<f32>(0.3);
}

#[test]
fn gpu_counts_equal_cpu_counts_f32() {
    gpu_counts_equal_cpu_counts::<f32>(0.0);
}

#[test]
fn model_prefers_more_points_for_few_intervals() {
    let m = CountModel::default_for::<f64>();
    let few = m.best_points(1, 8000.0, 8000.0);
    let many = m.best_points(100_000, 8000.0, 8000.0);
    assert!(
        few > many,
        "1 interval: {few} points, 100000 intervals: {many}"
    );
    assert_eq!(
        many, 1,
        "with 1e5 intervals of 8000 rows the GPU is already full"
    );
}
