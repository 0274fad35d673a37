//! The CPU executor: the blocked algorithm's operations on host vectors with the system BLAS.
//! Its "transfers" are copies, so it runs the out-of-core tiling exactly as the GPU does
//! (and finishes a run the GPU could not).

use super::{ExecError, Executor, Op, OpMut};
use crate::lapack::Dense;
use crate::real::Real;

pub struct CpuExecutor {
    budget: u64,
}

impl CpuExecutor {
    /// An executor whose matrices may take `budget` bytes (only `plan` reads it).
    pub fn new(budget: u64) -> Self {
        CpuExecutor { budget }
    }
}

fn trans(t: bool) -> u8 {
    if t {
        b'T'
    } else {
        b'N'
    }
}

impl<T: Real + Dense> Executor<T> for CpuExecutor {
    type Buf = Vec<T>;

    fn budget(&self) -> u64 {
        self.budget
    }

    fn alloc(&mut self, len: usize) -> Result<Vec<T>, ExecError> {
        Ok(vec![T::ZERO; len])
    }

    fn upload(
        &mut self,
        dst: &mut Vec<T>,
        off: usize,
        len: usize,
        fill: &mut dyn FnMut(usize, &mut [T]),
    ) -> Result<(), ExecError> {
        fill(0, &mut dst[off..off + len]);
        Ok(())
    }

    fn download(
        &mut self,
        src: &Vec<T>,
        off: usize,
        len: usize,
        take: &mut dyn FnMut(usize, &[T]),
    ) -> Result<(), ExecError> {
        take(0, &src[off..off + len]);
        Ok(())
    }

    fn gemm(
        &mut self,
        ta: bool,
        tb: bool,
        m: usize,
        n: usize,
        k: usize,
        alpha: T,
        a: Op<Vec<T>>,
        b: Op<Vec<T>>,
        beta: T,
        c: OpMut<Vec<T>>,
    ) -> Result<(), ExecError> {
        T::gemm(
            trans(ta),
            trans(tb),
            m,
            n,
            k,
            alpha,
            (&a.buf[a.off..], a.ld),
            (&b.buf[b.off..], b.ld),
            beta,
            &mut c.buf[c.off..],
            c.ld,
        );
        Ok(())
    }

    fn symm(
        &mut self,
        m: usize,
        n: usize,
        alpha: T,
        a: Op<Vec<T>>,
        b: Op<Vec<T>>,
        beta: T,
        c: OpMut<Vec<T>>,
    ) -> Result<(), ExecError> {
        T::symm_left(
            b'L',
            m,
            n,
            alpha,
            (&a.buf[a.off..], a.ld),
            (&b.buf[b.off..], b.ld),
            beta,
            &mut c.buf[c.off..],
            c.ld,
        );
        Ok(())
    }

    fn syr2k(
        &mut self,
        n: usize,
        k: usize,
        alpha: T,
        a: Op<Vec<T>>,
        b: Op<Vec<T>>,
        beta: T,
        c: OpMut<Vec<T>>,
    ) -> Result<(), ExecError> {
        T::syr2k(
            b'L',
            n,
            k,
            alpha,
            (&a.buf[a.off..], a.ld),
            (&b.buf[b.off..], b.ld),
            beta,
            &mut c.buf[c.off..],
            c.ld,
        );
        Ok(())
    }
}
