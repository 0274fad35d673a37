//! The device-resident form of the GPU path (`xstein_gpu_device`): the clusters computed in
//! the caller's Z, reading the caller's D and E, with no copy of either; the columns of blocks
//! of order 1 set there too. Every allocation and kernel load comes before Z is first written,
//! so that a GPU that cannot take the call leaves Z untouched.

use super::{columns, host_map, host_vec, shape, Arrays, Run};
use crate::device::{self, DeviceError};
use crate::stein::{Plan, SteinReal};
use cudarc::driver::{CudaSlice, LaunchConfig, PushKernelArg};

/// Blocks of order 1 as vectors of one row for the scatter kernel: ones, their rows and
/// columns of Z.
struct Units<T> {
    ones: CudaSlice<T>,
    sizes: CudaSlice<i32>,
    rows: CudaSlice<i32>,
    cols: CudaSlice<i32>,
}

/// The caller's D, E (N and N − 1 entries) and Z (`ldz` × M) on the device.
#[derive(Clone, Copy, Debug)]
pub struct OnDevice {
    pub d: u64,
    pub e: u64,
    pub z: u64,
    pub ldz: usize,
}

/// What [`into_device`] could not do, and whether Z had been written by then.
#[derive(Debug)]
pub struct Failure {
    pub error: DeviceError,
    pub z_written: bool,
}

/// The device-resident GPU path: the plan's clusters computed in the caller's Z (no copy of
/// D, E or Z), rows 0..N of the other columns of 0..`covered` (those LAPACK's block loop
/// reaches) zeroed, `units` (row, column) set to one, and the flag in `failed` set for each
/// column that failed the growth test. All memory and kernels are had before Z is first
/// written (`Failure::z_written` is false for anything that failed up to then). Returns when
/// Z holds the answer.
pub(in crate::stein) fn into_device<T: SteinReal>(
    plan: &Plan<'_, T>,
    units: &[(usize, usize)],
    covered: usize,
    at: OnDevice,
    failed: &mut [bool],
) -> Result<(), Failure> {
    let before = |error| Failure {
        error,
        z_written: false,
    };
    let n = plan.d.len();
    let gpu = device::gpu().map_err(before)?;
    let (cols, clusters) = columns(plan).map_err(before)?;
    let maxk = clusters.iter().map(|c| c.k).max().unwrap_or(1);
    let shape = shape(gpu, n, &cols, &clusters, false);
    // The units' arrays: a one, a size, a row and a column each.
    let unit_bytes = units.len() * (std::mem::size_of::<T>() + 12);
    let _reservation = gpu
        .budget
        .reserve((shape.bytes + unit_bytes) as u64)
        .map_err(before)?;
    let linalg = gpu.linalg().map_err(before)?;
    let arrays = Arrays {
        d: at.d,
        e: at.e,
        z: at.z,
        ldz: at.ldz,
        owned: Vec::new(),
    };
    let mut run = Run::new(gpu, &linalg, n, &cols, maxk, shape.batch, arrays).map_err(before)?;
    let ones = run.unit_params(units).map_err(before)?;
    let after = |error| Failure {
        error,
        z_written: true,
    };
    run.zero_columns(0, covered).map_err(after)?;
    // One group: Z is the caller's, all of it on the device already.
    run.groups(&clusters, covered, false, failed, |_, _| Ok(()))
        .map_err(after)?;
    run.set_units(units.len(), ones.as_ref()).map_err(after)?;
    run.stream.synchronize().map_err(|e| after(e.into()))?;
    Ok(())
}

impl<T: SteinReal> Run<'_, T> {
    /// The device arrays that set the `units` (row, global column) of Z to one.
    fn unit_params(&self, units: &[(usize, usize)]) -> Result<Option<Units<T>>, DeviceError> {
        if units.is_empty() {
            return Ok(None);
        }
        Ok(Some(Units {
            ones: self.upload(&host_vec(units.len(), T::ONE)?)?,
            sizes: self.upload(&host_vec(units.len(), 1i32)?)?,
            rows: self.upload(&host_map(units, |u| u.0 as i32)?)?,
            cols: self.upload(&host_map(units, |u| (u.1 - self.z0) as i32)?)?,
        }))
    }

    /// Sets the first `count` units of `u` to one (the eigenvectors of blocks of order 1).
    fn set_units(&mut self, count: usize, u: Option<&Units<T>>) -> Result<(), DeviceError> {
        let Some(u) = u.filter(|_| count > 0) else {
            return Ok(());
        };
        let (stride, ncols, ldz) = (count as i32, count as i32, self.ldz as i64);
        let mut launch = self.stream.launch_builder(&self.k.scatter);
        launch
            .arg(&u.ones)
            .arg(&stride)
            .arg(&ncols)
            .arg(&u.rows)
            .arg(&u.sizes)
            .arg(&u.cols)
            .arg(&self.z)
            .arg(&ldz);
        let cfg = LaunchConfig {
            grid_dim: ((count as u32).div_ceil(32), 1, 1),
            block_dim: (32, 8, 1),
            shared_mem_bytes: 0,
        };
        // SAFETY: stein_scatter's arguments: `count` vectors of one row, each inside Z.
        unsafe { launch.launch(cfg) }?;
        Ok(())
    }
}
