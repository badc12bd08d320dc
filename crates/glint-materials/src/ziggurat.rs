//! Standard normal numbers by Marsaglia and Tsang's ziggurat (256 layers), with its tables
//! here so that a vector loop can take a draw's common case, and fall back to
//! [`Ziggurat::sample`] for the rest, drawing exactly the numbers `sample` draws.
//!
//! The scheme is rand_distr's `StandardNormal` (Doornik's variant: one 64-bit draw gives
//! both the layer and a signed position in it), which keeps its tables private.

use std::sync::LazyLock;

use rand::RngCore;

/// The ziggurat's tables, computed once.
pub static ZIGGURAT: LazyLock<Ziggurat> = LazyLock::new(Ziggurat::new);

/// Layer edges and the density at them.
pub struct Ziggurat {
    /// `x[0]` is the base layer's width `V / f(R)`, `x[1] = R`, and each next edge makes a layer of
    /// area `V`, down to `x[256] = 0`.
    x: [f64; 257],
    /// `f[i] = exp(−x[i]² / 2)`.
    f: [f64; 257],
}

/// Where the tail begins.
const R: f64 = 3.654_152_885_361_009;
/// The area of each layer (and of the base layer with its tail).
const V: f64 = 0.004_928_673_233_99;

fn pdf(x: f64) -> f64 {
    (-x * x / 2.0).exp()
}

impl Ziggurat {
    fn new() -> Ziggurat {
        let mut x = [0.0; 257];
        x[0] = V / pdf(R);
        x[1] = R;
        for i in 1..255 {
            x[i + 1] = (-2.0 * (V / x[i] + pdf(x[i])).ln()).sqrt();
        }
        x[256] = 0.0;
        let mut f = [0.0; 257];
        for i in 0..257 {
            f[i] = pdf(x[i]);
        }
        Ziggurat { x, f }
    }

    /// The common case of a draw from 64 random bits: the number, and whether it stands
    /// (it falls inside its layer's rectangle core, about 99 % of draws). Where it does not,
    /// [`Ziggurat::sample`] goes on with more draws.
    #[inline(always)]
    pub fn quick(&self, bits: u64) -> (f64, bool) {
        let i = (bits & 0xff) as usize;
        // A float in [1, 2) from the top 52 bits, mapped onto [−1, 1).
        let u = 2.0 * f64::from_bits(0x3ff0_0000_0000_0000 | (bits >> 12)) - 3.0;
        let x = u * self.x[i];
        (x, x.abs() < self.x[i + 1])
    }

    /// A standard normal number.
    pub fn sample(&self, rng: &mut impl RngCore) -> f64 {
        loop {
            let bits = rng.next_u64();
            let (x, stands) = self.quick(bits);
            if stands {
                return x;
            }
            let i = (bits & 0xff) as usize;
            if i == 0 {
                return tail(rng, x < 0.0);
            }
            // Between the core and the curve: accept under the density.
            if self.f[i + 1] + (self.f[i] - self.f[i + 1]) * open01(rng) < pdf(x) {
                return x;
            }
        }
    }
}

/// A draw from the tail beyond `R` (Marsaglia's method), negative when `negative`.
fn tail(rng: &mut impl RngCore, negative: bool) -> f64 {
    loop {
        let x = open01(rng).ln() / R;
        let y = open01(rng).ln();
        if -2.0 * y >= x * x {
            return if negative { -(R - x) } else { R - x };
        }
    }
}

/// A uniform number in `(0, 1)`.
fn open01(rng: &mut impl RngCore) -> f64 {
    // 52 random bits, offset half a step from zero.
    ((rng.next_u64() >> 12) as f64 + 0.5) * (1.0 / (1u64 << 52) as f64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::BeamRng;

    /// Φ(x) to about 1e−7 (Abramowitz and Stegun 26.2.17).
    fn phi(x: f64) -> f64 {
        let t = 1.0 / (1.0 + 0.231_641_9 * x.abs());
        let poly =
            t * (0.319_381_530 + t * (-0.356_563_782 + t * (1.781_477_937 + t * (-1.821_255_978 + t * 1.330_274_429))));
        let upper = pdf(x) / (2.0 * std::f64::consts::PI).sqrt() * poly;
        if x >= 0.0 { 1.0 - upper } else { upper }
    }

    #[test]
    fn the_tables_close_at_zero() {
        let z = &*ZIGGURAT;
        // The recurrence lands on the peak: the last computed edge is close to 0.
        assert!(z.x[255] > 0.0 && z.x[255] < 0.3, "{}", z.x[255]);
        assert!(z.x.windows(2).skip(1).all(|w| w[0] > w[1]), "edges fall");
    }

    #[test]
    fn draws_are_standard_normal() {
        let z = &*ZIGGURAT;
        let n = 400_000;
        let mut draws: Vec<f64> = (0..n).map(|i| z.sample(&mut BeamRng::new(11, 0, i, 0))).collect();
        let mean = draws.iter().sum::<f64>() / n as f64;
        let var = draws.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n as f64;
        assert!(mean.abs() < 0.006, "mean {mean}");
        assert!((var - 1.0).abs() < 0.01, "variance {var}");
        // Kolmogorov–Smirnov against Φ; 1.63 / √n is the 1 % critical value.
        draws.sort_by(f64::total_cmp);
        let d = draws
            .iter()
            .enumerate()
            .map(|(i, &x)| (phi(x) - i as f64 / n as f64).abs().max((phi(x) - (i + 1) as f64 / n as f64).abs()))
            .fold(0.0, f64::max);
        assert!(d < 1.63 / (n as f64).sqrt(), "KS distance {d}");
        // The tail beyond R, drawn by its own method, holds its share (2 · 1.29e−4).
        let tail = draws.iter().filter(|x| x.abs() > R).count() as f64 / n as f64;
        assert!((tail / (2.0 * (1.0 - phi(R))) - 1.0).abs() < 0.3, "tail share {tail}");
    }

    #[test]
    fn the_quick_case_is_the_first_draw_of_a_sample() {
        let z = &*ZIGGURAT;
        let mut quick = 0;
        for i in 0..20_000 {
            let rng = BeamRng::new(5, 2, i, 3);
            let (x, stands) = z.quick(rng.clone().next_u64());
            if stands {
                quick += 1;
                assert_eq!(x.to_bits(), z.sample(&mut rng.clone()).to_bits());
            }
        }
        assert!(quick > 19_500, "{quick}");
    }
}
