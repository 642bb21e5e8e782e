//! Simulated fleets of devices: each device holds one item, privatizes it with the
//! core randomizer (exactly the code that runs on the microcontroller) using its
//! own seeded RNG, and emits one report.
//!
//! Device `i` of a fleet with seed `s` uses `ChaCha12Rng::from_seed(seed)` where
//! `seed` is `s` (8 bytes LE) ‖ `i` (8 bytes LE) ‖ 16 zero bytes, so a device
//! (or a QEMU run of the firmware) given the same two numbers produces the same
//! report bytes. Fixed seeds are for simulation only.

use std::thread;

use privq_core::local::{
    BinaryRr, Grr, HadamardResponse, LocalRandomizer, Olh, QueryId, UeVariant, UnaryEncoding,
};
use privq_core::report::Header;
use privq_core::{Epsilon, Error};
use rand_chacha::ChaCha12Rng;
use rand_core::{CryptoRng, Rng, SeedableRng};

use super::aggregate::{Aggregator, ReportKind};
use super::decode::RejectCounts;

/// The RNG of simulated device `device` in fleet `fleet_seed` (a 64-bit seed:
/// tests and demos; [`device_rng_from`] takes a full 32-byte [`FleetSeed`]).
pub fn device_rng(fleet_seed: u64, device: u64) -> ChaCha12Rng {
    device_rng_from(&FleetSeed::from(fleet_seed), device)
}

/// The 32-byte ChaCha seed of a simulated fleet. A real run draws it from a
/// cryptographic generator ([`FleetSeed::random`]); `From<u64>` (the seed in
/// the first 8 bytes, the rest zero) is for reproducible tests and demos and
/// gives the same device streams as [`device_rng`]. `Debug` never shows it.
#[derive(Clone, PartialEq, Eq)]
pub struct FleetSeed([u8; 32]);

impl FleetSeed {
    /// 32 bytes from a cryptographic generator.
    pub fn random<R: Rng + CryptoRng + ?Sized>(rng: &mut R) -> Self {
        let mut seed = [0u8; 32];
        rng.fill_bytes(&mut seed);
        FleetSeed(seed)
    }

    /// The seed's bytes.
    pub fn from_bytes(bytes: [u8; 32]) -> Self {
        FleetSeed(bytes)
    }
}

impl From<u64> for FleetSeed {
    fn from(seed: u64) -> Self {
        let mut bytes = [0u8; 32];
        bytes[..8].copy_from_slice(&seed.to_le_bytes());
        FleetSeed(bytes)
    }
}

impl std::fmt::Debug for FleetSeed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("FleetSeed(..)")
    }
}

/// The RNG of simulated device `device` in the fleet seeded by `fleet`: the ChaCha
/// key is the fleet seed with bytes 8..16 XORed with the device index (for a
/// `From<u64>` seed exactly [`device_rng`]'s key).
pub fn device_rng_from(fleet: &FleetSeed, device: u64) -> ChaCha12Rng {
    let mut seed = fleet.0;
    for (b, d) in seed[8..16].iter_mut().zip(device.to_le_bytes()) {
        *b ^= d;
    }
    ChaCha12Rng::from_seed(seed)
}

/// A frequency randomizer chosen at run time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MechanismSpec {
    /// Binary randomized response (domain 2).
    Rr(BinaryRr),
    /// k-ary randomized response.
    Grr(Grr),
    /// Unary encoding (SUE or OUE).
    Ue(UnaryEncoding),
    /// Optimized local hashing.
    Olh(Olh),
    /// Hadamard response.
    Hr(HadamardResponse),
}

impl MechanismSpec {
    /// Mechanism names accepted by [`MechanismSpec::parse`].
    pub const NAMES: [&'static str; 6] = ["rr", "grr", "sue", "oue", "olh", "hr"];

    /// `name` ∈ {rr, grr, sue, oue, olh, hr} at ε over `domain` items.
    pub fn parse(name: &str, epsilon: Epsilon, domain: u32) -> Result<MechanismSpec, Error> {
        Ok(match name {
            "rr" => MechanismSpec::Rr(BinaryRr::new(epsilon)?),
            "grr" => MechanismSpec::Grr(Grr::new(epsilon, domain)?),
            "sue" => MechanismSpec::Ue(UnaryEncoding::new(UeVariant::Symmetric, epsilon, domain)?),
            "oue" => MechanismSpec::Ue(UnaryEncoding::new(UeVariant::Optimized, epsilon, domain)?),
            "olh" => MechanismSpec::Olh(Olh::new(epsilon, domain)?),
            "hr" | "hadamard" => MechanismSpec::Hr(HadamardResponse::new(epsilon, domain)?),
            _ => return Err(Error::Parse),
        })
    }

    /// The number of items.
    pub fn domain(&self) -> u32 {
        match self {
            MechanismSpec::Rr(_) => 2,
            MechanismSpec::Grr(m) => m.domain(),
            MechanismSpec::Ue(m) => m.domain(),
            MechanismSpec::Olh(m) => m.domain(),
            MechanismSpec::Hr(m) => m.domain(),
        }
    }

    /// Bytes per report.
    pub fn report_len(&self) -> usize {
        match self {
            MechanismSpec::Rr(m) => m.report_len(),
            MechanismSpec::Grr(m) => m.report_len(),
            MechanismSpec::Ue(m) => m.report_len(),
            MechanismSpec::Olh(m) => m.report_len(),
            MechanismSpec::Hr(m) => m.report_len(),
        }
    }

    /// The report header for `query`.
    pub fn header(&self, query: QueryId) -> Header {
        match self {
            MechanismSpec::Rr(m) => m.header(query),
            MechanismSpec::Grr(m) => m.header(query),
            MechanismSpec::Ue(m) => m.header(query),
            MechanismSpec::Olh(m) => m.header(query),
            MechanismSpec::Hr(m) => m.header(query),
        }
    }

    /// The aggregator kind of this mechanism's reports.
    pub fn kind(&self, query: QueryId) -> ReportKind {
        let g = match self {
            MechanismSpec::Olh(m) => m.g(),
            _ => 0,
        };
        ReportKind::from_header(&self.header(query), g)
    }

    /// Privatizes `item` into `buf` (see [`LocalRandomizer::privatize_into`]).
    pub fn privatize_into<R: Rng + CryptoRng + ?Sized>(
        &self,
        item: u32,
        query: QueryId,
        rng: &mut R,
        buf: &mut [u8],
    ) -> Result<usize, Error> {
        match self {
            MechanismSpec::Rr(m) => m.privatize_into(&(item == 1), query, rng, buf),
            MechanismSpec::Grr(m) => m.privatize_into(&item, query, rng, buf),
            MechanismSpec::Ue(m) => m.privatize_into(&item, query, rng, buf),
            MechanismSpec::Olh(m) => m.privatize_into(&item, query, rng, buf),
            MechanismSpec::Hr(m) => m.privatize_into(&item, query, rng, buf),
        }
    }
}

/// A population of devices, each holding one item.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fleet {
    items: Vec<u32>,
    domain: u32,
}

impl Fleet {
    /// A fleet of `n` devices whose item counts follow `weights` as exactly as
    /// integers allow (largest-remainder rounding; the order of devices is by item).
    pub fn from_weights(weights: &[f64], n: usize) -> Result<Fleet, Error> {
        let total: f64 = weights.iter().sum();
        if weights.is_empty() || weights.iter().any(|w| !w.is_finite() || *w < 0.0) || total <= 0.0
        {
            return Err(Error::EmptyRange);
        }
        let domain = u32::try_from(weights.len()).map_err(|_| Error::InvalidDomain)?;
        let exact: Vec<f64> = weights.iter().map(|w| w / total * n as f64).collect();
        let mut counts: Vec<usize> = exact.iter().map(|x| x.floor() as usize).collect();
        let mut order: Vec<usize> = (0..weights.len()).collect();
        order.sort_by(|&a, &b| {
            (exact[b] - exact[b].floor()).total_cmp(&(exact[a] - exact[a].floor()))
        });
        let short = n.saturating_sub(counts.iter().sum());
        for &i in order.iter().cycle().take(short) {
            counts[i] += 1;
        }
        let items = counts
            .iter()
            .enumerate()
            .flat_map(|(v, &c)| std::iter::repeat_n(v as u32, c))
            .collect();
        Ok(Fleet { items, domain })
    }

    /// A fleet from explicit items.
    pub fn from_items(items: Vec<u32>, domain: u32) -> Fleet {
        Fleet { items, domain }
    }

    /// Number of devices.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Whether the fleet is empty.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// The devices' items.
    pub fn items(&self) -> &[u32] {
        &self.items
    }

    /// The exact fraction of devices holding each item.
    pub fn true_frequencies(&self) -> Vec<f64> {
        let mut c = vec![0u64; self.domain as usize];
        for &i in &self.items {
            if let Some(x) = c.get_mut(i as usize) {
                *x += 1;
            }
        }
        let n = self.items.len().max(1) as f64;
        c.iter().map(|&x| x as f64 / n).collect()
    }

    /// Every device privatizes its item with `spec` (query id 0), in parallel on
    /// all available cores; devices use [`device_rng`]`(seed, index)`.
    pub fn privatize(&self, spec: &MechanismSpec, seed: u64) -> Result<ReportBatch, Error> {
        self.privatize_with_progress(spec, seed, &|_| {})
    }

    /// [`Fleet::privatize`], calling `progress(k)` after every 4096 devices.
    pub fn privatize_with_progress(
        &self,
        spec: &MechanismSpec,
        seed: u64,
        progress: &(dyn Fn(u64) + Sync),
    ) -> Result<ReportBatch, Error> {
        self.privatize_from_with_progress(spec, &FleetSeed::from(seed), progress)
    }

    /// Every device privatizes its item with `spec` (query id 0), in parallel on
    /// all available cores; devices use [`device_rng_from`]`(seed, index)`. A real
    /// run's seed is [`FleetSeed::random`]; with `FleetSeed::from(s)` the reports
    /// are [`Fleet::privatize`]`(spec, s)`'s.
    pub fn privatize_from(
        &self,
        spec: &MechanismSpec,
        seed: &FleetSeed,
    ) -> Result<ReportBatch, Error> {
        self.privatize_from_with_progress(spec, seed, &|_| {})
    }

    /// [`Fleet::privatize_from`], calling `progress(k)` after every 4096 devices.
    pub fn privatize_from_with_progress(
        &self,
        spec: &MechanismSpec,
        seed: &FleetSeed,
        progress: &(dyn Fn(u64) + Sync),
    ) -> Result<ReportBatch, Error> {
        let len = spec.report_len();
        let mut bytes = vec![0u8; len * self.items.len()];
        let threads = thread::available_parallelism().map_or(1, |n| n.get());
        let per = self.items.len().div_ceil(threads).max(1);
        thread::scope(|s| {
            let handles: Vec<_> = bytes
                .chunks_mut(per * len)
                .zip(self.items.chunks(per))
                .enumerate()
                .map(|(t, (out, items))| {
                    s.spawn(move || -> Result<(), Error> {
                        for (k, (buf, &item)) in out.chunks_exact_mut(len).zip(items).enumerate() {
                            let device = (t * per + k) as u64;
                            let mut rng = device_rng_from(seed, device);
                            spec.privatize_into(item, QueryId(0), &mut rng, buf)?;
                            if k % 4096 == 4095 {
                                progress(4096);
                            }
                        }
                        Ok(())
                    })
                })
                .collect();
            handles
                .into_iter()
                .try_for_each(|h| h.join().unwrap_or(Err(Error::Overflow)))
        })?;
        Ok(ReportBatch {
            len,
            bytes,
            kind: spec.kind(QueryId(0)),
            header: spec.header(QueryId(0)),
        })
    }
}

/// Reports of one kind stored back to back (all the same length).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReportBatch {
    len: usize,
    bytes: Vec<u8>,
    kind: ReportKind,
    header: Header,
}

impl ReportBatch {
    /// Bytes per report.
    pub fn report_len(&self) -> usize {
        self.len
    }

    /// Number of reports.
    pub fn count(&self) -> usize {
        self.bytes.len() / self.len.max(1)
    }

    /// All reports, back to back.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// The reports one by one.
    pub fn iter(&self) -> std::slice::ChunksExact<'_, u8> {
        self.bytes.chunks_exact(self.len.max(1))
    }

    /// The common header (query 0).
    pub fn header(&self) -> Header {
        self.header
    }

    /// The aggregator kind.
    pub fn kind(&self) -> ReportKind {
        self.kind
    }
}

/// Aggregates back-to-back reports of length `report_len` on `threads` threads
/// (each with its own [`Aggregator`], merged at the end); malformed or mismatched
/// reports are counted, never fatal.
pub fn aggregate_parallel(
    bytes: &[u8],
    report_len: usize,
    kind: ReportKind,
    threads: usize,
) -> Result<(Aggregator, RejectCounts), super::aggregate::AggregateError> {
    let n = bytes.len() / report_len.max(1);
    let per = n.div_ceil(threads.max(1)).max(1);
    let parts: Vec<Result<(Aggregator, RejectCounts), _>> = thread::scope(|s| {
        let handles: Vec<_> = bytes
            .chunks(per * report_len.max(1))
            .map(|chunk| {
                s.spawn(move || {
                    let mut agg = Aggregator::new(kind)?;
                    let mut rejected = RejectCounts::default();
                    agg.ingest_batch(chunk.chunks_exact(report_len.max(1)), &mut rejected);
                    Ok((agg, rejected))
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or(Err(super::aggregate::AggregateError::InvalidKind))
            })
            .collect()
    });
    let mut total = Aggregator::new(kind)?;
    let mut rejected = RejectCounts::default();
    for part in parts {
        let (a, r) = part?;
        total.merge(&a)?;
        rejected.merge(&r);
    }
    Ok((total, rejected))
}

/// The embedded default item distribution for simulations: Zipf with exponent
/// 1.1 over `d` items (item 0 most frequent), a common shape for app and sensor
/// categories.
pub fn default_distribution(d: u32) -> Vec<f64> {
    (1..=d).map(|r| 1.0 / f64::from(r).powf(1.1)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `u64` fleet seed reproduces the 64-bit streams; 32 random bytes give other
    /// streams per device; `Debug` shows no seed bytes.
    #[test]
    fn fleet_seeds_reproduce_u64_streams_and_hide_their_bytes() {
        let a = device_rng(42, 7).next_u64();
        assert_eq!(device_rng_from(&FleetSeed::from(42), 7).next_u64(), a);
        let fleet = FleetSeed::random(&mut crate::seeded_rng(1));
        let x = device_rng_from(&fleet, 7).next_u64();
        assert_ne!(x, a);
        assert_ne!(device_rng_from(&fleet, 8).next_u64(), x);
        assert_eq!(device_rng_from(&fleet, 7).next_u64(), x);
        assert_eq!(format!("{fleet:?}"), "FleetSeed(..)");
    }
}
