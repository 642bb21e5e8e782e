//! The Laplace mechanism for vectors (on the fixed-point grid) and the geometric
//! mechanism for integer counts.

use privq_core::rand_core::{CryptoRng, Rng};
use privq_core::sample::DiscreteLaplace;
use privq_core::{Epsilon, Fixed, GridLaplace};

use super::error::MechanismError;
use crate::accountant::{Cost, Receipt};
use crate::contract::{Mechanism, Neighbours};

/// The smallest [`Fixed`] value ≥ `x` (sensitivities are rounded **up**).
pub fn fixed_ceil(x: f64) -> Result<Fixed, MechanismError> {
    if !x.is_finite() || x <= 0.0 {
        return Err(MechanismError::InvalidParameter(format!(
            "a sensitivity must be positive and finite, got {x}"
        )));
    }
    let scaled = (x * 4_294_967_296.0).ceil();
    if scaled >= 9.2e18 {
        return Err(MechanismError::Core(privq_core::Error::OutOfRange));
    }
    Ok(Fixed::from_bits(scaled as i64))
}

/// The largest `Epsilon` of the form `a/2^k` that is ≤ `x` (k ≥ 30, chosen so that
/// `a ≥ 2^29`): a float ε turned into an exact rational with a small denominator,
/// rounded **down** (more noise), so that grid samplers do not overflow.
pub fn epsilon_at_most(x: f64) -> Result<Epsilon, MechanismError> {
    if !x.is_finite() || x <= 0.0 {
        return Err(MechanismError::InvalidParameter(format!(
            "epsilon must be positive and finite, got {x}"
        )));
    }
    let k = (29 - x.log2().floor() as i32).clamp(30, 62);
    let num = (x * (k as f64).exp2()).floor();
    if !(1.0..9.2e18).contains(&num) {
        return Err(MechanismError::Core(privq_core::Error::EpsilonTooLarge));
    }
    Ok(Epsilon::new(num as u64, 1u64 << k)?)
}

/// An ℓ1 sensitivity known exactly: a float (a dyadic rational) or a fraction.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Sensitivity {
    Real(f64),
    Ratio { num: u64, den: u64 },
}

impl Sensitivity {
    fn real(x: f64) -> Result<Self, MechanismError> {
        if !(x.is_finite() && x > 0.0) {
            return Err(MechanismError::InvalidParameter(format!(
                "a sensitivity must be positive and finite, got {x}"
            )));
        }
        Ok(Sensitivity::Real(x))
    }

    fn approx(self) -> f64 {
        match self {
            Sensitivity::Real(x) => x,
            Sensitivity::Ratio { num, den } => num as f64 / den as f64,
        }
    }

    /// `⌊log2 Δ⌋`, exactly (it only chooses the grid, which any public rule may do).
    fn log2_floor(self) -> i32 {
        match self {
            Sensitivity::Real(x) => {
                let biased = ((x.to_bits() >> 52) & 0x7ff) as i32;
                if biased == 0 { -1075 } else { biased - 1023 }
            }
            Sensitivity::Ratio { num, den } => {
                // ⌊log2(num/den)⌋ = ⌊log2 num⌋ − ⌈log2 den⌉ or one more.
                let l = num.ilog2() as i32 - den.ilog2() as i32;
                let (n, d) = (u128::from(num), u128::from(den));
                let ge = if l >= 0 { n >= d << l } else { n << -l >= d };
                if ge { l } else { l - 1 }
            }
        }
    }

    /// `⌊Δ/2^e⌋` exactly, for `e ∈ [−32, 30]`.
    fn floor_steps(self, e: i32) -> u128 {
        match self {
            Sensitivity::Real(x) => {
                // Scaling by a power of two is exact in f64, and so is `floor`.
                let scaled = (x * pow2_f64(-e)).floor();
                if scaled >= 1.0e38 {
                    u128::MAX
                } else {
                    scaled as u128
                }
            }
            Sensitivity::Ratio { num, den } => {
                let (n, d) = (u128::from(num), u128::from(den));
                if e >= 0 { n / (d << e) } else { (n << -e) / d }
            }
        }
    }
}

/// 2^k as an f64, built from its bits (exact), for |k| ≤ 1000.
fn pow2_f64(k: i32) -> f64 {
    f64::from_bits(((1023 + k.clamp(-1000, 1000)) as u64) << 52)
}

/// The Laplace mechanism for a vector of ℓ real answers with ℓ1 sensitivity Δ (thesis
/// Cor 2.4.6), realised exactly on a power-of-two grid γ: each coordinate is snapped
/// to its nearest grid point (ties up), then γ × exact discrete Laplace noise of
/// scale `m/ε` is added.
///
/// **Calibration for the snapped vector.** Snapping moves each coordinate by at most
/// γ/2, so two neighbours' snapped vectors differ by at most `Σ⌈|x_i − x′_i|/γ⌉ ≤
/// ⌊Δ/γ⌋ + ℓ` grid steps, not `⌈Δ/γ⌉`: the mechanism uses `m = ⌊Δ/γ⌋ + ℓ` and picks the
/// grid from Δ and ℓ (γ = the largest power of two ≤ Δ/(1024·ℓ), at least 2⁻³²), so
/// the noise exceeds the nominal Δ/ε by a factor ≤ 1 + 2⁻¹⁰ unless the grid floor is
/// reached (Δ/ℓ ≲ 2⁻²²), where the exact m is still used. The dimension is therefore
/// part of the mechanism and a vector of another length is refused.
///
/// `neighbours()` is the relation Δ was derived for; `cost()` is pure ε.
///
/// ```
/// use privq_host::accountant::Accountant;
/// use privq_host::contract::{Mechanism, Neighbours};
/// use privq_host::central::VectorLaplace;
/// use privq_host::{Epsilon, seeded_rng};
/// // Two counting queries: ℓ1 sensitivity 2 under either relation.
/// let mech = VectorLaplace::counts(Neighbours::Replace, 2, Epsilon::new(1, 2)?)?;
/// let mut acct = Accountant::pure(Epsilon::new(1, 1)?);
/// let mut rng = seeded_rng(1); // fixed seed: tests only
/// let noisy = mech.release(&[120.0, 37.5][..], &mut acct, &mut rng)?;
/// assert_eq!(noisy.len(), 2);
/// assert_eq!(acct.spent_epsilon(), Some(Epsilon::new(1, 2)?));
/// assert!(mech.release(&[1.0][..], &mut acct, &mut rng).is_err()); // wrong length
/// # Ok::<(), privq_host::central::MechanismError>(())
/// ```
#[derive(Debug, Clone)]
pub struct VectorLaplace {
    neighbours: Neighbours,
    dim: usize,
    sensitivity: Sensitivity,
    epsilon: Epsilon,
    mech: GridLaplace,
}

impl VectorLaplace {
    /// ℓ answers with ℓ1 sensitivity `l1` under `neighbours` (derived by the caller
    /// from the relation) and budget ε.
    pub fn with_sensitivity(
        neighbours: Neighbours,
        dim: usize,
        l1: f64,
        epsilon: Epsilon,
    ) -> Result<Self, MechanismError> {
        Self::build(neighbours, dim, Sensitivity::real(l1)?, epsilon)
    }

    /// `k` counting queries `Σ f_j(x)`, `f_j ∈ [0, 1]`: ℓ1 = `k · neighbours.count_l1()`.
    pub fn counts(
        neighbours: Neighbours,
        k: usize,
        epsilon: Epsilon,
    ) -> Result<Self, MechanismError> {
        let num = (k as u64)
            .checked_mul(neighbours.count_l1())
            .ok_or(MechanismError::Core(privq_core::Error::Overflow))?;
        Self::build(neighbours, k, Sensitivity::Ratio { num, den: 1 }, epsilon)
    }

    /// `k` fraction queries `(1/n)Σ f_j(x)` over `n` records: ℓ1 = `k/n` exactly, under
    /// replace-one neighbours only (n must be public; see [`Neighbours::fraction_l1`]).
    pub fn fractions(
        neighbours: Neighbours,
        n: u64,
        k: usize,
        epsilon: Epsilon,
    ) -> Result<Self, MechanismError> {
        neighbours.fraction_l1(n)?;
        Self::build(
            neighbours,
            k,
            Sensitivity::Ratio {
                num: k as u64,
                den: n,
            },
            epsilon,
        )
    }

    /// A histogram of `bins` counts: ℓ1 = `neighbours.histogram_l1()`.
    pub fn histogram(
        neighbours: Neighbours,
        bins: usize,
        epsilon: Epsilon,
    ) -> Result<Self, MechanismError> {
        let num = neighbours.histogram_l1();
        Self::build(
            neighbours,
            bins,
            Sensitivity::Ratio { num, den: 1 },
            epsilon,
        )
    }

    /// The raw scalar form: one value of sensitivity Δ, as the caller states it.
    /// For composite mechanisms that charge their own accountant and release values one
    /// at a time; `neighbours()` reports add/remove (nothing about n is assumed public).
    pub fn new(sensitivity: f64, epsilon: Epsilon) -> Result<Self, MechanismError> {
        Self::with_sensitivity(Neighbours::AddRemove, 1, sensitivity, epsilon)
    }

    fn build(
        neighbours: Neighbours,
        dim: usize,
        sensitivity: Sensitivity,
        epsilon: Epsilon,
    ) -> Result<Self, MechanismError> {
        if dim == 0 {
            return Err(MechanismError::InvalidParameter(
                "the vector Laplace mechanism needs at least one coordinate".into(),
            ));
        }
        let ell = dim as u64;
        // γ ≤ Δ/(1024·ℓ): ⌊log2 Δ⌋ − 10 − ⌈log2 ℓ⌉, within the Fixed grids.
        let ceil_log2_ell = ell.next_power_of_two().trailing_zeros() as i32;
        let grid_exp = (sensitivity.log2_floor() - 10 - ceil_log2_ell).clamp(-32, 30);
        let steps = sensitivity
            .floor_steps(grid_exp)
            .saturating_add(u128::from(ell));
        let overflow = || MechanismError::CalibrationOverflow { steps };
        // The calibrated sensitivity m·γ must be a Fixed value, and m·den(ε) must fit
        // the discrete Laplace sampler.
        let bits = steps
            .checked_mul(1u128 << (grid_exp + 32))
            .filter(|&b| b <= i64::MAX as u128)
            .ok_or_else(overflow)?;
        let mech = GridLaplace::with_grid(Fixed::from_bits(bits as i64), epsilon, grid_exp)
            .map_err(|e| match e {
                privq_core::Error::Overflow | privq_core::Error::OutOfRange => overflow(),
                e => MechanismError::Core(e),
            })?;
        Ok(VectorLaplace {
            neighbours,
            dim,
            sensitivity,
            epsilon,
            mech,
        })
    }

    /// The number of coordinates ℓ a release takes.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// The declared ℓ1 sensitivity Δ (as a float, for reports).
    pub fn sensitivity(&self) -> f64 {
        self.sensitivity.approx()
    }

    /// The worst snapped gap the noise is calibrated for, in grid steps:
    /// `m = ⌊Δ/γ⌋ + ℓ`.
    pub fn sensitivity_steps(&self) -> u64 {
        self.mech.sensitivity_steps()
    }

    /// The noise scale `m·γ/ε` actually used (≥ Δ/ε).
    pub fn scale(&self) -> f64 {
        let m = self.mech.sensitivity_steps() as f64 * self.mech.grid().to_f64();
        m / self.epsilon.to_f64()
    }

    /// The underlying grid mechanism (grid γ, steps m, exact noise).
    pub fn grid_mechanism(&self) -> &GridLaplace {
        &self.mech
    }

    /// The snapped grid point of each coordinate, in grid steps (what the noise is
    /// added to).
    #[cfg(test)]
    pub(crate) fn snapped(&self, values: &[f64]) -> Result<Vec<i128>, MechanismError> {
        values
            .iter()
            .map(|&v| Ok(self.mech.snap(Fixed::from_f64(v)?)))
            .collect()
    }

    /// Releases one value, uncharged (composite mechanisms charge their own accountant).
    pub(crate) fn release_one<R: Rng + CryptoRng + ?Sized>(
        &self,
        value: f64,
        rng: &mut R,
    ) -> Result<f64, MechanismError> {
        // Clamping into the fixed-point range is 1-Lipschitz (it keeps every
        // sensitivity), and it means no value can turn the release into an error after
        // the charge — output versus error would separate neighbours.
        let v = Fixed::from_f64(value.clamp(-2_147_483_648.0, 2_147_483_647.0))?;
        Ok(self.mech.release(v, rng)?.to_f64())
    }
}

impl Mechanism for VectorLaplace {
    type Input = [f64];
    type Output = Vec<f64>;

    fn neighbours(&self) -> Neighbours {
        self.neighbours
    }

    fn cost(&self) -> Cost {
        Cost::Pure(self.epsilon)
    }

    fn label(&self) -> String {
        format!(
            "vector Laplace (ℓ = {}, Δ₁ = {})",
            self.dim,
            self.sensitivity.approx()
        )
    }

    fn check_input(&self, values: &[f64]) -> Result<(), MechanismError> {
        if values.len() != self.dim {
            return Err(MechanismError::DimensionMismatch {
                expected: self.dim,
                got: values.len(),
            });
        }
        Ok(())
    }

    fn release_paid<R: Rng + CryptoRng + ?Sized>(
        &self,
        values: &[f64],
        receipt: Receipt,
        rng: &mut R,
    ) -> Result<Vec<f64>, MechanismError> {
        receipt.check_covers(&self.cost(), self.neighbours())?;
        self.check_input(values)?;
        values.iter().map(|&v| self.release_one(v, rng)).collect()
    }
}

/// The geometric mechanism for integer counts with integer ℓ1 sensitivity Δ: exact
/// discrete Laplace noise of scale Δ/ε added to each count (Ghosh, Roughgarden &
/// Sundararajan 2009; sampled as in Canonne, Kamath & Steinke 2020, Alg. 2).
///
/// `neighbours()` is the relation Δ is derived from; `cost()` is pure ε.
///
/// ```
/// use privq_host::accountant::Accountant;
/// use privq_host::contract::{Mechanism, Neighbours};
/// use privq_host::central::Geometric;
/// use privq_host::{Epsilon, seeded_rng};
/// // A histogram under replace-one neighbours: ℓ1 sensitivity 2, scale 2/ε.
/// let mech = Geometric::histogram(Neighbours::Replace, Epsilon::new(1, 2)?)?;
/// assert_eq!(mech.scale(), 4.0);
/// let mut acct = Accountant::pure(Epsilon::new(1, 1)?);
/// let noisy = mech.release(&[10, 0, 3][..], &mut acct, &mut seeded_rng(2))?;
/// assert_eq!(noisy.len(), 3);
/// assert_eq!(acct.spent_epsilon(), Some(Epsilon::new(1, 2)?));
/// # Ok::<(), privq_host::central::MechanismError>(())
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Geometric {
    neighbours: Neighbours,
    sensitivity: u64,
    dim: Option<usize>,
    epsilon: Epsilon,
    noise: DiscreteLaplace,
}

impl Geometric {
    /// A histogram (any number of bins): ℓ1 = `neighbours.histogram_l1()`.
    pub fn histogram(neighbours: Neighbours, epsilon: Epsilon) -> Result<Self, MechanismError> {
        Self::build(neighbours, neighbours.histogram_l1(), None, epsilon)
    }

    /// `k` counting queries: ℓ1 = `k · neighbours.count_l1()`; releases take exactly
    /// `k` counts.
    pub fn counts(
        neighbours: Neighbours,
        k: usize,
        epsilon: Epsilon,
    ) -> Result<Self, MechanismError> {
        if k == 0 {
            return Err(MechanismError::InvalidParameter(
                "at least one counting query is needed".into(),
            ));
        }
        let l1 = (k as u64)
            .checked_mul(neighbours.count_l1())
            .ok_or(MechanismError::Core(privq_core::Error::Overflow))?;
        Self::build(neighbours, l1, Some(k), epsilon)
    }

    /// The raw form: ℓ1 sensitivity `sensitivity` ≥ 1 as the caller states it, any
    /// length. For composite mechanisms that charge their own accountant;
    /// `neighbours()` reports add/remove (nothing about n is assumed public).
    pub fn new(sensitivity: u64, epsilon: Epsilon) -> Result<Self, MechanismError> {
        Self::build(Neighbours::AddRemove, sensitivity, None, epsilon)
    }

    fn build(
        neighbours: Neighbours,
        sensitivity: u64,
        dim: Option<usize>,
        epsilon: Epsilon,
    ) -> Result<Self, MechanismError> {
        Ok(Geometric {
            neighbours,
            sensitivity,
            dim,
            epsilon,
            noise: DiscreteLaplace::for_sensitivity(sensitivity, epsilon)?,
        })
    }

    /// The scale Δ/ε.
    pub fn scale(&self) -> f64 {
        self.noise.scale_num() as f64 / self.noise.scale_den() as f64
    }

    /// The ℓ1 sensitivity Δ.
    pub fn sensitivity(&self) -> u64 {
        self.sensitivity
    }

    /// Releases one count, uncharged (composite mechanisms charge their own accountant).
    pub(crate) fn release_one<R: Rng + CryptoRng + ?Sized>(
        &self,
        count: u64,
        rng: &mut R,
    ) -> Result<i64, MechanismError> {
        super::counts::noisy_count(&self.noise, count, rng)
    }

    /// Releases every count, uncharged (composite mechanisms charge their own
    /// accountant).
    pub(crate) fn release_raw<R: Rng + CryptoRng + ?Sized>(
        &self,
        counts: &[u64],
        rng: &mut R,
    ) -> Result<Vec<i64>, MechanismError> {
        super::counts::noisy_counts(&self.noise, counts, rng)
    }
}

impl Mechanism for Geometric {
    type Input = [u64];
    type Output = Vec<i64>;

    fn neighbours(&self) -> Neighbours {
        self.neighbours
    }

    fn cost(&self) -> Cost {
        Cost::Pure(self.epsilon)
    }

    fn label(&self) -> String {
        format!("geometric (Δ₁ = {})", self.sensitivity)
    }

    fn check_input(&self, counts: &[u64]) -> Result<(), MechanismError> {
        super::counts::check_dim(self.dim, counts)
    }

    fn release_paid<R: Rng + CryptoRng + ?Sized>(
        &self,
        counts: &[u64],
        receipt: Receipt,
        rng: &mut R,
    ) -> Result<Vec<i64>, MechanismError> {
        receipt.check_covers(&self.cost(), self.neighbours())?;
        self.check_input(counts)?;
        self.release_raw(counts, rng)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::seeded_rng;

    use crate::accountant::Accountant;

    /// Neighbouring 16-vectors at ℓ1 distance ≤ Δ = 1/n (n = 10⁹, grid floor 2⁻³²)
    /// with maximal rounding: coordinate 0 moves by almost Δ from just below a
    /// half-grid point, the 15 others sit a hair on either side of a half-grid point.
    #[test]
    fn snapped_gap_of_adversarial_neighbours_is_within_the_calibration() {
        let n = 1_000_000_000u64;
        let ell = 16;
        let eps = Epsilon::new(1, 1).unwrap();
        // 16 answers whose joint ℓ1 sensitivity is 1/n (e.g. the cells of one
        // normalized histogram under add/remove with n public).
        let delta_exact = Sensitivity::Ratio { num: 1, den: n };
        let mech = VectorLaplace::build(Neighbours::Replace, ell, delta_exact, eps).unwrap();
        let gamma = 2f64.powi(-32);
        assert_eq!(mech.grid_mechanism().grid_exp(), -32);
        let delta = 1.0 / n as f64; // Δ/γ ≈ 4.29
        let hair = gamma * 2f64.powi(-20);
        let mut x = vec![0.0; ell];
        let mut y = vec![0.0; ell];
        x[0] = 0.5 * gamma - hair;
        y[0] = x[0] + (delta - 15.0 * 2.0 * hair);
        for i in 1..ell {
            x[i] = (i as f64 + 0.5) * gamma - hair;
            y[i] = (i as f64 + 0.5) * gamma + hair;
        }
        let l1: f64 = x.iter().zip(&y).map(|(a, b)| (a - b).abs()).sum();
        assert!(l1 <= delta, "the pair must be neighbours: {l1} > {delta}");
        let sx = mech.snapped(&x).unwrap();
        let sy = mech.snapped(&y).unwrap();
        let gap: u128 = sx
            .iter()
            .zip(&sy)
            .map(|(a, b)| (a - b).unsigned_abs())
            .sum();
        // ⌊Δ/γ⌋ = 4, so the worst gap is 4 + 1 (coordinate 0) + 15 = 20 = ⌊Δ/γ⌋ + ℓ.
        assert_eq!(gap, 20);
        let m = u128::from(mech.sensitivity_steps());
        assert_eq!(m, 4 + 16);
        assert!(gap <= m);
        // The old calibration m = ⌈Δ/γ⌉ = 5 did not cover it: loss factor 4.
        let old_m = (delta / gamma).ceil() as u128;
        assert_eq!(old_m, 5);
        assert!(gap > old_m);

        // Exact privacy ratio of the grid distribution. Both outputs are snapped point
        // + discrete Laplace of scale t = m/ε on the same lattice, so for an output o
        // P[o | x]/P[o | y] = exp((Σ|o−sy| − Σ|o−sx|)/t) (equal normalizers); it is ≤
        // e^ε iff L(o) = Σ|o−sy| − Σ|o−sx| ≤ m, an integer comparison. The worst o is
        // sx itself (L = gap); check it and a sweep of outputs around both points.
        let loss = |o: &[i128]| -> i128 {
            o.iter()
                .zip(sx.iter().zip(&sy))
                .map(|(&o, (&a, &b))| (o - b).abs() - (o - a).abs())
                .sum()
        };
        assert_eq!(loss(&sx), gap as i128);
        for shift in -30i128..30 {
            for o in [&sx, &sy] {
                let moved: Vec<i128> = o
                    .iter()
                    .enumerate()
                    .map(|(i, &v)| v + if i % 3 == 0 { shift } else { -shift / 2 })
                    .collect();
                let l = loss(&moved);
                assert!(l <= m as i128 && -l <= m as i128, "L = {l} > m = {m}");
                assert!(l <= gap as i128);
            }
        }
        // Under the old m, exp(L·ε/m) at o = sx would be e^{4ε}.
        assert!(loss(&sx) > old_m as i128);
    }

    #[test]
    fn calibration_is_checked_and_lengths_enforced() {
        let eps = Epsilon::new(1, 2).unwrap();
        let m = VectorLaplace::counts(Neighbours::AddRemove, 16, eps).unwrap();
        assert_eq!(m.dim(), 16);
        // γ ≤ Δ/(1024·ℓ): Δ = 16, ℓ = 16 → γ = 2⁻¹⁰, m = 16·2¹⁰ + 16.
        assert_eq!(m.grid_mechanism().grid_exp(), -10);
        assert_eq!(m.sensitivity_steps(), 16 * 1024 + 16);
        assert!(m.scale() >= 32.0 && m.scale() <= 32.0 * (1.0 + 1.0 / 1024.0));
        let mut acct = Accountant::pure(Epsilon::new(1, 1).unwrap());
        let mut rng = seeded_rng(9);
        assert!(matches!(
            m.release(&[0.0; 15][..], &mut acct, &mut rng),
            Err(MechanismError::DimensionMismatch {
                expected: 16,
                got: 15
            })
        ));
        // A receipt too small is refused before sampling.
        let small = acct
            .charge("small", Cost::Pure(Epsilon::new(1, 4).unwrap()))
            .unwrap();
        assert!(matches!(
            m.release_paid(&[0.0; 16], small, &mut rng),
            Err(MechanismError::Budget(_))
        ));
        // Overflow of the exact calibration is a typed error.
        let huge_den = Epsilon::new(1, u64::MAX / 2).unwrap();
        assert!(matches!(
            VectorLaplace::counts(Neighbours::Replace, 1 << 20, huge_den),
            Err(MechanismError::CalibrationOverflow { .. })
        ));
        assert!(VectorLaplace::counts(Neighbours::Replace, 0, eps).is_err());
        assert!(VectorLaplace::fractions(Neighbours::AddRemove, 100, 2, eps).is_err());
        let f = VectorLaplace::fractions(Neighbours::Replace, 1000, 4, eps).unwrap();
        assert!(f.scale() >= 4.0 / 1000.0 / 0.5);
        assert_eq!(f.neighbours(), Neighbours::Replace);
        assert_eq!(f.cost(), Cost::Pure(eps));
    }

    #[test]
    fn geometric_derives_sensitivity_and_charges() {
        let eps = Epsilon::new(1, 2).unwrap();
        let h = Geometric::histogram(Neighbours::Replace, eps).unwrap();
        assert_eq!(h.sensitivity(), 2);
        assert_eq!(
            Geometric::histogram(Neighbours::AddRemove, eps)
                .unwrap()
                .sensitivity(),
            1
        );
        let c = Geometric::counts(Neighbours::AddRemove, 3, eps).unwrap();
        assert_eq!(c.sensitivity(), 3);
        let mut acct = Accountant::pure(Epsilon::new(1, 1).unwrap());
        let mut rng = seeded_rng(7);
        // The length is checked before the charge: a malformed input costs nothing.
        assert!(matches!(
            c.release(&[1, 2][..], &mut acct, &mut rng),
            Err(MechanismError::DimensionMismatch {
                expected: 3,
                got: 2
            })
        ));
        assert_eq!(
            h.release(&[5, 6, 7, 8][..], &mut acct, &mut rng)
                .unwrap()
                .len(),
            4
        );
        assert_eq!(
            c.release(&[1, 2, 3][..], &mut acct, &mut rng)
                .unwrap()
                .len(),
            3
        );
        // Budget spent: refused, nothing sampled.
        assert!(matches!(
            h.release(&[1][..], &mut acct, &mut rng),
            Err(MechanismError::Budget(_))
        ));
        assert_eq!(acct.ledger().len(), 2);
    }

    #[test]
    fn laplace_mean_abs_error_matches_scale() {
        let eps = Epsilon::new(1, 2).unwrap();
        let mech = VectorLaplace::new(1.0, eps).unwrap();
        // Scalar: m = ⌊Δ/γ⌋ + 1 = 1025 steps of 2⁻¹⁰.
        assert!((mech.scale() - 2.0 * 1025.0 / 1024.0).abs() < 1e-12);
        let mut rng = seeded_rng(5);
        let n = 40_000;
        let mut abs = 0.0;
        for _ in 0..n {
            abs += (mech.release_one(10.0, &mut rng).unwrap() - 10.0).abs();
        }
        // E|Lap(b)| = b (Lemma 2.4.2); sd of the mean ≈ b/√n.
        assert!(
            (abs / n as f64 - mech.scale()).abs() < 0.05,
            "{}",
            abs / n as f64
        );
        assert!(VectorLaplace::new(0.0, eps).is_err());
        assert!(VectorLaplace::new(f64::NAN, eps).is_err());
    }

    #[test]
    fn epsilon_rounds_down_with_small_denominators() {
        for x in [1.0, 0.1, 1e-6, 3.7, 1e5] {
            let e = epsilon_at_most(x).unwrap();
            assert!(e.to_f64() <= x && e.to_f64() > x * (1.0 - 1e-8), "{x}");
            assert!(e.den() <= 1 << 62);
        }
        assert!(epsilon_at_most(0.0).is_err());
    }

    #[test]
    fn geometric_is_unbiased() {
        let mech = Geometric::new(1, Epsilon::new(1, 1).unwrap()).unwrap();
        let mut rng = seeded_rng(6);
        let s: i64 = (0..20_000)
            .map(|_| mech.release_one(100, &mut rng).unwrap() - 100)
            .sum();
        assert!((s as f64 / 20_000.0).abs() < 0.05);
    }
}
