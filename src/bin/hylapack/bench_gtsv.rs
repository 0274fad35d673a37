//! `hylapack bench gtsv`: the SPIKE tridiagonal solver (GPU with host pointers, CPU threads)
//! against the system LAPACK's dgtsv and cuSPARSE's gtsv2 / gtsv2_nopivot, in one run.
//!
//! Times: the LAPACK interface (host arrays in, host answer out, every transfer included) for
//! hylapack and LAPACK; device-resident (data already on the GPU, the call plus a synchronize)
//! for hylapack's device-pointer entry and cuSPARSE. GB/s counts the memory floor's bytes (DL,
//! D, DU and B read once, X written once) over the time; "x floor" is the time over the floor's
//! time at the device-to-device copy bandwidth measured at the start of the run.

use crate::table::{time, Table};
use hylapack::config::{GtsvHostTransfer, GtsvTransfer};
use hylapack::dispatch::Backend;
use hylapack::gtsv::{self, matrices::Tridiag, Solver};
use hylapack::lapack::Lapack;
use hylapack::testmat::Rng;
use std::time::Instant;

struct Options {
    /// log2 of the orders.
    sizes: Vec<u32>,
    csv: Option<String>,
    /// Time the device-pointer path over GPU tunings instead (at the largest size).
    tune: bool,
    /// Only this library's host-pointer GPU path and LAPACK (for very large n).
    lapack_only: bool,
    /// Only the device-resident rows: ours and cuSPARSE's (no host pointers, no CPU solvers).
    device_only: bool,
    /// Time the host-pointer path under each of these transfers (random systems, NRHS = 1).
    transfers: Vec<GtsvHostTransfer>,
    /// Many small systems against cuSPARSE's batched solvers instead.
    batch: bool,
}

/// NRHS = 16 runs only up to this order (memory and time).
const NRHS16_MAX_LOG2: u32 = 22;
/// Orders up to this are timed as the median of 3 runs, larger ones once.
const MEDIAN_MAX_LOG2: u32 = 20;

fn parse(args: &[String]) -> Result<Options, String> {
    let mut o = Options {
        sizes: vec![16, 20, 23, 24],
        csv: None,
        tune: false,
        lapack_only: false,
        device_only: false,
        transfers: Vec::new(),
        batch: false,
    };
    let mut sized = false;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--sizes" => {
                sized = true;
                let v = it.next().ok_or("--sizes needs a list of log2(n)")?;
                o.sizes = v
                    .split(',')
                    .map(|s| match s.trim().parse::<u32>() {
                        Ok(k) if (1..=30).contains(&k) => Ok(k),
                        _ => Err(format!("bad size {s} (log2 of n, 1..=30)")),
                    })
                    .collect::<Result<_, _>>()?;
            }
            "--csv" => o.csv = Some(it.next().ok_or("--csv needs a file")?.clone()),
            "--quick" => o.sizes = vec![12, 16],
            "--tune" => o.tune = true,
            "--lapack-only" => o.lapack_only = true,
            "--device-only" => o.device_only = true,
            "--batch" => o.batch = true,
            "--host-transfer" => {
                let v = it.next().ok_or("--host-transfer needs a list")?;
                o.transfers = v
                    .split(',')
                    .map(|s| {
                        GtsvHostTransfer::parse(s.trim()).ok_or(format!(
                            "bad transfer {s} (register, staged, pageable, auto)"
                        ))
                    })
                    .collect::<Result<_, _>>()?;
            }
            other => return Err(format!("unknown option {other}")),
        }
    }
    if !sized && !o.transfers.is_empty() {
        // The range over which the choice per size is to be made (issue #27).
        o.sizes = vec![18, 20, 22, 23, 24, 25, 26];
    }
    Ok(o)
}

/// `hylapack bench gtsv [--sizes 16,20,24] [--csv FILE] [--quick]`.
pub fn bench_gtsv(args: &[String]) -> i32 {
    match parse(args) {
        Ok(o) => run(&o),
        Err(e) => {
            eprintln!("hylapack bench gtsv: {e}");
            eprintln!(
                "usage: hylapack bench gtsv [--sizes 16,20,23,24 (log2 n)] [--csv FILE] [--quick] [--tune] [--lapack-only] [--device-only] [--host-transfer register,staged,pageable] [--batch]"
            );
            2
        }
    }
}

/// One measured method: its time, its answer (to compute the residual) and a note.
struct Run {
    seconds: f64,
    x: Vec<f64>,
    note: String,
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// ‖A X − B‖_F / ‖B‖_F over all columns (leading dimension n), in double precision.
fn rel_residual(a: &Tridiag, x: &[f64], b: &[f64], nrhs: usize) -> f64 {
    let n = a.n();
    let (mut r2, mut b2) = (0.0f64, 0.0f64);
    for c in 0..nrhs {
        let ax = a.mul(&x[c * n..(c + 1) * n]);
        for i in 0..n {
            r2 += (ax[i] - b[c * n + i]).powi(2);
            b2 += b[c * n + i].powi(2);
        }
    }
    if b2 == 0.0 {
        r2.sqrt()
    } else {
        (r2 / b2).sqrt()
    }
}

/// hylapack's `gtsv` on `backend`, inputs copied fresh for every repetition (outside the timer).
/// GPU runs note the phases of the last repetition (upload, solve, download, refinement steps).
fn hylapack_run(
    a: &Tridiag,
    b: &[f64],
    nrhs: usize,
    reps: usize,
    backend: Backend,
    opts: &gtsv::Options,
) -> Run {
    hylapack_run_in(a, b, nrhs, reps, backend, opts, None)
}

/// [`hylapack_run`] on the GPU with the arrays in page-locked host memory, as a GPU program may
/// hold them (DL, D, DU and B one after another).
fn hylapack_locked_run(a: &Tridiag, b: &[f64], nrhs: usize, reps: usize) -> Result<Run, String> {
    let n = a.n();
    let gpu = hylapack::device::gpu().map_err(|e| e.to_string())?;
    let mut pinned = gpu
        .pinned::<f64>(3 * n + n * nrhs)
        .map_err(|e| e.to_string())?;
    let memory = pinned.as_mut_slice().map_err(|e| e.to_string())?;
    let defaults = gtsv::Options::default();
    Ok(hylapack_run_in(
        a,
        b,
        nrhs,
        reps,
        Backend::Gpu,
        &defaults,
        Some(memory),
    ))
}

/// [`hylapack_run`], the arrays copied into `locked` (3 n + n nrhs elements) where given.
fn hylapack_run_in(
    a: &Tridiag,
    b: &[f64],
    nrhs: usize,
    reps: usize,
    backend: Backend,
    opts: &gtsv::Options,
    mut locked: Option<&mut [f64]>,
) -> Run {
    let n = a.n();
    let mut times = Vec::with_capacity(reps);
    let mut x = Vec::new();
    let mut note = String::new();
    // The first GPU call at a new size maps its device memory afresh: it is timed apart (and
    // shown in the note), so that the timed runs are the steady state.
    let first = backend == Backend::Gpu;
    let mut first_time = None;
    for rep in 0..reps + first as usize {
        let (mut dl, mut d, mut du) = (a.dl.clone(), a.d.clone(), a.du.clone());
        x = b.to_vec();
        let (r, seconds) = match locked.as_deref_mut() {
            None => {
                let t0 = Instant::now();
                let r = gtsv::gtsv_with(opts, &mut dl, &mut d, &mut du, &mut x, n, nrhs, backend);
                (r, t0.elapsed().as_secs_f64())
            }
            Some(memory) => {
                let (ldl, rest) = memory.split_at_mut(n);
                let (ld, rest) = rest.split_at_mut(n);
                let (ldu, lx) = rest.split_at_mut(n);
                let (ldl, ldu, lx) = (&mut ldl[..n - 1], &mut ldu[..n - 1], &mut lx[..n * nrhs]);
                ldl.copy_from_slice(&dl);
                ld.copy_from_slice(&d);
                ldu.copy_from_slice(&du);
                lx.copy_from_slice(&x);
                let t0 = Instant::now();
                let r = gtsv::gtsv_with(opts, ldl, ld, ldu, lx, n, nrhs, backend);
                let seconds = t0.elapsed().as_secs_f64();
                x.copy_from_slice(lx);
                (r, seconds)
            }
        };
        if first && rep == 0 {
            first_time = Some(seconds);
        } else {
            times.push(seconds);
        }
        note = match (r.backend, r.solver) {
            (Backend::Gpu, Solver::Spike) if backend == Backend::Gpu => {
                let p = gtsv::gpu::last_phases();
                format!(
                    "up {:.1} + solve {:.1} + down {:.1} ms, {}{}{}",
                    p.upload * 1e3,
                    p.solve * 1e3,
                    p.download * 1e3,
                    steps_note(&p),
                    p.transfer.map(|t| format!(", {t}")).unwrap_or_default(),
                    if p.overlapped { ", overlapped" } else { "" }
                )
            }
            (got, Solver::Spike) if got == backend => String::new(),
            (got, solver) => format!(
                "ran {:?} on {}{}",
                solver,
                got.name(),
                r.note.map(|s| format!(": {s}")).unwrap_or_default()
            ),
        };
        if r.info != 0 {
            note = format!("INFO = {}; {note}", r.info);
        }
    }
    if let Some(t) = first_time {
        note = format!("{note}; first call {}", time(t));
    }
    Run {
        seconds: median(times),
        x,
        note,
    }
}

fn lapack_run(a: &Tridiag, b: &[f64], nrhs: usize, reps: usize) -> Run {
    let n = a.n();
    let mut times = Vec::with_capacity(reps);
    let mut x = Vec::new();
    let mut info = 0;
    for _ in 0..reps {
        let (mut dl, mut d, mut du) = (a.dl.clone(), a.d.clone(), a.du.clone());
        x = b.to_vec();
        let t0 = Instant::now();
        info = f64::gtsv(&mut dl, &mut d, &mut du, &mut x, n, nrhs);
        times.push(t0.elapsed().as_secs_f64());
    }
    Run {
        seconds: median(times),
        x,
        note: if info != 0 {
            format!("INFO = {info}")
        } else {
            String::new()
        },
    }
}

/// hylapack's device-pointer entry ([`gtsv::gtsv_device`]), device-resident like cuSPARSE:
/// the matrix and B are on the GPU before the timer starts; the time is the call (which
/// synchronizes). B is re-uploaded (untimed) before every repetition.
fn hylapack_device_run(
    a: &Tridiag,
    b: &[f64],
    nrhs: usize,
    reps: usize,
    opts: &gtsv::Options,
) -> Result<Run, String> {
    use cudarc::driver::{CudaStream, DevicePtr};
    use gtsv::gpu::{DevCols, DevMatrix};
    use std::sync::Arc;
    let n = a.n();
    let gpu = hylapack::device::gpu().map_err(|e| e.to_string())?;
    let pooled = gpu.stream().map_err(|e| e.to_string())?;
    let stream: Arc<CudaStream> = (*pooled).clone();
    let de = |e: cudarc::driver::DriverError| e.to_string();
    let one = |v: &[f64]| if v.is_empty() { vec![0.0] } else { v.to_vec() };
    let dl_d = stream.clone_htod(&one(&a.dl)).map_err(de)?;
    let d_d = stream.clone_htod(&a.d).map_err(de)?;
    let du_d = stream.clone_htod(&one(&a.du)).map_err(de)?;
    let mut b_d = stream.clone_htod(b).map_err(de)?;
    let m = DevMatrix {
        n,
        dl: dl_d.device_ptr(&stream).0,
        d: d_d.device_ptr(&stream).0,
        du: du_d.device_ptr(&stream).0,
    };
    let bc = DevCols {
        ptr: b_d.device_ptr(&stream).0,
        ld: n,
    };
    let mut times = Vec::with_capacity(reps);
    let mut note = String::new();
    for rep in 0..reps {
        if rep > 0 {
            stream.memcpy_htod(b, &mut b_d).map_err(de)?;
        }
        stream.synchronize().map_err(de)?;
        let t0 = Instant::now();
        let r = gtsv::gtsv_device::<f64>(opts, m, bc, nrhs, None).map_err(|e| e.to_string())?;
        times.push(t0.elapsed().as_secs_f64());
        note = match r.solver {
            Solver::Spike => steps_note(&gtsv::gpu::last_phases()),
            other => format!("ran {other:?}: {}", r.note.unwrap_or_default()),
        };
        if r.info != 0 {
            note = format!("INFO = {}; {note}", r.info);
        }
    }
    let x = stream.clone_dtoh(&b_d).map_err(de)?;
    Ok(Run {
        seconds: median(times),
        x,
        note,
    })
}

/// Device-to-device copy bandwidth (bytes read + written per second) of a 1 GiB copy.
fn copy_bandwidth() -> Result<f64, String> {
    let gpu = hylapack::device::gpu().map_err(|e| e.to_string())?;
    let stream = gpu.ctx.default_stream();
    let de = |e: cudarc::driver::DriverError| e.to_string();
    let len = 1usize << 26; // f64 elements: 512 MiB each way
    let src = stream.alloc_zeros::<f64>(len).map_err(de)?;
    let mut dst = stream.alloc_zeros::<f64>(len).map_err(de)?;
    let mut best = f64::INFINITY;
    for _ in 0..5 {
        stream.synchronize().map_err(de)?;
        let t0 = Instant::now();
        stream.memcpy_dtod(&src, &mut dst).map_err(de)?;
        stream.synchronize().map_err(de)?;
        best = best.min(t0.elapsed().as_secs_f64());
    }
    Ok(2.0 * 8.0 * len as f64 / best)
}

/// cuSPARSE `cusparseDgtsv2` (partial pivoting) or `cusparseDgtsv2_nopivot`, device-resident:
/// the matrix and B are on the GPU before the timer starts; the time is the call plus a stream
/// synchronize. B is re-uploaded (untimed) before every repetition.
fn cusparse_run(
    a: &Tridiag,
    b: &[f64],
    nrhs: usize,
    reps: usize,
    nopivot: bool,
) -> Result<Run, String> {
    use cudarc::driver::{CudaStream, DevicePtr, DevicePtrMut};
    use hylapack::device::blas;
    use std::sync::Arc;

    let n = a.n();
    if n < 3 || n > i32::MAX as usize || n * nrhs > i32::MAX as usize {
        return Err("size out of cuSPARSE's range".into());
    }
    let gpu = hylapack::device::gpu().map_err(|e| e.to_string())?;
    let pooled = gpu.stream().map_err(|e| e.to_string())?;
    let stream: Arc<CudaStream> = (*pooled).clone();
    let de = |e: cudarc::driver::DriverError| e.to_string();
    // cuSPARSE's layout: dl[0] = 0, dl[i] = A[i][i−1]; du[n−1] = 0, du[i] = A[i][i+1].
    let mut dlv = vec![0.0f64; n];
    dlv[1..].copy_from_slice(&a.dl);
    let mut duv = vec![0.0f64; n];
    duv[..n - 1].copy_from_slice(&a.du);
    let dl_d = stream.clone_htod(&dlv).map_err(de)?;
    let d_d = stream.clone_htod(&a.d).map_err(de)?;
    let du_d = stream.clone_htod(&duv).map_err(de)?;
    let mut b_d = stream.clone_htod(b).map_err(de)?;

    let handle = blas::SparseHandle::new(stream.clone()).map_err(|e| e.to_string())?;

    let (m_i, nrhs_i) = (n as i32, nrhs as i32);
    let size = {
        let (pdl, _s1) = dl_d.device_ptr(&stream);
        let (pd, _s2) = d_d.device_ptr(&stream);
        let (pdu, _s3) = du_d.device_ptr(&stream);
        let (pb, _s4) = b_d.device_ptr(&stream);
        let (pdl, pd, pdu, pb) = (
            pdl as *const f64,
            pd as *const f64,
            pdu as *const f64,
            pb as *const f64,
        );
        // SAFETY: device arrays of n (B: n x nrhs) doubles.
        unsafe { blas::dgtsv2_buffer_size(&handle, nopivot, m_i, nrhs_i, pdl, pd, pdu, pb, m_i) }
            .map_err(|e| format!("gtsv2 bufferSizeExt: {e}"))?
    };
    let mut buf = stream.alloc_zeros::<u8>(size.max(1)).map_err(de)?;

    let mut times = Vec::with_capacity(reps);
    for rep in 0..reps {
        if rep > 0 {
            stream.memcpy_htod(b, &mut b_d).map_err(de)?;
        }
        stream.synchronize().map_err(de)?;
        let (pdl, _s1) = dl_d.device_ptr(&stream);
        let (pd, _s2) = d_d.device_ptr(&stream);
        let (pdu, _s3) = du_d.device_ptr(&stream);
        let (pb, _s4) = b_d.device_ptr_mut(&stream);
        let (pbuf, _s5) = buf.device_ptr_mut(&stream);
        let t0 = Instant::now();
        // SAFETY: as above; buf holds the size cuSPARSE asked for.
        unsafe {
            blas::dgtsv2(
                &handle, nopivot, m_i, nrhs_i, pdl as _, pd as _, pdu as _, pb as _, m_i, pbuf as _,
            )
        }
        .map_err(|e| format!("gtsv2: {e}"))?;
        stream.synchronize().map_err(de)?;
        times.push(t0.elapsed().as_secs_f64());
    }
    let x = stream.clone_dtoh(&b_d).map_err(de)?;
    drop(handle);
    Ok(Run {
        seconds: median(times),
        x,
        note: "device-resident".into(),
    })
}

/// Device-pointer time over partition sizes, CTA sizes, bottom sizes, tail sizes and the
/// speculating check, random and diagonally dominant matrices, NRHS = 1.
fn tune(k: u32) -> i32 {
    let n = 1usize << k;
    let mut rng = Rng::new(20_120_001);
    let random = gtsv::matrices::random(n, &mut rng);
    let dominant = gtsv::matrices::diagonally_dominant(n, &mut rng);
    let b: Vec<f64> = (0..n).map(|_| rng.range(-1.0, 1.0)).collect();
    let mut table = Table::new(&[
        "n",
        "matrix",
        "m",
        "threads",
        "base_n",
        "tail_n",
        "speculate",
        "time",
        "rel.residual",
        "note",
    ]);
    for (family, a) in [("random", &random), ("diag-dominant", &dominant)] {
        for m in [8usize, 16, 32] {
            for threads in [32u32, 64, 128] {
                // Dynamic shared memory above 48 KB needs an opt-in the kernels do not make.
                if (5 * (m + 1) + 3) * threads as usize * 8 > 48 << 10 {
                    continue;
                }
                for (base_n, tail_n, speculate) in [32usize, 128]
                    .into_iter()
                    .flat_map(|b| [0usize, 4096].map(|t| (b, t)))
                    .flat_map(|(b, t)| [false, true].map(|p| (b, t, p)))
                {
                    let opts = gtsv::Options {
                        gpu: gtsv::gpu::GpuOptions {
                            m,
                            threads,
                            base_n,
                            tail_n,
                            speculate,
                            ..gtsv::gpu::GpuOptions::default()
                        },
                        ..gtsv::Options::default()
                    };
                    let mut row = vec![
                        format!("2^{k}"),
                        family.to_string(),
                        m.to_string(),
                        threads.to_string(),
                        base_n.to_string(),
                        tail_n.to_string(),
                        speculate.to_string(),
                    ];
                    match hylapack_device_run(a, &b, 1, 7, &opts) {
                        Ok(r) => row.extend([
                            time(r.seconds),
                            format!("{:.2e}", rel_residual(a, &r.x, &b, 1)),
                            r.note,
                        ]),
                        Err(e) => row.extend(["-".into(), "-".into(), e]),
                    }
                    table.row(row);
                }
            }
        }
    }
    table.print();
    0
}

/// The host-pointer path under each transfer of `o.transfers` beside LAPACK dgtsv, random
/// systems, NRHS = 1, medians of 3 runs after an untimed first call; rows as measured.
fn host_transfers(o: &Options) -> i32 {
    if let Err(e) = hylapack::device::gpu() {
        println!("no GPU ({e}): nothing to time");
        return 1;
    }
    println!(
        "hylapack GPU (host ptrs) under each host transfer; x LAPACK: LAPACK's time over the row's"
    );
    let mut table =
        Table::new(&["n", "method", "time", "rel.residual", "x LAPACK", "note"]).live(10);
    let mut rng = Rng::new(20_120_000);
    for &k in &o.sizes {
        let n = 1usize << k;
        let a = gtsv::matrices::random(n, &mut rng);
        let b: Vec<f64> = (0..n).map(|_| rng.range(-1.0, 1.0)).collect();
        let lapack = lapack_run(&a, &b, 1, 3);
        let mut add = |method: String, r: &Run| {
            table.row(vec![
                format!("2^{k}"),
                method,
                time(r.seconds),
                format!("{:.2e}", rel_residual(&a, &r.x, &b, 1)),
                format!("{:.1}", lapack.seconds / r.seconds),
                r.note.clone(),
            ])
        };
        add("LAPACK dgtsv".into(), &lapack);
        for &mode in &o.transfers {
            let mut opts = gtsv::Options::default();
            opts.gpu.transfer = GtsvTransfer {
                mode,
                ..opts.gpu.transfer
            };
            let r = hylapack_run(&a, &b, 1, 3, Backend::Gpu, &opts);
            add(format!("hylapack GPU ({})", mode.name()), &r);
        }
    }
    if let Some(path) = &o.csv {
        if let Err(e) = table.write_csv(path) {
            eprintln!("hylapack bench gtsv: cannot write {path}: {e}");
            return 1;
        }
    }
    0
}

fn run(o: &Options) -> i32 {
    if o.tune {
        return tune(*o.sizes.iter().max().unwrap_or(&23));
    }
    if o.batch {
        return crate::bench_gtsv_batch::run();
    }
    if !o.transfers.is_empty() {
        return host_transfers(o);
    }
    let gpu = hylapack::device::gpu();
    let gpu_ok = gpu.is_ok();
    if let Err(e) = &gpu {
        println!("no GPU ({e}): the GPU and cuSPARSE rows are skipped");
    }
    let cusparse_ok = gpu_ok && hylapack::device::libraries().cusparse;
    if gpu_ok && !cusparse_ok {
        println!("cuSPARSE not found: its rows are skipped");
    }
    let bandwidth = if gpu_ok { copy_bandwidth().ok() } else { None };
    if let Some(bw) = bandwidth {
        println!(
            "device-to-device copy: {:.0} GB/s (read + write): the memory floor's rate",
            bw / 1e9
        );
        // Compile or load the kernels now, outside every timer.
        let mut rng = Rng::new(1);
        let a = gtsv::matrices::diagonally_dominant(5000, &mut rng);
        let _ = hylapack_run(
            &a,
            &vec![1.0; 5000],
            1,
            1,
            Backend::Gpu,
            &gtsv::Options::default(),
        );
    }
    println!("hylapack GPU (host ptrs): the LAPACK interface, transfers included (page-locked: the arrays in page-locked host memory, as a GPU program may hold them); (device ptrs): data already on the GPU, as cuSPARSE");
    let mut table = Table::new(&[
        "n",
        "matrix",
        "nrhs",
        "method",
        "time",
        "rel.residual",
        "GB/s",
        "x floor",
        "note",
    ])
    .live(10);
    let cpu_spike = gtsv::Options {
        cpu_min_n: 0,
        ..gtsv::Options::default()
    };
    let mut rng = Rng::new(20_120_000);
    let started = Instant::now();
    for &k in &o.sizes {
        let n = 1usize << k;
        let reps = if k <= MEDIAN_MAX_LOG2 { 3 } else { 1 };
        for family in ["random", "diag-dominant"] {
            let a = if family == "random" {
                gtsv::matrices::random(n, &mut rng)
            } else {
                gtsv::matrices::diagonally_dominant(n, &mut rng)
            };
            for nrhs in [1usize, 16] {
                if nrhs > 1 && k > NRHS16_MAX_LOG2 {
                    continue;
                }
                let b: Vec<f64> = (0..n * nrhs).map(|_| rng.range(-1.0, 1.0)).collect();
                // The memory floor: DL, D, DU, B read once, X written once.
                let bytes = 8.0 * (3.0 * n as f64 + 2.0 * (n * nrhs) as f64);
                let mut add = |method: &str, r: Result<Run, String>| {
                    let cells = match r {
                        Ok(r) => vec![
                            time(r.seconds),
                            format!("{:.2e}", rel_residual(&a, &r.x, &b, nrhs)),
                            format!("{:.1}", bytes / r.seconds / 1e9),
                            bandwidth
                                .map(|bw| format!("{:.1}", r.seconds / (bytes / bw)))
                                .unwrap_or_else(|| "-".into()),
                            r.note,
                        ],
                        Err(e) => vec!["-".into(), "-".into(), "-".into(), "-".into(), e],
                    };
                    let mut row = vec![
                        format!("2^{k}"),
                        family.to_string(),
                        nrhs.to_string(),
                        method.to_string(),
                    ];
                    row.extend(cells);
                    table.row(row);
                };
                let defaults = gtsv::Options::default();
                if o.lapack_only {
                    if gpu_ok {
                        add(
                            "hylapack GPU (host ptrs)",
                            Ok(hylapack_run(&a, &b, nrhs, reps, Backend::Gpu, &defaults)),
                        );
                    }
                    add("LAPACK dgtsv", Ok(lapack_run(&a, &b, nrhs, reps)));
                    continue;
                }
                if gpu_ok && !o.device_only {
                    add(
                        "hylapack GPU (host ptrs)",
                        Ok(hylapack_run(&a, &b, nrhs, reps, Backend::Gpu, &defaults)),
                    );
                    add(
                        "hylapack GPU (host ptrs, page-locked)",
                        hylapack_locked_run(&a, &b, nrhs, reps),
                    );
                }
                if gpu_ok {
                    add(
                        "hylapack GPU (device ptrs)",
                        hylapack_device_run(&a, &b, nrhs, reps.max(5), &defaults),
                    );
                }
                if !o.device_only {
                    add(
                        "hylapack CPU (SPIKE threads)",
                        Ok(hylapack_run(&a, &b, nrhs, reps, Backend::Cpu, &cpu_spike)),
                    );
                    add("LAPACK dgtsv", Ok(lapack_run(&a, &b, nrhs, reps)));
                }
                if cusparse_ok {
                    add(
                        "cuSPARSE gtsv2",
                        cusparse_run(&a, &b, nrhs, reps.max(5), false),
                    );
                    add(
                        "cuSPARSE gtsv2_nopivot",
                        cusparse_run(&a, &b, nrhs, reps.max(5), true),
                    );
                }
                eprintln!(
                    "  done n = 2^{k} {family} nrhs {nrhs} ({:.0} s)",
                    started.elapsed().as_secs_f64()
                );
            }
        }
    }
    println!("\nsummary:");
    table.print();
    if let Some(path) = &o.csv {
        if let Err(e) = table.write_csv(path) {
            eprintln!("hylapack bench gtsv: cannot write {path}: {e}");
            return 1;
        }
    }
    0
}

/// How the last GPU solve got its answer: the one-pass window solve, or the recursion with so
/// many refinement steps.
fn steps_note(p: &gtsv::gpu::Phases) -> String {
    if p.window {
        "window".into()
    } else {
        format!("{} refine", p.refine_steps)
    }
}
