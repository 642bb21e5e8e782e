//! Library enums chosen by name (on the command line, in configuration files):
//! each lists its names and parses them with [`FromStr`](std::str::FromStr),
//! failing with [`UnknownName`].

/// A name that is not one of the choices.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown {what} {given:?}; expected one of: {}", expected.join(", "))]
pub struct UnknownName {
    /// What was being chosen (e.g. "exponential-mechanism profile").
    pub what: &'static str,
    /// The name given.
    pub given: String,
    /// The names that exist.
    pub expected: &'static [&'static str],
}

/// An enum whose values have names.
pub trait Named: Sized + Copy + 'static {
    /// What is being chosen, for error messages.
    const WHAT: &'static str;
    /// Every value, in the order of [`Named::NAMES`].
    const ALL: &'static [Self];
    /// The names, one per value.
    const NAMES: &'static [&'static str];

    /// This value's name.
    fn name(self) -> &'static str;

    /// The value called `name`.
    fn from_name(name: &str) -> Result<Self, UnknownName> {
        Self::ALL
            .iter()
            .copied()
            .find(|v| v.name() == name)
            .ok_or_else(|| UnknownName {
                what: Self::WHAT,
                given: name.to_owned(),
                expected: Self::NAMES,
            })
    }
}
