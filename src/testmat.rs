//! Test matrices shared by the tests, the benchmarks and the demo: the symmetric tridiagonal
//! families of the bisection paper (Volkov & Demmel 2007, §5) plus the hard cases LAPACK's own
//! testers use (Wilkinson, clusters, splitting), and a tiny deterministic random generator so
//! that every run can be replayed from its seed.
//!
//! The paper defines its uniform, geometric, (−1, 2, −1) and glued matrices directly by their
//! tridiagonal entries, so they are built exactly as printed there (no dense matrix, no
//! reduction); its "practical" matrices (collections reduced to tridiagonal form) are not
//! reproduced.

use crate::real::Real;

/// SplitMix64 (Steele, Lea & Flood 2014): 64 bits of state, good enough for test data, and the
/// same sequence on every platform.
#[derive(Clone, Debug)]
pub struct Rng {
    state: u64,
}

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng { state: seed }
    }

    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `[0, 1)`, 53 random bits.
    pub fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform in `[lo, hi)`.
    pub fn range(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.uniform()
    }

    /// Uniform integer in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        ((self.next_u64() >> 11) % n as u64) as usize
    }

    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        self.uniform() < p
    }
}

/// A seed that differs from run to run (time and process id mixed), for tests that print it so
/// that a failure can be replayed: `HYLAPACK_TEST_SEED=<seed>` makes every call return it.
pub fn seed_from_time() -> u64 {
    if let Some(seed) = std::env::var("HYLAPACK_TEST_SEED")
        .ok()
        .and_then(|v| v.trim().parse().ok())
    {
        return seed;
    }
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    let mut mix = Rng::new(nanos ^ ((std::process::id() as u64) << 32));
    mix.next_u64()
}

/// Families of symmetric tridiagonal matrices, given by diagonal `d` (n) and off-diagonal `e`
/// (n − 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TridiagFamily {
    /// The paper's "uniform": `a_i = 1 + (i−1)/n`, `b_i = 2/n` (eigenvalues spread about
    /// evenly over an interval). Deterministic.
    Uniform,
    /// The paper's "geometric": `a_i = (3ε)^((i−1)/(n−1))`, `b_i = a_{i+1}/3` (eigenvalues
    /// spread geometrically from 3ε to 1; ε = ulp of the precision). Deterministic.
    Geometric,
    /// The (−1, 2, −1) matrix (second difference). Deterministic.
    OneTwoOne,
    /// The paper's "glued" matrix: (−1, 2, −1) with `b_k = 3ε` when `k ≡ 0 (mod 25)`, i.e.
    /// copies of the 25 × 25 matrix coupled weakly (not weakly enough to split), so every
    /// eigenvalue of the small matrix appears as a tight cluster. Deterministic.
    GluedOneTwoOne,
    /// Wilkinson's W⁺: `d_i = |i − (n−1)/2|`, `e_i = 1`; pairs of eigenvalues agreeing to many
    /// digits. Deterministic.
    WilkinsonPlus,
    /// Diagonal and off-diagonal uniform in [−1, 1).
    Random,
    /// Copies of one random block of order 1–6 glued by couplings of 1.5–3 ulp: clusters whose
    /// width is below LAPACK's tolerance, so they are found as multiple eigenvalues.
    Clustered,
    /// Random entries with zero, −0.0 and negligible off-diagonals (so xSTEBZ splits the matrix
    /// into blocks, many of order 1), and diagonal values drawn often from a small set so that
    /// different blocks share eigenvalues exactly.
    Split,
}

impl TridiagFamily {
    /// Every family, for tests that loop over them.
    pub fn all() -> [TridiagFamily; 8] {
        use TridiagFamily::*;
        [
            Uniform,
            Geometric,
            OneTwoOne,
            GluedOneTwoOne,
            WilkinsonPlus,
            Random,
            Clustered,
            Split,
        ]
    }

    pub fn name(self) -> &'static str {
        match self {
            TridiagFamily::Uniform => "uniform",
            TridiagFamily::Geometric => "geometric",
            TridiagFamily::OneTwoOne => "(-1,2,-1)",
            TridiagFamily::GluedOneTwoOne => "glued(-1,2,-1)",
            TridiagFamily::WilkinsonPlus => "wilkinson+",
            TridiagFamily::Random => "random",
            TridiagFamily::Clustered => "clustered",
            TridiagFamily::Split => "split",
        }
    }

    /// Whether the family uses the random generator (the others ignore it).
    pub fn is_random(self) -> bool {
        matches!(
            self,
            TridiagFamily::Random | TridiagFamily::Clustered | TridiagFamily::Split
        )
    }
}

/// A matrix of `family` and order `n`: `(d, e)` with `d.len() == n`, `e.len() == n − 1`
/// (empty when `n ≤ 1`).
pub fn tridiag<T: Real>(family: TridiagFamily, n: usize, rng: &mut Rng) -> (Vec<T>, Vec<T>) {
    let (d, e) = tridiag_f64(family, n, rng, T::ULP.to_f64());
    (
        d.into_iter().map(T::from_f64).collect(),
        e.into_iter().map(T::from_f64).collect(),
    )
}

/// The family in f64 arithmetic; `eps` is the ulp of the target precision.
fn tridiag_f64(family: TridiagFamily, n: usize, rng: &mut Rng, eps: f64) -> (Vec<f64>, Vec<f64>) {
    let ne = n.saturating_sub(1);
    let nf = n as f64;
    match family {
        TridiagFamily::Uniform => {
            let d = (0..n).map(|i| 1.0 + i as f64 / nf).collect();
            (d, vec![2.0 / nf; ne])
        }
        TridiagFamily::Geometric => {
            let a = |i: usize| {
                if n == 1 {
                    1.0
                } else {
                    (3.0 * eps).powf(i as f64 / (nf - 1.0))
                }
            };
            (
                (0..n).map(a).collect(),
                (0..ne).map(|i| a(i + 1) / 3.0).collect(),
            )
        }
        TridiagFamily::OneTwoOne => (vec![2.0; n], vec![-1.0; ne]),
        TridiagFamily::GluedOneTwoOne => {
            // b_k couples rows k and k + 1 (1-based), so e[k − 1] for k = 25, 50, ...
            let e = (0..ne)
                .map(|i| if (i + 1) % 25 == 0 { 3.0 * eps } else { -1.0 })
                .collect();
            (vec![2.0; n], e)
        }
        TridiagFamily::WilkinsonPlus => {
            let mid = (nf - 1.0) / 2.0;
            (
                (0..n).map(|i| (i as f64 - mid).abs()).collect(),
                vec![1.0; ne],
            )
        }
        TridiagFamily::Random => {
            let d = (0..n).map(|_| rng.range(-1.0, 1.0)).collect();
            (d, (0..ne).map(|_| rng.range(-1.0, 1.0)).collect())
        }
        TridiagFamily::Clustered => {
            let k = 1 + rng.below(6);
            let bd: Vec<f64> = (0..k).map(|_| rng.range(-1.0, 1.0)).collect();
            // Within the block, couplings well away from the splitting threshold.
            let be: Vec<f64> = (0..k).map(|_| rng.range(0.1, 1.0)).collect();
            let d = (0..n).map(|i| bd[i % k]).collect();
            // |d_j d_{j+1}| ≤ 1, so a coupling of 1.5–3 ulp is above xSTEBZ's splitting
            // threshold (|d_j d_{j+1}| ulp² + safe_min < e²) and the copies stay one block.
            let e = (0..ne)
                .map(|i| {
                    if (i + 1) % k == 0 {
                        rng.range(1.5, 3.0) * eps
                    } else {
                        be[i % k]
                    }
                })
                .collect();
            (d, e)
        }
        TridiagFamily::Split => {
            const SHARED: [f64; 5] = [-1.0, 0.0, 0.5, 1.0, 2.0];
            let d = (0..n)
                .map(|_| {
                    if rng.chance(0.4) {
                        SHARED[rng.below(SHARED.len())]
                    } else {
                        rng.range(-2.0, 2.0)
                    }
                })
                .collect();
            let e = (0..ne)
                .map(|_| match rng.below(10) {
                    0 | 1 => 0.0,
                    2 => -0.0,
                    // Below ulp · |d| for |d| ≥ ~0.1: split (or nearly) by xSTEBZ's test.
                    3 => rng.range(-1.0, 1.0) * eps * 0.1,
                    _ => rng.range(-1.0, 1.0),
                })
                .collect();
            (d, e)
        }
    }
}

/// Multiplies every entry by `factor` (for near-overflow / near-underflow tests).
pub fn scale<T: Real>(d: &mut [T], e: &mut [T], factor: T) {
    for x in d.iter_mut().chain(e.iter_mut()) {
        *x = *x * factor;
    }
}

/// The 4 × 4 matrix of the paper's §4.5: its eigenvalues (≈ −1.25, 0.45, 1, 1.80) are far from
/// zero, yet the Sturm recurrence at x = 0 meets a negative *subnormal* pivot, which a count
/// that flushes subnormals to −0 (or compares with `< 0` after losing the sign) gets wrong.
/// The paper does not print its matrix; this one is built so that
/// `t₂ = d₂ − e₁²/d₁ = (2^(2k) − 2^(2k−16)) − 2^(2k) = −2^(2k−16)` is subnormal while `e₁²`
/// itself is a normal number (so LAPACK does not split the matrix there); `k` is chosen per
/// precision (`2k = −1020` in f64, `−124` in f32). Count(0) must be 1.
pub fn denormal_pivot<T: Real>() -> (Vec<T>, Vec<T>) {
    // Exponent of e₁²: just above the underflow threshold of the precision.
    let two_k: i32 = if T::PREFIX == 's' { -124 } else { -1020 };
    let e1 = 2f64.powi(two_k / 2);
    let d2 = 2f64.powi(two_k) - 2f64.powi(two_k - 16);
    let d = vec![1.0, d2, 0.0, 1.0];
    let e = vec![e1, 1.0, 1.0];
    (
        d.into_iter().map(T::from_f64).collect(),
        e.into_iter().map(T::from_f64).collect(),
    )
}

/// Families of dense symmetric matrices for the band-reduction and eigenvalue tests.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DenseFamily {
    /// Entries uniform in [−1, 1).
    Random,
    /// `Q Λ Qᵀ` with the eigenvalues in a few tight clusters (widths of a few ulp) and `Q` a
    /// product of random reflectors.
    Clustered,
    /// `D R D` with `R` random and `D` graded geometrically from 1 to 1e−6: entries and
    /// eigenvalues spanning many orders of magnitude.
    Graded,
    /// `Q Λ Qᵀ` with a quarter of the eigenvalues nonzero: rank n/4.
    RankDeficient,
}

impl DenseFamily {
    pub fn all() -> [DenseFamily; 4] {
        use DenseFamily::*;
        [Random, Clustered, Graded, RankDeficient]
    }

    pub fn name(self) -> &'static str {
        match self {
            DenseFamily::Random => "random",
            DenseFamily::Clustered => "clustered",
            DenseFamily::Graded => "graded",
            DenseFamily::RankDeficient => "rank-deficient",
        }
    }
}

/// A dense symmetric matrix of `family`, order `n`, both triangles set, column-major n x n.
pub fn dense_symmetric<T: Real>(family: DenseFamily, n: usize, rng: &mut Rng) -> Vec<T> {
    let eps = T::ULP.to_f64();
    let mut a = vec![0.0f64; n * n];
    let random_sym = |a: &mut [f64], rng: &mut Rng| {
        for j in 0..n {
            for i in j..n {
                let x = rng.range(-1.0, 1.0);
                a[i + j * n] = x;
                a[j + i * n] = x;
            }
        }
    };
    match family {
        DenseFamily::Random => random_sym(&mut a, rng),
        DenseFamily::Graded => {
            random_sym(&mut a, rng);
            let d = |i: usize| 1e-6f64.powf(i as f64 / n.max(2) as f64);
            for j in 0..n {
                for i in 0..n {
                    a[i + j * n] *= d(i) * d(j);
                }
            }
        }
        DenseFamily::Clustered | DenseFamily::RankDeficient => {
            let centres: Vec<f64> = (0..3).map(|_| rng.range(-1.0, 1.0)).collect();
            for i in 0..n {
                a[i + i * n] = match family {
                    DenseFamily::Clustered => centres[i % 3] * (1.0 + rng.range(-3.0, 3.0) * eps),
                    _ if i % 4 == 0 => rng.range(-1.0, 1.0),
                    _ => 0.0,
                };
            }
            // Q = H1 H2 H3 H4, applied on both sides: a dense matrix with the same eigenvalues.
            for _ in 0..4 {
                let v: Vec<f64> = (0..n).map(|_| rng.range(-1.0, 1.0)).collect();
                let vv: f64 = v.iter().map(|x| x * x).sum();
                let tau = if vv > 0.0 { 2.0 / vv } else { 0.0 };
                // A := H A H with H = I − τ v vᵀ: w = A v, A −= τ (v wᵀ + w vᵀ) − τ² (vᵀw) v vᵀ.
                let w: Vec<f64> = (0..n)
                    .map(|i| (0..n).map(|j| a[i + j * n] * v[j]).sum())
                    .collect();
                let vw: f64 = v.iter().zip(&w).map(|(x, y)| x * y).sum();
                for j in 0..n {
                    for i in 0..n {
                        a[i + j * n] +=
                            -tau * (v[i] * w[j] + w[i] * v[j]) + tau * tau * vw * v[i] * v[j];
                    }
                }
            }
        }
    }
    a.into_iter().map(T::from_f64).collect()
}
