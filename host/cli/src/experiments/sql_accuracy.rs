//! `privq experiment sql-accuracy`: how accurate `privq sql`'s releases are, and
//! whether their 95 % intervals hold what they claim.
//!
//! On Adult it releases `COUNT(*)`, `AVG(age)` and `AVG(hours-per-week)` by
//! `education-num` over the 16 public keys 1–16, and `MEDIAN(age)` over the whole
//! table, each query at the full ε (the grouped query splits it over its three
//! measurements, `ε/3` each), `runs` times with seeds `seed..seed + runs`. Every
//! row is its own privacy unit. Against the true *bounded* value (values clamped
//! into the public bounds and snapped to the plan's grid, what the intervals are
//! about) it reports per group:
//!
//! * the empirical RMSE of the released value,
//! * the analytic standard deviation of the noise, from public parameters only:
//!   a count's discrete Laplace noise of scale `t = g·r·Δ/ε_share` has variance
//!   `2q/(1−q)²`, `q = e^{−1/t}`; the mean `mid + S/N` (noisy centred sum `S`,
//!   scale `half_width_steps·g·r·Δ/ε_share`, over the noisy count `N`) has, by the
//!   delta method, standard deviation `γ·√(Var S + m²·Var N)/n` (`m` the true
//!   centred mean in grid steps, γ the grid step),
//! * their ratio (1 when the noise is all the error and the delta method holds),
//! * the empirical coverage of the 95 % intervals,
//!
//! the same for `VARIANCE` of each averaged column by group, a third query at ε
//! (count, centred sums and centred sums of squares, `ε/5` each on Adult), whose
//! delta-method sd is `γ²·√(Var S₂ + (2m)²·Var S₁ + (2m² − q)²·Var N)/n` (`m` and
//! `q` the true centred mean and mean square in grid steps),
//!
//! and for the median the mean absolute error in the column's units and the rank
//! error `|#{x ≤ released} − n/2|` in rows (the report-noisy-max score's own unit;
//! its noise has scale `2·g·r·Δ/ε` ranks).
//!
//! The benchmark file `adult.csv` (the one the synthetic-data benchmarks use)
//! stores value *indices*: age 17–90 as 1–74, hours-per-week 1–99 as 0–98 and
//! education-num 1–16 as 0–15 (the counts match the UCI file: 595 people aged 17,
//! 22 803 working 40 hours, 15 784 with education-num 9). [`Config::adult`]
//! shifts them back before anything is released, so bounds and errors are in
//! years and hours. The bounds are public facts about the UCI extract, not read
//! from the data: it kept people older than 16 working more than 0 hours, and
//! age and hours are top-coded at 90 and 99.

use std::collections::HashMap;
use std::error::Error;
use std::io::Write;

use privq_core::Epsilon;
use privq_core::sample::DiscreteLaplace;

use privq_host::aggregate::{Aggregate, Bounds, Groups, Plan, Query, Table};
use privq_host::seeded_rng;

/// The experiment's parameters.
#[derive(Debug, Clone)]
pub struct Config {
    /// The budgets ε, one table each (each query is released at ε).
    pub epsilons: Vec<Epsilon>,
    /// Releases per ε (seeds `seed..seed + runs`).
    pub runs: usize,
    /// The first seed.
    pub seed: u64,
    /// The group-by column.
    pub group: String,
    /// Its public keys, in release order.
    pub keys: Vec<String>,
    /// The columns averaged by group, with their public bounds.
    pub means: Vec<(String, Bounds)>,
    /// The column whose median is released over the whole table, with its bounds.
    pub median: (String, Bounds),
    /// Integers added to columns before the release (a file of value indices
    /// decoded to values); empty for a file of plain values.
    pub shifts: Vec<(String, i64)>,
}

impl Config {
    /// The Adult protocol: ε ∈ {1, 0.1}, 1 000 runs from seed 0; education-num
    /// keys 1–16, age 17:90, hours-per-week 1:99; the benchmark file's indices
    /// shifted back to years, hours and education levels.
    pub fn adult() -> Result<Self, Box<dyn Error + Send + Sync>> {
        let age: Bounds = "17:90".parse()?;
        Ok(Config {
            epsilons: vec![Epsilon::new(1, 1)?, Epsilon::new(1, 10)?],
            runs: 1000,
            seed: 0,
            group: "education-num".into(),
            keys: (1..=16).map(|k| k.to_string()).collect(),
            means: vec![
                ("age".into(), age),
                ("hours-per-week".into(), "1:99".parse()?),
            ],
            median: ("age".into(), age),
            shifts: vec![
                ("age".into(), 16),
                ("hours-per-week".into(), 1),
                ("education-num".into(), 1),
            ],
        })
    }
}

/// One statistic of one group at one ε.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// The budget of the release.
    pub epsilon: Epsilon,
    /// The group's key.
    pub group: String,
    /// `count`, `mean(COLUMN)` or `var(COLUMN)`.
    pub statistic: String,
    /// The group's number of rows.
    pub n: usize,
    /// The true bounded value (NaN for the mean of an empty group).
    pub truth: f64,
    /// The value before clamping (the raw data's count or mean).
    pub raw: f64,
    /// The mean of released − true.
    pub bias: f64,
    /// The root mean squared error of the released value.
    pub rmse: f64,
    /// The analytic standard deviation of the noise (delta method for a mean or a
    /// variance).
    pub sd: f64,
    /// The fraction of runs whose interval held the true value.
    pub coverage: f64,
}

impl Row {
    /// RMSE over the analytic standard deviation.
    pub fn ratio(&self) -> f64 {
        self.rmse / self.sd
    }
}

/// The median's accuracy at one ε.
#[derive(Debug, Clone, PartialEq)]
pub struct MedianRow {
    /// The budget of the release.
    pub epsilon: Epsilon,
    /// The column.
    pub column: String,
    /// The number of rows.
    pub n: usize,
    /// The true bounded median (the lower one: the smallest x with #{≤ x} ≥ n/2).
    pub truth: f64,
    /// The mean absolute error, in the column's units.
    pub mae: f64,
    /// The root mean squared error, in the column's units.
    pub rmse: f64,
    /// The mean of `|#{x ≤ released} − n/2|`, in rows.
    pub rank_error: f64,
    /// The same for the true median (the data's own granularity).
    pub truth_rank_error: f64,
    /// The fraction of runs whose release ranks as well as the true median.
    pub as_good: f64,
    /// The scale of the score noise, in ranks: `2·g·r·Δ/ε`.
    pub rank_scale: f64,
}

/// Everything the experiment measured.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    /// Per ε, group and statistic: the count and the means.
    pub rows: Vec<Row>,
    /// Per ε, group and column: the variances.
    pub variances: Vec<Row>,
    /// Per ε.
    pub medians: Vec<MedianRow>,
}

impl Report {
    /// The rows as CSV (a header, then one line per row and per median).
    pub fn write_csv(&self, out: &mut dyn Write) -> std::io::Result<()> {
        writeln!(
            out,
            "epsilon,group,statistic,n,truth,raw,bias,rmse,analytic_sd,ratio,coverage,mae,rank_error"
        )?;
        for r in self.rows.iter().chain(&self.variances) {
            writeln!(
                out,
                "{},{},{},{},{},{},{},{},{},{},{},,",
                r.epsilon.to_f64(),
                r.group,
                r.statistic,
                r.n,
                r.truth,
                r.raw,
                r.bias,
                r.rmse,
                r.sd,
                r.ratio(),
                r.coverage
            )?;
        }
        for m in &self.medians {
            writeln!(
                out,
                "{},,median({}),{},{},,,{},,,,{},{}",
                m.epsilon.to_f64(),
                m.column,
                m.n,
                m.truth,
                m.rmse,
                m.mae,
                m.rank_error
            )?;
        }
        Ok(())
    }
}

/// The columns the experiment reads, shifted, by name.
struct Data {
    groups: Vec<String>,
    values: HashMap<String, Vec<f64>>,
    /// The same as a CSV for [`Table::from_csv`].
    csv: Vec<u8>,
}

/// Reads `group` and `columns` from `csv`, applies the shifts and writes them back
/// as a CSV of those columns only.
fn load(
    csv: &[u8],
    group: &str,
    columns: &[String],
    shifts: &[(String, i64)],
) -> Result<Data, Box<dyn Error + Send + Sync>> {
    let mut reader = csv::ReaderBuilder::new()
        .trim(csv::Trim::All)
        .from_reader(csv);
    let header = reader.headers()?.clone();
    let index = |c: &str| {
        header
            .iter()
            .position(|h| h == c)
            .ok_or_else(|| format!("the table has no column {c:?} (header: {header:?})"))
    };
    let gi = index(group)?;
    let vi: Vec<usize> = columns.iter().map(|c| index(c)).collect::<Result<_, _>>()?;
    let shift = |c: &str| shifts.iter().find(|(s, _)| s == c).map_or(0, |&(_, k)| k);
    let group_shift = shift(group);
    let value_shift: Vec<f64> = columns.iter().map(|c| shift(c) as f64).collect();
    let mut data = Data {
        groups: Vec::new(),
        values: columns.iter().map(|c| (c.clone(), Vec::new())).collect(),
        csv: Vec::new(),
    };
    let mut writer = csv::Writer::from_writer(Vec::new());
    writer.write_record(std::iter::once(group).chain(columns.iter().map(String::as_str)))?;
    for (line, record) in reader.records().enumerate() {
        let record = record?;
        let field = |i: usize| record.get(i).unwrap_or("");
        let key = match group_shift {
            0 => field(gi).to_string(),
            k => {
                let v: i64 = field(gi).parse().map_err(|_| {
                    format!(
                        "row {}: {group} = {:?} is not an integer index",
                        line + 2,
                        field(gi)
                    )
                })?;
                (v + k).to_string()
            }
        };
        let mut out = vec![key.clone()];
        for ((c, &i), &k) in columns.iter().zip(&vi).zip(&value_shift) {
            let v: f64 = field(i)
                .parse()
                .ok()
                .filter(|v: &f64| v.is_finite())
                .ok_or_else(|| format!("row {}: {c} = {:?} is not a number", line + 2, field(i)))?;
            let v = v + k;
            data.values.get_mut(c).ok_or("a column read twice")?.push(v);
            out.push(v.to_string());
        }
        writer.write_record(&out)?;
        data.groups.push(key);
    }
    data.csv = writer.into_inner().map_err(|e| e.to_string())?;
    Ok(data)
}

/// Running sums of one statistic over the runs.
#[derive(Debug, Clone, Default)]
struct Tally {
    err: f64,
    sq: f64,
    covered: usize,
    runs: usize,
}

impl Tally {
    fn add(&mut self, released: f64, truth: f64, interval: Option<(f64, f64)>) {
        let e = released - truth;
        self.err += e;
        self.sq += e * e;
        self.runs += 1;
        // Grid values are exact binary fractions: no tolerance is needed.
        if interval.is_some_and(|(lo, hi)| lo <= truth && truth <= hi) {
            self.covered += 1;
        }
    }
}

/// The truth of one group's mean: bounded (grid steps) and raw.
struct MeanTruth {
    steps: f64,
    raw: f64,
}

/// Runs the experiment on the CSV `csv`, writing the tables to `out`.
pub fn run(
    csv: &[u8],
    config: &Config,
    out: &mut dyn Write,
) -> Result<Report, Box<dyn Error + Send + Sync>> {
    if config.runs == 0 || config.epsilons.is_empty() || config.keys.is_empty() {
        return Err("the experiment needs at least one run, one ε and one key".into());
    }
    let mut columns: Vec<String> = config.means.iter().map(|(c, _)| c.clone()).collect();
    if !columns.contains(&config.median.0) {
        columns.push(config.median.0.clone());
    }
    let data = load(csv, &config.group, &columns, &config.shifts)?;
    let n_all = data.groups.len();
    if n_all == 0 {
        return Err("the table has no row".into());
    }
    // The truth per public key: rows, and each mean bounded and raw.
    let key_index: HashMap<&str, usize> = config
        .keys
        .iter()
        .enumerate()
        .map(|(i, k)| (k.as_str(), i))
        .collect();
    let mut counts = vec![0usize; config.keys.len()];
    let mut sums = vec![vec![(0i128, 0.0f64); config.keys.len()]; config.means.len()];
    // Centred sums and sums of squares of the bounded values, in grid steps.
    let mut moments = vec![vec![(0i128, 0i128); config.keys.len()]; config.means.len()];
    for (r, g) in data.groups.iter().enumerate() {
        let Some(&k) = key_index.get(g.as_str()) else {
            continue;
        };
        counts[k] += 1;
        for (j, (c, b)) in config.means.iter().enumerate() {
            let x = data.values[c][r];
            sums[j][k].0 += i128::from(b.steps(x));
            sums[j][k].1 += x;
            let d = i128::from(b.steps(x) - b.mid_steps());
            moments[j][k].0 += d;
            moments[j][k].1 += d * d;
        }
    }
    let truths: Vec<Vec<Option<MeanTruth>>> = sums
        .iter()
        .map(|col| {
            col.iter()
                .zip(&counts)
                .map(|(&(s, raw), &n)| {
                    (n > 0).then(|| MeanTruth {
                        steps: s as f64 / n as f64,
                        raw: raw / n as f64,
                    })
                })
                .collect()
        })
        .collect();
    // The median's truth: sorted bounded values, the lower median.
    let (mcol, mb) = &config.median;
    let mut sorted: Vec<f64> = data.values[mcol]
        .iter()
        .map(|&x| mb.value(mb.steps(x) as f64))
        .collect();
    sorted.sort_by(f64::total_cmp);
    let half = n_all as f64 / 2.0;
    let median_truth = sorted[n_all.div_ceil(2) - 1];
    let rank_error = |v: f64| (sorted.partition_point(|&x| x <= v) as f64 - half).abs();

    let mut aggregates = vec![("n".to_string(), Aggregate::Count)];
    for (c, _) in &config.means {
        aggregates.push((format!("mean_{c}"), Aggregate::Mean(c.clone())));
    }
    let grouped = Query::from_parts(vec![config.group.clone()], aggregates);
    let spreads = Query::from_parts(
        vec![config.group.clone()],
        config
            .means
            .iter()
            .map(|(c, _)| (format!("var_{c}"), Aggregate::Variance(c.clone())))
            .collect(),
    );
    let overall = Query::from_parts(
        Vec::new(),
        vec![("median".into(), Aggregate::quantile(mcol.clone(), 0.5)?)],
    );

    writeln!(
        out,
        "privq sql accuracy: {} rows; COUNT(*), {} BY {} ({} public keys), and MEDIAN({mcol}); \
         each query at ε, {} runs per ε (seeds {}–{}); truth = the bounded value",
        n_all,
        config
            .means
            .iter()
            .map(|(c, b)| format!("AVG({c}) [{b}]"))
            .collect::<Vec<_>>()
            .join(", "),
        config.group,
        config.keys.len(),
        config.runs,
        config.seed,
        config.seed + config.runs as u64 - 1,
    )?;
    let mut report = Report {
        rows: Vec::new(),
        variances: Vec::new(),
        medians: Vec::new(),
    };
    for &epsilon in &config.epsilons {
        let mut builder = Plan::builder(grouped.clone()).groups(Groups::Public(
            config.keys.iter().map(|k| vec![k.clone()]).collect(),
        ));
        for (c, b) in &config.means {
            builder = builder.bounds(c.clone(), *b);
        }
        let plan = builder.build(epsilon)?;
        let mut builder = Plan::builder(spreads.clone()).groups(Groups::Public(
            config.keys.iter().map(|k| vec![k.clone()]).collect(),
        ));
        for (c, b) in &config.means {
            builder = builder.bounds(c.clone(), *b);
        }
        let var_plan = builder.build(epsilon)?;
        let median_plan = Plan::builder(overall.clone())
            .bounds(mcol.clone(), *mb)
            .build(epsilon)?;
        let table = Table::from_csv(&data.csv[..], &plan.columns(), usize::MAX)?;
        let median_table = Table::from_csv(&data.csv[..], &median_plan.columns(), usize::MAX)?;
        let var_table = Table::from_csv(&data.csv[..], &var_plan.columns(), usize::MAX)?;

        // The analytic noise, from the plan's public parameters.
        let per_unit = |p: &Plan| p.contribution().rows_per_unit() * p.neighbours().histogram_l1();
        let share = plan.epsilon_share();
        let count_noise = DiscreteLaplace::for_sensitivity(per_unit(&plan), share)?;
        let sum_noise: Vec<DiscreteLaplace> = config
            .means
            .iter()
            .map(|(_, b)| {
                DiscreteLaplace::for_sensitivity(per_unit(&plan) * b.half_width_steps(), share)
            })
            .collect::<Result<_, _>>()?;
        let rank_scale = 2.0 * per_unit(&median_plan) as f64 / median_plan.epsilon_share().to_f64();
        let var_share = var_plan.epsilon_share();
        // Noise variances of the variance query's count, centred sums and squares.
        let var_noise: Vec<(f64, f64, f64)> = config
            .means
            .iter()
            .map(|(_, b)| {
                let (u, h) = (per_unit(&var_plan), b.half_width_steps());
                let v =
                    |l1: u64| DiscreteLaplace::for_sensitivity(l1, var_share).map(|d| d.variance());
                Ok::<_, Box<dyn Error + Send + Sync>>((v(u)?, v(u * h)?, v(u * h * h)?))
            })
            .collect::<Result<_, _>>()?;
        let mut var_tallies = vec![vec![Tally::default(); config.means.len()]; config.keys.len()];

        let stats = 1 + config.means.len();
        let mut tallies = vec![vec![Tally::default(); stats]; config.keys.len()];
        let (mut m_abs, mut m_sq, mut m_rank, mut m_good) = (0.0, 0.0, 0.0, 0usize);
        for i in 0..config.runs {
            let mut rng = seeded_rng(config.seed.wrapping_add(i as u64));
            let (release, _) = plan.release(&table, &mut rng)?;
            for (k, row) in release.rows().iter().enumerate() {
                let e = row.estimates();
                tallies[k][0].add(e[0].value(), counts[k] as f64, e[0].interval());
                for (j, (_, b)) in config.means.iter().enumerate() {
                    if let Some(t) = &truths[j][k] {
                        let est = e[1 + j];
                        tallies[k][1 + j].add(est.value(), b.value(t.steps), est.interval());
                    }
                }
            }
            let (release, _) = var_plan.release(&var_table, &mut rng)?;
            for (k, row) in release.rows().iter().enumerate() {
                for (j, (_, b)) in config.means.iter().enumerate() {
                    if counts[k] > 0 {
                        let est = row.estimates()[j];
                        let truth = bounded_variance(b, moments[j][k], counts[k]);
                        var_tallies[k][j].add(est.value(), truth, est.interval());
                    }
                }
            }
            let (release, _) = median_plan.release(&median_table, &mut rng)?;
            let v = release.rows()[0].estimates()[0].value();
            m_abs += (v - median_truth).abs();
            m_sq += (v - median_truth).powi(2);
            m_rank += rank_error(v);
            m_good += usize::from(rank_error(v) <= rank_error(median_truth));
        }
        let runs = config.runs as f64;
        for (k, key) in config.keys.iter().enumerate() {
            let t = &tallies[k][0];
            report.rows.push(Row {
                epsilon,
                group: key.clone(),
                statistic: "count".into(),
                n: counts[k],
                truth: counts[k] as f64,
                raw: counts[k] as f64,
                bias: t.err / runs,
                rmse: (t.sq / runs).sqrt(),
                sd: count_noise.variance().sqrt(),
                coverage: t.covered as f64 / runs,
            });
            for (j, (c, b)) in config.means.iter().enumerate() {
                let t = &tallies[k][1 + j];
                let (truth, raw, sd, bias, rmse, coverage) = match &truths[j][k] {
                    Some(m) => {
                        let n = counts[k] as f64;
                        let centred = m.steps - b.mid_steps() as f64;
                        let var =
                            sum_noise[j].variance() + centred * centred * count_noise.variance();
                        (
                            b.value(m.steps),
                            m.raw,
                            b.value(var.sqrt() / n),
                            t.err / runs,
                            (t.sq / runs).sqrt(),
                            t.covered as f64 / runs,
                        )
                    }
                    None => (f64::NAN, f64::NAN, f64::NAN, f64::NAN, f64::NAN, f64::NAN),
                };
                report.rows.push(Row {
                    epsilon,
                    group: key.clone(),
                    statistic: format!("mean({c})"),
                    n: counts[k],
                    truth,
                    raw,
                    bias,
                    rmse,
                    sd,
                    coverage,
                });
            }
        }
        for (k, key) in config.keys.iter().enumerate() {
            for (j, (c, b)) in config.means.iter().enumerate() {
                let t = &var_tallies[k][j];
                let n = counts[k] as f64;
                let (truth, sd, bias, rmse, coverage) = if counts[k] > 0 {
                    let (s1, s2) = moments[j][k];
                    let (m, q) = (s1 as f64 / n, s2 as f64 / n);
                    let (vn, v1, v2) = var_noise[j];
                    let steps2 =
                        (v2 + (2.0 * m).powi(2) * v1 + (2.0 * m * m - q).powi(2) * vn).sqrt() / n;
                    let step = b.value(1.0) - b.value(0.0);
                    (
                        bounded_variance(b, moments[j][k], counts[k]),
                        steps2 * step * step,
                        t.err / runs,
                        (t.sq / runs).sqrt(),
                        t.covered as f64 / runs,
                    )
                } else {
                    (f64::NAN, f64::NAN, f64::NAN, f64::NAN, f64::NAN)
                };
                report.variances.push(Row {
                    epsilon,
                    group: key.clone(),
                    statistic: format!("var({c})"),
                    n: counts[k],
                    truth,
                    raw: truth,
                    bias,
                    rmse,
                    sd,
                    coverage,
                });
            }
        }
        report.medians.push(MedianRow {
            epsilon,
            column: mcol.clone(),
            n: n_all,
            truth: median_truth,
            mae: m_abs / runs,
            rmse: (m_sq / runs).sqrt(),
            rank_error: m_rank / runs,
            truth_rank_error: rank_error(median_truth),
            as_good: m_good as f64 / runs,
            rank_scale,
        });
        write_table(out, config, &report, epsilon, share)?;
        write_variances(out, config, &report, epsilon, var_share)?;
    }
    Ok(report)
}

/// The population variance of one group's bounded values from their centred sum
/// and sum of squares in grid steps, in the column's units squared.
fn bounded_variance(b: &Bounds, (s1, s2): (i128, i128), n: usize) -> f64 {
    let (m, q) = (s1 as f64 / n as f64, s2 as f64 / n as f64);
    let step = b.value(1.0) - b.value(0.0);
    (q - m * m) * step * step
}

/// The variances' table of one ε (Markdown) and its coverage summary.
fn write_variances(
    out: &mut dyn Write,
    config: &Config,
    report: &Report,
    epsilon: Epsilon,
    share: Epsilon,
) -> std::io::Result<()> {
    let rows: Vec<&Row> = report
        .variances
        .iter()
        .filter(|r| r.epsilon == epsilon)
        .collect();
    writeln!(out)?;
    writeln!(
        out,
        "VARIANCE by {} at ε = {} (ε/{} = {} per measurement)",
        config.group,
        epsilon.to_f64(),
        1 + 2 * config.means.len(),
        share
    )?;
    writeln!(out)?;
    let mut head = format!("| {} | n |", config.group);
    let mut rule = String::from("|---:|---:|");
    for (c, _) in &config.means {
        head.push_str(&format!(" var {c} | RMSE | sd | ratio | cover % |"));
        rule.push_str("---:|---:|---:|---:|---:|");
    }
    writeln!(out, "{head}\n{rule}")?;
    for group in rows.chunks(config.means.len().max(1)) {
        let mut line = format!("| {} | {} |", group[0].group, group[0].n);
        for v in group {
            line.push_str(&cells(v));
        }
        writeln!(out, "{line}")?;
    }
    writeln!(out)?;
    for (j, (c, _)) in config.means.iter().enumerate() {
        let of: Vec<&Row> = rows
            .iter()
            .skip(j)
            .step_by(config.means.len())
            .filter(|r| !r.coverage.is_nan())
            .copied()
            .collect();
        let (lo, hi) = min_max(&of.iter().map(|r| r.coverage).collect::<Vec<_>>());
        let (rlo, rhi) = min_max(&of.iter().map(|r| r.ratio()).collect::<Vec<_>>());
        let outside: Vec<String> = of
            .iter()
            .filter(|r| !(0.93..=0.97).contains(&r.coverage))
            .map(|r| format!("{} = {}: {} %", config.group, r.group, pct(r.coverage)))
            .collect();
        writeln!(
            out,
            "var({c}): coverage {}–{} %, RMSE/sd {rlo:.2}–{rhi:.2}{}",
            pct(lo),
            pct(hi),
            if outside.is_empty() {
                String::new()
            } else {
                format!("; outside 93–97 %: {}", outside.join(", "))
            }
        )?;
    }
    Ok(())
}

/// One estimate's cells of a Markdown row: truth, RMSE, sd, ratio, coverage.
fn cells(r: &Row) -> String {
    let ratio = if r.sd.is_nan() {
        "—".into()
    } else {
        format!("{:.2}", r.ratio())
    };
    format!(
        " {} | {} | {} | {ratio} | {} |",
        sig(r.truth),
        sig(r.rmse),
        sig(r.sd),
        pct(r.coverage)
    )
}

/// `x` to three significant digits (at most four decimals), or a dash for NaN.
fn sig(x: f64) -> String {
    if x.is_nan() {
        return "—".into();
    }
    if x == 0.0 {
        return "0".into();
    }
    let decimals = (2 - x.abs().log10().floor() as i32).clamp(0, 4) as usize;
    format!("{x:.decimals$}")
}

/// A percentage with one decimal, or a dash for NaN.
fn pct(x: f64) -> String {
    if x.is_nan() {
        "—".into()
    } else {
        format!("{:.1}", 100.0 * x)
    }
}

/// The table of one ε (Markdown), its coverage summary and the median's line.
fn write_table(
    out: &mut dyn Write,
    config: &Config,
    report: &Report,
    epsilon: Epsilon,
    share: Epsilon,
) -> std::io::Result<()> {
    let rows: Vec<&Row> = report
        .rows
        .iter()
        .filter(|r| r.epsilon == epsilon)
        .collect();
    writeln!(out)?;
    writeln!(
        out,
        "ε = {} (ε/{} = {} per measurement; RMSE against the analytic noise sd, coverage of the 95 % interval)",
        epsilon.to_f64(),
        1 + config.means.len(),
        share
    )?;
    writeln!(out)?;
    let mut head = format!(
        "| {} | n | count RMSE | sd | ratio | cover % |",
        config.group
    );
    let mut rule = String::from("|---:|---:|---:|---:|---:|---:|");
    for (c, _) in &config.means {
        head.push_str(&format!(" mean {c} | RMSE | sd | ratio | cover % |"));
        rule.push_str("---:|---:|---:|---:|---:|");
    }
    writeln!(out, "{head}\n{rule}")?;
    let stats = 1 + config.means.len();
    for group in rows.chunks(stats) {
        let c = group[0];
        let mut line = format!(
            "| {} | {} | {} | {} | {:.2} | {} |",
            c.group,
            c.n,
            sig(c.rmse),
            sig(c.sd),
            c.ratio(),
            pct(c.coverage)
        );
        for m in &group[1..] {
            line.push_str(&cells(m));
        }
        writeln!(out, "{line}")?;
    }
    writeln!(out)?;
    let mut summary = Vec::new();
    let mut outside = Vec::new();
    for s in 0..stats {
        let of: Vec<&Row> = rows.iter().skip(s).step_by(stats).copied().collect();
        let cov: Vec<f64> = of
            .iter()
            .map(|r| r.coverage)
            .filter(|c| !c.is_nan())
            .collect();
        let ratios: Vec<f64> = of
            .iter()
            .map(|r| r.ratio())
            .filter(|c| !c.is_nan())
            .collect();
        let (lo, hi) = min_max(&cov);
        let (rlo, rhi) = min_max(&ratios);
        let clamp = of
            .iter()
            .filter(|r| !r.truth.is_nan())
            .map(|r| (r.raw - r.truth).abs())
            .fold(0.0, f64::max);
        summary.push(format!(
            "{}: coverage {}–{} %, RMSE/sd {rlo:.2}–{rhi:.2}, largest |raw − bounded| {}",
            of[0].statistic,
            pct(lo),
            pct(hi),
            sig(clamp)
        ));
        outside.extend(
            of.iter()
                .filter(|r| !(0.93..=0.97).contains(&r.coverage) && !r.coverage.is_nan())
                .map(|r| {
                    format!(
                        "{} {} = {}: {} %",
                        r.statistic,
                        config.group,
                        r.group,
                        pct(r.coverage)
                    )
                }),
        );
    }
    for s in summary {
        writeln!(out, "{s}")?;
    }
    if outside.is_empty() {
        writeln!(out, "every interval's coverage is within 93–97 %")?;
    } else {
        writeln!(out, "coverage outside 93–97 %: {}", outside.join("; "))?;
    }
    if let Some(m) = report.medians.iter().find(|m| m.epsilon == epsilon) {
        writeln!(
            out,
            "MEDIAN({}) over all {} rows at ε = {}: true {}, MAE {}, RMSE {}; rank error {} rows \
             (the true median's own {}; {} % of runs rank as well; score noise scale {} ranks)",
            m.column,
            m.n,
            epsilon.to_f64(),
            sig(m.truth),
            sig(m.mae),
            sig(m.rmse),
            sig(m.rank_error),
            sig(m.truth_rank_error),
            pct(m.as_good),
            sig(m.rank_scale)
        )?;
    }
    Ok(())
}

fn min_max(xs: &[f64]) -> (f64, f64) {
    if xs.is_empty() {
        return (f64::NAN, f64::NAN);
    }
    xs.iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &x| {
            (a.min(x), b.max(x))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Three groups of a small table of value indices (ages as age − 16, hours as
    /// hours − 1, levels as level − 1), a fourth public key with no row.
    fn tiny() -> (Vec<u8>, Config) {
        let mut csv = String::from("age,sex,hours-per-week,education-num\n");
        for i in 0..600u32 {
            let level = [0, 0, 0, 1, 1, 2][(i % 6) as usize];
            let age = 1 + (i * 7) % 60 + level * 5;
            let hours = 20 + (i * 13) % 50;
            csv.push_str(&format!("{age},{},{hours},{level}\n", i % 2));
        }
        let mut config = Config::adult().unwrap();
        config.keys = ["1", "2", "3", "4"].map(String::from).to_vec();
        config.runs = 100;
        config.epsilons = vec![Epsilon::new(1, 1).unwrap()];
        (csv.into_bytes(), config)
    }

    #[test]
    fn a_tiny_table_reports_errors_close_to_the_analytic_sd() {
        let (csv, config) = tiny();
        let mut out = Vec::new();
        let report = run(&csv, &config, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains("| education-num | n | count RMSE"), "{text}");
        assert!(text.contains("MEDIAN(age)"), "{text}");
        assert_eq!(report.rows.len(), 4 * 3);
        let row = |g: &str, s: &str| {
            report
                .rows
                .iter()
                .find(|r| r.group == g && r.statistic == s)
                .unwrap()
        };
        // The shifts: 300 rows at level 1, ages 17 and up.
        assert_eq!(row("1", "count").n, 300);
        assert_eq!(row("4", "count").n, 0);
        assert!(row("4", "mean(age)").truth.is_nan());
        let age = row("1", "mean(age)");
        assert!(age.truth >= 17.0 && age.truth <= 90.0 && age.truth == age.raw);
        // Count noise at ε/3: discrete Laplace of scale 3, sd ≈ 4.2.
        let count = row("2", "count");
        assert!((count.sd - 4.18).abs() < 0.05, "{count:?}");
        for r in report.rows.iter().filter(|r| r.n > 0) {
            assert!(r.ratio() > 0.6 && r.ratio() < 1.6, "{r:?}");
            assert!(r.coverage >= 0.8, "{r:?}");
        }
        let m = &report.medians[0];
        assert!(m.mae < 2.0 && m.rank_scale == 2.0, "{m:?}");
        let csv_text = |r: &Report| {
            let mut b = Vec::new();
            r.write_csv(&mut b).unwrap();
            String::from_utf8(b).unwrap()
        };
        assert_eq!(csv_text(&report).lines().count(), 1 + 12 + 8 + 1);
        // Variances: 4 keys × 2 columns, the empty key NaN, the others close to
        // their delta-method sd.
        assert_eq!(report.variances.len(), 8);
        assert!(text.contains("| education-num | n | var age |"), "{text}");
        for v in &report.variances {
            if v.n == 0 {
                assert!(v.truth.is_nan() && v.coverage.is_nan(), "{v:?}");
            } else {
                assert!(v.truth > 0.0 && v.ratio() > 0.5 && v.ratio() < 2.0, "{v:?}");
                assert!(v.coverage >= 0.8, "{v:?}");
            }
        }
        // Fixed seeds: the same report twice (compared as text: the empty group's
        // NaN means are not equal to themselves).
        let again = run(&csv, &config, &mut Vec::new()).unwrap();
        assert_eq!(csv_text(&again), csv_text(&report));
    }

    #[test]
    fn a_missing_column_or_a_bad_value_is_refused() {
        let (_, config) = tiny();
        let e = run(b"age,education-num\n1,2\n", &config, &mut Vec::new()).unwrap_err();
        assert!(e.to_string().contains("hours-per-week"), "{e}");
        let bad = b"age,hours-per-week,education-num\nx,3,2\n";
        let e = run(bad, &config, &mut Vec::new()).unwrap_err();
        assert!(e.to_string().contains("not a number"), "{e}");
    }

    /// The Adult protocol's columns and keys on the real file, two runs (skipped
    /// without ../shared/data, an error under CI).
    #[test]
    fn adult_runs_with_every_key() {
        let Some(dir) = privq_host::data::shared_data_dir("sql-accuracy on Adult") else {
            return;
        };
        let path = dir.join("adult/adult.csv");
        assert!(
            path.exists() || std::env::var_os("CI").is_none(),
            "{} is absent and CI is set",
            path.display()
        );
        let Ok(csv) = std::fs::read(&path) else {
            eprintln!("SKIPPED: {} is absent", path.display());
            return;
        };
        let mut config = Config::adult().unwrap();
        config.runs = 2;
        config.epsilons = vec![Epsilon::new(1, 1).unwrap()];
        let report = run(&csv, &config, &mut Vec::new()).unwrap();
        assert!(report.rows.iter().all(|r| r.n > 0), "{:?}", report.rows);
        assert_eq!(report.rows.iter().map(|r| r.n).sum::<usize>(), 3 * 48_842);
        assert_eq!(report.medians[0].truth, 37.0);
    }
}
