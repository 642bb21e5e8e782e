//! What a device releases at the end of a collection epoch, and with which local
//! randomizer — chosen at build time by one cargo feature:
//!
//! | feature | release per epoch | randomizer | bytes |
//! |---|---|---|---|
//! | `oue` (default) | the modal bin, 1 report | [`UnaryEncoding`](privq_core::local::UnaryEncoding) (optimized) over [`BINS`] items | 20 |
//! | `grr` | the modal bin, 1 report | [`Grr`](privq_core::local::Grr) | 13 |
//! | `olh` | the modal bin, 1 report | [`Olh`](privq_core::local::Olh) | 23 |
//! | `hadamard` | the modal bin, 1 report | [`HadamardResponse`](privq_core::local::HadamardResponse) | 13 |
//! | `laplace` | each bin's fraction of the readings, [`BINS`] reports | [`SqLaplace`] (grid Laplace) | 20 each |
//!
//! The default `oue` is replaced by any other one of them (`--features grr`); enabling
//! two non-default mechanisms is a compile error. Only the selected randomizer is
//! linked into the firmware.
//!
//! **Privacy unit: the device.** Every report is ε-locally differentially private
//! with respect to the device's whole data of the epoch (its modal bin, or each bin's
//! fraction of its readings, which lies in `[0, 1]`: sensitivity 1). Every report is
//! debited from the lifetime [`Ledger`] before it is randomized
//! ([`Ledger::release`]); an epoch is refused as a whole when the ledger cannot cover
//! all of its reports. By basic composition a device's reports over its lifetime are
//! `cap`-LDP, whatever the epoch count.

use privq_core::histogram::Histogram;
use privq_core::ledger::{Ledger, LedgerStore};
use privq_core::local::sq::{BinRange, StatQuery};
use privq_core::local::{LocalRandomizer, QueryId, SqLaplace};
use privq_core::rand_core::{CryptoRng, Rng};
use privq_core::{Epsilon, Error};

use crate::app::{AppError, BINS, ReportSink};

/// ε of one report of the frequency mechanisms (and of one whole epoch of `laplace`).
pub const EPOCH_EPSILON: (u64, u64) = (1, 1);

/// The device's lifetime budget: 4 epochs at [`EPOCH_EPSILON`].
pub const LIFETIME_EPSILON: (u64, u64) = (4, 1);

/// Buffer size that fits every report the firmware can write (OLH over 64 items: 23).
pub const MAX_REPORT_LEN: usize = 24;

/// [`EPOCH_EPSILON`] and [`LIFETIME_EPSILON`] as checked at compile time (no
/// run-time construction in the image).
const EPSILONS: (Epsilon, Epsilon) = match (
    Epsilon::new(EPOCH_EPSILON.0, EPOCH_EPSILON.1),
    Epsilon::new(LIFETIME_EPSILON.0, LIFETIME_EPSILON.1),
) {
    (Ok(epoch), Ok(lifetime)) => (epoch, lifetime),
    _ => panic!("EPOCH_EPSILON and LIFETIME_EPSILON must be positive fractions"),
};

/// The privacy parameter of one epoch.
pub fn epoch_epsilon() -> Result<Epsilon, Error> {
    Ok(EPSILONS.0)
}

/// The lifetime cap.
pub fn lifetime_epsilon() -> Result<Epsilon, Error> {
    Ok(EPSILONS.1)
}

/// The device's most frequent bin (the lowest such bin on ties): its private item.
pub fn modal_bin(histogram: &Histogram<BINS>) -> u32 {
    let mut best = 0;
    let mut best_count = 0;
    for (i, &c) in histogram.counts().iter().enumerate() {
        if c > best_count {
            best = i;
            best_count = c;
        }
    }
    best as u32
}

/// A release policy: what one epoch sends, at what total ε.
pub trait EpochRelease {
    /// Short name of the mechanism (`oue`, `grr`, `olh`, `hr`, `sq-laplace`).
    fn name(&self) -> &'static str;

    /// ε debited for one whole epoch.
    fn epoch_epsilon(&self) -> Epsilon;

    /// Reports written per epoch.
    fn reports_per_epoch(&self) -> u32;

    /// Debits the ledger and writes the epoch's reports, handing each to `sink`
    /// with its query id; before each debit, `sink` must reserve room for the report
    /// (its error ends the release with that report not debited). Returns the number of reports. Checks up front that the
    /// ledger covers the whole epoch: [`Error::BudgetExhausted`] or
    /// [`Error::LedgerCorrupted`] otherwise, with nothing debited or drawn.
    fn release<S: LedgerStore, R: Rng + CryptoRng + ?Sized>(
        &self,
        ledger: &mut Ledger<S>,
        histogram: &Histogram<BINS>,
        epoch: u16,
        rng: &mut R,
        sink: &mut dyn ReportSink,
    ) -> Result<u32, AppError>;
}

fn check_budget<S: LedgerStore>(ledger: &Ledger<S>, epsilon: Epsilon) -> Result<(), AppError> {
    if ledger.is_corrupted() {
        Err(AppError::Core(Error::LedgerCorrupted))
    } else if ledger.can_spend(epsilon) {
        Ok(())
    } else {
        Err(AppError::Core(Error::BudgetExhausted))
    }
}

/// One report per epoch: the [`modal_bin`] through a frequency oracle `M` over
/// [`BINS`] items, query id = the epoch.
#[derive(Debug, Clone)]
pub struct ModalBin<M>(pub M);

impl<M: LocalRandomizer<Input = u32>> EpochRelease for ModalBin<M> {
    fn name(&self) -> &'static str {
        self.0.header(QueryId(0)).mechanism.name()
    }

    fn epoch_epsilon(&self) -> Epsilon {
        self.0.epsilon()
    }

    fn reports_per_epoch(&self) -> u32 {
        1
    }

    fn release<S: LedgerStore, R: Rng + CryptoRng + ?Sized>(
        &self,
        ledger: &mut Ledger<S>,
        histogram: &Histogram<BINS>,
        epoch: u16,
        rng: &mut R,
        sink: &mut dyn ReportSink,
    ) -> Result<u32, AppError> {
        check_budget(ledger, self.0.epsilon())?;
        let mut buf = [0u8; MAX_REPORT_LEN];
        let query = QueryId(epoch);
        sink.reserve(self.0.report_len())?;
        let n = ledger.release(&self.0, &modal_bin(histogram), query, rng, &mut buf)?;
        sink.accept(query, buf.get(..n).ok_or(Error::BufferTooSmall)?)?;
        Ok(1)
    }
}

/// [`BINS`] reports per epoch: for each bin `b`, the statistical query "fraction of
/// my readings in bin `b`" answered with [`SqLaplace`] (grid Laplace, sensitivity 1)
/// at ε/[`BINS`], query id `epoch·BINS + b`. The host's mean of each query estimates
/// the fleet's average histogram of readings.
#[derive(Debug, Clone)]
pub struct BinFractions {
    mech: SqLaplace,
    epoch_epsilon: Epsilon,
}

impl BinFractions {
    /// Per-bin grid Laplace at `epoch_epsilon / BINS` on the default grid `2^−10`.
    pub fn new(epoch_epsilon: Epsilon) -> Result<BinFractions, Error> {
        let per_bin = epoch_epsilon.checked_div_int(BINS as u64)?;
        Ok(BinFractions {
            mech: SqLaplace::new(per_bin)?,
            epoch_epsilon,
        })
    }

    /// The per-bin randomizer.
    pub fn mechanism(&self) -> &SqLaplace {
        &self.mech
    }
}

impl EpochRelease for BinFractions {
    fn name(&self) -> &'static str {
        "sq-laplace"
    }

    fn epoch_epsilon(&self) -> Epsilon {
        self.epoch_epsilon
    }

    fn reports_per_epoch(&self) -> u32 {
        BINS as u32
    }

    fn release<S: LedgerStore, R: Rng + CryptoRng + ?Sized>(
        &self,
        ledger: &mut Ledger<S>,
        histogram: &Histogram<BINS>,
        epoch: u16,
        rng: &mut R,
        sink: &mut dyn ReportSink,
    ) -> Result<u32, AppError> {
        check_budget(ledger, self.epoch_epsilon)?;
        let mut buf = [0u8; MAX_REPORT_LEN];
        let first = u32::from(epoch) * BINS as u32;
        for b in 0..BINS {
            let query = u16::try_from(first + b as u32).map_err(|_| Error::Overflow)?;
            let fraction = BinRange::new(b, b + 1)?.evaluate(histogram)?;
            sink.reserve(self.mech.report_len())?;
            let n = ledger.release(&self.mech, &fraction, QueryId(query), rng, &mut buf)?;
            sink.accept(QueryId(query), buf.get(..n).ok_or(Error::BufferTooSmall)?)?;
        }
        Ok(BINS as u32)
    }
}

#[cfg(all(
    feature = "oue",
    not(any(
        feature = "grr",
        feature = "olh",
        feature = "hadamard",
        feature = "laplace"
    ))
))]
mod selected {
    use super::*;
    use privq_core::local::{UeVariant, UnaryEncoding};
    /// The configured release: OUE over the bins (feature `oue`, the default).
    pub type Selected = ModalBin<UnaryEncoding>;
    /// Builds the configured release.
    pub fn selected() -> Result<Selected, Error> {
        UnaryEncoding::new(UeVariant::Optimized, epoch_epsilon()?, BINS as u32).map(ModalBin)
    }
}

#[cfg(all(
    feature = "grr",
    not(any(feature = "olh", feature = "hadamard", feature = "laplace"))
))]
mod selected {
    use super::*;
    use privq_core::local::Grr;
    /// The configured release: k-ary randomized response (feature `grr`).
    pub type Selected = ModalBin<Grr>;
    /// Builds the configured release.
    pub fn selected() -> Result<Selected, Error> {
        Grr::new(epoch_epsilon()?, BINS as u32).map(ModalBin)
    }
}

#[cfg(all(
    feature = "olh",
    not(any(feature = "grr", feature = "hadamard", feature = "laplace"))
))]
mod selected {
    use super::*;
    use privq_core::local::Olh;
    /// The configured release: optimized local hashing (feature `olh`).
    pub type Selected = ModalBin<Olh>;
    /// Builds the configured release.
    pub fn selected() -> Result<Selected, Error> {
        Olh::new(epoch_epsilon()?, BINS as u32).map(ModalBin)
    }
}

#[cfg(all(
    feature = "hadamard",
    not(any(feature = "grr", feature = "olh", feature = "laplace"))
))]
mod selected {
    use super::*;
    use privq_core::local::HadamardResponse;
    /// The configured release: Hadamard response (feature `hadamard`).
    pub type Selected = ModalBin<HadamardResponse>;
    /// Builds the configured release.
    pub fn selected() -> Result<Selected, Error> {
        HadamardResponse::new(epoch_epsilon()?, BINS as u32).map(ModalBin)
    }
}

#[cfg(all(
    feature = "laplace",
    not(any(feature = "grr", feature = "olh", feature = "hadamard"))
))]
mod selected {
    use super::*;
    /// The configured release: per-bin grid Laplace (feature `laplace`).
    pub type Selected = BinFractions;
    /// Builds the configured release.
    pub fn selected() -> Result<Selected, Error> {
        BinFractions::new(epoch_epsilon()?)
    }
}

#[cfg(not(any(
    feature = "oue",
    feature = "grr",
    feature = "olh",
    feature = "hadamard",
    feature = "laplace"
)))]
compile_error!(
    "privq-firmware: enable one mechanism feature: oue (default), grr, olh, hadamard or laplace"
);

#[cfg(any(
    all(
        feature = "grr",
        any(feature = "olh", feature = "hadamard", feature = "laplace")
    ),
    all(feature = "olh", any(feature = "hadamard", feature = "laplace")),
    all(feature = "hadamard", feature = "laplace")
))]
compile_error!(
    "privq-firmware: enable at most one of the features grr, olh, hadamard, laplace (each replaces the default oue)"
);

pub use selected::{Selected, selected};

#[cfg(test)]
mod tests {
    extern crate std;

    use super::*;
    use crate::app::EmitTo;
    use crate::store::{FlashStore, SimFlash};
    use privq_core::Fixed;
    use privq_core::histogram::OutOfRange;
    use privq_core::ledger::MemoryStore;
    use privq_core::local::{Grr, HadamardResponse, Olh, UeVariant, UnaryEncoding};
    use privq_core::report::{Payload, decode};
    use privq_core::rng::ChaCha12;
    use rand_core::SeedableRng;
    use std::vec::Vec;

    fn histogram(items: &[usize]) -> Histogram<BINS> {
        let mut h = Histogram::equal_width(
            Fixed::from_int(0),
            Fixed::from_int(BINS as i32),
            OutOfRange::Clamp,
        )
        .unwrap();
        for &i in items {
            h.record_index(i).unwrap();
        }
        h
    }

    #[test]
    fn modal_bin_takes_the_lowest_of_the_most_frequent() {
        assert_eq!(modal_bin(&histogram(&[])), 0);
        assert_eq!(modal_bin(&histogram(&[5, 9, 9, 5, 63])), 5);
        assert_eq!(modal_bin(&histogram(&[63, 63, 2])), 63);
    }

    #[test]
    fn every_release_debits_and_stops_at_the_cap() {
        let cap = lifetime_epsilon().unwrap();
        let release = selected().unwrap();
        let mut ledger = Ledger::open(FlashStore::new(SimFlash::<512>::new()), cap).unwrap();
        let mut rng = ChaCha12::seed_from_u64(1);
        let h = histogram(&[7, 7, 8]);
        let mut emitted = Vec::new();
        for epoch in 0..4 {
            let n = release
                .release(
                    &mut ledger,
                    &h,
                    epoch,
                    &mut rng,
                    &mut EmitTo(|q, r| emitted.push((q, r.to_vec()))),
                )
                .unwrap();
            assert_eq!(n, release.reports_per_epoch());
        }
        assert_eq!(
            release.release(
                &mut ledger,
                &h,
                4,
                &mut rng,
                &mut EmitTo(|_, _| panic!("emitted"))
            ),
            Err(AppError::Core(Error::BudgetExhausted))
        );
        assert_eq!(emitted.len(), 4 * release.reports_per_epoch() as usize);
        for (q, r) in &emitted {
            let report = decode(r).unwrap();
            assert_eq!(report.header.query, *q);
            assert_eq!(report.header.mechanism.name(), release.name());
        }
    }

    /// A sink whose room runs out after `room` reports.
    struct Bounded {
        room: usize,
        got: Vec<Vec<u8>>,
    }

    impl ReportSink for Bounded {
        fn reserve(&mut self, _len: usize) -> Result<(), Error> {
            if self.got.len() < self.room {
                Ok(())
            } else {
                Err(Error::OutboxFull)
            }
        }

        fn accept(&mut self, _q: QueryId, r: &[u8]) -> Result<(), Error> {
            self.got.push(r.to_vec());
            Ok(())
        }
    }

    #[test]
    fn a_report_without_room_is_not_charged() {
        let release = selected().unwrap();
        let per = release.reports_per_epoch() as usize;
        let mut rng = ChaCha12::seed_from_u64(3);
        let h = histogram(&[1, 2]);
        let eps = release.epoch_epsilon();
        for room in [0, per - 1] {
            let mut ledger = Ledger::open(MemoryStore::new(), lifetime_epsilon().unwrap()).unwrap();
            let mut sink = Bounded {
                room,
                got: Vec::new(),
            };
            assert_eq!(
                release.release(&mut ledger, &h, 0, &mut rng, &mut sink),
                Err(AppError::Core(Error::OutboxFull))
            );
            // Exactly the queued reports were charged, ε/per each: spent = room·ε/per.
            let spent = ledger.spent();
            assert_eq!(
                u128::from(spent.num()) * u128::from(eps.den()) * per as u128,
                room as u128 * u128::from(eps.num()) * u128::from(spent.den()),
                "room for {room}"
            );
            assert_eq!(sink.got.len(), room);
        }
    }

    /// Releases one epoch of `h` with `release` on a ledger capped at one epoch and
    /// checks the reports; the next epoch must be refused.
    fn check_one_epoch<E: EpochRelease>(release: &E, name: &str, per_epoch: usize) {
        let eps = epoch_epsilon().unwrap();
        let h = histogram(&[3, 3, 40]);
        let mut rng = ChaCha12::seed_from_u64(2);
        let mut ledger = Ledger::open(MemoryStore::new(), eps).unwrap();
        let mut reports = Vec::new();
        let n = release
            .release(
                &mut ledger,
                &h,
                0,
                &mut rng,
                &mut EmitTo(|q, r| reports.push((q, r.to_vec()))),
            )
            .unwrap();
        assert_eq!(n as usize, per_epoch, "{name}");
        assert_eq!(reports.len(), per_epoch, "{name}");
        assert_eq!(release.name(), name);
        for (q, r) in &reports {
            assert!(r.len() <= MAX_REPORT_LEN, "{name}");
            let report = decode(r).unwrap();
            assert_eq!(report.header.mechanism.name(), name);
            assert_eq!(report.header.query, *q);
            if let Payload::Index(i) = report.payload {
                assert!(i < 128, "{name}");
            }
        }
        assert!(!ledger.can_spend(eps), "{name}: the epoch spent the budget");
        assert!(
            release
                .release(
                    &mut ledger,
                    &h,
                    1,
                    &mut rng,
                    &mut EmitTo(|_, _| panic!("{name}"))
                )
                .is_err()
        );
    }

    #[test]
    fn each_mechanism_writes_decodable_reports_within_the_buffer() {
        let eps = epoch_epsilon().unwrap();
        let d = BINS as u32;
        let oue = ModalBin(UnaryEncoding::new(UeVariant::Optimized, eps, d).unwrap());
        check_one_epoch(&oue, "oue", 1);
        check_one_epoch(&ModalBin(Grr::new(eps, d).unwrap()), "grr", 1);
        check_one_epoch(&ModalBin(Olh::new(eps, d).unwrap()), "olh", 1);
        check_one_epoch(&ModalBin(HadamardResponse::new(eps, d).unwrap()), "hr", 1);
        let lap = BinFractions::new(eps).unwrap();
        assert_eq!(lap.epoch_epsilon(), eps);
        check_one_epoch(&lap, "sq-laplace", BINS);
    }

    #[test]
    fn a_corrupted_ledger_refuses_the_epoch() {
        let mut ledger = Ledger::open(
            MemoryStore::with_record([0; 41]),
            lifetime_epsilon().unwrap(),
        )
        .unwrap();
        let mut rng = ChaCha12::seed_from_u64(3);
        let release = selected().unwrap();
        assert_eq!(
            release.release(
                &mut ledger,
                &histogram(&[1]),
                0,
                &mut rng,
                &mut EmitTo(|_, _| panic!())
            ),
            Err(AppError::Core(Error::LedgerCorrupted))
        );
    }
}
