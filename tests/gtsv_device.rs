//! `xgtsv_spike_device` (data already in GPU memory) against the system LAPACK's xGTSV: sizes,
//! the caller's stream (and the legacy default stream) waited for, singular systems, bad
//! arguments and no GPU. Runs where a GPU is (`HYLAPACK_REQUIRE_GPU=1`: must).

use hylapack::gtsv::matrices::{self, Tridiag};
use hylapack::gtsv::{self, Options};
use hylapack::lapack::Lapack;
use hylapack::real::Real;
use hylapack::testmat::{seed_from_time, Rng};

#[path = "common/gtsv.rs"]
mod gtsv_common;
use gtsv_common::*;

/// Device copies of a system and its right-hand sides, on the library's GPU; `None` without one.
struct OnDevice<T: cudarc::driver::DeviceRepr> {
    stream: std::sync::Arc<cudarc::driver::CudaStream>,
    dl: cudarc::driver::CudaSlice<T>,
    d: cudarc::driver::CudaSlice<T>,
    du: cudarc::driver::CudaSlice<T>,
    b: cudarc::driver::CudaSlice<T>,
}

impl<T: Real + cudarc::driver::DeviceRepr> OnDevice<T> {
    fn new(a: &Tridiag, b: &[f64]) -> Option<Self> {
        let gpu = hylapack::device::gpu().ok()?;
        let stream = gpu.ctx.default_stream();
        // One element at least: a zero-length allocation has no address to pass.
        let put = |v: &[f64]| {
            let mut h = convert::<T>(v);
            if h.is_empty() {
                h.push(T::ZERO);
            }
            stream.clone_htod(&h).expect("upload")
        };
        Some(OnDevice {
            dl: put(&a.dl),
            d: put(&a.d),
            du: put(&a.du),
            b: put(b),
            stream,
        })
    }

    fn ptr(&self, s: &cudarc::driver::CudaSlice<T>) -> u64 {
        use cudarc::driver::DevicePtr;
        s.device_ptr(&self.stream).0
    }

    fn get(&self, s: &cudarc::driver::CudaSlice<T>) -> Vec<T> {
        self.stream.clone_dtoh(s).expect("download")
    }
}

/// `xgtsv_spike_device` through the C entry (default tuning) or the Rust one with `opts`.
fn ours_device<T: Lapack + cudarc::driver::DeviceRepr>(
    a: &Tridiag,
    b: &[f64],
    ldb: usize,
    nrhs: usize,
    opts: Option<&Options>,
) -> Option<Solved<T>> {
    use hylapack::gtsv::gpu::{DevCols, DevMatrix};
    let dev = OnDevice::<T>::new(a, b)?;
    let n = a.n();
    let info = match opts {
        None => unsafe {
            let p = |s| dev.ptr(s) as *mut T;
            if T::PREFIX == 'd' {
                hylapack::api::gtsv::dgtsv_spike_device(
                    n as i32,
                    nrhs as i32,
                    p(&dev.dl) as *const f64,
                    p(&dev.d) as *const f64,
                    p(&dev.du) as *const f64,
                    p(&dev.b) as *mut f64,
                    ldb as i32,
                    std::ptr::null_mut(),
                )
            } else {
                hylapack::api::gtsv::sgtsv_spike_device(
                    n as i32,
                    nrhs as i32,
                    p(&dev.dl) as *const f32,
                    p(&dev.d) as *const f32,
                    p(&dev.du) as *const f32,
                    p(&dev.b) as *mut f32,
                    ldb as i32,
                    dev.stream.cu_stream() as *mut std::ffi::c_void,
                )
            }
        },
        Some(o) => {
            let m = DevMatrix {
                n,
                dl: dev.ptr(&dev.dl),
                d: dev.ptr(&dev.d),
                du: dev.ptr(&dev.du),
            };
            let bc = DevCols {
                ptr: dev.ptr(&dev.b),
                ld: ldb,
            };
            gtsv::gtsv_device::<T>(o, m, bc, nrhs, Some(dev.stream.cu_stream()))
                .expect("GPU present")
                .info
        }
    };
    // The matrix on the device is never modified.
    let same = |s: &cudarc::driver::CudaSlice<T>, v: &[f64]| {
        dev.get(s)
            .iter()
            .zip(convert::<T>(v))
            .all(|(p, q)| p.to_f64().to_bits() == q.to_f64().to_bits())
    };
    assert!(
        same(&dev.dl, &a.dl) && same(&dev.d, &a.d) && same(&dev.du, &a.du),
        "the device matrix was modified"
    );
    Some(Solved {
        x: dev.get(&dev.b),
        info,
        report: None,
    })
}

fn check_device_sizes<T: Lapack + cudarc::driver::DeviceRepr>(
    sizes: &[usize],
    nrhss: &[usize],
    opts: Option<&Options>,
) {
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
                let ldb = n + 2;
                let b = rhs(n, ldb, nrhs, &mut rng);
                let b_t: Vec<f64> = convert::<T>(&b).iter().map(|v| v.to_f64()).collect();
                let got = ours_device::<T>(&a, &b, ldb, nrhs, opts).expect("GPU present");
                let want = lapack::<T>(&a, &b, ldb, nrhs);
                let what = format!(
                    "device {}: n {n} nrhs {nrhs} dominant {dominant} seed {seed}",
                    T::PREFIX
                );
                assert_eq!(got.info, want.info, "{what}: INFO");
                for c in 0..nrhs {
                    for i in n..ldb {
                        assert_eq!(got.x[i + c * ldb].to_f64(), 777.0, "{what}: padding");
                    }
                    if want.info == 0 {
                        let be = backward_error(&a, &got.x, &b_t, ldb, c);
                        assert!(
                            be <= 64.0 * T::EPS.to_f64(),
                            "{what}: column {c} backward error {be:e}"
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn device_entry_against_lapack() {
    if !have_gpu_or_skip() {
        eprintln!("skipped: no GPU");
        return;
    }
    // Default tuning through the C entries: one CTA up to 1024 rows, recursion above.
    check_device_sizes::<f64>(
        &[1, 2, 3, 31, 32, 33, 1000, 1025, 4097, 100_003],
        &[1, 3],
        None,
    );
    check_device_sizes::<f32>(&[1, 2, 3, 1000, 65_537], &[1, 2], None);
    // Small partitions: several levels at small n, sizes not multiples of the partition.
    let o = spike_everywhere();
    check_device_sizes::<f64>(&[4, 7, 8, 9, 17, 63, 65, 513, 4097], &[1, 16], Some(&o));
}

/// NULL for the stream is CUDA's legacy default stream: B written there just before the call
/// (behind a long queue of memsets) must be waited for, though our streams do not block on it.
#[test]
fn device_entry_waits_for_the_null_stream() {
    if !have_gpu_or_skip() {
        return;
    }
    let seed = seed_from_time();
    let mut rng = Rng::new(seed);
    let (n, nrhs) = (4097, 2);
    let a = matrices::diagonally_dominant(n, &mut rng);
    let b = rhs(n, n, nrhs, &mut rng);
    let dev = OnDevice::<f64>::new(&a, &b).expect("GPU present");
    let null = &dev.stream;
    let mut target = null.alloc_zeros::<f64>(n * nrhs).expect("alloc");
    let mut delay = null.alloc_zeros::<u8>(1 << 30).expect("alloc");
    let solve = |target: &cudarc::driver::CudaSlice<f64>| unsafe {
        hylapack::api::gtsv::dgtsv_spike_device(
            n as i32,
            nrhs as i32,
            dev.ptr(&dev.dl) as *const f64,
            dev.ptr(&dev.d) as *const f64,
            dev.ptr(&dev.du) as *const f64,
            dev.ptr(target) as *mut f64,
            n as i32,
            std::ptr::null_mut(),
        )
    };
    // A first call loads the kernels and creates our stream (cudarc synchronizes the whole
    // context when it creates a process's first stream, which would hide the race).
    assert_eq!(solve(&target), 0, "seed {seed}");
    null.memset_zeros(&mut target).expect("memset");
    null.synchronize().expect("sync");
    for _ in 0..16 {
        null.memset_zeros(&mut delay).expect("memset");
    }
    null.memcpy_dtod(&dev.b, &mut target).expect("copy");
    assert_eq!(solve(&target), 0, "seed {seed}");
    let x = dev.get(&target);
    for c in 0..nrhs {
        let be = backward_error(&a, &x, &b, n, c);
        assert!(
            be <= 64.0 * f64::EPSILON,
            "seed {seed}: column {c} backward error {be:e}"
        );
    }
}

#[test]
fn device_entry_singular_ends_as_lapack() {
    if !have_gpu_or_skip() {
        return;
    }
    let mut rng = Rng::new(seed_from_time());
    for &(n, row) in &[
        (1, 0),
        (2, 1),
        (100, 37),
        (5000, 0),
        (5000, 2500),
        (5000, 4999),
    ] {
        let mut a = matrices::diagonally_dominant(n, &mut rng);
        a.d[row] = 0.0;
        if row > 0 {
            a.dl[row - 1] = 0.0;
        }
        if row + 1 < n {
            a.du[row] = 0.0;
        }
        let b = rhs(n, n, 2, &mut rng);
        // NRHS = 0 still factors: LAPACK's INFO (through the C entry that takes a stream).
        let got = ours_device::<f32>(&a, &b, n, 0, None).unwrap();
        assert_eq!(
            got.info,
            lapack::<f32>(&a, &b, n, 0).info,
            "n {n} row {row}, NRHS = 0"
        );
        for opts in [None, Some(&spike_everywhere())] {
            let got = ours_device::<f64>(&a, &b, n, 2, opts).unwrap();
            let want = lapack::<f64>(&a, &b, n, 2);
            assert!(want.info > 0);
            assert_eq!(got.info, want.info, "n {n} row {row}");
            assert!(
                got.x
                    .iter()
                    .zip(&want.x)
                    .all(|(p, q)| p.to_bits() == q.to_bits()),
                "n {n} row {row}: B differs from LAPACK's"
            );
        }
    }
}

/// From 2^16 rows the window solve writes its answer into B as it works and must put B back
/// where the answer is rejected: after a window with a zero pivot gave up (the others may
/// have written), and after a complete answer that was not finite. LAPACK then solves the
/// original B, so B must end bit for bit as LAPACK leaves it.
#[test]
fn device_entry_window_rejected_leaves_b_to_lapack() {
    if !have_gpu_or_skip() {
        return;
    }
    let seed = seed_from_time();
    let mut rng = Rng::new(seed);
    let n = 70_001;
    let nrhs = 2;
    for case in ["zero pivot", "NaN in B"] {
        let mut a = matrices::diagonally_dominant(n, &mut rng);
        let mut b = rhs(n, n, nrhs, &mut rng);
        if case == "zero pivot" {
            let row = 35_000;
            a.d[row] = 0.0;
            a.dl[row - 1] = 0.0;
            a.du[row] = 0.0;
        } else {
            b[n + 40_000] = f64::NAN;
        }
        let got = ours_device::<f64>(&a, &b, n, nrhs, None).unwrap();
        let want = lapack::<f64>(&a, &b, n, nrhs);
        assert_eq!(got.info, want.info, "{case}: seed {seed}");
        let differ = got
            .x
            .iter()
            .zip(&want.x)
            .filter(|(p, q)| p.to_bits() != q.to_bits())
            .count();
        assert_eq!(
            differ, 0,
            "{case}: B differs from LAPACK's in {differ} entries, seed {seed}"
        );
    }
}

#[test]
fn device_entry_bad_arguments_and_no_gpu() {
    use hylapack::api::gtsv::{dgtsv_spike_device, sgtsv_spike_device};
    use hylapack::api::HYLAPACK_INFO_NO_GPU;
    use std::ptr::{null, null_mut};
    let (dl, d, du, mut b) = (vec![1.0; 4], vec![4.0; 5], vec![1.0; 4], vec![1.0; 10]);
    unsafe {
        let (pdl, pd, pdu, pb) = (dl.as_ptr(), d.as_ptr(), du.as_ptr(), b.as_mut_ptr());
        let none = null_mut();
        assert_eq!(dgtsv_spike_device(-1, 1, pdl, pd, pdu, pb, 5, none), -1);
        assert_eq!(dgtsv_spike_device(5, -1, pdl, pd, pdu, pb, 5, none), -2);
        assert_eq!(dgtsv_spike_device(5, 1, pdl, pd, pdu, pb, 4, none), -7);
        assert_eq!(dgtsv_spike_device(5, 1, null(), pd, pdu, pb, 5, none), -3);
        assert_eq!(dgtsv_spike_device(5, 1, pdl, null(), pdu, pb, 5, none), -4);
        assert_eq!(dgtsv_spike_device(5, 1, pdl, pd, null(), pb, 5, none), -5);
        assert_eq!(
            dgtsv_spike_device(5, 1, pdl, pd, pdu, null_mut(), 5, none),
            -6
        );
        assert_eq!(
            sgtsv_spike_device(0, 1, null(), null(), null(), null_mut(), 0, none),
            -7
        );
        // Nothing referenced: a quick return, GPU or not.
        assert_eq!(
            dgtsv_spike_device(0, 3, null(), null(), null(), null_mut(), 1, none),
            0
        );
        // Host memory where device memory is needed: without a GPU, the documented error;
        // with one, an illegal value of the first such argument.
        let want = if hylapack::device::gpu().is_ok() {
            -3
        } else {
            HYLAPACK_INFO_NO_GPU
        };
        assert_eq!(dgtsv_spike_device(5, 2, pdl, pd, pdu, pb, 5, none), want);
    }
    // B is untouched by every refused call.
    assert!(b.iter().all(|&v| v == 1.0) && d.iter().all(|&v| v == 4.0));
}
