//! Test systems for the tridiagonal solver: the 16 matrix types of Table III of Chang et al.
//! (2012), built from their definitions (several are MATLAB `gallery` matrices, generated here
//! from the published formulas of Higham's Test Matrix Toolbox), plus random and diagonally
//! dominant systems of any size.
//!
//! A system is `(dl, d, du)` in LAPACK's layout: `dl[i] = A[i+1][i]`, `d[i] = A[i][i]`,
//! `du[i] = A[i][i+1]`.

use crate::testmat::Rng;

/// A tridiagonal matrix in LAPACK's layout, in double precision (convert for `f32` tests).
#[derive(Clone, Debug)]
pub struct Tridiag {
    pub dl: Vec<f64>,
    pub d: Vec<f64>,
    pub du: Vec<f64>,
}

impl Tridiag {
    pub fn n(&self) -> usize {
        self.d.len()
    }

    /// `y = A x`.
    pub fn mul(&self, x: &[f64]) -> Vec<f64> {
        let n = self.n();
        (0..n)
            .map(|i| {
                let mut s = self.d[i] * x[i];
                if i > 0 {
                    s += self.dl[i - 1] * x[i - 1];
                }
                if i + 1 < n {
                    s += self.du[i] * x[i + 1];
                }
                s
            })
            .collect()
    }
}

/// The paper's 16 matrix types (Table III), `1..=16`, and their descriptions.
pub const TABLE3: [&str; 16] = [
    "U(-1,1) entries",
    "Toeplitz, diag 1e8, off-diag U(-1,1)",
    "gallery('lesp')",
    "U(-1,1), dl[n/2] * 1e-50",
    "diag U(-1,1), off-diag 0 or U(-1,1) (50%)",
    "Toeplitz, diag 64, off-diag U(-1,1)",
    "inv(gallery('kms', n, 0.5))",
    "randsvd(1e15, mode 2): one small sigma",
    "randsvd(1e15, mode 3): geometric sigmas",
    "randsvd(1e15, mode 1): one large sigma",
    "randsvd(1e15, mode 4): arithmetic sigmas",
    "U(-1,1), sub-diagonal * 1e-50",
    "gallery('dorr', n, 1e-4)",
    "Toeplitz, diag 1e-8, off-diag U(-1,1)",
    "gallery('clement', n, 0)",
    "Toeplitz, diag 0, off-diag U(-1,1)",
];

fn uniform(rng: &mut Rng, k: usize) -> Vec<f64> {
    (0..k).map(|_| rng.range(-1.0, 1.0)).collect()
}

/// Random: every entry from U(−1, 1).
pub fn random(n: usize, rng: &mut Rng) -> Tridiag {
    Tridiag {
        dl: uniform(rng, n.saturating_sub(1)),
        d: uniform(rng, n),
        du: uniform(rng, n.saturating_sub(1)),
    }
}

/// Strictly diagonally dominant by rows and by columns: off-diagonals from U(−1, 1), each
/// diagonal entry of random sign and magnitude in [2, 3), more than the off-diagonal sum of its
/// row and of its column (each below 2).
pub fn diagonally_dominant(n: usize, rng: &mut Rng) -> Tridiag {
    let mut t = random(n, rng);
    for i in 0..n {
        let mag = 2.0 + rng.uniform();
        t.d[i] = if rng.chance(0.5) { mag } else { -mag };
    }
    t
}

/// A Toeplitz matrix: constant diagonal `diag`, constant off-diagonals drawn once from U(−1, 1).
fn toeplitz(n: usize, diag: f64, rng: &mut Rng) -> Tridiag {
    let (lo, up) = (rng.range(-1.0, 1.0), rng.range(-1.0, 1.0));
    let m = n.saturating_sub(1);
    Tridiag {
        dl: vec![lo; m],
        d: vec![diag; n],
        du: vec![up; m],
    }
}

/// `gallery('lesp', n)`: sub-diagonal `1/2, 1/3, …, 1/n`, diagonal `−6, −8, …, −(2n + 4)`,
/// super-diagonal `2, 3, …, n`.
pub fn lesp(n: usize) -> Tridiag {
    Tridiag {
        dl: (2..=n).map(|x| 1.0 / x as f64).collect(),
        d: (3..n + 3).map(|x| -2.0 * x as f64).collect(),
        du: (2..=n).map(|x| x as f64).collect(),
    }
}

/// `inv(gallery('kms', n, rho))`: the inverse of the Kac–Murdock–Szegő matrix `rho^|i−j|` is
/// tridiagonal, `1/(1 − rho²) · tridiag(−rho, [1, 1 + rho², …, 1 + rho², 1], −rho)`.
pub fn kms_inverse(n: usize, rho: f64) -> Tridiag {
    let s = 1.0 / (1.0 - rho * rho);
    let mut d = vec![(1.0 + rho * rho) * s; n];
    if n > 0 {
        d[0] = s;
        d[n - 1] = s;
    }
    let m = n.saturating_sub(1);
    Tridiag {
        dl: vec![-rho * s; m],
        d,
        du: vec![-rho * s; m],
    }
}

/// `gallery('dorr', n, theta)`: Dorr's diagonally dominant, ill-conditioned matrix (Higham's
/// `dorr.m`): with `h = 1/(n+1)`, `m = ⌊(n+1)/2⌋`, `term = theta/h²`, for `i ≤ m`:
/// `c_i = −term`, `e_i = c_i − (0.5 − i h)/h`; for `i > m`: `e_i = −term`,
/// `c_i = e_i + (0.5 − i h)/h`; `d_i = −(c_i + e_i)`; sub-diagonal `c_2..c_n`, super `e_1..e_{n−1}`.
pub fn dorr(n: usize, theta: f64) -> Tridiag {
    let h = 1.0 / (n as f64 + 1.0);
    let m = n.div_ceil(2);
    let term = theta / (h * h);
    let (mut c, mut e, mut d) = (vec![0.0; n], vec![0.0; n], vec![0.0; n]);
    for i in 1..=n {
        let ih = i as f64 * h;
        if i <= m {
            c[i - 1] = -term;
            e[i - 1] = c[i - 1] - (0.5 - ih) / h;
        } else {
            e[i - 1] = -term;
            c[i - 1] = e[i - 1] + (0.5 - ih) / h;
        }
        d[i - 1] = -(c[i - 1] + e[i - 1]);
    }
    Tridiag {
        dl: c.get(1..).unwrap_or(&[]).to_vec(),
        d,
        du: e[..n.saturating_sub(1)].to_vec(),
    }
}

/// `gallery('clement', n, 0)`: zero diagonal, super-diagonal `1, 2, …, n−1`, sub-diagonal
/// `n−1, n−2, …, 1`; eigenvalues `±(n−1), ±(n−3), …`.
pub fn clement(n: usize) -> Tridiag {
    Tridiag {
        dl: (1..n).rev().map(|x| x as f64).collect(),
        d: vec![0.0; n],
        du: (1..n).map(|x| x as f64).collect(),
    }
}

/// Applies the Householder reflector `I − 2 v vᵀ/(vᵀv)` to rows `r0..` (from the left, `left`)
/// or columns `r0..` (from the right) of the dense column-major `n × n` matrix `a`, touching only
/// columns (rows) `from..`.
fn reflect(a: &mut [f64], n: usize, v: &[f64], r0: usize, from: usize, left: bool) {
    let vv: f64 = v.iter().map(|x| x * x).sum();
    if vv == 0.0 {
        return;
    }
    let tau = 2.0 / vv;
    for j in from..n {
        // left: column j, entries r0..; right: row j, entries r0..
        let at = |k: usize| {
            if left {
                (r0 + k) + j * n
            } else {
                j + (r0 + k) * n
            }
        };
        let s: f64 = v
            .iter()
            .enumerate()
            .map(|(k, vk)| vk * a[at(k)])
            .sum::<f64>()
            * tau;
        for (k, vk) in v.iter().enumerate() {
            a[at(k)] -= s * vk;
        }
    }
}

/// The Householder vector that maps `x` onto a multiple of `e_1`.
fn house(x: &[f64]) -> Vec<f64> {
    let norm = x.iter().map(|v| v * v).sum::<f64>().sqrt();
    let mut v = x.to_vec();
    if norm == 0.0 {
        return v;
    }
    v[0] += if x[0] >= 0.0 { norm } else { -norm };
    v
}

/// `gallery('randsvd', n, kappa, mode, 1, 1)`: a random tridiagonal matrix with prescribed
/// singular values (mode 1: one large, 2: one small, 3: geometric, 4: arithmetic), made as
/// `U Σ Vᵀ` with `U`, `V` products of random Householder reflectors, then reduced to tridiagonal
/// form by two-sided Householder transformations (Higham's `bandred`), which keep the singular
/// values. O(n³): meant for n in the hundreds.
pub fn randsvd(n: usize, kappa: f64, mode: u32, rng: &mut Rng) -> Tridiag {
    let sigma: Vec<f64> = (0..n)
        .map(|i| {
            let t = if n > 1 {
                i as f64 / (n - 1) as f64
            } else {
                0.0
            };
            match mode {
                1 => {
                    if i == 0 {
                        1.0
                    } else {
                        1.0 / kappa
                    }
                }
                2 => {
                    if i + 1 == n {
                        1.0 / kappa
                    } else {
                        1.0
                    }
                }
                3 => kappa.powf(-t),
                _ => 1.0 - (1.0 - 1.0 / kappa) * t,
            }
        })
        .collect();
    let mut a = vec![0.0; n * n];
    for i in 0..n {
        a[i + i * n] = sigma[i];
    }
    // Random orthogonal factors: a few dense random reflectors on each side mix every entry.
    for _ in 0..6 {
        let v = uniform(rng, n);
        reflect(&mut a, n, &v, 0, 0, true);
        let v = uniform(rng, n);
        reflect(&mut a, n, &v, 0, 0, false);
    }
    // bandred(A, 1, 1): zero below the sub-diagonal (left) and right of the super-diagonal.
    for j in 0..n.saturating_sub(2) {
        let col: Vec<f64> = (j + 1..n).map(|i| a[i + j * n]).collect();
        let v = house(&col);
        reflect(&mut a, n, &v, j + 1, j, true);
        let row: Vec<f64> = (j + 1..n).map(|k| a[j + k * n]).collect();
        let v = house(&row);
        reflect(&mut a, n, &v, j + 1, j, false);
    }
    Tridiag {
        dl: (0..n.saturating_sub(1))
            .map(|i| a[(i + 1) + i * n])
            .collect(),
        d: (0..n).map(|i| a[i + i * n]).collect(),
        du: (0..n.saturating_sub(1))
            .map(|i| a[i + (i + 1) * n])
            .collect(),
    }
}

/// Matrix type `t` (1..=16) of Table III at order `n`.
pub fn table3(t: usize, n: usize, rng: &mut Rng) -> Tridiag {
    match t {
        1 => random(n, rng),
        2 => toeplitz(n, 1e8, rng),
        3 => lesp(n),
        4 => {
            let mut m = random(n, rng);
            if n >= 2 {
                let k = (n / 2).saturating_sub(1).min(n - 2);
                m.dl[k] *= 1e-50;
            }
            m
        }
        5 => {
            let mut m = random(n, rng);
            for x in m.dl.iter_mut().chain(m.du.iter_mut()) {
                if rng.chance(0.5) {
                    *x = 0.0;
                }
            }
            m
        }
        6 => toeplitz(n, 64.0, rng),
        7 => kms_inverse(n, 0.5),
        8 => randsvd(n, 1e15, 2, rng),
        9 => randsvd(n, 1e15, 3, rng),
        10 => randsvd(n, 1e15, 1, rng),
        11 => randsvd(n, 1e15, 4, rng),
        12 => {
            let mut m = random(n, rng);
            for x in m.dl.iter_mut() {
                *x *= 1e-50;
            }
            m
        }
        13 => dorr(n, 1e-4),
        14 => toeplitz(n, 1e-8, rng),
        15 => clement(n),
        16 => toeplitz(n, 0.0, rng),
        _ => panic!("Table III has types 1..=16, not {t}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn randsvd_is_tridiagonal_with_the_right_norm() {
        // Frobenius norm is kept by orthogonal transformations: sum of sigma^2.
        let mut rng = Rng::new(3);
        let n = 40;
        let t = randsvd(n, 1e6, 3, &mut rng);
        let fro: f64 = t.dl.iter().chain(&t.d).chain(&t.du).map(|x| x * x).sum();
        let want: f64 = (0..n)
            .map(|i| 1e6f64.powf(-(i as f64) / (n - 1) as f64).powi(2))
            .sum();
        assert!((fro - want).abs() < 1e-10 * want, "{fro} vs {want}");
    }

    #[test]
    fn kms_inverse_inverts_kms() {
        let n = 7;
        let t = kms_inverse(n, 0.5);
        for j in 0..n {
            let col: Vec<f64> = (0..n)
                .map(|i| 0.5f64.powi((i as i32 - j as i32).abs()))
                .collect();
            let e = t.mul(&col);
            for (i, v) in e.iter().enumerate() {
                assert!((v - if i == j { 1.0 } else { 0.0 }).abs() < 1e-14);
            }
        }
    }
}
