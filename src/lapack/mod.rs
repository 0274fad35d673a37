//! The system LAPACK and BLAS: the CPU fallback and the reference the tests compare against.
//! They are found at run time ([`symbols`]); routines taking CHARACTER arguments are declared
//! with the hidden length arguments gfortran appends.
//!
//! One file per family of routines: `tridiagonal` (xSTEBZ, xSTERF, xSTEMR, xGTSV, xSTEIN),
//! `dense` (BLAS 3 and the dense symmetric eigenvalue routines), `triangular` (xPOTRF,
//! xTRSM, xTRMM), `orthogonal` (xORMQR, xORMLQ, xSTEQR, xSTEDC, xSYEV with vectors: the
//! eigenvector back-transformation) and `lu` (DGETRF, DGETRS); their traits and functions are re-exported here.

mod dense;
mod lu;
mod orthogonal;
pub mod signatures;
pub mod symbols;
mod triangular;
mod tridiagonal;

pub use dense::Dense;
pub use lu::{dgetrf, dgetrs};
pub use orthogonal::Orthogonal;
pub use triangular::{Triangular, TriangularOp};
pub use tridiagonal::{Lapack, LapackStein, StebzCounts};

use std::os::raw::c_int;

/// Length-checked raw pointer for an array LAPACK may index up to `need` entries.
fn ptr_for<T>(s: &[T], need: usize) -> *const T {
    assert!(
        s.len() >= need,
        "array of {} entries, LAPACK needs {}",
        s.len(),
        need
    );
    s.as_ptr()
}

fn mut_ptr_for<T>(s: &mut [T], need: usize) -> *mut T {
    assert!(
        s.len() >= need,
        "array of {} entries, LAPACK needs {}",
        s.len(),
        need
    );
    s.as_mut_ptr()
}

/// A column-major matrix operand: the slice starting at its first entry, and its leading
/// dimension.
pub type Mat<'a, T> = (&'a [T], usize);

fn c_int_of(x: usize) -> c_int {
    c_int::try_from(x).expect("dimension exceeds LAPACK's 32-bit INTEGER")
}

/// Entries a column-major `rows` x `cols` operand with leading dimension `ld` spans.
pub fn span(rows: usize, cols: usize, ld: usize) -> usize {
    if rows == 0 || cols == 0 {
        0
    } else {
        ld * (cols - 1) + rows
    }
}
