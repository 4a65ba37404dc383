//! Elo over training (steps or minutes) as an SVG chart (plotters' SVG backend: text is written as SVG
//! `<text>` elements, so no font library is needed).

use std::path::Path;

use plotters::prelude::*;
use serde::{Deserialize, Serialize};

use crate::error::PlotError;

/// One rating measurement: a checkpoint's Elo at some point of training (a step count or
/// minutes of training, as the chart's x axis says), with its 95% interval.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EloPoint {
    /// Position on the x axis (training step, or minutes of training).
    pub x: f64,
    /// Rating.
    pub elo: f64,
    /// Lower end of the interval.
    pub lo: f64,
    /// Upper end of the interval.
    pub hi: f64,
    /// Series name: points with the same label are joined by a line.
    pub label: String,
}

impl From<(f64, f64, f64, f64, &str)> for EloPoint {
    fn from((x, elo, lo, hi, label): (f64, f64, f64, f64, &str)) -> EloPoint {
        EloPoint { x, elo, lo, hi, label: label.to_string() }
    }
}

const COLORS: [RGBColor; 6] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(255, 127, 14),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
];

/// Draws Elo against the points' x (described by `x_desc`, e.g. "training step") with
/// vertical error bars (one line per label) and writes it as SVG to `path` (atomically).
/// Non-finite values are skipped; an empty input gives an error.
pub fn plot_elo(points: &[EloPoint], x_desc: &str, path: &Path) -> Result<(), PlotError> {
    let svg = render_elo_svg(points, x_desc)?;
    Ok(crate::results::write_atomic(path, svg.as_bytes())?)
}

/// [`plot_elo`] into a string.
pub fn render_elo_svg(points: &[EloPoint], x_desc: &str) -> Result<String, PlotError> {
    let pts: Vec<&EloPoint> = points.iter().filter(|p| p.x.is_finite() && p.elo.is_finite()).collect();
    if pts.is_empty() {
        return Err(PlotError::NoPoints);
    }
    let fin = |v: f64, d: f64| if v.is_finite() { v } else { d };
    let (mut x0, mut x1) = (f64::INFINITY, f64::NEG_INFINITY);
    let (mut y0, mut y1) = (f64::INFINITY, f64::NEG_INFINITY);
    for p in &pts {
        x0 = x0.min(p.x);
        x1 = x1.max(p.x);
        y0 = y0.min(fin(p.lo, p.elo)).min(p.elo);
        y1 = y1.max(fin(p.hi, p.elo)).max(p.elo);
    }
    let xpad = ((x1 - x0) * 0.05).max(1.0);
    let ypad = ((y1 - y0) * 0.08).max(10.0);
    let mut labels: Vec<&str> = Vec::new();
    for p in &pts {
        if !labels.contains(&p.label.as_str()) {
            labels.push(&p.label);
        }
    }
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (900, 560)).into_drawing_area();
        let draw = || -> Result<(), Box<dyn std::error::Error + '_>> {
            root.fill(&WHITE)?;
            let mut chart = ChartBuilder::on(&root)
                .caption("Elo over training", ("sans-serif", 22))
                .margin(16)
                .x_label_area_size(44)
                .y_label_area_size(60)
                .build_cartesian_2d((x0 - xpad)..(x1 + xpad), (y0 - ypad)..(y1 + ypad))?;
            chart.configure_mesh().x_desc(x_desc).y_desc("Elo").draw()?;
            for (k, label) in labels.iter().enumerate() {
                let color = COLORS[k % COLORS.len()];
                let mut series: Vec<&&EloPoint> = pts.iter().filter(|p| p.label == *label).collect();
                series.sort_by(|a, b| a.x.total_cmp(&b.x));
                let bar_w = (x1 - x0 + 2.0 * xpad) * 0.006;
                for p in &series {
                    if p.lo.is_finite() && p.hi.is_finite() {
                        chart.draw_series(std::iter::once(PathElement::new(vec![(p.x, p.lo), (p.x, p.hi)], color)))?;
                        for y in [p.lo, p.hi] {
                            chart.draw_series(std::iter::once(PathElement::new(
                                vec![(p.x - bar_w, y), (p.x + bar_w, y)],
                                color,
                            )))?;
                        }
                    }
                }
                chart
                    .draw_series(LineSeries::new(series.iter().map(|p| (p.x, p.elo)), color.stroke_width(2)))?
                    .label(label.to_string())
                    .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2)));
                chart.draw_series(series.iter().map(|p| Circle::new((p.x, p.elo), 4, color.filled())))?;
            }
            chart
                .configure_series_labels()
                .background_style(WHITE.mix(0.85))
                .border_style(BLACK)
                .position(SeriesLabelPosition::UpperLeft)
                .draw()?;
            root.present()?;
            Ok(())
        };
        draw().map_err(|e| PlotError::Draw(e.to_string()))?;
    }
    Ok(svg)
}

/// One row of a run's Elo curve table (`<run>/arena/elo-curve.csv`, written by the Elo
/// ladder): a checkpoint's rating and when in training it was made.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EloCurveRow {
    /// Checkpoint name (`gen-0005`).
    pub name: String,
    /// Its generation.
    pub generation: u32,
    /// Its optimiser step.
    pub step: u64,
    /// Minutes of training behind it.
    pub minutes: f64,
    /// Elo (the first checkpoint is 0).
    pub elo: f64,
    /// Lower end of the 95 % interval.
    pub lo95: f64,
    /// Upper end of the 95 % interval.
    pub hi95: f64,
}

/// The header line of an Elo curve table (the columns of [`EloCurveRow`]).
pub const ELO_CURVE_HEADER: &str = "name,generation,step,minutes,elo,lo95,hi95";

/// An Elo curve table's text: the header, then one line per row.
pub fn write_elo_curve(rows: &[EloCurveRow]) -> String {
    let mut csv = format!("{ELO_CURVE_HEADER}\n");
    for r in rows {
        csv.push_str(&format!(
            "{},{},{},{:.2},{:.1},{:.1},{:.1}\n",
            r.name, r.generation, r.step, r.minutes, r.elo, r.lo95, r.hi95
        ));
    }
    csv
}

/// Reads an Elo curve table as [`write_elo_curve`] writes it (columns in any order, others
/// ignored). Errors name the line and the column.
pub fn read_elo_curve(text: &str) -> Result<Vec<EloCurveRow>, PlotError> {
    let table = CurveTable::parse(text)?;
    let [name, generation, step, minutes, elo, lo95, hi95] =
        ["name", "generation", "step", "minutes", "elo", "lo95", "hi95"].map(|c| table.column(c));
    let (name, generation, step, minutes) = (name?, generation?, step?, minutes?);
    let (elo, lo95, hi95) = (elo?, lo95?, hi95?);
    table
        .rows
        .iter()
        .map(|row| {
            Ok(EloCurveRow {
                name: row.fields[name].to_string(),
                generation: table.value(row, generation)?,
                step: table.value(row, step)?,
                minutes: table.value(row, minutes)?,
                elo: table.value(row, elo)?,
                lo95: table.value(row, lo95)?,
                hi95: table.value(row, hi95)?,
            })
        })
        .collect()
}

/// Reads an Elo curve table (`<run>/arena/elo-curve.csv` as `bredon arena --run` writes
/// it, or `scripts/join-curves.py`'s output: a header naming the columns, among them
/// `elo`, `lo95`, `hi95` and `x_column`) into points of the series `label`. A `part`
/// column splits the table into the series "`label` part N". Errors name the line.
pub fn parse_elo_curve(text: &str, label: &str, x_column: &str) -> Result<Vec<EloPoint>, PlotError> {
    let table = CurveTable::parse(text)?;
    let (x, elo, lo, hi) =
        (table.column(x_column)?, table.column("elo")?, table.column("lo95")?, table.column("hi95")?);
    let part = table.columns.iter().position(|c| *c == "part");
    table
        .rows
        .iter()
        .map(|row| {
            let label = match part {
                Some(k) => format!("{label} part {}", row.fields[k]),
                None => label.to_string(),
            };
            Ok(EloPoint {
                x: table.value(row, x)?,
                elo: table.value(row, elo)?,
                lo: table.value(row, lo)?,
                hi: table.value(row, hi)?,
                label,
            })
        })
        .collect()
}

/// A comma-separated table with a header line (blank lines skipped), every line with as
/// many fields as the header.
struct CurveTable<'a> {
    header: &'a str,
    columns: Vec<&'a str>,
    rows: Vec<CurveLine<'a>>,
}

/// A line of a [`CurveTable`].
struct CurveLine<'a> {
    /// 1-based line number in the text.
    line: usize,
    fields: Vec<&'a str>,
}

impl<'a> CurveTable<'a> {
    fn parse(text: &'a str) -> Result<CurveTable<'a>, PlotError> {
        let mut lines = text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty());
        let (_, header) = lines.next().ok_or(PlotError::EmptyTable)?;
        let columns: Vec<&str> = header.split(',').map(str::trim).collect();
        let mut rows = Vec::new();
        for (i, line) in lines {
            let fields: Vec<&str> = line.split(',').map(str::trim).collect();
            if fields.len() != columns.len() {
                return Err(PlotError::FieldCount { line: i + 1, found: fields.len(), expected: columns.len() });
            }
            rows.push(CurveLine { line: i + 1, fields });
        }
        Ok(CurveTable { header, columns, rows })
    }

    /// The index of column `name`.
    fn column(&self, name: &str) -> Result<usize, PlotError> {
        self.columns
            .iter()
            .position(|c| *c == name)
            .ok_or_else(|| PlotError::MissingColumn { column: name.to_string(), header: self.header.to_string() })
    }

    /// Field `k` of `row` as a number.
    fn value<T: std::str::FromStr>(&self, row: &CurveLine, k: usize) -> Result<T, PlotError> {
        row.fields[k].parse().map_err(|_| PlotError::NotANumber {
            line: row.line,
            value: row.fields[k].to_string(),
            column: self.columns[k].to_string(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_curve_tables_and_names_bad_lines() {
        let text = "name,generation,step,minutes,elo,lo95,hi95\ngen-0000,0,0,0.00,0.0,0.0,0.0\ngen-0020,20,400,9.50,310.5,250.0,371.0\n";
        let pts = parse_elo_curve(text, "5x5", "minutes").unwrap();
        assert_eq!(pts.len(), 2);
        assert_eq!((pts[1].x, pts[1].elo, pts[1].lo, pts[1].hi), (9.5, 310.5, 250.0, 371.0));
        assert!(pts.iter().all(|p| p.label == "5x5"));
        assert_eq!(parse_elo_curve(text, "5x5", "step").unwrap()[1].x, 400.0);
        let joined = "name,generation,step,minutes,elo,lo95,hi95,part\ng0,0,0,0,0,0,0,1\ng9,9,90,60,500,450,550,2\n";
        let labels: Vec<String> =
            parse_elo_curve(joined, "j", "minutes").unwrap().into_iter().map(|p| p.label).collect();
        assert_eq!(labels, ["j part 1", "j part 2"]);
        let err = parse_elo_curve("name,minutes,elo,lo95,hi95\na,1,2,3,4\nb,x,2,3,4\n", "c", "minutes").unwrap_err();
        assert!(err.to_string().contains("line 3") && err.to_string().contains("`x`"), "{err}");
        assert!(matches!(
            parse_elo_curve("name,minutes,elo,lo95,hi95\na,1,2,3,4\nb,x,2,3,4\n", "c", "minutes"),
            Err(PlotError::NotANumber { line: 3, value, column }) if value == "x" && column == "minutes"
        ));
        assert!(matches!(parse_elo_curve("", "c", "minutes"), Err(PlotError::EmptyTable)));
        let err = parse_elo_curve("name,elo,lo95,hi95\n", "c", "minutes").unwrap_err();
        assert!(matches!(&err, PlotError::MissingColumn { column, .. } if column == "minutes"));
        assert!(err.to_string().contains("`minutes`"), "{err}");
        assert!(
            parse_elo_curve("a,minutes,elo,lo95,hi95\nb,1,2\n", "c", "minutes")
                .unwrap_err()
                .to_string()
                .contains("line 2")
        );
    }

    /// A run's curve table reads back as written, and a bad one names the line and column.
    #[test]
    fn run_curves_round_trip() {
        let rows = vec![
            EloCurveRow {
                name: "gen-0000".into(),
                generation: 0,
                step: 0,
                minutes: 0.0,
                elo: 0.0,
                lo95: 0.0,
                hi95: 0.0,
            },
            EloCurveRow {
                name: "gen-0005".into(),
                generation: 5,
                step: 203,
                minutes: 24.21,
                elo: 132.5,
                lo95: -31.0,
                hi95: 295.9,
            },
        ];
        let text = write_elo_curve(&rows);
        assert!(text.starts_with(ELO_CURVE_HEADER), "{text}");
        assert_eq!(read_elo_curve(&text).unwrap(), rows);
        // Plotting reads the same file.
        assert_eq!(parse_elo_curve(&text, "run", "step").unwrap()[1].x, 203.0);
        let e = read_elo_curve(&format!("{ELO_CURVE_HEADER}\ngen-0000,0,0,x,0,0,0\n")).unwrap_err();
        assert!(matches!(&e, PlotError::NotANumber { line: 2, column, .. } if column == "minutes"), "{e}");
        let e = read_elo_curve(&format!("{ELO_CURVE_HEADER}\ngen-0000,0.5,0,0,0,0,0\n")).unwrap_err();
        assert!(matches!(&e, PlotError::NotANumber { line: 2, column, .. } if column == "generation"), "{e}");
        assert!(matches!(read_elo_curve("a,b\n"), Err(PlotError::MissingColumn { column, .. }) if column == "name"));
    }
}
