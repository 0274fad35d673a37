//! Directed rounding on the CPU without touching the FPU's rounding mode (Rust and LLVM assume
//! round-to-nearest): each operation is done to nearest, its exact error is found by an
//! error-free transformation (TwoSum, TwoProduct with FMA, the FMA residual of a square root),
//! and the result moves one ulp when the error points the other way.
//!
//! Overflow is handled as the directed IEEE modes do: a finite operation whose exact value is
//! below −MAX rounds up to −MAX, not −∞ (and symmetrically for rounding down). Results equal
//! the IEEE directed modes' except for products in the underflow range (below ~1e-270), where
//! the FMA residual can itself underflow: there a result may lie one ulp beyond the directed
//! mode's, still on the right side of the exact value.

/// Which way a result is rounded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dir {
    /// Toward +∞: the result is ≥ the exact value.
    Up,
    /// Toward −∞: the result is ≤ the exact value.
    Down,
}

impl Dir {
    pub fn flip(self) -> Dir {
        match self {
            Dir::Up => Dir::Down,
            Dir::Down => Dir::Up,
        }
    }
}

/// 2⁻⁵³: the unit roundoff of round-to-nearest.
pub const U: f64 = f64::EPSILON / 2.0;
/// 2⁻¹⁰⁷⁴: the smallest subnormal, the absolute error bound unit in the underflow range.
pub const ETA: f64 = 5e-324;
/// Below this magnitude a product's FMA residual may itself underflow (and read as 0).
const TINY_PRODUCT: f64 = 1.0e-270;

pub use crate::real::{two_prod, two_sum};

/// Moves a nearest-rounded result `r` of a finite operation the way `dir` asks, given the
/// sign of the exact error `err` (exact value − r); `unsure` says the error may have
/// underflowed to zero, so a zero error must be treated as "either sign".
#[inline(always)]
fn settle(r: f64, err: f64, unsure: bool, dir: Dir) -> f64 {
    if r.is_infinite() {
        // Nearest overflowed. Upward rounding never reaches −∞ from finite operands.
        return match (dir, r > 0.0) {
            (Dir::Up, false) => -f64::MAX,
            (Dir::Down, true) => f64::MAX,
            _ => r,
        };
    }
    match dir {
        Dir::Up if err > 0.0 || (unsure && err == 0.0) => r.next_up(),
        Dir::Down if err < 0.0 || (unsure && err == 0.0) => r.next_down(),
        _ => r,
    }
}

/// `a + b` rounded `dir`.
#[inline(always)]
pub fn add(a: f64, b: f64, dir: Dir) -> f64 {
    let (s, e) = two_sum(a, b);
    if s.is_nan() || (s.is_infinite() && !(a.is_finite() && b.is_finite())) {
        return s;
    }
    settle(s, e, false, dir)
}

/// `a − b` rounded `dir`.
#[inline(always)]
pub fn sub(a: f64, b: f64, dir: Dir) -> f64 {
    add(a, -b, dir)
}

/// `a · b` rounded `dir`.
#[inline(always)]
pub fn mul(a: f64, b: f64, dir: Dir) -> f64 {
    let (p, e) = two_prod(a, b);
    if p.is_nan() || (p.is_infinite() && !(a.is_finite() && b.is_finite())) {
        return p;
    }
    if a == 0.0 || b == 0.0 {
        return p;
    }
    if p == 0.0 {
        // Underflowed to zero: the exact product is non-zero with a known sign.
        let positive = (a > 0.0) == (b > 0.0);
        return match (dir, positive) {
            (Dir::Up, true) => ETA,
            (Dir::Down, false) => -ETA,
            _ => p,
        };
    }
    settle(p, e, p.abs() < TINY_PRODUCT, dir)
}

/// `√a` rounded `dir` (a ≥ 0).
#[inline(always)]
pub fn sqrt(a: f64, dir: Dir) -> f64 {
    let s = a.sqrt();
    if !s.is_finite() || s == 0.0 {
        return s;
    }
    // a − s² has the sign of √a − s; FMA gives it exactly in the normal range.
    let e = (-s).mul_add(s, a);
    settle(s, e, a < TINY_PRODUCT, dir)
}

/// An upper bound of `k·u/(1 − k·u)` (Higham's γ_k), or +∞ when `k·u ≥ 1/2`.
pub fn gamma(k: usize) -> f64 {
    let ku = mul(k as f64, U, Dir::Up);
    if ku >= 0.5 {
        return f64::INFINITY;
    }
    // k·u / (1 − k·u) ≤ k·u·(1 + 2k·u) when k·u ≤ 1/2.
    mul(ku, add(1.0, mul(2.0, ku, Dir::Up), Dir::Up), Dir::Up)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testmat::{seed_from_time, Rng};

    /// Exact comparison of `r` with `a ∘ b` through the error-free transformations, which are
    /// exact for operands of moderate size.
    fn random_operand(rng: &mut Rng) -> f64 {
        let e = (rng.uniform() * 80.0) as i32 - 40;
        (rng.uniform() - 0.5) * 2f64.powi(e)
    }

    #[test]
    fn directed_results_bracket_the_exact_value() {
        let seed = seed_from_time();
        let mut rng = Rng::new(seed);
        for _ in 0..100_000 {
            let (a, b) = (random_operand(&mut rng), random_operand(&mut rng));
            // Sum: exact value s + e.
            let (s, e) = two_sum(a, b);
            let (up, dn) = (add(a, b, Dir::Up), add(a, b, Dir::Down));
            assert!(up >= s && dn <= s, "seed {seed}: {a} + {b}");
            assert!(
                two_sum(up, -s).0 >= e && two_sum(dn, -s).0 <= e,
                "seed {seed}"
            );
            assert!(up == dn || up == dn.next_up(), "seed {seed}: not adjacent");
            // Product: exact value p + e.
            let (p, e) = two_prod(a, b);
            let (up, dn) = (mul(a, b, Dir::Up), mul(a, b, Dir::Down));
            assert!(up - p >= e && dn - p <= e, "seed {seed}: {a} * {b}");
            assert!(up == dn || up == dn.next_up(), "seed {seed}: not adjacent");
            assert_eq!(up == dn, e == 0.0, "seed {seed}: exact iff equal");
        }
    }

    #[test]
    fn overflow_and_underflow_round_as_the_directed_modes() {
        assert_eq!(add(f64::MAX, f64::MAX, Dir::Down), f64::MAX);
        assert_eq!(add(f64::MAX, f64::MAX, Dir::Up), f64::INFINITY);
        assert_eq!(add(-f64::MAX, -f64::MAX, Dir::Up), -f64::MAX);
        assert_eq!(mul(-f64::MAX, 2.0, Dir::Up), -f64::MAX);
        assert_eq!(mul(1e-200, 1e-200, Dir::Up), ETA);
        assert_eq!(mul(1e-200, 1e-200, Dir::Down), 0.0);
        assert_eq!(mul(-1e-200, 1e-200, Dir::Down), -ETA);
        let (lo, hi) = (sqrt(2.0, Dir::Down), sqrt(2.0, Dir::Up));
        assert!(lo * lo <= 2.0 && hi.mul_add(hi, -2.0) > 0.0 && lo.mul_add(lo, -2.0) < 0.0);
        assert!(add(f64::INFINITY, -f64::INFINITY, Dir::Up).is_nan());
    }
}
