//! The order of the output: RANGE = 'I' drops the eigenvalues outside IL ..= IU that the
//! search's (WL, WU] let in, as LAPACK does, and ORDER = 'E' sorts W (and IBLOCK with it) with
//! LAPACK's own, unstable, sort.

use super::args::Job;
use super::multisection::Output;
use crate::real::Real;

/// RANGE = 'I': (WL, WU] holds eigenvalues NWL + 1 ..= NWU; drops those outside IL ..= IU
/// from the first `m` of `out`, those at or below WLU and at or above WUL first (`inner` is
/// (WLU, WUL), `outer` (WL, WU)). Returns the new M, and whether too few were left (INFO 2).
pub(super) fn discard<T: Real>(
    job: &Job<'_, T>,
    out: &mut Output<'_, T>,
    mut m: i64,
    nwl: i64,
    nwu: i64,
    outer: (T, T),
    inner: (T, T),
) -> (i64, bool) {
    let n = job.d.len();
    let ((wl, wu), (wlu, wul)) = (outer, inner);
    let (w, iblock) = (&mut *out.w, &mut *out.iblock);
    let mut idiscl = job.il as i64 - 1 - nwl;
    let mut idiscu = nwu - job.iu as i64;
    let mut mm = m.clamp(0, n as i64) as usize;
    if idiscl > 0 || idiscu > 0 {
        let mut kept = 0;
        for je in 0..mm {
            if w[je] <= wlu && idiscl > 0 {
                idiscl -= 1;
            } else if w[je] >= wul && idiscu > 0 {
                idiscu -= 1;
            } else {
                w[kept] = w[je];
                iblock[kept] = iblock[je];
                kept += 1;
            }
        }
        mm = kept;
        m = kept as i64;
    }
    if idiscl > 0 || idiscu > 0 {
        // Non-monotone counts left eigenvalues to discard outside (WL, WLU] or
        // (WUL, WU]: drop the smallest IDISCL and the largest IDISCU instead.
        kill_extremes(&w[..mm], &mut iblock[..mm], idiscl, wu, |a, b| a < b);
        kill_extremes(&w[..mm], &mut iblock[..mm], idiscu, wl, |a, b| a > b);
        let mut kept = 0;
        for je in 0..mm {
            if iblock[je] != 0 {
                w[kept] = w[je];
                iblock[kept] = iblock[je];
                kept += 1;
            }
        }
        m = kept as i64;
    }
    (m, idiscl < 0 || idiscu < 0)
}

/// Marks with IBLOCK = 0 the `count` most extreme eigenvalues (by `beyond`), as LAPACK does:
/// each round takes the first not yet marked, then any further beyond the last one taken.
fn kill_extremes<T: Real>(
    w: &[T],
    iblock: &mut [i32],
    count: i64,
    start: T,
    beyond: impl Fn(T, T) -> bool,
) {
    let mut wkill = start;
    for _ in 0..count.max(0) {
        let mut iw = None;
        for je in 0..w.len() {
            if iblock[je] != 0 && (beyond(w[je], wkill) || iw.is_none()) {
                iw = Some(je);
                wkill = w[je];
            }
        }
        if let Some(iw) = iw {
            iblock[iw] = 0;
        }
    }
}

/// LAPACK's ORDER = 'E' sort: for each position in turn, swap in the first occurrence of the
/// smallest later value if it is smaller. It is not stable, and which of two equal eigenvalues
/// of different blocks comes first shows in IBLOCK, so it is reproduced exactly — in
/// O(M log M) with a tournament tree over positions (ties go to the earlier position), or
/// literally when M is small or W holds a NaN (no total order). `tree` holds the tree's
/// `2 · M.next_power_of_two()` nodes (M < 2^31).
pub(super) fn sort_like_lapack<T: Real>(w: &mut [T], iblock: &mut [i32], tree: &mut [u32]) {
    let m = w.len();
    if m < 2 {
        return;
    }
    if m <= 32 || w.iter().any(|v| v.is_nan()) {
        for je in 0..m - 1 {
            let mut ie = None;
            let mut low = w[je];
            for (j, &v) in w.iter().enumerate().skip(je + 1) {
                if v < low {
                    ie = Some(j);
                    low = v;
                }
            }
            if let Some(ie) = ie {
                w.swap(ie, je);
                iblock.swap(ie, je);
            }
        }
        return;
    }
    let size = m.next_power_of_two();
    const NONE: u32 = u32::MAX;
    // tree[node] = position of the first minimum among the leaves under node.
    let tree = &mut tree[..2 * size];
    tree.fill(NONE);
    let pick = |w: &[T], a: u32, b: u32| -> u32 {
        if a == NONE {
            b
        } else if b == NONE {
            a
        } else if w[b as usize] < w[a as usize] {
            b
        } else {
            a
        }
    };
    for (p, slot) in tree[size..size + m].iter_mut().enumerate() {
        *slot = p as u32;
    }
    for node in (1..size).rev() {
        tree[node] = pick(w, tree[2 * node], tree[2 * node + 1]);
    }
    for je in 0..m - 1 {
        // First minimum of w[je + 1 ..].
        let (mut l, mut r) = (je + 1 + size, m + size);
        let (mut best_l, mut best_r) = (NONE, NONE);
        while l < r {
            if l & 1 == 1 {
                best_l = pick(w, best_l, tree[l]);
                l += 1;
            }
            if r & 1 == 1 {
                r -= 1;
                best_r = pick(w, tree[r], best_r);
            }
            l >>= 1;
            r >>= 1;
        }
        let ie = pick(w, best_l, best_r);
        if ie != NONE && w[ie as usize] < w[je] {
            let ie = ie as usize;
            w.swap(ie, je);
            iblock.swap(ie, je);
            let mut node = (ie + size) / 2;
            while node >= 1 {
                tree[node] = pick(w, tree[2 * node], tree[2 * node + 1]);
                node /= 2;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testmat::Rng;

    /// The tournament-tree sort gives LAPACK's permutation, ties across blocks included.
    #[test]
    fn sort_matches_selection_sort() {
        let mut rng = Rng::new(11);
        for m in [33usize, 50, 200, 1000] {
            let w0: Vec<f64> = (0..m)
                .map(|_| [0.0, -0.0, 1.0, 2.5, -3.0][rng.below(5)] + rng.below(3) as f64)
                .collect();
            let b0: Vec<i32> = (0..m as i32).collect();
            let (mut w1, mut b1) = (w0.clone(), b0.clone());
            let mut tree = vec![0; 2 * m.next_power_of_two()];
            sort_like_lapack(&mut w1, &mut b1, &mut tree);
            let (mut w2, mut b2) = (w0.clone(), b0.clone());
            for je in 0..m - 1 {
                let mut ie = None;
                let mut low = w2[je];
                for (j, &v) in w2.iter().enumerate().skip(je + 1) {
                    if v < low {
                        ie = Some(j);
                        low = v;
                    }
                }
                if let Some(ie) = ie {
                    w2.swap(ie, je);
                    b2.swap(ie, je);
                }
            }
            assert_eq!(b1, b2, "m = {m}");
            assert!(w1.iter().zip(&w2).all(|(a, b)| a.to_bits() == b.to_bits()));
        }
    }
}
