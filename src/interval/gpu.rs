//! GPU path (being written).
use super::round::Dir;
use super::{IntervalOperand, Operand};
use crate::device::DeviceError;

#[allow(clippy::too_many_arguments)]
pub fn gemm_rounded(_dir: Dir, _m: usize, _n: usize, _k: usize, _alpha: f64, _a: Operand, _b: Operand, _beta: f64, _c: &mut [f64], _ldc: usize) -> Result<(), DeviceError> {
    Err(DeviceError::MissingLibrary("interval kernels"))
}
#[allow(clippy::too_many_arguments)]
pub fn igemm_midrad(_m: usize, _n: usize, _k: usize, _a: IntervalOperand, _b: IntervalOperand, _ci: &mut [f64], _cs: &mut [f64], _ldc: usize) -> Result<(), DeviceError> {
    Err(DeviceError::MissingLibrary("interval kernels"))
}
#[allow(clippy::too_many_arguments)]
pub fn igemm_infsup(_m: usize, _n: usize, _k: usize, _a: IntervalOperand, _b: IntervalOperand, _ci: &mut [f64], _cs: &mut [f64], _ldc: usize) -> Result<(), DeviceError> {
    Err(DeviceError::MissingLibrary("interval kernels"))
}
pub struct Engine;
impl Engine {
    pub fn new(_n: usize, _a: &[f64], _lda: usize, _b: &[f64], _ldb: usize) -> Result<Self, DeviceError> {
        Err(DeviceError::MissingLibrary("interval kernels"))
    }
}
impl super::verify::Engine for Engine {
    type Error = DeviceError;
    fn invert(&mut self) -> Result<Option<usize>, DeviceError> { unreachable!() }
    fn apply_r(&mut self, _v: &[f64], _out: &mut [f64]) -> Result<(), DeviceError> { unreachable!() }
    fn residual(&mut self, _x: &[f64], _d: &mut [f64], _lo: &mut [f64], _hi: &mut [f64]) -> Result<(), DeviceError> { unreachable!() }
    fn build_c(&mut self) -> Result<bool, DeviceError> { unreachable!() }
    fn enclose_r(&mut self, _vm: &[f64], _vr: &[f64], _lo: &mut [f64], _hi: &mut [f64]) -> Result<(), DeviceError> { unreachable!() }
    fn enclose_c(&mut self, _vm: &[f64], _vr: &[f64], _lo: &mut [f64], _hi: &mut [f64]) -> Result<(), DeviceError> { unreachable!() }
}
