//! What the gtsv test programs share (`gtsv`, `gtsv_device`, `gtsv_batch`, `gtsv_transfer`):
//! the backend from the environment, options that force SPIKE at every size, right-hand sides
//! with padding, our solve and LAPACK's, and the residual measures. Each includes it with
//! `#[path = "common/gtsv.rs"] mod gtsv_common;`.
#![allow(dead_code)]

use hylapack::dispatch::Backend;
use hylapack::gtsv::gpu::GpuOptions;
use hylapack::gtsv::matrices::Tridiag;
use hylapack::gtsv::{self, GtsvReport, Options};
use hylapack::lapack::Lapack;
use hylapack::real::Real;
use hylapack::testmat::Rng;

pub fn require_gpu() -> bool {
    std::env::var("HYLAPACK_REQUIRE_GPU").as_deref() == Ok("1")
}

pub fn backend() -> Backend {
    match std::env::var("HYLAPACK_DEVICE").as_deref() {
        Ok("gpu") => Backend::Gpu,
        _ => Backend::Cpu,
    }
}

/// Options that take the SPIKE path at every size: 64 CPU blocks, 8-row GPU partitions.
pub fn spike_everywhere() -> Options {
    Options {
        cpu_min_n: 2,
        cpu_blocks: Some(64),
        threads: None,
        gpu: GpuOptions {
            m: 8,
            threads: 32,
            base_n: 16,
            ..GpuOptions::default()
        },
    }
}

pub fn convert<T: Real>(v: &[f64]) -> Vec<T> {
    v.iter().map(|&x| T::from_f64(x)).collect()
}

/// Column-major `ldb x nrhs` right-hand sides, U(-1,1), padding rows = 777 (must survive).
pub fn rhs(n: usize, ldb: usize, nrhs: usize, rng: &mut Rng) -> Vec<f64> {
    let mut b = vec![777.0; ldb * nrhs];
    for c in 0..nrhs {
        for i in 0..n {
            b[i + c * ldb] = rng.range(-1.0, 1.0);
        }
    }
    b
}

pub struct Solved<T> {
    pub x: Vec<T>,
    pub info: i32,
    pub report: Option<GtsvReport>,
}

pub fn ours<T: Lapack>(
    a: &Tridiag,
    b: &[f64],
    ldb: usize,
    nrhs: usize,
    opts: &Options,
) -> Solved<T> {
    let (mut dl, mut d, mut du, mut x) = (
        convert::<T>(&a.dl),
        convert::<T>(&a.d),
        convert::<T>(&a.du),
        convert::<T>(b),
    );
    let r = gtsv::gtsv_with(opts, &mut dl, &mut d, &mut du, &mut x, ldb, nrhs, backend());
    if backend() == Backend::Gpu && require_gpu() && a.n() > 0 && nrhs > 0 {
        assert_eq!(
            r.spike_backend,
            Some(Backend::Gpu),
            "HYLAPACK_REQUIRE_GPU=1 but the GPU path did not run: {:?}",
            r.note
        );
    }
    Solved {
        x,
        info: r.info,
        report: Some(r),
    }
}

pub fn lapack<T: Lapack>(a: &Tridiag, b: &[f64], ldb: usize, nrhs: usize) -> Solved<T> {
    let (mut dl, mut d, mut du, mut x) = (
        convert::<T>(&a.dl),
        convert::<T>(&a.d),
        convert::<T>(&a.du),
        convert::<T>(b),
    );
    let info = T::gtsv(&mut dl, &mut d, &mut du, &mut x, ldb, nrhs);
    Solved {
        x,
        info,
        report: None,
    }
}

/// ‖A x − b‖₂ / ‖b‖₂ of column `c`, in double precision.
pub fn rel_residual<T: Real>(a: &Tridiag, x: &[T], b: &[f64], ldb: usize, c: usize) -> f64 {
    let n = a.n();
    let xs: Vec<f64> = x[c * ldb..c * ldb + n].iter().map(|v| v.to_f64()).collect();
    let ax = a.mul(&xs);
    let (mut r2, mut b2) = (0.0, 0.0);
    for i in 0..n {
        r2 += (ax[i] - b[i + c * ldb]).powi(2);
        b2 += b[i + c * ldb].powi(2);
    }
    (r2 / b2).sqrt()
}

/// Normwise backward error max|r| / max(|A||x| + |b|) of column `c`, in double precision.
pub fn backward_error<T: Real>(a: &Tridiag, x: &[T], b: &[f64], ldb: usize, c: usize) -> f64 {
    let n = a.n();
    let xs: Vec<f64> = x[c * ldb..c * ldb + n].iter().map(|v| v.to_f64()).collect();
    let (mut rm, mut sm) = (0.0f64, 0.0f64);
    for i in 0..n {
        let mut s = (a.d[i] * xs[i]).abs() + b[i + c * ldb].abs();
        let mut ax = a.d[i] * xs[i];
        if i > 0 {
            ax += a.dl[i - 1] * xs[i - 1];
            s += (a.dl[i - 1] * xs[i - 1]).abs();
        }
        if i + 1 < n {
            ax += a.du[i] * xs[i + 1];
            s += (a.du[i] * xs[i + 1]).abs();
        }
        rm = rm.max((ax - b[i + c * ldb]).abs());
        sm = sm.max(s);
    }
    if sm == 0.0 {
        rm
    } else {
        rm / sm
    }
}

/// `b − A x` of one column with exact products and a compensated sum (double-double).
pub fn exact_residual(a: &Tridiag, x: &[f64], b: &[f64]) -> Vec<f64> {
    let n = a.n();
    (0..n)
        .map(|i| {
            let mut terms = vec![(a.d[i], x[i])];
            if i > 0 {
                terms.push((a.dl[i - 1], x[i - 1]));
            }
            if i + 1 < n {
                terms.push((a.du[i], x[i + 1]));
            }
            let (mut hi, mut lo) = (b[i], 0.0f64);
            for (c, v) in terms {
                let p = -c * v;
                let p_err = (-c).mul_add(v, -p);
                let s = hi + p;
                let t = s - hi;
                lo += (hi - (s - t)) + (p - t) + p_err;
                hi = s;
            }
            hi + lo
        })
        .collect()
}

/// The solution of `A x = b` (one column) correct to about one ulp: LAPACK's answer refined
/// with exact residuals until the last correction is below an ulp of every entry; `None` if it
/// does not settle (too ill-conditioned). Its residual is what the rounding of x alone costs,
/// a level no solver can be asked to beat.
pub fn rounded_solution(a: &Tridiag, b: &[f64]) -> Option<Vec<f64>> {
    let n = a.n();
    let mut x = lapack::<f64>(a, b, n, 1).x;
    for _ in 0..8 {
        let r = exact_residual(a, &x, b);
        let delta = lapack::<f64>(a, &r, n, 1).x;
        let settled = (0..n).all(|i| delta[i].abs() <= f64::EPSILON * x[i].abs());
        for i in 0..n {
            x[i] += delta[i];
        }
        if settled {
            return Some(x);
        }
    }
    None
}

/// The paper's Table III test: our ‖Ax − b‖/‖b‖ within 10 times LAPACK's. Where LAPACK's answer
/// lands below the residual of the correctly rounded solution (its error happens to cancel in
/// A x), the bar is 10 times that rounded solution's residual instead.
pub fn within_10x_of_lapack(a: &Tridiag, b: &[f64], r_ours: f64, r_lap: f64) -> bool {
    let within = |floor: f64| r_ours <= 10.0 * floor.max(f64::MIN_POSITIVE);
    within(r_lap)
        || rounded_solution(a, b).is_some_and(|x| within(rel_residual(a, &x, b, a.n(), 0)))
}

/// The GPU is required here (HYLAPACK_REQUIRE_GPU=1) or the test may skip.
pub fn have_gpu_or_skip() -> bool {
    let ok = hylapack::device::gpu().is_ok();
    assert!(ok || !require_gpu(), "HYLAPACK_REQUIRE_GPU=1 but no GPU");
    ok
}
