//! Per-call cost of samplers, grouped by the value they return.
//!
//! The measurement itself is target-specific (on Cortex-M: QEMU `-icount` plus SysTick,
//! see `tests/on_target.rs`); this module only groups and judges the numbers, so the
//! logic is the same everywhere and is unit-tested on the host.

use core::fmt;

use privq_core::Result;

use crate::check::{Failure, Outcome};

/// Buckets `−RADIUS..=RADIUS` get a group each; values below or above share two groups.
/// Bucket `k` holds the values `[k·w, (k+1)·w)` for the profile's bucket width `w`
/// (with `w = 1`, one group per returned value).
pub const RADIUS: i64 = 5;

const GROUPS: usize = 2 * RADIUS as usize + 3;

/// Cost statistics of the calls that returned one value (or range of values).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Group {
    /// Calls in the group.
    pub calls: u32,
    /// Fewest ticks of one call.
    pub min: u32,
    /// Most ticks of one call.
    pub max: u32,
    /// Sum of the ticks.
    pub sum: u64,
}

impl Group {
    const EMPTY: Group = Group {
        calls: 0,
        min: u32::MAX,
        max: 0,
        sum: 0,
    };

    fn add(&mut self, ticks: u32) {
        self.calls += 1;
        self.min = self.min.min(ticks);
        self.max = self.max.max(ticks);
        self.sum += u64::from(ticks);
    }
}

/// Ticks per call of one sampler, grouped by returned value.
#[derive(Debug, Clone)]
pub struct CostProfile {
    /// Name printed in the report.
    pub name: &'static str,
    /// Timer ticks per executed instruction (from calibration; 1.0 when unknown).
    pub ticks_per_instruction: f64,
    /// Width of the value buckets (1: one group per value).
    pub bucket: i64,
    groups: [Group; GROUPS],
    errors: u32,
}

impl CostProfile {
    /// An empty profile grouping values in buckets `bucket` wide (at least 1).
    pub fn new(name: &'static str, ticks_per_instruction: f64, bucket: i64) -> Self {
        CostProfile {
            name,
            ticks_per_instruction,
            bucket: bucket.max(1),
            groups: [Group::EMPTY; GROUPS],
            errors: 0,
        }
    }

    /// Runs `calls` measurements; `measure` returns one call's result and its ticks.
    pub fn measure(
        name: &'static str,
        ticks_per_instruction: f64,
        bucket: i64,
        calls: u32,
        mut measure: impl FnMut() -> (Result<i64>, u32),
    ) -> Self {
        let mut profile = CostProfile::new(name, ticks_per_instruction, bucket);
        for _ in 0..calls {
            let (value, ticks) = measure();
            profile.record(value, ticks);
        }
        profile
    }

    /// Adds one call.
    pub fn record(&mut self, value: Result<i64>, ticks: u32) {
        let Ok(v) = value else {
            self.errors += 1;
            return;
        };
        let k = v.div_euclid(self.bucket);
        let index = (k.clamp(-RADIUS - 1, RADIUS + 1) + RADIUS + 1) as usize;
        if let Some(g) = self.groups.get_mut(index) {
            g.add(ticks);
        }
    }

    /// Calls that returned an error.
    pub fn errors(&self) -> u32 {
        self.errors
    }

    /// All calls that returned a value, as one group.
    pub fn overall(&self) -> Group {
        let mut all = Group::EMPTY;
        for g in self.groups.iter().filter(|g| g.calls > 0) {
            all.calls += g.calls;
            all.min = all.min.min(g.min);
            all.max = all.max.max(g.max);
            all.sum += g.sum;
        }
        all
    }

    /// `max − min` ticks over all calls.
    pub fn spread(&self) -> u32 {
        let all = self.overall();
        all.max.saturating_sub(all.min)
    }

    /// Ticks converted to instructions.
    pub fn instructions(&self, ticks: f64) -> f64 {
        ticks / self.ticks_per_instruction
    }

    /// Passes when every call cost the same instructions, whatever it returned.
    ///
    /// Two readings of a timer that advances `r ≥ 2` ticks per instruction differ by
    /// `⌊r·n⌋` or `⌈r·n⌉` ticks for `n` instructions, so calls of equal instruction count
    /// spread over at most 1 tick, and any two counts that differ by one instruction or
    /// more are at least 2 ticks apart. With `r < 2` the test could not tell: it fails.
    pub fn check_constant(&self) -> Outcome {
        if self.ticks_per_instruction < 2.0 {
            return Err(Failure::Statistic {
                what: "ticks per instruction too low to resolve one instruction (raise -icount shift)",
                value: self.ticks_per_instruction,
                limit: 2.0,
            });
        }
        self.check_measured()?;
        if self.spread() <= 1 {
            Ok(())
        } else {
            Err(Failure::Mismatch {
                what: "cost spread in ticks between calls (must be <= 1 for constant work)",
                got: i128::from(self.spread()),
                want: 1,
            })
        }
    }

    /// Passes when calls returning different values cost different amounts: shows the
    /// measurement can see a value-dependent cost (a control for [`check_constant`](Self::check_constant)).
    pub fn check_varies(&self) -> Outcome {
        self.check_measured()?;
        if self.spread() > 1 {
            Ok(())
        } else {
            Err(Failure::Mismatch {
                what: "cost spread in ticks of a variable-work sampler (expected > 1)",
                got: i128::from(self.spread()),
                want: 2,
            })
        }
    }

    /// Passes when calls were measured, none failed and none took zero ticks.
    pub fn check_measured(&self) -> Outcome {
        let all = self.overall();
        if all.calls == 0 || all.min == 0 || self.errors > 0 {
            return Err(Failure::Mismatch {
                what: "measured calls without error and with non-zero ticks",
                got: i128::from(all.calls),
                want: i128::from(all.calls + self.errors).max(1),
            });
        }
        Ok(())
    }
}

impl fmt::Display for CostProfile {
    /// A table: one line per returned value, then the totals.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "cost {} ({:.4} ticks/instruction):",
            self.name, self.ticks_per_instruction
        )?;
        writeln!(
            f,
            "    {:>15} {:>7}  {:>15}  {:>10}",
            "value", "calls", "ticks min..max", "instr mean"
        )?;
        let w = self.bucket;
        for (i, g) in self.groups.iter().enumerate() {
            if g.calls == 0 {
                continue;
            }
            let k = i as i64 - RADIUS - 1;
            let (lo, hi) = (k * w, (k + 1) * w - 1);
            match k {
                k if k < -RADIUS => write!(f, "    {:>8}{:<7}", "<= ", hi)?,
                k if k > RADIUS => write!(f, "    {:>8}{:<7}", ">= ", lo)?,
                _ if w == 1 => write!(f, "    {lo:>8}       ")?,
                _ => write!(f, "    {lo:>7}..{hi:<6}")?,
            }
            let mean = g.sum as f64 / f64::from(g.calls);
            writeln!(
                f,
                " {:>7}  {:>7}..{:<7}  {:>10.1}",
                g.calls,
                g.min,
                g.max,
                self.instructions(mean)
            )?;
        }
        let all = self.overall();
        let mean = if all.calls > 0 {
            all.sum as f64 / f64::from(all.calls)
        } else {
            0.0
        };
        writeln!(
            f,
            "    {:>15} {:>7}  {:>7}..{:<7}  {:>10.1}  (spread {} ticks, errors {})",
            "all",
            all.calls,
            all.min,
            all.max,
            self.instructions(mean),
            self.spread(),
            self.errors
        )
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use std::string::ToString;

    use super::*;
    use privq_core::Error;

    fn profile(costs: &[(i64, u32)], ratio: f64) -> CostProfile {
        let mut p = CostProfile::new("test", ratio, 1);
        for &(v, t) in costs {
            p.record(Ok(v), t);
        }
        p
    }

    #[test]
    fn constant_cost_passes_and_one_tick_of_jitter_is_allowed() {
        let p = profile(&[(0, 100), (3, 101), (-9, 100), (42, 101)], 3.2);
        assert_eq!(p.spread(), 1);
        assert!(p.check_constant().is_ok());
        assert!(p.check_varies().is_err());
    }

    #[test]
    fn value_dependent_cost_fails() {
        let p = profile(&[(0, 100), (1, 103), (2, 106)], 3.2);
        assert!(p.check_constant().is_err());
        assert!(p.check_varies().is_ok());
        let text = p.to_string();
        assert!(text.contains("spread 6 ticks"), "{text}");
    }

    #[test]
    fn coarse_timer_or_errors_or_nothing_measured_fail() {
        assert!(
            profile(&[(0, 100), (1, 100)], 1.6)
                .check_constant()
                .is_err()
        );
        assert!(profile(&[], 3.0).check_constant().is_err());
        let mut p = profile(&[(0, 100)], 3.0);
        p.record(Err(Error::IterationBudgetExhausted), 100);
        assert!(p.check_constant().is_err());
    }

    #[test]
    fn buckets_group_ranges_of_values() {
        let mut p = CostProfile::new("wide", 2.0, 250);
        for v in [-5000, -251, -250, -1, 0, 249, 250, 5000] {
            p.record(Ok(v), 10);
        }
        let text = p.to_string();
        assert!(text.contains("-250..-1"), "{text}");
        assert!(text.contains("0..249"), "{text}");
        assert!(text.contains("<= -1251"), "{text}");
        assert!(text.contains(">= 1500"), "{text}");
        assert_eq!(p.overall().calls, 8);
    }
}
