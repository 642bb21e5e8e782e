//! A release's time budget ([`AdaptiveConfig::time_budget`](super::AdaptiveConfig)):
//! the seconds its model fitting may take.
//!
//! The clock runs only while the mechanism works on the model — its fits, the
//! model's marginals that score the candidates, the size filter — never while it
//! reads the records (counting the one-way and the candidates' true marginals,
//! the scores' distance to them, the noisy measurements). The final fit is kept
//! [`FINAL_RESERVE`] rounds' time (at most a quarter of the budget), the rounds
//! get the rest. Before each round, `k` = the rounds' time left over the last
//! round's, rounded down: when `k ≤ 1` the round is the last and spends all the
//! ρ left (as a run whose budget runs low does anyway, AIM's last round). The
//! final fit then stops after the first mirror-descent step that ends past the
//! budget, once it has taken its minimum of 50 steps (a round model fitted from
//! the uniform one is early-stopped on purpose; one step of the final fit left
//! NLTCS worse than independent columns). So a small budget buys fewer rounds,
//! the last one a larger measurement, and a shorter final fit, never a
//! different charge: the run still spends its ρ.
//!
//! Spreading the ρ left over the `k` rounds instead (each round's step raised
//! to `ρ_left/k`) was measured and not kept: mean model 3-way TV, Adult at ε =
//! 1 (seeds 0–2) with 0.5 / 1 / 2 / 4 s 0.0786 / 0.0767 / 0.0744 / 0.0743
//! against 0.0832 / 0.0790 / 0.0750 / 0.0730 here, but Adult ×64 (seed 0) with
//! 5 / 10 s 0.0682 / 0.0586 against 0.0642 / 0.0563, and NLTCS at ε = 10
//! (seeds 0–1) with 2 / 4 / 8 s 0.0051 / 0.0035 / 0.0020 against 0.0048 /
//! 0.0031 / 0.0023: no better on the whole, and one rule more.
//!
//! Privacy: what the clock decides (which round is the last, how many steps the
//! final fit takes) is a function of the released outputs so far (the
//! measurements, the selections, the model fitted to them) and of how fast the
//! machine ran that post-processing, which does not read the data. The released
//! model is therefore post-processing of the charged measurements, with the
//! machine's speed as extra randomness independent of the data — an assumption,
//! not a theorem: the machine's state (caches after the untimed counting, whose
//! length grows with n; a thread pool shared with other releases in one process)
//! can carry a trace of the data into the timing, and no bound on that is proved
//! (the book's "Privacy arguments" says so; without a budget, the default, the
//! guarantee needs no such assumption). The other price is reproducibility:
//! with a seed, a run under a time budget may differ between machines, or
//! between two runs on one.

use std::time::{Duration, Instant};

/// The time kept for the final fit, in rounds as long as the last (at most a
/// quarter of the budget): its steps are capped at 250 against the rounds'
/// 100, and it starts warm, so it rarely takes longer.
pub(crate) const FINAL_RESERVE: u32 = 4;

/// Counts the time spent fitting against an optional budget.
#[derive(Debug)]
pub(crate) struct FitClock {
    budget: Option<Duration>,
    /// Fitting time so far.
    used: Duration,
    /// The fitting time of the last round (or of the one-way marginals' fit,
    /// before the first round): the estimate of the next round's.
    round: Duration,
}

impl FitClock {
    pub(crate) fn new(budget: Option<Duration>) -> FitClock {
        FitClock {
            budget,
            used: Duration::ZERO,
            round: Duration::ZERO,
        }
    }

    /// Runs `f`, counting its time as fitting.
    pub(crate) fn time<T>(&mut self, f: impl FnOnce() -> T) -> T {
        let start = Instant::now();
        let out = f();
        self.used += start.elapsed();
        out
    }

    /// Marks the start of a round (or of the first fit): the next
    /// [`FitClock::end_round`] takes what was timed since as that round's time.
    pub(crate) fn start_round(&self) -> Duration {
        self.used
    }

    pub(crate) fn end_round(&mut self, started: Duration) {
        self.round = self.used.saturating_sub(started);
    }

    /// How many more rounds as long as the last fit in the budget less the
    /// final fit's reserve (None: no budget, or a round too quick to count).
    pub(crate) fn rounds_left(&self) -> Option<u64> {
        let budget = self.budget?;
        if self.round.is_zero() {
            return None;
        }
        let reserve = (budget / 4).min(self.round.saturating_mul(FINAL_RESERVE));
        let left = budget.saturating_sub(reserve).saturating_sub(self.used);
        // Whole rounds of the last one's length; u64 holds any count of them
        // (Duration's nanoseconds fit in u128, the quotient of two is exact).
        let k = left.as_nanos() / self.round.as_nanos();
        Some(u64::try_from(k).unwrap_or(u64::MAX))
    }

    /// The fitting time so far.
    pub(crate) fn used(&self) -> Duration {
        self.used
    }

    /// The time the final fit may take: what is left of the budget (None: no
    /// budget).
    pub(crate) fn left(&self) -> Option<Duration> {
        self.budget.map(|b| b.saturating_sub(self.used))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rounds_left_are_whole_rounds_before_the_final_fits_reserve() {
        let mut clock = FitClock::new(Some(Duration::from_secs(100)));
        // Simulated: 40 s used, the last round took 10 s → the reserve is 25 s
        // (a quarter; 4 rounds would be 40 s), 35 s left for the rounds.
        clock.used = Duration::from_secs(40);
        clock.round = Duration::from_secs(10);
        assert_eq!(clock.rounds_left(), Some(3));
        clock.round = Duration::from_secs(30);
        assert_eq!(clock.rounds_left(), Some(1));
        // Short rounds keep 4 of theirs: 2 s rounds, a reserve of 8 s.
        clock.round = Duration::from_secs(2);
        assert_eq!(clock.rounds_left(), Some(26));
        clock.round = Duration::from_secs(30);
        clock.used = Duration::from_secs(76);
        assert_eq!(clock.rounds_left(), Some(0));
        assert_eq!(clock.left(), Some(Duration::from_secs(24)));
        clock.used = Duration::from_secs(120);
        assert_eq!(clock.left(), Some(Duration::ZERO));
        clock.round = Duration::ZERO;
        assert_eq!(clock.rounds_left(), None);
        clock.round = Duration::from_nanos(1);
        clock.used = Duration::ZERO;
        assert_eq!(clock.rounds_left(), Some(99_999_999_996));
        let free = FitClock {
            used: Duration::from_secs(1),
            round: Duration::from_secs(1),
            ..FitClock::new(None)
        };
        assert_eq!(free.rounds_left(), None);
        assert_eq!(free.left(), None);
    }

    #[test]
    fn a_round_is_what_was_timed_since_its_start() {
        let mut clock = FitClock::new(None);
        clock.used = Duration::from_secs(5);
        let started = clock.start_round();
        clock.time(|| std::thread::sleep(Duration::from_millis(2)));
        clock.end_round(started);
        assert!(clock.round >= Duration::from_millis(2));
        assert_eq!(clock.used, Duration::from_secs(5) + clock.round);
    }
}
