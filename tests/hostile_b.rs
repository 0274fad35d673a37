//! Hostile calls of issue #23, part B: NRHS = 0 in the tridiagonal solvers (LAPACK xGTSV writes
//! a column of B even then), host allocations that fail (in a child process under a lowered
//! RLIMIT_AS), zero dimensions of the interval products, non-finite input of the verified
//! solver, unreadable configuration files and misaligned device pointers. Every case checks
//! the exact INFO, and xerbla where LAPACK calls it.

mod common;
use common::{reported, seed};

use hylapack::lapack::Lapack;
use hylapack::testmat::Rng;
use std::ffi::{c_char, c_int};

/// A random tridiagonal system; with probability 1/2 a diagonal entry and the sub-diagonal
/// entry below it are zero, which often makes one of xGTSV's pivots exactly zero.
fn random_system(n: usize, rng: &mut Rng) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let mut dl: Vec<f64> = (0..n - 1).map(|_| rng.range(-1.0, 1.0)).collect();
    let mut d: Vec<f64> = (0..n).map(|_| rng.range(-1.0, 1.0)).collect();
    let mut du: Vec<f64> = (0..n - 1).map(|_| rng.range(-1.0, 1.0)).collect();
    if rng.chance(0.5) {
        let i = rng.below(n);
        d[i] = 0.0;
        if i + 1 < n {
            dl[i] = 0.0;
        }
        if i > 0 && rng.chance(0.5) {
            du[i - 1] = 0.0;
        }
    }
    (dl, d, du)
}

/// LAPACK's INFO for NRHS = 0, with a full column of B for its back substitution.
fn lapack_info(dl: &[f64], d: &[f64], du: &[f64]) -> i32 {
    let n = d.len();
    let (mut l, mut dd, mut u, mut b) = (dl.to_vec(), d.to_vec(), du.to_vec(), vec![0.0; n]);
    f64::gtsv(&mut l, &mut dd, &mut u, &mut b, n, 0)
}

/// NRHS = 0 with B a single element (B is not referenced by the contract): LAPACK xGTSV would
/// write n entries of it. Before the fix the batch's CPU path passed a one-element stack dummy
/// with LDB = n (stack smashing from n ≈ 100).
#[test]
fn nrhs_zero_strided_batch_with_one_element_b_matches_lapack_info() {
    let s = seed();
    let mut rng = Rng::new(s);
    for &n in &[1usize, 2, 4, 100, 1000, 5000] {
        let count = 5;
        let sa = n + 3;
        let (mut dl, mut d, mut du) = (
            vec![0.0; sa * count],
            vec![0.0; sa * count],
            vec![0.0; sa * count],
        );
        let mut want = vec![0; count];
        for k in 0..count {
            let (l, dd, u) = random_system(n.max(2), &mut rng);
            let (l, dd, u) = (&l[..n - 1], &dd[..n], &u[..n - 1]);
            dl[k * sa..k * sa + n - 1].copy_from_slice(l);
            d[k * sa..k * sa + n].copy_from_slice(dd);
            du[k * sa..k * sa + n - 1].copy_from_slice(u);
            want[k] = lapack_info(l, dd, u);
        }
        let mut b = [42.0f64];
        let mut info = vec![-7; count];
        let got = unsafe {
            hylapack::api::gtsv::dgtsv_spike_strided_batch(
                n as c_int,
                0,
                dl.as_mut_ptr(),
                d.as_mut_ptr(),
                du.as_mut_ptr(),
                sa as c_int,
                b.as_mut_ptr(),
                n as c_int,
                0,
                count as c_int,
                info.as_mut_ptr(),
            )
        };
        assert_eq!(info, want, "seed {s} n {n}");
        assert_eq!(
            got,
            want.iter().filter(|&&i| i > 0).count() as c_int,
            "seed {s} n {n}"
        );
        assert_eq!(b[0], 42.0, "seed {s} n {n}: B was written for NRHS = 0");
    }
}

/// NRHS = 0 through the single-system entries, B NULL: INFO exactly LAPACK's (it factors and
/// reports a zero pivot), B never touched.
#[test]
fn nrhs_zero_with_null_b_matches_lapack_info() {
    let s = seed();
    let mut rng = Rng::new(s);
    for case in 0..200 {
        let n = 1 + rng.below(300);
        let (dl, d, du) = random_system(n.max(2), &mut rng);
        let (mut l, mut dd, mut u) = (dl[..n - 1].to_vec(), d[..n].to_vec(), du[..n - 1].to_vec());
        let want = lapack_info(&l, &dd, &u);
        let got = unsafe {
            hylapack::api::gtsv::dgtsv_spike(
                n as c_int,
                0,
                l.as_mut_ptr(),
                dd.as_mut_ptr(),
                u.as_mut_ptr(),
                std::ptr::null_mut(),
                n as c_int,
            )
        };
        assert_eq!(got, want, "seed {s} case {case} n {n}");
    }
}

// ---- Host allocations that fail: a child process under a lowered RLIMIT_AS ----

/// Set in the child to the name of the test whose body it runs.
const CHILD: &str = "HYLAPACK_HOSTILE_B_CHILD";

/// Runs `body` in a child process (this test binary, this test only) whose address space is
/// limited to what it uses now plus `headroom` bytes, and returns the INFO the child printed.
/// The child must exit normally: an abort on a failed allocation fails the test.
fn info_under_rlimit_as(test: &str, headroom: u64, body: impl FnOnce() -> c_int) -> c_int {
    if std::env::var(CHILD).as_deref() == Ok(test) {
        let statm = std::fs::read_to_string("/proc/self/statm").expect("statm");
        let pages: u64 = statm.split_whitespace().next().unwrap().parse().unwrap();
        let limit = pages * 4096 + headroom;
        let lim = libc::rlimit {
            rlim_cur: limit,
            rlim_max: limit,
        };
        // SAFETY: a plain system call on a valid struct.
        assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_AS, &lim) }, 0);
        let info = body();
        println!("CHILD-INFO {info}");
        return info;
    }
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([test, "--exact", "--test-threads=1", "--nocapture"])
        .env(CHILD, test)
        .output()
        .expect("start the child");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "child failed ({:?}): {stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
        .lines()
        .find_map(|l| l.split("CHILD-INFO ").nth(1))
        .expect("the child printed no INFO")
        .trim()
        .parse()
        .unwrap()
}

/// N = INT_MAX, NRHS = 0 on a matrix whose first pivot is zero: LAPACK reads D(1) and DL(1)
/// and returns INFO = 1. hylapack used to allocate an N-sized dummy B first (16 GiB), which
/// aborts the program where that memory cannot be had.
#[test]
fn nrhs_zero_int_max_order_under_rlimit_as_returns_lapack_info() {
    let info = info_under_rlimit_as(
        "nrhs_zero_int_max_order_under_rlimit_as_returns_lapack_info",
        256 << 20,
        || {
            let (mut dl, mut d, mut du) = ([0.0f64; 2], [0.0f64; 2], [0.0f64; 2]);
            unsafe {
                hylapack::api::gtsv::dgtsv_spike(
                    c_int::MAX,
                    0,
                    dl.as_mut_ptr(),
                    d.as_mut_ptr(),
                    du.as_mut_ptr(),
                    std::ptr::null_mut(),
                    c_int::MAX,
                )
            }
        },
    );
    assert_eq!(info, 1);
}

// ---- Device pointers ----

/// A `double*` that is not 8-byte aligned (a `float*` not 4-byte aligned) is an illegal value
/// of that argument, found before the GPU is touched: with or without a GPU the answer is −i
/// and xerbla names the routine. (A kernel's misaligned access would poison the context of the
/// whole process.)
#[test]
fn misaligned_device_pointer_is_an_illegal_argument_before_the_gpu_is_touched() {
    use hylapack::api::gtsv::{dgtsv_spike_device, sgtsv_spike_device};
    let mut raw = vec![0u8; 1024];
    let base = raw.as_mut_ptr() as usize;
    let aligned = (base + 15) & !15;
    let (good, odd) = (aligned as *mut f64, (aligned + 4) as *mut f64);
    let none = std::ptr::null_mut();
    unsafe {
        assert_eq!(dgtsv_spike_device(5, 1, odd, good, good, good, 5, none), -3);
        assert!(reported("DGTSV_SPIKE_DEVICE", 3));
        assert_eq!(dgtsv_spike_device(5, 1, good, odd, good, good, 5, none), -4);
        assert!(reported("DGTSV_SPIKE_DEVICE", 4));
        assert_eq!(dgtsv_spike_device(5, 1, good, good, odd, good, 5, none), -5);
        assert!(reported("DGTSV_SPIKE_DEVICE", 5));
        assert_eq!(dgtsv_spike_device(5, 2, good, good, good, odd, 5, none), -6);
        assert!(reported("DGTSV_SPIKE_DEVICE", 6));
        // Not referenced (N = 1 has no off-diagonals, NRHS = 0 no B): not checked.
        let g = good as *mut f32;
        let o = (aligned + 2) as *mut f32;
        assert_eq!(sgtsv_spike_device(0, 1, o, o, o, o, 1, none), 0);
        assert_eq!(sgtsv_spike_device(3, 1, g, o, g, g, 3, none), -4);
        assert!(reported("SGTSV_SPIKE_DEVICE", 4));
    }
    assert!(raw.iter().all(|&x| x == 0), "host memory was written");
}

/// NRHS = 0 on device data: LAPACK's INFO, with a one-element device B (the host fallback
/// used to hand LAPACK a one-element B with LDB = N, which it overran from N = 2).
#[test]
fn nrhs_zero_device_with_one_element_b_matches_lapack_info() {
    let Ok(gpu) = hylapack::device::gpu() else {
        assert!(
            std::env::var("HYLAPACK_REQUIRE_GPU").as_deref() != Ok("1"),
            "HYLAPACK_REQUIRE_GPU=1 but no GPU"
        );
        eprintln!("skipped: no GPU");
        return;
    };
    use cudarc::driver::DevicePtr;
    let s = seed();
    let mut rng = Rng::new(s);
    let stream = gpu.ctx.default_stream();
    for &n in &[2usize, 16, 1000, 100_000] {
        for case in 0..4 {
            let (dl, d, du) = random_system(n, &mut rng);
            let want = lapack_info(&dl, &d, &du);
            let (gdl, gd, gdu) = (
                stream.clone_htod(&dl).unwrap(),
                stream.clone_htod(&d).unwrap(),
                stream.clone_htod(&du).unwrap(),
            );
            let gb = stream.clone_htod(&[42.0f64]).unwrap();
            stream.synchronize().unwrap();
            let p = |x: &cudarc::driver::CudaSlice<f64>| x.device_ptr(&stream).0;
            let got = unsafe {
                hylapack::api::gtsv::dgtsv_spike_device(
                    n as c_int,
                    0,
                    p(&gdl) as *const f64,
                    p(&gd) as *const f64,
                    p(&gdu) as *const f64,
                    p(&gb) as *mut f64,
                    n as c_int,
                    std::ptr::null_mut(),
                )
            };
            assert_eq!(got, want, "seed {s} n {n} case {case}");
            assert_eq!(stream.clone_dtoh(&gb).unwrap(), vec![42.0], "B written");
            assert_eq!(stream.clone_dtoh(&gd).unwrap(), d, "D modified");
        }
    }
}

// ---- Interval products and the verified solver: zero dimensions, non-finite input ----

/// M, N or K = 0 through both conventions of DIGEMM: a quick return (M or N = 0, nothing
/// written) or [C] = [0, 0] (K = 0, A and B not referenced, so NULL); never INFO = −1000.
#[test]
fn digemm_zero_dimensions_are_quick_returns_or_an_empty_sum() {
    use hylapack::api::interval::{digemm, digemm_};
    use std::ptr::null;
    let (ai, asup) = ([1.0f64; 12], [2.0f64; 12]);
    for (m, n, k) in [(0, 3, 2), (3, 0, 2), (0, 0, 0), (3, 2, 0), (0, 2, 0)] {
        let (mut ci, mut cs) = ([7.0f64; 12], [8.0f64; 12]);
        let (a, b) = if k == 0 {
            (null(), null())
        } else {
            (ai.as_ptr(), asup.as_ptr())
        };
        let info = unsafe {
            digemm(
                b'N' as c_char,
                b'N' as c_char,
                m,
                n,
                k,
                a,
                a,
                4,
                b,
                b,
                4,
                ci.as_mut_ptr(),
                cs.as_mut_ptr(),
                4,
            )
        };
        assert_eq!(info, 0, "digemm m {m} n {n} k {k}");
        for j in 0..3 {
            for i in 0..4 {
                let inside = (i as c_int) < m && (j as c_int) < n;
                let (wi, ws) = if inside { (0.0, 0.0) } else { (7.0, 8.0) };
                assert_eq!(
                    (ci[i + 4 * j], cs[i + 4 * j]),
                    (wi, ws),
                    "m {m} n {n} k {k}"
                );
            }
        }
        let (mut ci2, mut cs2) = ([7.0f64; 12], [8.0f64; 12]);
        let (t, l) = (b'N' as c_char, 4 as c_int);
        unsafe {
            digemm_(
                &t,
                &t,
                &m,
                &n,
                &k,
                a,
                a,
                &l,
                b,
                b,
                &l,
                ci2.as_mut_ptr(),
                cs2.as_mut_ptr(),
                &l,
                1,
                1,
            )
        };
        assert_eq!((ci2, cs2), (ci, cs), "digemm_ m {m} n {n} k {k}");
    }
}

/// K = 0 or alpha = 0 in DGEMM_ROUNDED: C := beta·C rounded the asked way, alpha never
/// multiplied (alpha = ∞ with K = 0 gives no NaN), beta = 0 writes zeros over NaN, beta = 1
/// leaves C alone; M or N = 0 writes nothing.
#[test]
fn dgemm_rounded_zero_k_scales_c_by_beta_in_the_rounding_direction() {
    use hylapack::api::interval::{dgemm_rounded, dgemm_rounded_};
    use std::ptr::null;
    let s = seed();
    let mut rng = Rng::new(s);
    let c0: Vec<f64> = (0..6).map(|_| rng.range(-1.0, 1.0)).collect();
    let beta = 0.1; // not a power of two: beta·c is inexact, so the direction shows.
    for (alpha, k) in [(f64::INFINITY, 0), (2.0, 0), (0.0, 3)] {
        for (rnd, up) in [(b'U', true), (b'D', false)] {
            let a = [1.0f64; 6];
            let (pa, pb) = if k == 0 {
                (null(), null())
            } else {
                (a.as_ptr(), a.as_ptr())
            };
            let mut c = c0.clone();
            let info = unsafe {
                dgemm_rounded(
                    rnd as c_char,
                    b'N' as c_char,
                    b'N' as c_char,
                    3,
                    2,
                    k,
                    alpha,
                    pa,
                    3,
                    pb,
                    3,
                    beta,
                    c.as_mut_ptr(),
                    3,
                )
            };
            assert_eq!(info, 0);
            for (got, &c) in c.iter().zip(&c0) {
                let near = beta * c;
                // The exact product lies between the two neighbours of the nearest value.
                let ok = if up {
                    *got >= near && *got <= next_up(near)
                } else {
                    *got <= near && *got >= next_down(near)
                };
                assert!(
                    ok,
                    "seed {s} alpha {alpha} k {k} rnd {rnd}: {got} for {beta}·{c}"
                );
                // The sign of beta·c − got, exactly (a fused operation rounds it once).
                let diff = beta.mul_add(c, -*got);
                let right_side = if up { diff <= 0.0 } else { diff >= 0.0 };
                assert!(
                    right_side,
                    "seed {s}: {beta}·{c} rounded the wrong way: {got}"
                );
            }
            let mut c2 = c0.clone();
            let (r, t, m, n, l) = (rnd as c_char, b'N' as c_char, 3, 2, 3);
            unsafe {
                dgemm_rounded_(
                    &r,
                    &t,
                    &t,
                    &m,
                    &n,
                    &k,
                    &alpha,
                    pa,
                    &l,
                    pb,
                    &l,
                    &beta,
                    c2.as_mut_ptr(),
                    &l,
                    1,
                    1,
                    1,
                )
            };
            assert_eq!(c2, c);
        }
    }
    let mut c = [f64::NAN; 6];
    let info = unsafe {
        dgemm_rounded(
            b'U' as c_char,
            b'N' as c_char,
            b'N' as c_char,
            3,
            2,
            0,
            1.0,
            null(),
            3,
            null(),
            3,
            0.0,
            c.as_mut_ptr(),
            3,
        )
    };
    assert_eq!((info, c), (0, [0.0; 6]));
    let mut c = [f64::NAN; 6];
    let info = unsafe {
        dgemm_rounded(
            b'D' as c_char,
            b'N' as c_char,
            b'N' as c_char,
            0,
            2,
            0,
            1.0,
            null(),
            1,
            null(),
            1,
            0.0,
            c.as_mut_ptr(),
            1,
        )
    };
    assert_eq!(info, 0);
    assert!(c.iter().all(|v| v.is_nan()), "M = 0 wrote C");
}

fn next_up(x: f64) -> f64 {
    hylapack::real::Real::next_up(x)
}

fn next_down(x: f64) -> f64 {
    hylapack::real::Real::next_down(x)
}

/// A NaN or ±∞ in A: INFO = N + 1 and every column [−∞, +∞], on whichever backend runs (the
/// GPU's LU used to report INFO = 1 where the CPU reported N + 1).
#[test]
fn dgesv_verified_non_finite_a_is_n_plus_one_on_every_backend() {
    use hylapack::api::interval::dgesv_verified;
    let s = seed();
    let mut rng = Rng::new(s);
    for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
        for n in [1usize, 2, 5, 40] {
            let mut a: Vec<f64> = (0..n * n).map(|_| rng.range(-1.0, 1.0)).collect();
            for i in 0..n {
                a[i + i * n] += 4.0;
            }
            a[rng.below(n * n)] = bad;
            let b: Vec<f64> = (0..2 * n).map(|_| rng.range(-1.0, 1.0)).collect();
            let (mut xi, mut xs) = (vec![0.0; 2 * n], vec![0.0; 2 * n]);
            let info = unsafe {
                dgesv_verified(
                    n as c_int,
                    2,
                    a.as_ptr(),
                    n as c_int,
                    b.as_ptr(),
                    n as c_int,
                    xi.as_mut_ptr(),
                    xs.as_mut_ptr(),
                    n as c_int,
                )
            };
            assert_eq!(info, n as c_int + 1, "seed {s} n {n} bad {bad}");
            assert!(xi.iter().all(|&v| v == f64::NEG_INFINITY), "seed {s}");
            assert!(xs.iter().all(|&v| v == f64::INFINITY), "seed {s}");
        }
    }
    // N = 0 and NRHS = 0: quick returns, nothing referenced.
    let p = std::ptr::null_mut();
    assert_eq!(unsafe { dgesv_verified(0, 3, p, 1, p, 1, p, p, 1) }, 0);
    assert_eq!(unsafe { dgesv_verified(3, 0, p, 3, p, 3, p, p, 3) }, -3);
    assert!(reported("DGESV_VERIFIED", 3));
}
