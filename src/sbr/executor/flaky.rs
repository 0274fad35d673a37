//! The unit tests' executor: the CPU's, failing (as a GPU might) once a given number of
//! operations have run, optionally tearing the failing download.

use crate::device::DeviceError;
use crate::sbr::executor::{cpu, DirectBlock, ExecError, Executor, Op, OpMut};

/// The CPU executor, failing (as a GPU might) once `left` operations have run.
pub(in crate::sbr) struct Flaky {
    pub(in crate::sbr) cpu: cpu::CpuExecutor,
    pub(in crate::sbr) left: usize,
    /// `map_host` refuses (as the GPU's does for memory locked by someone else), so the
    /// resuming CPU executor, which maps, runs with another block width.
    pub(in crate::sbr) refuse_map: bool,
    /// A download that fails delivers the first half of its range first.
    pub(in crate::sbr) tear: bool,
    /// The failure is a panic (a bug's) instead of an error.
    pub(in crate::sbr) panic: bool,
    /// Host regions mapped now (`map_host` since the last `unmap_host`), and ever.
    pub(in crate::sbr) mapped: usize,
    pub(in crate::sbr) maps: usize,
}

impl Flaky {
    pub(in crate::sbr) fn new(left: usize, refuse_map: bool, tear: bool) -> Self {
        Flaky {
            cpu: cpu::CpuExecutor::new(0),
            left,
            refuse_map,
            tear,
            panic: false,
            mapped: 0,
            maps: 0,
        }
    }

    pub(in crate::sbr) fn tick(&mut self) -> Result<(), ExecError> {
        if self.left == 0 {
            assert!(!self.panic, "injected panic");
            return Err(ExecError::Device(DeviceError::Driver("injected".into())));
        }
        self.left -= 1;
        Ok(())
    }
}

impl Executor<f64> for Flaky {
    type Buf = Vec<f64>;
    fn budget(&self) -> u64 {
        Executor::<f64>::budget(&self.cpu)
    }
    fn alloc(&mut self, len: usize) -> Result<Vec<f64>, ExecError> {
        self.tick()?;
        self.cpu.alloc(len)
    }
    fn upload(
        &mut self,
        dst: &mut Vec<f64>,
        off: usize,
        len: usize,
        fill: &mut dyn FnMut(usize, &mut [f64]),
    ) -> Result<(), ExecError> {
        self.tick()?;
        self.cpu.upload(dst, off, len, fill)
    }
    fn download(
        &mut self,
        src: &Vec<f64>,
        off: usize,
        len: usize,
        take: &mut dyn FnMut(usize, &[f64]),
    ) -> Result<(), ExecError> {
        if self.left == 0 && self.tear {
            self.cpu.download(src, off, len / 2, take)?;
        }
        self.tick()?;
        self.cpu.download(src, off, len, take)
    }
    fn download_block(
        &mut self,
        src: &Vec<f64>,
        off: usize,
        ld: usize,
        rows: usize,
        cols: usize,
        take: &mut dyn FnMut(usize, &[f64]),
    ) -> Result<(), ExecError> {
        // As the default, one download per column, but torn between whole columns (the
        // contract hands whole columns).
        for j in 0..cols {
            self.tick()?;
            self.cpu
                .download(src, off + j * ld, rows, &mut |start, piece| {
                    take(j * rows + start, piece)
                })?;
        }
        Ok(())
    }
    fn gemm(
        &mut self,
        ta: bool,
        tb: bool,
        m: usize,
        n: usize,
        k: usize,
        alpha: f64,
        a: Op<Vec<f64>>,
        b: Op<Vec<f64>>,
        beta: f64,
        c: OpMut<Vec<f64>>,
    ) -> Result<(), ExecError> {
        self.tick()?;
        self.cpu.gemm(ta, tb, m, n, k, alpha, a, b, beta, c)
    }
    fn symm(
        &mut self,
        m: usize,
        n: usize,
        alpha: f64,
        a: Op<Vec<f64>>,
        b: Op<Vec<f64>>,
        beta: f64,
        c: OpMut<Vec<f64>>,
    ) -> Result<(), ExecError> {
        self.tick()?;
        self.cpu.symm(m, n, alpha, a, b, beta, c)
    }
    fn geqrf(
        &mut self,
        m: usize,
        k: usize,
        a: OpMut<Vec<f64>>,
        tau: OpMut<Vec<f64>>,
    ) -> Result<(), ExecError> {
        self.tick()?;
        self.cpu.geqrf(m, k, a, tau)
    }
    fn copy(
        &mut self,
        m: usize,
        n: usize,
        a: Op<Vec<f64>>,
        c: OpMut<Vec<f64>>,
    ) -> Result<(), ExecError> {
        self.tick()?;
        self.cpu.copy(m, n, a, c)
    }
    fn trsm_right_upper(
        &mut self,
        m: usize,
        n: usize,
        r: Op<Vec<f64>>,
        b: OpMut<Vec<f64>>,
    ) -> Result<(), ExecError> {
        self.tick()?;
        self.cpu.trsm_right_upper(m, n, r, b)
    }
    fn potrf_upper(&mut self, n: usize, a: OpMut<Vec<f64>>) -> Result<(), ExecError> {
        self.tick()?;
        Executor::<f64>::potrf_upper(&mut self.cpu, n, a)
    }
    fn transpose(
        &mut self,
        m: usize,
        n: usize,
        a: Op<Vec<f64>>,
        c: OpMut<Vec<f64>>,
    ) -> Result<(), ExecError> {
        self.tick()?;
        Executor::<f64>::transpose(&mut self.cpu, m, n, a, c)
    }
    unsafe fn map_host(&mut self, a: *mut f64, len: usize) -> bool {
        // SAFETY: forwarded contract.
        let mapped =
            !self.refuse_map && unsafe { Executor::<f64>::map_host(&mut self.cpu, a, len) };
        self.mapped += usize::from(mapped);
        self.maps += usize::from(mapped);
        mapped
    }
    fn unmap_host(&mut self) {
        Executor::<f64>::unmap_host(&mut self.cpu);
        self.mapped = 0;
    }
    unsafe fn upload_direct(
        &mut self,
        dst: &mut Vec<f64>,
        off: usize,
        ld: usize,
        rows: usize,
        cols: usize,
        src: *const f64,
        lda: usize,
    ) -> Result<(), ExecError> {
        self.tick()?;
        // SAFETY: forwarded contract.
        unsafe { self.cpu.upload_direct(dst, off, ld, rows, cols, src, lda) }
    }
    unsafe fn download_direct(
        &mut self,
        src: &Vec<f64>,
        off: usize,
        ld: usize,
        rows: usize,
        cols: usize,
        dst: *mut f64,
        lda: usize,
    ) -> Result<(), ExecError> {
        if self.left == 0 && self.tear {
            // SAFETY: forwarded contract (the first half of the block's columns).
            unsafe {
                self.cpu
                    .download_direct(src, off, ld, rows, cols / 2, dst, lda)
            }?;
            let e = DeviceError::Driver("injected after half the copy".into());
            return Err(ExecError::Torn(e));
        }
        self.tick()?;
        // SAFETY: forwarded contract.
        unsafe { self.cpu.download_direct(src, off, ld, rows, cols, dst, lda) }
    }
    /// One operation, as the GPU's batch (queued, then one wait): a failure before it
    /// writes nothing; a tearing one delivers the first half of the blocks first.
    unsafe fn download_direct_blocks(
        &mut self,
        src: &Vec<f64>,
        blocks: &[DirectBlock<f64>],
    ) -> Result<(), ExecError> {
        if self.left == 0 && self.tear {
            let half = &blocks[..blocks.len() / 2];
            // SAFETY: forwarded contract.
            unsafe { self.cpu.download_direct_blocks(src, half) }?;
            let e = DeviceError::Driver("injected after half the blocks".into());
            return Err(ExecError::Torn(e));
        }
        self.tick()?;
        // SAFETY: forwarded contract.
        unsafe { self.cpu.download_direct_blocks(src, blocks) }
    }
    fn sync(&mut self) -> Result<(), ExecError> {
        self.tick()?;
        Executor::<f64>::sync(&mut self.cpu)
    }
    fn syr2k(
        &mut self,
        n: usize,
        k: usize,
        alpha: f64,
        a: Op<Vec<f64>>,
        b: Op<Vec<f64>>,
        beta: f64,
        c: OpMut<Vec<f64>>,
    ) -> Result<(), ExecError> {
        self.tick()?;
        self.cpu.syr2k(n, k, alpha, a, b, beta, c)
    }
}
