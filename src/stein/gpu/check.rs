//! Stage 5 of the GPU path: its own test of the answer before it is returned.

use super::{download_all, failure, host_map, host_vec, ptr, Cluster, Col, Run, PANEL};
use crate::device::DeviceError;
use crate::stein::SteinReal;
use cudarc::driver::{DevicePtrMut, LaunchConfig, PushKernelArg};

/// The largest residual and orthogonality ratio ([`Run::check`], in the units of LAPACK's
/// tests) the GPU path returns: the threshold of LAPACK's own SEP tests, so that it returns
/// nothing those would fail. In this crate's stein tests on an H200 (489 checks) the worst
/// residuals were 0.65 or below, or past 7000 (refused); one case at 115 (single precision,
/// clusters agreeing to working precision: `tests/stein.rs`, copies of one block) passed the
/// earlier limit of 250.
pub const CHECK_LIMIT: f64 = 50.0;

impl<T: SteinReal> Run<'_, T> {
    /// Stage 5, the path's own test of its answer: every vector's residual
    /// ‖T z − λ z‖₁ / (‖T‖₁ N ulp) (λ the eigenvalue given, not the perturbed shift) and, per
    /// cluster, ‖ZᵀZ − I‖₁ / (N ulp) (one GEMM per panel, the lower half of the Gram matrix,
    /// whose column sums count each entry below the diagonal twice) at most [`CHECK_LIMIT`],
    /// or the call fails here and the caller runs the host path. (A rank-deficient matrix's
    /// tridiagonal, 993 eigenvalues equal to working precision in one cluster, came out 1e5
    /// times past both with INFO = 0.)
    pub(super) fn check(&mut self, group: &[Cluster], cols: &[Col<T>]) -> Result<(), DeviceError> {
        let ulp = T::ULP.to_f64();
        let (row0, size, _, _, col) = self.params(cols)?;
        // Against the eigenvalues given, as LAPACK's tests measure: in a cluster of equal
        // eigenvalues the shifts drift by 10 ulp per column, which alone made good vectors
        // score 250 at n = 1000.
        let lambda = self.upload(&host_map(cols, |c| c.eigenvalue)?)?;
        let mut resid = self.stream.alloc_zeros::<f64>(cols.len())?;
        let ldz = self.ldz as i64;
        let mut launch = self.stream.launch_builder(&self.k.residual);
        launch
            .arg(&self.z)
            .arg(&ldz)
            .arg(&col)
            .arg(&row0)
            .arg(&size)
            .arg(&lambda)
            .arg(&self.d)
            .arg(&self.e)
            .arg(&mut resid);
        let cfg = LaunchConfig {
            grid_dim: (cols.len() as u32, 1, 1),
            block_dim: (256, 1, 1),
            shared_mem_bytes: 0,
        };
        // SAFETY: stein_residual's arguments; every column's block lies inside Z, D and E.
        unsafe { launch.launch(cfg) }?;
        // One column sum of |ZᵀZ − I| per column of each checked cluster, from `first[g]`.
        let mut first = host_vec(group.len(), 0usize)?;
        let mut columns = 0;
        for (c, at) in group.iter().zip(&mut first) {
            *at = columns;
            if c.k >= 2 {
                columns += c.k;
            }
        }
        let mut sums = self.stream.alloc_zeros::<f64>(columns.max(1))?;
        let coef = ptr(&self.coef, &self.stream);
        // Written by the kernels below, on this stream.
        let sums_base = sums.device_ptr_mut(&self.stream).0;
        for (c, &at) in group.iter().zip(&first).filter(|(c, _)| c.k >= 2) {
            for p in (0..c.k).step_by(PANEL) {
                let bp = PANEL.min(c.k - p);
                // The panel's columns against themselves and the later ones (ZᵀZ is
                // symmetric): rows p.. of the product, its diagonal at (i, i).
                let rows = c.k - p;
                let zp = self.zp(c.row0, c.col + p);
                // SAFETY: the cluster's columns lie inside Z (rows row0..row0+size, leading
                // dimension N); the (k − p) × bp product fits `coef` (maxk × PANEL).
                unsafe {
                    self.blas.gemm(
                        true,
                        false,
                        (rows, bp, c.size),
                        1.0,
                        (zp, self.ldz),
                        (zp, self.ldz),
                        0.0,
                        (coef, rows),
                    )?;
                }
                let k = rows as i32;
                let mut launch = self.stream.launch_builder(&self.k.offdiag);
                let out = sums_base + ((at + p) * 8) as u64;
                launch.arg(&self.coef).arg(&k).arg(&out);
                let cfg = LaunchConfig {
                    grid_dim: (bp as u32, 1, 1),
                    block_dim: (256, 1, 1),
                    shared_mem_bytes: 0,
                };
                // SAFETY: stein_offdiag's arguments; (k − p) × bp entries of `coef`, `out` the
                // sums of the cluster's columns p..k, inside `sums`.
                unsafe { launch.launch(cfg) }?;
            }
        }
        let resid = download_all(&self.stream, &resid, 0.0)?;
        let sums = download_all(&self.stream, &sums, 0.0)?;
        // Each cluster's ‖ZᵀZ − I‖₁ (NaN if any sum is).
        let mut orth = host_vec(group.len(), 0.0f64)?;
        for ((c, &at), o) in group.iter().zip(&first).zip(&mut orth) {
            if c.k >= 2 {
                *o = sums[at..at + c.k].iter().fold(0.0, |m: f64, &x| {
                    if x.is_nan() || m.is_nan() {
                        f64::NAN
                    } else {
                        m.max(x)
                    }
                });
            }
        }
        // The units of LAPACK's tests (and of this crate's): N ulp, and for the residual
        // ‖T‖₁, the largest of the blocks' (the split-off entries are below the tolerance).
        let unit = self.n as f64 * ulp;
        let t_norm = self
            .cols
            .iter()
            .fold(0.0f64, |m, c| m.max(c.scale_base.to_f64() / c.size as f64));
        // The worst ratios of every checked group, for judging the limit against real runs.
        crate::log::debug(|| {
            let worst_r = resid.iter().fold(0.0f64, |m, r| m.max(r / (t_norm * unit)));
            let worst_o = orth.iter().fold(0.0f64, |m, &o| m.max(o / unit));
            format!(
                "stein gpu check: {} columns, worst residual {worst_r:.3}, worst orthogonality \
                 {worst_o:.3} (limit {CHECK_LIMIT})",
                cols.len()
            )
        });
        for (c, r) in cols.iter().zip(&resid) {
            let ratio = r / (t_norm * unit);
            if ratio.is_nan() || ratio > CHECK_LIMIT {
                return Err(failure(format!(
                    "column {}: residual {ratio:.3e} × N ulp ‖T‖₁",
                    c.col
                )));
            }
        }
        for (c, &o) in group.iter().zip(&orth) {
            let ratio = o / unit;
            if ratio.is_nan() || ratio > CHECK_LIMIT {
                return Err(failure(format!(
                    "cluster at column {} ({} vectors): orthogonality {ratio:.3e} × N ulp",
                    c.col, c.k
                )));
            }
        }
        Ok(())
    }
}
