//! GPU Sturm counts (kernels/stebz.cu). Placeholder until the device runtime lands.

use super::count::{CountError, Counter, SturmProblem};
use crate::real::Real;

pub struct GpuCounter<T> {
    _t: std::marker::PhantomData<T>,
}

impl<T: Real> GpuCounter<T> {
    /// Uploads the matrix once; fails (without side effects) when no GPU path is possible.
    pub fn new(_problem: &SturmProblem<'_, T>) -> Result<Self, CountError> {
        Err(CountError("the GPU path is not built yet".into()))
    }
}

impl<T: Real> Counter<T> for GpuCounter<T> {
    fn points_per_interval(&self, _intervals: usize) -> usize {
        1
    }
    fn count(&mut self, _b: &[u32], _x: &[T], _c: &mut [i32]) -> Result<(), CountError> {
        Err(CountError("the GPU path is not built yet".into()))
    }
    fn name(&self) -> &'static str {
        "gpu"
    }
}
