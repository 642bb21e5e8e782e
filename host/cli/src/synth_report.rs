//! `privq synth --report FILE.html`: one self-contained HTML page about a release,
//! its charts drawn as inline SVG with `plotters`.
//!
//! What the page reads:
//! * the header, the round table and the budget charts: only released or public
//!   quantities (the parameters, the ledger of the run, the chosen marginals, the
//!   model's size, the number of rows written);
//! * the error diagnostics (per-marginal total-variation distance, true against
//!   model and sample marginals): the **private input**. They are computed only when
//!   the curator passes `--compare`, and the page then marks them as not private.
//!   Without it the page says they were not computed, and holds nothing derived from
//!   the input beyond the release.

use std::fmt::Write as _;
use std::io::Write;
use std::path::{Path, PathBuf};

use plotters::prelude::*;
use privq_host::accountant::round_up;
use privq_host::data::Domain;
use privq_host::ldp::output::{AtomicFile, Destination};

use super::CliError;

/// The report file, created (as a temporary file beside it) before the mechanism
/// runs, so a bad path fails before any budget is spent; it appears, whole, only on
/// [`ReportFile::write`].
pub(crate) struct ReportFile {
    path: PathBuf,
}

impl ReportFile {
    /// Opens `--report` if given. `-` and the `--output` path are refused: the
    /// synthetic CSV owns them.
    pub(crate) fn open(
        report: Option<&Path>,
        output: Option<&Path>,
    ) -> Result<Option<ReportFile>, CliError> {
        let Some(path) = report else {
            return Ok(None);
        };
        let Destination::File(path) = Destination::from_path(path) else {
            return Err(CliError::Usage {
                option: "report",
                message: "the report is an HTML file; standard output carries the synthetic \
                          CSV (give --report a file name such as report.html)"
                    .into(),
            });
        };
        if output.is_some_and(|o| o == path) {
            return Err(CliError::Usage {
                option: "report",
                message: format!("{} is also the --output path", path.display()),
            });
        }
        // A probe, dropped at once (which removes it): the real file is created
        // only when the page is written, so its timestamps do not span the run,
        // whose length depends on the input's size.
        match AtomicFile::create(&path) {
            Ok(probe) => {
                drop(probe);
                Ok(Some(ReportFile { path }))
            }
            Err(e) => Err(CliError::file(&path, e)),
        }
    }

    /// Writes `html` and puts the file in place.
    pub(crate) fn write(self, html: &str) -> Result<(), CliError> {
        let path = self.path;
        AtomicFile::create(&path)
            .and_then(|mut file| {
                file.write_all(html.as_bytes())?;
                file.commit()
            })
            .map_err(|e| CliError::file(&path, e))
    }
}

pub(crate) mod mwem;

/// The spending of one round (in the budget's unit).
pub(crate) struct RoundSpend {
    /// Round label (`0` for initial measurements).
    pub label: String,
    /// Spent on selection (the exponential mechanism).
    pub selection: f64,
    /// Spent on measurement (noise on the chosen query or marginal).
    pub measurement: f64,
    /// What the round chose or measured (public: an output of the mechanism).
    pub chose: String,
    /// A remark (σ, annealing, ...).
    pub note: String,
}

/// The budget of the run, from its ledger.
pub(crate) struct Budget {
    /// `ρ` (zCDP) or `ε` (pure DP).
    pub unit: &'static str,
    /// Round by round.
    pub rounds: Vec<RoundSpend>,
    /// Spending outside the rounds (e.g. private domain discovery), in `unit`.
    pub other: Vec<(String, f64)>,
    /// The total budget in `unit`.
    pub total: f64,
    /// The final guarantee, e.g. `(ε = 1.0000, δ = 1e-9)-DP`.
    pub guarantee: String,
    /// How the rounds spend (shown under the heading).
    pub note: String,
}

/// One marginal shown side by side: true against released.
pub(crate) struct MarginalView {
    /// Attribute names.
    pub name: String,
    /// Why it is shown (worst, median, best, one-way).
    pub why: String,
    /// Cell labels (`a=x, b=y`), in marginal order.
    pub cells: Vec<String>,
    /// Probabilities of the input (private).
    pub truth: Vec<f64>,
    /// Probabilities of the released model.
    pub model: Vec<f64>,
    /// Probabilities of the synthetic rows.
    pub sample: Vec<f64>,
}

/// The not-private diagnostics (`--compare`).
pub(crate) struct Diagnostics {
    /// Which marginals were compared.
    pub workload: String,
    /// TV(model, input) per workload marginal.
    pub tv_model: Vec<f64>,
    /// TV(synthetic rows, input) per workload marginal.
    pub tv_sample: Vec<f64>,
    /// The marginals shown.
    pub views: Vec<MarginalView>,
}

/// A marginal's probabilities over `attrs` (cells with the last attribute fastest,
/// as `Records::marginal`).
pub(crate) type Marginals<'a> = &'a dyn Fn(&[usize]) -> Result<Vec<f64>, CliError>;

/// Per marginal: the TV of the model and of the synthetic rows from the input.
pub(crate) type Distances<'a> = &'a dyn Fn(&[usize]) -> Result<(f64, f64), CliError>;

/// Counts (or weights) scaled to sum to 1 (all zero when they sum to 0).
pub(crate) fn normalised(mut counts: Vec<f64>) -> Vec<f64> {
    let total: f64 = counts.iter().sum();
    for c in &mut counts {
        *c = if total > 0.0 { *c / total } else { 0.0 };
    }
    counts
}

/// ½‖p − q‖₁.
pub(crate) fn tv(p: &[f64], q: &[f64]) -> f64 {
    0.5 * p.iter().zip(q).map(|(a, b)| (a - b).abs()).sum::<f64>()
}

/// The model's and the synthetic rows' TV from the input on every marginal of
/// `workload` (`tvs`), and picks the marginals to show: worst, median and best
/// by the model's TV, and the one-way marginals of the first three attributes.
/// NOT PRIVATE: reads the input through `truth`.
pub(crate) fn diagnose(
    domain: &Domain,
    workload: &[Vec<usize>],
    workload_name: String,
    tvs: Distances,
    truth: Marginals,
    model: Marginals,
    sample: Marginals,
) -> Result<Diagnostics, CliError> {
    let (mut tv_model, mut tv_sample) = (Vec::new(), Vec::new());
    for attrs in workload {
        let (m, s) = tvs(attrs)?;
        tv_model.push(m);
        tv_sample.push(s);
    }
    let mut order: Vec<usize> = (0..workload.len()).collect();
    order.sort_by(|&a, &b| tv_model[a].total_cmp(&tv_model[b]));
    let mut picks: Vec<(Vec<usize>, String)> = Vec::new();
    if let (Some(&best), Some(&worst)) = (order.first(), order.last()) {
        let median = order[order.len() / 2];
        for (i, why) in [(worst, "worst"), (median, "median"), (best, "best")] {
            if !picks.iter().any(|(a, _)| *a == workload[i]) {
                picks.push((
                    workload[i].clone(),
                    format!("{why} workload marginal by model TV ({:.4})", tv_model[i]),
                ));
            }
        }
    }
    for a in 0..domain.dims().min(3) {
        if !picks.iter().any(|(p, _)| *p == [a]) {
            picks.push((vec![a], "one-way marginal".into()));
        }
    }
    let mut views = Vec::new();
    for (attrs, why) in picks {
        views.push(MarginalView {
            name: attrs
                .iter()
                .map(|&a| domain.attribute(a).map_or("?", |x| x.name()))
                .collect::<Vec<_>>()
                .join(" × "),
            why,
            cells: cell_labels(domain, &attrs),
            truth: truth(&attrs)?,
            model: model(&attrs)?,
            sample: sample(&attrs)?,
        });
    }
    Ok(Diagnostics {
        workload: workload_name,
        tv_model,
        tv_sample,
        views,
    })
}

/// `a=x, b=y` for each cell of the marginal over `attrs` (last attribute fastest).
fn cell_labels(domain: &Domain, attrs: &[usize]) -> Vec<String> {
    let sizes: Vec<usize> = attrs
        .iter()
        .map(|&a| domain.attribute(a).map_or(1, |x| x.size()))
        .collect();
    let cells: usize = sizes.iter().product();
    (0..cells)
        .map(|mut j| {
            let mut parts = vec![String::new(); attrs.len()];
            for (i, &a) in attrs.iter().enumerate().rev() {
                let v = j % sizes[i];
                j /= sizes[i];
                let attr = domain.attribute(a);
                parts[i] = format!(
                    "{}={}",
                    attr.map_or("?", |x| x.name()),
                    attr.and_then(|x| x.label(v)).unwrap_or_default()
                );
            }
            parts.join(", ")
        })
        .collect()
}

/// The whole page.
pub(crate) struct Report {
    /// Mechanism name for the title.
    pub mechanism: String,
    /// The header table: name and value.
    pub header: Vec<(String, String)>,
    /// The budget.
    pub budget: Budget,
    /// The not-private diagnostics, only with `--compare`.
    pub diagnostics: Option<Diagnostics>,
}

/// At most this many cells of a marginal are drawn and tabulated.
const MAX_CELLS: usize = 48;

/// A chart's legend, framed, at `position`.
fn legend<'a, CT: plotters::coord::CoordTranslate>(
    chart: &mut ChartContext<'a, SVGBackend<'a>, CT>,
    position: SeriesLabelPosition,
) -> Result<(), CliError> {
    chart
        .configure_series_labels()
        .position(position)
        .border_style(BLACK)
        .background_style(WHITE.mix(0.9))
        .draw()
        .map_err(plot_err)
}

/// The legend's swatch of a bar series.
fn legend_box((x, y): (i32, i32), style: ShapeStyle) -> Rectangle<(i32, i32)> {
    Rectangle::new([(x, y - 5), (x + 12, y + 5)], style)
}

fn plot_err<E: std::fmt::Display>(e: E) -> CliError {
    CliError::Run(format!("drawing the report's charts: {e}").into())
}

/// HTML text escaping.
fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

const STYLE: &str = "body{font-family:sans-serif;max-width:960px;margin:2em auto;color:#222}\
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:3px 8px;\
text-align:left;font-size:14px}th{background:#f3f3f3}.num{text-align:right}\
.private{border:4px solid #b00;padding:0 1em 1em;background:#fff5f5}\
.private h2{color:#b00}.note{color:#555;font-size:14px}";

impl Report {
    /// Renders the page.
    pub(crate) fn render(&self) -> Result<String, CliError> {
        let mut h = String::new();
        let title = format!("privq synth report ({})", self.mechanism);
        let _ = write!(
            h,
            "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
             <title>{}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<h1>{}</h1>\n",
            esc(&title),
            esc(&title)
        );
        h.push_str("<h2>Release</h2>\n<table>\n");
        for (k, v) in &self.header {
            let _ = writeln!(h, "<tr><th>{}</th><td>{}</td></tr>", esc(k), esc(v));
        }
        h.push_str("</table>\n");
        self.budget_section(&mut h)?;
        match &self.diagnostics {
            Some(d) => diagnostics_section(d, &mut h)?,
            None => h.push_str(
                "<h2>Error against the input</h2>\n<p>Not computed. The error distribution over \
                 the workload and the true-against-synthetic marginals read the private input; \
                 privq computes them only when the curator passes <code>--compare</code>. \
                 Everything else on this page is derived from the release and public \
                 parameters.</p>\n",
            ),
        }
        h.push_str("</body>\n</html>\n");
        Ok(h)
    }

    fn budget_section(&self, h: &mut String) -> Result<(), CliError> {
        let b = &self.budget;
        let u = b.unit;
        let _ = write!(
            h,
            "<h2>Budget spent per round</h2>\n<p>From the run's ledger (public). Final \
             guarantee: <strong>{}</strong>; total budget {u} = {:.6}. {}</p>\n",
            esc(&b.guarantee),
            b.total,
            esc(&b.note)
        );
        h.push_str(&budget_bars(b)?);
        h.push_str(&cumulative(b)?);
        let _ = writeln!(
            h,
            "<table>\n<tr><th>round</th><th>chosen</th><th class=\"num\">selection {u}</th>\
             <th class=\"num\">measurement {u}</th><th>note</th></tr>"
        );
        for (label, cost) in &b.other {
            let _ = writeln!(
                h,
                "<tr><td>–</td><td>{}</td><td class=\"num\">{}</td><td></td><td></td></tr>",
                esc(label),
                round_up(*cost, 6)
            );
        }
        for r in &b.rounds {
            let _ = writeln!(
                h,
                "<tr><td>{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>\
                 <td>{}</td></tr>",
                esc(&r.label),
                esc(&r.chose),
                round_up(r.selection, 6),
                round_up(r.measurement, 6),
                esc(&r.note)
            );
        }
        h.push_str("</table>\n");
        Ok(())
    }
}

/// Stacked bars: selection and measurement per round.
fn budget_bars(b: &Budget) -> Result<String, CliError> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (900, 320)).into_drawing_area();
        root.fill(&WHITE).map_err(plot_err)?;
        let n = b.rounds.len().max(1) as f64;
        let top = b
            .rounds
            .iter()
            .map(|r| r.selection + r.measurement)
            .fold(0.0, f64::max)
            .max(f64::MIN_POSITIVE)
            * 1.1;
        let mut chart = ChartBuilder::on(&root)
            .caption(format!("{} per round", b.unit), ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(36)
            .y_label_area_size(70)
            .build_cartesian_2d(-0.5..n - 0.5, 0.0..top)
            .map_err(plot_err)?;
        let labels: Vec<&str> = b.rounds.iter().map(|r| r.label.as_str()).collect();
        let fmt_x = |x: &f64| {
            let i = x.round();
            if (x - i).abs() < 1e-9 && i >= 0.0 {
                labels
                    .get(i as usize)
                    .map_or(String::new(), |l| l.to_string())
            } else {
                String::new()
            }
        };
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(labels.len().min(25))
            .x_label_formatter(&fmt_x)
            .y_label_formatter(&|y| format!("{y:.2e}"))
            .x_desc("round")
            .y_desc(b.unit)
            .draw()
            .map_err(plot_err)?;
        let sel = BLUE.mix(0.8).filled();
        let meas = GREEN.mix(0.7).filled();
        chart
            .draw_series(b.rounds.iter().enumerate().map(|(i, r)| {
                let x = i as f64;
                Rectangle::new([(x - 0.4, 0.0), (x + 0.4, r.selection)], sel)
            }))
            .map_err(plot_err)?
            .label("selection")
            .legend(move |at| legend_box(at, sel));
        chart
            .draw_series(b.rounds.iter().enumerate().map(|(i, r)| {
                let x = i as f64;
                Rectangle::new(
                    [
                        (x - 0.4, r.selection),
                        (x + 0.4, r.selection + r.measurement),
                    ],
                    meas,
                )
            }))
            .map_err(plot_err)?
            .label("measurement")
            .legend(move |at| legend_box(at, meas));
        legend(&mut chart, SeriesLabelPosition::UpperLeft)?;
        root.present().map_err(plot_err)?;
    }
    Ok(svg)
}

/// Cumulative spending against the total, annotated with the final guarantee.
fn cumulative(b: &Budget) -> Result<String, CliError> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (900, 320)).into_drawing_area();
        root.fill(&WHITE).map_err(plot_err)?;
        let start: f64 = b.other.iter().map(|(_, c)| c).sum();
        let mut points = vec![(0.0, start)];
        let mut sum = start;
        for (i, r) in b.rounds.iter().enumerate() {
            sum += r.selection + r.measurement;
            points.push(((i + 1) as f64, sum));
        }
        let n = b.rounds.len().max(1) as f64;
        let top = b.total.max(sum).max(f64::MIN_POSITIVE) * 1.15;
        let mut chart = ChartBuilder::on(&root)
            .caption(
                format!("cumulative {} against the budget", b.unit),
                ("sans-serif", 18),
            )
            .margin(12)
            .x_label_area_size(36)
            .y_label_area_size(70)
            .build_cartesian_2d(0.0..n, 0.0..top)
            .map_err(plot_err)?;
        chart
            .configure_mesh()
            .x_desc("rounds completed")
            .y_desc(b.unit)
            .y_label_formatter(&|y| format!("{y:.2e}"))
            .draw()
            .map_err(plot_err)?;
        chart
            .draw_series(LineSeries::new(points, BLUE.stroke_width(2)))
            .map_err(plot_err)?
            .label(format!("spent {}", b.unit))
            .legend(|(x, y)| PathElement::new([(x, y), (x + 14, y)], BLUE.stroke_width(2)));
        chart
            .draw_series(LineSeries::new([(0.0, b.total), (n, b.total)], RED))
            .map_err(plot_err)?
            .label(format!("budget {} = {:.4e}", b.unit, b.total))
            .legend(|(x, y)| PathElement::new([(x, y), (x + 14, y)], RED));
        chart
            .draw_series(std::iter::once(Text::new(
                format!("final: {}", b.guarantee),
                (n * 0.05, top * 0.95),
                ("sans-serif", 15),
            )))
            .map_err(plot_err)?;
        legend(&mut chart, SeriesLabelPosition::LowerRight)?;
        root.present().map_err(plot_err)?;
    }
    Ok(svg)
}

fn diagnostics_section(d: &Diagnostics, h: &mut String) -> Result<(), CliError> {
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
    let _ = write!(
        h,
        "<div class=\"private\">\n<h2>NOT PRIVATE: diagnostics computed from the private input \
         (--compare). Do not publish this page.</h2>\n<p>Everything in this box compares the \
         release with the input data itself; it is not covered by the privacy guarantee. \
         Remove it (rerun without <code>--compare</code>) before sharing the report.</p>\n\
         <h3>Error distribution over the workload</h3>\n<p>Total-variation distance from the \
         input over {} marginals ({}): model mean {:.5}, max {:.5}; synthetic rows mean {:.5}, \
         max {:.5}.</p>\n",
        d.tv_model.len(),
        esc(&d.workload),
        mean(&d.tv_model),
        d.tv_model.iter().copied().fold(0.0, f64::max),
        mean(&d.tv_sample),
        d.tv_sample.iter().copied().fold(0.0, f64::max),
    );
    h.push_str(&tv_histogram(&d.tv_model, &d.tv_sample)?);
    h.push_str("<h3>True against synthetic marginals</h3>\n");
    for v in &d.views {
        let shown = v.cells.len().min(MAX_CELLS);
        let _ = writeln!(
            h,
            "<h4>{} <span class=\"note\">({}; TV model {:.4}, rows {:.4}{})</span></h4>",
            esc(&v.name),
            esc(&v.why),
            tv(&v.truth, &v.model),
            tv(&v.truth, &v.sample),
            if shown < v.cells.len() {
                format!("; first {shown} of {} cells shown", v.cells.len())
            } else {
                String::new()
            }
        );
        h.push_str(&marginal_bars(v, shown)?);
        h.push_str(
            "<table>\n<tr><th>#</th><th>cell</th><th class=\"num\">input</th>\
             <th class=\"num\">model</th><th class=\"num\">synthetic rows</th></tr>\n",
        );
        for i in 0..shown {
            let _ = writeln!(
                h,
                "<tr><td>{i}</td><td>{}</td><td class=\"num\">{:.6}</td><td class=\"num\">{:.6}</td>\
                 <td class=\"num\">{:.6}</td></tr>",
                esc(&v.cells[i]),
                v.truth[i],
                v.model.get(i).copied().unwrap_or(0.0),
                v.sample.get(i).copied().unwrap_or(0.0)
            );
        }
        h.push_str("</table>\n");
    }
    h.push_str("</div>\n");
    Ok(())
}

/// Histogram of the per-marginal TV, model and synthetic rows side by side.
fn tv_histogram(model: &[f64], sample: &[f64]) -> Result<String, CliError> {
    const BINS: u32 = 20;
    let hi = model
        .iter()
        .chain(sample)
        .copied()
        .fold(0.0, f64::max)
        .max(1e-6);
    let width = hi / f64::from(BINS);
    let bin = |t: f64| ((t / width) as u32).min(BINS - 1);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (900, 320)).into_drawing_area();
        root.fill(&WHITE).map_err(plot_err)?;
        let mut counts = [[0u32; BINS as usize]; 2];
        for (k, tvs) in [model, sample].into_iter().enumerate() {
            for &t in tvs {
                counts[k][bin(t) as usize] += 1;
            }
        }
        let top = counts.iter().flatten().copied().max().unwrap_or(1).max(1) + 1;
        let mut chart = ChartBuilder::on(&root)
            .caption(
                "per-marginal TV distance from the input",
                ("sans-serif", 18),
            )
            .margin(12)
            .x_label_area_size(36)
            .y_label_area_size(50)
            .build_cartesian_2d((0u32..BINS * 2).into_segmented(), 0u32..top)
            .map_err(plot_err)?;
        let fmt_x = |v: &SegmentValue<u32>| match v {
            SegmentValue::Exact(b) | SegmentValue::CenterOf(b) if b % 2 == 0 => {
                format!("{:.3}", f64::from(b / 2) * width)
            }
            _ => String::new(),
        };
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(BINS as usize)
            .x_label_formatter(&fmt_x)
            .x_desc("TV (bin start)")
            .y_desc("marginals")
            .draw()
            .map_err(plot_err)?;
        for (k, (name, color)) in [("model", BLUE), ("synthetic rows", GREEN)]
            .into_iter()
            .enumerate()
        {
            let style = color.mix(0.75).filled();
            chart
                .draw_series(
                    Histogram::vertical(&chart).style(style).margin(2).data(
                        counts[k]
                            .iter()
                            .enumerate()
                            .map(|(b, &c)| (2 * b as u32 + k as u32, c)),
                    ),
                )
                .map_err(plot_err)?
                .label(name)
                .legend(move |at| legend_box(at, style));
        }
        legend(&mut chart, SeriesLabelPosition::MiddleRight)?;
        root.present().map_err(plot_err)?;
    }
    Ok(svg)
}

/// Grouped bars: input, model and synthetic rows for the first `shown` cells.
fn marginal_bars(v: &MarginalView, shown: usize) -> Result<String, CliError> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (900, 300)).into_drawing_area();
        root.fill(&WHITE).map_err(plot_err)?;
        let series = [
            ("input", &v.truth, RED),
            ("model", &v.model, BLUE),
            ("synthetic rows", &v.sample, GREEN),
        ];
        let top = series
            .iter()
            .flat_map(|(_, p, _)| p.iter().take(shown))
            .copied()
            .fold(0.0, f64::max)
            .max(1e-6)
            * 1.1;
        let mut chart = ChartBuilder::on(&root)
            .margin(12)
            .x_label_area_size(30)
            .y_label_area_size(56)
            .build_cartesian_2d(-0.5..shown.max(1) as f64 - 0.5, 0.0..top)
            .map_err(plot_err)?;
        let fmt_x = |x: &f64| {
            let i = x.round();
            if (x - i).abs() < 1e-9 && i >= 0.0 {
                format!("{i:.0}")
            } else {
                String::new()
            }
        };
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(shown.min(24))
            .x_label_formatter(&fmt_x)
            .x_desc("cell (see the table)")
            .y_desc("probability")
            .draw()
            .map_err(plot_err)?;
        for (k, (name, p, color)) in series.into_iter().enumerate() {
            let style = color.mix(0.75).filled();
            let off = -0.45 + 0.3 * k as f64;
            chart
                .draw_series(p.iter().take(shown).enumerate().map(|(i, &y)| {
                    let x = i as f64 + off;
                    Rectangle::new([(x, 0.0), (x + 0.28, y)], style)
                }))
                .map_err(plot_err)?
                .label(name)
                .legend(move |at| legend_box(at, style));
        }
        legend(&mut chart, SeriesLabelPosition::MiddleRight)?;
        root.present().map_err(plot_err)?;
    }
    Ok(svg)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cell_labels_follow_the_marginal_order_and_tv_is_half_l1() {
        let d = Domain::binary(["a", "b"]).unwrap();
        assert_eq!(
            cell_labels(&d, &[0, 1]),
            ["a=0, b=0", "a=0, b=1", "a=1, b=0", "a=1, b=1"]
        );
        assert!((tv(&[0.5, 0.5], &[1.0, 0.0]) - 0.5).abs() < 1e-12);
        assert_eq!(normalised(vec![0.0, 0.0]), [0.0, 0.0]);
        assert_eq!(normalised(vec![1.0, 3.0]), [0.25, 0.75]);
        assert_eq!(esc("<a&\"b\">"), "&lt;a&amp;&quot;b&quot;&gt;");
    }
}
