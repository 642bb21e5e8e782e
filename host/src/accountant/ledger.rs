//! The ledger as text ([`Accountant::ledger_text`]) and as JSON
//! ([`Accountant::ledger_json`]).

use privq_core::{Epsilon, Rho};

use super::short::{delta_text, fraction, short_f64};
use super::{Accountant, AccountantError, Cost, zcdp_epsilon, zcdp_epsilon_simple};

impl Accountant {
    /// The ledger as text, one charge per line and a total — the one format every
    /// `privq` command prints. A zCDP ledger shows each charge's ρ and the total ρ
    /// with its (ε, δ) by the tight (CKS20) and the simple (Bun–Steinke) conversion.
    ///
    /// Short: an ε or ρ whose numerator and denominator have at most four digits is
    /// shown exactly (`ε = 1/2`), any other as four significant digits **rounded
    /// up** (`ρ = 0.125`, `ρ = 0.1235`, `1.235e-7`) — costs, totals and the budget
    /// alike, so no cost reads smaller than it is and a spent total never reads
    /// above a budget it fits in. δ is `0`, or its shortest form when that has at
    /// most four digits (`1e-9`), else four digits rounded up; the converted ε is
    /// rounded up to four digits. [`Accountant::ledger_text_exact`] has every
    /// fraction exact, as does [`Accountant::ledger_json`].
    ///
    /// ```
    /// use privq_host::accountant::Accountant;
    /// use privq_host::Epsilon;
    /// let mut acct = Accountant::pure(Epsilon::new(1, 1)?);
    /// let _ = acct.charge("a", Epsilon::new(123_456_789, 987_654_321)?.into())?;
    /// assert!(acct.ledger_text().contains("1. a: ε = 0.125\n"));
    /// assert!(acct.ledger_text().contains("total: ε = 0.125 of 1, δ = 0 of 0 "));
    /// assert!(acct.ledger_text_exact().contains("ε = 13717421/109739369 of 1, δ = 0 of 0"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn ledger_text(&self) -> String {
        self.ledger_lines(false)
    }

    /// The ledger as text with every ε and ρ an exact fraction and a nonzero δ in
    /// Rust's shortest round-trip `{:e}` form (`1e-9`), the converted ε to six decimals.
    pub fn ledger_text_exact(&self) -> String {
        self.ledger_lines(true)
    }

    fn ledger_lines(&self, exact: bool) -> String {
        let mut out = String::new();
        for (i, c) in self.ledger.iter().enumerate() {
            let cost = c.cost.describe(exact);
            match (self.zcdp, &c.cost) {
                (Some(_), Cost::Zcdp(_)) | (None, _) => {
                    out.push_str(&format!("  {:>3}. {}: {cost}\n", i + 1, c.label));
                }
                (Some(_), _) => {
                    let rho = c
                        .cost
                        .rho()
                        .map_or_else(|_| "?".into(), |r| fraction(r.num(), r.den(), exact));
                    out.push_str(&format!(
                        "  {:>3}. {}: {cost} → ρ = {rho}\n",
                        i + 1,
                        c.label
                    ));
                }
            }
        }
        if let Some(z) = self.zcdp {
            let spent = z
                .spent
                .map_or_else(|| "0".into(), |r| fraction(r.num(), r.den(), exact));
            let rho = z.spent.map_or(0.0, |r| r.to_f64());
            let conv = |f: fn(f64, f64) -> Result<f64, AccountantError>| {
                if rho > 0.0 {
                    f(rho, self.delta).map_or_else(
                        |_| "?".into(),
                        |e| {
                            if exact {
                                format!("{e:.6}")
                            } else {
                                short_f64(e)
                            }
                        },
                    )
                } else {
                    "0".into()
                }
            };
            out.push_str(&format!(
                "  total: ρ = {spent} of {} ⇒ (ε, δ) = ({}, {}) [CKS20 Cor. 13; \
                 simple bound ε = {}] ({} charge(s), zCDP composition)",
                fraction(z.rho.num(), z.rho.den(), exact),
                conv(zcdp_epsilon),
                delta_text(self.delta, exact),
                conv(zcdp_epsilon_simple),
                self.ledger.len()
            ));
            return out;
        }
        let eps = |e: Epsilon| fraction(e.num(), e.den(), exact);
        let spent = self.spent.map_or_else(|| "0".into(), eps);
        out.push_str(&format!(
            "  total: ε = {spent} of {}, δ = {} of {} ({} charge(s), basic composition)",
            eps(self.epsilon),
            delta_text(self.spent_delta, exact),
            delta_text(self.delta, exact),
            self.ledger.len()
        ));
        if self.has_uncertified() {
            out.push_str(" — UNCERTIFIED: includes ε with no proof that it holds");
        }
        out
    }

    /// True when an [`Cost::Uncertified`] charge was accepted.
    fn has_uncertified(&self) -> bool {
        self.ledger
            .iter()
            .any(|c| matches!(c.cost, Cost::Uncertified(_)))
    }

    /// The ledger as JSON: `{"budget": {...}, "spent": {...}, "charges": [...]}`
    /// with every ε (and ρ) as an exact fraction string and as a float. A zCDP
    /// ledger has `"composition": "zCDP"`, ρ budget and spent ρ, the spent ρ
    /// converted to (ε, δ) (`"epsilon"`: CKS20 Cor. 13, `"epsilon_simple"`:
    /// Bun–Steinke Prop. 1.3), and each charge's ρ.
    pub fn ledger_json(&self) -> serde_json::Value {
        fn eps(e: Option<Epsilon>) -> serde_json::Value {
            match e {
                Some(e) => serde_json::json!({"exact": e.to_string(), "value": e.to_f64()}),
                None => serde_json::json!({"exact": "0", "value": 0.0}),
            }
        }
        fn rho(r: Option<Rho>) -> serde_json::Value {
            match r {
                Some(r) => serde_json::json!({"exact": r.to_string(), "value": r.to_f64()}),
                None => serde_json::json!({"exact": "0", "value": 0.0}),
            }
        }
        if let Some(z) = self.zcdp {
            let spent = z.spent.map_or(0.0, |r| r.to_f64());
            let convert = |f: fn(f64, f64) -> Result<f64, AccountantError>| {
                if spent > 0.0 {
                    f(spent, self.delta).ok()
                } else {
                    Some(0.0)
                }
            };
            return serde_json::json!({
                "composition": "zCDP",
                "budget": {"rho": rho(Some(z.rho)), "epsilon": eps(Some(self.epsilon)), "delta": self.delta},
                "spent": {
                    "rho": rho(z.spent),
                    "epsilon": convert(zcdp_epsilon),
                    "epsilon_simple": convert(zcdp_epsilon_simple),
                    "delta": self.delta,
                },
                "charges": self.ledger.iter().map(|c| serde_json::json!({
                    "label": c.label,
                    "cost": c.cost.to_string(),
                    "rho": rho(c.cost.rho().ok()),
                })).collect::<Vec<_>>(),
            });
        }
        serde_json::json!({
            "composition": "basic",
            "budget": {"epsilon": eps(Some(self.epsilon)), "delta": self.delta},
            "spent": {"epsilon": eps(self.spent), "delta": self.spent_delta},
            "certified": !self.has_uncertified(),
            "charges": self.ledger.iter().map(|c| serde_json::json!({
                "label": c.label,
                "epsilon": eps(c.cost.epsilon()),
                "delta": c.cost.delta(),
                "certified": !matches!(c.cost, Cost::Uncertified(_)),
            })).collect::<Vec<_>>(),
        })
    }
}
