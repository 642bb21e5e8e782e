//! What an audit runs: the mechanism on `D` and `D′`, the claim, the events.

use std::fmt;

use rand_chacha::ChaCha12Rng;

/// One release, flattened to numbers (a value, a vector, bin or row indices, a
/// hash of the output…); events are predicates over it.
pub type Output = Vec<f64>;

/// Runs the mechanism once on the given side with the given generator.
pub type RunFn = dyn Fn(Side, &mut ChaCha12Rng) -> Result<Output, RunError> + Send + Sync;

/// A predicate over one output.
pub type Predicate = dyn Fn(&[f64]) -> bool + Send + Sync;

/// The error a run may return (the mechanism's own, boxed).
pub type RunError = Box<dyn std::error::Error + Send + Sync>;

/// Which of the two neighbouring datasets a run uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Side {
    /// The dataset `D`.
    D,
    /// Its neighbour `D′`.
    DPrime,
}

impl fmt::Display for Side {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Side::D => "D",
            Side::DPrime => "D'",
        })
    }
}

/// The guarantee a case is checked against.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Claim {
    /// Pure ε-DP.
    Pure(f64),
    /// (ε, δ)-DP: the auditor uses the δ-adjusted ratio `ln((p − δ)/q)`.
    Approximate {
        /// ε.
        epsilon: f64,
        /// δ.
        delta: f64,
    },
}

impl Claim {
    /// The claimed ε.
    pub fn epsilon(&self) -> f64 {
        match *self {
            Claim::Pure(e) | Claim::Approximate { epsilon: e, .. } => e,
        }
    }

    /// The claimed δ (0 for pure claims).
    pub fn delta(&self) -> f64 {
        match *self {
            Claim::Pure(_) => 0.0,
            Claim::Approximate { delta, .. } => delta,
        }
    }
}

impl fmt::Display for Claim {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Claim::Pure(e) => write!(f, "{e:.3}"),
            Claim::Approximate { epsilon, delta } => write!(f, "{epsilon:.3} (δ={delta:.0e})"),
        }
    }
}

/// A named predicate over one [`Output`].
pub struct Event {
    name: String,
    test: Box<Predicate>,
}

impl Event {
    /// An event from a name and a predicate.
    pub fn new(
        name: impl Into<String>,
        test: impl Fn(&[f64]) -> bool + Send + Sync + 'static,
    ) -> Self {
        Event {
            name: name.into(),
            test: Box::new(test),
        }
    }

    /// "`output[index] ≥ threshold`" (false when the output is shorter).
    pub fn at_least(index: usize, threshold: f64) -> Self {
        Event::new(format!("out[{index}] >= {threshold}"), move |o| {
            o.get(index).is_some_and(|&v| v >= threshold)
        })
    }

    /// "`output[index] ≤ threshold`".
    pub fn at_most(index: usize, threshold: f64) -> Self {
        Event::new(format!("out[{index}] <= {threshold}"), move |o| {
            o.get(index).is_some_and(|&v| v <= threshold)
        })
    }

    /// "`output[index] == value`" (a bin or a category).
    pub fn equals(index: usize, value: f64) -> Self {
        Event::new(format!("out[{index}] == {value}"), move |o| {
            o.get(index) == Some(&value)
        })
    }

    /// "some coordinate of the output equals `value`" (e.g. a synthetic row
    /// contains a value).
    pub fn contains(value: f64) -> Self {
        Event::new(format!("contains {value}"), move |o| o.contains(&value))
    }

    /// "a hash of the whole output falls in bucket `bucket` of `buckets`" — for
    /// outputs too rich to enumerate.
    pub fn hashed(bucket: u64, buckets: u64) -> Self {
        Event::new(format!("hash mod {buckets} == {bucket}"), move |o| {
            buckets > 0 && hash_output(o) % buckets == bucket
        })
    }

    /// The event's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whether the event holds for `output`.
    pub fn holds(&self, output: &[f64]) -> bool {
        (self.test)(output)
    }
}

impl fmt::Debug for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Event").field("name", &self.name).finish()
    }
}

/// FNV-1a over the bit patterns of the output (stable across runs and machines).
fn hash_output(output: &[f64]) -> u64 {
    output.iter().fold(0xcbf2_9ce4_8422_2325, |h, v| {
        v.to_bits()
            .to_le_bytes()
            .iter()
            .fold(h, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
    })
}

/// One audit: a mechanism run on a neighbouring pair, the claim, the events.
pub struct AuditCase {
    pub(crate) name: String,
    pub(crate) mechanism: String,
    pub(crate) neighbours: String,
    pub(crate) claim: Claim,
    pub(crate) runs: u64,
    pub(crate) run: Option<Box<RunFn>>,
    pub(crate) events: Vec<Event>,
}

impl AuditCase {
    /// A case called `name` (also the mechanism's label until
    /// [`AuditCase::mechanism`] sets another) for the neighbour pattern
    /// `neighbours`, checked against `claim`, with `runs` runs per side by default.
    pub fn new(
        name: impl Into<String>,
        neighbours: impl Into<String>,
        claim: Claim,
        runs: u64,
    ) -> Self {
        let name = name.into();
        AuditCase {
            mechanism: name.clone(),
            name,
            neighbours: neighbours.into(),
            claim,
            runs,
            run: None,
            events: Vec::new(),
        }
    }

    /// Sets the mechanism's display label.
    pub fn mechanism(mut self, label: impl Into<String>) -> Self {
        self.mechanism = label.into();
        self
    }

    /// Sets the closure that runs the mechanism once on a side.
    pub fn run(
        mut self,
        run: impl Fn(Side, &mut ChaCha12Rng) -> Result<Output, RunError> + Send + Sync + 'static,
    ) -> Self {
        self.run = Some(Box::new(run));
        self
    }

    /// Adds events.
    pub fn events(mut self, events: impl IntoIterator<Item = Event>) -> Self {
        self.events.extend(events);
        self
    }

    /// Runs the mechanism once on `side` (for inspecting outputs when designing
    /// events).
    pub fn sample(&self, side: Side, rng: &mut ChaCha12Rng) -> Result<Output, super::AuditError> {
        let run = self.run.as_ref().ok_or_else(|| {
            super::AuditError::InvalidCase(format!("case {} has no run closure", self.name))
        })?;
        run(side, rng).map_err(|source| super::AuditError::Mechanism {
            run: 0,
            side,
            source,
        })
    }

    /// The case's name (the CLI's key).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The mechanism's label.
    pub fn mechanism_label(&self) -> &str {
        &self.mechanism
    }

    /// The neighbour pattern.
    pub fn neighbours(&self) -> &str {
        &self.neighbours
    }

    /// The claim.
    pub fn claim(&self) -> Claim {
        self.claim
    }

    /// Default runs per side.
    pub fn default_runs(&self) -> u64 {
        self.runs
    }

    /// The events.
    pub fn event_list(&self) -> &[Event] {
        &self.events
    }
}

impl fmt::Debug for AuditCase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AuditCase")
            .field("name", &self.name)
            .field("neighbours", &self.neighbours)
            .field("claim", &self.claim)
            .field("runs", &self.runs)
            .field("events", &self.events.len())
            .finish()
    }
}
