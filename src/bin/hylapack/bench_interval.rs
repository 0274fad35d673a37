//! `hylapack bench interval`: the interval family against its peers, in one run.
//!
//! Products (device-resident: operands already on the GPU, kernel/library time only, as cuBLAS
//! is timed): cuBLAS DGEMM, `dgemm_rounded`'s kernel, `digemm` midpoint–radius (thick × thick
//! intervals and point × thick) and infimum–supremum. Rates count 2n³ flops per product. Also
//! the LAPACK interface (host arrays in and out, transfers included) and the CPU path.
//!
//! Solver (host arrays in and out, transfers included for every GPU method): `dgesv_verified`
//! on the GPU and the CPU against the unverified LU solves of cuSOLVER (getrf + getrs) and the
//! system LAPACK (dgetrf + dgetrs), on the paper's kind of matrix: random integers, with
//! b = A·x* for an integer x*, so the enclosure's containment of x* is checked too.

use crate::table::{time, timings, Table};
use cudarc::cublas::{Gemm, GemmConfig};
use cudarc::driver::{CudaSlice, DevicePtr, DevicePtrMut};
use hylapack::device::{self, blas, DeviceError};
use hylapack::interval::gpu::{self as igpu, DeviceInterval};
use hylapack::interval::round::Dir;
use hylapack::interval::{cpu as icpu, verify, IntervalOperand, Operand, Trans};
use hylapack::lapack;
use hylapack::testmat::Rng;
use std::time::Instant;

struct Options {
    sizes: Vec<usize>,
    csv: Option<String>,
}

/// The CPU directed-rounding GEMM (emulated) runs only up to this order; the CPU midpoint–radius
/// product, verified solver and LAPACK up to the next.
const CPU_ROUNDED_MAX: usize = 1024;
const CPU_SOLVE_MAX: usize = 4096;

fn parse(args: &[String]) -> Result<Options, String> {
    let mut o = Options {
        sizes: vec![1024, 2048, 4096, 8192, 16384],
        csv: None,
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--sizes" => {
                let v = it.next().ok_or("--sizes needs a list of orders")?;
                o.sizes = v
                    .split(',')
                    .map(|s| {
                        s.trim()
                            .parse::<usize>()
                            .map_err(|_| format!("bad size {s}"))
                    })
                    .collect::<Result<_, _>>()?;
            }
            "--csv" => o.csv = Some(it.next().ok_or("--csv needs a file")?.clone()),
            "--quick" => o.sizes = vec![256, 512],
            other => return Err(format!("unknown option {other}")),
        }
    }
    Ok(o)
}

/// `hylapack bench interval [--sizes 1024,2048,...] [--csv FILE] [--quick]`.
pub fn bench_interval(args: &[String]) -> i32 {
    match parse(args) {
        Ok(o) => run(&o),
        Err(e) => {
            eprintln!("hylapack bench interval: {e}");
            eprintln!("usage: hylapack bench interval [--sizes 1024,2048,4096,8192,16384] [--csv FILE] [--quick]");
            2
        }
    }
}

fn median(t: &[f64]) -> f64 {
    t[t.len() / 2]
}

fn tflops(n: usize, seconds: f64) -> f64 {
    2.0 * (n as f64).powi(3) / seconds / 1e12
}

fn run(o: &Options) -> i32 {
    let gpu = device::gpu();
    match &gpu {
        Ok(g) => println!("GPU: {} ({})", g.info.name, g.info.arch()),
        Err(e) => println!("GPU: none ({e}); GPU columns are empty"),
    }
    let mut products = Table::new(&[
        "n",
        "cuBLAS DGEMM",
        "rounded (kernel)",
        "rounded/cuBLAS",
        "same kernel nearest",
        "midrad thick",
        "midrad/cuBLAS",
        "midrad point×thick",
        "infsup (kernel)",
        "rounded host→host",
        "rounded CPU",
        "midrad CPU",
        "width midrad/infsup",
    ]);
    let mut solver = Table::new(&[
        "n",
        "verified GPU",
        "cuSOLVER LU",
        "GPU ratio",
        "verified CPU",
        "LAPACK LU",
        "INFO",
        "steps",
        "max rel width",
        "x* inside",
    ]);
    let mut failures = 0;
    for &n in &o.sizes {
        let mut rng = Rng::new(n as u64 * 7919);
        // Each row is printed as soon as it is measured, so a cut-off run still reports.
        let row = product_row(n, &mut rng, gpu.is_ok());
        println!("products: {}", row.join(" | "));
        products.row(row);
        let (row, ok) = solver_row(n, &mut rng, gpu.is_ok());
        println!("solver: {}", row.join(" | "));
        failures += (!ok) as i32;
        solver.row(row);
    }
    println!("\nProducts (TFLOP/s counting 2n^3; device-resident unless marked; width: median ratio of enclosure widths)");
    products.print();
    println!("\nVerified solve (host arrays in and out, transfers included; random integer A in [-100, 100], b = A x*)");
    solver.print();
    if let Some(path) = &o.csv {
        let p2 = format!("{path}.solver.csv");
        if let Err(e) = products.write_csv(path).and_then(|_| solver.write_csv(&p2)) {
            eprintln!("cannot write {path}: {e}");
        }
    }
    failures
}

fn uniform_matrix(len: usize, rng: &mut Rng) -> Vec<f64> {
    (0..len).map(|_| rng.range(-1.0, 1.0)).collect()
}

fn rate(n: usize, t: Result<f64, DeviceError>) -> (String, Option<f64>) {
    match t {
        Ok(s) => (
            format!("{:.2} ({})", tflops(n, s), time(s)),
            Some(tflops(n, s)),
        ),
        Err(e) => (format!("error: {e}"), None),
    }
}

fn product_row(n: usize, rng: &mut Rng, have_gpu: bool) -> Vec<String> {
    let len = n * n;
    let (a, b) = (uniform_matrix(len, rng), uniform_matrix(len, rng));
    // Thick intervals: radius 1e-8 relative to the midpoint.
    let widen = |x: &[f64]| -> (Vec<f64>, Vec<f64>) {
        x.iter()
            .map(|v| (v - v.abs() * 1e-8, v + v.abs() * 1e-8))
            .unzip()
    };
    let ((ai, asup), (bi, bsup)) = (widen(&a), widen(&b));
    let mut cells = vec![n.to_string()];
    let mut gpu_cells = vec!["-".to_string(); 8];
    let mut width = "-".to_string();
    if have_gpu {
        match gpu_products(n, &a, &b, (&ai, &asup), (&bi, &bsup)) {
            Ok(g) => {
                let (blas, blas_rate) = rate(n, Ok(g.cublas));
                let (rounded, r_rate) = rate(n, Ok(g.rounded));
                let (midrad, m_rate) = rate(n, Ok(g.midrad));
                let ratio = |x: Option<f64>| match (x, blas_rate) {
                    (Some(x), Some(b)) => format!("{:.0}%", 100.0 * x / b),
                    _ => "-".into(),
                };
                gpu_cells = vec![
                    blas,
                    rounded,
                    ratio(r_rate),
                    rate(n, Ok(g.nearest)).0,
                    midrad,
                    ratio(m_rate),
                    rate(n, Ok(g.midrad_point)).0,
                    rate(n, Ok(g.infsup)).0,
                ];
                width = format!("{:.2}", g.width_ratio);
            }
            Err(e) => gpu_cells[0] = format!("error: {e}"),
        }
    }
    cells.extend(gpu_cells);
    // The LAPACK interface on the GPU: host arrays, transfers included.
    let host = if have_gpu {
        let mut c = vec![0.0; len];
        let t = timings(2, || {
            let oa = Operand {
                data: &a,
                ld: n,
                trans: Trans::No,
            };
            let ob = Operand {
                data: &b,
                ld: n,
                trans: Trans::No,
            };
            if let Err(e) = igpu::gemm_rounded(Dir::Up, n, n, n, 1.0, oa, ob, 0.0, &mut c, n) {
                eprintln!("dgemm_rounded GPU: {e}");
            }
        });
        format!("{:.2} ({})", tflops(n, t[0]), time(t[0]))
    } else {
        "-".into()
    };
    cells.push(host);
    let op = |d| Operand {
        data: d,
        ld: n,
        trans: Trans::No,
    };
    cells.push(if n <= CPU_ROUNDED_MAX {
        let mut c = vec![0.0; len];
        let t = timings(1, || {
            icpu::gemm_rounded(Dir::Up, n, n, n, 1.0, op(&a), op(&b), 0.0, &mut c, n)
        });
        format!("{:.3} ({})", tflops(n, t[0]), time(t[0]))
    } else {
        "-".into()
    });
    let iv = |lo, hi| IntervalOperand {
        inf: op(lo),
        sup: op(hi),
    };
    cells.push(if n <= CPU_SOLVE_MAX {
        let (mut clo, mut chi) = (vec![0.0; len], vec![0.0; len]);
        let t = timings(1, || {
            icpu::igemm_midrad(
                n,
                n,
                n,
                iv(&ai, &asup),
                iv(&bi, &bsup),
                &mut clo,
                &mut chi,
                n,
            )
        });
        format!("{:.3} ({})", tflops(n, t[0]), time(t[0]))
    } else {
        "-".into()
    });
    cells.push(width);
    cells
}

struct GpuProducts {
    cublas: f64,
    rounded: f64,
    nearest: f64,
    midrad: f64,
    midrad_point: f64,
    infsup: f64,
    /// Median over entries of (midrad width) / (infsup width) on the thick intervals.
    width_ratio: f64,
}

fn gpu_products(
    n: usize,
    a: &[f64],
    b: &[f64],
    (ai, asup): (&[f64], &[f64]),
    (bi, bsup): (&[f64], &[f64]),
) -> Result<GpuProducts, DeviceError> {
    let gpu = device::gpu()?;
    let la = gpu.linalg()?;
    let s = la.stream.clone();
    let (da, db) = (s.clone_htod(a)?, s.clone_htod(b)?);
    let mut dc = s.alloc_zeros::<f64>(n * n)?;
    let ni = n as i32;
    let cfg = GemmConfig {
        transa: blas::trans(false),
        transb: blas::trans(false),
        m: ni,
        n: ni,
        k: ni,
        alpha: 1.0,
        lda: ni,
        ldb: ni,
        beta: 0.0,
        ldc: ni,
    };
    let reps = if n <= 4096 { 5 } else { 3 };
    let mut err = None;
    let mut timed = |f: &mut dyn FnMut() -> Result<(), DeviceError>| -> f64 {
        let _ = f(); // warm-up (compiles, allocates)
        let _ = s.synchronize();
        let t = timings(reps, || {
            if let Err(e) = f() {
                err.get_or_insert(e);
            }
            let _ = s.synchronize();
        });
        median(&t)
    };
    // SAFETY: the device arrays hold n × n entries.
    let cublas = timed(&mut || {
        unsafe { la.blas.gemm(cfg, &da, &db, &mut dc) }
            .map_err(|e| DeviceError::Driver(format!("{e:?}")))
    });
    let rounded = timed(&mut || {
        igpu::gemm_rounded_device(
            &s,
            Dir::Up,
            n,
            n,
            n,
            1.0,
            (&da, n, Trans::No),
            (&db, n, Trans::No),
            0.0,
            &mut dc,
            n,
        )
    });
    let nearest = timed(&mut || {
        igpu::gemm_nearest_device(
            &s,
            n,
            n,
            n,
            (&da, n, Trans::No),
            (&db, n, Trans::No),
            &mut dc,
            n,
        )
    });
    let up = |x: &[f64], y: &[f64]| -> Result<DeviceInterval, DeviceError> {
        Ok(DeviceInterval {
            inf: s.clone_htod(x)?,
            sup: s.clone_htod(y)?,
        })
    };
    let (dai, dbi) = (up(ai, asup)?, up(bi, bsup)?);
    let dpoint = DeviceInterval {
        inf: s.clone_htod(a)?,
        sup: s.clone_htod(a)?,
    };
    let mut dci = DeviceInterval::zeros(&s, n * n)?;
    let midrad = timed(&mut || {
        igpu::igemm_midrad_device(
            &la,
            n,
            n,
            n,
            (&dai, n, Trans::No),
            (&dbi, n, Trans::No),
            &mut dci,
            n,
        )
    });
    let mid_lo: Vec<f64> = s.clone_dtoh(&dci.inf)?;
    let mid_hi: Vec<f64> = s.clone_dtoh(&dci.sup)?;
    let midrad_point = timed(&mut || {
        igpu::igemm_midrad_device(
            &la,
            n,
            n,
            n,
            (&dpoint, n, Trans::No),
            (&dbi, n, Trans::No),
            &mut dci,
            n,
        )
    });
    let infsup = timed(&mut || {
        igpu::igemm_infsup_device(
            &s,
            n,
            n,
            n,
            (&dai, n, Trans::No),
            (&dbi, n, Trans::No),
            &mut dci,
            n,
        )
    });
    if let Some(e) = err {
        return Err(e);
    }
    let (is_lo, is_hi): (Vec<f64>, Vec<f64>) = (s.clone_dtoh(&dci.inf)?, s.clone_dtoh(&dci.sup)?);
    let mut ratios: Vec<f64> = (0..n * n)
        .step_by(97)
        .map(|k| (mid_hi[k] - mid_lo[k]) / (is_hi[k] - is_lo[k]))
        .filter(|r| r.is_finite())
        .collect();
    ratios.sort_by(f64::total_cmp);
    let width_ratio = ratios.get(ratios.len() / 2).copied().unwrap_or(f64::NAN);
    Ok(GpuProducts {
        cublas,
        rounded,
        nearest,
        midrad,
        midrad_point,
        infsup,
        width_ratio,
    })
}

/// The unverified LU solve with cuSOLVER, host to host: upload, getrf, getrs, download.
fn cusolver_solve(n: usize, a: &[f64], b: &[f64]) -> Result<(f64, Vec<f64>), DeviceError> {
    let gpu = device::gpu()?;
    let mut la = gpu.linalg()?;
    let s = la.stream.clone();
    let h = la.solver()?.cu();
    let t0 = Instant::now();
    let mut da: CudaSlice<f64> = s.clone_htod(a)?;
    let mut db: CudaSlice<f64> = s.clone_htod(b)?;
    let mut ipiv = s.alloc_zeros::<i32>(n)?;
    let mut info = s.alloc_zeros::<i32>(1)?;
    let ni = n as i32;
    let lwork = {
        let (pa, _g) = da.device_ptr_mut(&s);
        // SAFETY: live handle; A holds n × n entries.
        unsafe { blas::dgetrf_buffer_size(h, ni, pa as *mut f64, ni) }?
    };
    let mut work = s.alloc_zeros::<f64>(lwork.max(1) as usize)?;
    {
        let (pa, _g1) = da.device_ptr_mut(&s);
        let (pw, _g2) = work.device_ptr_mut(&s);
        let (pp, _g3) = ipiv.device_ptr_mut(&s);
        let (pi, _g4) = info.device_ptr_mut(&s);
        // SAFETY: workspace from the query; every array is on this stream.
        unsafe {
            blas::dgetrf(
                h,
                ni,
                pa as *mut f64,
                ni,
                pw as *mut f64,
                pp as *mut i32,
                pi as *mut i32,
            )
        }?;
        let (pb, _g5) = db.device_ptr_mut(&s);
        // SAFETY: factors from getrf; b holds n entries.
        unsafe {
            blas::dgetrs(
                h,
                ni,
                1,
                pa as *const f64,
                ni,
                pp as *const i32,
                pb as *mut f64,
                ni,
                pi as *mut i32,
            )
        }?;
    }
    let _ = ipiv.device_ptr(&s);
    let x = s.clone_dtoh(&db)?;
    Ok((t0.elapsed().as_secs_f64(), x))
}

fn solver_row(n: usize, rng: &mut Rng, have_gpu: bool) -> (Vec<String>, bool) {
    let a: Vec<f64> = (0..n * n)
        .map(|_| (rng.below(201) as i64 - 100) as f64)
        .collect();
    let xs: Vec<f64> = (0..n)
        .map(|_| (rng.below(2001) as i64 - 1000) as f64)
        .collect();
    // b = A·x* exactly: |b_i| ≤ 1e5·n < 2^53.
    let mut b = vec![0.0; n];
    for (l, x) in xs.iter().enumerate() {
        for i in 0..n {
            b[i] += a[i + l * n] * x;
        }
    }
    let mut cells = vec![n.to_string()];
    let check = |lo: &[f64], hi: &[f64]| -> (f64, bool) {
        let mut worst = 0.0f64;
        let mut inside = true;
        for i in 0..n {
            inside &= lo[i] <= xs[i] && xs[i] <= hi[i];
            worst = worst.max((hi[i] - lo[i]) / xs[i].abs().max(1.0));
        }
        (worst, inside)
    };
    let (mut lo, mut hi) = (vec![0.0; n], vec![0.0; n]);
    let mut summary = (
        "-".to_string(),
        "-".to_string(),
        "-".to_string(),
        "-".to_string(),
    );
    let mut ok = true;
    let mut gpu_time = None;
    if have_gpu {
        let t0 = Instant::now();
        let r = igpu::Engine::new(n, &a, n, &b, n)
            .and_then(|mut e| verify::solve(&mut e, n, 1, &b, n, &mut lo, &mut hi, n));
        let t = t0.elapsed().as_secs_f64();
        match r {
            Ok(out) => {
                let (w, inside) = check(&lo, &hi);
                ok &= out.info == 0 && inside;
                summary = (
                    out.info.to_string(),
                    format!("{}+{}", out.refine_steps, out.verify_steps),
                    format!("{w:.1e}"),
                    inside.to_string(),
                );
                gpu_time = Some(t);
                cells.push(time(t));
            }
            Err(e) => {
                ok = false;
                cells.push(format!("error: {e}"));
            }
        }
        match cusolver_solve(n, &a, &b) {
            Ok((t, _)) => {
                cells.push(time(t));
                cells.push(
                    gpu_time
                        .map(|g| format!("{:.1}x", g / t))
                        .unwrap_or("-".into()),
                );
            }
            Err(e) => cells.extend([format!("error: {e}"), "-".into()]),
        }
    } else {
        cells.extend(["-".to_string(), "-".into(), "-".into()]);
    }
    if n <= CPU_SOLVE_MAX {
        let t0 = Instant::now();
        let mut e = verify::CpuEngine::new(n, &a, n, &b, n);
        // The CPU engine fails only when host memory (or a thread) cannot be had.
        let out = verify::solve(&mut e, n, 1, &b, n, &mut lo, &mut hi, n)
            .unwrap_or_else(|e| panic!("CPU solve of order {n}: {e}"));
        cells.push(time(t0.elapsed().as_secs_f64()));
        let (w, inside) = check(&lo, &hi);
        ok &= out.info == 0 && inside;
        if !have_gpu {
            summary = (
                out.info.to_string(),
                format!("{}+{}", out.refine_steps, out.verify_steps),
                format!("{w:.1e}"),
                inside.to_string(),
            );
        }
        let (mut lu, mut x, mut ipiv) = (a.clone(), b.clone(), vec![0i32; n]);
        let t0 = Instant::now();
        lapack::dgetrf(n, &mut lu, n, &mut ipiv);
        lapack::dgetrs(n, 1, &lu, n, &ipiv, &mut x, n);
        cells.push(time(t0.elapsed().as_secs_f64()));
    } else {
        cells.extend(["-".to_string(), "-".into()]);
    }
    cells.extend([summary.0, summary.1, summary.2, summary.3]);
    (cells, ok)
}
