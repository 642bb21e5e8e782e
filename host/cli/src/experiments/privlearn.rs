//! `privq experiment privlearn`: PRIVLEARN (thesis Fig. 7.2) with the PTF learner
//! on a small binary table, with user-set sample sizes, printing the `n` and the
//! sample size the analysis (eqs. 7.6–7.8) would require beside the ones used.
//!
//! The queries are monotone conjunctions over the first `d` attributes, drawn
//! uniformly from `{0,1}^d` (the distribution G); the release is scored on fresh
//! draws from G: the fraction answered within α (Def. 7.2.3 asks for ≥ 1 − γ).

use std::error::Error;
use std::io::Write;

use privq_core::Epsilon;
use privq_core::rand_core::Rng;

use privq_host::accountant::Accountant;
use privq_host::data::{CountHistogram, MemoryCap};
use privq_host::seeded_rng;
use privq_host::threshold::{CountingQuery, PtfLearner, Requirements, fraction, privlearn};

/// The protocol's parameters.
#[derive(Debug, Clone)]
pub struct Config {
    /// Attributes kept (the low `d` bits of the cell index), d ≤ 12.
    pub d: u32,
    /// The PTF learner's degree.
    pub degree: u32,
    /// Sampled queries per run (`b_iter`).
    pub samples: usize,
    /// Fresh queries scored per run.
    pub fresh: usize,
    /// Accuracy α ∈ (0, 1/4].
    pub alpha: f64,
    /// γ ∈ (0, 1).
    pub gamma: f64,
    /// β of the requirement calculation.
    pub beta: f64,
    /// Budgets ε.
    pub epsilons: Vec<Epsilon>,
    /// Runs per ε.
    pub runs: usize,
    /// Base seed.
    pub seed: u64,
}

impl Config {
    /// d = 8, degree 2, 400 samples, 2 000 fresh queries, α = 0.25, γ = 0.2,
    /// β = 0.1, ε ∈ {0.5, 1, 2}, 3 runs, seed 5.
    pub fn standard() -> Result<Self, privq_core::Error> {
        Ok(Config {
            d: 8,
            degree: 2,
            samples: 400,
            fresh: 2000,
            alpha: 0.25,
            gamma: 0.2,
            beta: 0.1,
            epsilons: vec![
                Epsilon::new(1, 2)?,
                Epsilon::new(1, 1)?,
                Epsilon::new(2, 1)?,
            ],
            runs: 3,
            seed: 5,
        })
    }
}

/// One line of the table (means over the runs).
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// ε of each run.
    pub epsilon: Epsilon,
    /// Fraction of fresh queries answered within α.
    pub within_alpha: f64,
    /// Mean absolute error on the fresh queries.
    pub mae: f64,
    /// The same fraction for the uniform guess `2^{−|q|}` (a data-free baseline).
    pub uniform_within_alpha: f64,
    /// Runs that ended with the constant function (step 3c).
    pub constant_runs: usize,
    /// eq. 7.8's n for this ε.
    pub n_required: f64,
}

/// The histogram of the low `d` attributes of `counts` (a binary universe).
pub fn low_attributes(
    counts: &CountHistogram,
    d: u32,
) -> Result<CountHistogram, Box<dyn Error + Send + Sync>> {
    let full = privq_host::threshold::binary_dimension(counts)?;
    if d == 0 || d > full.min(12) {
        return Err(format!("d = {d} must be in 1..={}", full.min(12)).into());
    }
    let mut out = vec![0u64; 1 << d];
    let mask = (1usize << d) - 1;
    for (u, &c) in counts.counts().iter().enumerate() {
        out[u & mask] += c;
    }
    Ok(CountHistogram::from_counts(out, MemoryCap::default())?)
}

/// Runs the protocol on `counts` (a binary universe), writing the table to `out`.
pub fn run(
    counts: &CountHistogram,
    config: &Config,
    out: &mut dyn Write,
) -> Result<Vec<Row>, Box<dyn Error + Send + Sync>> {
    if config.runs == 0 || config.samples == 0 || config.fresh == 0 {
        return Err("runs, samples and fresh must be at least 1".into());
    }
    let data = low_attributes(counts, config.d)?;
    let n = data.total();
    let learner = PtfLearner::new(config.d, config.degree, 4096)?;
    let ln_q = f64::from(config.d) * 2f64.ln();
    let draw = |count: usize, rng: &mut rand_chacha::ChaCha12Rng| -> Vec<CountingQuery> {
        let mask = (1u64 << config.d) - 1;
        (0..count)
            .map(|_| CountingQuery::conjunction(rng.next_u64() & mask))
            .collect()
    };
    writeln!(
        out,
        "PRIVLEARN on {} attributes (n = {n}), PTF degree {} ({} monomials), {} sampled queries, \
         alpha = {}, gamma = {}, {} runs, seed {}",
        config.d,
        config.degree,
        learner.features(),
        config.samples,
        config.alpha,
        config.gamma,
        config.runs,
        config.seed
    )?;
    writeln!(
        out,
        "(an evaluation, not a release: the errors use the exact data, and every run spends its ε again)"
    )?;
    writeln!(
        out,
        "{:>5} {:>10} {:>8} {:>10} {:>9} {:>12} {:>14}",
        "eps", "within α", "MAE", "uniform α", "constant", "b_iter (7.7)", "n needed (7.8)"
    )?;
    let mut rows = Vec::new();
    for (e, &epsilon) in config.epsilons.iter().enumerate() {
        let needed = Requirements::thesis(
            config.alpha,
            config.beta,
            config.gamma,
            epsilon.to_f64(),
            ln_q,
            |_, g, b| learner.sample_size(g, b),
            true,
        )?;
        let (mut within, mut abs, mut constant, mut uniform) = (0usize, 0.0, 0, 0usize);
        for r in 0..config.runs {
            let seed = config.seed ^ ((e as u64) << 32) ^ ((r as u64) << 8);
            let mut rng = seeded_rng(seed);
            let sample = draw(config.samples, &mut rng);
            let fresh = draw(config.fresh, &mut rng);
            let mut budget = Accountant::pure(epsilon);
            let release = privlearn(
                &data,
                &sample,
                config.alpha,
                config.gamma,
                epsilon,
                &learner,
                &mut budget,
                &mut seeded_rng(seed ^ 0xdead),
            )?;
            constant += usize::from(release.constant().is_some());
            for q in &fresh {
                let err = (release.answer(q, |h, q| h.predict(q)) - fraction(&data, q)).abs();
                within += usize::from(err <= config.alpha);
                abs += err;
                let guess = 0.5f64.powi(q.mask().count_ones() as i32);
                uniform += usize::from((guess - fraction(&data, q)).abs() <= config.alpha);
            }
        }
        let total = (config.runs * config.fresh) as f64;
        let row = Row {
            epsilon,
            within_alpha: within as f64 / total,
            uniform_within_alpha: uniform as f64 / total,
            mae: abs / total,
            constant_runs: constant,
            n_required: needed.n_required,
        };
        writeln!(
            out,
            "{:>5} {:>10.3} {:>8.4} {:>10.3} {:>9} {:>12.3e} {:>14.3e}",
            row.epsilon.to_string(),
            row.within_alpha,
            row.mae,
            row.uniform_within_alpha,
            row.constant_runs,
            needed.b_iter,
            row.n_required
        )?;
        rows.push(row);
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn beats_the_uniform_guess_and_refuses_bad_sizes() {
        // 2^8 cells, correlated: about a third of the records have every attribute.
        let counts: Vec<u64> = (0..256u32)
            .map(|u| if u == 255 { 5_000 } else { 40 })
            .collect();
        let data = CountHistogram::from_counts(counts, MemoryCap::default()).unwrap();
        let mut config = Config::standard().unwrap();
        config.d = 6;
        config.epsilons = vec![Epsilon::new(1, 1).unwrap()];
        config.runs = 1;
        config.alpha = 0.1;
        let mut table = Vec::new();
        let rows = run(&data, &config, &mut table).unwrap();
        let table = String::from_utf8(table).unwrap();
        assert!(
            rows[0].within_alpha > rows[0].uniform_within_alpha,
            "{table}"
        );
        assert!(rows[0].n_required > 1e9, "{table}");
        config.d = 9;
        assert!(run(&data, &config, &mut Vec::new()).is_err());
        config.d = 6;
        config.samples = 0;
        assert!(run(&data, &config, &mut Vec::new()).is_err());
    }
}
