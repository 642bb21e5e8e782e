//! A small hand-written SVG line chart: log-x, log-y, mean curves with ±1 sd bands.

use std::fmt::Write as _;

/// One curve: a label, a colour, a dash pattern and points `(x, mean, sd)`.
#[derive(Debug, Clone)]
pub struct Series {
    /// Legend text.
    pub label: String,
    /// CSS colour.
    pub color: &'static str,
    /// SVG `stroke-dasharray` ("" for solid).
    pub dash: &'static str,
    /// `(x, mean, standard deviation)`, x increasing.
    pub points: Vec<(f64, f64, f64)>,
}

/// Renders a chart with logarithmic axes (the KL values span orders of magnitude).
pub fn line_chart(title: &str, x_label: &str, y_label: &str, series: &[Series]) -> String {
    let frame = Frame::fit(series);
    let mut s = String::new();
    let _ = write!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="sans-serif" font-size="12">
<rect width="100%" height="100%" fill="white"/>
<text x="{}" y="22" text-anchor="middle" font-size="14">{}</text>
"#,
        (W - RIGHT + LEFT) / 2.0,
        escape(title),
        w = W,
        h = H,
    );
    frame.axes(&mut s, x_label, y_label);
    // Bands, then curves, then the legend.
    for se in series {
        frame.band(&mut s, se);
    }
    for (i, se) in series.iter().enumerate() {
        frame.curve(&mut s, se);
        legend_entry(&mut s, i, se);
    }
    s.push_str("</svg>\n");
    s
}

/// The chart's size.
const W: f64 = 640.0;
const H: f64 = 420.0;
/// The margins around the plotting area (the legend sits in the right one).
const LEFT: f64 = 70.0;
const RIGHT: f64 = 170.0;
const TOP: f64 = 40.0;
const BOTTOM: f64 = 50.0;
/// The smallest y drawn (log axes cannot show 0).
const FLOOR: f64 = 1e-4;

/// The plotting area's log-scale ranges, fitted to the data.
struct Frame {
    /// Every x > 0 of the data.
    xs: Vec<f64>,
    /// log10 range of x.
    x0: f64,
    x1: f64,
    /// log10 range of y, widened to whole decades.
    y0: f64,
    y1: f64,
}

impl Frame {
    fn fit(series: &[Series]) -> Self {
        let pts = series.iter().flat_map(|s| s.points.iter());
        let xs: Vec<f64> = pts.clone().map(|p| p.0).filter(|x| *x > 0.0).collect();
        let ys: Vec<f64> = pts
            .flat_map(|p| [(p.1 - p.2).max(FLOOR), p.1 + p.2])
            .filter(|y| y.is_finite() && *y > 0.0)
            .collect();
        let (x0, x1) = range(&xs.iter().map(|&x| x.log10()).collect::<Vec<_>>());
        let (y0, y1) = range(&ys.iter().map(|&y| y.max(FLOOR).log10()).collect::<Vec<_>>());
        Frame {
            xs,
            x0,
            x1,
            y0: y0.floor(),
            y1: y1.ceil(),
        }
    }

    fn px(&self, x: f64) -> f64 {
        LEFT + (x.log10() - self.x0) / (self.x1 - self.x0).max(1e-12) * (W - LEFT - RIGHT)
    }

    fn py(&self, y: f64) -> f64 {
        TOP + (self.y1 - y.max(FLOOR).log10()) / (self.y1 - self.y0).max(1e-12) * (H - TOP - BOTTOM)
    }

    /// Axes, x ticks at the data's x values, y grid lines at each decade, labels.
    fn axes(&self, s: &mut String, x_label: &str, y_label: &str) {
        let (ax0, ax1, ay0, ay1) = (LEFT, W - RIGHT, TOP, H - BOTTOM);
        let _ = writeln!(
            s,
            r#"<path d="M{ax0},{ay0} L{ax0},{ay1} L{ax1},{ay1}" stroke="black" fill="none"/>"#
        );
        for &x in &xs_unique(&self.xs) {
            let _ = writeln!(
                s,
                r#"<line x1="{0}" y1="{ay1}" x2="{0}" y2="{1}" stroke="black"/><text x="{0}" y="{2}" text-anchor="middle">{3}</text>"#,
                self.px(x),
                ay1 + 4.0,
                ay1 + 18.0,
                x
            );
        }
        let mut e = self.y0;
        while e <= self.y1 + 1e-9 {
            let y = 10f64.powf(e);
            let _ = writeln!(
                s,
                r##"<line x1="{ax0}" y1="{0}" x2="{ax1}" y2="{0}" stroke="#ddd"/><text x="{1}" y="{2}" text-anchor="end">1e{3}</text>"##,
                self.py(y),
                ax0 - 6.0,
                self.py(y) + 4.0,
                e as i32
            );
            e += 1.0;
        }
        let _ = writeln!(
            s,
            r#"<text x="{}" y="{}" text-anchor="middle">{}</text><text transform="translate(18,{}) rotate(-90)" text-anchor="middle">{}</text>"#,
            (ax0 + ax1) / 2.0,
            H - 12.0,
            escape(x_label),
            (ay0 + ay1) / 2.0,
            escape(y_label)
        );
    }

    /// The ±1 sd band of a series.
    fn band(&self, s: &mut String, se: &Series) {
        if se.points.is_empty() {
            return;
        }
        let mut d = String::new();
        for (i, &(x, m, sd)) in se.points.iter().enumerate() {
            let _ = write!(
                d,
                "{}{:.2},{:.2} ",
                if i == 0 { "M" } else { "L" },
                self.px(x),
                self.py(m + sd)
            );
        }
        for &(x, m, sd) in se.points.iter().rev() {
            let _ = write!(d, "L{:.2},{:.2} ", self.px(x), self.py(m - sd));
        }
        let _ = writeln!(
            s,
            r#"<path d="{d}Z" fill="{}" fill-opacity="0.15" stroke="none"/>"#,
            se.color
        );
    }

    /// The mean curve of a series.
    fn curve(&self, s: &mut String, se: &Series) {
        let mut d = String::new();
        for (j, &(x, m, _)) in se.points.iter().enumerate() {
            let _ = write!(
                d,
                "{}{:.2},{:.2} ",
                if j == 0 { "M" } else { "L" },
                self.px(x),
                self.py(m)
            );
        }
        let _ = writeln!(
            s,
            r#"<path d="{d}" fill="none" stroke="{}" stroke-width="2" stroke-dasharray="{}"/>"#,
            se.color, se.dash
        );
    }
}

/// The legend line of series number `i`.
fn legend_entry(s: &mut String, i: usize, se: &Series) {
    let ax1 = W - RIGHT;
    let ly = TOP + 16.0 + 18.0 * i as f64;
    let _ = writeln!(
        s,
        r#"<line x1="{0}" y1="{ly}" x2="{1}" y2="{ly}" stroke="{2}" stroke-width="2" stroke-dasharray="{3}"/><text x="{4}" y="{5}">{6}</text>"#,
        ax1 + 10.0,
        ax1 + 34.0,
        se.color,
        se.dash,
        ax1 + 40.0,
        ly + 4.0,
        escape(&se.label)
    );
}

fn range(v: &[f64]) -> (f64, f64) {
    let lo = v.iter().cloned().fold(f64::INFINITY, f64::min);
    let hi = v.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    if !lo.is_finite() || !hi.is_finite() {
        (0.0, 1.0)
    } else if hi - lo < 1e-9 {
        (lo - 0.5, hi + 0.5)
    } else {
        (lo, hi)
    }
}

fn xs_unique(xs: &[f64]) -> Vec<f64> {
    let mut v: Vec<f64> = xs.to_vec();
    v.sort_by(f64::total_cmp);
    v.dedup();
    v
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_well_formed_svg() {
        let s = line_chart(
            "mildew <w=3>",
            "epsilon",
            "KL",
            &[Series {
                label: "MWEM".into(),
                color: "blue",
                dash: "",
                points: vec![(0.1, 1.0, 0.2), (1.0, 0.1, 0.05)],
            }],
        );
        assert!(s.starts_with("<svg") && s.trim_end().ends_with("</svg>"));
        assert!(s.contains("mildew &lt;w=3&gt;"));
        assert_eq!(s.matches("<path").count(), 3);
    }
}
