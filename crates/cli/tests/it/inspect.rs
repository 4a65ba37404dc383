//! `bredon inspect`: a model's health table and its JSON agree with themselves, and a bad
//! path is a clear error.

use crate::common::{bredon, repo_file, text};

#[test]
fn inspect_reports_every_layer_and_totals_that_add_up() {
    let model = repo_file("checkpoints/shipped/6x6.bredon");
    let out = bredon().args(["inspect", "--json"]).arg(&model).output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["size"], 6);
    let h = &v["health"];
    let layers = h["layers"].as_array().unwrap();
    let num = |l: &serde_json::Value, k: &str| l[k].as_u64().unwrap_or_else(|| panic!("{k} in {l}")) as usize;
    // The stem, two convolutions and a pooling layer per block (6 blocks), and the heads.
    let blocks = layers.iter().filter(|l| l["name"].as_str().unwrap().ends_with(".conv1")).count();
    assert_eq!(blocks, 6);
    assert_eq!(layers.iter().filter(|l| l["name"].as_str().unwrap().ends_with(".gpool")).count(), 6);
    assert_eq!(layers[0]["name"], "stem");
    let (mut weights, mut tiny, mut dead_trunk, mut trunk) = (0, 0, 0, 0);
    for l in layers {
        let (outputs, dead, w, t) =
            (num(l, "outputs"), num(l, "dead_outputs"), num(l, "weights"), num(l, "tiny_weights"));
        assert!(dead <= outputs && t <= w && w % outputs == 0, "{l}");
        // A dead output's incoming weights are all tiny.
        assert!(t >= dead * (w / outputs), "{l}");
        assert!(num(l, "denormal_weights") + num(l, "zero_weights") <= t, "{l}");
        let name = l["name"].as_str().unwrap();
        if name.starts_with("block") && !name.ends_with(".gpool") {
            dead_trunk += dead;
            trunk += outputs;
        }
        weights += w;
        tiny += t;
    }
    assert_eq!((num(h, "weights"), num(h, "tiny_weights")), (weights, tiny));
    assert_eq!((num(h, "dead_trunk_channels"), num(h, "trunk_channels")), (dead_trunk, trunk));
    assert_eq!(trunk, 12 * 64);
    // The units' activity on positions: every hidden ReLU layer, dormant counts that grow
    // with τ and never pass the layer's units; a weight-dead channel never fires.
    let activity = v["activity"].as_array().unwrap();
    assert_eq!(activity.len(), 1 + 2 * 6 + 3);
    for l in activity {
        let d: Vec<usize> = l["dormant"].as_array().unwrap().iter().map(|x| x.as_u64().unwrap() as usize).collect();
        assert!(d.len() == 2 && d[0] <= d[1] && d[1] <= num(l, "units"), "{l}");
    }
    for l in layers.iter().filter(|l| l["name"].as_str().unwrap().ends_with(".conv1")) {
        let name = l["name"].as_str().unwrap();
        let a = activity.iter().find(|a| a["name"] == name).unwrap_or_else(|| panic!("{name}"));
        assert!(a["dormant"][0].as_u64().unwrap() as usize >= num(l, "dead_outputs"), "{name}: {a} / {l}");
    }
    // The table says the same.
    let out = bredon().arg("inspect").arg(&model).output().unwrap();
    let table = text(&out);
    assert!(out.status.success(), "{table}");
    assert!(table.contains("block6.conv1") && table.contains("opponent_policy_out"), "{table}");
    assert!(table.contains(&format!("residual blocks: {dead_trunk} of {trunk} output channels dead")), "{table}");
    assert!(table.contains("dormant units") && table.contains("value_fc1"), "{table}");
}

#[test]
fn inspect_of_a_missing_or_broken_file_names_it() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nothing.bredon");
    let out = bredon().arg("inspect").arg(&missing).output().unwrap();
    assert!(!out.status.success());
    assert!(text(&out).contains("nothing.bredon"), "{}", text(&out));
    let broken = dir.path().join("broken.bredon");
    std::fs::write(&broken, b"BREDONM2 not a model").unwrap();
    let out = bredon().arg("inspect").arg(&broken).output().unwrap();
    assert!(!out.status.success());
    let t = text(&out);
    assert!(t.contains("broken.bredon") && !t.contains("panicked"), "{t}");
}
