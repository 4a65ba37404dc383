//! The Elo chart is written as a self-contained SVG.

use bredon_arena::{EloPoint, plot_elo, render_elo_svg};

#[test]
fn elo_plot_is_svg_with_error_bars_and_labels() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("plots/elo.svg");
    let points: Vec<EloPoint> = vec![
        (0.0, 0.0, 0.0, 0.0, "net").into(),
        (1000.0, 85.0, 60.0, 110.0, "net").into(),
        (2000.0, 160.0, 130.0, 190.0, "net").into(),
        (3000.0, 210.0, 170.0, 250.0, "net").into(),
        (0.0, -40.0, -70.0, -10.0, "uniform-800").into(),
        (3000.0, -40.0, -70.0, -10.0, "uniform-800").into(),
        (1500.0, f64::NAN, 0.0, 0.0, "net").into(),
    ];
    plot_elo(&points, "training step", &path).unwrap();
    let svg = std::fs::read_to_string(&path).unwrap();
    assert!(svg.starts_with("<svg"), "{}", &svg[..80.min(svg.len())]);
    assert!(svg.trim_end().ends_with("</svg>"));
    for text in ["Elo over training", "training step", "uniform-800", "net"] {
        assert!(svg.contains(text), "missing {text:?}");
    }
    assert!(svg.matches("<circle").count() >= 6, "one marker per finite point");
    // Error bars: a vertical segment and two caps per point with an interval.
    assert!(svg.matches("<polyline").count() >= 6 * 3);
    assert!(!svg.contains("NaN"));
    assert!(render_elo_svg(&[], "x").is_err());
    // Infinite intervals are drawn without bars.
    let p: EloPoint = (1.0, 5.0, f64::NEG_INFINITY, f64::INFINITY, "x").into();
    assert!(render_elo_svg(&[p], "x").unwrap().contains("<circle"));
}
