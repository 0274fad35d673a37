//! `xgtsv_spike` (host pointers) against the system LAPACK's xGTSV: the paper's 16 matrix types
//! (stability), random and diagonally dominant systems at many sizes and right-hand-side
//! counts, singular systems (INFO and B exactly as LAPACK), bad arguments (INFO and xerbla),
//! and systems above the GPU memory limit (chunked, streamed). The device-pointer entry is in
//! `gtsv_device.rs`, the strided batch in `gtsv_batch.rs`, the host transfers in
//! `gtsv_transfer.rs`.
//!
//! The backend comes from the environment: `HYLAPACK_DEVICE=gpu` runs the GPU path (with
//! `HYLAPACK_REQUIRE_GPU=1` it must actually run there), anything else the CPU path. The SPIKE
//! path is forced at small sizes too (partition counts as in the paper) so it is exercised here.

use hylapack::dispatch::Backend;
use hylapack::gtsv::gpu::GpuOptions;
use hylapack::gtsv::matrices::{self, Tridiag, TABLE3};
use hylapack::gtsv::{self, Options, Solver};
use hylapack::lapack::Lapack;
use hylapack::testmat::{seed_from_time, Rng};

#[path = "common/gtsv.rs"]
mod gtsv_common;
use gtsv_common::*;

#[test]
fn table3_stability_within_10x_of_lapack() {
    let seed = seed_from_time();
    let mut rng = Rng::new(seed);
    let n = 512;
    println!(
        "Table III types at n = {n} (seed {seed}, backend {}): relative residual ||Ax-b||/||b||",
        backend().name()
    );
    println!(
        "{:>4}  {:>10}  {:>10}  {:>7}  description",
        "type", "ours", "LAPACK", "solver"
    );
    let mut failures = Vec::new();
    for t in 1..=16 {
        let a = matrices::table3(t, n, &mut rng);
        let b = rhs(n, n, 1, &mut rng);
        let got = ours::<f64>(&a, &b, n, 1, &spike_everywhere());
        let want = lapack::<f64>(&a, &b, n, 1);
        let (r_ours, r_lap) = (
            rel_residual(&a, &got.x, &b, n, 0),
            rel_residual(&a, &want.x, &b, n, 0),
        );
        let solver = match got.report.as_ref().map(|r| r.solver) {
            Some(Solver::Spike) => "spike",
            _ => "lapack",
        };
        println!(
            "{t:>4}  {r_ours:>10.3e}  {r_lap:>10.3e}  {solver:>7}  {}",
            TABLE3[t - 1]
        );
        assert_eq!(got.info, want.info, "type {t}: INFO");
        if r_lap.is_finite() && !within_10x_of_lapack(&a, &b, r_ours, r_lap) {
            failures.push(format!("type {t}: ours {r_ours:e} vs LAPACK {r_lap:e}"));
        }
    }
    assert!(failures.is_empty(), "seed {seed}: {failures:?}");
}

/// Ill-conditioned random systems (Table III types 4 and 5) with several right-hand sides, one
/// of them zero: the columns that refine do so together while the zero one must stay exactly
/// zero, so a refinement step keeps some columns' corrections and not others'. (At this order
/// LAPACK's residual is at times 15 times below a backward-stable one, so the Table III ratio
/// test is kept to its n = 512.)
#[test]
fn refinement_with_several_right_hand_sides() {
    let seed = seed_from_time();
    let mut rng = Rng::new(seed);
    let (n, nrhs) = (3000, 4);
    let ldb = n + 2;
    let mut refined = 0;
    for trial in 0..8 {
        let a = matrices::table3(4 + trial % 2, n, &mut rng);
        let mut b = rhs(n, ldb, nrhs, &mut rng);
        b[2 * ldb..2 * ldb + n].fill(0.0);
        let got = ours::<f64>(&a, &b, ldb, nrhs, &spike_everywhere());
        let want = lapack::<f64>(&a, &b, ldb, nrhs);
        assert_eq!(got.info, want.info, "seed {seed} trial {trial}: INFO");
        if backend() == Backend::Gpu {
            refined += hylapack::gtsv::gpu::last_phases().refine_steps;
        }
        for c in 0..nrhs {
            if c == 2 {
                assert!(
                    got.x[c * ldb..c * ldb + n].iter().all(|&v| v == 0.0),
                    "seed {seed} trial {trial}: the zero right-hand side's solution is not zero"
                );
                continue;
            }
            // Backward stable, as LAPACK is (a column's solution mixed up with another's, or
            // a correction applied to the wrong column, is far off).
            let (be_ours, be_lap) = (
                backward_error(&a, &got.x, &b, ldb, c),
                backward_error(&a, &want.x, &b, ldb, c),
            );
            assert!(
                be_ours <= 2.0 * f64::EPSILON,
                "seed {seed} trial {trial} column {c}: backward error {be_ours:e} (LAPACK {be_lap:e})"
            );
        }
        assert!(
            got.x[n..ldb].iter().all(|&v| v == 777.0),
            "seed {seed}: rows beyond N changed"
        );
    }
    println!("seed {seed}: {refined} GPU refinement steps over 8 solves");
}

/// Random or diagonally dominant systems of order n, every NRHS in `nrhss`, LDB = n + 3.
fn check_sizes<T: Lapack>(sizes: &[usize], nrhss: &[usize], opts: &Options) {
    let seed = seed_from_time();
    let mut rng = Rng::new(seed);
    for &n in sizes {
        for &nrhs in nrhss {
            for dominant in [true, false] {
                let a = if dominant {
                    matrices::diagonally_dominant(n, &mut rng)
                } else {
                    matrices::random(n, &mut rng)
                };
                let ldb = n + 3;
                let b = rhs(n, ldb, nrhs, &mut rng);
                let b_t: Vec<f64> = convert::<T>(&b).iter().map(|v| v.to_f64()).collect();
                let got = ours::<T>(&a, &b, ldb, nrhs, opts);
                let want = lapack::<T>(&a, &b, ldb, nrhs);
                let what = format!(
                    "{}: n {n} nrhs {nrhs} dominant {dominant} seed {seed}",
                    T::PREFIX
                );
                assert_eq!(got.info, want.info, "{what}: INFO");
                let report = got.report.as_ref().unwrap();
                if dominant && n >= 2 {
                    assert_eq!(
                        report.solver,
                        Solver::Spike,
                        "{what}: SPIKE rejected: {:?}",
                        report.note
                    );
                }
                for c in 0..nrhs {
                    // Padding rows between columns are untouched.
                    for i in n..ldb {
                        assert_eq!(
                            got.x[i + c * ldb].to_f64(),
                            777.0,
                            "{what}: padding row {i} of column {c}"
                        );
                    }
                    if want.info != 0 {
                        continue;
                    }
                    let be = backward_error(&a, &got.x, &b_t, ldb, c);
                    let eps = T::EPS.to_f64();
                    assert!(be <= 64.0 * eps, "{what}: column {c} backward error {be:e}");
                    if dominant {
                        // Well conditioned (kappa < 3): the solutions agree to a few ulps.
                        let xmax = (0..n)
                            .map(|i| want.x[i + c * ldb].to_f64().abs())
                            .fold(0.0, f64::max);
                        for i in 0..n {
                            let diff =
                                (got.x[i + c * ldb].to_f64() - want.x[i + c * ldb].to_f64()).abs();
                            assert!(
                                diff <= 100.0 * eps * xmax,
                                "{what}: x[{i}, {c}] differs by {diff:e}"
                            );
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn small_and_boundary_sizes_f64() {
    // Boundaries of the 64-block CPU layout and of 8-row GPU partitions.
    let sizes = [
        1, 2, 3, 4, 7, 8, 9, 15, 16, 17, 63, 64, 65, 127, 128, 129, 511, 512, 513, 1000, 4095,
        4096, 4097,
    ];
    check_sizes::<f64>(&sizes, &[1, 3, 16], &spike_everywhere());
}

#[test]
fn small_and_boundary_sizes_f32() {
    check_sizes::<f32>(
        &[1, 2, 3, 17, 64, 65, 513, 4097],
        &[1, 3],
        &spike_everywhere(),
    );
}

#[test]
fn large_sizes_default_options() {
    // The default tuning (CPU: a few blocks per thread; GPU: 32-row partitions, recursion),
    // with SPIKE on the CPU from n = 4096 (by default the CPU backend calls LAPACK xGTSV).
    let o = Options {
        cpu_min_n: 4096,
        ..Options::default()
    };
    check_sizes::<f64>(&[4096, 65_537, 100_003, 300_000], &[1, 3], &o);
    check_sizes::<f64>(&[40_000], &[16], &o);
    check_sizes::<f32>(&[100_003], &[1], &o);
}

/// Singular systems: INFO and B exactly LAPACK's.
fn singular_case<T: Lapack>(n: usize, zero_row: usize, nrhs: usize, rng: &mut Rng) {
    singular_case_with::<T>(n, zero_row, nrhs, rng, &spike_everywhere())
}

fn singular_case_with<T: Lapack>(
    n: usize,
    zero_row: usize,
    nrhs: usize,
    rng: &mut Rng,
    opts: &Options,
) {
    let mut a = matrices::diagonally_dominant(n, rng);
    // Row zero_row entirely zero: U(zero_row, zero_row) is exactly zero in partial pivoting.
    a.d[zero_row] = 0.0;
    if zero_row > 0 {
        a.dl[zero_row - 1] = 0.0;
    }
    if zero_row + 1 < n {
        a.du[zero_row] = 0.0;
    }
    let ldb = n + 1;
    let b = rhs(n, ldb, nrhs, rng);
    let got = ours::<T>(&a, &b, ldb, nrhs, opts);
    let want = lapack::<T>(&a, &b, ldb, nrhs);
    assert!(want.info > 0, "the test matrix must be singular for LAPACK");
    assert_eq!(
        got.info,
        want.info,
        "{}: n {n} zero row {zero_row}",
        T::PREFIX
    );
    let same = got
        .x
        .iter()
        .zip(&want.x)
        .all(|(p, q)| p.to_f64().to_bits() == q.to_f64().to_bits());
    assert!(
        same,
        "{}: n {n} zero row {zero_row}: B differs from LAPACK's",
        T::PREFIX
    );
}

#[test]
fn singular_systems_end_as_lapack() {
    let mut rng = Rng::new(seed_from_time());
    for &(n, row) in &[
        (1, 0),
        (2, 1),
        (5, 0),
        (100, 37),
        (5000, 0),
        (5000, 77),
        (5000, 4999),
        (5000, 2500),
    ] {
        singular_case::<f64>(n, row, 2, &mut rng);
        singular_case::<f32>(n, row, 1, &mut rng);
    }
    // Two equal rows [1 1; 1 1] at a partition boundary.
    let n = 4096;
    let mut a = matrices::diagonally_dominant(n, &mut rng);
    let k = 63;
    a.du[k - 1] = 0.0;
    a.dl[k + 1] = 0.0;
    a.d[k] = 1.0;
    a.du[k] = 1.0;
    a.dl[k] = 1.0;
    a.d[k + 1] = 1.0;
    let b = rhs(n, n, 1, &mut rng);
    let got = ours::<f64>(&a, &b, n, 1, &spike_everywhere());
    let want = lapack::<f64>(&a, &b, n, 1);
    assert!(want.info > 0);
    assert_eq!(got.info, want.info);
    assert!(got
        .x
        .iter()
        .zip(&want.x)
        .all(|(p, q)| p.to_bits() == q.to_bits()));
}

#[test]
fn nrhs_zero_and_n_zero() {
    let mut rng = Rng::new(1);
    let a = matrices::random(10, &mut rng);
    let got = ours::<f64>(&a, &[], 10, 0, &spike_everywhere());
    assert_eq!(got.info, 0);
    let empty = Tridiag {
        dl: vec![],
        d: vec![],
        du: vec![],
    };
    let got = ours::<f64>(&empty, &[], 1, 3, &spike_everywhere());
    assert_eq!(got.info, 0);
}

#[test]
fn c_and_fortran_entry_points() {
    use hylapack::api::gtsv::{dgtsv_spike, dgtsv_spike_, sgtsv_spike, sgtsv_spike_};
    let mut rng = Rng::new(seed_from_time());
    let n = 300;
    let a = matrices::diagonally_dominant(n, &mut rng);
    let b = rhs(n, n + 2, 2, &mut rng);
    let want = lapack::<f64>(&a, &b, n + 2, 2);
    let (mut dl, mut d, mut du, mut x) = (a.dl.clone(), a.d.clone(), a.du.clone(), b.clone());
    let info = unsafe {
        dgtsv_spike(
            n as i32,
            2,
            dl.as_mut_ptr(),
            d.as_mut_ptr(),
            du.as_mut_ptr(),
            x.as_mut_ptr(),
            n as i32 + 2,
        )
    };
    assert_eq!(info, 0);
    for (&got, &want) in x.iter().zip(&want.x) {
        assert!((got - want).abs() <= 1e-12 * (1.0 + want.abs()));
    }
    let (mut dl, mut d, mut du, mut x) = (a.dl.clone(), a.d.clone(), a.du.clone(), b.clone());
    let (n_i, nrhs_i, ldb_i, mut info) = (n as i32, 2, n as i32 + 2, -99);
    unsafe {
        dgtsv_spike_(
            &n_i,
            &nrhs_i,
            dl.as_mut_ptr(),
            d.as_mut_ptr(),
            du.as_mut_ptr(),
            x.as_mut_ptr(),
            &ldb_i,
            &mut info,
        )
    };
    assert_eq!(info, 0);
    assert!((x[0] - want.x[0]).abs() <= 1e-12 * (1.0 + want.x[0].abs()));
    let (mut dl, mut d, mut du, mut x) = (
        convert::<f32>(&a.dl),
        convert::<f32>(&a.d),
        convert::<f32>(&a.du),
        convert::<f32>(&b),
    );
    let info = unsafe {
        sgtsv_spike(
            n as i32,
            2,
            dl.as_mut_ptr(),
            d.as_mut_ptr(),
            du.as_mut_ptr(),
            x.as_mut_ptr(),
            n as i32 + 2,
        )
    };
    assert_eq!(info, 0);
    let mut info = -99;
    let (mut dl, mut d, mut du, mut x) = (
        convert::<f32>(&a.dl),
        convert::<f32>(&a.d),
        convert::<f32>(&a.du),
        convert::<f32>(&b),
    );
    unsafe {
        sgtsv_spike_(
            &n_i,
            &nrhs_i,
            dl.as_mut_ptr(),
            d.as_mut_ptr(),
            du.as_mut_ptr(),
            x.as_mut_ptr(),
            &ldb_i,
            &mut info,
        )
    };
    assert_eq!(info, 0);
}

#[test]
fn bad_arguments_give_info() {
    use hylapack::api::gtsv::{dgtsv_spike, dgtsv_spike_, sgtsv_spike};
    use std::ptr::null_mut;
    let (mut dl, mut d, mut du, mut b) = (vec![1.0; 4], vec![4.0; 5], vec![1.0; 4], vec![1.0; 10]);
    let p = |v: &mut Vec<f64>| v.as_mut_ptr();
    unsafe {
        assert_eq!(
            dgtsv_spike(-1, 1, p(&mut dl), p(&mut d), p(&mut du), p(&mut b), 5),
            -1
        );
        assert_eq!(
            dgtsv_spike(5, -1, p(&mut dl), p(&mut d), p(&mut du), p(&mut b), 5),
            -2
        );
        assert_eq!(
            dgtsv_spike(5, 1, p(&mut dl), p(&mut d), p(&mut du), p(&mut b), 4),
            -7
        );
        assert_eq!(
            dgtsv_spike(0, 1, null_mut(), null_mut(), null_mut(), null_mut(), 0),
            -7
        );
        assert_eq!(
            dgtsv_spike(-1, -1, p(&mut dl), p(&mut d), p(&mut du), p(&mut b), 0),
            -1,
            "N is checked first"
        );
        assert_eq!(
            dgtsv_spike(5, 1, null_mut(), p(&mut d), p(&mut du), p(&mut b), 5),
            -3
        );
        assert_eq!(
            dgtsv_spike(5, 1, p(&mut dl), null_mut(), p(&mut du), p(&mut b), 5),
            -4
        );
        assert_eq!(
            dgtsv_spike(5, 1, p(&mut dl), p(&mut d), null_mut(), p(&mut b), 5),
            -5
        );
        assert_eq!(
            dgtsv_spike(5, 1, p(&mut dl), p(&mut d), p(&mut du), null_mut(), 5),
            -6
        );
        // Legal: nothing referenced.
        assert_eq!(
            dgtsv_spike(0, 0, null_mut(), null_mut(), null_mut(), null_mut(), 1),
            0
        );
        assert_eq!(
            dgtsv_spike(1, 0, null_mut(), p(&mut d), null_mut(), null_mut(), 1),
            0
        );
        let mut info = 0;
        let (n, nrhs, ldb) = (5, 1, 3);
        dgtsv_spike_(
            &n,
            &nrhs,
            p(&mut dl),
            p(&mut d),
            p(&mut du),
            p(&mut b),
            &ldb,
            &mut info,
        );
        assert_eq!(info, -7);
        let (mut sdl, mut sd, mut sdu, mut sb) = (
            vec![1.0f32; 4],
            vec![4.0f32; 5],
            vec![1.0f32; 4],
            vec![1.0f32; 5],
        );
        assert_eq!(
            sgtsv_spike(
                5,
                -3,
                sdl.as_mut_ptr(),
                sd.as_mut_ptr(),
                sdu.as_mut_ptr(),
                sb.as_mut_ptr(),
                5
            ),
            -2
        );
    }
    // The inputs of a rejected call are untouched.
    assert!(d.iter().all(|&v| v == 4.0) && b.iter().all(|&v| v == 1.0));
}

#[test]
fn gpu_path_runs_when_required() {
    // With HYLAPACK_REQUIRE_GPU=1 the GPU SPIKE must run (default tuning, recursion of several
    // levels) and be accepted on a diagonally dominant system; otherwise it may decline.
    let mut rng = Rng::new(seed_from_time());
    let n = 1 << 20;
    let a = matrices::diagonally_dominant(n, &mut rng);
    let b = rhs(n, n, 2, &mut rng);
    let (mut dl, mut d, mut du, mut x) = (a.dl.clone(), a.d.clone(), a.du.clone(), b.clone());
    let r = gtsv::gtsv(&mut dl, &mut d, &mut du, &mut x, n, 2, Backend::Gpu);
    if r.backend != Backend::Gpu {
        assert!(
            !require_gpu(),
            "HYLAPACK_REQUIRE_GPU=1 but the GPU path did not run: {:?}",
            r.note
        );
        eprintln!("skipped: {:?}", r.note);
        return;
    }
    assert_eq!(r.solver, Solver::Spike);
    for c in 0..2 {
        assert!(backward_error(&a, &x, &b, n, c) <= 64.0 * f64::EPSILON);
    }
}

#[test]
fn tail_kernel_agrees_with_level_kernels() {
    // The bottom levels in one CTA (`gtsv_tail`) do the level kernels' arithmetic operation for
    // operation: with and without it, the GPU answers (refinement steps included) must agree
    // bit for bit. n = 5000 runs the tail from the second level down, the larger sizes below
    // several levels of the level kernels; tail_n = n makes a tail of thousands of partitions
    // per thread's share. (Without the window solve, which would answer the dominant systems.)
    if backend() != Backend::Gpu || !have_gpu_or_skip() {
        eprintln!("skipped: the tail kernel is GPU code (HYLAPACK_DEVICE=gpu)");
        return;
    }
    let seed = seed_from_time();
    let mut rng = Rng::new(seed);
    let with = |tail_n: usize, threads: u32| Options {
        cpu_min_n: 2,
        gpu: GpuOptions {
            tail_n,
            threads,
            window_halo: 0,
            ..GpuOptions::default()
        },
        ..Options::default()
    };
    fn same<T: Lapack>(
        a: &Tridiag,
        b: &[f64],
        nrhs: usize,
        on: &Options,
        off: &Options,
        seed: u64,
    ) {
        let n = a.n();
        let (x, y) = (ours::<T>(a, b, n, nrhs, on), ours::<T>(a, b, n, nrhs, off));
        assert_eq!(x.info, y.info, "n = {n}, seed {seed}");
        assert_eq!(
            x.report.as_ref().unwrap().solver,
            y.report.as_ref().unwrap().solver
        );
        let differ =
            x.x.iter()
                .zip(&y.x)
                .filter(|(p, q)| p.to_f64().to_bits() != q.to_f64().to_bits())
                .count();
        assert_eq!(
            differ, 0,
            "n = {n}, nrhs {nrhs}: {differ} entries differ, seed {seed}"
        );
    }
    for &(n, nrhs, threads) in &[
        (5000, 1, 64),
        (5000, 3, 32),
        (70_001, 2, 64),
        (300_007, 1, 128),
        (1 << 21, 1, 64),
    ] {
        for kind in 0..2 {
            let a = if kind == 0 {
                matrices::random(n, &mut rng)
            } else {
                matrices::diagonally_dominant(n, &mut rng)
            };
            let b = rhs(n, n, nrhs, &mut rng);
            same::<f64>(&a, &b, nrhs, &with(4096, threads), &with(0, threads), seed);
            if n <= 70_001 {
                same::<f32>(&a, &b, nrhs, &with(4096, threads), &with(0, threads), seed);
            }
            // A tail from the first level below the top, however large.
            same::<f64>(&a, &b, nrhs, &with(n, threads), &with(0, threads), seed);
        }
    }
}

#[test]
fn speculative_refinement_agrees() {
    // The speculating check (gtsv_backsub_spec) prepares a refinement step's top-level
    // separator system with the arithmetic of the refinement's own top-level reduce.
    // One right-hand side: where both ways take the same number of steps, the answers must
    // agree bit for bit. (The speculating check judges the accurate residual, the other the
    // rounded one, so a residual right at the refinement threshold may be judged differently;
    // such a case is only counted.) Several right-hand sides: the columns are independent, so
    // each must equal its own one-column solve bit for bit (columns after the first take the
    // speculative right-hand sides at an offset). Without the window solve, which answers all
    // columns or none, and would answer the dominant systems.
    if backend() != Backend::Gpu || !have_gpu_or_skip() {
        eprintln!("skipped: the speculating check is GPU code (HYLAPACK_DEVICE=gpu)");
        return;
    }
    let seed = seed_from_time();
    let mut rng = Rng::new(seed);
    let with = |speculate: bool| Options {
        cpu_min_n: 2,
        gpu: GpuOptions {
            speculate,
            window_halo: 0,
            ..GpuOptions::default()
        },
        ..Options::default()
    };
    let differ = |p: &[f64], q: &[f64]| {
        p.iter()
            .zip(q)
            .filter(|(x, y)| x.to_bits() != y.to_bits())
            .count()
    };
    let spike = |s: &Solved<f64>| s.report.as_ref().unwrap().solver == Solver::Spike;
    let (mut compared, mut refined) = (0, 0);
    let cases = [
        (5000, 1),
        (40_000, 1),
        (70_001, 3),
        (300_007, 1),
        (1 << 20, 1),
        (1 << 21, 2),
    ];
    for &(n, nrhs) in &cases {
        for kind in 0..3 {
            let a = match kind {
                0 => matrices::random(n, &mut rng),
                1 => matrices::diagonally_dominant(n, &mut rng),
                _ => matrices::table3(4, n, &mut rng),
            };
            let b = rhs(n, n, nrhs, &mut rng);
            let on = ours::<f64>(&a, &b, n, nrhs, &with(true));
            let steps_on = hylapack::gtsv::gpu::last_phases().refine_steps;
            if nrhs > 1 {
                for c in 0..nrhs {
                    let col = &b[c * n..(c + 1) * n];
                    let one = ours::<f64>(&a, col, n, 1, &with(true));
                    if !spike(&on) || !spike(&one) {
                        continue;
                    }
                    let d = differ(&on.x[c * n..(c + 1) * n], &one.x);
                    assert_eq!(d, 0, "n = {n}, kind {kind}, column {c}: {d} entries differ from its own solve, seed {seed}");
                }
                continue;
            }
            let off = ours::<f64>(&a, &b, n, nrhs, &with(false));
            let steps_off = hylapack::gtsv::gpu::last_phases().refine_steps;
            assert_eq!(on.info, off.info, "n = {n}, seed {seed}");
            if steps_on != steps_off || !spike(&on) || !spike(&off) {
                continue;
            }
            compared += 1;
            refined += (steps_on > 0) as usize;
            let d = differ(&on.x, &off.x);
            assert_eq!(
                d, 0,
                "n = {n}, kind {kind}, {steps_on} steps: {d} entries differ, seed {seed}"
            );
        }
    }
    eprintln!(
        "speculative refinement: {compared} one-column systems compared, {refined} of them refined"
    );
    assert!(
        refined >= 2,
        "too few refined systems compared (seed {seed})"
    );
}

/// The stability comparison over many seeds for the types whose margin is smallest (random
/// entries); slow: run with `--ignored`, `STRESS_RUNS` seeds (default 300).
#[test]
#[ignore]
fn table3_stress_many_seeds() {
    let n = 512;
    let mut worst = [0.0f64; 17];
    let mut fails = [0; 17];
    let runs: u64 = std::env::var("STRESS_RUNS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(300);
    for seed in 0..runs {
        let mut rng = Rng::new(seed * 7919 + 13);
        for t in 1..=16 {
            let a = matrices::table3(t, n, &mut rng);
            let b = rhs(n, n, 1, &mut rng);
            if ![1usize, 4, 5, 12].contains(&t) {
                continue;
            }
            let got = ours::<f64>(&a, &b, n, 1, &spike_everywhere());
            let want = lapack::<f64>(&a, &b, n, 1);
            let (r_ours, r_lap) = (
                rel_residual(&a, &got.x, &b, n, 0),
                rel_residual(&a, &want.x, &b, n, 0),
            );
            if r_lap.is_finite() && r_lap > 0.0 {
                let q = r_ours / r_lap;
                worst[t] = worst[t].max(q);
                if !within_10x_of_lapack(&a, &b, r_ours, r_lap) {
                    fails[t] += 1;
                    println!("seed {seed} type {t}: ours {r_ours:e} lapack {r_lap:e} be ours {:e} be lapack {:e} note {:?}", backward_error(&a, &got.x, &b, n, 0), backward_error(&a, &want.x, &b, n, 0), got.report.as_ref().unwrap().note);
                }
            }
        }
    }
    for t in 1..=16 {
        println!(
            "type {t:>2}: worst ratio {:>8.3}  fails {}/{runs}",
            worst[t], fails[t]
        );
    }
}

#[test]
fn chunked_above_the_memory_limit() {
    // A memory limit of ~1.5 MB makes the GPU path cut the systems into chunks of ~20k rows.
    if backend() != Backend::Gpu || !have_gpu_or_skip() {
        eprintln!("skipped: chunking is a GPU-path feature (HYLAPACK_DEVICE=gpu)");
        return;
    }
    let limit = 1_500_000u64;
    let o = Options {
        gpu: GpuOptions {
            memory_limit: Some(limit),
            ..GpuOptions::default()
        },
        ..Options::default()
    };
    let c = hylapack::gtsv::gpu::chunk_rows::<f64>(1 << 30, 1, &o.gpu, limit).unwrap();
    assert!(c > 1000 && c < 100_000, "chunk of {c} rows");
    // Chunk boundaries: exactly two chunks, a last chunk of one row, and many chunks.
    let sizes = [2 * (c + 1), 3 * (c + 1) + 1, 3 * (c + 1) - 1, 10 * c + 7];
    check_sizes::<f64>(&sizes, &[1], &o);
    assert!(hylapack::gtsv::gpu::last_phases().chunks >= 10);
    check_sizes::<f64>(&[5 * c + 3], &[3], &o);
    check_sizes::<f32>(&[4 * c], &[1], &o);
    // A singular system: LAPACK's INFO and B.
    let mut rng = Rng::new(seed_from_time());
    singular_case_with::<f64>(4 * c + 9, 2 * c + 5, 2, &mut rng, &o);
}

#[test]
fn streamed_top_level_matches_in_core() {
    // Under a memory limit that holds the levels below the top but not the system, the top
    // level streams through the GPU in slices of `own` partitions. The partitions and their
    // arithmetic are the in-core solve's, so the answers must agree bit for bit, refinement
    // included (with the speculating check, whose refinement starts one level down, and
    // without it, where the refinement's top-level reduce runs over the slices too); LAPACK's
    // INFO and a small backward error are checked as everywhere.
    if backend() != Backend::Gpu || !have_gpu_or_skip() {
        eprintln!("skipped: streaming is a GPU-path feature (HYLAPACK_DEVICE=gpu)");
        return;
    }
    let seed = seed_from_time();
    let mut rng = Rng::new(seed);
    let own = 5000;
    let limited_with = |n: usize, nrhs: usize, prec: usize, speculate: bool| {
        let g = GpuOptions {
            speculate,
            ..GpuOptions::default()
        };
        let limit = if prec == 8 {
            hylapack::gtsv::gpu::streamed_bytes::<f64>(n, nrhs, &g, own)
        } else {
            hylapack::gtsv::gpu::streamed_bytes::<f32>(n, nrhs, &g, own)
        };
        Options {
            cpu_min_n: 2,
            gpu: GpuOptions {
                memory_limit: Some(limit),
                ..g
            },
            ..Options::default()
        }
    };
    let limited = |n: usize, nrhs: usize, prec: usize| limited_with(n, nrhs, prec, true);
    // The streamed solve has no window solve: the in-core one runs without it too.
    let unlimited = |speculate: bool| Options {
        cpu_min_n: 2,
        gpu: GpuOptions {
            speculate,
            window_halo: 0,
            ..GpuOptions::default()
        },
        ..Options::default()
    };
    let m = GpuOptions::default().m;
    // Slice boundaries: several whole slices and a last one of one partition; a last
    // partition cut short by n; the next slice's first partition itself cut short.
    let cases = [
        (3 * own * m + m - 1, 1, 0),
        (4 * own * m + 5, 2, 3),
        (2 * own * m + m + 2, 1, 1),
        (1 << 20, 1, 0),
    ];
    let (mut refined, mut refined_plain, mut slices) = (0, 0, 0);
    for &(n, nrhs, pad) in &cases {
        let o = limited(n, nrhs, 8);
        let got = hylapack::gtsv::gpu::slice_partitions::<f64>(
            n,
            nrhs,
            &o.gpu,
            o.gpu.memory_limit.unwrap(),
        );
        assert_eq!(got, Some(own), "n = {n}: slice partitions");
        for kind in 0..3 {
            let a = match kind {
                0 => matrices::random(n, &mut rng),
                1 => matrices::diagonally_dominant(n, &mut rng),
                _ => matrices::table3(4, n, &mut rng),
            };
            let ldb = n + pad;
            let b = rhs(n, ldb, nrhs, &mut rng);
            for speculate in [true, false] {
                let whole = ours::<f64>(&a, &b, ldb, nrhs, &unlimited(speculate));
                let steps = hylapack::gtsv::gpu::last_phases().refine_steps;
                let st = ours::<f64>(&a, &b, ldb, nrhs, &limited_with(n, nrhs, 8, speculate));
                let ph = hylapack::gtsv::gpu::last_phases();
                let what = format!(
                    "n = {n}, nrhs {nrhs}, kind {kind}, speculate {speculate}, seed {seed}"
                );
                assert_eq!(st.info, whole.info, "{what}: INFO");
                let solver = |s: &Solved<f64>| s.report.as_ref().unwrap().solver;
                assert_eq!(
                    solver(&st),
                    solver(&whole),
                    "{what}: {:?}",
                    st.report.as_ref().unwrap().note
                );
                if solver(&st) != Solver::Spike {
                    continue;
                }
                assert_eq!(
                    ph.chunks,
                    (n + 1).div_ceil(m).div_ceil(own),
                    "{what}: slices"
                );
                assert_eq!(ph.refine_steps, steps, "{what}: refinement steps");
                slices += ph.chunks;
                refined += (steps > 0) as usize;
                refined_plain += (steps > 0 && !speculate) as usize;
                let differ =
                    st.x.iter()
                        .zip(&whole.x)
                        .filter(|(p, q)| p.to_bits() != q.to_bits())
                        .count();
                assert_eq!(
                    differ, 0,
                    "{what}: {differ} entries differ from the in-core solve"
                );
            }
        }
    }
    assert!(refined >= 2, "too few refined systems (seed {seed})");
    assert!(
        refined_plain >= 1,
        "no refinement without the speculating check (seed {seed})"
    );
    eprintln!("streamed: {slices} slices, {refined} refined systems, all equal to in core");
    // Against LAPACK (INFO, backward error, padding rows), both precisions, and a singular
    // system (LAPACK's INFO and B).
    let n = 3 * own * m + 17;
    check_sizes::<f64>(&[n], &[1, 2], &limited(n, 2, 8));
    check_sizes::<f32>(&[n], &[1], &limited(n, 1, 4));
    singular_case_with::<f64>(n, 2 * own * m - 1, 1, &mut rng, &limited(n, 1, 8));
}

#[test]
fn window_solve_matches_lapack() {
    // The one-pass window solve (gtsv_window): on diagonally dominant systems it must answer
    // (last_phases().window) with LAPACK's INFO, a backward error of a few ulps and the
    // solution to a few ulps (κ < 3), at sizes around its CTAs' owned rows (8 (128 − 2 h)),
    // for several halos h, right-hand sides with padding, both precisions. Where it must not
    // answer (random systems; a Toeplitz matrix whose spikes decay too slowly for the halo;
    // a halo of one partition), the recursion's answer must be as good.
    if backend() != Backend::Gpu || !have_gpu_or_skip() {
        eprintln!("skipped: the window solve is GPU code (HYLAPACK_DEVICE=gpu)");
        return;
    }
    let seed = seed_from_time();
    let mut rng = Rng::new(seed);
    let with = |halo: usize| Options {
        cpu_min_n: 2,
        gpu: GpuOptions {
            window_halo: halo,
            window_min_n: 0,
            ..GpuOptions::default()
        },
        ..Options::default()
    };
    fn check<T: Lapack>(
        a: &Tridiag,
        b: &[f64],
        ldb: usize,
        nrhs: usize,
        o: &Options,
        window: Option<bool>,
        what: &str,
    ) {
        let n = a.n();
        let got = ours::<T>(a, b, ldb, nrhs, o);
        let want = lapack::<T>(a, b, ldb, nrhs);
        let what = format!("{}: {what}", T::PREFIX);
        assert_eq!(got.info, want.info, "{what}: INFO");
        if let Some(w) = window {
            assert_eq!(
                hylapack::gtsv::gpu::last_phases().window,
                w,
                "{what}: window solve taken"
            );
        }
        let eps = T::EPS.to_f64();
        let b_t: Vec<f64> = convert::<T>(b).iter().map(|v| v.to_f64()).collect();
        for c in 0..nrhs {
            for i in n..ldb {
                assert_eq!(
                    got.x[i + c * ldb].to_f64(),
                    777.0,
                    "{what}: padding row {i}"
                );
            }
            let be = backward_error(a, &got.x, &b_t, ldb, c);
            let be_lapack = backward_error(a, &want.x, &b_t, ldb, c);
            assert!(
                be <= 64.0 * eps && be <= 10.0 * be_lapack.max(eps),
                "{what}: column {c} backward error {be:e} (LAPACK {be_lapack:e})"
            );
        }
    }
    let rows = |h: usize| 8 * (128 - 2 * h);
    for &h in &[6, 1, 4, 16, 63] {
        let r = rows(h);
        let mut sizes = vec![
            33,
            100,
            r - 1,
            r,
            r + 1,
            2 * r - 1,
            2 * r,
            2 * r + 7,
            10_000,
        ];
        if h == 6 {
            sizes.extend([70_001, 1 << 20]);
        }
        for &n in &sizes {
            let a = matrices::diagonally_dominant(n, &mut rng);
            for &(nrhs, pad) in &[(1, 0), (3, 2)] {
                let b = rhs(n, n + pad, nrhs, &mut rng);
                let what = format!("dominant n {n} nrhs {nrhs} halo {h} seed {seed}");
                // The separators' couplings here are about e^(-13 ± 3) of the diagonal: a
                // halo of six partitions brings their products below double precision's unit
                // roundoff with a wide margin (the window answers), four only mostly, one
                // seldom (between CTAs; a system of one CTA is solved whole).
                // (Systems of at most base_n = 32 rows have no levels: one CTA solves them.)
                let taken = (h >= 6 && n > 32).then_some(true);
                check::<f64>(&a, &b, n + pad, nrhs, &with(h), taken, &what);
                if n <= 10_000 {
                    let taken = (h >= 4 && n > 32).then_some(true);
                    check::<f32>(&a, &b, n + pad, nrhs, &with(h), taken, &what);
                }
            }
        }
    }
    for &n in &[5000, 100_003] {
        let b = rhs(n, n, 1, &mut rng);
        let a = matrices::random(n, &mut rng);
        let what = format!("random n {n} seed {seed}");
        check::<f64>(&a, &b, n, 1, &with(6), Some(false), &what);
        // −1, 2.1, −1: each 8-row partition shrinks a spike by only about 0.1.
        let slow = Tridiag {
            dl: vec![-1.0; n - 1],
            d: vec![2.1; n],
            du: vec![-1.0; n - 1],
        };
        let what = format!("slow decay n {n} seed {seed}");
        check::<f64>(&slow, &b, n, 1, &with(6), Some(false), &what);
    }
}
