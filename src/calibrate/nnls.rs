//! Non-negative least squares (Lawson and Hanson's active-set method) on
//! the normal equations: minimise |Ax − b|² subject to x ≥ 0, given
//! G = AᵀA and h = Aᵀb, which a fit accumulates row by row (and can take
//! one model's rows out of, for a fit without it).

/// The normal equations of a least-squares problem, accumulated row by row.
#[derive(Debug, Clone, PartialEq)]
pub struct Normal {
    pub n: usize,
    /// AᵀA, row-major n × n.
    pub g: Vec<f64>,
    /// Aᵀb.
    pub h: Vec<f64>,
}

impl Normal {
    pub fn new(n: usize) -> Normal {
        Normal {
            n,
            g: vec![0.0; n * n],
            h: vec![0.0; n],
        }
    }

    /// Adds a row: sparse `(column, value)` entries, target `b`, weight `w`
    /// (the row and its target both scaled by `w`).
    pub fn add(&mut self, row: &[(usize, f64)], b: f64, w: f64) {
        for &(i, a) in row {
            self.h[i] += w * w * a * b;
            for &(j, c) in row {
                self.g[i * self.n + j] += w * w * a * c;
            }
        }
    }

    /// `self` less `other` (a subset of the rows taken out).
    pub fn minus(&self, other: &Normal) -> Normal {
        Normal {
            n: self.n,
            g: self.g.iter().zip(&other.g).map(|(a, b)| a - b).collect(),
            h: self.h.iter().zip(&other.h).map(|(a, b)| a - b).collect(),
        }
    }

    /// The non-negative x that minimises |Ax − b|². Columns no row uses
    /// stay 0.
    pub fn solve(&self) -> Vec<f64> {
        let n = self.n;
        // Columns scaled to unit norm, so one tolerance serves all.
        let d: Vec<f64> = (0..n)
            .map(|i| {
                let v = self.g[i * n + i];
                if v > 0.0 { v.sqrt() } else { 0.0 }
            })
            .collect();
        let used: Vec<bool> = d.iter().map(|&v| v > 0.0).collect();
        let g = |i: usize, j: usize| self.g[i * n + j] / (d[i] * d[j]);
        let h: Vec<f64> = (0..n)
            .map(|i| if used[i] { self.h[i] / d[i] } else { 0.0 })
            .collect();
        let tol = 1e-12 * h.iter().fold(1.0f64, |m, v| m.max(v.abs()));
        let mut x = vec![0.0; n];
        let mut passive = vec![false; n];
        let gradient = |x: &[f64]| -> Vec<f64> {
            (0..n)
                .map(|i| {
                    if !used[i] {
                        return 0.0;
                    }
                    let gx: f64 = (0..n)
                        .filter(|&j| x[j] != 0.0)
                        .map(|j| g(i, j) * x[j])
                        .sum();
                    h[i] - gx
                })
                .collect()
        };
        // Each column enters the passive set at most a few times.
        for _ in 0..3 * n + 10 {
            let w = gradient(&x);
            let Some(j) = (0..n)
                .filter(|&j| used[j] && !passive[j] && w[j] > tol)
                .max_by(|&a, &b| w[a].total_cmp(&w[b]))
            else {
                break;
            };
            passive[j] = true;
            for _ in 0..3 * n + 10 {
                let set: Vec<usize> = (0..n).filter(|&i| passive[i]).collect();
                let s = solve_on(&set, &g, &h);
                let Some(s) = s else {
                    passive[j] = false;
                    break;
                };
                if s.iter().all(|&v| v > 0.0) {
                    for (&i, &v) in set.iter().zip(&s) {
                        x[i] = v;
                    }
                    break;
                }
                // Step towards s until the first variable reaches 0.
                let mut alpha = 1.0f64;
                for (&i, &v) in set.iter().zip(&s) {
                    if v <= 0.0 {
                        let a = x[i] / (x[i] - v);
                        if a < alpha {
                            alpha = a;
                        }
                    }
                }
                for (&i, &v) in set.iter().zip(&s) {
                    x[i] += alpha * (v - x[i]);
                    if x[i] <= 1e-15 {
                        x[i] = 0.0;
                        passive[i] = false;
                    }
                }
            }
        }
        (0..n)
            .map(|i| {
                if used[i] && x[i] > 0.0 {
                    x[i] / d[i]
                } else {
                    0.0
                }
            })
            .collect()
    }
}

/// Solves `G[S,S] s = h[S]` by Cholesky; `None` when the subsystem is
/// singular (a column that repeats another).
fn solve_on(set: &[usize], g: &impl Fn(usize, usize) -> f64, h: &[f64]) -> Option<Vec<f64>> {
    let k = set.len();
    let mut l = vec![0.0; k * k];
    for a in 0..k {
        for b in 0..=a {
            let mut v = g(set[a], set[b]);
            for c in 0..b {
                v -= l[a * k + c] * l[b * k + c];
            }
            if a == b {
                if v <= 1e-13 {
                    return None;
                }
                l[a * k + a] = v.sqrt();
            } else {
                l[a * k + b] = v / l[b * k + b];
            }
        }
    }
    let mut y = vec![0.0; k];
    for a in 0..k {
        let mut v = h[set[a]];
        for c in 0..a {
            v -= l[a * k + c] * y[c];
        }
        y[a] = v / l[a * k + a];
    }
    let mut s = vec![0.0; k];
    for a in (0..k).rev() {
        let mut v = y[a];
        for c in a + 1..k {
            v -= l[c * k + a] * s[c];
        }
        s[a] = v / l[a * k + a];
    }
    Some(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fit(rows: &[(Vec<(usize, f64)>, f64)], n: usize) -> Vec<f64> {
        let mut m = Normal::new(n);
        for (r, b) in rows {
            m.add(r, *b, 1.0);
        }
        m.solve()
    }

    #[test]
    fn exact_data_gives_back_its_coefficients() {
        // b = 2 a0 + 0.5 a1 + 3 a2 on rows of assorted sizes.
        let truth = [2.0, 0.5, 3.0];
        let rows: Vec<(Vec<(usize, f64)>, f64)> = (1..20)
            .map(|k| {
                let a = [k as f64, (k * k % 7) as f64 + 1.0, 1.0 / k as f64];
                let b = a.iter().zip(truth).map(|(x, t)| x * t).sum();
                ((0..3).map(|i| (i, a[i])).collect(), b)
            })
            .collect();
        let x = fit(&rows, 3);
        for (got, want) in x.iter().zip(truth) {
            assert!((got - want).abs() < 1e-9 * want, "{x:?}");
        }
    }

    #[test]
    fn a_coefficient_the_data_wants_negative_is_zero() {
        // b = a0 - a1 exactly: the best non-negative fit drops a1.
        let rows: Vec<(Vec<(usize, f64)>, f64)> = (1..10)
            .map(|k| {
                let (a0, a1) = (k as f64, 1.0);
                (vec![(0, a0), (1, a1)], a0 - a1)
            })
            .collect();
        let x = fit(&rows, 2);
        assert_eq!(x[1], 0.0);
        // Least squares of b = c a0 alone: c = Σ a0 b / Σ a0².
        let (num, den) = (1..10).fold((0.0, 0.0), |(n, d), k| {
            let a0 = k as f64;
            (n + a0 * (a0 - 1.0), d + a0 * a0)
        });
        assert!((x[0] - num / den).abs() < 1e-12);
    }

    #[test]
    fn unused_and_repeated_columns_stay_finite() {
        // Column 2 is never used; column 1 repeats column 0.
        let rows: Vec<(Vec<(usize, f64)>, f64)> = (1..6)
            .map(|k| (vec![(0, k as f64), (1, k as f64)], 4.0 * k as f64))
            .collect();
        let x = fit(&rows, 3);
        assert_eq!(x[2], 0.0);
        assert!((x[0] + x[1] - 4.0).abs() < 1e-9, "{x:?}");
    }
}
