//! Inverse iteration on the host, one stage per function, as xSTEIN composes xLAGTF, xLAGTS,
//! xDOT/xAXPY and xNRM2: [`factor`] (LU of T − λI with partial pivoting), [`solve`] (with
//! xLAGTS's perturbation of tiny pivots), [`reorthogonalize`] (modified Gram–Schmidt against
//! the cluster's earlier vectors), [`normalize`], and [`cluster_vectors`], which drives them for
//! one cluster of the plan. A GPU version replaces stages, not the driver's decisions.

use super::random::Larnv;
use super::{EXTRA, MAXITS};
use crate::host::{try_room, NoMemory};
use crate::real::Real;

/// The factors `T − λI = P L U` of one block, in xLAGTF's layout, and xLAGTS's perturbation.
#[derive(Clone, Debug, Default)]
pub struct Factors<T> {
    /// The diagonal of U (n).
    pub u0: Vec<T>,
    /// The first superdiagonal of U (n − 1).
    pub u1: Vec<T>,
    /// The second superdiagonal of U (n − 2; nonzero only after an interchange).
    pub u2: Vec<T>,
    /// The multipliers of L (n − 1).
    pub l: Vec<T>,
    /// Whether step k interchanged rows k and k + 1.
    pub swapped: Vec<bool>,
    /// The perturbation xLAGTS adds to a tiny pivot (its TOL, computed from U as xSTEIN asks:
    /// `EPS · max |u_ij|`, or `EPS` when U is zero; EPS half an ulp).
    pub tol: T,
}

/// LU of `T − λI` with partial pivoting and implicit row scaling (xLAGTF), for the block with
/// diagonal `d` (n ≥ 2) and off-diagonal `e` (n − 1). xLAGTF's IN(N), the first nearly
/// singular pivot, is not computed: xSTEIN does not use it.
pub fn factor<T: Real>(d: &[T], e: &[T], lambda: T, f: &mut Factors<T>) {
    let n = d.len();
    debug_assert!(n >= 2 && e.len() + 1 >= n);
    let (a, b, c) = (&mut f.u0, &mut f.u1, &mut f.l);
    a.clear();
    a.extend_from_slice(d);
    b.clear();
    b.extend_from_slice(&e[..n - 1]);
    c.clear();
    c.extend_from_slice(&e[..n - 1]);
    f.u2.clear();
    f.u2.resize(n - 2, T::ZERO);
    f.swapped.clear();
    f.swapped.resize(n - 1, false);

    a[0] = a[0] - lambda;
    let mut scale1 = a[0].abs() + b[0].abs();
    for k in 0..n - 1 {
        a[k + 1] = a[k + 1] - lambda;
        let mut scale2 = c[k].abs() + a[k + 1].abs();
        if k + 2 < n {
            scale2 = scale2 + b[k + 1].abs();
        }
        let piv1 = if a[k] == T::ZERO {
            T::ZERO
        } else {
            a[k].abs() / scale1
        };
        if c[k] == T::ZERO {
            scale1 = scale2;
            continue;
        }
        // Written so that a NaN ratio interchanges, as xLAGTF's `PIV2 ≤ PIV1` test does.
        let piv2 = c[k].abs() / scale2;
        if piv2 <= piv1 {
            scale1 = scale2;
            c[k] = c[k] / a[k];
            a[k + 1] = a[k + 1] - c[k] * b[k];
        } else {
            f.swapped[k] = true;
            let mult = a[k] / c[k];
            a[k] = c[k];
            let next = a[k + 1];
            a[k + 1] = b[k] - mult * next;
            if k + 2 < n {
                f.u2[k] = b[k + 1];
                b[k + 1] = -mult * f.u2[k];
            }
            b[k] = next;
            c[k] = mult;
        }
    }

    let big = a
        .iter()
        .chain(b.iter())
        .chain(f.u2.iter())
        .fold(T::ZERO, |m, x| m.max(x.abs()));
    f.tol = if big * T::EPS == T::ZERO {
        T::EPS
    } else {
        big * T::EPS
    };
}

/// Solves `(T − λI) x = s y` in place with the factors (xLAGTS, JOB = −1): the permuted forward
/// elimination with L, then back substitution with U, where a pivot too small to divide by
/// without overflow is moved away from zero by `tol`, `2 tol`, `4 tol`, … with its own sign.
///
/// Unlike xLAGTS, the back substitution rescales the whole vector (solved and unsolved parts
/// alike, so the result solves for a scaled right-hand side, `0 < s ≤ 1`) whenever an entry
/// grows past what the next step can multiply by U without overflow. A shift that is an
/// eigenvalue of many weakly coupled copies of one block grows the solution by a factor per
/// copy, past the range of the type; xLAGTS then overflows and xSTEIN returns a zero or
/// meaningless vector, while the rescaled iterate keeps its direction, which is all inverse
/// iteration needs. Inputs that do not come near overflow are solved exactly as xLAGTS does.
pub fn solve<T: Real>(f: &Factors<T>, y: &mut [T]) {
    let n = f.u0.len();
    debug_assert_eq!(y.len(), n);
    for k in 1..n {
        if f.swapped[k - 1] {
            let prev = y[k - 1];
            y[k - 1] = y[k];
            y[k] = prev - f.l[k - 1] * y[k];
        } else {
            y[k] = y[k] - f.l[k - 1] * y[k - 1];
        }
    }
    let sfmin = T::SAFE_MIN;
    let bignum = T::ONE / sfmin;
    // |u_ij| ≤ tol / EPS, so with every |x_j| ≤ limit a step's sum stays below 3/4 bignum.
    let limit = bignum / (T::TWO * T::TWO * (f.tol / T::EPS).max(T::ONE));
    for k in (0..n).rev() {
        let mut temp = y[k];
        if k + 1 < n {
            temp = temp - f.u1[k] * y[k + 1];
        }
        if k + 2 < n {
            temp = temp - f.u2[k] * y[k + 2];
        }
        let mut ak = f.u0[k];
        // SIGN(TOL, AK): the sign bit of AK, so −0 perturbs downwards as gfortran's SIGN does.
        let mut pert = if ak.to_f64().is_sign_negative() {
            -f.tol
        } else {
            f.tol
        };
        loop {
            let absak = ak.abs();
            if absak < T::ONE {
                if absak < sfmin {
                    if absak == T::ZERO || temp.abs() * sfmin > absak {
                        ak = ak + pert;
                        pert = T::TWO * pert;
                        continue;
                    }
                    temp = temp * bignum;
                    ak = ak * bignum;
                } else if temp.abs() > absak * bignum {
                    ak = ak + pert;
                    pert = T::TWO * pert;
                    continue;
                }
            }
            break;
        }
        y[k] = temp / ak;
        // Finite: the loop above leaves |temp / ak| ≤ bignum.
        if y[k].abs() > limit {
            let scale = T::ONE / y[k].abs();
            for v in y.iter_mut() {
                *v = *v * scale;
            }
        }
    }
}

/// `xᵀy` with eight partial sums (the order of summation is not LAPACK's xDOT's either way).
fn dot<T: Real>(x: &[T], y: &[T]) -> T {
    let mut acc = [T::ZERO; 8];
    let (xc, yc) = (x.chunks_exact(8), y.chunks_exact(8));
    let (xr, yr) = (xc.remainder(), yc.remainder());
    for (a, b) in xc.zip(yc) {
        for i in 0..8 {
            acc[i] = acc[i] + a[i] * b[i];
        }
    }
    let mut tail = T::ZERO;
    for (a, b) in xr.iter().zip(yr) {
        tail = tail + *a * *b;
    }
    ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7])) + tail
}

/// Modified Gram–Schmidt: for each unit vector `q` of `basis` in turn, `x ← x − (qᵀx) q`
/// (xSTEIN's loop over GPIND ≤ i < J; O(n k) for k basis vectors).
pub fn reorthogonalize<'a, T: Real>(x: &mut [T], basis: impl IntoIterator<Item = &'a [T]>) {
    for q in basis {
        let coef = -dot(x, q);
        for (xi, qi) in x.iter_mut().zip(q) {
            *xi = *xi + coef * *qi;
        }
    }
}

/// The first index of the largest |x_i| (IxAMAX; a NaN is never the largest).
pub fn iamax<T: Real>(x: &[T]) -> usize {
    let mut best = 0;
    let mut max = x[0].abs();
    for (i, v) in x.iter().enumerate().skip(1) {
        if v.abs() > max {
            best = i;
            max = v.abs();
        }
    }
    best
}

/// Scales `x` to unit 2-norm with its largest-magnitude component (the first, on ties)
/// positive, as xSTEIN accepts an iterate. The norm is nearly correctly rounded (as the
/// extended-precision xNRM2 of OpenBLAS's x86 kernels gives it): the entries are scaled by a
/// power of two near the largest one's reciprocal (exact, so nothing overflows or underflows
/// where the vector is finite), their squares summed in double-double, and the square root
/// corrected once. A norm a few ulps off showed in ZᵀZ − I as several ulps where LAPACK's is
/// below one.
pub fn normalize<T: Real>(x: &mut [T]) {
    let jmax = iamax(x);
    let big = x[jmax].abs().to_f64();
    let norm = if big > 0.0 && big.is_finite() {
        // 2^-e with big = m·2^e, m in [0.5, 1): the scaled entries are at most 1.
        let (_, e) = frexp(big);
        let (up, down) = (pow2(-e), pow2(e));
        let (mut hi, mut lo) = (0.0f64, 0.0f64);
        for v in x.iter() {
            let a = v.to_f64() * up;
            let p = a * a;
            let p_err = a.mul_add(a, -p);
            let s = hi + p;
            let t = s - hi;
            lo += (hi - (s - t)) + (p - t) + p_err;
            hi = s;
        }
        let (hi, lo) = (hi + lo, lo - ((hi + lo) - hi));
        let r = hi.sqrt();
        let r = r + ((-r).mul_add(r, hi) + lo) / (2.0 * r);
        r * down
    } else {
        x.iter().map(|v| v.to_f64().powi(2)).sum::<f64>().sqrt()
    };
    let mut scale = T::from_f64(1.0 / norm);
    if x[jmax] < T::ZERO {
        scale = -scale;
    }
    for v in x.iter_mut() {
        *v = *v * scale;
    }
}

/// `(m, e)` with `x = m · 2^e`, `0.5 ≤ |m| < 1`, for finite non-zero `x`.
fn frexp(x: f64) -> (f64, i32) {
    let bits = x.to_bits();
    let exp = ((bits >> 52) & 0x7ff) as i32;
    if exp == 0 {
        // Subnormal: scale into the normal range first.
        let (m, e) = frexp(x * pow2(64));
        return (m, e - 64);
    }
    let e = exp - 1022;
    (x * pow2(-e), e)
}

/// 2^e for `|e| ≤ 1022` (exactly representable).
fn pow2(e: i32) -> f64 {
    f64::from_bits(((e + 1023) as u64) << 52)
}

/// One cluster of the plan: eigenvalues of one block of order ≥ 2 whose vectors are
/// orthogonalized against each other.
pub struct ClusterJob<'a, T> {
    /// The block's diagonal and off-diagonal (`e.len() == d.len() − 1`).
    pub d: &'a [T],
    pub e: &'a [T],
    /// The block's first row in T (0-based) and T's order N.
    pub row0: usize,
    pub n: usize,
    /// xSTEIN's ONENRM (the block's 1-norm) and DTPCRT (the norm-growth threshold).
    pub onenrm: T,
    pub dtpcrt: T,
    /// The shifts (the eigenvalues after xSTEIN's perturbation of close ones) and the seed of
    /// each starting vector, one per column.
    pub shifts: &'a [T],
    pub seeds: &'a [u64],
}

/// The scratch of one thread: an iterate and the factors of blocks of up to `rows` rows.
pub struct Workspace<T> {
    x: Vec<T>,
    factors: Factors<T>,
}

impl<T: Real> Workspace<T> {
    /// The scratch for blocks of up to `rows` rows, or `None` if it cannot be allocated.
    pub fn try_new(rows: usize) -> Option<Workspace<T>> {
        Some(Workspace {
            x: try_room(rows)?,
            factors: Factors {
                u0: try_room(rows)?,
                u1: try_room(rows)?,
                u2: try_room(rows)?,
                l: try_room(rows)?,
                swapped: try_room(rows)?,
                tol: T::ZERO,
            },
        })
    }

    /// The bytes [`Workspace::try_new`] asks for (as the failure to report).
    pub fn bytes(rows: usize) -> NoMemory {
        NoMemory::of::<T>(rows.saturating_mul(6))
    }
}

/// Computes the cluster's eigenvectors into the columns of `z` (leading dimension `ldz`,
/// column k for shift k; rows outside the block set to zero) and flags in `failed` the columns
/// that did not converge within MAXITS iterations. `work` has room for the block.
pub fn cluster_vectors<T: Real>(
    job: &ClusterJob<'_, T>,
    z: &mut [T],
    ldz: usize,
    failed: &mut [bool],
    work: &mut Workspace<T>,
) {
    let size = job.d.len();
    let rows = job.row0..job.row0 + size;
    let Workspace { x, factors: f } = work;
    assert!(x.capacity() >= size, "workspace sized too small");
    x.clear();
    x.resize(size, T::ZERO);
    let scale_base = T::from_usize(size) * job.onenrm;
    for (k, (&shift, &seed)) in job.shifts.iter().zip(job.seeds).enumerate() {
        Larnv::at(seed).fill(x);
        factor(job.d, job.e, shift, f);
        let earlier = &z[..k * ldz];
        let basis = || (0..k).map(|i| &earlier[i * ldz + rows.start..i * ldz + rows.end]);
        let (mut its, mut norm_checks) = (0, 0);
        loop {
            its += 1;
            if its > MAXITS {
                failed[k] = true;
                break;
            }
            // Scale the right-hand side so that its largest entry is size · ‖T‖ · max(ulp,
            // |u_nn|), xSTEIN's guard against overflow in the solve.
            let top = x[iamax(x)].abs();
            let scale = scale_base * T::ULP.max(f.u0[size - 1].abs()) / top;
            for v in x.iter_mut() {
                *v = *v * scale;
            }
            solve(f, x);
            reorthogonalize(x, basis());
            // Accept after EXTRA more iterations once the iterate has grown past DTPCRT.
            if x[iamax(x)].abs() < job.dtpcrt {
                continue;
            }
            norm_checks += 1;
            if norm_checks > EXTRA {
                break;
            }
        }
        normalize(x);
        let column = &mut z[k * ldz..k * ldz + job.n];
        column.fill(T::ZERO);
        column[rows.clone()].copy_from_slice(x);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// P L U from the factors reproduces T − λI times a vector (through a solve).
    #[test]
    fn factor_then_solve_inverts_the_shifted_matrix() {
        let d = [4.0f64, -1.0, 2.5, 0.3, 1.0];
        let e = [1.0f64, 3.0, -0.5, 2.0];
        let lambda = 0.7;
        let mut f = Factors::default();
        factor(&d, &e, lambda, &mut f);
        assert!(f.swapped.iter().any(|&s| s), "this matrix pivots");
        let x = [1.0f64, -2.0, 0.5, 3.0, -1.0];
        let mut y: Vec<f64> = (0..5)
            .map(|i| {
                let mut s = (d[i] - lambda) * x[i];
                if i > 0 {
                    s += e[i - 1] * x[i - 1];
                }
                if i < 4 {
                    s += e[i] * x[i + 1];
                }
                s
            })
            .collect();
        solve(&f, &mut y);
        for (a, b) in y.iter().zip(&x) {
            assert!((a - b).abs() < 1e-13, "{y:?}");
        }
    }

    /// A zero pivot (λ an eigenvalue of a 2 × 2 block) is perturbed, not divided by.
    #[test]
    fn exact_eigenvalue_gives_a_finite_eigenvector() {
        let (d, e) = ([1.0f64, 1.0], [1.0f64]);
        let mut f = Factors::default();
        factor(&d, &e, 2.0, &mut f);
        let mut y = vec![1.0, 1.0];
        solve(&f, &mut y);
        assert!(y.iter().all(|v| v.is_finite()));
        normalize(&mut y);
        let s = 0.5f64.sqrt();
        assert!(
            (y[0] - s).abs() < 1e-15 && (y[1] - s).abs() < 1e-15,
            "{y:?}"
        );
    }
}
