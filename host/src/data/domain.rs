//! Domains: named attributes, their values, and the indexing of the universe.

use privq_core::Fixed;
use serde::Deserialize;

use super::error::DataError;

/// What values an attribute takes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AttributeKind {
    /// A finite set of category labels, matched exactly.
    Categorical(Vec<String>),
    /// A numeric attribute cut into bins by strictly increasing fixed-point edges
    /// `e_0 < e_1 < … < e_b`: bin `i` holds `[e_i, e_{i+1})`, the last bin also holds
    /// `e_b`. Values outside `[e_0, e_b]` are rejected.
    Binned(Vec<Fixed>),
}

/// One named attribute of a domain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attribute {
    name: String,
    kind: AttributeKind,
    bounds: Option<Bounds>,
}

/// The most cells a bounded attribute's public grid has ([`Attribute::bounded`]).
pub const GRID_CELLS: usize = 1024;

/// The default number of bins for a bounded attribute (`"bins"` omitted).
pub const DEFAULT_BINS: usize = 32;

/// The public facts of a numeric attribute declared by its bounds only
/// ([`Attribute::bounded`]): the bounds, the most bins the private binning may
/// choose, whether the values are integers, and the public grid the binning
/// measures on (its cell edges). Nothing in it is read from the data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bounds {
    lo: Fixed,
    hi: Fixed,
    bins: usize,
    integer: bool,
    grid: Vec<Fixed>,
    chosen: bool,
}

impl Bounds {
    /// The declared lower bound.
    pub fn lo(&self) -> Fixed {
        self.lo
    }

    /// The declared upper bound.
    pub fn hi(&self) -> Fixed {
        self.hi
    }

    /// The number of equal-mass bins the private binning aims at.
    pub fn bins(&self) -> usize {
        self.bins
    }

    /// Whether the values are declared integers.
    pub fn integer(&self) -> bool {
        self.integer
    }

    /// The public grid's cell edges, strictly increasing (cells + 1 of them).
    pub fn grid(&self) -> &[Fixed] {
        &self.grid
    }

    /// The number of grid cells.
    pub fn cells(&self) -> usize {
        self.grid.len() - 1
    }
}

impl Attribute {
    /// A categorical attribute with the given labels (distinct, at least one).
    pub fn categorical<S: Into<String>>(
        name: impl Into<String>,
        values: impl IntoIterator<Item = S>,
    ) -> Result<Self, DataError> {
        let name = name.into();
        let values: Vec<String> = values.into_iter().map(Into::into).collect();
        if values.is_empty() {
            return Err(DataError::InvalidDomain(format!(
                "attribute {name:?} has no values"
            )));
        }
        for (i, v) in values.iter().enumerate() {
            if values[..i].contains(v) {
                return Err(DataError::InvalidDomain(format!(
                    "attribute {name:?} lists the value {v:?} twice"
                )));
            }
        }
        Ok(Attribute {
            name,
            kind: AttributeKind::Categorical(values),
            bounds: None,
        })
    }

    /// A binary attribute with values `"0"` and `"1"` (value index = the bit).
    pub fn binary(name: impl Into<String>) -> Self {
        Attribute {
            name: name.into(),
            kind: AttributeKind::Categorical(vec!["0".into(), "1".into()]),
            bounds: None,
        }
    }

    /// A numeric attribute binned on strictly increasing edges (at least two).
    pub fn binned(name: impl Into<String>, edges: Vec<Fixed>) -> Result<Self, DataError> {
        let name = name.into();
        if edges.len() < 2 {
            return Err(DataError::InvalidDomain(format!(
                "attribute {name:?} needs at least two bin edges"
            )));
        }
        if edges.windows(2).any(|w| w[0] >= w[1]) {
            return Err(DataError::InvalidDomain(format!(
                "the bin edges of attribute {name:?} must strictly increase"
            )));
        }
        Ok(Attribute {
            name,
            kind: AttributeKind::Binned(edges),
            bounds: None,
        })
    }

    /// A numeric attribute declared by its public bounds `lo < hi` only, whose
    /// bins are chosen later by a private mechanism
    /// ([`PrivateBinning`](crate::synth::bins::PrivateBinning)) into about
    /// `bins` equal-mass bins (1 ≤ `bins` ≤ [`GRID_CELLS`]; at most `2·bins`). Until then it is binned on a
    /// public grid, fixed by the bounds alone:
    ///
    /// * `integer = false`: [`GRID_CELLS`] equal cells over `[lo, hi]` (on the
    ///   Q31.32 grid, each edge rounded down);
    /// * `integer = true` (the values are integers; `lo` and `hi` must be): one
    ///   cell per run of `w` integers, `[lo + j·w, lo + (j+1)·w)`, with the
    ///   smallest width `w ≥ 1` that needs at most [`GRID_CELLS`] cells to cover
    ///   `lo, …, hi` (so `hi` has a cell of its own).
    ///
    /// Values outside the bounds are clamped into the first or last cell, as for
    /// any binned attribute ([`Attribute::index_of`]); a non-integer value of an
    /// integer attribute lands in the cell holding it (40.7 with `w = 1`: the cell
    /// of 40). `privq synth` writes a released bin's rows as grid cells drawn
    /// uniformly within the bin ([`spread`](crate::synth::bins::spread)); a bin
    /// on its own ([`Attribute::value_text`]) is written as the lower edge of its
    /// middle grid cell: a number inside the bin, an integer for an integer
    /// attribute.
    ///
    /// ```
    /// use privq_host::data::Attribute;
    /// use privq_host::Fixed;
    /// let age = Attribute::bounded("age", Fixed::from_int(17), Fixed::from_int(90), 32, true)?;
    /// assert_eq!(age.size(), 74); // one cell per year 17..=90
    /// assert!(age.needs_bins());
    /// assert!(Attribute::bounded("x", Fixed::from_int(5), Fixed::from_int(5), 32, false).is_err());
    /// # Ok::<(), privq_host::data::DataError>(())
    /// ```
    pub fn bounded(
        name: impl Into<String>,
        lo: Fixed,
        hi: Fixed,
        bins: usize,
        integer: bool,
    ) -> Result<Self, DataError> {
        let name = name.into();
        let bad = |what: String| DataError::InvalidDomain(format!("attribute {name:?}: {what}"));
        if lo >= hi {
            return Err(bad(format!("the bounds [{lo}, {hi}] need LO < HI")));
        }
        if bins == 0 || bins > GRID_CELLS {
            return Err(bad(format!("{bins} bins; give between 1 and {GRID_CELLS}")));
        }
        let (lo_bits, hi_bits) = (i128::from(lo.to_bits()), i128::from(hi.to_bits()));
        let grid: Vec<Fixed> = if integer {
            let one = 1i128 << Fixed::FRAC_BITS;
            if lo_bits % one != 0 || hi_bits % one != 0 {
                return Err(bad(format!(
                    "integer values need integer bounds, not [{lo}, {hi}]"
                )));
            }
            // lo, …, hi: span integers, in cells of w integers each.
            let span = (hi_bits - lo_bits) / one + 1;
            let cells = GRID_CELLS as i128;
            let w = (span + cells - 1) / cells;
            let g = (span + w - 1) / w;
            (0..=g)
                .map(|j| {
                    i64::try_from(lo_bits + j * w * one)
                        .map(Fixed::from_bits)
                        .map_err(|_| bad(format!("the bound {hi} leaves the fixed-point range")))
                })
                .collect::<Result<_, _>>()?
        } else {
            let g = GRID_CELLS as i128;
            if hi_bits - lo_bits < g {
                return Err(bad(format!(
                    "the bounds [{lo}, {hi}] are too close for a grid of {GRID_CELLS} cells"
                )));
            }
            // lo + ⌊(hi − lo)·j/G⌋ lies in [lo, hi]: an i64.
            (0..=g)
                .map(|j| Fixed::from_bits((lo_bits + (hi_bits - lo_bits) * j / g) as i64))
                .collect()
        };
        Ok(Attribute {
            name,
            kind: AttributeKind::Binned(grid.clone()),
            bounds: Some(Bounds {
                lo,
                hi,
                bins,
                integer,
                grid,
                chosen: false,
            }),
        })
    }

    /// The public bounds of an attribute declared by them ([`Attribute::bounded`]).
    pub fn bounds(&self) -> Option<&Bounds> {
        self.bounds.as_ref()
    }

    /// True for an attribute declared by its bounds whose bins are not chosen
    /// yet (it is binned on its public grid).
    pub fn needs_bins(&self) -> bool {
        self.bounds.as_ref().is_some_and(|b| !b.chosen)
    }

    /// This bounded attribute binned at the grid edges numbered `cuts` (strictly
    /// increasing, from 0 to the number of grid cells): bin `i` holds grid cells
    /// `cuts[i]..cuts[i+1]`. Values written out still follow the grid
    /// ([`Attribute::value_text`]).
    pub fn with_bins(&self, cuts: &[usize]) -> Result<Self, DataError> {
        let bad =
            |what: &str| DataError::InvalidDomain(format!("attribute {:?}: {what}", self.name));
        let b = self
            .bounds
            .as_ref()
            .ok_or_else(|| bad("only an attribute declared by its bounds is binned privately"))?;
        let cells = b.cells();
        if cuts.first() != Some(&0)
            || cuts.last() != Some(&cells)
            || cuts.len() < 2
            || cuts.windows(2).any(|w| w[0] >= w[1])
        {
            return Err(bad(
                "bin cuts must rise strictly from the grid's first edge to its last",
            ));
        }
        let edges = cuts.iter().map(|&c| b.grid[c]).collect();
        let mut out = Attribute::binned(self.name.clone(), edges)?;
        out.bounds = Some(Bounds {
            chosen: true,
            ..b.clone()
        });
        Ok(out)
    }

    /// The attribute's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its kind and values.
    pub fn kind(&self) -> &AttributeKind {
        &self.kind
    }

    /// How many distinct values (categories or bins) it has.
    pub fn size(&self) -> usize {
        match &self.kind {
            AttributeKind::Categorical(v) => v.len(),
            AttributeKind::Binned(e) => e.len() - 1,
        }
    }

    /// The value index of a text value, or `None` if the attribute has no such value
    /// (a category not in the list, or text that is not a number).
    ///
    /// Finite numbers outside the bin edges are clamped into the first or last bin, as
    /// bounded DP requires: whatever a record's value, it lands in some bin, so an
    /// outlier neither aborts the run (which would reveal it) nor weighs more
    /// than one record.
    pub fn index_of(&self, text: &str) -> Option<usize> {
        let text = text.trim();
        match &self.kind {
            AttributeKind::Categorical(v) => v.iter().position(|s| s == text),
            AttributeKind::Binned(edges) => {
                let last = edges.len() - 1;
                let x: Fixed = match text.parse() {
                    Ok(x) => x,
                    // A finite number beyond the fixed-point range is clamped like
                    // any outlier: above the range to the last bin, below it to the
                    // first. NaN and ±inf are not numbers a record can hold.
                    Err(_) => {
                        let v: f64 = text.parse().ok().filter(|v: &f64| v.is_finite())?;
                        match Fixed::from_f64(v) {
                            Ok(x) => x,
                            Err(_) if v > 0.0 => return Some(last - 1),
                            Err(_) => return Some(0),
                        }
                    }
                };
                // Number of edges ≤ x, minus one (0 below the first edge); the right
                // end and everything above fall in the last bin.
                let i = edges.partition_point(|e| *e <= x);
                Some(i.saturating_sub(1).min(last - 1))
            }
        }
    }

    /// The error for a value `text` on `line` that [`Attribute::index_of`] does
    /// not accept: in a numeric attribute [`DataError::NotFinite`] for NaN or ±inf
    /// and [`DataError::NotANumber`] for other non-empty text; else
    /// [`DataError::UnknownValue`].
    pub fn value_error(&self, text: &str, line: usize) -> DataError {
        let binned = matches!(self.kind, AttributeKind::Binned(_));
        let parsed = text.trim().parse::<f64>();
        let (attribute, value) = (self.name.clone(), text.to_string());
        match parsed {
            Ok(v) if binned && !v.is_finite() => DataError::NotFinite {
                attribute,
                value,
                line,
            },
            Err(_) if binned && !text.trim().is_empty() => DataError::NotANumber {
                attribute,
                value,
                line,
            },
            _ => DataError::UnknownValue {
                attribute,
                value,
                line,
            },
        }
    }

    /// A label for value index `i`: the category, or `[lo,hi)` for a bin.
    pub fn label(&self, i: usize) -> Option<String> {
        match &self.kind {
            AttributeKind::Categorical(v) => v.get(i).cloned(),
            AttributeKind::Binned(e) => {
                let (lo, hi) = (e.get(i)?, e.get(i + 1)?);
                Some(format!("[{lo},{hi})"))
            }
        }
    }

    /// The value that stands for value index `i`: the category, or the bin's
    /// midpoint `(lo + hi)/2` on the fixed-point grid, as the shortest decimal that
    /// reads back as it (a number that lands back in the bin).
    ///
    /// ```
    /// use privq_host::data::Attribute;
    /// use privq_host::Fixed;
    /// let edges = vec![Fixed::from_int(0), Fixed::from_int(18), Fixed::from_int(25)];
    /// let age = Attribute::binned("age", edges)?;
    /// assert_eq!(age.value_text(0).as_deref(), Some("9"));
    /// assert_eq!(age.value_text(1).as_deref(), Some("21.5"));
    /// assert_eq!(age.label(1).as_deref(), Some("[18,25)"));
    /// # Ok::<(), privq_host::data::DataError>(())
    /// ```
    ///
    /// An attribute declared by its bounds ([`Attribute::bounded`]) writes its bin
    /// as the lower edge of the bin's middle grid cell: with grid cells `a..b` in
    /// the bin, the edge of cell `a + ⌊(b − a)/2⌋` (an integer when the values are
    /// declared integers).
    pub fn value_text(&self, i: usize) -> Option<String> {
        match &self.kind {
            AttributeKind::Categorical(v) => v.get(i).cloned(),
            AttributeKind::Binned(e) => {
                let (lo, hi) = (e.get(i)?, e.get(i + 1)?);
                if let Some(b) = &self.bounds {
                    let a = b.grid.partition_point(|g| g < lo);
                    let z = b.grid.partition_point(|g| g < hi);
                    return b
                        .grid
                        .get(a + z.saturating_sub(a) / 2)
                        .map(|v| shortest_text(*v));
                }
                Some(midpoint_text(*lo, *hi))
            }
        }
    }
}

/// The bin's midpoint `(lo + hi)/2`, rounded down to the Q31.32 grid (so it lies
/// in `[lo, hi)`), written as the shortest decimal that reads back as exactly that
/// grid value (the midpoint of `[0, 0.1)` is written `0.05`, which reads back as the
/// grid value 0.0500000000465…).
fn midpoint_text(lo: Fixed, hi: Fixed) -> String {
    let sum = i128::from(lo.to_bits()) + i128::from(hi.to_bits());
    // ⌊sum/2⌋ lies between two i64 values, so it is one.
    let mid = Fixed::from_bits(i64::try_from(sum.div_euclid(2)).unwrap_or(i64::MAX));
    shortest_text(mid)
}

/// `mid` as the shortest decimal (up to 12 places) that reads back as exactly it,
/// else its exact decimal form.
fn shortest_text(mid: Fixed) -> String {
    let bits = i128::from(mid.to_bits());
    let (sign, mag) = if bits < 0 { ("-", -bits) } else { ("", bits) };
    let one = 1i128 << Fixed::FRAC_BITS;
    for digits in 0..=12u32 {
        let scale = 10i128.pow(digits);
        // mag ≤ 2^63 and scale ≤ 10^12: no overflow.
        let r = (mag * scale + one / 2) / one;
        let mut text = format!("{sign}{}", r / scale);
        if digits > 0 {
            text.push_str(&format!(".{:0width$}", r % scale, width = digits as usize));
        }
        if text.parse::<Fixed>().ok() == Some(mid) {
            return text;
        }
    }
    mid.to_string()
}

/// How a binned attribute's values are written out (categories are written as
/// they are either way).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BinOutput {
    /// The bin's midpoint, a number ([`Attribute::value_text`]).
    #[default]
    Midpoint,
    /// The bin's label `[lo,hi)` ([`Attribute::label`]).
    Label,
}

impl BinOutput {
    /// The text written for value index `i` of `attribute`.
    pub fn text(self, attribute: &Attribute, i: usize) -> Option<String> {
        match self {
            BinOutput::Midpoint => attribute.value_text(i),
            BinOutput::Label => attribute.label(i),
        }
    }
}

/// A finite universe: the product of named attributes.
///
/// Records are indexed in mixed radix with attribute 0 the least significant digit,
/// so in a binary domain bit `i` of a cell index is attribute `i` — the bit order of
/// every query and of the Walsh–Hadamard code.
///
/// ```
/// use privq_host::data::{Attribute, Domain};
/// let d = Domain::new(vec![Attribute::binary("smoker"), Attribute::categorical("size", ["S", "M", "L"])?])?;
/// assert_eq!(d.size(), 6);
/// assert_eq!(d.encode(&[1, 2])?, 1 + 2 * 2);
/// assert_eq!(d.decode(5), vec![1, 2]);
/// # Ok::<(), privq_host::data::DataError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Domain {
    attributes: Vec<Attribute>,
    strides: Vec<usize>,
    /// `None` when the universe has more cells than `usize` can index.
    size: Option<usize>,
}

impl Domain {
    /// A domain from its attributes (non-empty, distinct names), of any size: a
    /// universe beyond `usize` cells is a valid domain for the mechanisms that never
    /// index it (adaptive marginals); [`Domain::encode`] and dense histograms refuse
    /// it with [`DataError::UniverseTooLarge`].
    pub fn new(attributes: Vec<Attribute>) -> Result<Self, DataError> {
        if attributes.is_empty() {
            return Err(DataError::InvalidDomain("no attributes".into()));
        }
        let mut strides = Vec::with_capacity(attributes.len());
        let mut size = Some(1usize);
        for (i, a) in attributes.iter().enumerate() {
            if attributes[..i].iter().any(|b| b.name == a.name) {
                return Err(DataError::InvalidDomain(format!(
                    "the attribute name {:?} appears twice",
                    a.name
                )));
            }
            strides.push(size.unwrap_or(usize::MAX));
            size = size.and_then(|s| s.checked_mul(a.size()));
        }
        Ok(Domain {
            attributes,
            strides,
            size,
        })
    }

    /// `d` binary attributes named by `names` (universe `{0,1}^d`).
    pub fn binary<S: Into<String>>(names: impl IntoIterator<Item = S>) -> Result<Self, DataError> {
        Domain::new(names.into_iter().map(Attribute::binary).collect())
    }

    /// Parses a JSON domain spec:
    ///
    /// ```
    /// use privq_host::data::Domain;
    /// let d = Domain::from_json(r#"{"attributes": [
    ///     {"name": "smoker", "values": ["no", "yes"]},
    ///     {"name": "age", "edges": [0, 18, 65, 120]}
    /// ]}"#)?;
    /// assert_eq!(d.size(), 2 * 3);
    /// assert_eq!(d.attribute(1).unwrap().index_of("64.5"), Some(1));
    /// # Ok::<(), privq_host::data::DataError>(())
    /// ```
    ///
    /// A numeric attribute may give its public bounds only, `{"name": "income",
    /// "bounds": [0, 250000], "bins": 16, "integer": true}` (`bins` at most 1024,
    /// default 32; `integer` default false): its bins are then chosen privately
    /// by the release ([`Attribute::bounded`]). Bounds with LO ≥ HI, bounds that
    /// are not numbers, and `bins` out of range are refused naming the attribute.
    ///
    /// A second, compact form maps each attribute name to its number of values
    /// `k`: the attribute is categorical with the labels `"0"`, …, `"k−1"` (data that
    /// are already value indices, as in the common benchmark versions of Adult).
    /// Attributes keep the order of the file.
    ///
    /// ```
    /// use privq_host::data::Domain;
    /// let d = Domain::from_json(r#"{"age": 85, "sex": 2}"#)?;
    /// assert_eq!(d.size(), 170);
    /// assert_eq!(d.attribute(0).unwrap().name(), "age");
    /// assert_eq!(d.attribute(1).unwrap().index_of("1"), Some(1));
    /// # Ok::<(), privq_host::data::DataError>(())
    /// ```
    pub fn from_json(text: &str) -> Result<Self, DataError> {
        if text.contains(super::PLACEHOLDER) {
            return Err(DataError::InvalidDomain(format!(
                "the spec still holds {:?} placeholders (a template from `privq domain init`): \
                 replace each with the attribute's public values or bin edges",
                super::PLACEHOLDER
            )));
        }
        let value: serde_json::Value = serde_json::from_str(text)?;
        if value
            .as_object()
            .is_some_and(|o| !o.contains_key("attributes"))
        {
            let sizes: SizesSpec = serde_json::from_str(text)?;
            let attrs = sizes
                .0
                .into_iter()
                .map(|(name, k)| match k {
                    0 => Err(DataError::InvalidDomain(format!(
                        "attribute {name:?} has no values"
                    ))),
                    k if k > 1 << 24 => Err(DataError::InvalidDomain(format!(
                        "attribute {name:?} has {k} values; at most 2^24 are supported"
                    ))),
                    k => Attribute::categorical(name, (0..k).map(|v| v.to_string())),
                })
                .collect::<Result<Vec<_>, _>>()?;
            return Domain::new(attrs);
        }
        let spec: DomainSpec = serde_json::from_value(value)?;
        let mut attrs = Vec::with_capacity(spec.attributes.len());
        for a in spec.attributes {
            let edge = |e: &EdgeSpec, what: &str| {
                let text = match e {
                    EdgeSpec::Text(s) => s.clone(),
                    EdgeSpec::Number(n) => n.to_string(),
                };
                text.parse::<Fixed>().map_err(|err| {
                    DataError::InvalidDomain(format!(
                        "attribute {:?}: {what} {text:?}: {err}",
                        a.name
                    ))
                })
            };
            if a.bounds.is_none() && (a.bins.is_some() || a.integer.is_some()) {
                return Err(DataError::InvalidDomain(format!(
                    "attribute {:?}: \"bins\" and \"integer\" go with \"bounds\"",
                    a.name
                )));
            }
            attrs.push(match (&a.values, &a.edges, &a.bounds) {
                (Some(values), None, None) => Attribute::categorical(&a.name, values.clone())?,
                (None, Some(edges), None) => {
                    let edges = edges
                        .iter()
                        .map(|e| edge(e, "bin edge"))
                        .collect::<Result<Vec<_>, _>>()?;
                    Attribute::binned(&a.name, edges)?
                }
                (None, None, Some(bounds)) => {
                    let [lo, hi] = bounds.as_slice() else {
                        return Err(DataError::InvalidDomain(format!(
                            "attribute {:?}: \"bounds\" is [LO, HI], two numbers",
                            a.name
                        )));
                    };
                    let bins = match a.bins {
                        None => DEFAULT_BINS,
                        Some(b) => usize::try_from(b).unwrap_or(usize::MAX),
                    };
                    Attribute::bounded(
                        &a.name,
                        edge(lo, "bound")?,
                        edge(hi, "bound")?,
                        bins,
                        a.integer.unwrap_or(false),
                    )?
                }
                _ => {
                    return Err(DataError::InvalidDomain(format!(
                        "attribute {:?} needs exactly one of \"values\", \"edges\" or \"bounds\"",
                        a.name
                    )));
                }
            });
        }
        Domain::new(attrs)
    }

    /// The attributes, in index order.
    pub fn attributes(&self) -> &[Attribute] {
        &self.attributes
    }

    /// Attribute `i`.
    pub fn attribute(&self, i: usize) -> Option<&Attribute> {
        self.attributes.get(i)
    }

    /// The position of the attribute called `name`.
    pub fn position(&self, name: &str) -> Option<usize> {
        self.attributes.iter().position(|a| a.name == name)
    }

    /// Number of attributes.
    pub fn dims(&self) -> usize {
        self.attributes.len()
    }

    /// Number of cells N of the universe, saturating at `usize::MAX` for a universe
    /// beyond the index type (see [`Domain::cells`]).
    pub fn size(&self) -> usize {
        self.size.unwrap_or(usize::MAX)
    }

    /// Number of cells N of the universe as a float, exact up to 2⁵³ and never
    /// saturating (2⁶⁴ binary attributes give `1.8e19`): for messages.
    pub fn cells(&self) -> f64 {
        self.attributes.iter().map(|a| a.size() as f64).product()
    }

    /// The index stride of each attribute.
    pub fn strides(&self) -> &[usize] {
        &self.strides
    }

    /// True when every attribute has exactly two values (universe `{0,1}^d`).
    pub fn is_binary(&self) -> bool {
        self.attributes.iter().all(|a| a.size() == 2)
    }

    /// The cell index of a record given by value indices, one per attribute.
    pub fn encode(&self, values: &[usize]) -> Result<usize, DataError> {
        if values.len() != self.attributes.len() {
            return Err(DataError::LengthMismatch {
                expected: self.attributes.len(),
                got: values.len(),
            });
        }
        if self.size.is_none() {
            return Err(DataError::UniverseTooLarge {
                cells: u64::MAX,
                bytes: u64::MAX,
                cap: 0,
            });
        }
        let mut index = 0;
        for ((a, &v), &s) in self.attributes.iter().zip(values).zip(&self.strides) {
            if v >= a.size() {
                return Err(DataError::UnknownValue {
                    attribute: a.name.clone(),
                    value: v.to_string(),
                    line: 0,
                });
            }
            index += v * s;
        }
        Ok(index)
    }

    /// The value indices of cell `index` (taken modulo the universe size).
    pub fn decode(&self, index: usize) -> Vec<usize> {
        let mut rest = index % self.size();
        self.attributes
            .iter()
            .map(|a| {
                let v = rest % a.size();
                rest /= a.size();
                v
            })
            .collect()
    }

    /// Value index of attribute `attr` in cell `index`.
    pub fn value_of(&self, index: usize, attr: usize) -> Option<usize> {
        let a = self.attributes.get(attr)?;
        Some(index / self.strides[attr] % a.size())
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DomainSpec {
    attributes: Vec<AttributeSpec>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AttributeSpec {
    name: String,
    values: Option<Vec<String>>,
    edges: Option<Vec<EdgeSpec>>,
    bounds: Option<Vec<EdgeSpec>>,
    bins: Option<u64>,
    integer: Option<bool>,
}

/// `{"name": size, …}` in the order of the file.
struct SizesSpec(Vec<(String, u64)>);

impl<'de> Deserialize<'de> for SizesSpec {
    fn deserialize<D: serde::Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = SizesSpec;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an object mapping attribute names to their numbers of values")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<SizesSpec, A::Error> {
                let mut out = Vec::new();
                while let Some(entry) = map.next_entry::<String, u64>()? {
                    out.push(entry);
                }
                Ok(SizesSpec(out))
            }
        }
        de.deserialize_map(Visit)
    }
}

#[derive(Deserialize)]
#[serde(untagged)]
enum EdgeSpec {
    Text(String),
    Number(serde_json::Number),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binary_bit_order() {
        let d = Domain::binary(["a", "b", "c"]).unwrap();
        assert!(d.is_binary());
        assert_eq!(d.encode(&[1, 0, 1]).unwrap(), 0b101);
        assert_eq!(d.decode(0b110), vec![0, 1, 1]);
        assert_eq!(d.value_of(0b110, 2), Some(1));
    }

    #[test]
    fn bins_are_written_as_exact_midpoints_or_labels() {
        let fixed = |s: &str| s.parse::<Fixed>().unwrap();
        let a = Attribute::binned(
            "x",
            vec![
                fixed("-3"),
                fixed("0"),
                fixed("0.1"),
                fixed("0.5"),
                fixed("18"),
            ],
        )
        .unwrap();
        assert_eq!(a.value_text(0).as_deref(), Some("-1.5"));
        // The midpoint of [0.1, 0.5) on the grid is the grid value nearest 0.3.
        assert_eq!(a.value_text(2).as_deref(), Some("0.3"));
        assert_eq!(a.value_text(3).as_deref(), Some("9.25"));
        assert_eq!(a.value_text(4), None);
        // 0.1 is stored as the nearest Q31.32 value, 429496730·2⁻³²; the midpoint of
        // [0, 0.1) is that halved, a grid value, written as the shortest decimal that
        // reads back as it exactly.
        assert_eq!(fixed("0.1").to_bits(), 429_496_730);
        let mid = "0.05";
        assert_eq!(a.value_text(1).as_deref(), Some(mid));
        assert_eq!(fixed(mid).to_bits(), 429_496_730 / 2);
        assert_eq!(a.index_of(mid), Some(1));
        // An odd sum is rounded down to the grid, so the midpoint stays in its bin
        // (a half-step midpoint would read back as the next bin's lower edge).
        let tiny = Attribute::binned(
            "t",
            vec![Fixed::ZERO, Fixed::from_bits(1), Fixed::from_int(1)],
        )
        .unwrap();
        assert_eq!(tiny.value_text(0).as_deref(), Some("0"));
        assert_eq!(tiny.index_of("0"), Some(0));
        let wide = Attribute::binned("w", vec![Fixed::MIN, Fixed::MAX]).unwrap();
        let w = wide.value_text(0).unwrap();
        assert_eq!(w.parse::<Fixed>().unwrap(), Fixed::from_bits(-1), "{w}");
        assert_eq!(
            BinOutput::Label.text(&a, 1).as_deref(),
            Some("[0,0.1000000000931322574615478515625)")
        );
        assert_eq!(BinOutput::Midpoint.text(&a, 1).as_deref(), Some(mid));
        let c = Attribute::categorical("c", ["x", "y"]).unwrap();
        assert_eq!(BinOutput::Midpoint.text(&c, 1).as_deref(), Some("y"));
        assert_eq!(c.value_text(1), c.label(1));
    }

    #[test]
    fn bounded_attributes_have_a_public_grid_and_refuse_bad_bounds() {
        let spec = |a: &str| Domain::from_json(&format!(r#"{{"attributes": [{a}]}}"#));
        let d = spec(r#"{"name": "gain", "bounds": [0, 99999], "integer": true}"#).unwrap();
        let gain = d.attribute(0).unwrap();
        let b = gain.bounds().unwrap();
        // 100 000 integers in cells of 98: 1021 cells, the last one holds 99 999.
        assert_eq!(
            (b.cells(), b.bins(), b.integer()),
            (1021, DEFAULT_BINS, true)
        );
        assert_eq!(gain.index_of("99999"), Some(1020));
        assert_eq!(gain.index_of("1e9"), Some(1020)); // clamped
        assert_eq!(gain.index_of("-5"), Some(0));
        assert_eq!(gain.value_text(1).as_deref(), Some("98"));
        let d = spec(r#"{"name": "h", "bounds": ["0.5", 2], "bins": 4}"#).unwrap();
        let h = d.attribute(0).unwrap();
        assert_eq!(h.size(), GRID_CELLS);
        assert_eq!(h.value_text(0).as_deref(), Some("0.5"));
        assert_eq!(h.index_of("2"), Some(GRID_CELLS - 1));
        // Cuts choose bins on the grid; a bin is written as its middle cell's edge.
        let four = h.with_bins(&[0, 256, 512, GRID_CELLS]).unwrap();
        assert_eq!(four.size(), 3);
        assert!(!four.needs_bins() && h.needs_bins());
        assert_eq!(four.value_text(0).as_deref(), Some("0.6875"));
        assert_eq!(four.index_of("0.6875"), Some(0));
        assert!(h.with_bins(&[0, 5, 5, GRID_CELLS]).is_err());
        assert!(h.with_bins(&[0, 5]).is_err());
        for (bad, says) in [
            (r#"{"name": "age", "bounds": [90, 17]}"#, "LO < HI"),
            (r#"{"name": "age", "bounds": [5, 5]}"#, "LO < HI"),
            (r#"{"name": "age", "bounds": ["-inf", 5]}"#, "bound"),
            (r#"{"name": "age", "bounds": ["NaN", 5]}"#, "bound"),
            (r#"{"name": "age", "bounds": [0, 1e12]}"#, "bound"),
            (r#"{"name": "age", "bounds": [0]}"#, "two numbers"),
            (r#"{"name": "age", "bounds": [0, 9], "bins": 0}"#, "bins"),
            (
                r#"{"name": "age", "bounds": [0, 9], "bins": 100000}"#,
                "bins",
            ),
            (
                r#"{"name": "age", "bounds": [0, "9.5"], "integer": true}"#,
                "integer bounds",
            ),
            (
                r#"{"name": "age", "bounds": [0, "0.0000001"]}"#,
                "too close",
            ),
            (r#"{"name": "age", "edges": [0, 9], "bins": 3}"#, "go with"),
            (
                r#"{"name": "age", "edges": [0, 9], "bounds": [0, 9]}"#,
                "exactly one",
            ),
        ] {
            let e = spec(bad).unwrap_err();
            assert!(matches!(e, DataError::InvalidDomain(_)), "{bad}: {e}");
            assert!(e.to_string().contains("\"age\""), "{bad}: {e}");
            assert!(e.to_string().contains(says), "{bad}: {e}");
        }
    }

    #[test]
    fn bins_are_half_open_with_closed_end() {
        let a = Attribute::binned(
            "x",
            vec![Fixed::from_int(0), Fixed::from_int(10), Fixed::from_int(20)],
        )
        .unwrap();
        assert_eq!(a.index_of("0"), Some(0));
        assert_eq!(a.index_of("9.999"), Some(0));
        assert_eq!(a.index_of("10"), Some(1));
        assert_eq!(a.index_of("20"), Some(1));
        // Outliers are clamped into the end bins, never refused.
        assert_eq!(a.index_of("20.001"), Some(1));
        assert_eq!(a.index_of("1e6"), Some(1));
        // Beyond the fixed-point range, too; non-finite numbers are not values.
        assert_eq!(a.index_of("3000000000"), Some(1));
        assert_eq!(a.index_of("1e300"), Some(1));
        assert_eq!(a.index_of("-1e300"), Some(0));
        for bad in ["inf", "-inf", "NaN", "1e999"] {
            assert_eq!(a.index_of(bad), None, "{bad}");
            assert!(matches!(
                a.value_error(bad, 3),
                DataError::NotFinite { line: 3, .. }
            ));
        }
        assert!(matches!(
            a.value_error("abc", 3),
            DataError::NotANumber { line: 3, .. }
        ));
        assert_eq!(a.index_of("-1"), Some(0));
        assert_eq!(a.index_of("abc"), None);
    }

    #[test]
    fn bad_specs_are_typed_errors() {
        assert!(matches!(
            Domain::from_json(r#"{"attributes": []}"#),
            Err(DataError::InvalidDomain(_))
        ));
        assert!(matches!(
            Domain::from_json(r#"{"attributes": [{"name": "a", "values": []}]}"#),
            Err(DataError::InvalidDomain(_))
        ));
        assert!(matches!(
            Domain::from_json(r#"{"attributes": [{"name": "a", "edges": [2, 1]}]}"#),
            Err(DataError::InvalidDomain(_))
        ));
        assert!(matches!(
            Domain::from_json(r#"{"attributes": [{"name": "a"}]}"#),
            Err(DataError::InvalidDomain(_))
        ));
        assert!(matches!(Domain::from_json("{"), Err(DataError::Json(_))));
        assert!(matches!(
            Domain::from_json(r#"{"a": 0}"#),
            Err(DataError::InvalidDomain(_))
        ));
        assert!(matches!(
            Domain::from_json(r#"{"a": "x"}"#),
            Err(DataError::Json(_))
        ));
        assert!(matches!(
            Domain::from_json(r#"{"a": 2, "a": 3}"#),
            Err(DataError::InvalidDomain(_))
        ));
        assert!(matches!(
            Domain::binary(["a", "a"]),
            Err(DataError::InvalidDomain(_))
        ));
        // 2^70 cells do not fit the index type: a valid domain that cannot be
        // encoded or held as a dense histogram.
        let names: Vec<String> = (0..70).map(|i| format!("a{i}")).collect();
        let d = Domain::binary(names).unwrap();
        assert_eq!(d.size(), usize::MAX);
        assert_eq!(d.cells(), 2f64.powi(70));
        assert!(matches!(
            d.encode(&[0; 70]),
            Err(DataError::UniverseTooLarge { .. })
        ));
        assert!(matches!(
            crate::data::CountHistogram::zeros(&d, crate::data::MemoryCap::default()),
            Err(DataError::UniverseTooLarge { .. })
        ));
    }
}
