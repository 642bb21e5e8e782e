//! Learn(f, α, β, P) for monotone submodular f (thesis Fig. 6.3, Thm 6.3.12).

use super::decompose::{DecomposeError, Decomposition, SetFunction};

/// `ρ = α²/(6·ln(2/β))` (Fig. 6.3 step 1, with `ln(2/β)` throughout: TYPO-15); the
/// oracle tolerance the tolerant decomposition needs is `ρ/12`.
///
/// ```
/// let rho = privq_host::conjunctions::rho_for(0.3, 0.1);
/// assert!((rho - 0.09 / (6.0 * 20f64.ln())).abs() < 1e-15);
/// ```
pub fn rho_for(alpha: f64, beta: f64) -> f64 {
    alpha * alpha / (6.0 * (2.0 / beta).ln())
}

/// The learned approximation `h(S) = μ_{F(S)}`: a decomposition and one mean per piece.
#[derive(Debug, Clone)]
pub struct Learned {
    decomposition: Decomposition,
    means: Vec<f64>,
}

impl Learned {
    /// `h(S)`.
    pub fn answer(&self, s: u64) -> f64 {
        self.means[self.decomposition.position_for(s)]
    }

    /// The decomposition.
    pub fn decomposition(&self) -> &Decomposition {
        &self.decomposition
    }

    /// `μ_B` of every piece, in the decomposition's order.
    pub fn means(&self) -> &[f64] {
        &self.means
    }
}

/// Learn (Fig. 6.3): the tolerant decomposition (Algorithm 6.2) of `f` at
/// `ρ = rho_for(α, β)` with at most `cap` pieces, then `μ_B = E[g^B(S)]` for every
/// piece from `mean(f, forced = B, free)` — S drawn from the product distribution on
/// the free coordinates `U ∖ (T(B) ∪ B)` (the law of S given `F(S) = B`), B forced
/// in, T(B) out. `f`
/// may be an oracle within `ρ/12` of the true function (memoize it).
///
/// ```
/// use privq_host::conjunctions::{Coverage, Memo, learn};
/// let data = Coverage::new(3, &[(0b001, 50), (0b011, 30), (0b100, 20)])?;
/// let p = [0.5; 3];
/// let h = learn(&mut Memo::new(data.clone()), 0.3, 0.1, 1_000, |_, forced, free| {
///     Ok(data.product_mean(forced, free, &p))
/// })?;
/// // On ∅ the answer is the mean of its piece, not f(∅) = 0; on most sets it is close.
/// assert!((h.answer(0b111) - 1.0).abs() < 0.3);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn learn<F: SetFunction>(
    f: &mut F,
    alpha: f64,
    beta: f64,
    cap: usize,
    mut mean: impl FnMut(&mut F, u64, u64) -> Result<f64, DecomposeError>,
) -> Result<Learned, DecomposeError> {
    for (name, v) in [("alpha", alpha), ("beta", beta)] {
        if !(v > 0.0 && v <= 1.0) {
            return Err(DecomposeError::InvalidParameter(format!(
                "{name} = {v} must be in (0, 1]"
            )));
        }
    }
    let decomposition = Decomposition::tolerant(f, rho_for(alpha, beta), cap)?;
    let ground = decomposition.ground();
    let full = if ground == 64 {
        u64::MAX
    } else {
        (1u64 << ground) - 1
    };
    // Given F(S) = B: B in, T(B) out, every other element free.
    let means = decomposition
        .pieces()
        .iter()
        .map(|p| mean(f, p.b, !(p.t | p.b) & full))
        .collect::<Result<Vec<f64>, _>>()?;
    Ok(Learned {
        decomposition,
        means,
    })
}
