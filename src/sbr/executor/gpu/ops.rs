//! The GPU executor's operations: transfers (staged or direct), cuBLAS and cuSOLVER calls on
//! the lanes' streams.

use super::halves::{symm_by_halves, syr2k_by_halves, Pairs2k, HALVES_LEAF};
use super::{at, blas_err, dim, driver_err, geam_on, CublasReal, GpuBuf, GpuExecutor, CHUNK};
use crate::device::blas::trans;
use crate::device::memory::{copy_2d, Side};
use crate::device::{self, DeviceError};
use crate::sbr::executor::{DirectBlock, ExecError, Executor, Op, OpMut};
use cudarc::driver::{CudaStream, DevicePtr, DevicePtrMut};

impl<T: CublasReal> Executor<T> for GpuExecutor<T> {
    type Buf = GpuBuf<T>;

    fn budget(&self) -> u64 {
        self.budget
    }

    fn alloc(&mut self, len: usize) -> Result<GpuBuf<T>, ExecError> {
        let bytes = (len * std::mem::size_of::<T>()) as u64;
        let reserved = self.gpu.budget.reserve(bytes)?;
        let slice = self.la.stream.alloc_zeros::<T>(len).map_err(driver_err)?;
        Ok(GpuBuf {
            slice,
            _reserved: reserved,
        })
    }

    fn upload(
        &mut self,
        dst: &mut GpuBuf<T>,
        off: usize,
        len: usize,
        fill: &mut dyn FnMut(usize, &mut [T]),
    ) -> Result<(), ExecError> {
        assert!(off + len <= dst.slice.len(), "upload past the buffer's end");
        self.staged_upload(
            dst,
            len,
            CHUNK,
            fill,
            &mut |stage, start, piece, base, stream| {
                // SAFETY: the destination lies inside `dst` (asserted), which outlives the copy:
                // freeing it is ordered after the recorded write on the stream.
                unsafe { stage.copy_to_device(piece, at::<T>(base, off + start), stream) }
            },
        )
    }

    fn upload_block(
        &mut self,
        dst: &mut GpuBuf<T>,
        off: usize,
        ld: usize,
        rows: usize,
        cols: usize,
        fill: &mut dyn FnMut(usize, &mut [T]),
    ) -> Result<(), ExecError> {
        if rows == 0 || cols == 0 {
            return Ok(());
        }
        assert!(
            rows <= ld,
            "block rows {rows} exceed the leading dimension {ld}"
        );
        assert!(
            off + (cols - 1) * ld + rows <= dst.slice.len(),
            "upload past the buffer's end"
        );
        // Whole columns per staging buffer (a column longer than one is not expected: rows ≤ n).
        assert!(
            rows <= CHUNK,
            "a column of {rows} exceeds the staging buffer"
        );
        let per = CHUNK / rows * rows;
        self.staged_upload(
            dst,
            rows * cols,
            per,
            fill,
            &mut |stage, start, piece, base, stream| {
                // SAFETY: the columns start / rows .. (start + piece) / rows of the block lie inside
                // `dst` (asserted above), which outlives the copy: freeing it is ordered after the
                // recorded write.
                unsafe {
                    stage.copy_to_device_strided(
                        rows,
                        piece / rows,
                        at::<T>(base, off + start / rows * ld),
                        ld,
                        stream,
                    )
                }
            },
        )
    }

    fn download(
        &mut self,
        src: &GpuBuf<T>,
        off: usize,
        len: usize,
        take: &mut dyn FnMut(usize, &[T]),
    ) -> Result<(), ExecError> {
        assert!(
            off + len <= src.slice.len(),
            "download past the buffer's end"
        );
        self.staged_download(
            src,
            len,
            CHUNK,
            take,
            &mut |stage, start, piece, base, stream| {
                // SAFETY: the source lies inside `src` (asserted), whose queued writes the
                // stream waits for; the staging buffer holds CHUNK ≥ piece elements.
                unsafe { stage.copy_from_device(piece, at::<T>(base, off + start), stream) }
            },
        )
    }

    fn download_block(
        &mut self,
        src: &GpuBuf<T>,
        off: usize,
        ld: usize,
        rows: usize,
        cols: usize,
        take: &mut dyn FnMut(usize, &[T]),
    ) -> Result<(), ExecError> {
        if rows == 0 || cols == 0 {
            return Ok(());
        }
        assert!(
            rows <= ld && rows <= CHUNK,
            "block rows {rows}: above the leading dimension {ld} or the staging buffer"
        );
        assert!(
            off + (cols - 1) * ld + rows <= src.slice.len(),
            "download past the buffer's end"
        );
        self.staged_download(
            src,
            rows * cols,
            CHUNK / rows * rows,
            take,
            &mut |stage, start, piece, base, stream| {
                // SAFETY: whole columns of the block, inside `src` (asserted).
                unsafe {
                    stage.copy_from_device_strided(
                        rows,
                        piece / rows,
                        at::<T>(base, off + start / rows * ld),
                        ld,
                        stream,
                    )
                }
            },
        )
    }

    /// Page-locks the user's matrix (see `memory::Registered`): block columns then move by
    /// DMA at the bus's rate (54 GB/s each way on an H100's host) instead of through the
    /// staging buffers, whose host copies ran at 10-29 GB/s.
    unsafe fn map_host(&mut self, a: *mut T, len: usize) -> bool {
        // SAFETY: the caller keeps the entries allocated until `unmap_host`, which runs before
        // the registration is dropped (or the executor is).
        match unsafe {
            self.gpu
                .register_host(a.cast(), len * std::mem::size_of::<T>())
        } {
            Ok(r) => {
                self.mapped.push(r);
                true
            }
            Err(e) => {
                crate::dispatch::debug(|| format!("sbr: host matrix not page-locked ({e})"));
                false
            }
        }
    }

    fn unmap_host(&mut self) {
        self.release_host();
    }

    unsafe fn upload_direct(
        &mut self,
        dst: &mut GpuBuf<T>,
        off: usize,
        ld: usize,
        rows: usize,
        cols: usize,
        src: *const T,
        lda: usize,
    ) -> Result<(), ExecError> {
        if rows == 0 || cols == 0 {
            return Ok(());
        }
        assert!(
            off + (cols - 1) * ld + rows <= dst.slice.len(),
            "upload past the buffer's end"
        );
        let stream: &CudaStream = &self.h2d;
        // Waits for queued work on `dst`; records the upload as its last write.
        let (base, _written) = dst.slice.device_ptr_mut(stream);
        let from = Side::Host(src.cast_mut().cast(), lda);
        // SAFETY: the destination lies inside `dst` (asserted), freed only after the recorded
        // write; the caller guarantees the host block stays valid and is not written meanwhile.
        unsafe {
            copy_2d::<T>(
                from,
                Side::Device(at::<T>(base, off), ld),
                rows,
                cols,
                stream,
            )?
        };
        Ok(())
    }

    unsafe fn download_direct(
        &mut self,
        src: &GpuBuf<T>,
        off: usize,
        ld: usize,
        rows: usize,
        cols: usize,
        dst: *mut T,
        lda: usize,
    ) -> Result<(), ExecError> {
        if rows == 0 || cols == 0 {
            return Ok(());
        }
        assert!(
            off + (cols - 1) * ld + rows <= src.slice.len(),
            "download past the buffer's end"
        );
        let stream: &CudaStream = &self.d2h;
        {
            // Waits for queued writes to `src`.
            let (base, _read) = src.slice.device_ptr(stream);
            let to = Side::Host(dst.cast(), lda);
            // SAFETY: the source lies inside `src` (asserted); the caller guarantees the host
            // block is valid and untouched during the call, which waits for the copy below.
            unsafe { copy_2d::<T>(Side::Device(at::<T>(base, off), ld), to, rows, cols, stream)? };
        }
        // The copy was queued: a failure from here on may come after part of it landed.
        let torn = |e: cudarc::driver::DriverError| ExecError::Torn(e.into());
        stream.synchronize().map_err(torn)?;
        self.gpu.ctx.check_err().map_err(torn)
    }

    /// Queues every block's copy on the download stream, then waits once.
    unsafe fn download_direct_blocks(
        &mut self,
        src: &GpuBuf<T>,
        blocks: &[DirectBlock<T>],
    ) -> Result<(), ExecError> {
        let stream: &CudaStream = &self.d2h;
        let torn = |e: cudarc::driver::DriverError| ExecError::Torn(e.into());
        {
            // Waits for queued writes to `src`.
            let (base, _read) = src.slice.device_ptr(stream);
            for (k, b) in blocks.iter().enumerate() {
                if b.rows == 0 || b.cols == 0 {
                    continue;
                }
                assert!(
                    b.off + (b.cols - 1) * b.ld + b.rows <= src.slice.len(),
                    "download past the buffer's end"
                );
                let (from, to) = (
                    Side::Device(at::<T>(base, b.off), b.ld),
                    Side::Host(b.dst.cast(), b.lda),
                );
                // SAFETY: the source lies inside `src` (asserted); the caller guarantees each
                // host block is valid and untouched during the call, which waits below.
                let queued = unsafe { copy_2d::<T>(from, to, b.rows, b.cols, stream) };
                queued.map_err(|e| {
                    if k == 0 {
                        ExecError::Device(e)
                    } else {
                        ExecError::Torn(e)
                    }
                })?;
            }
        }
        stream.synchronize().map_err(torn)?;
        self.gpu.ctx.check_err().map_err(torn)
    }

    fn gemm(
        &mut self,
        ta: bool,
        tb: bool,
        m: usize,
        n: usize,
        k: usize,
        alpha: T,
        a: Op<GpuBuf<T>>,
        b: Op<GpuBuf<T>>,
        beta: T,
        c: OpMut<GpuBuf<T>>,
    ) -> Result<(), ExecError> {
        if m == 0 || n == 0 {
            return Ok(());
        }
        let handle = self.handle();
        let stream: &CudaStream = &self.cur().stream;
        let (pa, _ra) = a.buf.slice.device_ptr(stream);
        let (pb, _rb) = b.buf.slice.device_ptr(stream);
        let (pc, _wc) = c.buf.slice.device_ptr_mut(stream);
        // SAFETY: the operands lie inside their buffers (the driver's tiling keeps them there)
        // and are ordered after their last writes by the events waited on above.
        unsafe {
            T::gemm(
                handle,
                trans(ta),
                trans(tb),
                dim(m),
                dim(n),
                dim(k),
                &alpha,
                at::<T>(pa, a.off) as *const T,
                dim(a.ld),
                at::<T>(pb, b.off) as *const T,
                dim(b.ld),
                &beta,
                at::<T>(pc, c.off) as *mut T,
                dim(c.ld),
            )
        }
        .result()
        .map_err(blas_err)
    }

    fn symm(
        &mut self,
        m: usize,
        n: usize,
        alpha: T,
        a: Op<GpuBuf<T>>,
        b: Op<GpuBuf<T>>,
        beta: T,
        c: OpMut<GpuBuf<T>>,
    ) -> Result<(), ExecError> {
        if m == 0 || n == 0 {
            return Ok(());
        }
        #[cfg(test)]
        self.stall()?;
        let handle = self.handle();
        let stream: &CudaStream = &self.cur().stream;
        let (pa, _ra) = a.buf.slice.device_ptr(stream);
        let (pb, _rb) = b.buf.slice.device_ptr(stream);
        let (pc, _wc) = c.buf.slice.device_ptr_mut(stream);
        // SAFETY: as in gemm.
        unsafe {
            symm_by_halves(
                handle,
                m,
                n,
                alpha,
                at::<T>(pa, a.off) as *const T,
                a.ld,
                at::<T>(pb, b.off) as *const T,
                b.ld,
                beta,
                at::<T>(pc, c.off) as *mut T,
                c.ld,
            )
        }
        .map_err(blas_err)
    }

    fn geqrf(
        &mut self,
        m: usize,
        k: usize,
        a: OpMut<GpuBuf<T>>,
        tau: OpMut<GpuBuf<T>>,
    ) -> Result<(), ExecError> {
        if m == 0 || k == 0 {
            return Ok(());
        }
        assert!(
            tau.off + m.min(k) <= tau.buf.slice.len(),
            "tau past the buffer's end"
        );
        let base = {
            let stream: &CudaStream = &self.cur().stream;
            let (pa, _wa) = a.buf.slice.device_ptr_mut(stream);
            at::<T>(pa, a.off)
        };
        self.qr_workspace(m, k, base, a.ld)?;
        let solver = self.cur_mut().solver()?.cu();
        let stream = self.cur().stream.clone();
        let stream: &CudaStream = &stream;
        let qr = self.qr.as_mut().expect("reserved above");
        let (pa, _wa) = a.buf.slice.device_ptr_mut(stream);
        let (pt, _wt) = tau.buf.slice.device_ptr_mut(stream);
        let (pw, _ww) = qr.work.device_ptr_mut(stream);
        let (pi, _wi) = qr.info.device_ptr_mut(stream);
        // SAFETY: the panel and tau lie inside their buffers, the workspace has the length
        // cuSOLVER asked for; all are ordered on the solver's stream (the compute stream).
        let st = unsafe {
            T::geqrf(
                solver,
                dim(m),
                dim(k),
                at::<T>(pa, a.off) as *mut T,
                dim(a.ld),
                at::<T>(pt, tau.off) as *mut T,
                pw as *mut T,
                dim(qr.lwork),
                pi as *mut i32,
            )
        };
        Ok(DeviceError::check_cusolver("geqrf", st)?)
    }

    fn potrf_upper(&mut self, n: usize, a: OpMut<GpuBuf<T>>) -> Result<(), ExecError> {
        if n == 0 {
            return Ok(());
        }
        let solver = self.cur_mut().solver()?.cu();
        let stream = self.cur().stream.clone();
        let stream: &CudaStream = &stream;
        let mut lwork = 0i32;
        {
            let (pa, _wa) = a.buf.slice.device_ptr_mut(stream);
            let pa = at::<T>(pa, a.off) as *mut T;
            // SAFETY: the matrix lies inside its buffer; only lwork is written.
            let st = unsafe { T::potrf_buffer_size(solver, dim(n), pa, dim(a.ld), &mut lwork) };
            DeviceError::check_cusolver("potrf_bufferSize", st)?;
        }
        self.solver_workspace(lwork)?;
        let qr = self.qr.as_mut().expect("reserved above");
        let (pa, _wa) = a.buf.slice.device_ptr_mut(stream);
        let (pw, _ww) = qr.work.device_ptr_mut(stream);
        let (pi, _wi) = qr.info.device_ptr_mut(stream);
        // SAFETY: as in geqrf. INFO stays on the device: the caller checks the factor.
        let st = unsafe {
            T::potrf(
                solver,
                dim(n),
                at::<T>(pa, a.off) as *mut T,
                dim(a.ld),
                pw as *mut T,
                dim(qr.lwork),
                pi as *mut i32,
            )
        };
        Ok(DeviceError::check_cusolver("potrf", st)?)
    }

    fn trsm_right_upper(
        &mut self,
        m: usize,
        n: usize,
        r: Op<GpuBuf<T>>,
        b: OpMut<GpuBuf<T>>,
    ) -> Result<(), ExecError> {
        if m == 0 || n == 0 {
            return Ok(());
        }
        let handle = self.handle();
        let stream: &CudaStream = &self.cur().stream;
        let (pr, _rr) = r.buf.slice.device_ptr(stream);
        let (pb, _wb) = b.buf.slice.device_ptr_mut(stream);
        // SAFETY: as in gemm.
        unsafe {
            T::trsm_right_upper(
                handle,
                dim(m),
                dim(n),
                at::<T>(pr, r.off) as *const T,
                dim(r.ld),
                at::<T>(pb, b.off) as *mut T,
                dim(b.ld),
            )
        }
        .result()
        .map_err(blas_err)
    }

    fn copy(
        &mut self,
        m: usize,
        n: usize,
        a: Op<GpuBuf<T>>,
        c: OpMut<GpuBuf<T>>,
    ) -> Result<(), ExecError> {
        self.geam(false, m, n, a, c)
    }

    fn transpose(
        &mut self,
        m: usize,
        n: usize,
        a: Op<GpuBuf<T>>,
        c: OpMut<GpuBuf<T>>,
    ) -> Result<(), ExecError> {
        self.geam(true, n, m, a, c)
    }

    fn transpose_in_transfer(
        &mut self,
        up: bool,
        m: usize,
        n: usize,
        a: Op<GpuBuf<T>>,
        c: OpMut<GpuBuf<T>>,
    ) -> Result<(), ExecError> {
        let (handle, stream) = self.copy_lane(up)?;
        geam_on(handle, stream, true, n, m, a, c)
    }

    fn can_factor(&self) -> bool {
        device::libraries().cusolver
    }

    fn lane(&mut self, lane: usize) -> Result<(), ExecError> {
        assert!(lane < 2, "the GPU executor has two lanes");
        if lane == 1 && self.la1.is_none() {
            self.la1 = Some(self.gpu.linalg_urgent()?);
        }
        self.lane = lane;
        Ok(())
    }

    fn sync(&mut self) -> Result<(), ExecError> {
        if let Some(l) = &self.la1 {
            l.stream.synchronize().map_err(driver_err)?;
        }
        self.la.stream.synchronize().map_err(driver_err)?;
        self.h2d.synchronize().map_err(driver_err)?;
        self.d2h.synchronize().map_err(driver_err)
    }

    fn syr2k(
        &mut self,
        n: usize,
        k: usize,
        alpha: T,
        a: Op<GpuBuf<T>>,
        b: Op<GpuBuf<T>>,
        beta: T,
        c: OpMut<GpuBuf<T>>,
    ) -> Result<(), ExecError> {
        if n == 0 {
            return Ok(());
        }
        // The pairs buffer serves lane 0 only (lane 1 may run at the same time).
        let by_halves = n > HALVES_LEAF && self.lane == 0 && self.ensure_pairs(3 * n * k);
        let handle = self.handle();
        let stream = self.cur().stream.clone();
        let stream: &CudaStream = &stream;
        let (pa, _ra) = a.buf.slice.device_ptr(stream);
        let (pb, _rb) = b.buf.slice.device_ptr(stream);
        let (pc, _wc) = c.buf.slice.device_ptr_mut(stream);
        let (pa, pb, pc) = (
            at::<T>(pa, a.off) as *const T,
            at::<T>(pb, b.off) as *const T,
            at::<T>(pc, c.off) as *mut T,
        );
        let mut pairs = None;
        let _wp;
        if by_halves {
            let buf = &mut self.pairs.as_mut().expect("ensured above").buf;
            let (pp, wp) = buf.device_ptr_mut(stream);
            _wp = wp;
            // SAFETY: the copies write three n x k blocks inside the pairs buffer (3nk
            // elements ensured above) and read A and B as SYR2K would.
            unsafe {
                for (src, ld, block) in [(pa, a.ld, 0), (pb, b.ld, 1), (pa, a.ld, 2)] {
                    let dst = at::<T>(pp, block * n * k) as *mut T;
                    T::geam_copy(handle, false, dim(n), dim(k), src, dim(ld), dst, dim(n))
                        .result()
                        .map_err(blas_err)?;
                }
            }
            pairs = Some(pp as *const T);
        }
        let pairs = pairs.map(|p| Pairs2k { p, ld: n, k });
        // SAFETY: as in gemm; the pairs hold [A B A] with leading dimension n.
        unsafe {
            syr2k_by_halves(
                handle, n, k, alpha, pa, a.ld, pb, b.ld, beta, pc, c.ld, pairs, 0,
            )
        }
        .map_err(blas_err)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lapack::Dense;
    use crate::real::Real;
    use crate::sbr::driver::testing::has_gpu;
    use crate::sbr::executor::cpu::CpuExecutor;
    use crate::sbr::executor::{op, op_mut};
    use crate::testmat::{seed_from_time, Rng};

    /// `data` uploaded to a new buffer of `exec`.
    fn put<T: Real, E: Executor<T>>(exec: &mut E, data: &[T]) -> E::Buf {
        let mut buf = exec.alloc(data.len()).unwrap();
        exec.upload(&mut buf, 0, data.len(), &mut |start, out| {
            out.copy_from_slice(&data[start..start + out.len()])
        })
        .unwrap();
        buf
    }

    fn get<T: Real, E: Executor<T>>(exec: &mut E, buf: &E::Buf, len: usize) -> Vec<T> {
        let mut out = vec![T::ZERO; len];
        exec.download(buf, 0, len, &mut |start, piece| {
            out[start..start + piece.len()].copy_from_slice(piece)
        })
        .unwrap();
        out
    }

    /// The GPU executor's SYR2K (by halves: the order is above HALVES_LEAF, and one half
    /// splits again) and SYMM against the CPU executor's BLAS: the lower triangle within the two computations' rounding bound
    /// (2 (terms + 2) ulp times the sum of the terms' magnitudes, which the BLAS computes from
    /// absolute values), C's strict upper triangle untouched, and A's strict upper triangle
    /// (NaN here) never read.
    fn syr2k_symm_match_blas<T: CublasReal + Dense>() {
        if !has_gpu() {
            return;
        }
        let seed = seed_from_time();
        let mut rng = Rng::new(seed);
        let (n, k) = (2 * HALVES_LEAF + 77, 64);
        let mut rand = |len: usize| -> Vec<T> {
            (0..len)
                .map(|_| T::from_f64(rng.range(-1.0, 1.0)))
                .collect()
        };
        let abs = |v: &[T]| -> Vec<T> { v.iter().map(|x| x.abs()).collect() };
        let (a, b, z, x) = (rand(n * k), rand(n * k), rand(n * k), rand(n * k));
        let (mut c, mut sym) = (rand(n * n), rand(n * n));
        for j in 0..n {
            for i in 0..j {
                c[i + j * n] = T::from_f64(7.0);
                sym[i + j * n] = T::from_f64(f64::NAN);
            }
        }
        let mut gpu = GpuExecutor::<T>::new(None).unwrap();
        let mut cpu = CpuExecutor::new(u64::MAX);
        let ulp = T::ULP.to_f64();
        let what = |name: &str| format!("GPU {}{name} n={n} seed={seed}", T::PREFIX);
        let minus = -T::ONE;

        // C := −(A Bᵀ + B Aᵀ) + C on both, and |A| |B|ᵀ + |B| |A|ᵀ + |C| on the CPU.
        let mut on_cpu = |a: &[T], b: &[T], c: &[T], alpha: T| {
            let (pa, pb, mut pc) = (put(&mut cpu, a), put(&mut cpu, b), put(&mut cpu, c));
            let out = op_mut(&mut pc, 0, n);
            cpu.syr2k(n, k, alpha, op(&pa, 0, n), op(&pb, 0, n), T::ONE, out)
                .unwrap();
            get(&mut cpu, &pc, n * n)
        };
        let want = on_cpu(&a, &b, &c, minus);
        let size = on_cpu(&abs(&a), &abs(&b), &abs(&c), T::ONE);
        let (ga, gb, mut gc) = (put(&mut gpu, &a), put(&mut gpu, &b), put(&mut gpu, &c));
        let out = op_mut(&mut gc, 0, n);
        gpu.syr2k(n, k, minus, op(&ga, 0, n), op(&gb, 0, n), T::ONE, out)
            .unwrap();
        let got = get(&mut gpu, &gc, n * n);
        let bound = 2.0 * (2 * k + 2) as f64 * ulp;
        for j in 0..n {
            for i in 0..n {
                let q = i + j * n;
                let (g, w) = (got[q].to_f64(), want[q].to_f64());
                if i < j {
                    assert_eq!(g, 7.0, "{}: upper ({i}, {j}) written", what("syr2k"));
                } else {
                    let tol = bound * size[q].to_f64();
                    assert!(
                        (g - w).abs() <= tol,
                        "{}: ({i}, {j}) {g} vs {w}",
                        what("syr2k")
                    );
                }
            }
        }

        // X := S Z − X with S symmetric, read from its lower triangle; the bound from
        // |S| |Z| + |X|.
        let mut on_cpu = |s: &[T], z: &[T], x: &[T], beta: T| {
            let (ps, pz, mut px) = (put(&mut cpu, s), put(&mut cpu, z), put(&mut cpu, x));
            let out = op_mut(&mut px, 0, n);
            cpu.symm(n, k, T::ONE, op(&ps, 0, n), op(&pz, 0, n), beta, out)
                .unwrap();
            get(&mut cpu, &px, n * k)
        };
        let want = on_cpu(&sym, &z, &x, minus);
        let size = on_cpu(&abs(&sym), &abs(&z), &abs(&x), T::ONE);
        let (gs, gz, mut gx) = (put(&mut gpu, &sym), put(&mut gpu, &z), put(&mut gpu, &x));
        let out = op_mut(&mut gx, 0, n);
        gpu.symm(n, k, T::ONE, op(&gs, 0, n), op(&gz, 0, n), minus, out)
            .unwrap();
        let got = get(&mut gpu, &gx, n * k);
        let bound = 2.0 * (n + 2) as f64 * ulp;
        for (q, (g, w)) in got.iter().zip(&want).enumerate() {
            let (g, w) = (g.to_f64(), w.to_f64());
            let tol = bound * size[q].to_f64();
            assert!(
                (g - w).abs() <= tol,
                "{}: entry {q} {g} vs {w}",
                what("symm")
            );
        }
    }

    /// `upload_block` in several staging pieces (two columns each) puts every column at its
    /// place and leaves the rows between them as they were.
    #[test]
    fn gpu_upload_block_places_columns() {
        if !has_gpu() {
            return;
        }
        let (rows, cols, ld, off) = (CHUNK / 2 - 3, 5, CHUNK / 2 + 4, 11);
        let len = off + cols * ld;
        let mut gpu = GpuExecutor::<f64>::new(None).unwrap();
        let mut buf = put(&mut gpu, &vec![-1.0; len]);
        let value = |q: usize| (q % 1_000_003) as f64 + 0.5;
        gpu.upload_block(&mut buf, off, ld, rows, cols, &mut |start, out| {
            for (i, x) in out.iter_mut().enumerate() {
                *x = value(start + i);
            }
        })
        .unwrap();
        let got = get(&mut gpu, &buf, len);
        for (q, &x) in got.iter().enumerate() {
            let (j, i) = ((q.max(off) - off) / ld, (q.max(off) - off) % ld);
            let inside = q >= off && j < cols && i < rows;
            let want = if inside { value(j * rows + i) } else { -1.0 };
            assert_eq!(x, want, "entry {q}");
        }
    }

    /// Direct transfers between a page-locked host matrix and device blocks, and strided
    /// downloads through the staging, put every entry where it belongs and nothing else.
    #[test]
    fn gpu_direct_transfers_and_download_block() {
        if !has_gpu() {
            return;
        }
        let (lda, hcols) = (1003, 40);
        let value = |q: usize| (q % 1_000_003) as f64 + 0.25;
        let mut host: Vec<f64> = (0..lda * hcols).map(value).collect();
        let mut gpu = GpuExecutor::<f64>::new(None).unwrap();
        // SAFETY: `host` outlives the executor's use of it (unmapped below).
        assert!(unsafe { gpu.map_host(host.as_mut_ptr(), host.len()) });
        // Rows 7..7+rows of columns 3..3+cols of the host matrix into a block at `off` (ld).
        let (rows, cols, ld, off) = (900, 30, 950, 13);
        let len = off + cols * ld;
        let mut buf = put(&mut gpu, &vec![-1.0; len]);
        let src = host[7 + 3 * lda..].as_ptr();
        // SAFETY: the block lies inside `host`, not written until the sync below.
        unsafe { gpu.upload_direct(&mut buf, off, ld, rows, cols, src, lda) }.unwrap();
        gpu.sync().unwrap();
        let got = get(&mut gpu, &buf, len);
        for (q, &x) in got.iter().enumerate() {
            let (j, i) = ((q.max(off) - off) / ld, (q.max(off) - off) % ld);
            let inside = q >= off && j < cols && i < rows;
            let want = if inside {
                value(7 + i + (3 + j) * lda)
            } else {
                -1.0
            };
            assert_eq!(x, want, "uploaded entry {q}");
        }
        // A sub-block back through the staging, packed.
        let (r2, c2, off2) = (500, 20, off + 2 * ld + 40);
        let mut packed = vec![0.0; r2 * c2];
        gpu.download_block(&buf, off2, ld, r2, c2, &mut |start, piece| {
            packed[start..start + piece.len()].copy_from_slice(piece)
        })
        .unwrap();
        for j in 0..c2 {
            for i in 0..r2 {
                assert_eq!(
                    packed[i + j * r2],
                    got[off2 + i + j * ld],
                    "packed ({i}, {j})"
                );
            }
        }
        // The same sub-block straight into rows 100.. of host columns 5.., nothing else.
        let before = host.clone();
        let dst = host[100 + 5 * lda..].as_mut_ptr();
        // SAFETY: the block lies inside `host`, untouched during the call.
        unsafe { gpu.download_direct(&buf, off2, ld, r2, c2, dst, lda) }.unwrap();
        gpu.unmap_host();
        for (q, (&x, &was)) in host.iter().zip(&before).enumerate() {
            let (i, j) = (q % lda, q / lda);
            let inside = (100..100 + r2).contains(&i) && (5..5 + c2).contains(&j);
            let want = if inside {
                packed[(i - 100) + (j - 5) * r2]
            } else {
                was
            };
            assert_eq!(x, want, "host entry ({i}, {j})");
        }
    }

    #[test]
    fn gpu_dsyr2k_dsymm_match_blas() {
        syr2k_symm_match_blas::<f64>();
    }

    #[test]
    fn gpu_ssyr2k_ssymm_match_blas() {
        syr2k_symm_match_blas::<f32>();
    }
}
