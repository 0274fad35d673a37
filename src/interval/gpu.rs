//! The GPU path of the interval family: the directed-rounding and infimum–supremum kernels of
//! `kernels/interval.cu`, the midpoint–radius product on cuBLAS DGEMM, and the verified
//! solver's engine (cuSOLVER LU, cuBLAS, and the residual/enclosure kernels).
//!
//! Every function works on device copies and writes the caller's outputs only after the whole
//! computation succeeded; any error leaves them untouched and the caller reruns on the CPU.
//!
//! The a-priori bounds on cuBLAS products assume IEEE double arithmetic rounded to nearest in
//! every operation (any order, fused or not), which cuBLAS DGEMM provides; its opt-in
//! emulation of double precision by lower-precision units does not, so with
//! `CUBLAS_EMULATE_DOUBLE_PRECISION` set the cuBLAS-based paths refuse to run.

use super::cpu::midrad_constants;
use super::round::{self, Dir};
use super::verify;
use super::{IntervalOperand, Operand, Trans};
use crate::device::{self, blas, kernels, linalg::PooledLinalg, DeviceError, Gpu};
use cudarc::cublas::sys::cublasOperation_t;
use cudarc::cublas::{Gemm, GemmConfig};
use cudarc::driver::{
    CudaFunction, CudaSlice, CudaStream, DevicePtr, DevicePtrMut, LaunchConfig, PushKernelArg,
};
use std::sync::Arc;

fn function(gpu: &Gpu, name: &str) -> Result<CudaFunction, DeviceError> {
    gpu.function(&kernels::INTERVAL, name)
}

/// `len` zeros in host memory, or an error that sends the call to the CPU path (which then
/// reports [`super::NoMemory`] if it cannot allocate either): never an abort.
fn host_buf(len: usize) -> Result<Vec<f64>, DeviceError> {
    super::alloc(len, 0.0).map_err(|e| DeviceError::HostMemory { bytes: e.bytes })
}

/// A device array's contents in a new host vector (a fallible `clone_dtoh`).
fn download_all(stream: &Arc<CudaStream>, x: &CudaSlice<f64>) -> Result<Vec<f64>, DeviceError> {
    let mut host = host_buf(x.len())?;
    stream.memcpy_dtoh(x, &mut host[..])?;
    stream.synchronize()?;
    Ok(host)
}

/// `rows × cols` entries of a column-major host array (leading dimension `ld`) on the device,
/// packed to leading dimension `rows`.
fn upload(
    stream: &Arc<CudaStream>,
    x: &[f64],
    rows: usize,
    cols: usize,
    ld: usize,
) -> Result<CudaSlice<f64>, DeviceError> {
    if rows * cols == 0 {
        return Ok(stream.alloc_zeros::<f64>(1)?);
    }
    if ld == rows {
        return Ok(stream.clone_htod(&x[..rows * cols])?);
    }
    let mut packed = host_buf(rows * cols)?;
    for j in 0..cols {
        packed[j * rows..(j + 1) * rows].copy_from_slice(&x[j * ld..j * ld + rows]);
    }
    Ok(stream.clone_htod(&packed)?)
}

/// Copies a packed `rows × cols` device array into host columns of leading dimension `ld`.
fn unpack(packed: &[f64], rows: usize, cols: usize, out: &mut [f64], ld: usize) {
    for j in 0..cols {
        out[j * ld..j * ld + rows].copy_from_slice(&packed[j * rows..(j + 1) * rows]);
    }
}

/// One thread per row, columns strided over the grid's y dimension.
fn rows_cols(rows: usize, cols: usize) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (
            rows.div_ceil(256).max(1) as u32,
            cols.clamp(1, 65_535) as u32,
            1,
        ),
        block_dim: (256, 1, 1),
        shared_mem_bytes: 0,
    }
}

/// A grid-stride launch for `len` elementwise items.
fn flat(len: usize) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (len.div_ceil(256).clamp(1, 65_535 * 4) as u32, 1, 1),
        block_dim: (256, 1, 1),
        shared_mem_bytes: 0,
    }
}

fn blas_err(e: cudarc::cublas::result::CublasError) -> DeviceError {
    e.into()
}

fn check_emulation() -> Result<(), DeviceError> {
    match std::env::var("CUBLAS_EMULATE_DOUBLE_PRECISION").as_deref() {
        Ok(v) if !v.is_empty() && v != "0" => Err(DeviceError::Driver(
            "CUBLAS_EMULATE_DOUBLE_PRECISION is set: cuBLAS DGEMM rounding cannot be bounded"
                .into(),
        )),
        _ => Ok(()),
    }
}

fn op(t: Trans) -> cublasOperation_t {
    blas::trans(matches!(t, Trans::Yes))
}

fn dims_fit(dims: &[usize]) -> Result<(), DeviceError> {
    if dims.iter().any(|&d| d > i32::MAX as usize) {
        return Err(DeviceError::Driver(
            "dimension exceeds the 32-bit GPU interfaces".into(),
        ));
    }
    Ok(())
}

/// GPU `dgemm_rounded` (see [`super::gemm_rounded`]).
#[allow(clippy::too_many_arguments)]
pub fn gemm_rounded(
    dir: Dir,
    m: usize,
    n: usize,
    k: usize,
    alpha: f64,
    a: Operand,
    b: Operand,
    beta: f64,
    c: &mut [f64],
    ldc: usize,
) -> Result<(), DeviceError> {
    dims_fit(&[m, n, k])?;
    let gpu = device::gpu()?;
    let (ar, ac) = a.stored_shape(m, k);
    let (br, bc) = b.stored_shape(k, n);
    let _memory = gpu.budget.reserve(8 * (ar * ac + br * bc + m * n) as u64)?;
    let stream = gpu.stream()?;
    let da = upload(&stream, a.data, ar, ac, a.ld)?;
    let db = upload(&stream, b.data, br, bc, b.ld)?;
    let mut dc = if beta != 0.0 {
        upload(&stream, c, m, n, ldc)?
    } else {
        stream.alloc_zeros::<f64>((m * n).max(1))?
    };
    let ops = [(&da, ar, a.trans), (&db, br, b.trans)];
    gemm_rounded_device(
        &stream, dir, m, n, k, alpha, ops[0], ops[1], beta, &mut dc, m,
    )?;
    let result = download_all(&stream, &dc)?;
    unpack(&result, m, n, c, ldc);
    Ok(())
}

/// A device operand: the array, its leading dimension and its use.
pub type DeviceOperand<'a> = (&'a CudaSlice<f64>, usize, Trans);

/// `C := alpha·op(A)·op(B) + beta·C` rounded `dir`, on device arrays (queued on `stream`).
#[allow(clippy::too_many_arguments)]
pub fn gemm_rounded_device(
    stream: &Arc<CudaStream>,
    dir: Dir,
    m: usize,
    n: usize,
    k: usize,
    alpha: f64,
    a: DeviceOperand,
    b: DeviceOperand,
    beta: f64,
    c: &mut CudaSlice<f64>,
    ldc: usize,
) -> Result<(), DeviceError> {
    // alpha·x decreases in x when alpha < 0: accumulate the other way.
    let acc_up = (dir == Dir::Up) != (alpha < 0.0);
    let name = format!(
        "gemm_rounded_{}{}",
        if acc_up { 'u' } else { 'd' },
        if dir == Dir::Up { 'u' } else { 'd' }
    );
    launch_gemm(stream, &name, m, n, k, alpha, a, b, beta, c, ldc)
}

/// The same kernel with every operation rounded to nearest: no bound, only a yardstick for
/// what directed rounding costs (`hylapack bench interval`).
#[allow(clippy::too_many_arguments)]
pub fn gemm_nearest_device(
    stream: &Arc<CudaStream>,
    m: usize,
    n: usize,
    k: usize,
    a: DeviceOperand,
    b: DeviceOperand,
    c: &mut CudaSlice<f64>,
    ldc: usize,
) -> Result<(), DeviceError> {
    launch_gemm(stream, "gemm_nearest", m, n, k, 1.0, a, b, 0.0, c, ldc)
}

#[allow(clippy::too_many_arguments)]
fn launch_gemm(
    stream: &Arc<CudaStream>,
    name: &str,
    m: usize,
    n: usize,
    k: usize,
    alpha: f64,
    a: DeviceOperand,
    b: DeviceOperand,
    beta: f64,
    c: &mut CudaSlice<f64>,
    ldc: usize,
) -> Result<(), DeviceError> {
    dims_fit(&[m, n, k])?;
    if n.div_ceil(128) > 65_535 {
        return Err(DeviceError::Driver("n too large for one grid".into()));
    }
    let f = function(device::gpu()?, name)?;
    let (mi, ni, ki) = (m as i32, n as i32, k as i32);
    let (lda, ldb, ldc) = (a.1.max(1) as i64, b.1.max(1) as i64, ldc.max(1) as i64);
    let (ta, tb) = ((a.2 == Trans::Yes) as i32, (b.2 == Trans::Yes) as i32);
    let cfg = LaunchConfig {
        grid_dim: (m.div_ceil(128) as u32, n.div_ceil(128) as u32, 1),
        block_dim: (256, 1, 1),
        shared_mem_bytes: 0,
    };
    let mut launch = stream.launch_builder(&f);
    launch
        .arg(&mi)
        .arg(&ni)
        .arg(&ki)
        .arg(&alpha)
        .arg(a.0)
        .arg(&lda)
        .arg(&ta);
    launch
        .arg(b.0)
        .arg(&ldb)
        .arg(&tb)
        .arg(&beta)
        .arg(c)
        .arg(&ldc);
    // SAFETY: the arguments match the kernel's signature; the arrays hold the operands their
    // leading dimensions describe and C's m × n entries.
    unsafe { launch.launch(cfg) }?;
    Ok(())
}

/// GPU infimum–supremum product (finite bounds).
#[allow(clippy::too_many_arguments)]
pub fn igemm_infsup(
    m: usize,
    n: usize,
    k: usize,
    a: IntervalOperand,
    b: IntervalOperand,
    c_inf: &mut [f64],
    c_sup: &mut [f64],
    ldc: usize,
) -> Result<(), DeviceError> {
    dims_fit(&[m, n, k])?;
    let gpu = device::gpu()?;
    let (ar, ac) = a.inf.stored_shape(m, k);
    let (br, bc) = b.inf.stored_shape(k, n);
    let _memory = gpu
        .budget
        .reserve(16 * (ar * ac + br * bc + m * n) as u64)?;
    let stream = gpu.stream()?;
    let da = DeviceInterval::upload(&stream, &a, ar, ac)?;
    let db = DeviceInterval::upload(&stream, &b, br, bc)?;
    let mut dc = DeviceInterval::zeros(&stream, m * n)?;
    igemm_infsup_device(
        &stream,
        m,
        n,
        k,
        (&da, ar, a.inf.trans),
        (&db, br, b.inf.trans),
        &mut dc,
        m,
    )?;
    dc.download(&stream, m, n, c_inf, c_sup, ldc)
}

/// An interval matrix on the device: its two bounds, packed alike.
pub struct DeviceInterval {
    pub inf: CudaSlice<f64>,
    pub sup: CudaSlice<f64>,
}

impl DeviceInterval {
    pub fn upload(
        stream: &Arc<CudaStream>,
        x: &IntervalOperand,
        rows: usize,
        cols: usize,
    ) -> Result<Self, DeviceError> {
        Ok(DeviceInterval {
            inf: upload(stream, x.inf.data, rows, cols, x.inf.ld)?,
            sup: upload(stream, x.sup.data, rows, cols, x.sup.ld)?,
        })
    }

    pub fn zeros(stream: &Arc<CudaStream>, len: usize) -> Result<Self, DeviceError> {
        Ok(DeviceInterval {
            inf: stream.alloc_zeros::<f64>(len.max(1))?,
            sup: stream.alloc_zeros::<f64>(len.max(1))?,
        })
    }

    /// Copies the packed m × n bounds into host arrays of leading dimension `ld`.
    fn download(
        &self,
        stream: &Arc<CudaStream>,
        m: usize,
        n: usize,
        inf: &mut [f64],
        sup: &mut [f64],
        ld: usize,
    ) -> Result<(), DeviceError> {
        let (lo, hi) = (
            download_all(stream, &self.inf)?,
            download_all(stream, &self.sup)?,
        );
        unpack(&lo, m, n, inf, ld);
        unpack(&hi, m, n, sup, ld);
        Ok(())
    }
}

/// A device interval operand: bounds, leading dimension, use.
pub type DeviceIntervalOperand<'a> = (&'a DeviceInterval, usize, Trans);

/// `[C] := [A]·[B]` by the infimum–supremum kernel on device arrays (finite bounds).
#[allow(clippy::too_many_arguments)]
pub fn igemm_infsup_device(
    stream: &Arc<CudaStream>,
    m: usize,
    n: usize,
    k: usize,
    a: DeviceIntervalOperand,
    b: DeviceIntervalOperand,
    c: &mut DeviceInterval,
    ldc: usize,
) -> Result<(), DeviceError> {
    dims_fit(&[m, n, k])?;
    if n.div_ceil(64) > 65_535 {
        return Err(DeviceError::Driver("n too large for one grid".into()));
    }
    let f = function(device::gpu()?, "igemm_infsup")?;
    let (mi, ni, ki) = (m as i32, n as i32, k as i32);
    let (lda, ldb, ldc) = (a.1.max(1) as i64, b.1.max(1) as i64, ldc.max(1) as i64);
    let (ta, tb) = ((a.2 == Trans::Yes) as i32, (b.2 == Trans::Yes) as i32);
    let cfg = LaunchConfig {
        grid_dim: (m.div_ceil(64) as u32, n.div_ceil(64) as u32, 1),
        block_dim: (256, 1, 1),
        shared_mem_bytes: 0,
    };
    let mut launch = stream.launch_builder(&f);
    launch
        .arg(&mi)
        .arg(&ni)
        .arg(&ki)
        .arg(&a.0.inf)
        .arg(&a.0.sup)
        .arg(&lda)
        .arg(&ta);
    launch
        .arg(&b.0.inf)
        .arg(&b.0.sup)
        .arg(&ldb)
        .arg(&tb)
        .arg(&mut c.inf)
        .arg(&mut c.sup)
        .arg(&ldc);
    // SAFETY: arguments match the kernel; arrays hold the operands and m × n outputs.
    unsafe { launch.launch(cfg) }?;
    Ok(())
}

/// `c = op(a)·op(b)` (+ `c` if `accumulate`) by cuBLAS DGEMM on packed operands.
#[allow(clippy::too_many_arguments)]
fn dgemm(
    la: &PooledLinalg,
    ta: Trans,
    tb: Trans,
    m: usize,
    n: usize,
    k: usize,
    a: &CudaSlice<f64>,
    lda: usize,
    b: &CudaSlice<f64>,
    ldb: usize,
    accumulate: bool,
    c: &mut CudaSlice<f64>,
) -> Result<(), DeviceError> {
    let cfg = GemmConfig {
        transa: op(ta),
        transb: op(tb),
        m: m as i32,
        n: n as i32,
        k: k as i32,
        alpha: 1.0,
        lda: lda.max(1) as i32,
        ldb: ldb.max(1) as i32,
        beta: if accumulate { 1.0 } else { 0.0 },
        ldc: m.max(1) as i32,
    };
    // SAFETY: a, b and c hold the packed operands the configuration describes.
    unsafe { la.blas.gemm(cfg, a, b, c) }.map_err(blas_err)
}

/// The three packed arrays `midrad_split` writes for one operand.
struct Split {
    mid: CudaSlice<f64>,
    abs: CudaSlice<f64>,
    rad: CudaSlice<f64>,
}

fn split(
    stream: &Arc<CudaStream>,
    f: &CudaFunction,
    x: &DeviceInterval,
    rows: usize,
    cols: usize,
    ld: usize,
    flag: &mut cudarc::driver::CudaViewMut<i32>,
) -> Result<Split, DeviceError> {
    let len = (rows * cols).max(1);
    // SAFETY: every element is written by the kernel below before any read.
    let mut s = unsafe {
        Split {
            mid: stream.alloc::<f64>(len)?,
            abs: stream.alloc::<f64>(len)?,
            rad: stream.alloc::<f64>(len)?,
        }
    };
    if rows * cols == 0 {
        return Ok(s);
    }
    let (r, c, ld) = (rows as i32, cols as i32, ld as i64);
    let mut launch = stream.launch_builder(f);
    launch.arg(&r).arg(&c).arg(&x.inf).arg(&x.sup).arg(&ld);
    launch
        .arg(&mut s.mid)
        .arg(&mut s.abs)
        .arg(&mut s.rad)
        .arg(flag);
    // SAFETY: arguments match midrad_split; the bounds hold rows × cols entries at ld.
    unsafe { launch.launch(rows_cols(rows, cols)) }?;
    Ok(s)
}

/// `out = RU(x + RU(g·y))` elementwise on the device.
fn add_scaled_up(
    stream: &Arc<CudaStream>,
    f: &CudaFunction,
    len: usize,
    x: &CudaSlice<f64>,
    g: f64,
    y: &CudaSlice<f64>,
    out: &mut CudaSlice<f64>,
) -> Result<(), DeviceError> {
    let l = len as i64;
    let mut launch = stream.launch_builder(f);
    launch.arg(&l).arg(x).arg(&g).arg(y).arg(out);
    // SAFETY: arguments match add_scaled_up; all arrays hold len entries.
    unsafe { launch.launch(flat(len)) }?;
    Ok(())
}

/// GPU midpoint–radius product on cuBLAS (finite bounds); mirrors [`super::cpu::igemm_midrad`].
#[allow(clippy::too_many_arguments)]
pub fn igemm_midrad(
    m: usize,
    n: usize,
    k: usize,
    a: IntervalOperand,
    b: IntervalOperand,
    c_inf: &mut [f64],
    c_sup: &mut [f64],
    ldc: usize,
) -> Result<(), DeviceError> {
    check_emulation()?;
    dims_fit(&[m, n, k])?;
    let gpu = device::gpu()?;
    let (ar, ac) = a.inf.stored_shape(m, k);
    let (br, bc) = b.inf.stored_shape(k, n);
    // Peak: each operand's bounds and three split arrays, one more for B, and four m × n.
    let _memory = gpu
        .budget
        .reserve(8 * (5 * ar * ac + 6 * br * bc + 4 * m * n) as u64)?;
    let la = gpu.linalg()?;
    let da = DeviceInterval::upload(&la.stream, &a, ar, ac)?;
    let db = DeviceInterval::upload(&la.stream, &b, br, bc)?;
    let mut dc = DeviceInterval::zeros(&la.stream, m * n)?;
    igemm_midrad_device(
        &la,
        m,
        n,
        k,
        (&da, ar, a.inf.trans),
        (&db, br, b.inf.trans),
        &mut dc,
        m,
    )?;
    dc.download(&la.stream, m, n, c_inf, c_sup, ldc)
}

/// `[C] := [A]·[B]` by the midpoint–radius method on device arrays, queued on `la`'s stream.
#[allow(clippy::too_many_arguments)]
pub fn igemm_midrad_device(
    la: &PooledLinalg,
    m: usize,
    n: usize,
    k: usize,
    a: DeviceIntervalOperand,
    b: DeviceIntervalOperand,
    c: &mut DeviceInterval,
    ldc: usize,
) -> Result<(), DeviceError> {
    check_emulation()?;
    dims_fit(&[m, n, k])?;
    let gpu = device::gpu()?;
    let (f_split, f_add, f_finish) = (
        function(gpu, "midrad_split")?,
        function(gpu, "add_scaled_up")?,
        function(gpu, "midrad_finish")?,
    );
    let stream = la.stream.clone();
    let (ta, tb) = (a.2, b.2);
    let (ar, ac) = match ta {
        Trans::No => (m, k),
        Trans::Yes => (k, m),
    };
    let (br, bc) = match tb {
        Trans::No => (k, n),
        Trans::Yes => (n, k),
    };
    let mut flags = stream.alloc_zeros::<i32>(2)?;
    let sa = split(
        &stream,
        &f_split,
        a.0,
        ar,
        ac,
        a.1,
        &mut flags.slice_mut(0..1),
    )?;
    let mut sb = split(
        &stream,
        &f_split,
        b.0,
        br,
        bc,
        b.1,
        &mut flags.slice_mut(1..2),
    )?;
    let f = stream.clone_dtoh(&flags)?;
    let (a_point, b_point) = (f[0] == 0, f[1] == 0);

    let mut p = stream.alloc_zeros::<f64>((m * n).max(1))?;
    let mut t = stream.alloc_zeros::<f64>((m * n).max(1))?;
    let mut summed = k;
    if k > 0 {
        dgemm(la, ta, tb, m, n, k, &sa.mid, ar, &sb.mid, br, false, &mut p)?;
        let g = round::gamma(k);
        let (alen, blen) = (ar * ac, br * bc);
        if b_point {
            // (γ|mA| + rA)·|mB|
            let mut left = sa.rad.clone();
            add_scaled_up(&stream, &f_add, alen, &sa.rad, g, &sa.abs, &mut left)?;
            dgemm(la, ta, tb, m, n, k, &left, ar, &sb.abs, br, false, &mut t)?;
        } else {
            // |mA|·(rB + γ|mB|), and + rA·(|mB| + rB) unless A is a point matrix. mid(B) is
            // free once P is formed (stream order), so it takes |mB| + rB.
            if !a_point {
                add_scaled_up(&stream, &f_add, blen, &sb.abs, 1.0, &sb.rad, &mut sb.mid)?;
            }
            let rb = sb.rad.clone();
            add_scaled_up(&stream, &f_add, blen, &rb, g, &sb.abs, &mut sb.rad)?;
            dgemm(la, ta, tb, m, n, k, &sa.abs, ar, &sb.rad, br, false, &mut t)?;
            if !a_point {
                dgemm(la, ta, tb, m, n, k, &sa.rad, ar, &sb.mid, br, true, &mut t)?;
                summed = 2 * k;
            }
        }
    }
    let (inflate, t_eta, p_eta) = midrad_constants(k, summed);
    let (mi, ni, ld) = (m as i32, n as i32, ldc.max(1) as i64);
    let mut launch = stream.launch_builder(&f_finish);
    launch
        .arg(&mi)
        .arg(&ni)
        .arg(&p)
        .arg(&t)
        .arg(&inflate)
        .arg(&t_eta)
        .arg(&p_eta);
    launch.arg(&mut c.inf).arg(&mut c.sup).arg(&ld);
    // SAFETY: arguments match midrad_finish; P and T hold m × n entries, C m × n at ldc.
    unsafe { launch.launch(rows_cols(m, n)) }?;
    Ok(())
}

/// The verified solver's GPU engine: A, B, R and [C] stay on the device; the n × nrhs vectors
/// travel each step.
pub struct Engine {
    la: PooledLinalg,
    funcs: EngineFuncs,
    n: usize,
    a: CudaSlice<f64>,
    b: CudaSlice<f64>,
    ldb: usize,
    r: Option<CudaSlice<f64>>,
    c_mid: Option<CudaSlice<f64>>,
    c_rad: Option<CudaSlice<f64>>,
    _memory: device::memory::Reservation<'static>,
}

struct EngineFuncs {
    residual: CudaFunction,
    norms: CudaFunction,
    build_c: CudaFunction,
    enclose: CudaFunction,
}

impl Engine {
    pub fn new(
        n: usize,
        a: &[f64],
        lda: usize,
        b: &[f64],
        ldb: usize,
    ) -> Result<Self, DeviceError> {
        check_emulation()?;
        dims_fit(&[n])?;
        let nrhs = if n == 0 { 0 } else { (b.len() + ldb - n) / ldb };
        let gpu = device::gpu()?;
        // A, the LU copy, R, [C] (two arrays), and B.
        let memory = gpu
            .budget
            .reserve(8 * (5 * n * n + n * nrhs.max(1) + 8 * n) as u64)?;
        let funcs = EngineFuncs {
            residual: function(gpu, "residual_dot2")?,
            norms: function(gpu, "norms_up")?,
            build_c: function(gpu, "build_c")?,
            enclose: function(gpu, "enclose_mv")?,
        };
        let la = gpu.linalg()?;
        let stream = la.stream.clone();
        let a = upload(&stream, a, n, n, lda)?;
        let b = upload(&stream, b, n, nrhs, ldb)?;
        Ok(Engine {
            la,
            funcs,
            n,
            a,
            b,
            ldb: n,
            r: None,
            c_mid: None,
            c_rad: None,
            _memory: memory,
        })
    }

    fn stream(&self) -> Arc<CudaStream> {
        self.la.stream.clone()
    }

    fn rows_cfg(&self, nrhs: usize) -> Result<LaunchConfig, DeviceError> {
        if nrhs > 65_535 {
            return Err(DeviceError::Driver(
                "too many right-hand sides for one grid".into(),
            ));
        }
        Ok(LaunchConfig {
            grid_dim: (self.n.div_ceil(128) as u32, nrhs as u32, 1),
            block_dim: (128, 1, 1),
            shared_mem_bytes: 0,
        })
    }

    /// `[lo, hi] ⊇ M·⟨vm, vr⟩` (+ `[−Mr, Mr]·⟨vm, vr⟩`).
    fn enclose(
        &mut self,
        interval_c: bool,
        vm: &[f64],
        vr: &[f64],
        lo: &mut [f64],
        hi: &mut [f64],
    ) -> Result<(), DeviceError> {
        let stream = self.stream();
        let nrhs = vm.len() / self.n;
        let (dvm, dvr) = (stream.clone_htod(vm)?, stream.clone_htod(vr)?);
        let (mut dlo, mut dhi) = (
            stream.alloc_zeros::<f64>(vm.len())?,
            stream.alloc_zeros::<f64>(vm.len())?,
        );
        let (ni, ki) = (self.n as i32, nrhs as i32);
        let cfg = self.rows_cfg(nrhs)?;
        let null: u64 = 0;
        let m = if interval_c {
            self.c_mid.as_ref()
        } else {
            self.r.as_ref()
        }
        .ok_or_else(|| DeviceError::Driver("enclosure before its matrix".into()))?;
        let mut launch = stream.launch_builder(&self.funcs.enclose);
        launch.arg(&ni).arg(&ki).arg(m);
        match (interval_c, self.c_rad.as_ref()) {
            (true, Some(cr)) => launch.arg(cr),
            _ => launch.arg(&null),
        };
        launch.arg(&dvm).arg(&dvr).arg(&mut dlo).arg(&mut dhi);
        // SAFETY: arguments match enclose_mv (a null radius matrix is allowed); M is n × n,
        // the vectors n × nrhs.
        unsafe { launch.launch(cfg) }?;
        stream.memcpy_dtoh(&dlo, lo)?;
        stream.memcpy_dtoh(&dhi, hi)?;
        Ok(())
    }
}

impl verify::Engine for Engine {
    type Error = DeviceError;

    fn invert(&mut self) -> Result<Option<usize>, DeviceError> {
        let n = self.n;
        let stream = self.stream();
        let mut lu = stream.clone_dtod(&self.a)?;
        let mut ipiv = stream.alloc_zeros::<i32>(n)?;
        let mut info = stream.alloc_zeros::<i32>(1)?;
        let h = self.la.solver()?.cu();
        let ni = n as i32;
        let lwork = {
            let (p_lu, _s) = lu.device_ptr_mut(&stream);
            // SAFETY: the handle is live on this stream; lu holds n × n entries.
            unsafe { blas::dgetrf_buffer_size(h, ni, p_lu as *mut f64, ni) }?
        };
        let mut work = stream.alloc_zeros::<f64>(lwork.max(1) as usize)?;
        {
            let (p_lu, _s1) = lu.device_ptr_mut(&stream);
            let (p_w, _s2) = work.device_ptr_mut(&stream);
            let (p_ipiv, _s3) = ipiv.device_ptr_mut(&stream);
            let (p_info, _s4) = info.device_ptr_mut(&stream);
            // SAFETY: sizes from the workspace query; all arrays live on this stream.
            unsafe {
                blas::dgetrf(
                    h,
                    ni,
                    p_lu as *mut f64,
                    ni,
                    p_w as *mut f64,
                    p_ipiv as *mut i32,
                    p_info as *mut i32,
                )
            }?;
        }
        let i = stream.clone_dtoh(&info)?[0];
        if i > 0 {
            return Ok(Some(i as usize));
        }
        if i < 0 {
            return Err(DeviceError::Library {
                library: "cuSOLVER",
                status: format!("cusolverDnDgetrf: info {i}"),
            });
        }
        // R = A⁻¹ by solving with the identity.
        let mut eye = host_buf(n * n)?;
        for k in 0..n {
            eye[k + k * n] = 1.0;
        }
        let mut r = stream.clone_htod(&eye)?;
        {
            let (p_lu, _s1) = lu.device_ptr(&stream);
            let (p_ipiv, _s2) = ipiv.device_ptr(&stream);
            let (p_r, _s3) = r.device_ptr_mut(&stream);
            let (p_info, _s4) = info.device_ptr_mut(&stream);
            // SAFETY: lu and ipiv from getrf above; r holds n × n entries.
            unsafe {
                blas::dgetrs(
                    h,
                    ni,
                    ni,
                    p_lu as *const f64,
                    ni,
                    p_ipiv as *const i32,
                    p_r as *mut f64,
                    ni,
                    p_info as *mut i32,
                )
            }?;
        }
        self.r = Some(r);
        Ok(None)
    }

    fn apply_r(&mut self, v: &[f64], out: &mut [f64]) -> Result<(), DeviceError> {
        let stream = self.stream();
        let nrhs = v.len() / self.n;
        let dv = stream.clone_htod(v)?;
        let mut dout = stream.alloc_zeros::<f64>(v.len())?;
        let r = self
            .r
            .as_ref()
            .ok_or_else(|| DeviceError::Driver("R not formed".into()))?;
        dgemm(
            &self.la,
            Trans::No,
            Trans::No,
            self.n,
            nrhs,
            self.n,
            r,
            self.n,
            &dv,
            self.n,
            false,
            &mut dout,
        )?;
        stream.memcpy_dtoh(&dout, out)?;
        Ok(())
    }

    fn residual(
        &mut self,
        x: &[f64],
        d: &mut [f64],
        lo: &mut [f64],
        hi: &mut [f64],
    ) -> Result<(), DeviceError> {
        let stream = self.stream();
        let nrhs = x.len() / self.n;
        let dx = stream.clone_htod(x)?;
        let (mut dd, mut dlo, mut dhi) = (
            stream.alloc_zeros::<f64>(x.len())?,
            stream.alloc_zeros::<f64>(x.len())?,
            stream.alloc_zeros::<f64>(x.len())?,
        );
        let (ni, ki, lda, ldb) = (self.n as i32, nrhs as i32, self.n as i64, self.ldb as i64);
        let slack = round::mul(self.n as f64, round::ETA, Dir::Up);
        let cfg = self.rows_cfg(nrhs)?;
        let mut launch = stream.launch_builder(&self.funcs.residual);
        launch
            .arg(&ni)
            .arg(&ki)
            .arg(&self.a)
            .arg(&lda)
            .arg(&self.b)
            .arg(&ldb);
        launch
            .arg(&dx)
            .arg(&mut dd)
            .arg(&mut dlo)
            .arg(&mut dhi)
            .arg(&slack);
        // SAFETY: arguments match residual_dot2; A n × n, B and the vectors n × nrhs.
        unsafe { launch.launch(cfg) }?;
        stream.memcpy_dtoh(&dd, d)?;
        stream.memcpy_dtoh(&dlo, lo)?;
        stream.memcpy_dtoh(&dhi, hi)?;
        Ok(())
    }

    fn build_c(&mut self) -> Result<bool, DeviceError> {
        let (n, stream) = (self.n, self.stream());
        let r = self
            .r
            .as_ref()
            .ok_or_else(|| DeviceError::Driver("R not formed".into()))?;
        let mut p = stream.alloc_zeros::<f64>(n * n)?;
        dgemm(
            &self.la,
            Trans::No,
            Trans::No,
            n,
            n,
            n,
            r,
            n,
            &self.a,
            n,
            false,
            &mut p,
        )?;
        let mut norms = stream.alloc_zeros::<f64>(2 * n)?;
        let (ni, lda) = (n as i32, n as i64);
        let mut launch = stream.launch_builder(&self.funcs.norms);
        launch
            .arg(&ni)
            .arg(r)
            .arg(&self.a)
            .arg(&lda)
            .arg(&mut norms);
        let cfg = LaunchConfig {
            grid_dim: ((2 * n).div_ceil(128) as u32, 1, 1),
            block_dim: (128, 1, 1),
            shared_mem_bytes: 0,
        };
        // SAFETY: arguments match norms_up; R and A are n × n, norms 2n.
        unsafe { launch.launch(cfg) }?;
        // SAFETY: written by build_c below before any read.
        let mut c_rad = unsafe { stream.alloc::<f64>(n * n)? };
        let mut flags = stream.alloc_zeros::<i32>(1)?;
        let (gamma, n_eta) = (round::gamma(n), round::mul(n as f64, round::ETA, Dir::Up));
        let mut launch = stream.launch_builder(&self.funcs.build_c);
        launch
            .arg(&ni)
            .arg(&mut p)
            .arg(&norms)
            .arg(&gamma)
            .arg(&n_eta)
            .arg(&mut c_rad)
            .arg(&mut flags);
        // SAFETY: arguments match build_c; P and Cr are n × n.
        unsafe { launch.launch(rows_cols(n, n)) }?;
        let bad = stream.clone_dtoh(&flags)?[0] != 0;
        self.c_mid = Some(p);
        self.c_rad = Some(c_rad);
        Ok(!bad)
    }

    fn enclose_r(
        &mut self,
        vm: &[f64],
        vr: &[f64],
        lo: &mut [f64],
        hi: &mut [f64],
    ) -> Result<(), DeviceError> {
        self.enclose(false, vm, vr, lo, hi)
    }

    fn enclose_c(
        &mut self,
        vm: &[f64],
        vr: &[f64],
        lo: &mut [f64],
        hi: &mut [f64],
    ) -> Result<(), DeviceError> {
        self.enclose(true, vm, vr, lo, hi)
    }
}
