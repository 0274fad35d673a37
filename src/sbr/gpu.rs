//! The GPU executor (placeholder while the CPU path is built).
use super::{ExecError, Executor, Op, OpMut};
use crate::real::Real;
pub struct GpuExecutor<T>(std::marker::PhantomData<T>);
impl<T: Real> GpuExecutor<T> {
    pub fn new() -> Result<Self, ExecError> {
        Err(ExecError::Device(crate::device::DeviceError::NoDriver))
    }
}
impl<T: Real> Executor<T> for GpuExecutor<T> {
    type Buf = ();
    fn budget(&self) -> u64 {
        0
    }
    fn alloc(&mut self, _: usize) -> Result<(), ExecError> {
        todo!()
    }
    fn upload(
        &mut self,
        _: &mut (),
        _: usize,
        _: usize,
        _: &mut dyn FnMut(usize, &mut [T]),
    ) -> Result<(), ExecError> {
        todo!()
    }
    fn download(
        &mut self,
        _: &(),
        _: usize,
        _: usize,
        _: &mut dyn FnMut(usize, &[T]),
    ) -> Result<(), ExecError> {
        todo!()
    }
    fn gemm(
        &mut self,
        _: bool,
        _: bool,
        _: usize,
        _: usize,
        _: usize,
        _: T,
        _: Op<()>,
        _: Op<()>,
        _: T,
        _: OpMut<()>,
    ) -> Result<(), ExecError> {
        todo!()
    }
    fn symm(
        &mut self,
        _: usize,
        _: usize,
        _: T,
        _: Op<()>,
        _: Op<()>,
        _: T,
        _: OpMut<()>,
    ) -> Result<(), ExecError> {
        todo!()
    }
    fn syr2k(
        &mut self,
        _: usize,
        _: usize,
        _: T,
        _: Op<()>,
        _: Op<()>,
        _: T,
        _: OpMut<()>,
    ) -> Result<(), ExecError> {
        todo!()
    }
}
