//! The discrete Gaussian mechanism for integer counts, charged in ρ-zCDP.

use privq_core::Rho;
use privq_core::rand_core::{CryptoRng, Rng};
use privq_core::sample::{DiscreteGaussian as Noise, SigmaSquared};

use super::MechanismError;
use crate::accountant::{Cost, Receipt};
use crate::contract::{Mechanism, Neighbours};

/// Integer counts plus independent discrete Gaussian noise `N_ℤ(0, σ²)` on each
/// coordinate (Canonne–Kamath–Steinke 2020, Algorithm 3), with σ² = Δ₂²/(2ρ) from
/// the squared ℓ2 sensitivity the neighbour relation implies, so one release is
/// ρ-zCDP (CKS20 Thm. 14 and 15). Its cost is [`Cost::Zcdp`]: it needs a zCDP
/// accountant ([`crate::accountant::Accountant::zcdp`]); a pure one refuses it.
///
/// ```
/// use privq_host::accountant::Accountant;
/// use privq_host::contract::{Mechanism, Neighbours};
/// use privq_host::central::DiscreteGaussian;
/// use privq_host::{Rho, seeded_rng};
/// // A histogram under replace-one neighbours: Δ₂² = 2, so σ² = 2/(2ρ) = 4 at ρ = 1/4.
/// let mech = DiscreteGaussian::histogram(Neighbours::Replace, Rho::new(1, 4)?)?;
/// assert_eq!(mech.sigma_squared().to_f64(), 4.0);
/// let mut acct = Accountant::zcdp(Rho::new(1, 2)?, 1e-6)?;
/// let noisy = mech.release(&[10, 0, 3][..], &mut acct, &mut seeded_rng(2))?;
/// assert_eq!(noisy.len(), 3);
/// assert_eq!(acct.spent_rho(), Some(Rho::new(1, 4)?));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy)]
pub struct DiscreteGaussian {
    neighbours: Neighbours,
    l2_squared: u64,
    dim: Option<usize>,
    rho: Rho,
    noise: Noise,
}

impl DiscreteGaussian {
    /// A histogram (any number of bins): Δ₂² = `neighbours.histogram_l2_squared()`.
    pub fn histogram(neighbours: Neighbours, rho: Rho) -> Result<Self, MechanismError> {
        Self::build(neighbours, neighbours.histogram_l2_squared(), None, rho)
    }

    /// `k` histograms of the same records side by side (one per attribute, say),
    /// released as one vector: one record moves one cell of each, so Δ₂² =
    /// `k · neighbours.histogram_l2_squared()`.
    pub fn histograms(neighbours: Neighbours, k: usize, rho: Rho) -> Result<Self, MechanismError> {
        if k == 0 {
            return Err(MechanismError::InvalidParameter(
                "at least one histogram is needed".into(),
            ));
        }
        let l2_squared = (k as u64)
            .checked_mul(neighbours.histogram_l2_squared())
            .ok_or(MechanismError::Core(privq_core::Error::Overflow))?;
        Self::build(neighbours, l2_squared, None, rho)
    }

    /// `k` counting queries, each of sensitivity `neighbours.count_l1()` = 1:
    /// Δ₂² = k; releases take exactly `k` counts.
    pub fn counts(neighbours: Neighbours, k: usize, rho: Rho) -> Result<Self, MechanismError> {
        if k == 0 {
            return Err(MechanismError::InvalidParameter(
                "at least one counting query is needed".into(),
            ));
        }
        let per = neighbours.count_l1();
        let l2_squared = (k as u64)
            .checked_mul(per * per)
            .ok_or(MechanismError::Core(privq_core::Error::Overflow))?;
        Self::build(neighbours, l2_squared, Some(k), rho)
    }

    fn build(
        neighbours: Neighbours,
        l2_squared: u64,
        dim: Option<usize>,
        rho: Rho,
    ) -> Result<Self, MechanismError> {
        Ok(DiscreteGaussian {
            neighbours,
            l2_squared,
            dim,
            rho,
            noise: Noise::for_l2_squared(l2_squared, rho)?,
        })
    }

    /// The variance parameter σ² of each coordinate's noise.
    pub fn sigma_squared(&self) -> SigmaSquared {
        self.noise.sigma_squared()
    }

    /// The squared ℓ2 sensitivity Δ₂².
    pub fn l2_squared(&self) -> u64 {
        self.l2_squared
    }

    /// ρ of one release.
    pub fn rho(&self) -> Rho {
        self.rho
    }
}

impl Mechanism for DiscreteGaussian {
    type Input = [u64];
    type Output = Vec<i64>;

    fn neighbours(&self) -> Neighbours {
        self.neighbours
    }

    fn cost(&self) -> Cost {
        Cost::Zcdp(self.rho)
    }

    /// `σ²` as the ledger shows numbers (exact when short, else four significant
    /// digits), rounded **down**: the label never claims more noise than is drawn.
    fn label(&self) -> String {
        let s = self.sigma_squared();
        format!(
            "discrete Gaussian (Δ₂² = {}, σ² = {})",
            self.l2_squared,
            crate::accountant::short_ratio(s.num(), s.den(), false)
        )
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
        super::counts::noisy_counts(&self.noise, counts, rng)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::accountant::{Accountant, AccountantError};
    use crate::seeded_rng;
    use privq_core::Epsilon;

    #[test]
    fn sensitivity_follows_the_relation_and_rho_is_exact() {
        let rho = Rho::new(1, 2).unwrap();
        let add = DiscreteGaussian::histogram(Neighbours::AddRemove, rho).unwrap();
        let rep = DiscreteGaussian::histogram(Neighbours::Replace, rho).unwrap();
        // ρ = Δ₂²/(2σ²): σ² = 1 for add/remove, 2 for replace.
        assert_eq!(add.sigma_squared(), SigmaSquared::new(1, 1).unwrap());
        assert_eq!(rep.sigma_squared(), SigmaSquared::new(2, 1).unwrap());
        assert_eq!(rep.cost(), Cost::Zcdp(rho));
        let k = DiscreteGaussian::counts(Neighbours::AddRemove, 8, rho).unwrap();
        assert_eq!(k.l2_squared(), 8);
        assert!(DiscreteGaussian::counts(Neighbours::AddRemove, 0, rho).is_err());
    }

    #[test]
    fn side_by_side_histograms_scale_the_sensitivity_by_their_number() {
        // One record is in one cell of each of k histograms: Δ₂² = k·h, h = 1 under
        // add/remove and 2 under replace, so σ² = k·h/(2ρ).
        let rho = Rho::new(1, 8).unwrap();
        for (neighbours, h) in [(Neighbours::AddRemove, 1u64), (Neighbours::Replace, 2)] {
            for k in 1..=3u64 {
                let m = DiscreteGaussian::histograms(neighbours, k as usize, rho).unwrap();
                assert_eq!(m.l2_squared(), k * h);
                assert_eq!(m.sigma_squared(), SigmaSquared::new(4 * k * h, 1).unwrap());
                assert_eq!(m.cost(), Cost::Zcdp(rho));
            }
        }
        assert!(DiscreteGaussian::histograms(Neighbours::Replace, 0, rho).is_err());
    }

    #[test]
    fn charges_a_zcdp_accountant_and_is_refused_by_a_pure_one() {
        let rho = Rho::new(1, 4).unwrap();
        let mech = DiscreteGaussian::counts(Neighbours::Replace, 2, rho).unwrap();
        let mut rng = seeded_rng(5);
        let mut pure = Accountant::pure(Epsilon::new(10, 1).unwrap());
        let err = mech.release(&[1, 2][..], &mut pure, &mut rng).unwrap_err();
        assert!(matches!(
            err,
            MechanismError::Budget(AccountantError::IncompatibleCost { .. })
        ));
        assert!(pure.ledger().is_empty());
        let mut z = Accountant::zcdp(Rho::new(1, 2).unwrap(), 1e-6).unwrap();
        assert_eq!(
            mech.release(&[1, 2][..], &mut z, &mut rng).unwrap().len(),
            2
        );
        assert!(mech.release(&[1][..], &mut z, &mut rng).is_err()); // wrong length, free
        let _ = mech.release(&[1, 2][..], &mut z, &mut rng).unwrap();
        assert_eq!(z.remaining_rho(), None);
        assert!(mech.release(&[1, 2][..], &mut z, &mut rng).is_err());
        assert_eq!(z.ledger().len(), 2);
    }
}
