//! Universes of points for the d_X-privacy mechanisms: the US cities of Kamalaruban et
//! al. §4.3 (read from a CSV file) and uniform synthetic points (§4.1–4.2).

use std::path::Path;

use rand_core::Rng;

/// A uniform value in `[0, 1)` from 53 random bits (for building public test
/// universes and workloads; never for noise).
pub fn uniform(rng: &mut impl Rng) -> f64 {
    (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64
}

/// `n` points uniform in `[0, 100]²`.
pub fn synthetic_points(n: usize, rng: &mut impl Rng) -> Vec<[f64; 2]> {
    (0..n)
        .map(|_| [100.0 * uniform(rng), 100.0 * uniform(rng)])
        .collect()
}

/// A loaded city universe: (lon, lat) points, populations, elevations.
#[derive(Debug, Clone)]
pub struct Cities {
    /// `(lon, lat)` in degrees.
    pub points: Vec<[f64; 2]>,
    /// Populations (the histogram).
    pub population: Vec<u64>,
    /// Elevation in metres.
    pub elevation: Vec<f64>,
}

/// Loads the `keep` most populous cities with population > 50k, deduplicating
/// identical coordinates (a detail §4.3 leaves open; `docs/src/dx.md`).
pub fn load_cities(
    path: &Path,
    keep: usize,
) -> Result<Cities, Box<dyn std::error::Error + Send + Sync>> {
    let mut rdr = csv::Reader::from_path(path)?;
    let h = rdr.headers()?.clone();
    let col = |name: &str| {
        h.iter()
            .position(|c| c == name)
            .ok_or_else(|| format!("no column {name}"))
    };
    let (lat, lon, pop, ele) = (
        col("lat")?,
        col("lon")?,
        col("population")?,
        col("elevation_m")?,
    );
    let mut rows: Vec<(u64, [f64; 2], f64)> = Vec::new();
    for rec in rdr.records() {
        let rec = rec?;
        let p: u64 = rec[pop].parse()?;
        if p > 50_000 {
            rows.push((p, [rec[lon].parse()?, rec[lat].parse()?], rec[ele].parse()?));
        }
    }
    rows.sort_by_key(|r| std::cmp::Reverse(r.0));
    let mut seen = std::collections::HashSet::new();
    rows.retain(|r| seen.insert((r.1[0].to_bits(), r.1[1].to_bits())));
    rows.truncate(keep);
    Ok(Cities {
        points: rows.iter().map(|r| r.1).collect(),
        population: rows.iter().map(|r| r.0).collect(),
        elevation: rows.iter().map(|r| r.2).collect(),
    })
}
