//! The plan of a reduction: the mode (resident or streaming, [`plan`]), the executor memory
//! each needs ([`streaming_budget`], [`sub_panels_len`]), and the block columns the trailing
//! matrix is cut into. Pure functions of the sizes.

use crate::sbr::executor::ExecError;
use crate::sbr::panel::cholqr;

/// How the trailing matrix is held by the executor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// The whole lower triangle (as an n x n array) stays in the executor.
    Resident,
    /// Block columns of `nb` columns stream through a ring of three buffers (five of 3/5 the
    /// width where an upper-stored matrix's block rows are transposed, see `Ring`).
    Streaming { nb: usize },
}

/// Chooses the mode for an n x n problem with bandwidth kd in `budget` bytes: resident if the
/// whole matrix fits beside the panels (and the look-ahead's second panel set, the next
/// panel's columns and tau), else the widest block columns that fit beside the panels, up to
/// max(2kd, 1024).
pub fn plan(n: usize, kd: usize, elem: usize, budget: u64) -> Result<Mode, ExecError> {
    let fixed = streaming_budget(n, kd, 0, elem);
    let whole = (n * n * elem) as u64;
    // With the band's staging buffer for band-only runs (`band_from_device`); less the
    // streaming mode's next `X`.
    let resident_extra =
        ((2 * n * kd + (3 + 2 * cholqr::scratch_len(1)) * kd * kd + n + (kd + 1) * (n + kd + 1))
            * elem) as u64;
    if fixed + resident_extra + whole <= budget {
        return Ok(Mode::Resident);
    }
    let per_col = (3 * n * elem) as u64;
    let nb = budget.saturating_sub(fixed) / per_col;
    if nb == 0 {
        return Err(ExecError::Budget {
            needed: fixed + per_col,
            budget,
        });
    }
    // Blocks wider than this gain nothing in the BLAS and lengthen the passes' first upload
    // and last download, which nothing overlaps.
    let widest = (2 * kd).max(1024);
    Ok(Mode::Streaming {
        nb: (nb as usize).min(n).min(widest),
    })
}

/// The bytes a streaming run with block columns of `nb` columns holds on its executor: `V`,
/// `Z`, `X` and the next step's `X` (n x kd each; `X` also holds the panel while it is factored
/// between passes, the next `X` its `V` while it is factored in a pass), two kd x kd matrices,
/// τ, the sub-panels' buffers and the ring of three block columns.
pub fn streaming_budget(n: usize, kd: usize, nb: usize, elem: usize) -> u64 {
    ((4 * n * kd + 2 * kd * kd + kd + sub_panels_len(n, kd) + 3 * n * nb) * elem) as u64
}

pub(super) fn describe(mode: Mode) -> String {
    match mode {
        Mode::Resident => "resident".into(),
        Mode::Streaming { nb } => format!("streaming, block columns of {nb}"),
    }
}

/// Columns of the sub-panels a streaming panel is factored by on the executor.
pub(super) const SUB_PANEL: usize = 64;

/// Executor entries of [`SubPanels`] for panels of at most m x k.
pub(super) fn sub_panels_len(m: usize, k: usize) -> usize {
    let w = SUB_PANEL.min(k).max(1);
    2 * m * w + 2 * w * w + cholqr::scratch_len(w) + 2 * k * w
}

/// Columns per block of the resident mode's upload and download: about half the matrix's bytes
/// move each way, since only the blocks' parts above the diagonal go too. Wide enough that a
/// download's pipeline (it drains at the end of each block) is many pieces long.
pub(super) const TRANSFER_BLOCK: usize = 1024;

/// The block columns `(first column, width)` of a trailing matrix of order `pn`, relative to
/// its start.
pub(super) fn block_columns(pn: usize, nb: usize) -> Vec<(usize, usize)> {
    (0..pn).step_by(nb).map(|c| (c, nb.min(pn - c))).collect()
}

/// The block columns of a SYMM pass over a trailing matrix of order `pn`: those of the last
/// step's SYR2K pass (`block_columns` of pn + kd) less the kd columns of this step's panel, so
/// that a pass that took the SYMM along ([`syr2k_pass`]) and one that did not (after a
/// resumption) sum in the same order.
pub(super) fn symm_columns(pn: usize, nb: usize, kd: usize) -> Vec<(usize, usize)> {
    if nb <= kd {
        return block_columns(pn, nb);
    }
    let first = (nb - kd).min(pn);
    let mut cols = vec![(0, first)];
    cols.extend(
        block_columns(pn - first, nb)
            .into_iter()
            .map(|(c, w)| (first + c, w)),
    );
    cols
}
