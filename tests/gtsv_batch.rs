//! `xgtsv_spike_strided_batch` (many systems of one size) against the system LAPACK's xGTSV
//! system by system, with padding that must survive, scaled neighbours, the C entry and bad
//! arguments; the same for arrays in GPU memory (`xgtsv_spike_strided_batch_device`). The
//! backend comes from the environment as in `gtsv.rs`.

use hylapack::dispatch::Backend;
use hylapack::gtsv::matrices::{self, Tridiag};
use hylapack::gtsv::{self, Options};
use hylapack::lapack::Lapack;
use hylapack::testmat::{seed_from_time, Rng};

#[path = "common/gtsv.rs"]
mod gtsv_common;
use gtsv_common::*;

#[path = "common/child.rs"]
#[allow(dead_code)]
mod child;

/// Which entry a check calls: the host-pointer one (`gtsv_strided_batch`, the environment's
/// backend), or on copies in GPU memory the device-pointer C entry or the Rust function it
/// wraps (whose report says which solver ran).
#[derive(Clone, Copy, Debug, PartialEq)]
enum Route {
    Host,
    DeviceC,
    DeviceRust,
}

/// `count` systems of order `n` in strided storage (padding between systems = 555, which must
/// survive), solved by the batch entry and, one by one, by LAPACK.
fn check_batch<T: Lapack + cudarc::driver::DeviceRepr>(
    n: usize,
    nrhs: usize,
    count: usize,
    dominant: bool,
    singular: Option<usize>,
    rng: &mut Rng,
) {
    check_batch_scaled::<T>(Route::Host, n, nrhs, count, dominant, singular, 1.0, rng)
}

/// [`check_batch`] through `route`, with every odd-numbered system (matrix and right-hand
/// sides) scaled by `odd_scale`: each system must meet its own backward-error bound, whatever
/// its neighbours' magnitudes.
#[allow(clippy::too_many_arguments)]
fn check_batch_scaled<T: Lapack + cudarc::driver::DeviceRepr>(
    route: Route,
    n: usize,
    nrhs: usize,
    count: usize,
    dominant: bool,
    singular: Option<usize>,
    odd_scale: f64,
    rng: &mut Rng,
) {
    let (sa, ldb) = (n + 3, n + 1);
    let sb = ldb * nrhs + 2;
    let systems: Vec<Tridiag> = (0..count)
        .map(|k| {
            let mut a = if dominant {
                matrices::diagonally_dominant(n, rng)
            } else {
                matrices::random(n, rng)
            };
            if k % 2 == 1 {
                for v in a.dl.iter_mut().chain(a.d.iter_mut()).chain(a.du.iter_mut()) {
                    *v *= odd_scale;
                }
            }
            if singular == Some(k) {
                // Row n/2 zero: U(n/2, n/2) is exactly zero.
                let r = n / 2;
                a.d[r] = 0.0;
                if r > 0 {
                    a.dl[r - 1] = 0.0;
                }
                if r + 1 < n {
                    a.du[r] = 0.0;
                }
            }
            a
        })
        .collect();
    let bs: Vec<Vec<f64>> = (0..count)
        .map(|k| {
            let mut b = rhs(n, ldb, nrhs, rng);
            if k % 2 == 1 {
                for c in 0..nrhs {
                    for v in &mut b[c * ldb..c * ldb + n] {
                        *v *= odd_scale;
                    }
                }
            }
            b
        })
        .collect();
    let pad = 555.0;
    // The arrays as short as the contract allows (the C entry's lengths): for N = 1, DL and
    // DU hold nothing.
    let span = |len: usize| if len == 0 { 0 } else { (count - 1) * sa + len };
    let (mut dl, mut d, mut du) = (
        vec![T::from_f64(pad); span(n - 1)],
        vec![T::from_f64(pad); span(n)],
        vec![T::from_f64(pad); span(n - 1)],
    );
    let mut b = vec![T::from_f64(pad); sb * count];
    for (k, a) in systems.iter().enumerate() {
        for i in 0..n {
            d[k * sa + i] = T::from_f64(a.d[i]);
            if i + 1 < n {
                dl[k * sa + i] = T::from_f64(a.dl[i]);
                du[k * sa + i] = T::from_f64(a.du[i]);
            }
        }
        for (i, &v) in bs[k].iter().enumerate() {
            b[k * sb + i] = T::from_f64(v);
        }
    }
    let mut info = vec![-99; count];
    let what = format!(
        "batch {} {route:?}: n {n} nrhs {nrhs} count {count} dominant {dominant} singular {singular:?}",
        T::PREFIX
    );
    let plain = dominant && singular.is_none();
    if route != Route::Host {
        let layout = [n, nrhs, sa, ldb, sb, count];
        let rust = route == Route::DeviceRust;
        let (ret, report) = on_device::<T>(layout, [&dl, &d, &du], &mut b, &mut info, rust);
        let want = info.iter().filter(|&&i| i > 0).count() as i32;
        assert_eq!(ret, want, "{what}: the entry's return");
        if let Some(r) = report {
            check_route::<T>(&r, n, nrhs, plain, true, &what);
        }
    } else {
        let report = gtsv::gtsv_strided_batch(
            &Options::default(),
            n,
            nrhs,
            &mut dl,
            &mut d,
            &mut du,
            sa,
            &mut b,
            ldb,
            sb,
            count,
            &mut info,
            backend(),
        );
        check_route::<T>(&report, n, nrhs, plain, false, &what);
    }
    for k in 0..count {
        let want = lapack::<T>(&systems[k], &bs[k], ldb, nrhs);
        let got = &b[k * sb..k * sb + ldb * nrhs];
        assert_eq!(info[k], want.info, "{what}: system {k} INFO");
        assert!(
            b[k * sb + ldb * nrhs..(k + 1) * sb]
                .iter()
                .all(|v| v.to_f64() == pad),
            "{what}: padding after system {k}"
        );
        if want.info != 0 {
            assert!(
                got.iter()
                    .zip(&want.x)
                    .all(|(p, q)| p.to_f64().to_bits() == q.to_f64().to_bits()),
                "{what}: singular system {k}: B differs from LAPACK's"
            );
            continue;
        }
        let b_t: Vec<f64> = convert::<T>(&bs[k]).iter().map(|v| v.to_f64()).collect();
        for c in 0..nrhs {
            for i in n..ldb {
                assert_eq!(got[i + c * ldb].to_f64(), 777.0, "{what}: row padding");
            }
            let be = backward_error(&systems[k], got, &b_t, ldb, c);
            assert!(
                be <= 64.0 * T::EPS.to_f64(),
                "{what}: system {k} column {c} backward error {be:e}"
            );
        }
    }
    if singular.is_none() {
        assert!(info.iter().all(|&i| i == 0));
    }
}

/// On the GPU (required), a batch of well-conditioned systems takes the warp kernel where its
/// systems fit (through host pointers) or where the kernel solves them by SPIKE (a batch on
/// the device), else the stacked SPIKE solve.
fn check_route<T>(
    report: &gtsv::BatchReport,
    n: usize,
    nrhs: usize,
    plain: bool,
    device: bool,
    what: &str,
) {
    if backend() == Backend::Gpu && require_gpu() && plain {
        assert_eq!(report.backend, Backend::Gpu, "{what}: {:?}", report.note);
        let kernel = if device {
            gtsv::gpu::batch::spikes::<T>(n, nrhs)
        } else {
            gtsv::gpu::batch::fits::<T>(n, nrhs)
        };
        let want = if kernel {
            gtsv::Solver::WarpPerSystem
        } else {
            gtsv::Solver::Spike
        };
        assert_eq!(report.solver, want, "{what}: {:?}", report.note);
    }
}

/// The device-pointer C entry (or with `rust` the function it wraps) on GPU copies of the
/// strided arrays (`layout`: n, nrhs, stride_a, ldb, stride_b, count), the caller's stream
/// passed in double precision and the legacy default stream in single; B copied back and INFO
/// filled. The matrix arrays must come back unchanged. Returns the entry's value (the number
/// of singular systems) and the function's report.
fn on_device<T: Lapack + cudarc::driver::DeviceRepr>(
    layout: [usize; 6],
    matrix: [&[T]; 3],
    b: &mut [T],
    info: &mut [i32],
    rust: bool,
) -> (i32, Option<gtsv::BatchReport>) {
    use cudarc::driver::DevicePtr;
    use hylapack::api::gtsv::{dgtsv_spike_strided_batch_device, sgtsv_spike_strided_batch_device};
    let [n, nrhs, sa, ldb, sb, count] = layout.map(|v| v as i32);
    let gpu = hylapack::device::gpu().expect("a GPU");
    let stream = gpu.ctx.default_stream();
    // One element at least: a zero-length allocation has no address to pass.
    let put = |v: &[T]| {
        let v = if v.is_empty() { &[T::ZERO][..] } else { v };
        stream.clone_htod(v).expect("upload")
    };
    let [dl_d, d_d, du_d] = matrix.map(put);
    let b_d = put(b);
    let p = |s: &cudarc::driver::CudaSlice<T>| s.device_ptr(&stream).0;
    let (dl, d, du, bp) = (p(&dl_d), p(&d_d), p(&du_d), p(&b_d));
    let mut report = None;
    let ret = unsafe {
        if rust {
            let a = gtsv::gpu::batch::DevBatch {
                n: layout[0],
                nrhs: layout[1],
                count: layout[5],
                dl,
                d,
                du,
                sa: layout[2],
                b: bp,
                ldb: layout[3],
                sb: layout[4],
            };
            let after = Some(stream.cu_stream());
            let r = gtsv::gtsv_strided_batch_device::<T>(&Options::default(), &a, info, after)
                .expect("the GPU ran");
            report = Some(r);
            info.iter().filter(|&&i| i > 0).count() as i32
        } else if T::PREFIX == 'd' {
            dgtsv_spike_strided_batch_device(
                n,
                nrhs,
                dl as *const f64,
                d as *const f64,
                du as *const f64,
                sa,
                bp as *mut f64,
                ldb,
                sb,
                count,
                info.as_mut_ptr(),
                stream.cu_stream() as *mut std::ffi::c_void,
            )
        } else {
            sgtsv_spike_strided_batch_device(
                n,
                nrhs,
                dl as *const f32,
                d as *const f32,
                du as *const f32,
                sa,
                bp as *mut f32,
                ldb,
                sb,
                count,
                info.as_mut_ptr(),
                std::ptr::null_mut(),
            )
        }
    };
    let same = |dev: &cudarc::driver::CudaSlice<T>, host: &[T]| {
        let got = stream.clone_dtoh(dev).expect("download");
        host.iter()
            .zip(&got)
            .all(|(p, q)| p.to_f64().to_bits() == q.to_f64().to_bits())
    };
    assert!(
        same(&dl_d, matrix[0]) && same(&d_d, matrix[1]) && same(&du_d, matrix[2]),
        "the device matrix was modified"
    );
    b.copy_from_slice(&stream.clone_dtoh(&b_d).expect("download"));
    (ret, report)
}

#[test]
fn strided_batch_against_lapack() {
    let mut rng = Rng::new(seed_from_time());
    // Sizes for each of the warp kernel's SPIKE partitions (up to 256 and 512 rows), for
    // partial pivoting alone (1000) and for the stacked solve (2000).
    for &n in &[1, 2, 3, 17, 100, 256, 500, 1000, 2000] {
        for &(nrhs, count) in &[(1, 1), (1, 5), (3, 33), (16, 7)] {
            for dominant in [true, false] {
                check_batch::<f64>(n, nrhs, count, dominant, None, &mut rng);
            }
        }
        check_batch::<f32>(n, 2, 9, true, None, &mut rng);
    }
    // Many small systems (the batch's purpose), random ones refined or refused by SPIKE.
    check_batch::<f64>(64, 1, 20_000, true, None, &mut rng);
    check_batch::<f64>(256, 1, 3000, false, None, &mut rng);
    check_batch::<f32>(200, 1, 3000, false, None, &mut rng);
    // Neighbours of very different magnitudes.
    for dominant in [true, false] {
        check_batch_scaled::<f64>(Route::Host, 500, 2, 16, dominant, None, 1e-10, &mut rng);
    }
    // One singular system among many: its INFO and B as LAPACK's, the others solved.
    check_batch::<f64>(50, 2, 40, true, Some(17), &mut rng);
    check_batch::<f32>(3, 1, 10, true, Some(0), &mut rng);
}

/// The device-pointer entry: the warp kernel's sizes (SPIKE, refused SPIKE, partial pivoting
/// alone) with X written into B in place, singular systems and sizes the kernel does not take
/// sent to LAPACK on host copies, padding kept, the matrix untouched.
#[test]
fn strided_batch_device_entry_against_lapack() {
    if !have_gpu_or_skip() {
        return;
    }
    let mut rng = Rng::new(seed_from_time());
    // Well-conditioned systems through the Rust function, whose report must name the GPU's
    // solver; the others through the C entry.
    let check = |n, nrhs, count, dominant, singular: Option<usize>, scale, rng: &mut Rng| {
        let route = if dominant && singular.is_none() {
            Route::DeviceRust
        } else {
            Route::DeviceC
        };
        check_batch_scaled::<f64>(route, n, nrhs, count, dominant, singular, scale, rng)
    };
    for &n in &[1, 2, 17, 256, 500, 1000, 2000] {
        for &(nrhs, count) in &[(1, 1), (3, 33), (16, 7)] {
            for dominant in [true, false] {
                check(n, nrhs, count, dominant, None, 1.0, &mut rng);
            }
        }
        check_batch_scaled::<f32>(Route::DeviceC, n, 2, 9, true, None, 1.0, &mut rng);
    }
    check(256, 1, 3000, false, None, 1.0, &mut rng);
    check(500, 2, 16, false, None, 1e-10, &mut rng);
    check(50, 2, 40, true, Some(17), 1.0, &mut rng);
    check(1000, 1, 20, false, Some(3), 1.0, &mut rng);
    // The stacked solve on the device: neighbours of very different magnitudes, and a singular
    // system.
    for dominant in [true, false] {
        check(2000, 2, 16, dominant, None, 1e-10, &mut rng);
    }
    check(3000, 1, 9, true, Some(5), 1.0, &mut rng);
    check_batch_scaled::<f32>(Route::DeviceC, 3, 1, 10, true, Some(0), 1.0, &mut rng);
}

/// The device-pointer entry's argument checks in LAPACK's order (alignment before the GPU is
/// touched), quick returns, and host memory refused (or, without a GPU, the documented error).
#[test]
fn strided_batch_device_entry_bad_arguments_and_no_gpu() {
    use hylapack::api::gtsv::{dgtsv_spike_strided_batch_device, sgtsv_spike_strided_batch_device};
    use hylapack::api::HYLAPACK_INFO_NO_GPU;
    use std::ptr::{null, null_mut};
    let (dl, d, du, mut b) = (vec![1.0; 8], vec![4.0; 10], vec![1.0; 8], vec![1.0; 10]);
    let mut info = vec![-99; 2];
    unsafe {
        let (pdl, pd, pdu, pb, pi) = (
            dl.as_ptr(),
            d.as_ptr(),
            du.as_ptr(),
            b.as_mut_ptr(),
            info.as_mut_ptr(),
        );
        let none = null_mut();
        let call = |n, nrhs, dl, d, du, sa, b, ldb, sb, count, info| {
            dgtsv_spike_strided_batch_device(n, nrhs, dl, d, du, sa, b, ldb, sb, count, info, none)
        };
        let odd = (pd as *const u8).add(1) as *const f64;
        assert_eq!(call(-1, 1, pdl, pd, pdu, 5, pb, 5, 5, 2, pi), -1);
        assert_eq!(call(5, -1, pdl, pd, pdu, 5, pb, 5, 5, 2, pi), -2);
        assert_eq!(call(5, 1, null(), pd, pdu, 5, pb, 5, 5, 2, pi), -3);
        assert_eq!(call(5, 1, pdl, odd, pdu, 5, pb, 5, 5, 2, pi), -4);
        assert_eq!(call(5, 1, pdl, pd, null(), 5, pb, 5, 5, 2, pi), -5);
        assert_eq!(call(5, 1, pdl, pd, pdu, 4, pb, 5, 5, 2, pi), -6);
        assert_eq!(call(5, 1, pdl, pd, pdu, 5, null_mut(), 5, 5, 2, pi), -7);
        assert_eq!(call(5, 1, pdl, pd, pdu, 5, pb, 4, 5, 2, pi), -8);
        assert_eq!(call(5, 2, pdl, pd, pdu, 5, pb, 5, 9, 2, pi), -9);
        assert_eq!(call(5, 1, pdl, pd, pdu, 5, pb, 5, 5, -1, pi), -10);
        assert_eq!(call(5, 1, pdl, pd, pdu, 5, pb, 5, 5, 2, null_mut()), -11);
        // Nothing referenced: quick returns, GPU or not.
        assert_eq!(
            call(0, 1, null(), null(), null(), 0, null_mut(), 1, 1, 2, pi),
            0
        );
        assert_eq!(info, [0, 0], "N = 0: every INFO 0");
        let s = sgtsv_spike_strided_batch_device;
        assert_eq!(
            s(
                5,
                1,
                null(),
                null(),
                null(),
                5,
                null_mut(),
                5,
                5,
                0,
                null_mut(),
                none
            ),
            0
        );
        // Host memory where device memory is needed: without a GPU, the documented error;
        // with one, an illegal value of the first such argument.
        let want = if hylapack::device::gpu().is_ok() {
            -3
        } else {
            HYLAPACK_INFO_NO_GPU
        };
        assert_eq!(call(5, 1, pdl, pd, pdu, 5, pb, 5, 5, 2, pi), want);
    }
    // Every refused call left the arrays alone.
    assert!(b.iter().all(|&v| v == 1.0) && d.iter().all(|&v| v == 4.0));
}

/// Systems tridiag(1, 0, 1) of even order are nonsingular, but every partition of an odd number
/// of interior rows is singular: the warp kernel's SPIKE must refuse them all, and its partial
/// pivoting solve them as LAPACK does.
#[test]
fn strided_batch_spike_refusals_go_to_partial_pivoting() {
    let mut rng = Rng::new(seed_from_time());
    for (n, nrhs, count) in [(256, 1, 300), (512, 2, 40), (30, 3, 50)] {
        let a = Tridiag {
            dl: vec![1.0; n - 1],
            d: vec![0.0; n],
            du: vec![1.0; n - 1],
        };
        let bs = rhs(n, n, nrhs * count, &mut rng);
        let (mut dl, mut d, mut du) = (
            vec![1.0f64; n * count],
            vec![0.0f64; n * count],
            vec![1.0f64; n * count],
        );
        let mut b = bs.clone();
        let mut info = vec![-99; count];
        let report = gtsv::gtsv_strided_batch(
            &Options::default(),
            n,
            nrhs,
            &mut dl[..],
            &mut d[..],
            &mut du[..],
            n,
            &mut b,
            n,
            n * nrhs,
            count,
            &mut info,
            backend(),
        );
        let what = format!("tridiag(1, 0, 1): n {n} nrhs {nrhs} count {count}");
        if backend() == Backend::Gpu && require_gpu() {
            assert_eq!(report.solver, gtsv::Solver::WarpPerSystem, "{what}");
            assert_eq!(report.pivoted, count, "{what}: {:?}", report.note);
        }
        assert!(info.iter().all(|&i| i == 0), "{what}: {info:?}");
        for k in 0..count {
            let (got, b_k) = (&b[k * n * nrhs..], &bs[k * n * nrhs..]);
            let want = lapack::<f64>(&a, b_k, n, nrhs);
            for c in 0..nrhs {
                let be = backward_error(&a, got, b_k, n, c);
                assert!(
                    be <= 64.0 * f64::EPSILON,
                    "{what}: system {k} column {c} backward error {be:e}"
                );
                for i in 0..n {
                    let (x, y) = (got[c * n + i], want.x[c * n + i]);
                    assert!(
                        (x - y).abs() <= 1e-12 * y.abs().max(1.0),
                        "{what}: system {k} x[{i}] {x} against LAPACK {y}"
                    );
                }
            }
        }
    }
}

/// A batch of small systems above the GPU memory allowed: the warp kernel's path cannot hold
/// it, and the stacked solve, which chunks, takes it on the GPU.
#[test]
fn strided_batch_above_the_memory_limit_is_stacked() {
    let mut rng = Rng::new(seed_from_time());
    let (n, count) = (64usize, 4000usize);
    let o = Options {
        gpu: hylapack::gtsv::gpu::GpuOptions {
            memory_limit: Some(1_500_000),
            ..Default::default()
        },
        ..Options::default()
    };
    let systems: Vec<Tridiag> = (0..count)
        .map(|_| matrices::diagonally_dominant(n, &mut rng))
        .collect();
    let bs = rhs(n, n, count, &mut rng);
    let (mut dl, mut d, mut du) = (
        vec![0.0; n * count],
        vec![0.0; n * count],
        vec![0.0; n * count],
    );
    for (k, a) in systems.iter().enumerate() {
        dl[k * n..k * n + n - 1].copy_from_slice(&a.dl);
        d[k * n..k * n + n].copy_from_slice(&a.d);
        du[k * n..k * n + n - 1].copy_from_slice(&a.du);
    }
    let mut b = bs.clone();
    let mut info = vec![-99; count];
    let report = gtsv::gtsv_strided_batch(
        &o,
        n,
        1,
        &mut dl,
        &mut d,
        &mut du,
        n,
        &mut b,
        n,
        n,
        count,
        &mut info,
        backend(),
    );
    if backend() == Backend::Gpu && require_gpu() {
        assert_eq!(report.backend, Backend::Gpu, "{:?}", report.note);
        assert_eq!(report.solver, gtsv::Solver::Spike, "{:?}", report.note);
    }
    assert!(info.iter().all(|&i| i == 0));
    for (k, a) in systems.iter().enumerate() {
        let be = backward_error(a, &b[k * n..], &bs[k * n..], n, 0);
        assert!(
            be <= 64.0 * f64::EPSILON,
            "system {k}: backward error {be:e}"
        );
    }
}

/// In auto mode a strided batch of host arrays stays on a host of many threads, where LAPACK
/// per system on its threads beats the GPU path's transfers (`batch_gpu_below_threads`); on
/// one of few threads the GPU takes it. Runs the C entry in a child process in auto mode, whose
/// backend must be the rule's: on a GPU host of 8 or more threads, the CPU.
#[test]
fn strided_batch_auto_mode_follows_the_host_threads() {
    use hylapack::api::gtsv::dgtsv_spike_strided_batch;
    let (n, count) = (256usize, 300usize);
    if std::env::var(child::CHILD).is_ok() {
        let mut rng = Rng::new(seed_from_time());
        let (mut dl, mut d, mut du) = (
            vec![0.0; n * count],
            vec![0.0; n * count],
            vec![0.0; n * count],
        );
        for k in 0..count {
            let a = matrices::diagonally_dominant(n, &mut rng);
            dl[k * n..k * n + n - 1].copy_from_slice(&a.dl);
            d[k * n..k * n + n].copy_from_slice(&a.d);
            du[k * n..k * n + n - 1].copy_from_slice(&a.du);
        }
        let mut b = rhs(n, n, count, &mut rng);
        let mut info = vec![0; count];
        let (ni, ci) = (n as i32, count as i32);
        // SAFETY: the arrays hold count systems of order n with strides n.
        let ret = unsafe {
            dgtsv_spike_strided_batch(
                ni,
                1,
                dl.as_mut_ptr(),
                d.as_mut_ptr(),
                du.as_mut_ptr(),
                ni,
                b.as_mut_ptr(),
                ni,
                ni,
                ci,
                info.as_mut_ptr(),
            )
        };
        assert_eq!(ret, 0);
        println!("RESULT {:?}", hylapack::dispatch::last_backend());
        return;
    }
    let (out, _) = child::in_child_env(
        "strided_batch_auto_mode_follows_the_host_threads",
        &[("HYLAPACK_DEVICE", "auto")],
    );
    let threads = hylapack::host::threads();
    let below = gtsv::batch_gpu_below_threads::<f64>(n, 1);
    let gpu = hylapack::device::gpu().is_ok();
    let want = if gpu && threads < below {
        Backend::Gpu
    } else {
        Backend::Cpu
    };
    assert!(
        out.contains(&format!("RESULT Some({want:?})")),
        "{threads} threads, GPU {gpu}: want {want:?}, the child printed:\n{out}"
    );
}

#[test]
fn strided_batch_c_entry_and_bad_arguments() {
    use hylapack::api::gtsv::{dgtsv_spike_strided_batch, sgtsv_spike_strided_batch};
    use std::ptr::null_mut;
    let mut rng = Rng::new(seed_from_time());
    let (n, count) = (40usize, 6usize);
    let mut dl = vec![0.0; n * count];
    let mut d = vec![0.0; n * count];
    let mut du = vec![0.0; n * count];
    let mut b = vec![0.0; n * count];
    let mut systems = Vec::new();
    for k in 0..count {
        let mut a = matrices::random(n, &mut rng);
        if k == 4 {
            a.d[7] = 0.0;
            a.dl[6] = 0.0;
            a.du[7] = 0.0;
        }
        d[k * n..k * n + n].copy_from_slice(&a.d);
        dl[k * n..k * n + n - 1].copy_from_slice(&a.dl);
        du[k * n..k * n + n - 1].copy_from_slice(&a.du);
        let bk = rhs(n, n, 1, &mut rng);
        b[k * n..k * n + n].copy_from_slice(&bk);
        systems.push((a, bk));
    }
    let mut info = vec![0; count];
    let (ni, ci) = (n as i32, count as i32);
    let ret = unsafe {
        dgtsv_spike_strided_batch(
            ni,
            1,
            dl.as_mut_ptr(),
            d.as_mut_ptr(),
            du.as_mut_ptr(),
            ni,
            b.as_mut_ptr(),
            ni,
            ni,
            ci,
            info.as_mut_ptr(),
        )
    };
    assert_eq!(ret, 1, "one singular system");
    for (k, (a, bk)) in systems.iter().enumerate() {
        let want = lapack::<f64>(a, bk, n, 1);
        assert_eq!(info[k], want.info);
        if want.info == 0 {
            assert!(backward_error(a, &b[k * n..], bk, n, 0) <= 64.0 * f64::EPSILON);
        }
    }
    assert!(info[4] > 0);

    // Argument checks, in order.
    let (mut x, mut y, mut z, mut w) = (
        vec![1.0f64; 40],
        vec![4.0f64; 40],
        vec![1.0f64; 40],
        vec![1.0f64; 40],
    );
    let mut inf = vec![0; 8];
    let call = |n: i32,
                nrhs: i32,
                dl: *mut f64,
                d: *mut f64,
                du: *mut f64,
                sa: i32,
                b: *mut f64,
                ldb: i32,
                sb: i32,
                cnt: i32,
                info: *mut i32| unsafe {
        dgtsv_spike_strided_batch(n, nrhs, dl, d, du, sa, b, ldb, sb, cnt, info)
    };
    let (px, py, pz, pw, pi) = (
        x.as_mut_ptr(),
        y.as_mut_ptr(),
        z.as_mut_ptr(),
        w.as_mut_ptr(),
        inf.as_mut_ptr(),
    );
    assert_eq!(call(-1, 1, px, py, pz, 5, pw, 5, 5, 4, pi), -1);
    assert_eq!(call(5, -1, px, py, pz, 5, pw, 5, 5, 4, pi), -2);
    assert_eq!(call(5, 1, null_mut(), py, pz, 5, pw, 5, 5, 4, pi), -3);
    assert_eq!(call(5, 1, px, null_mut(), pz, 5, pw, 5, 5, 4, pi), -4);
    assert_eq!(call(5, 1, px, py, null_mut(), 5, pw, 5, 5, 4, pi), -5);
    assert_eq!(call(5, 1, px, py, pz, 4, pw, 5, 5, 4, pi), -6);
    assert_eq!(call(5, 1, px, py, pz, 5, null_mut(), 5, 5, 4, pi), -7);
    assert_eq!(call(5, 1, px, py, pz, 5, pw, 4, 5, 4, pi), -8);
    assert_eq!(call(5, 2, px, py, pz, 5, pw, 5, 9, 4, pi), -9);
    assert_eq!(call(5, 1, px, py, pz, 5, pw, 5, 5, -1, pi), -10);
    assert_eq!(call(5, 1, px, py, pz, 5, pw, 5, 5, 4, null_mut()), -11);
    // Nothing referenced: legal.
    assert_eq!(
        call(
            5,
            1,
            null_mut(),
            null_mut(),
            null_mut(),
            5,
            null_mut(),
            5,
            5,
            0,
            null_mut()
        ),
        0
    );
    assert_eq!(
        call(
            0,
            1,
            null_mut(),
            null_mut(),
            null_mut(),
            0,
            null_mut(),
            1,
            1,
            3,
            pi
        ),
        0
    );
    assert_eq!(
        unsafe {
            sgtsv_spike_strided_batch(
                5,
                1,
                null_mut(),
                null_mut(),
                null_mut(),
                5,
                null_mut(),
                5,
                5,
                -2,
                null_mut(),
            )
        },
        -10
    );
    // Refused calls leave the data alone.
    assert!(y.iter().all(|&v| v == 4.0) && w.iter().all(|&v| v == 1.0));
}
