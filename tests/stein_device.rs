//! The device-pointer entry `xstein_gpu_device` against LAPACK's xSTEIN and the host entry:
//! the same families and measures as `tests/stein.rs`, edge cases, the caller's stream, bad
//! arguments and the answer without a GPU (−1001). Its GPU tests skip without a GPU unless
//! `HYLAPACK_REQUIRE_GPU=1`. Seeds are printed; `HYLAPACK_TEST_SEED` replays one.

mod common;
#[path = "common/stein.rs"]
mod stein_common;
use common::{gpu_required, reported, seed};
use hylapack::dispatch::Backend;
use hylapack::lapack::{Dense, Lapack, LapackStein};
use hylapack::stein::{self, SteinReal, SteinReport};
use hylapack::testmat::{self, Rng, TridiagFamily};
use std::ffi::c_int;
use stein_common::{as_good_as_lapack, lapack_stein, quality, stebz_by_block, Eigenvalues, SIZES};

/// The GPU is required here (HYLAPACK_REQUIRE_GPU=1) or the test may skip.
fn have_gpu_or_skip() -> bool {
    let ok = hylapack::device::gpu().is_ok();
    assert!(ok || !gpu_required(), "HYLAPACK_REQUIRE_GPU=1 but no GPU");
    if !ok {
        eprintln!("skipped: no GPU");
    }
    ok
}

type Stream = std::sync::Arc<cudarc::driver::CudaStream>;
type Dev<U> = cudarc::driver::CudaSlice<U>;

/// A device copy of `v` (one element at least: a zero-length allocation has no address).
fn put<U: cudarc::driver::DeviceRepr + Clone + Default>(s: &Stream, v: &[U]) -> Dev<U> {
    let mut h = v.to_vec();
    if h.is_empty() {
        h.push(U::default());
    }
    s.clone_htod(&h).expect("upload")
}

fn addr<U>(s: &Stream, x: &Dev<U>) -> u64 {
    use cudarc::driver::DevicePtr;
    x.device_ptr(s).0
}

/// The inputs of one call on the device, and Z (`ldz` × M).
struct DeviceCall<T: cudarc::driver::DeviceRepr> {
    d: Dev<T>,
    e: Dev<T>,
    w: Dev<T>,
    iblock: Dev<i32>,
    isplit: Dev<i32>,
    z: Dev<T>,
}

impl<T: SteinReal + cudarc::driver::DeviceRepr + Default> DeviceCall<T> {
    /// Uploads on `s`, complete when it returns (a copy from pageable memory may still be
    /// in flight after the call that queued it).
    fn new(s: &Stream, d: &[T], e: &[T], ev: &Eigenvalues<T>, z: &[T]) -> Self {
        let call = DeviceCall {
            d: put(s, d),
            e: put(s, e),
            w: put(s, &ev.w),
            iblock: put(s, &ev.iblock),
            isplit: put(s, &ev.isplit),
            z: put(s, z),
        };
        s.synchronize().expect("sync");
        call
    }

    /// `xstein_gpu_device` with the caller's `stream` (`None`: NULL, the legacy default
    /// stream); returns INFO and IFAIL.
    fn call(
        &self,
        s: &Stream,
        n: usize,
        m: usize,
        ldz: usize,
        stream: Option<&Stream>,
    ) -> (i32, Vec<i32>) {
        use hylapack::api::stein::{dstein_gpu_device, sstein_gpu_device};
        let mut ifail = vec![-7; m.max(1)];
        let raw = stream.map_or(std::ptr::null_mut(), |t| {
            t.cu_stream() as *mut std::ffi::c_void
        });
        let (d, e, w, z) = (
            addr(s, &self.d),
            addr(s, &self.e),
            addr(s, &self.w),
            addr(s, &self.z),
        );
        let (ib, is) = (
            addr(s, &self.iblock) as *const c_int,
            addr(s, &self.isplit) as *const c_int,
        );
        let (ni, mi, li, f) = (n as c_int, m as c_int, ldz as c_int, ifail.as_mut_ptr());
        // SAFETY: device arrays of the extents xSTEIN reads and writes, IFAIL on the host.
        let info = unsafe {
            if T::PREFIX == 'd' {
                let p = |a: u64| a as *const f64;
                dstein_gpu_device(ni, p(d), p(e), mi, p(w), ib, is, z as *mut f64, li, f, raw)
            } else {
                let p = |a: u64| a as *const f32;
                sstein_gpu_device(ni, p(d), p(e), mi, p(w), ib, is, z as *mut f32, li, f, raw)
            }
        };
        ifail.truncate(m);
        (info, ifail)
    }
}

/// The device entry on `d`, `e`, `ev` with Z (ldz = N + 2) starting as 777: INFO and IFAIL
/// as LAPACK's and as the host entry's GPU path, quality as good as LAPACK's, rows N.. and
/// the inputs untouched; `stream` as for [`DeviceCall::call`]. Returns Z (N × M).
fn check_device<T>(
    ctx: &str,
    d: &[T],
    e: &[T],
    ev: &Eigenvalues<T>,
    stream: Option<&Stream>,
) -> Vec<T>
where
    T: Lapack + LapackStein + Dense + SteinReal + cudarc::driver::DeviceRepr + Default,
{
    let s = hylapack::device::gpu().expect("GPU").ctx.default_stream();
    let (n, m) = (d.len(), ev.w.len());
    let ldz = n + 2;
    let sentinel = T::from_f64(777.0);
    let dev = DeviceCall::new(&s, d, e, ev, &vec![sentinel; ldz * m.max(1)]);
    let (info, ifail) = dev.call(&s, n, m, ldz, stream);
    let got = s.clone_dtoh(&dev.z).expect("download");
    let (z_ref, rep_ref) = lapack_stein(d, e, ev);
    assert_eq!(
        SteinReport {
            info,
            ifail: ifail.clone()
        },
        rep_ref,
        "{ctx}: INFO/IFAIL differ from LAPACK's"
    );
    let mut z_host = vec![T::ZERO; n.max(1) * m.max(1)];
    let host = stein::stein_with(
        Backend::Gpu,
        d,
        e,
        &ev.w,
        &ev.iblock,
        &ev.isplit,
        &mut z_host,
        n.max(1),
    )
    .expect("host memory");
    assert_eq!(host.report, rep_ref, "{ctx}: the host entry's INFO/IFAIL");
    let mut z = vec![T::ZERO; n * m];
    for j in 0..m {
        z[j * n..(j + 1) * n].copy_from_slice(&got[j * ldz..j * ldz + n]);
        assert!(
            got[j * ldz + n..(j + 1) * ldz]
                .iter()
                .all(|&x| x == sentinel),
            "{ctx}: rows N.. of column {j} written"
        );
    }
    let (orth, resid) = quality(d, e, &ev.w, &z);
    let (orth_ref, resid_ref) = quality(d, e, &ev.w, &z_ref);
    assert!(
        as_good_as_lapack(orth, orth_ref) && as_good_as_lapack(resid, resid_ref),
        "{ctx} (M = {m}): orthogonality {orth:.3} vs LAPACK {orth_ref:.3}, residual {resid:.3} vs LAPACK {resid_ref:.3}"
    );
    let same =
        |x: &Dev<T>, v: &[T]| v.is_empty() || s.clone_dtoh(x).expect("download")[..v.len()] == *v;
    let same_int = |x: &Dev<i32>, v: &[i32]| {
        v.is_empty() || s.clone_dtoh(x).expect("download")[..v.len()] == *v
    };
    assert!(
        same(&dev.d, d)
            && same(&dev.e, e)
            && same(&dev.w, &ev.w)
            && same_int(&dev.iblock, &ev.iblock)
            && same_int(&dev.isplit, &ev.isplit),
        "{ctx}: an input on the device was modified"
    );
    z
}

fn device_families<T>(stream: Option<&Stream>)
where
    T: Lapack + LapackStein + Dense + SteinReal + cudarc::driver::DeviceRepr + Default,
{
    let seed = seed();
    let mut rng = Rng::new(seed);
    for family in TridiagFamily::all() {
        for n in SIZES {
            let (d, e) = testmat::tridiag::<T>(family, n, &mut rng);
            let ctx = format!(
                "{}stein_gpu_device {} n={n} seed {seed}",
                T::PREFIX,
                family.name()
            );
            let ev = stebz_by_block(b'A', 0, 0, &d, &e);
            let z = check_device(&format!("{ctx} RANGE=A"), &d, &e, &ev, stream);
            // Well separated eigenvalues: the host entry's vectors up to rounding.
            if family == TridiagFamily::Random && T::PREFIX == 'd' && n > 0 {
                let mut z_host = vec![T::ZERO; n * ev.w.len()];
                stein::stein_with(
                    Backend::Gpu,
                    &d,
                    &e,
                    &ev.w,
                    &ev.iblock,
                    &ev.isplit,
                    &mut z_host,
                    n,
                )
                .expect("host memory");
                let diff = z
                    .iter()
                    .zip(&z_host)
                    .map(|(a, b)| (a.to_f64() - b.to_f64()).abs())
                    .fold(0.0, f64::max);
                assert!(diff < 1e-7, "{ctx}: max |Z - Z_host| = {diff:e}");
            }
            if n >= 2 {
                let a = 1 + rng.below(n) as i32;
                let b = 1 + rng.below(n) as i32;
                let (il, iu) = (a.min(b), a.max(b));
                let ev = stebz_by_block(b'I', il, iu, &d, &e);
                check_device(&format!("{ctx} RANGE=I {il}..={iu}"), &d, &e, &ev, stream);
            }
        }
    }
}

#[test]
fn dstein_gpu_device_matches_lapack_and_the_host_entry() {
    if have_gpu_or_skip() {
        device_families::<f64>(None);
    }
}

#[test]
fn sstein_gpu_device_matches_lapack_and_the_host_entry() {
    if have_gpu_or_skip() {
        let gpu = hylapack::device::gpu().expect("GPU");
        let stream = gpu.ctx.new_stream().expect("stream");
        device_families::<f32>(Some(&stream));
    }
}

/// N = 1, blocks of order 1, IBLOCK(1) = 0, a skipped block, blocks ISPLIT places outside T,
/// shifts that fail: Z (all LDZ rows, untouched columns included), INFO and IFAIL as the host
/// path leaves them.
#[test]
fn device_entry_edge_cases_as_the_host_path() {
    if !have_gpu_or_skip() {
        return;
    }
    let s = hylapack::device::gpu().expect("GPU").ctx.default_stream();
    let check = |d: &[f64], e: &[f64], w: &[f64], iblock: &[i32], isplit: &[i32]| {
        let (n, m) = (d.len(), w.len());
        let ldz = n + 1;
        let mut z_host = vec![7.0f64; ldz * m.max(1)];
        let want = stein::stein(d, e, w, iblock, isplit, &mut z_host, ldz).expect("host memory");
        let ev = Eigenvalues {
            w: w.to_vec(),
            iblock: iblock.to_vec(),
            isplit: isplit.to_vec(),
        };
        let dev = DeviceCall::new(&s, d, e, &ev, &vec![7.0f64; ldz * m.max(1)]);
        let (info, ifail) = dev.call(&s, n, m, ldz, None);
        if m > n {
            // The host path's inner function takes such M; the entry checks as LAPACK does.
            assert_eq!(info, -4, "M = {m} > N = {n}");
            return;
        }
        assert_eq!(
            (info, &ifail),
            (want.info, &want.ifail),
            "{iblock:?} {isplit:?}"
        );
        let z = s.clone_dtoh(&dev.z).expect("download");
        for (a, b) in z.iter().zip(&z_host) {
            assert!(
                (a - b).abs() <= 1e-13,
                "{iblock:?} {isplit:?}: {z:?} vs {z_host:?}"
            );
        }
    };
    check(&[3.0], &[], &[3.0], &[1], &[1]);
    check(&[3.0], &[], &[3.0], &[0], &[1]);
    let (d, e) = ([2.0, 2.0, 1.0, 4.0], [-1.0, 0.0, 0.5]);
    check(&d, &e, &[1.0, 3.0], &[0, 1], &[2, 4]);
    check(&d, &e, &[1.0, 3.0], &[1, 1], &[2, 4]);
    let (d, e) = ([2.0, 2.0, 5.0, 1.0, 3.0], [-1.0, 0.0, 0.0, 0.25]);
    check(&d, &e, &[1.0, 0.9, 3.0], &[1, 3, 3], &[2, 3, 5]);
    let (d, e) = ([5.0, 2.0, 2.0], [0.0, -1.0]);
    check(&d, &e, &[5.0, 5.0, 1.0, 3.0], &[1, 1, 2, 2], &[1, 3]);
    let (d, e) = ([1.0, 3.0, 1e-3, 2e-3, 1e-3], [1.0, 0.0, 1e-3, 1e-3]);
    check(
        &d,
        &e,
        &[0.5, 3.5, -1.0e3, 2.0e-3, 3.0e-3],
        &[1, 1, 2, 2, 2],
        &[2, 5],
    );
    // A diagonal matrix: blocks of order 1 only, no cluster for the GPU.
    let d: Vec<f64> = (0..50).map(|i| i as f64).collect();
    let isplit: Vec<i32> = (1..=50).collect();
    check(&d, &[0.0; 49], &d, &isplit, &isplit);
    let (d, e) = ([2.0f64, 2.0, 1.0, 4.0], [-1.0, 0.0, 0.0]);
    for isplit in [&[2][..], &[2, 9], &[2, 2]] {
        let mut padded = isplit.to_vec();
        padded.resize(4, 0);
        check(&d, &e, &[1.0, 3.0, 1.0, 4.0], &[1, 1, 2, 3], &padded);
    }
}

/// NULL for the stream is CUDA's legacy default stream: D written there just before the call
/// (behind a long queue of memsets) must be waited for, though our streams do not block on it.
#[test]
fn device_entry_waits_for_the_null_stream() {
    if !have_gpu_or_skip() {
        return;
    }
    let null = hylapack::device::gpu().expect("GPU").ctx.default_stream();
    let mut rng = Rng::new(seed());
    let n = 2000;
    let (d, e) = testmat::tridiag::<f64>(TridiagFamily::Random, n, &mut rng);
    let ev = stebz_by_block(b'A', 0, 0, &d, &e);
    let m = ev.w.len();
    let mut dev = DeviceCall::new(&null, &d, &e, &ev, &vec![0.0; n * m]);
    // A first call loads the kernels and creates our streams (cudarc synchronizes the whole
    // context when it creates a process's first stream, which would hide the race).
    assert_eq!(dev.call(&null, n, m, n, None).0, 0);
    let right = put(&null, &d);
    null.memset_zeros(&mut dev.d).expect("memset");
    let mut delay = null.alloc_zeros::<u8>(1 << 30).expect("alloc");
    null.synchronize().expect("sync");
    for _ in 0..16 {
        null.memset_zeros(&mut delay).expect("memset");
    }
    null.memcpy_dtod(&right, &mut dev.d).expect("copy");
    let (info, _) = dev.call(&null, n, m, n, None);
    assert_eq!(info, 0);
    let z = null.clone_dtoh(&dev.z).expect("download");
    let (orth, resid) = quality(&d, &e, &ev.w, &z);
    assert!(
        orth < 50.0 && resid < 50.0,
        "orthogonality {orth}, residual {resid}: D was read before it was written"
    );
}

/// Illegal arguments in LAPACK's numbering (reported as DSTEIN_GPU_DEVICE), checked before the
/// GPU is touched; host memory where device memory is needed: −1001 without a GPU, an illegal
/// W with one. IFAIL is untouched by every refused call.
#[test]
fn device_entry_bad_arguments_and_no_gpu() {
    use hylapack::api::stein::{dstein_gpu_device, sstein_gpu_device};
    use hylapack::api::HYLAPACK_INFO_NO_GPU;
    use std::ptr::{null, null_mut};
    let (d, e, w) = (
        vec![2.0f64; 4],
        vec![-1.0f64; 3],
        vec![1.0f64, 2.0, 3.0, 4.0],
    );
    let (iblock, isplit) = (vec![1; 4], vec![4; 4]);
    let mut z = vec![5.0f64; 16];
    let mut ifail = vec![9; 4];
    let (pd, pe, pw, pib, pis) = (
        d.as_ptr(),
        e.as_ptr(),
        w.as_ptr(),
        iblock.as_ptr(),
        isplit.as_ptr(),
    );
    let (pz, pf, none) = (z.as_mut_ptr(), ifail.as_mut_ptr(), null_mut());
    // One byte past an element boundary.
    let skew = |p: *const f64| (p as *const u8).wrapping_add(1) as *const f64;
    let name = "DSTEIN_GPU_DEVICE";
    // SAFETY: the host arrays are never touched by a refused call.
    let cases = unsafe {
        [
            (
                dstein_gpu_device(-1, pd, pe, 0, pw, pib, pis, pz, 1, pf, none),
                -1,
            ),
            (
                dstein_gpu_device(4, pd, pe, -1, pw, pib, pis, pz, 4, pf, none),
                -4,
            ),
            (
                dstein_gpu_device(4, pd, pe, 5, pw, pib, pis, pz, 4, pf, none),
                -4,
            ),
            (
                dstein_gpu_device(4, pd, pe, 4, pw, pib, pis, pz, 3, pf, none),
                -9,
            ),
            (
                dstein_gpu_device(4, pd, pe, 4, null(), pib, pis, pz, 4, pf, none),
                -5,
            ),
            (
                dstein_gpu_device(4, pd, pe, 4, skew(pw), pib, pis, pz, 4, pf, none),
                -5,
            ),
            (
                dstein_gpu_device(4, pd, pe, 4, pw, null(), pis, pz, 4, pf, none),
                -6,
            ),
            (
                dstein_gpu_device(4, pd, pe, 4, pw, pib, pis, pz, 4, null_mut(), none),
                -12,
            ),
            (
                dstein_gpu_device(4, null(), pe, 4, pw, pib, pis, pz, 4, pf, none),
                -2,
            ),
            (
                dstein_gpu_device(4, skew(pd), pe, 4, pw, pib, pis, pz, 4, pf, none),
                -2,
            ),
            (
                dstein_gpu_device(4, pd, null(), 4, pw, pib, pis, pz, 4, pf, none),
                -3,
            ),
            (
                dstein_gpu_device(4, pd, pe, 4, pw, pib, null(), pz, 4, pf, none),
                -7,
            ),
            (
                dstein_gpu_device(4, pd, pe, 4, pw, pib, pis, null_mut(), 4, pf, none),
                -8,
            ),
        ]
    };
    for (i, &(info, want)) in cases.iter().enumerate() {
        assert_eq!(info, want, "case {i}");
        assert!(
            reported(name, -want),
            "xerbla_ not called for {name} argument {}",
            -want
        );
    }
    // SAFETY: as above; nothing is referenced when M = 0, and E is not when N = 1.
    unsafe {
        assert_eq!(
            sstein_gpu_device(
                0,
                null(),
                null(),
                0,
                null(),
                null(),
                null(),
                null_mut(),
                1,
                null_mut(),
                none
            ),
            0
        );
        assert_eq!(
            sstein_gpu_device(
                3,
                null(),
                null(),
                0,
                null(),
                null(),
                null(),
                null_mut(),
                3,
                null_mut(),
                none
            ),
            0
        );
        assert_eq!(
            sstein_gpu_device(
                2,
                null(),
                null(),
                0,
                null(),
                null(),
                null(),
                null_mut(),
                1,
                null_mut(),
                none
            ),
            -9
        );
        let gpu = hylapack::device::gpu().is_ok();
        let want = if gpu { -5 } else { HYLAPACK_INFO_NO_GPU };
        assert_eq!(
            dstein_gpu_device(1, pd, null(), 1, pw, pib, pis, pz, 1, pf, none),
            want
        );
        assert_eq!(
            dstein_gpu_device(4, pd, pe, 4, pw, pib, pis, pz, 4, pf, none),
            want
        );
    }
    assert!(
        ifail.iter().all(|&x| x == 9) && z.iter().all(|&x| x == 5.0),
        "a refused call wrote IFAIL or Z"
    );
}
