//! The host transfers of `xgtsv_spike`'s GPU path (`HYLAPACK_GTSV_HOST_TRANSFER`): each mode
//! forced gives the pageable path's answer bit for bit (only the transfer changes), at odd
//! sizes that cut into several staged pieces, with NRHS > 1 and LDB > N, in chunks; a
//! registration the driver refuses (the memory is registered already) falls back; every
//! registration is undone when the call returns, also when SPIKE's answer is rejected; arrays
//! the caller page-locked move by DMA under every setting and stay locked; transfers by DMA
//! overlap the window solve and give the same answers.
//!
//! GPU only: skipped without one unless `HYLAPACK_REQUIRE_GPU=1`, which makes them fail.

use hylapack::config::{GtsvHostTransfer, GtsvTransfer};
use hylapack::dispatch::Backend;
use hylapack::gtsv::gpu::{last_phases, GpuOptions};
use hylapack::gtsv::matrices::{self, Tridiag};
use hylapack::gtsv::{self, GtsvReport, Options, Solver};
use hylapack::lapack::Lapack;
use hylapack::real::Real;
use hylapack::testmat::{seed_from_time, Rng};

#[path = "common/gtsv.rs"]
mod gtsv_common;
use gtsv_common::*;

/// Page-locking is process-wide: a test probing or locking pages while another's solve locks a
/// neighbouring array on the same page would see a refusal that is not its own. One at a time.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

const MODES: [GtsvHostTransfer; 3] = [
    GtsvHostTransfer::Pageable,
    GtsvHostTransfer::Staged,
    GtsvHostTransfer::Register,
];

/// The GPU path at every size, host arrays moved by `mode`.
fn forced(mode: GtsvHostTransfer, memory_limit: Option<u64>) -> Options {
    Options {
        gpu: GpuOptions {
            transfer: GtsvTransfer {
                mode,
                ..GtsvTransfer::default()
            },
            memory_limit,
            ..GpuOptions::default()
        },
        ..Options::default()
    }
}

/// The arrays of one solve (in `T`), kept so that a test can look at them or lock them.
struct Arrays<T> {
    dl: Vec<T>,
    d: Vec<T>,
    du: Vec<T>,
    b: Vec<T>,
}

impl<T: Real> Arrays<T> {
    fn new(a: &Tridiag, b: &[f64]) -> Self {
        Arrays {
            dl: convert(&a.dl),
            d: convert(&a.d),
            du: convert(&a.du),
            b: convert(b),
        }
    }
}

impl<T: Lapack> Arrays<T> {
    /// `gtsv_with` on these arrays, the GPU asked for.
    fn solve(&mut self, o: &Options, ldb: usize, nrhs: usize) -> GtsvReport {
        gtsv::gtsv_with(
            o,
            &mut self.dl,
            &mut self.d,
            &mut self.du,
            &mut self.b,
            ldb,
            nrhs,
            Backend::Gpu,
        )
    }
}

/// Solves on the GPU; asserts that the GPU ran SPIKE. Returns the report's solver and, for an
/// in-core solve, the transfer it used.
fn solve_gpu<T: Lapack>(
    x: &mut Arrays<T>,
    ldb: usize,
    nrhs: usize,
    o: &Options,
) -> (Solver, i32, Option<&'static str>) {
    let r = x.solve(o, ldb, nrhs);
    assert_eq!(
        r.spike_backend,
        Some(Backend::Gpu),
        "GPU did not run: {:?}",
        r.note
    );
    (r.solver, r.info, last_phases().transfer)
}

fn bits<T: Real>(v: &[T]) -> Vec<u64> {
    v.iter().map(|x| x.to_f64().to_bits()).collect()
}

fn modes_agree<T: Lapack>(n: usize, nrhs: usize, ldb: usize, limit: Option<u64>, rng: &mut Rng) {
    // SPIKE must answer (LAPACK's fallback moves no data through these transfers): a random
    // f32 system of order 2^20 failed its acceptance test on an H200 and went to LAPACK.
    let a = matrices::diagonally_dominant(n, rng);
    let b = rhs(n, ldb, nrhs, rng);
    let mut want: Option<Vec<u64>> = None;
    for mode in MODES {
        let mut x = Arrays::<T>::new(&a, &b);
        let (solver, info, used) = solve_gpu(&mut x, ldb, nrhs, &forced(mode, limit));
        let what = format!("{} n {n} nrhs {nrhs} ldb {ldb} {}", T::PREFIX, mode.name());
        assert_eq!((solver, info), (Solver::Spike, 0), "{what}");
        if limit.is_none() {
            assert_eq!(used, Some(mode.name()), "{what}: ran another transfer");
        }
        // Padding rows of B are never written.
        for c in 0..nrhs {
            for i in n..ldb {
                assert_eq!(x.b[c * ldb + i].to_f64(), 777.0, "{what}: padding row {i}");
            }
        }
        let got = bits(&x.b);
        match &want {
            None => want = Some(got),
            Some(w) => assert!(*w == got, "{what}: differs from the pageable path"),
        }
    }
}

#[test]
fn every_transfer_gives_the_same_answer_bit_for_bit() {
    if !have_gpu_or_skip() {
        eprintln!("skipped: no GPU");
        return;
    }
    let _one_at_a_time = serial();
    let mut rng = Rng::new(seed_from_time());
    // 2^20 + 3 rows: two staged pieces of 4 MiB and a short one in f64, one and a short in f32.
    for (n, nrhs, ldb) in [
        (2, 1, 2),
        (7, 2, 9),
        (1000, 1, 1000),
        (1000, 3, 1003),
        ((1 << 20) + 3, 1, (1 << 20) + 3),
        ((1 << 19) + 1, 3, (1 << 19) + 6),
    ] {
        modes_agree::<f64>(n, nrhs, ldb, None, &mut rng);
        modes_agree::<f32>(n, nrhs, ldb, None, &mut rng);
    }
}

#[test]
fn every_transfer_in_chunks() {
    if !have_gpu_or_skip() {
        eprintln!("skipped: no GPU");
        return;
    }
    let _one_at_a_time = serial();
    // ~1.5 MB of GPU memory: chunks of ~20k rows, each moved by the transfer asked for.
    let mut rng = Rng::new(seed_from_time());
    modes_agree::<f64>(100_003, 2, 100_010, Some(1_500_000), &mut rng);
    assert!(last_phases().chunks > 2);
}

/// Whether `bytes` at `p` can be page-locked now (and unlocks them again): false while any of
/// their pages is locked already.
fn lockable(p: *const u8, bytes: usize) -> bool {
    let gpu = hylapack::device::gpu().expect("GPU");
    // SAFETY: a live array of this test, unlocked again when the value drops.
    unsafe { gpu.register_host(p.cast_mut(), bytes) }.is_ok()
}

fn all_unlocked<T>(x: &Arrays<T>) -> bool {
    [&x.dl, &x.d, &x.du, &x.b]
        .iter()
        .all(|v| lockable(v.as_ptr().cast(), std::mem::size_of_val(v.as_slice())))
}

#[test]
fn refused_registration_falls_back_to_staged() {
    if !have_gpu_or_skip() {
        eprintln!("skipped: no GPU");
        return;
    }
    let _one_at_a_time = serial();
    let gpu = hylapack::device::gpu().expect("GPU");
    let mut rng = Rng::new(seed_from_time());
    let (n, nrhs, ldb) = (300_001, 2, 300_004);
    let a = matrices::random(n, &mut rng);
    let b = rhs(n, ldb, nrhs, &mut rng);
    let mut want = Arrays::<f64>::new(&a, &b);
    solve_gpu(
        &mut want,
        ldb,
        nrhs,
        &forced(GtsvHostTransfer::Pageable, None),
    );
    let mut x = Arrays::<f64>::new(&a, &b);
    // The caller has registered B already: the driver refuses a second registration
    // (CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED).
    // SAFETY: x.b lives until the end of the test, after `held` is dropped.
    let held = unsafe { gpu.register_host(x.b.as_mut_ptr().cast(), x.b.len() * 8) }
        .expect("registering B");
    let (solver, info, used) =
        solve_gpu(&mut x, ldb, nrhs, &forced(GtsvHostTransfer::Register, None));
    assert_eq!((solver, info), (Solver::Spike, 0));
    assert_eq!(used, Some(GtsvHostTransfer::Staged.name()));
    assert_eq!(bits(&x.b), bits(&want.b));
    // The caller's registration is still in place (ours did not undo it) ...
    assert!(!lockable(x.b.as_ptr().cast(), 8));
    drop(held);
    // ... and nothing of ours is left locked.
    assert!(all_unlocked(&x));
    // Under auto, the refusal falls back to auto's choice without registering.
    let auto = GtsvTransfer {
        mode: GtsvHostTransfer::Auto,
        register_min_n: 1,
        staged_min_n: usize::MAX,
    };
    let mut o = forced(GtsvHostTransfer::Auto, None);
    o.gpu.transfer = auto;
    let mut x = Arrays::<f64>::new(&a, &b);
    // SAFETY: as above.
    let held = unsafe { gpu.register_host(x.d.as_mut_ptr().cast(), x.d.len() * 8) }
        .expect("registering D");
    let (_, _, used) = solve_gpu(&mut x, ldb, nrhs, &o);
    assert_eq!(used, Some(GtsvHostTransfer::Pageable.name()));
    assert_eq!(bits(&x.b), bits(&want.b));
    drop(held);
}

/// Row and column `row` of `s` (0 < row < n − 1) set to zero: singular, SPIKE meets a zero
/// pivot.
fn zero_row(s: &mut Tridiag, row: usize) {
    s.d[row] = 0.0;
    s.dl[row - 1] = 0.0;
    s.du[row] = 0.0;
    s.dl[row] = 0.0;
    s.du[row - 1] = 0.0;
}

/// A random matrix with row and column n / 3 zero.
fn singular(n: usize, rng: &mut Rng) -> Tridiag {
    let mut s = matrices::random(n, rng);
    zero_row(&mut s, n / 3);
    s
}

/// A singular system: SPIKE's zero pivot, then LAPACK on the caller's B as it came, which
/// each transfer must leave or restore (staged: from the pinned copy its upload made of B).
#[test]
fn a_rejected_answer_leaves_b_for_lapack_in_every_transfer() {
    if !have_gpu_or_skip() {
        eprintln!("skipped: no GPU");
        return;
    }
    let _one_at_a_time = serial();
    let seed = seed_from_time();
    let mut rng = Rng::new(seed);
    let (n, nrhs, ldb) = (300_001, 2, 300_004);
    let s = singular(n, &mut rng);
    let b = rhs(n, ldb, nrhs, &mut rng);
    let want = lapack::<f64>(&s, &b, ldb, nrhs);
    assert!(want.info > 0, "seed {seed}: LAPACK found no zero pivot");
    for mode in MODES {
        let mut x = Arrays::<f64>::new(&s, &b);
        let r = x.solve(&forced(mode, None), ldb, nrhs);
        let what = format!("seed {seed}, {}: {:?}", mode.name(), r.note);
        assert_eq!(r.spike_backend, Some(Backend::Gpu), "{what}");
        assert_eq!(r.info, want.info, "{what}");
        assert!(
            bits(&x.b) == bits(&want.x),
            "{what}: B differs from LAPACK's"
        );
    }
}

#[test]
fn registration_is_undone_on_every_exit() {
    if !have_gpu_or_skip() {
        eprintln!("skipped: no GPU");
        return;
    }
    let _one_at_a_time = serial();
    let mut rng = Rng::new(seed_from_time());
    let register = forced(GtsvHostTransfer::Register, None);
    // Accepted: the answer is in B and the arrays are unlocked.
    let n = 50_000;
    let a = matrices::random(n, &mut rng);
    let b = rhs(n, n, 1, &mut rng);
    let mut x = Arrays::<f64>::new(&a, &b);
    let (solver, _, used) = solve_gpu(&mut x, n, 1, &register);
    assert_eq!(
        (solver, used),
        (Solver::Spike, Some(GtsvHostTransfer::Register.name()))
    );
    assert!(all_unlocked(&x), "left locked after an accepted answer");
    // Rejected (a singular system: SPIKE's zero pivot, then LAPACK): LAPACK's INFO and B, and
    // the arrays unlocked.
    let s = singular(n, &mut rng);
    let mut x = Arrays::<f64>::new(&s, &b);
    let r = x.solve(&register, n, 1);
    let want = lapack::<f64>(&s, &b, n, 1);
    assert_eq!(r.info, want.info, "{:?}", r.note);
    assert!(r.info > 0);
    assert_eq!(bits(&x.b), bits(&want.x));
    assert!(all_unlocked(&x), "left locked after a rejected answer");
    // Neighbouring arrays sharing pages (one allocation): locked once, then unlocked.
    let mut one = vec![0.0f64; 4 * n];
    let (dl, rest) = one.split_at_mut(n);
    let (d, rest) = rest.split_at_mut(n);
    let (du, bb) = rest.split_at_mut(n);
    dl[..n - 1].copy_from_slice(&a.dl);
    d.copy_from_slice(&a.d);
    du[..n - 1].copy_from_slice(&a.du);
    bb.copy_from_slice(&b);
    let r = gtsv::gtsv_with(
        &register,
        &mut dl[..n - 1],
        d,
        &mut du[..n - 1],
        bb,
        n,
        1,
        Backend::Gpu,
    );
    assert_eq!((r.solver, r.info), (Solver::Spike, 0), "{:?}", r.note);
    assert_eq!(
        last_phases().transfer,
        Some(GtsvHostTransfer::Register.name())
    );
    let mut fresh = Arrays::<f64>::new(&a, &b);
    solve_gpu(&mut fresh, n, 1, &forced(GtsvHostTransfer::Pageable, None));
    assert_eq!(bits(bb), bits(&fresh.b));
    assert!(lockable(one.as_ptr().cast(), one.len() * 8));
}

#[test]
fn auto_chooses_by_size() {
    if !have_gpu_or_skip() {
        eprintln!("skipped: no GPU");
        return;
    }
    let _one_at_a_time = serial();
    let mut rng = Rng::new(seed_from_time());
    let mut o = forced(GtsvHostTransfer::Auto, None);
    o.gpu.transfer = GtsvTransfer {
        mode: GtsvHostTransfer::Auto,
        register_min_n: 20_000,
        staged_min_n: 2_000,
    };
    for (n, want) in [
        (1_000, GtsvHostTransfer::Pageable),
        (5_000, GtsvHostTransfer::Staged),
        (30_000, GtsvHostTransfer::Register),
    ] {
        let a = matrices::diagonally_dominant(n, &mut rng);
        let b = rhs(n, n, 1, &mut rng);
        let mut x = Arrays::<f64>::new(&a, &b);
        let (_, _, used) = solve_gpu(&mut x, n, 1, &o);
        assert_eq!(used, Some(want.name()), "n {n}");
    }
}

/// The caller's page-locking, done and undone as a program of its own would (straight through
/// the driver, not through hylapack).
struct CallerLock(*mut std::ffi::c_void);

impl CallerLock {
    fn new<T>(v: &mut [T]) -> Self {
        use cudarc::driver::sys;
        let gpu = hylapack::device::gpu().expect("GPU");
        gpu.ctx.bind_to_thread().expect("context");
        let p = v.as_mut_ptr().cast();
        // SAFETY: a live array of the test, unlocked by drop before it is freed.
        unsafe { sys::cuMemHostRegister_v2(p, std::mem::size_of_val(v), 0) }
            .result()
            .expect("the caller's registration");
        CallerLock(p)
    }

    /// Each of the four arrays registered on its own.
    fn all<T>(x: &mut Arrays<T>) -> [Self; 4] {
        [
            Self::new(&mut x.dl),
            Self::new(&mut x.d),
            Self::new(&mut x.du),
            Self::new(&mut x.b),
        ]
    }
}

impl Drop for CallerLock {
    fn drop(&mut self) {
        // SAFETY: registered by `new`, unregistered once.
        let r = unsafe { cudarc::driver::sys::cuMemHostUnregister(self.0) };
        assert_eq!(r, cudarc::driver::sys::CUresult::CUDA_SUCCESS);
    }
}

/// Arrays the caller page-locked (registered by the program, or allocated page-locked) go by
/// DMA under every setting: the pageable path's answer bit for bit, LAPACK's B and INFO on a
/// singular system, and the caller's locks left in place.
#[test]
fn arrays_the_caller_locked_move_by_dma() {
    if !have_gpu_or_skip() {
        eprintln!("skipped: no GPU");
        return;
    }
    let _one_at_a_time = serial();
    let seed = seed_from_time();
    let mut rng = Rng::new(seed);
    let (n, nrhs, ldb) = (200_003, 2, 200_005);
    let a = matrices::random(n, &mut rng);
    let s = singular(n, &mut rng);
    let b = rhs(n, ldb, nrhs, &mut rng);
    for (m, system) in [&a, &s].into_iter().enumerate() {
        let want = if m == 0 {
            let mut w = Arrays::<f64>::new(system, &b);
            solve_gpu(&mut w, ldb, nrhs, &forced(GtsvHostTransfer::Pageable, None));
            w
        } else {
            let l = lapack::<f64>(system, &b, ldb, nrhs);
            assert!(l.info > 0, "seed {seed}: LAPACK found no zero pivot");
            Arrays {
                dl: Vec::new(),
                d: Vec::new(),
                du: Vec::new(),
                b: l.x,
            }
        };
        for mode in MODES {
            let what = format!("seed {seed}, system {m}, setting {}", mode.name());
            // Registered by the caller, each array on its own.
            let mut x = Arrays::<f64>::new(system, &b);
            let locks = CallerLock::all(&mut x);
            let r = x.solve(&forced(mode, None), ldb, nrhs);
            assert_eq!(r.spike_backend, Some(Backend::Gpu), "{what}: {:?}", r.note);
            assert_eq!(last_phases().transfer, Some("locked"), "{what}");
            assert_eq!(r.info > 0, m == 1, "{what}: INFO {}", r.info);
            assert!(bits(&x.b) == bits(&want.b), "{what}: B differs");
            assert!(!lockable(x.b.as_ptr().cast(), 8), "{what}: B unlocked");
            assert!(!lockable(x.d.as_ptr().cast(), 8), "{what}: D unlocked");
            drop(locks);
            assert!(all_unlocked(&x));
        }
        // Allocated page-locked (cuMemHostAlloc), in one buffer.
        let gpu = hylapack::device::gpu().expect("GPU");
        let mut one = gpu.pinned::<f64>(3 * n + nrhs * ldb).expect("pinned");
        let all = one.as_mut_slice().expect("pinned");
        let (dl, rest) = all.split_at_mut(n);
        let (d, rest) = rest.split_at_mut(n);
        let (du, bb) = rest.split_at_mut(n);
        dl[..n - 1].copy_from_slice(&system.dl);
        d.copy_from_slice(&system.d);
        du[..n - 1].copy_from_slice(&system.du);
        bb.copy_from_slice(&b);
        let r = gtsv::gtsv_with(
            &Options::default(),
            &mut dl[..n - 1],
            d,
            &mut du[..n - 1],
            bb,
            ldb,
            nrhs,
            Backend::Gpu,
        );
        let what = format!("seed {seed}, system {m}, allocated page-locked");
        assert_eq!(r.spike_backend, Some(Backend::Gpu), "{what}: {:?}", r.note);
        assert_eq!(last_phases().transfer, Some("locked"), "{what}");
        assert!(bits(bb) == bits(&want.b), "{what}: B differs");
    }
}

/// Diagonally dominant in its first `cut` rows, random after (the window solve gives up
/// there), with row and column `zero` zero where given (singular).
fn dominant_then_random(n: usize, cut: usize, zero: Option<usize>, rng: &mut Rng) -> Tridiag {
    let mut s = matrices::diagonally_dominant(n, rng);
    let r = matrices::random(n, rng);
    s.d[cut..].copy_from_slice(&r.d[cut..]);
    s.dl[cut..].copy_from_slice(&r.dl[cut..]);
    s.du[cut..].copy_from_slice(&r.du[cut..]);
    if let Some(row) = zero {
        zero_row(&mut s, row);
    }
    s
}

/// Arrays that move by DMA (page-locked by the caller, or under the register setting) overlap
/// their transfers with the window solve, X going down into B speculatively: the pageable
/// path's answer bit for bit where the windows answer and where they give up after some of X
/// went down (the full recursion then answers), and LAPACK's B and INFO where that system is
/// singular (B restored first).
#[test]
fn overlapped_transfers_give_the_pageable_answer() {
    if !have_gpu_or_skip() {
        eprintln!("skipped: no GPU");
        return;
    }
    let _one_at_a_time = serial();
    let seed = seed_from_time();
    let mut rng = Rng::new(seed);
    // Stretches of 2^16 rows: the windows give up in the third, after two went down.
    let (n, nrhs, ldb) = (300_001, 2, 300_004);
    let cut = 150_000;
    let systems = [
        matrices::diagonally_dominant(n, &mut rng),
        dominant_then_random(n, cut, None, &mut rng),
        dominant_then_random(n, cut, Some(2 * n / 3), &mut rng),
    ];
    let b = rhs(n, ldb, nrhs, &mut rng);
    for (m, system) in systems.iter().enumerate() {
        let want = if m < 2 {
            let mut w = Arrays::<f64>::new(system, &b);
            solve_gpu(&mut w, ldb, nrhs, &forced(GtsvHostTransfer::Pageable, None));
            assert_eq!(last_phases().window, m == 0, "seed {seed}, system {m}");
            w.b
        } else {
            let l = lapack::<f64>(system, &b, ldb, nrhs);
            assert!(l.info > 0, "seed {seed}: LAPACK found no zero pivot");
            l.x
        };
        for by_caller in [true, false] {
            let what = format!("seed {seed}, system {m}, locked by the caller: {by_caller}");
            let mut x = Arrays::<f64>::new(system, &b);
            let locks = by_caller.then(|| CallerLock::all(&mut x));
            let r = x.solve(&forced(GtsvHostTransfer::Register, None), ldb, nrhs);
            assert_eq!(r.spike_backend, Some(Backend::Gpu), "{what}: {:?}", r.note);
            let p = last_phases();
            assert!(p.overlapped, "{what}: not overlapped");
            assert_eq!(p.window, m == 0, "{what}: window");
            assert_eq!(r.info > 0, m == 2, "{what}: INFO {}", r.info);
            assert!(bits(&x.b) == bits(&want), "{what}: B differs");
            drop(locks);
            assert!(all_unlocked(&x), "{what}: left locked");
        }
    }
}
