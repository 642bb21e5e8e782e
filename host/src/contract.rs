//! The privacy contract every central (curator) mechanism of privq satisfies.
//!
//! 1. **It declares its neighbour relation** ([`Neighbours`]): which pairs of datasets
//!    the guarantee is about, and therefore what is public. Sensitivities are derived
//!    from the relation ([`Neighbours::histogram_l1`], [`Neighbours::histogram_l2_squared`],
//!    [`Neighbours::count_l1`], [`Neighbours::fraction_l1`]), never written by hand at a
//!    call site.
//! 2. **It states its cost before it runs** ([`Mechanism::cost`]: exact pure ε,
//!    (ε, δ), or exact ρ-zCDP). Parameters are validated once, at construction, into private fields.
//! 3. **It charges one [`Accountant`] before it samples.** [`Mechanism::release`]
//!    charges the cost and only then calls [`Mechanism::release_paid`], which consumes
//!    the [`Receipt`] the accountant issued; a receipt can be made by nobody else, so
//!    nothing is sampled that was not charged, and a refused charge samples nothing.
//!    A receipt names its issuer and the neighbour relation it was charged under:
//!    it pays only for a release under that relation, and
//!    [`Mechanism::release_prepaid`] accepts only a receipt of the accountant named.
//! 5. **Its guarantee covers the released values, not the run's timing.** How long
//!    a release takes (the wall time a command prints, a progress bar's rate and
//!    ETA) can depend on the private data (its number of records, how soon an
//!    iteration stops) and is not covered by the stated cost: keep it from whoever
//!    must not learn more than the release.
//! 4. **It chooses nothing from the private data** that the release depends on
//!    (domain, number of records, round count, threshold) unless that choice is
//!    itself a charged private mechanism.
//!
//! ```
//! use privq_host::accountant::Accountant;
//! use privq_host::contract::{Mechanism, Neighbours};
//! use privq_host::central::Geometric;
//! use privq_host::{Epsilon, seeded_rng};
//!
//! // Geometric::histogram derives ℓ1 sensitivity 2 from replace-one neighbours.
//! let mech = Geometric::histogram(Neighbours::Replace, Epsilon::new(1, 2)?)?;
//! let mut acct = Accountant::pure(Epsilon::new(1, 1)?);
//! let noisy = mech.release(&[10, 0, 3][..], &mut acct, &mut seeded_rng(1))?;
//! assert_eq!(noisy.len(), 3);
//! assert_eq!(acct.spent_epsilon(), Some(Epsilon::new(1, 2)?));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::fmt;

use privq_core::rand_core::{CryptoRng, Rng};

use crate::accountant::{Accountant, AccountantError, Cost, Receipt};
use crate::central::MechanismError;

/// Which datasets are neighbours: the relation a guarantee is stated for.
///
/// * [`Neighbours::AddRemove`]: `D′` is `D` with one record added or removed. The
///   number of records n is private; it must not enter a release unless it is
///   itself released privately.
/// * [`Neighbours::Replace`]: `D′` is `D` with one record replaced by another. n is
///   the same on both and is treated as **public**; a histogram then changes by up
///   to 2 in ℓ1 (one count down, one up).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Neighbours {
    /// Add or remove one record; n is private.
    AddRemove,
    /// Replace one record; n is public.
    Replace,
}

impl Neighbours {
    /// True when the number of records is public under this relation.
    pub fn n_is_public(self) -> bool {
        matches!(self, Neighbours::Replace)
    }

    /// True when one individual moves every counting query the same way (adding a
    /// record raises counts, removing one lowers them): counting queries are then
    /// monotone, and report noisy max over them needs only half the noise. Not
    /// under replace-one, where one count can go down while another goes up; and
    /// not a statement about other scores (a score that is not a count may move
    /// both ways under either relation).
    pub fn monotone_counting_queries(self) -> bool {
        matches!(self, Neighbours::AddRemove)
    }

    /// ℓ1 sensitivity of a histogram of counts over any partition of the records:
    /// 1 for add/remove, 2 for replace.
    pub fn histogram_l1(self) -> u64 {
        match self {
            Neighbours::AddRemove => 1,
            Neighbours::Replace => 2,
        }
    }

    /// Squared ℓ2 sensitivity of a histogram of counts: 1 for add/remove (one count
    /// moves by 1), 2 for replace (one count down, one up: ℓ2 = √2).
    pub fn histogram_l2_squared(self) -> u64 {
        match self {
            Neighbours::AddRemove => 1,
            Neighbours::Replace => 2,
        }
    }

    /// Sensitivity of one counting query `Σ f(x)` with `f ∈ [0, 1]`: 1 under both
    /// relations.
    pub fn count_l1(self) -> u64 {
        1
    }

    /// Sensitivity of a fraction (normalized counting) query `(1/n)·Σ f(x)` with
    /// `f ∈ [0, 1]`: `1/n` under [`Neighbours::Replace`]. Under
    /// [`Neighbours::AddRemove`] the divisor n is private, so the fraction is not a
    /// low-sensitivity function of the data: an error says to use counts instead.
    pub fn fraction_l1(self, n: u64) -> Result<f64, MechanismError> {
        match self {
            Neighbours::Replace if n > 0 => Ok(1.0 / n as f64),
            Neighbours::Replace => Err(MechanismError::InvalidParameter(
                "a fraction query needs at least one record".into(),
            )),
            Neighbours::AddRemove => Err(MechanismError::InvalidParameter(
                "fraction queries divide by the private n under add/remove-one neighbours; \
                 release counts, or declare replace-one neighbours with n public"
                    .into(),
            )),
        }
    }

    /// A short phrase for summaries: "replace-one-record neighbours".
    pub fn phrase(self) -> &'static str {
        match self {
            Neighbours::AddRemove => "add/remove-one-record neighbours",
            Neighbours::Replace => "replace-one-record neighbours",
        }
    }

    /// The summary line the CLI prints: what ε means and what is public.
    pub fn summary(self, cost: &Cost, n: u64) -> String {
        match self {
            Neighbours::Replace => {
                format!("{cost} under {}; n = {n} treated as public", self.phrase())
            }
            Neighbours::AddRemove => format!("{cost} under {}; n is private", self.phrase()),
        }
    }
}

impl fmt::Display for Neighbours {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.phrase())
    }
}

/// The shape of every central mechanism on the host (see the module docs).
///
/// Implementors provide [`Mechanism::release_paid`], which must begin by checking
/// that the receipt covers [`Mechanism::cost`] under [`Mechanism::neighbours`]
/// (`receipt.check_covers(&self.cost(), self.neighbours())?`): a receipt charged
/// under another relation, or for less, is refused with a typed error before
/// anything is sampled. Callers use [`Mechanism::release`], which charges first, or
/// [`Mechanism::release_prepaid`], which also checks that the receipt was issued by
/// the accountant the caller names. `release_paid` itself sees only the receipt:
/// called directly, it cannot tell which accountant *should* have paid, so a
/// caller who charges a throwaway accountant releases under that accountant's
/// budget, as `release` would with that accountant.
pub trait Mechanism {
    /// The private input (a dataset, a histogram, a vector of true answers).
    type Input: ?Sized;
    /// What is released.
    type Output;

    /// The neighbour relation the guarantee is stated for.
    fn neighbours(&self) -> Neighbours;

    /// The privacy cost of one release, known before it runs.
    fn cost(&self) -> Cost;

    /// A label for the accountant's ledger.
    fn label(&self) -> String;

    /// Checks the input's shape (length, universe) without looking at the values
    /// privacy-relevant content; [`Mechanism::release`] calls it **before** charging,
    /// so a malformed input costs no budget. The default accepts every input.
    fn check_input(&self, _input: &Self::Input) -> Result<(), MechanismError> {
        Ok(())
    }

    /// Samples one release that `receipt` has paid for.
    fn release_paid<R: Rng + CryptoRng + ?Sized>(
        &self,
        input: &Self::Input,
        receipt: Receipt,
        rng: &mut R,
    ) -> Result<Self::Output, MechanismError>;

    /// Charges `accountant` with the cost, then samples; a refused charge samples
    /// nothing and returns [`MechanismError::Budget`].
    fn release<R: Rng + CryptoRng + ?Sized>(
        &self,
        input: &Self::Input,
        accountant: &mut Accountant,
        rng: &mut R,
    ) -> Result<Self::Output, MechanismError> {
        self.check_input(input)?;
        let receipt = accountant.charge_as(self.neighbours(), &self.label(), self.cost())?;
        self.release_paid(input, receipt, rng)
    }

    /// Samples one release paid for by a `receipt` charged earlier to
    /// `accountant` (a plan that charges several releases first and samples them
    /// afterwards): the receipt must have been issued by `accountant`
    /// ([`Accountant::check_issued`]: one from any other accountant is
    /// [`AccountantError::ForeignReceipt`]), and it must cover the cost under this
    /// mechanism's relation ([`Receipt::check_covers`]). A malformed input
    /// ([`Mechanism::check_input`]) is refused without sampling; its charge is
    /// spent.
    ///
    /// ```
    /// use privq_host::accountant::{Accountant, AccountantError};
    /// use privq_host::central::{Geometric, MechanismError};
    /// use privq_host::contract::{Mechanism, Neighbours};
    /// use privq_host::{Epsilon, seeded_rng};
    ///
    /// let mech = Geometric::histogram(Neighbours::Replace, Epsilon::new(1, 2)?)?;
    /// let mut acct = mech.accountant()?;
    /// let receipt = acct.charge_as(mech.neighbours(), &mech.label(), mech.cost())?;
    /// let noisy = mech.release_prepaid(&[4, 5][..], &acct, receipt, &mut seeded_rng(1))?;
    /// assert_eq!(noisy.len(), 2);
    ///
    /// // A receipt from an accountant with a larger budget pays for nothing here.
    /// let mut elsewhere = Accountant::pure(Epsilon::new(100, 1)?);
    /// let foreign = elsewhere.charge_as(mech.neighbours(), "elsewhere", mech.cost())?;
    /// let err = mech.release_prepaid(&[4, 5][..], &acct, foreign, &mut seeded_rng(1));
    /// assert!(matches!(err, Err(MechanismError::Budget(AccountantError::ForeignReceipt { .. }))));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn release_prepaid<R: Rng + CryptoRng + ?Sized>(
        &self,
        input: &Self::Input,
        accountant: &Accountant,
        receipt: Receipt,
        rng: &mut R,
    ) -> Result<Self::Output, MechanismError> {
        accountant.check_issued(&receipt)?;
        receipt.check_covers(&self.cost(), self.neighbours())?;
        self.check_input(input)?;
        self.release_paid(input, receipt, rng)
    }

    /// A fresh accountant for one release: its budget is exactly
    /// [`cost`](Mechanism::cost) ([`Accountant::exactly`]) and it is bound to
    /// [`neighbours`](Mechanism::neighbours), so a front end chooses neither.
    fn accountant(&self) -> Result<Accountant, AccountantError> {
        Accountant::exactly_for(self.cost(), self.neighbours())
    }

    /// The one-shot entry point: releases under [`accountant`](Mechanism::accountant)
    /// and returns the release with it (its ledger is the release's).
    fn release_with_ledger<R: Rng + CryptoRng + ?Sized>(
        &self,
        input: &Self::Input,
        rng: &mut R,
    ) -> Result<(Self::Output, Accountant), MechanismError> {
        let mut accountant = self.accountant()?;
        let released = self.release(input, &mut accountant, rng)?;
        Ok((released, accountant))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sensitivities_follow_the_relation() {
        assert_eq!(Neighbours::Replace.histogram_l1(), 2);
        assert_eq!(Neighbours::AddRemove.histogram_l1(), 1);
        assert_eq!(Neighbours::Replace.histogram_l2_squared(), 2);
        assert_eq!(Neighbours::AddRemove.histogram_l2_squared(), 1);
        assert_eq!(Neighbours::Replace.count_l1(), 1);
        assert_eq!(Neighbours::Replace.fraction_l1(4).unwrap(), 0.25);
        assert!(Neighbours::AddRemove.fraction_l1(4).is_err());
        assert!(Neighbours::Replace.fraction_l1(0).is_err());
        assert!(Neighbours::Replace.n_is_public());
        assert!(!Neighbours::AddRemove.n_is_public());
        let cost = Cost::Pure(privq_core::Epsilon::new(1, 1).unwrap());
        assert_eq!(
            Neighbours::Replace.summary(&cost, 21_574),
            "ε = 1 under replace-one-record neighbours; n = 21574 treated as public"
        );
    }

    /// `release_paid` refuses a receipt charged under another relation (however
    /// large), and `release_prepaid` a receipt issued by another accountant; both
    /// before sampling, with typed errors.
    #[test]
    fn receipts_pay_only_under_their_relation_and_to_their_issuer() {
        use crate::central::Geometric;
        use crate::seeded_rng;
        use privq_core::Epsilon;
        let half = Epsilon::new(1, 2).unwrap();
        let mech = Geometric::histogram(Neighbours::Replace, half).unwrap();
        let mut big = Accountant::pure(Epsilon::new(100, 1).unwrap());
        let add_remove = big
            .charge_as(Neighbours::AddRemove, "add/remove", Cost::Pure(half))
            .unwrap();
        assert!(matches!(
            mech.release_paid(&[1, 2][..], add_remove, &mut seeded_rng(1)),
            Err(MechanismError::Budget(AccountantError::ReceiptRelation {
                paid: Some(Neighbours::AddRemove),
                needed: Neighbours::Replace,
            }))
        ));
        let mut acct = mech.accountant().unwrap();
        let foreign = big
            .charge_as(Neighbours::Replace, "replace", Cost::Pure(half))
            .unwrap();
        assert!(matches!(
            mech.release_prepaid(&[1, 2][..], &acct, foreign, &mut seeded_rng(1)),
            Err(MechanismError::Budget(
                AccountantError::ForeignReceipt { .. }
            ))
        ));
        let own = acct
            .charge_as(Neighbours::Replace, &mech.label(), mech.cost())
            .unwrap();
        assert_eq!(
            mech.release_prepaid(&[1, 2][..], &acct, own, &mut seeded_rng(1))
                .unwrap()
                .len(),
            2
        );
    }
}
