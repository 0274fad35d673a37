//! The starting vectors: LAPACK's xLARNV with IDIST = 2 (uniform on (−1, 1)), reproduced
//! number for number, so that inverse iteration starts where LAPACK's xSTEIN starts.
//!
//! xLARNV draws from xLARUV, a multiplicative congruential generator with modulus 2⁴⁸ and
//! multiplier a = 33 952 834 046 453 (Fishman 1990), in batches of 64: the i-th number of a
//! batch (i = 1..=64) is `s · aⁱ mod 2⁴⁸` for the batch's base `s`, read as the fraction
//! `v / 2⁴⁸` in the working precision (summed from four 12-bit digits, most significant last,
//! as xLARUV sums them), and the seed after the batch is its last `s · aⁱ`. A fraction that
//! rounds to exactly 1 is drawn again with the base replaced by that value (rare in double
//! precision, about once in 2²⁴ draws in single). The uniform (0, 1) number `u` becomes
//! `2u − 1`. xLARUV keeps its multipliers as a table of the powers `aⁱ`; we compute them.
//!
//! xSTEIN seeds the generator once per call (ISEED = 1, 1, 1, 1) and draws one vector of
//! the block's order for every eigenvalue of a block of order ≥ 2, in the order of W; the
//! plan records the seed each vector starts from, so vectors can be drawn in any order, on
//! any thread, and still be LAPACK's.

use crate::real::Real;

/// 2⁴⁸ − 1: the generator works modulo 2⁴⁸.
const MASK: u64 = (1 << 48) - 1;

/// xLARUV's multiplier.
const MULTIPLIER: u64 = 33_952_834_046_453;

/// xLARNV's batch for IDIST = 2: half of xLARUV's 128.
const BATCH: usize = 64;

/// `aⁱ mod 2⁴⁸` for i = 0..=64.
const POWERS: [u64; BATCH + 1] = {
    let mut p = [1u64; BATCH + 1];
    let mut i = 1;
    while i <= BATCH {
        p[i] = p[i - 1].wrapping_mul(MULTIPLIER) & MASK;
        i += 1;
    }
    p
};

/// The state of xLARNV's generator: ISEED as one 48-bit integer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Larnv {
    seed: u64,
}

impl Larnv {
    /// The seed xSTEIN starts every call from: ISEED = (1, 1, 1, 1), digits of 4096.
    pub fn stein_start() -> Self {
        Larnv {
            seed: (1 << 36) | (1 << 24) | (1 << 12) | 1,
        }
    }

    /// The generator at a seed recorded earlier with [`Larnv::seed`].
    pub fn at(seed: u64) -> Self {
        Larnv { seed: seed & MASK }
    }

    /// The current seed, as a 48-bit integer.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// Fills `out` as one xLARNV(2, ISEED, N = out.len(), X) call in precision `T` would.
    pub fn fill<T: Real>(&mut self, out: &mut [T]) {
        self.draw::<T>(out.len(), |i, x| out[i] = x);
    }

    /// Advances the seed as [`Larnv::fill`] of `n` numbers would, storing nothing.
    pub fn skip<T: Real>(&mut self, n: usize) {
        // Where T holds 48 bits, every fraction is exact and below 1, so nothing is drawn
        // again: each batch multiplies the seed by a^len, and n numbers by aⁿ. (Drawing them
        // one by one took about 1 s of an n = 16000 call with all vectors.)
        if T::ULP.to_f64() <= (-47f64).exp2() {
            self.seed = self.seed.wrapping_mul(power(n as u64)) & MASK;
        } else {
            self.draw::<T>(n, |_, _| {});
        }
    }

    fn draw<T: Real>(&mut self, n: usize, mut put: impl FnMut(usize, T)) {
        for start in (0..n).step_by(BATCH) {
            let len = BATCH.min(n - start);
            let mut base = self.seed;
            let mut last = base;
            for (i, power) in POWERS[1..=len].iter().enumerate() {
                let u = loop {
                    let v = base.wrapping_mul(*power) & MASK;
                    let u = fraction::<T>(v);
                    if u == T::ONE {
                        base = v;
                        continue;
                    }
                    last = v;
                    break u;
                };
                put(start + i, T::TWO * u - T::ONE);
            }
            self.seed = last;
        }
    }
}

/// `aⁿ mod 2⁴⁸`, by squaring.
fn power(mut n: u64) -> u64 {
    let (mut result, mut square) = (1u64, MULTIPLIER);
    while n > 0 {
        if n & 1 == 1 {
            result = result.wrapping_mul(square) & MASK;
        }
        square = square.wrapping_mul(square) & MASK;
        n >>= 1;
    }
    result
}

/// `v / 2⁴⁸` summed in precision `T` from the 12-bit digits of `v`, least significant first
/// (so the rounding is xLARUV's).
fn fraction<T: Real>(v: u64) -> T {
    let r = T::ONE / T::from_f64(4096.0);
    let digit = |shift: u32| T::from_f64(((v >> shift) & 4095) as f64);
    r * (digit(36) + r * (digit(24) + r * (digit(12) + r * digit(0))))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The powers are xLARUV's table: its first rows, as printed there in base-4096 digits.
    #[test]
    fn powers_are_the_multiplier_table() {
        let digits = |x: u64| {
            [
                (x >> 36) & 4095,
                (x >> 24) & 4095,
                (x >> 12) & 4095,
                x & 4095,
            ]
        };
        assert_eq!(digits(POWERS[1]), [494, 322, 2508, 2549]);
        assert_eq!(digits(POWERS[2]), [2637, 789, 3754, 1145]);
        assert_eq!(digits(POWERS[8]), [1739, 643, 3966, 2913]);
    }

    /// The first numbers and the seed after them, as the system LAPACK's DLARNV(2, ISEED, 5, X)
    /// returned them from ISEED = (1, 1, 1, 1), twice.
    #[test]
    fn first_draws_are_lapacks() {
        let mut rng = Larnv::stein_start();
        let mut x = [0.0f64; 5];
        rng.fill(&mut x);
        let want = [
            -0.131682844785324,
            -0.934380388723234,
            -0.20931005700403915,
            0.2412745888890484,
            0.03330594449088409,
        ];
        assert_eq!(x, want);
        rng.fill(&mut x);
        assert_eq!(x[..2], [-0.6370287734240989, 0.06031883737203003]);
        let digits = [1754u64, 2381, 3839, 1241];
        assert_eq!(rng.seed(), digits.iter().fold(0, |s, d| s * 4096 + d));
    }

    /// Skipping advances the seed exactly as drawing does, in both precisions and for counts
    /// that end inside a batch; the numbers lie in (−1, 1).
    #[test]
    fn skip_then_fill_continues_the_stream() {
        for n in [0, 1, 63, 64, 65, 200, 4097, 100_003] {
            let mut a = Larnv::stein_start();
            let mut all = vec![0.0f64; n];
            a.fill(&mut all);
            let mut b = Larnv::stein_start();
            b.skip::<f64>(n);
            assert_eq!(a, b, "f64, n = {n}");
            assert!(all.iter().all(|x| *x > -1.0 && *x < 1.0));
            let mut a = Larnv::stein_start();
            a.fill(&mut vec![0.0f32; n]);
            let mut b = Larnv::stein_start();
            b.skip::<f32>(n);
            assert_eq!(a, b, "f32, n = {n}");
        }
    }

    /// The jump by powers of the multiplier is the product of the table's steps.
    #[test]
    fn power_is_repeated_multiplication() {
        let mut p = 1u64;
        for n in 0..300u64 {
            assert_eq!(power(n), p, "n = {n}");
            p = p.wrapping_mul(MULTIPLIER) & MASK;
        }
    }
}
