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
    let (w, h) = (640.0, 420.0);
    let (left, right, top, bottom) = (70.0, 170.0, 40.0, 50.0);
    let floor = 1e-4;
    let pts = series.iter().flat_map(|s| s.points.iter());
    let xs: Vec<f64> = pts.clone().map(|p| p.0).filter(|x| *x > 0.0).collect();
    let ys: Vec<f64> = pts
        .flat_map(|p| [(p.1 - p.2).max(floor), p.1 + p.2])
        .filter(|y| y.is_finite() && *y > 0.0)
        .collect();
    let lx = |v: f64| v.log10();
    let (x0, x1) = range(&xs.iter().map(|&x| lx(x)).collect::<Vec<_>>());
    let (y0, y1) = range(&ys.iter().map(|&y| lx(y.max(floor))).collect::<Vec<_>>());
    let (y0, y1) = (y0.floor(), y1.ceil());
    let px = |x: f64| left + (lx(x) - x0) / (x1 - x0).max(1e-12) * (w - left - right);
    let py = |y: f64| top + (y1 - lx(y.max(floor))) / (y1 - y0).max(1e-12) * (h - top - bottom);
    let mut s = String::new();
    let _ = write!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="sans-serif" font-size="12">
<rect width="100%" height="100%" fill="white"/>
<text x="{}" y="22" text-anchor="middle" font-size="14">{}</text>
"#,
        (w - right + left) / 2.0,
        escape(title)
    );
    // Axes and ticks.
    let (ax0, ax1, ay0, ay1) = (left, w - right, top, h - bottom);
    let _ = writeln!(
        s,
        r#"<path d="M{ax0},{ay0} L{ax0},{ay1} L{ax1},{ay1}" stroke="black" fill="none"/>"#
    );
    for &x in &xs_unique(&xs) {
        let _ = writeln!(
            s,
            r#"<line x1="{0}" y1="{ay1}" x2="{0}" y2="{1}" stroke="black"/><text x="{0}" y="{2}" text-anchor="middle">{3}</text>"#,
            px(x),
            ay1 + 4.0,
            ay1 + 18.0,
            x
        );
    }
    let mut e = y0;
    while e <= y1 + 1e-9 {
        let y = 10f64.powf(e);
        let _ = writeln!(
            s,
            r##"<line x1="{ax0}" y1="{0}" x2="{ax1}" y2="{0}" stroke="#ddd"/><text x="{1}" y="{2}" text-anchor="end">1e{3}</text>"##,
            py(y),
            ax0 - 6.0,
            py(y) + 4.0,
            e as i32
        );
        e += 1.0;
    }
    let _ = writeln!(
        s,
        r#"<text x="{}" y="{}" text-anchor="middle">{}</text><text transform="translate(18,{}) rotate(-90)" text-anchor="middle">{}</text>"#,
        (ax0 + ax1) / 2.0,
        h - 12.0,
        escape(x_label),
        (ay0 + ay1) / 2.0,
        escape(y_label)
    );
    // Bands, then curves, then the legend.
    for se in series {
        if se.points.is_empty() {
            continue;
        }
        let mut d = String::new();
        for (i, &(x, m, sd)) in se.points.iter().enumerate() {
            let _ = write!(
                d,
                "{}{:.2},{:.2} ",
                if i == 0 { "M" } else { "L" },
                px(x),
                py(m + sd)
            );
        }
        for &(x, m, sd) in se.points.iter().rev() {
            let _ = write!(d, "L{:.2},{:.2} ", px(x), py(m - sd));
        }
        let _ = writeln!(
            s,
            r#"<path d="{d}Z" fill="{}" fill-opacity="0.15" stroke="none"/>"#,
            se.color
        );
    }
    for (i, se) in series.iter().enumerate() {
        let mut d = String::new();
        for (j, &(x, m, _)) in se.points.iter().enumerate() {
            let _ = write!(
                d,
                "{}{:.2},{:.2} ",
                if j == 0 { "M" } else { "L" },
                px(x),
                py(m)
            );
        }
        let _ = writeln!(
            s,
            r#"<path d="{d}" fill="none" stroke="{}" stroke-width="2" stroke-dasharray="{}"/>"#,
            se.color, se.dash
        );
        let ly = top + 16.0 + 18.0 * i as f64;
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
    s.push_str("</svg>\n");
    s
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
