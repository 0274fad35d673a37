//! The CPU executor: the blocked algorithm's operations on host vectors with the system BLAS.
//! Its "transfers" are copies, so it runs the out-of-core tiling exactly as the GPU does
//! (and finishes a run the GPU could not).

use super::{ExecError, Executor, Op, OpMut};
use crate::lapack::{Dense, TriangularOp};
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
        super::host_zeros(len)
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

    fn transpose(
        &mut self,
        m: usize,
        n: usize,
        a: Op<Vec<T>>,
        c: OpMut<Vec<T>>,
    ) -> Result<(), ExecError> {
        for j in 0..n {
            for i in 0..m {
                c.buf[c.off + j + i * c.ld] = a.buf[a.off + i + j * a.ld];
            }
        }
        Ok(())
    }

    /// Host memory needs no mapping: the direct transfers are column copies.
    unsafe fn map_host(&mut self, _a: *mut T, _len: usize) -> bool {
        true
    }

    unsafe fn upload_direct(
        &mut self,
        dst: &mut Vec<T>,
        off: usize,
        ld: usize,
        rows: usize,
        cols: usize,
        src: *const T,
        lda: usize,
    ) -> Result<(), ExecError> {
        for j in 0..cols {
            // SAFETY: the caller guarantees the block lies in live host memory nobody writes.
            let col = unsafe { std::slice::from_raw_parts(src.add(j * lda), rows) };
            dst[off + j * ld..][..rows].copy_from_slice(col);
        }
        Ok(())
    }

    unsafe fn download_direct(
        &mut self,
        src: &Vec<T>,
        off: usize,
        ld: usize,
        rows: usize,
        cols: usize,
        dst: *mut T,
        lda: usize,
    ) -> Result<(), ExecError> {
        for j in 0..cols {
            // SAFETY: the caller guarantees the block lies in live host memory nobody else
            // touches during the call.
            let col = unsafe { std::slice::from_raw_parts_mut(dst.add(j * lda), rows) };
            col.copy_from_slice(&src[off + j * ld..][..rows]);
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

    fn geqrf(
        &mut self,
        m: usize,
        k: usize,
        a: OpMut<Vec<T>>,
        tau: OpMut<Vec<T>>,
    ) -> Result<(), ExecError> {
        if m == 0 || k == 0 {
            return Ok(());
        }
        let info = T::geqrf(
            m,
            k,
            &mut a.buf[a.off..],
            a.ld,
            &mut tau.buf[tau.off..tau.off + m.min(k)],
        );
        assert_eq!(info, 0, "xGEQRF rejected its arguments");
        Ok(())
    }

    fn potrf_upper(&mut self, n: usize, a: OpMut<Vec<T>>) -> Result<(), ExecError> {
        let m = &mut a.buf[a.off..];
        if T::potrf_upper(n, m, a.ld) != 0 {
            for c in 0..n {
                m[c * a.ld..][..=c].fill(T::from_f64(f64::NAN));
            }
        }
        Ok(())
    }

    fn trsm_right_upper(
        &mut self,
        m: usize,
        n: usize,
        r: Op<Vec<T>>,
        b: OpMut<Vec<T>>,
    ) -> Result<(), ExecError> {
        if m == 0 || n == 0 {
            return Ok(());
        }
        T::triangular(
            TriangularOp::Solve,
            *b"RUNN",
            m,
            n,
            T::ONE,
            (&r.buf[r.off..], r.ld),
            &mut b.buf[b.off..],
            b.ld,
        );
        Ok(())
    }

    fn copy(
        &mut self,
        m: usize,
        n: usize,
        a: Op<Vec<T>>,
        c: OpMut<Vec<T>>,
    ) -> Result<(), ExecError> {
        for j in 0..n {
            let src = &a.buf[a.off + j * a.ld..][..m];
            c.buf[c.off + j * c.ld..][..m].copy_from_slice(src);
        }
        Ok(())
    }

    fn sync(&mut self) -> Result<(), ExecError> {
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
