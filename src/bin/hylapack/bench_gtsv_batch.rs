//! `hylapack bench gtsv --batch`: many small systems of one size, hylapack's strided batch
//! against cuSPARSE's batched solvers and LAPACK dgtsv system by system, in one run.
//!
//! cuSPARSE's rows are device-resident (data on the GPU before the timer starts, each on its
//! own layout: `gtsv2StridedBatch` one system after another, `gtsvInterleavedBatch` element i
//! of every system together, transposed on the host outside the timer). hylapack's strided
//! batch takes host pointers, so its rows include the transfers: its GPU path, and its CPU
//! path (LAPACK per system on every host thread, what auto mode weighs the GPU against). Its
//! two GPU paths are also timed from device memory, like for like beside cuSPARSE: "stacked"
//! is the block-diagonal SPIKE solve of larger systems (one system, checked as a whole rather
//! than system by system), "warp per system" the small systems' kernel, with SPIKE and with
//! partial pivoting alone. The device entry row is `dgtsv_spike_strided_batch_device` as a
//! caller gets it (X into B in place, the INFOs read back), B refreshed outside the timer.

use crate::table::{time, Table};
use cudarc::cusparse::sys as sp;
use cudarc::driver::{CudaSlice, CudaStream, DevicePtr, DevicePtrMut};
use hylapack::dispatch::Backend;
use hylapack::gtsv::{self, matrices::Tridiag};
use hylapack::lapack::Lapack;
use hylapack::testmat::Rng;
use std::sync::Arc;
use std::time::Instant;

/// (order, systems) of the batched runs.
const SHAPES: [(usize, usize); 4] = [(256, 4096), (512, 4096), (1024, 4096), (4096, 4096)];
const REPS: usize = 5;

/// `count` systems of order `n` in LAPACK's strided layout (stride `n` for every array:
/// DL and DU hold `n − 1` entries and a spare), and their right-hand sides.
struct Batch {
    n: usize,
    count: usize,
    systems: Vec<Tridiag>,
    dl: Vec<f64>,
    d: Vec<f64>,
    du: Vec<f64>,
    b: Vec<f64>,
}

impl Batch {
    fn new(n: usize, count: usize, dominant: bool, rng: &mut Rng) -> Batch {
        let systems: Vec<Tridiag> = (0..count)
            .map(|_| {
                if dominant {
                    gtsv::matrices::diagonally_dominant(n, rng)
                } else {
                    gtsv::matrices::random(n, rng)
                }
            })
            .collect();
        let (mut dl, mut d, mut du) = (
            vec![0.0; n * count],
            vec![0.0; n * count],
            vec![0.0; n * count],
        );
        for (k, s) in systems.iter().enumerate() {
            dl[k * n..k * n + n - 1].copy_from_slice(&s.dl);
            d[k * n..(k + 1) * n].copy_from_slice(&s.d);
            du[k * n..k * n + n - 1].copy_from_slice(&s.du);
        }
        let b = (0..n * count).map(|_| rng.range(-1.0, 1.0)).collect();
        Batch {
            n,
            count,
            systems,
            dl,
            d,
            du,
            b,
        }
    }

    /// ‖A X − B‖_F / ‖B‖_F over all systems, and the worst system's own ratio.
    fn residuals(&self, x: &[f64]) -> (f64, f64) {
        let n = self.n;
        let (mut r2, mut b2, mut worst) = (0.0f64, 0.0f64, 0.0f64);
        for (k, s) in self.systems.iter().enumerate() {
            let ax = s.mul(&x[k * n..(k + 1) * n]);
            let b = &self.b[k * n..(k + 1) * n];
            let rk: f64 = ax.iter().zip(b).map(|(a, b)| (a - b).powi(2)).sum();
            let bk: f64 = b.iter().map(|v| v * v).sum();
            worst = worst.max((rk / bk.max(f64::MIN_POSITIVE)).sqrt());
            r2 += rk;
            b2 += bk;
        }
        ((r2 / b2.max(f64::MIN_POSITIVE)).sqrt(), worst)
    }

    /// cuSPARSE's layout of one system: DL(0) = 0 and DU(n − 1) = 0 (both outside A).
    fn cusparse_bands(&self) -> (Vec<f64>, Vec<f64>) {
        let n = self.n;
        let (mut dl, mut du) = (vec![0.0; n * self.count], vec![0.0; n * self.count]);
        for (k, s) in self.systems.iter().enumerate() {
            dl[k * n + 1..(k + 1) * n].copy_from_slice(&s.dl);
            du[k * n..k * n + n - 1].copy_from_slice(&s.du);
        }
        (dl, du)
    }
}

/// `v` (`count` runs of `n`) transposed: element `i` of run `k` goes to `i · count + k`. From
/// the strided layout to the interleaved one, and with `n`, `count` swapped back.
fn transpose(v: &[f64], n: usize, count: usize) -> Vec<f64> {
    let mut out = vec![0.0; v.len()];
    for k in 0..count {
        for i in 0..n {
            out[i * count + k] = v[k * n + i];
        }
    }
    out
}

struct Timed {
    seconds: f64,
    x: Vec<f64>,
    note: String,
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// hylapack's strided batch with host pointers (transfers included) on `backend` (the CPU
/// path: LAPACK per system on every host thread), inputs fresh per run.
fn hylapack_batch(bt: &Batch, backend: Backend) -> Timed {
    let (n, count) = (bt.n, bt.count);
    let opts = gtsv::Options::default();
    let (mut times, mut x, mut note) = (Vec::new(), Vec::new(), String::new());
    for rep in 0..=REPS {
        let (mut dl, mut d, mut du) = (bt.dl.clone(), bt.d.clone(), bt.du.clone());
        x = bt.b.clone();
        let mut info = vec![0; count];
        let t0 = Instant::now();
        let r = gtsv::gtsv_strided_batch(
            &opts, n, 1, &mut dl, &mut d, &mut du, n, &mut x, n, n, count, &mut info, backend,
        );
        // The first run compiles and maps memory: not timed.
        if rep > 0 {
            times.push(t0.elapsed().as_secs_f64());
        }
        note = format!("{:?} on {}", r.solver, r.backend.name());
        if let Some(why) = r.note {
            note = format!("{note}: {why}");
        }
    }
    Timed {
        seconds: median(times),
        x,
        note: if backend == Backend::Gpu {
            format!("host ptrs, transfers included; {note}")
        } else {
            format!("host, {} threads; {note}", hylapack::host::threads())
        },
    }
}

/// The stacked block-diagonal system from device memory through `gtsv_device`.
fn hylapack_stacked(stream: &Arc<CudaStream>, bt: &Batch) -> Result<Timed, String> {
    use gtsv::gpu::{DevCols, DevMatrix};
    let de = |e: cudarc::driver::DriverError| e.to_string();
    let big = bt.n * bt.count;
    // Zero couplings between neighbouring systems: DL's and DU's spare entries are zero.
    let dl_d = stream.clone_htod(&bt.dl[..big - 1]).map_err(de)?;
    let d_d = stream.clone_htod(&bt.d).map_err(de)?;
    let du_d = stream.clone_htod(&bt.du[..big - 1]).map_err(de)?;
    let mut b_d = stream.clone_htod(&bt.b).map_err(de)?;
    let a = DevMatrix {
        n: big,
        dl: dl_d.device_ptr(stream).0,
        d: d_d.device_ptr(stream).0,
        du: du_d.device_ptr(stream).0,
    };
    let b = DevCols {
        ptr: b_d.device_ptr(stream).0,
        ld: big,
    };
    let opts = gtsv::Options::default();
    let (mut times, mut note) = (Vec::new(), String::new());
    for rep in 0..=REPS {
        stream.memcpy_htod(&bt.b, &mut b_d).map_err(de)?;
        stream.synchronize().map_err(de)?;
        let t0 = Instant::now();
        let r = gtsv::gtsv_device::<f64>(&opts, a, b, 1, None).map_err(|e| e.to_string())?;
        if rep > 0 {
            times.push(t0.elapsed().as_secs_f64());
        }
        note = format!(
            "{:?}{}",
            r.solver,
            r.note.map(|s| format!(": {s}")).unwrap_or_default()
        );
    }
    Ok(Timed {
        seconds: median(times),
        x: stream.clone_dtoh(&b_d).map_err(de)?,
        note: format!("device-resident, one stacked system; {note}"),
    })
}

/// The warp-per-system kernel from device memory: the small-system path of the strided batch
/// without its transfers, for sizes where one system fits its shared memory; with `spike`
/// false, xGTSV's partial pivoting alone.
fn hylapack_small(stream: &Arc<CudaStream>, bt: &Batch, spike: bool) -> Result<Timed, String> {
    use gtsv::gpu::batch;
    let (n, count) = (bt.n, bt.count);
    if !batch::fits::<f64>(n, 1) {
        return Err("one system does not fit the kernel's shared memory".into());
    }
    let de = |e: cudarc::driver::DriverError| e.to_string();
    let dl_d = stream.clone_htod(&bt.dl).map_err(de)?;
    let d_d = stream.clone_htod(&bt.d).map_err(de)?;
    let du_d = stream.clone_htod(&bt.du).map_err(de)?;
    let b_d = stream.clone_htod(&bt.b).map_err(de)?;
    let x_d = stream.alloc_zeros::<f64>(n * count).map_err(de)?;
    let info_d = stream.alloc_zeros::<i32>(2 * count).map_err(de)?;
    let a = batch::DevBatch {
        n,
        nrhs: 1,
        count,
        dl: dl_d.device_ptr(stream).0,
        d: d_d.device_ptr(stream).0,
        du: du_d.device_ptr(stream).0,
        sa: n,
        b: b_d.device_ptr(stream).0,
        ldb: n,
        sb: n,
    };
    let (x, info) = (x_d.device_ptr(stream).0, info_d.device_ptr(stream).0);
    stream.synchronize().map_err(de)?;
    let mut times = Vec::new();
    for rep in 0..=REPS {
        let t0 = Instant::now();
        // SAFETY: the arrays above hold the batch's layout, X and the INFOs.
        unsafe { batch::solve_device::<f64>(&a, batch::XOut::packed(x, n, 1), info, spike) }
            .map_err(|e| e.to_string())?;
        if rep > 0 {
            times.push(t0.elapsed().as_secs_f64());
        }
    }
    let infos = stream.clone_dtoh(&info_d).map_err(de)?;
    let solved = batch::Solved::from_infos(&infos, count, spike).map_err(|e| e.to_string())?;
    let pivoted = solved.pivoted;
    let singular = solved.info.iter().filter(|&&i| i != 0).count();
    let how = if spike {
        format!("SPIKE, {pivoted} refused to partial pivoting")
    } else {
        "xGTSV's partial pivoting".into()
    };
    Ok(Timed {
        seconds: median(times),
        x: stream.clone_dtoh(&x_d).map_err(de)?,
        note: format!("device-resident, strided layout, {how}; {singular} singular"),
    })
}

/// The device-pointer batch entry (the Rust function `dgtsv_spike_strided_batch_device` wraps):
/// X into B in place, so B is refreshed from the host before each run, outside the timer.
fn hylapack_device_entry(stream: &Arc<CudaStream>, bt: &Batch) -> Result<Timed, String> {
    let (n, count) = (bt.n, bt.count);
    let mut inputs = Inputs::new(
        stream,
        [bt.dl.clone(), bt.d.clone(), bt.du.clone(), bt.b.clone()],
    )?;
    let p = |s: &CudaSlice<f64>| s.device_ptr(stream).0;
    let a = gtsv::gpu::batch::DevBatch {
        n,
        nrhs: 1,
        count,
        dl: p(&inputs.dev[0]),
        d: p(&inputs.dev[1]),
        du: p(&inputs.dev[2]),
        sa: n,
        b: p(&inputs.dev[3]),
        ldb: n,
        sb: n,
    };
    let mut info = vec![0; count];
    let mut times = Vec::new();
    let mut note = String::new();
    for rep in 0..=REPS {
        inputs.refresh(stream)?;
        let t0 = Instant::now();
        // SAFETY: the arrays above hold the batch's layout and nothing else touches them.
        let r = unsafe {
            gtsv::gtsv_strided_batch_device::<f64>(&Default::default(), &a, &mut info, None)
        }
        .map_err(|e| e.to_string())?;
        if rep > 0 {
            times.push(t0.elapsed().as_secs_f64());
        }
        note = format!(
            "device-resident, in place; {:?}, {} refused to partial pivoting{}",
            r.solver,
            r.pivoted,
            r.note.map(|w| format!("; {w}")).unwrap_or_default()
        );
    }
    let x = stream
        .clone_dtoh(&inputs.dev[3])
        .map_err(|e| e.to_string())?;
    // The same calls back to back, B not refreshed (each solves for the last one's X): the
    // call's cost without the refresh's host copies in between.
    let mut again = Vec::new();
    for _ in 0..REPS {
        let t0 = Instant::now();
        // SAFETY: as above.
        unsafe { gtsv::gtsv_strided_batch_device::<f64>(&Default::default(), &a, &mut info, None) }
            .map_err(|e| e.to_string())?;
        again.push(t0.elapsed().as_secs_f64());
    }
    Ok(Timed {
        seconds: median(times),
        x,
        note: format!("{note}; back to back {}", time(median(again))),
    })
}

/// A cuSPARSE handle on `stream`, destroyed on drop (the bench's own: the library's wrapper
/// does not expose the batched solvers).
struct Sparse {
    raw: sp::cusparseHandle_t,
}

impl Sparse {
    fn new(stream: &Arc<CudaStream>) -> Result<Sparse, String> {
        let mut raw: sp::cusparseHandle_t = std::ptr::null_mut();
        // SAFETY: raw receives a new handle.
        unsafe { sp::cusparseCreate(&mut raw) }
            .result()
            .map_err(|e| format!("cusparseCreate: {e:?}"))?;
        let h = Sparse { raw };
        // SAFETY: both live; the stream outlives the handle (the caller holds both).
        unsafe { sp::cusparseSetStream(h.raw, stream.cu_stream() as sp::cudaStream_t) }
            .result()
            .map_err(|e| format!("cusparseSetStream: {e:?}"))?;
        Ok(h)
    }
}

impl Drop for Sparse {
    fn drop(&mut self) {
        // SAFETY: created by cusparseCreate, destroyed once.
        unsafe { sp::cusparseDestroy(self.raw) };
    }
}

/// Device copies of a solver's inputs, refreshed from the host before every run (the
/// interleaved solver overwrites its bands too).
struct Inputs {
    host: [Vec<f64>; 4],
    dev: Vec<CudaSlice<f64>>,
}

impl Inputs {
    fn new(stream: &Arc<CudaStream>, host: [Vec<f64>; 4]) -> Result<Inputs, String> {
        let dev = host
            .iter()
            .map(|v| stream.clone_htod(v).map_err(|e| e.to_string()))
            .collect::<Result<_, _>>()?;
        Ok(Inputs { host, dev })
    }

    fn refresh(&mut self, stream: &Arc<CudaStream>) -> Result<(), String> {
        for (h, d) in self.host.iter().zip(self.dev.iter_mut()) {
            stream.memcpy_htod(h, d).map_err(|e| e.to_string())?;
        }
        stream.synchronize().map_err(|e| e.to_string())
    }
}

/// Which cuSPARSE batched solver.
#[derive(Clone, Copy)]
enum Peer {
    /// `cusparseDgtsv2StridedBatch`: no pivoting (cyclic reduction).
    Strided,
    /// `cusparseDgtsvInterleavedBatch` with this `algo`: 0 cuThomas (no pivoting), 1 LU with
    /// partial pivoting, 2 QR (cuSPARSE's documentation).
    Interleaved(i32),
}

/// One cuSPARSE batched solver, device-resident on its own layout; the time is the call and a
/// synchronize.
fn cusparse_batch(stream: &Arc<CudaStream>, bt: &Batch, peer: Peer) -> Result<Timed, String> {
    let (n, count) = (bt.n, bt.count);
    if n * count > i32::MAX as usize {
        return Err("size out of cuSPARSE's range".into());
    }
    let (m, c) = (n as i32, count as i32);
    let (dl, du) = bt.cusparse_bands();
    let host = match peer {
        Peer::Strided => [dl, bt.d.clone(), du, bt.b.clone()],
        Peer::Interleaved(_) => [
            transpose(&dl, n, count),
            transpose(&bt.d, n, count),
            transpose(&du, n, count),
            transpose(&bt.b, n, count),
        ],
    };
    let mut inputs = Inputs::new(stream, host)?;
    let h = Sparse::new(stream)?;
    let fail = |what: &str, e: sp::cusparseStatus_t| format!("{what}: {e:?}");
    let size = {
        let [pdl, pd, pdu, px] =
            [0, 1, 2, 3].map(|i| inputs.dev[i].device_ptr(stream).0 as *const f64);
        let mut size = 0usize;
        // SAFETY: device arrays of n · count doubles each, on the handle's stream.
        let st = unsafe {
            match peer {
                Peer::Strided => sp::cusparseDgtsv2StridedBatch_bufferSizeExt(
                    h.raw, m, pdl, pd, pdu, px, c, m, &mut size,
                ),
                Peer::Interleaved(algo) => sp::cusparseDgtsvInterleavedBatch_bufferSizeExt(
                    h.raw, algo, m, pdl, pd, pdu, px, c, &mut size,
                ),
            }
        };
        if st != sp::cusparseStatus_t::CUSPARSE_STATUS_SUCCESS {
            return Err(fail("bufferSizeExt", st));
        }
        size
    };
    // cudaMalloc's alignment (256 bytes) meets the 128 bytes cuSPARSE asks of the buffer.
    let mut buf = stream
        .alloc_zeros::<u8>(size.max(1))
        .map_err(|e| e.to_string())?;
    let mut times = Vec::new();
    for rep in 0..=REPS {
        inputs.refresh(stream)?;
        let (pbuf, _sb) = buf.device_ptr_mut(stream);
        let ptrs: Vec<*mut f64> = inputs
            .dev
            .iter_mut()
            .map(|d| d.device_ptr_mut(stream).0 as *mut f64)
            .collect();
        let t0 = Instant::now();
        // SAFETY: as above; buf holds the size cuSPARSE asked for.
        let st = unsafe {
            match peer {
                Peer::Strided => sp::cusparseDgtsv2StridedBatch(
                    h.raw, m, ptrs[0], ptrs[1], ptrs[2], ptrs[3], c, m, pbuf as _,
                ),
                Peer::Interleaved(algo) => sp::cusparseDgtsvInterleavedBatch(
                    h.raw, algo, m, ptrs[0], ptrs[1], ptrs[2], ptrs[3], c, pbuf as _,
                ),
            }
        };
        if st != sp::cusparseStatus_t::CUSPARSE_STATUS_SUCCESS {
            return Err(fail("solve", st));
        }
        stream.synchronize().map_err(|e| e.to_string())?;
        if rep > 0 {
            times.push(t0.elapsed().as_secs_f64());
        }
    }
    let x = stream
        .clone_dtoh(&inputs.dev[3])
        .map_err(|e| e.to_string())?;
    let (x, note) = match peer {
        Peer::Strided => (x, "device-resident, strided layout, no pivoting"),
        Peer::Interleaved(_) => (
            transpose(&x, count, n),
            "device-resident, interleaved layout (transposed on the host, untimed)",
        ),
    };
    drop(h);
    Ok(Timed {
        seconds: median(times),
        x,
        note: note.into(),
    })
}

/// LAPACK dgtsv on each system in turn (one thread).
fn lapack_batch(bt: &Batch) -> Timed {
    let n = bt.n;
    let mut times = Vec::new();
    let mut x = Vec::new();
    for _ in 0..3 {
        let (mut dl, mut d, mut du) = (bt.dl.clone(), bt.d.clone(), bt.du.clone());
        x = bt.b.clone();
        let t0 = Instant::now();
        for k in 0..bt.count {
            let r = k * n..(k + 1) * n;
            let _ = f64::gtsv(
                &mut dl[r.start..r.end - 1],
                &mut d[r.clone()],
                &mut du[r.start..r.end - 1],
                &mut x[r],
                n,
                1,
            );
        }
        times.push(t0.elapsed().as_secs_f64());
    }
    Timed {
        seconds: median(times),
        x,
        note: "host, one system after another, one thread".into(),
    }
}

/// `hylapack bench gtsv --batch`: the table, rows printed as they are measured.
pub fn run() -> i32 {
    let gpu = match hylapack::device::gpu() {
        Ok(g) => g,
        Err(e) => {
            println!("no GPU ({e}): the batched comparison needs one");
            return 1;
        }
    };
    let cusparse = hylapack::device::libraries().cusparse;
    if !cusparse {
        println!("cuSPARSE not found: its rows are skipped");
    }
    let pooled = match gpu.stream() {
        Ok(p) => p,
        Err(e) => {
            println!("no stream: {e}");
            return 1;
        }
    };
    let stream: Arc<CudaStream> = (*pooled).clone();
    println!("NRHS = 1; times are medians of {REPS} runs after an untimed one");
    let mut table = Table::new(&[
        "n",
        "systems",
        "matrix",
        "method",
        "time",
        "rel.residual",
        "worst system",
        "note",
    ])
    .live(12);
    let mut rng = Rng::new(20_120_027);
    for (n, count) in SHAPES {
        for (family, dominant) in [("random", false), ("diag-dominant", true)] {
            let bt = Batch::new(n, count, dominant, &mut rng);
            let mut add = |method: &str, r: Result<Timed, String>| {
                let mut row = vec![
                    n.to_string(),
                    count.to_string(),
                    family.to_string(),
                    method.to_string(),
                ];
                match r {
                    Ok(t) => {
                        let (rel, worst) = bt.residuals(&t.x);
                        row.extend([
                            time(t.seconds),
                            format!("{rel:.2e}"),
                            format!("{worst:.2e}"),
                            t.note,
                        ]);
                    }
                    Err(e) => row.extend(["-".into(), "-".into(), "-".into(), e]),
                }
                table.row(row);
            };
            add(
                "hylapack strided batch",
                Ok(hylapack_batch(&bt, Backend::Gpu)),
            );
            add(
                "hylapack strided batch, CPU path",
                Ok(hylapack_batch(&bt, Backend::Cpu)),
            );
            add(
                "hylapack stacked (device ptrs)",
                hylapack_stacked(&stream, &bt),
            );
            add(
                "hylapack device entry (device ptrs)",
                hylapack_device_entry(&stream, &bt),
            );
            add(
                "hylapack warp per system (device ptrs)",
                hylapack_small(&stream, &bt, true),
            );
            add(
                "hylapack warp, pivoting alone (device ptrs)",
                hylapack_small(&stream, &bt, false),
            );
            if cusparse {
                add(
                    "cuSPARSE gtsv2StridedBatch",
                    cusparse_batch(&stream, &bt, Peer::Strided),
                );
                add(
                    "cuSPARSE gtsvInterleavedBatch LU",
                    cusparse_batch(&stream, &bt, Peer::Interleaved(1)),
                );
            }
            add("LAPACK dgtsv per system", Ok(lapack_batch(&bt)));
        }
    }
    0
}
