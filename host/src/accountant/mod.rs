//! Privacy accounting: basic and advanced composition (thesis Thm 2.4.4 and the
//! corrected Thm 2.4.5), the inverse of advanced composition, zero-concentrated DP
//! (ρ-zCDP) and its conversion to (ε, δ), and the one [`Accountant`] every central
//! mechanism charges before it samples.
//!
//! Pure-ε spending is tracked **exactly** with [`Epsilon`] rationals, and ρ spending
//! with [`Rho`] rationals, so "total ≤ budget" is decided without rounding. Advanced
//! composition and the ρ → (ε, δ) conversions involve `√`, `exp` and `ln` and are
//! computed in `f64` for reports and planning, rounded in the safe direction:
//! [`invert_advanced`] towards the smaller per-step ε, [`zcdp_epsilon`] and
//! [`zcdp_epsilon_simple`] towards the larger ε, [`zcdp_rho_for`] towards the smaller ρ.
//! Costs printed as fixed decimals are rounded up ([`round_up`]).
//!
//! **What a charge covers.** A charge pays for the values a mechanism releases,
//! under its neighbour relation. It does not cover how long the release took: the
//! exact samplers' running time grows with the noise drawn, and a front end's
//! progress bar (position, rate, ETA) and reported wall time depend on the private
//! data (the number of records, when an iteration stops). Keep timing from
//! whoever must learn no more than the release.

mod budget_file;
mod composition;
mod cost;
mod ledger;
mod short;
mod zcdp;

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};

use privq_core::{Epsilon, Rho};

use crate::contract::Neighbours;

pub use budget_file::{
    BUDGET_FILE_VERSION, BudgetCharge, BudgetExceeded, BudgetFile, BudgetFileError, BudgetStatus,
    Cap, RunCost, utc_now,
};
pub use composition::{PrivacyLoss, advanced, basic, invert_advanced};
pub use cost::Cost;
pub use short::round_up;
pub use short::short_ratio;
pub use zcdp::{zcdp_epsilon, zcdp_epsilon_simple, zcdp_rho_for};

/// What the accountant refuses.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum AccountantError {
    /// The charge would exceed the budget; nothing was spent.
    #[error(
        "privacy budget exceeded: {label} needs epsilon {requested}, only {} remains",
        remaining.as_ref().map_or_else(|| "0".into(), |e| e.to_string())
    )]
    BudgetExceeded {
        /// What the charge is for.
        label: String,
        /// ε requested.
        requested: Epsilon,
        /// ε still available (`None` when none is left).
        remaining: Option<Epsilon>,
    },
    /// A receipt paid for less than the release it was presented to.
    #[error("a release costing {needed} was presented a receipt for only {paid}")]
    ReceiptTooSmall {
        /// What the receipt paid.
        paid: Cost,
        /// What the release costs.
        needed: Cost,
    },
    /// The charge would take the total ρ of a zCDP accountant above its budget;
    /// nothing was spent.
    #[error(
        "zCDP budget exceeded: {label} needs rho {requested}, only {} remains",
        remaining.as_ref().map_or_else(|| "0".into(), |r| r.to_string())
    )]
    RhoBudgetExceeded {
        /// What the charge is for.
        label: String,
        /// ρ requested (a pure or bounded-range ε already converted to ρ).
        requested: Rho,
        /// ρ still available (`None` when none is left).
        remaining: Option<Rho>,
    },
    /// The cost cannot be charged to this kind of accountant: an (ε, δ) cost with
    /// δ > 0 to a zCDP accountant, or a ρ-zCDP cost to a pure or (ε, δ) accountant.
    #[error("a cost of {cost} cannot be charged to a {composition} accountant")]
    IncompatibleCost {
        /// The cost.
        cost: Cost,
        /// The accountant's composition ("basic" or "zCDP").
        composition: &'static str,
    },
    /// A receipt charged under another neighbour relation (or none) than the release
    /// it is offered for states; nothing is sampled.
    #[error(
        "a receipt charged under {} cannot pay for a release under {}",
        paid.map_or("no neighbour relation", |n| n.phrase()),
        needed.phrase()
    )]
    ReceiptRelation {
        /// The relation the receipt was charged under.
        paid: Option<Neighbours>,
        /// The relation the release is stated for.
        needed: Neighbours,
    },
    /// An [`Cost::Uncertified`] charge to an accountant that did not opt in with
    /// [`Accountant::allow_uncertified`]; nothing was spent.
    #[error(
        "{label} has no proven privacy guarantee; this accountant accepts only certified costs \
         (opt in with allow_uncertified)"
    )]
    Uncertified {
        /// What the charge is for.
        label: String,
    },
    /// The charge is stated for another neighbour relation than the one this
    /// accountant is bound to ([`Accountant::bind`]), or states none; nothing was
    /// spent. Costs under different relations do not add up to a guarantee under
    /// either.
    #[error(fmt = relation_mismatch)]
    RelationMismatch {
        /// What the charge is for.
        label: String,
        /// The accountant's relation.
        bound: Neighbours,
        /// The charge's relation (`None`: not stated).
        stated: Option<Neighbours>,
    },
    /// The charge protects another privacy unit than the charges this accountant
    /// already holds (its first charge binds it to one: one record, or the units
    /// named by a column); nothing was spent. A run over rows and a run over devices
    /// do not add up to one guarantee (a device with k rows costs k times a row's ε).
    #[error(
        "{label} protects {}, but this accountant holds charges that protect {}; costs for \
         different units do not add up (use another accountant)",
        unit_name(stated.as_deref()),
        unit_name(bound.as_deref())
    )]
    UnitMismatch {
        /// What the charge is for.
        label: String,
        /// The unit of the accountant's charges (`None`: one record).
        bound: Option<String>,
        /// The unit of this charge (`None`: one record).
        stated: Option<String>,
    },
    /// A receipt issued by another accountant than the one it is presented with
    /// ([`Accountant::check_issued`]); nothing is sampled. A charge to one
    /// accountant pays for nothing released under another's budget.
    #[error("a receipt issued by {issuer} was presented to {accountant}")]
    ForeignReceipt {
        /// The accountant that issued the receipt.
        issuer: AccountantId,
        /// The accountant it was presented with.
        accountant: AccountantId,
    },
    /// A front end's session ([`Accountant::charge_binding`]) holds charges stated
    /// under no neighbour relation, so it cannot be bound to `stated`; nothing was
    /// spent. A release under one relation cannot be added to charges under none.
    #[error(
        "{label} is stated for {stated}, but this accountant holds charges stated under no \
         neighbour relation; they cannot be added up (use another accountant)"
    )]
    UnboundCharges {
        /// What the charge is for.
        label: String,
        /// The charge's relation.
        stated: Neighbours,
    },
    /// A δ is outside `[0, 1)`, or the total δ would exceed the budget's δ.
    #[error("the delta budget would be exceeded")]
    DeltaExceeded,
    /// A parameter is out of range (k = 0, ε ≤ 0, δ' ∉ (0,1), non-finite values).
    #[error("invalid parameter: {0}")]
    InvalidParameter(&'static str),
    /// Exact rational arithmetic overflowed.
    #[error("exact epsilon or rho arithmetic overflowed")]
    Overflow,
}

/// A privacy unit in words: `None` is one record, `Some(column)` the units named
/// by `column`.
fn unit_name(unit: Option<&str>) -> String {
    unit.map_or_else(
        || "one record".to_string(),
        |c| format!("privacy unit {c:?}"),
    )
}

/// [`AccountantError::RelationMismatch`]'s message.
fn relation_mismatch(
    label: &str,
    bound: &Neighbours,
    stated: &Option<Neighbours>,
    f: &mut fmt::Formatter<'_>,
) -> fmt::Result {
    match stated {
        Some(stated) => write!(
            f,
            "{label} is stated for {stated}, but this accountant is bound to {bound}"
        ),
        None => write!(
            f,
            "{label} states no neighbour relation, but this accountant is bound to {bound}"
        ),
    }
}

/// The identity of one [`Accountant`]: unique among the accountants made in this
/// process, drawn from a process-wide counter when the accountant is made (or
/// cloned: a clone is another accountant). Only this crate makes one, so a receipt's
/// issuer ([`Receipt::issuer`]) cannot be written by its holder.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct AccountantId(u64);

/// The next [`AccountantId`]. A `u64` counter incremented once per accountant
/// cannot wrap in any process's lifetime (2⁶⁴ accountants).
static NEXT_ACCOUNTANT: AtomicU64 = AtomicU64::new(1);

impl AccountantId {
    fn fresh() -> Self {
        AccountantId(NEXT_ACCOUNTANT.fetch_add(1, Ordering::Relaxed))
    }
}

impl fmt::Display for AccountantId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "accountant #{}", self.0)
    }
}

/// One recorded charge.
#[derive(Debug, Clone, PartialEq)]
pub struct Charge {
    /// What the budget was spent on.
    pub label: String,
    /// What it cost.
    pub cost: Cost,
}

/// Proof that a charge was accepted: only an [`Accountant`] makes one, and a
/// mechanism's sampling step consumes it (see [`crate::contract::Mechanism`]), so
/// nothing is sampled that was not charged first. It records the cost, the
/// neighbour relation it was charged under ([`Accountant::charge_as`], or the
/// relation a bound accountant holds) and the accountant that issued it: it pays
/// only for a release whose cost it covers under that same relation
/// ([`Receipt::check_covers`]), and an accountant accepts only its own receipts
/// ([`Accountant::check_issued`],
/// [`Mechanism::release_prepaid`](crate::contract::Mechanism::release_prepaid)).
/// Its fields are private and it is neither `Clone` nor constructible outside
/// this crate, so a receipt pays once and names its true issuer.
///
/// ```
/// use privq_host::accountant::{Accountant, AccountantError, Cost};
/// use privq_host::contract::Neighbours;
/// use privq_host::Epsilon;
/// let half = Cost::Pure(Epsilon::new(1, 2)?);
/// let mut ours = Accountant::pure(Epsilon::new(1, 1)?);
/// let mut other = Accountant::pure(Epsilon::new(100, 1)?);
/// let receipt = other.charge_as(Neighbours::Replace, "elsewhere", half)?;
/// assert_eq!(receipt.issuer(), other.id());
/// assert!(matches!(ours.check_issued(&receipt), Err(AccountantError::ForeignReceipt { .. })));
/// let mine = ours.charge_as(Neighbours::Replace, "here", half)?;
/// ours.check_issued(&mine)?;
/// // Charged under replace-one, it pays for no add/remove release.
/// assert!(mine.check_covers(&half, Neighbours::AddRemove).is_err());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct Receipt {
    cost: Cost,
    neighbours: Option<Neighbours>,
    issuer: AccountantId,
}

impl Receipt {
    /// The accountant that issued this receipt.
    pub fn issuer(&self) -> AccountantId {
        self.issuer
    }

    /// What was charged.
    pub fn cost(&self) -> Cost {
        self.cost
    }

    /// The neighbour relation the charge was stated under (`None` for a charge to an
    /// unbound accountant through [`Accountant::charge`]).
    pub fn neighbours(&self) -> Option<Neighbours> {
        self.neighbours
    }

    /// Errors unless this receipt pays for a release of cost `needed` under
    /// `neighbours`: its cost must cover `needed`, and it must have been charged
    /// under the same relation (a receipt charged without a relation pays for
    /// nothing that states one — costs under different relations do not compose).
    pub fn check_covers(
        &self,
        needed: &Cost,
        neighbours: Neighbours,
    ) -> Result<(), AccountantError> {
        if self.neighbours != Some(neighbours) {
            return Err(AccountantError::ReceiptRelation {
                paid: self.neighbours,
                needed: neighbours,
            });
        }
        if self.cost.covers(needed) {
            Ok(())
        } else {
            Err(AccountantError::ReceiptTooSmall {
                paid: self.cost,
                needed: *needed,
            })
        }
    }
}

/// The privacy accountant: a filter under basic composition, or under ρ-zCDP
/// composition. It holds a total budget, records every charge in a ledger, and
/// refuses any charge that would exceed the budget — before anything is sampled.
///
/// * [`Accountant::pure`] / [`Accountant::approximate`]: an exact ε budget (and a δ);
///   ε's add exactly, δ's add. ρ-zCDP costs are refused.
/// * [`Accountant::zcdp`] / [`Accountant::zcdp_for`]: an exact ρ budget; ρ's add
///   exactly (Bun–Steinke 2016, Lemma 2.3), pure ε is charged as ρ = ε²/2 and
///   bounded-range ε as ε²/8 (see [`Cost`]); (ε, δ) costs with δ > 0 are refused.
///   The guarantee is reported as (ε, δ) at the accountant's δ by
///   [`zcdp_epsilon`] (CKS20 Cor. 13).
///
/// ```
/// use privq_host::accountant::{Accountant, Cost};
/// use privq_host::Epsilon;
/// let mut acct = Accountant::pure(Epsilon::new(1, 1)?);
/// let _ = acct.charge("round 1", Cost::Pure(Epsilon::new(1, 2)?))?;
/// let _ = acct.charge("round 2", Epsilon::new(1, 2)?.into())?;
/// assert!(acct.charge("one too many", Epsilon::new(1, 1000)?.into()).is_err());
/// assert_eq!(acct.spent_epsilon().map(|e| e.to_string()), Some("1".to_string()));
///
/// // zCDP: ρ's add; a pure ε = 1/2 costs ρ = 1/8.
/// use privq_host::Rho;
/// let mut z = Accountant::zcdp(Rho::new(1, 2)?, 1e-6)?;
/// let _ = z.charge("gaussian counts", Rho::new(1, 4)?.into())?;
/// let _ = z.charge("laplace count", Epsilon::new(1, 2)?.into())?;
/// assert_eq!(z.spent_rho(), Some(Rho::new(3, 8)?));
/// assert!(z.charge("too much", Rho::new(1, 4)?.into()).is_err());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// Every accountant has its own [`AccountantId`]; a clone is a new accountant with
/// a new identity (and a copy of the spending so far), so a clone's receipts are
/// not the original's.
#[derive(Debug)]
pub struct Accountant {
    id: AccountantId,
    epsilon: Epsilon,
    delta: f64,
    spent: Option<Epsilon>,
    spent_delta: f64,
    zcdp: Option<ZcdpBudget>,
    ledger: Vec<Charge>,
    uncertified: bool,
    neighbours: Option<Neighbours>,
    /// The privacy unit of the charges, set by the first: `None` before any,
    /// `Some(None)` for one record, `Some(Some(column))` for the units `column`
    /// names.
    unit: Option<Option<String>>,
}

impl Clone for Accountant {
    /// A new accountant (a fresh [`AccountantId`]) with this one's budget, spending
    /// and ledger: receipts it issues are its own, never the original's.
    fn clone(&self) -> Self {
        Accountant {
            id: AccountantId::fresh(),
            epsilon: self.epsilon,
            delta: self.delta,
            spent: self.spent,
            spent_delta: self.spent_delta,
            zcdp: self.zcdp,
            ledger: self.ledger.clone(),
            uncertified: self.uncertified,
            neighbours: self.neighbours,
            unit: self.unit.clone(),
        }
    }
}

/// The ρ side of a zCDP accountant.
#[derive(Debug, Clone, Copy)]
struct ZcdpBudget {
    rho: Rho,
    spent: Option<Rho>,
}

impl Accountant {
    /// This accountant's identity, which every receipt it issues carries.
    pub fn id(&self) -> AccountantId {
        self.id
    }

    /// Errors with [`AccountantError::ForeignReceipt`] unless this accountant
    /// issued `receipt`: a receipt from any other accountant (one made with a larger
    /// budget, a clone, another session's) pays for nothing released under this
    /// one's budget.
    pub fn check_issued(&self, receipt: &Receipt) -> Result<(), AccountantError> {
        if receipt.issuer == self.id {
            Ok(())
        } else {
            Err(AccountantError::ForeignReceipt {
                issuer: receipt.issuer,
                accountant: self.id,
            })
        }
    }

    /// Binds the accountant to one neighbour relation: from now on it accepts only
    /// charges stated under it ([`Accountant::charge_as`]), so costs computed for
    /// add/remove and for replace-one neighbours are never added up. privq's
    /// commands bind their accountant to the relation they declare.
    pub fn bind(&mut self, neighbours: Neighbours) {
        self.neighbours = Some(neighbours);
    }

    /// The relation this accountant is bound to, if any.
    pub fn neighbours(&self) -> Option<Neighbours> {
        self.neighbours
    }

    /// The privacy unit this accountant's charges protect, set by its first charge:
    /// `None` before any charge, `Some(None)` for one record (every charge but
    /// [`Accountant::charge_for_unit`] with a column states one record),
    /// `Some(Some(column))` for the units `column` names. A charge for another unit
    /// is refused ([`AccountantError::UnitMismatch`]).
    pub fn privacy_unit(&self) -> Option<Option<&str>> {
        self.unit.as_ref().map(Option::as_deref)
    }

    /// Lets this accountant accept [`Cost::Uncertified`] charges (counted like pure
    /// ε, marked in the ledger). For experiments with heuristic mechanisms only: the
    /// total is then not a proven guarantee.
    pub fn allow_uncertified(&mut self) {
        self.uncertified = true;
    }

    /// A pure ε-DP budget.
    pub fn pure(epsilon: Epsilon) -> Self {
        Accountant {
            id: AccountantId::fresh(),
            epsilon,
            delta: 0.0,
            spent: None,
            spent_delta: 0.0,
            zcdp: None,
            ledger: Vec::new(),
            uncertified: false,
            neighbours: None,
            unit: None,
        }
    }

    /// An (ε, δ) budget; δ must be in `[0, 1)`.
    pub fn approximate(epsilon: Epsilon, delta: f64) -> Result<Self, AccountantError> {
        if !(0.0..1.0).contains(&delta) {
            return Err(AccountantError::DeltaExceeded);
        }
        Ok(Accountant {
            delta,
            ..Accountant::pure(epsilon)
        })
    }

    /// A ρ-zCDP budget, whose guarantee is reported as (ε, δ) at `delta ∈ (0, 1)`
    /// ([`budget`](Self::budget) is then the ε of ρ at δ by [`zcdp_epsilon`], for
    /// reports; the exact ρ is what is enforced).
    pub fn zcdp(rho: Rho, delta: f64) -> Result<Self, AccountantError> {
        let eps = zcdp_epsilon(rho.to_f64(), delta)?;
        let epsilon = Epsilon::from_f64(eps)
            .map_err(|_| AccountantError::InvalidParameter("rho converts to no epsilon"))?;
        Ok(Accountant {
            id: AccountantId::fresh(),
            epsilon,
            delta,
            spent: None,
            spent_delta: 0.0,
            zcdp: Some(ZcdpBudget { rho, spent: None }),
            ledger: Vec::new(),
            uncertified: false,
            neighbours: None,
            unit: None,
        })
    }

    /// A ρ-zCDP budget with the largest ρ whose conversion meets (ε, δ)
    /// ([`zcdp_rho_for`]); [`budget`](Self::budget) is the given ε.
    ///
    /// ```
    /// use privq_host::accountant::Accountant;
    /// use privq_host::Epsilon;
    /// let acct = Accountant::zcdp_for(Epsilon::new(1, 1)?, 1e-6)?;
    /// let rho = acct.rho_budget().unwrap().to_f64();
    /// assert!(rho > 0.0243 && rho < 0.0244);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn zcdp_for(epsilon: Epsilon, delta: f64) -> Result<Self, AccountantError> {
        let rho = zcdp_rho_for(epsilon.to_f64(), delta)?;
        Ok(Accountant {
            id: AccountantId::fresh(),
            epsilon,
            delta,
            spent: None,
            spent_delta: 0.0,
            zcdp: Some(ZcdpBudget { rho, spent: None }),
            ledger: Vec::new(),
            uncertified: false,
            neighbours: None,
            unit: None,
        })
    }

    /// A budget of exactly `cost`, for one release that gets a budget of its own: pure
    /// or approximate for ε costs (bounded range as pure), zCDP with δ = 10⁻⁹
    /// (for reports only) for a ρ cost. An uncertified cost is refused: opting in to
    /// a release without a proven guarantee is the caller's explicit act
    /// ([`Accountant::allow_uncertified`] on an accountant it built).
    pub fn exactly(cost: Cost) -> Result<Self, AccountantError> {
        match cost {
            Cost::Pure(e) | Cost::BoundedRange(e) => Ok(Accountant::pure(e)),
            Cost::Uncertified(_) => Err(AccountantError::Uncertified {
                label: format!("a budget of exactly {cost}"),
            }),
            Cost::Approximate { epsilon, delta } => Accountant::approximate(epsilon, delta),
            Cost::Zcdp(rho) => Accountant::zcdp(rho, 1e-9),
        }
    }

    /// [`Accountant::exactly`] `cost`, bound to `neighbours`: the fresh accountant of
    /// one release, whose front end chooses neither its budget nor its relation.
    pub fn exactly_for(cost: Cost, neighbours: Neighbours) -> Result<Self, AccountantError> {
        let mut accountant = Self::exactly(cost)?;
        accountant.bind(neighbours);
        Ok(accountant)
    }

    /// The whole budget as one [`Cost`]: what a run that builds this accountant
    /// through a library entry point ([`Accountant::exactly`],
    /// [`Mechanism::accountant`](crate::contract::Mechanism::accountant), a
    /// request's `accountant()`) may spend at most. `Zcdp(ρ budget)` for a zCDP
    /// accountant; `Approximate` when the budget δ is positive; `Uncertified` for an
    /// accountant that accepts uncertified charges; else `Pure`.
    ///
    /// ```
    /// use privq_host::accountant::{Accountant, Cost};
    /// use privq_host::Epsilon;
    /// let half = Epsilon::new(1, 2)?;
    /// assert_eq!(Accountant::exactly(Cost::Pure(half))?.budget_cost(), Cost::Pure(half));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn budget_cost(&self) -> Cost {
        if let Some(z) = self.zcdp {
            return Cost::Zcdp(z.rho);
        }
        if self.delta > 0.0 {
            Cost::Approximate {
                epsilon: self.epsilon,
                delta: self.delta,
            }
        } else if self.uncertified {
            Cost::Uncertified(self.epsilon)
        } else {
            Cost::Pure(self.epsilon)
        }
    }

    /// True for a ρ-zCDP accountant.
    pub fn is_zcdp(&self) -> bool {
        self.zcdp.is_some()
    }

    /// The composition rule: `"basic"` or `"zCDP"`.
    pub fn composition(&self) -> &'static str {
        if self.is_zcdp() { "zCDP" } else { "basic" }
    }

    /// Charges a release of cost `cost`; on refusal nothing is recorded.
    pub fn charge(&mut self, label: &str, cost: Cost) -> Result<Receipt, AccountantError> {
        if let Some(bound) = self.neighbours {
            return Err(AccountantError::RelationMismatch {
                label: label.to_string(),
                bound,
                stated: None,
            });
        }
        self.charge_under(None, None, label, cost)
    }

    /// [`Accountant::charge`] for a cost stated under `neighbours`, over one
    /// record: a bound accountant ([`Accountant::bind`]) refuses any other
    /// relation. Every mechanism charges through this.
    pub fn charge_as(
        &mut self,
        neighbours: Neighbours,
        label: &str,
        cost: Cost,
    ) -> Result<Receipt, AccountantError> {
        self.charge_for_unit(neighbours, None, label, cost)
    }

    /// [`Accountant::charge_as`] for a front end's session accountant: a bound
    /// session must be bound to `neighbours`; an unbound, empty one is bound to
    /// them by this charge; an unbound one holding charges (stated under no
    /// relation) is refused ([`AccountantError::UnboundCharges`]) and nothing is
    /// recorded. Every front end's `charge_to` charges through this.
    pub fn charge_binding(
        &mut self,
        neighbours: Neighbours,
        label: &str,
        cost: Cost,
    ) -> Result<Receipt, AccountantError> {
        self.charge_binding_for_unit(neighbours, None, label, cost)
    }

    /// [`Accountant::charge_binding`] for the privacy unit `unit`, as
    /// [`Accountant::charge_for_unit`] states it.
    pub fn charge_binding_for_unit(
        &mut self,
        neighbours: Neighbours,
        unit: Option<&str>,
        label: &str,
        cost: Cost,
    ) -> Result<Receipt, AccountantError> {
        let bind = match self.neighbours {
            Some(_) => false,
            None if self.ledger().is_empty() => true,
            None => {
                return Err(AccountantError::UnboundCharges {
                    label: label.to_string(),
                    stated: neighbours,
                });
            }
        };
        let receipt = self.charge_for_unit(neighbours, unit, label, cost)?;
        if bind {
            self.bind(neighbours);
        }
        Ok(receipt)
    }

    /// [`Accountant::charge_as`] for a relation over the privacy unit `unit`
    /// (`None`: one record; `Some(column)`: the units `column` names). The first
    /// charge binds the accountant to its unit; a charge for another unit is
    /// refused ([`AccountantError::UnitMismatch`]) and nothing is recorded.
    pub fn charge_for_unit(
        &mut self,
        neighbours: Neighbours,
        unit: Option<&str>,
        label: &str,
        cost: Cost,
    ) -> Result<Receipt, AccountantError> {
        if let Some(bound) = self.neighbours
            && bound != neighbours
        {
            return Err(AccountantError::RelationMismatch {
                label: label.to_string(),
                bound,
                stated: Some(neighbours),
            });
        }
        self.charge_under(Some(neighbours), unit, label, cost)
    }

    fn charge_under(
        &mut self,
        neighbours: Option<Neighbours>,
        unit: Option<&str>,
        label: &str,
        cost: Cost,
    ) -> Result<Receipt, AccountantError> {
        if let Some(bound) = &self.unit
            && bound.as_deref() != unit
        {
            return Err(AccountantError::UnitMismatch {
                label: label.to_string(),
                bound: bound.clone(),
                stated: unit.map(str::to_string),
            });
        }
        let receipt = self.charge_checked(neighbours, label, cost)?;
        if self.unit.is_none() {
            self.unit = Some(unit.map(str::to_string));
        }
        Ok(receipt)
    }

    fn charge_checked(
        &mut self,
        neighbours: Option<Neighbours>,
        label: &str,
        cost: Cost,
    ) -> Result<Receipt, AccountantError> {
        if matches!(cost, Cost::Uncertified(_)) && !self.uncertified {
            return Err(AccountantError::Uncertified {
                label: label.to_string(),
            });
        }
        if let Some(z) = self.zcdp {
            let total = self.zcdp_total(&cost)?;
            if total > z.rho {
                return Err(AccountantError::RhoBudgetExceeded {
                    label: label.to_string(),
                    requested: cost.rho()?,
                    remaining: self.remaining_rho(),
                });
            }
            self.zcdp = Some(ZcdpBudget {
                spent: Some(total),
                ..z
            });
            self.ledger.push(Charge {
                label: label.to_string(),
                cost,
            });
            return Ok(Receipt {
                cost,
                neighbours,
                issuer: self.id,
            });
        }
        let Some(epsilon) = cost.epsilon() else {
            return Err(AccountantError::IncompatibleCost {
                cost,
                composition: "basic",
            });
        };
        let delta = cost.delta();
        if !(0.0..1.0).contains(&delta) || delta_sum(self.spent_delta, delta) > self.delta {
            return Err(AccountantError::DeltaExceeded);
        }
        let total = match self.spent {
            None => epsilon,
            Some(s) => s
                .checked_add(epsilon)
                .map_err(|_| AccountantError::Overflow)?,
        };
        if total > self.epsilon {
            return Err(AccountantError::BudgetExceeded {
                label: label.to_string(),
                requested: epsilon,
                remaining: self.remaining(),
            });
        }
        self.spent = Some(total);
        self.spent_delta = delta_sum(self.spent_delta, delta);
        self.ledger.push(Charge {
            label: label.to_string(),
            cost,
        });
        Ok(Receipt {
            cost,
            neighbours,
            issuer: self.id,
        })
    }

    /// The total ρ after charging `cost` to this zCDP accountant (exact).
    fn zcdp_total(&self, cost: &Cost) -> Result<Rho, AccountantError> {
        let rho = cost.rho()?;
        match self.zcdp.and_then(|z| z.spent) {
            None => Ok(rho),
            Some(s) => s.checked_add(rho).map_err(|_| AccountantError::Overflow),
        }
    }

    /// True when a charge of `cost` would be accepted.
    pub fn can_afford(&self, cost: &Cost) -> bool {
        if let Some(z) = self.zcdp {
            return self.zcdp_total(cost).is_ok_and(|t| t <= z.rho);
        }
        let Some(epsilon) = cost.epsilon() else {
            return false;
        };
        let eps_ok = match self.spent {
            None => epsilon <= self.epsilon,
            Some(s) => s.checked_add(epsilon).is_ok_and(|t| t <= self.epsilon),
        };
        eps_ok && delta_sum(self.spent_delta, cost.delta()) <= self.delta
    }

    /// ε still available (`None` when the budget is used up exactly, and always for
    /// a zCDP accountant: see [`remaining_rho`](Self::remaining_rho)).
    pub fn remaining(&self) -> Option<Epsilon> {
        if self.is_zcdp() {
            return None;
        }
        match self.spent {
            None => Some(self.epsilon),
            Some(s) => self.epsilon.checked_sub(s).ok().flatten(),
        }
    }

    /// Exact total ε spent (`None` before the first charge, and always for a zCDP
    /// accountant: see [`spent_rho`](Self::spent_rho)).
    pub fn spent_epsilon(&self) -> Option<Epsilon> {
        self.spent
    }

    /// Total δ spent (0 for a zCDP accountant, whose δ is that of the conversion).
    pub fn spent_delta(&self) -> f64 {
        self.spent_delta
    }

    /// The total budget ε (for a zCDP accountant, the ε of its (ε, δ) target).
    pub fn budget(&self) -> Epsilon {
        self.epsilon
    }

    /// The total budget δ (for a zCDP accountant, the δ its guarantee is reported at).
    pub fn budget_delta(&self) -> f64 {
        self.delta
    }

    /// The ρ budget of a zCDP accountant.
    pub fn rho_budget(&self) -> Option<Rho> {
        self.zcdp.map(|z| z.rho)
    }

    /// Exact total ρ spent by a zCDP accountant (`None` before the first charge).
    pub fn spent_rho(&self) -> Option<Rho> {
        self.zcdp.and_then(|z| z.spent)
    }

    /// ρ still available to a zCDP accountant (`None` when used up exactly, or for
    /// other accountants).
    pub fn remaining_rho(&self) -> Option<Rho> {
        let z = self.zcdp?;
        match z.spent {
            None => Some(z.rho),
            Some(s) => z.rho.checked_sub(s).ok().flatten(),
        }
    }

    /// The (ε, δ) guarantee of what has been spent: exact ε and δ for a basic
    /// accountant; for a zCDP accountant the spent ρ converted at the budget δ by
    /// [`zcdp_epsilon`] (ε = 0 before the first charge).
    pub fn spent_guarantee(&self) -> Result<PrivacyLoss, AccountantError> {
        match self.zcdp {
            Some(z) => Ok(PrivacyLoss {
                epsilon: match z.spent {
                    Some(rho) => zcdp_epsilon(rho.to_f64(), self.delta)?,
                    None => 0.0,
                },
                delta: self.delta,
            }),
            None => Ok(PrivacyLoss {
                epsilon: self.spent.map_or(0.0, |e| e.to_f64()),
                delta: self.spent_delta,
            }),
        }
    }

    /// Every accepted charge, in order.
    pub fn ledger(&self) -> &[Charge] {
        &self.ledger
    }
}

/// `a + b` for δ's (finite, non-negative), rounded up: never below the exact sum,
/// so adding up spent δ's can never let a charge through that the exact sum would
/// refuse. (Round-to-nearest can land below it: the error term of the sum, by
/// Knuth's TwoSum, says when.)
pub(crate) fn delta_sum(a: f64, b: f64) -> f64 {
    let s = a + b;
    let bb = s - a;
    let err = (a - (s - bb)) + (b - bb);
    if err > 0.0 { s.next_up() } else { s }
}

#[cfg(test)]
mod tests;
