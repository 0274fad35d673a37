//! The host workspace of one xSTEBZ call, sized in one place (the family's LWORK): every
//! array whose size depends on N is allocated here, fallibly and before anything is computed,
//! and the stages ([`solve`](super::solve),
//! [`multisection`](super::multisection::multisection), the sort) take their memory from it.
//! When it cannot be allocated, the caller falls back to the system LAPACK, which needs only
//! 4N reals and 3N integers (see [`stebz_or_lapack`](super::stebz_or_lapack)).
//!
//! The bounds: at most N blocks; the active intervals of a step hold disjoint sets of
//! eigenvalues, one at least each, so a step has at most N of them, and consuming it leaves at
//! most N intervals and N fills; a step places at most [`Plan::points`] points (the
//! multisection lowers its levels until its points fit): 2N, or 127 per row up to 2²².

use super::args::{decode_order, Order};
use super::blocks::Prep;
use super::multisection::{BlockRun, Fill, Interval, MAX_LEVELS};
use crate::host::{try_room, try_vec, try_zeroed};
use crate::real::Real;
use std::mem::size_of;

/// Points per row a step may place, up to [`POINTS_CAP`]: the GPU's cost model asks for up to
/// 127 points per interval while there are thousands of intervals (n = 8000); room for only
/// 2N points forced fewer levels per step and made the GPU path 1.5–4× slower there (H200,
/// 2026-11-26, `hylapack bench stebz`).
const POINTS_PER_ROW: usize = 127;
/// The most points the per-row rule asks for: 2²² (64 MiB of points, counts and blocks in
/// double precision); beyond it steps place 2N at most, as large problems need few levels.
const POINTS_CAP: usize = 1 << 22;

/// The sizes of the workspace of a call with N rows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Plan {
    /// N: per-row and per-block arrays, the intervals and the fills.
    pub n: usize,
    /// Points one multisection step (or the count at the blocks' ends, 2 per block) may place.
    pub points: usize,
    /// Nodes of the tournament tree of the ORDER = 'E' sort (0 for ORDER = 'B').
    pub tree: usize,
}

impl Plan {
    /// The workspace of a call with `n` rows and the given ORDER.
    pub(super) fn new(n: usize, order: Order) -> Plan {
        Plan {
            n,
            points: (2 * n)
                .max((POINTS_PER_ROW * n).min(POINTS_CAP))
                .max((1 << MAX_LEVELS) - 1),
            tree: match order {
                Order::Entire => 2 * n.next_power_of_two(),
                Order::ByBlock => 0,
            },
        }
    }

    /// Bytes the workspace takes in precision `T`.
    pub fn bytes<T: Real>(&self) -> usize {
        let per_row = size_of::<T>()
            + size_of::<usize>()
            + size_of::<Prep<T>>()
            + size_of::<BlockRun<T>>()
            + 2 * size_of::<Interval<T>>()
            + size_of::<Fill<T>>()
            + size_of::<u8>();
        let per_point = size_of::<T>() + size_of::<u32>() + size_of::<i32>();
        self.n * per_row + self.points * per_point + self.tree * size_of::<u32>()
    }
}

/// Bytes of host workspace a call with `n` rows and ORDER `order` (`b'B'` or `b'E'`) allocates
/// in precision `T` (the scratch query; `None` for an illegal ORDER).
pub fn scratch_bytes<T: Real>(n: usize, order: u8) -> Option<usize> {
    Some(Plan::new(n, decode_order(order)?).bytes::<T>())
}

/// The workspace itself: one array per use, each of the length its [`Plan`] gives. The point
/// arrays are reserved, not written: a step fills only the part it uses (with
/// [`take_room`](crate::host::take_room)), so a call pays for the points it places, not for
/// the most it might.
pub(super) struct Scratch<T> {
    pub e2: Vec<T>,
    pub ends: Vec<usize>,
    pub preps: Vec<Prep<T>>,
    pub runs: Vec<BlockRun<T>>,
    pub active: Vec<Interval<T>>,
    pub next: Vec<Interval<T>>,
    pub fills: Vec<Fill<T>>,
    pub levels: Vec<u8>,
    pub xs: Vec<T>,
    pub blocks: Vec<u32>,
    pub counts: Vec<i32>,
    pub tree: Vec<u32>,
}

impl<T: Real> Scratch<T> {
    /// Allocates the whole plan, or nothing (`None`) if any part cannot be allocated.
    pub fn try_new(plan: &Plan) -> Option<Scratch<T>> {
        let n = plan.n;
        let interval = Interval {
            lo: T::ZERO,
            hi: T::ZERO,
            nlo: 0,
            nhi: 0,
            depth: 0,
            blk: 0,
        };
        let fill = Fill {
            iwoff: 0,
            nlo: 0,
            nhi: 0,
            value: T::ZERO,
            ib: 0,
        };
        Some(Scratch {
            e2: try_zeroed(n)?,
            ends: try_zeroed(n)?,
            preps: try_vec(n, Prep::Skip)?,
            runs: try_vec(n, BlockRun::default())?,
            active: try_vec(n, interval)?,
            next: try_vec(n, interval)?,
            fills: try_vec(n, fill)?,
            levels: try_zeroed(n)?,
            xs: try_room(plan.points)?,
            blocks: try_room(plan.points)?,
            counts: try_room(plan.points)?,
            tree: try_zeroed(plan.tree)?,
        })
    }
}
