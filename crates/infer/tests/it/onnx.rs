//! ONNX export: the file runs in Python onnxruntime and matches burn's outputs.

use crate::common;
use bredon_infer::forward_raw;
use bredon_netform::encoding::{encode, input_len};
use bredon_netform::meta::ModelMeta;
use bredon_netform::{NetConfig, ValueHead};
use bredon_nn::Outputs;
use bredon_nn::{TakNet, load_exported};
use bredon_onnx::{export_onnx, onnx_bytes, read_onnx_summary};
use bredon_rules::Position;
use common::{real_positions, with_random_tensors};
use std::process::Command;

fn f32_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn have_onnxruntime() -> bool {
    Command::new("python3").args(["-c", "import onnxruntime, numpy"]).output().is_ok_and(|o| o.status.success())
}

const CHECK: &str = r#"
import sys, json, numpy as np, onnxruntime as ort
model, planes, logits, values, n, size = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]), int(sys.argv[6])
nplanes, outputs, extras = int(sys.argv[7]), json.loads(sys.argv[8]), json.loads(sys.argv[9])
x = np.fromfile(planes, dtype='<f4').reshape(n, nplanes, size, size)
want_l = np.fromfile(logits, dtype='<f4').reshape(n, -1)
want_v = np.fromfile(values, dtype='<f4').reshape(n, 1)
opts = ort.SessionOptions()
opts.intra_op_num_threads = 1
s = ort.InferenceSession(model, opts, providers=['CPUExecutionProvider'])
assert [i.name for i in s.get_inputs()] == ['planes'], s.get_inputs()
assert [o.name for o in s.get_outputs()] == outputs, s.get_outputs()
# Differences relative to each row's scale (its largest magnitude, at least 1): float32
# rounding grows with the largest terms summed, and a small logit beside logits in the
# hundreds (random weights make them) carries their rounding, not its own.
def rel(got, want):
    scale = np.maximum(1.0, np.abs(want).max(axis=-1, keepdims=True))
    return float((np.abs(got - want) / scale).max())
all_out = s.run(None, {'planes': x})
l, v = all_out[0], all_out[1]
l1, v1 = s.run(None, {'planes': x[:1]})[:2]
meta = s.get_modelmeta().custom_metadata_map
# The extra outputs (WDL logits, auxiliary heads) against burn's.
by_name = dict(zip(outputs, all_out))
extra = 0.0
for name, path in extras.items():
    want = np.fromfile(path, dtype='<f4').reshape(by_name[name].shape)
    extra = max(extra, rel(by_name[name], want))
if 'wdl_logits' in by_name:
    z = by_name['wdl_logits']
    p = np.exp(z - z.max(axis=1, keepdims=True)); p /= p.sum(axis=1, keepdims=True)
    extra = max(extra, float(np.abs(p[:, :1] - p[:, 2:] - v).max()))
print(json.dumps({
    'logits': rel(l, want_l), 'values': float(np.abs(v - want_v).max()),
    'extra': extra,
    'single': max(rel(l1, want_l[:1]), float(np.abs(v1 - want_v[:1]).max())),
    'shape': [list(l.shape), list(v.shape)], 'shapes': [list(o.shape) for o in all_out], 'meta': meta}))
"#;

#[test]
fn onnx_export_runs_in_onnxruntime_and_matches_burn() {
    check_onnx_export(&NetConfig::default_for_size(5));
}

#[test]
fn onnx_export_of_input_version_2() {
    check_onnx_export(&NetConfig { input_version: 2, ..NetConfig::default_for_size(5) });
}

#[test]
fn onnx_export_with_wdl_and_aux_heads() {
    check_onnx_export(&NetConfig { input_version: 2, wdl: true, aux: true, ..NetConfig::default_for_size(5) });
}

#[test]
fn onnx_export_with_the_conv_policy_head() {
    let cfg =
        NetConfig { input_version: 2, wdl: true, aux: true, policy_filters: 16, ..NetConfig::default_for_size(5) };
    check_onnx_export(&NetConfig { policy_head: bredon_netform::PolicyHead::Conv, ..cfg });
}

#[test]
fn onnx_export_with_global_pooling_and_the_pooling_value_head() {
    // Global pooling of some channels (a Slice) with random, non-zero weights (He scale for
    // its fan-in of 48; 0.5 made logits near 400), with both value heads; then of all of a
    // block's channels.
    let gpool = |m: &TakNet, c: &NetConfig| with_random_tensors(m, c, &["gpool_fc"], 0.2, 3);
    for value_head in [ValueHead::Dense, ValueHead::Pool] {
        let cfg = NetConfig {
            input_version: 2,
            wdl: true,
            aux: true,
            global_pool: true,
            gpool_channels: 16,
            value_head,
            value_filters: 8,
            ..NetConfig::default_for_size(5)
        };
        check_onnx_export_with(&cfg, gpool);
    }
    // On 6x6, where the board-size feature is not zero (it is on 5x5).
    let cfg = NetConfig {
        blocks: 2,
        channels: 16,
        global_pool: true,
        gpool_channels: 16,
        value_head: ValueHead::Pool,
        aux: true,
        ..NetConfig::default_for_size(6)
    };
    check_onnx_export_with(&cfg, gpool);
}

/// Exports a briefly trained network of `cfg` (the reference games' positions on 5x5,
/// random ones on other sizes) and compares onnxruntime's outputs with burn's.
fn check_onnx_export(cfg: &NetConfig) {
    check_onnx_export_with(cfg, |m, _| m.clone());
}

/// [`check_onnx_export`] of the trained network changed by `prepare`.
fn check_onnx_export_with(cfg: &NetConfig, prepare: impl Fn(&TakNet, &NetConfig) -> TakNet) {
    let size = cfg.size;
    let positions = if size == 5 { real_positions() } else { common::random_positions(size, 192, 6) };
    let cfg = cfg.clone();
    let version = cfg.input_version;
    let mut expected_outputs = vec!["policy_logits", "value"];
    if cfg.wdl {
        expected_outputs.push("wdl_logits");
    }
    if cfg.aux {
        expected_outputs.extend(["flat_margin", "ownership", "opponent_policy_logits"]);
    }
    // A few training steps so the BatchNorm statistics (folded into the export) matter.
    let model = prepare(&common::trained(&cfg, &positions, 4), &cfg);
    let meta = ModelMeta::new(&cfg, 3, 3, 1);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("net.onnx");
    export_onnx(&model.fold(meta.size), &meta, &file).unwrap();

    let summary = read_onnx_summary(&file).unwrap();
    assert_eq!(summary.opset, 17);
    assert_eq!(summary.inputs, ["planes"]);
    assert_eq!(summary.outputs, expected_outputs);
    let get = |k: &str| summary.metadata.iter().find(|(key, _)| key == k).map(|(_, v)| v.clone());
    assert_eq!(get("size"), Some(size.to_string()));
    assert_eq!(get("half_komi").as_deref(), Some("3"));
    assert_eq!(get("komi").as_deref(), Some("1.5"));
    assert_eq!(get("input_version"), Some(version.to_string()));
    assert_eq!(get("planes"), Some(cfg.planes().to_string()));
    assert_eq!(serde_json::from_str::<NetConfig>(&get("net").unwrap()).unwrap(), cfg);

    if !have_onnxruntime() {
        // A failure in CI (`.ci/run` installs onnxruntime), a loud skip elsewhere.
        bredon_rules::testdata::skip_or_fail(
            "the onnxruntime comparison",
            "Python onnxruntime (with numpy)",
            "python3 -m pip install onnxruntime",
        );
        return;
    }
    let ps: Vec<&Position> = positions.iter().step_by(3).take(64).collect();
    assert!(ps.len() >= 32);
    let len = input_len(version, size);
    let mut planes = vec![0.0f32; ps.len() * len];
    for (i, p) in ps.iter().enumerate() {
        encode(p, version, &mut planes[i * len..(i + 1) * len]);
    }
    let (logits, values) = forward_raw(&model, &ps, size);
    let write = |name: &str, v: &[f32]| {
        let p = dir.path().join(name);
        std::fs::write(&p, f32_bytes(v)).unwrap();
        p.to_string_lossy().into_owned()
    };
    // burn's outputs of the extra heads.
    let x = burn::tensor::Tensor::<4>::from_data(
        burn::tensor::TensorData::new(planes.clone(), [ps.len(), cfg.planes(), size, size]),
        &bredon_nn::device::cpu(),
    );
    let out = model.forward_all(x, Outputs::All);
    let floats = |t: burn::tensor::Tensor<2>| t.into_data().convert::<f32>().try_into_vec::<f32>().unwrap();
    let mut extras = serde_json::Map::new();
    for (name, t) in [
        ("wdl_logits", out.wdl),
        ("flat_margin", out.flat_margin),
        ("ownership", out.ownership),
        ("opponent_policy_logits", out.opponent_policy),
    ] {
        if let Some(t) = t {
            extras.insert(name.into(), write(&format!("{name}.bin"), &floats(t)).into());
        }
    }
    assert_eq!(extras.len() + 2, expected_outputs.len());
    let args = [
        file.to_string_lossy().into_owned(),
        write("planes.bin", &planes),
        write("logits.bin", &logits),
        write("values.bin", &values),
        ps.len().to_string(),
        size.to_string(),
        cfg.planes().to_string(),
        serde_json::to_string(&expected_outputs).unwrap(),
        serde_json::Value::Object(extras).to_string(),
    ];
    let out = Command::new("python3").arg("-c").arg(CHECK).args(&args).output().unwrap();
    assert!(out.status.success(), "onnxruntime failed: {}", String::from_utf8_lossy(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    eprintln!("onnxruntime vs burn: {report}");
    // Logits and the extra heads relative to their row's scale (float32 sums of hundreds
    // of products in another order: a small logit beside logits near 400 differed by
    // 1.3e-4 of itself on CI's CPU, about 1e-6 of its row), values absolute.
    for key in ["logits", "values", "single", "extra"] {
        let d = report[key].as_f64().unwrap();
        assert!(d <= 1e-4, "{key} differ by {d}");
    }
    let moves = bredon_netform::policy::policy_size(size);
    assert_eq!(report["shape"], serde_json::json!([[ps.len(), moves], [ps.len(), 1]]));
    assert_eq!(report["meta"]["size"], size.to_string());
    assert_eq!(report["meta"]["input_version"], version.to_string());
}

#[test]
fn shipped_onnx_models_are_the_exports_of_the_shipped_models() {
    let shipped = common::shipped_dir();
    // Every ONNX file shipped is the export of the model of the same name (the first
    // models' ONNX files left the tree; experiments/seeds/README.md says where they are).
    let mut names: Vec<String> = std::fs::read_dir(&shipped)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "onnx"))
        .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
        .collect();
    names.sort();
    for current in ["4x4", "5x5", "6x6", "7x7", "8x8"] {
        assert!(names.iter().any(|n| n == current), "checkpoints/shipped/{current}.onnx is missing: {names:?}");
    }
    for name in &names {
        let (model, meta) = load_exported(&shipped.join(format!("{name}.bredon"))).unwrap();
        let bytes = onnx_bytes(&model.fold(meta.size), &meta).unwrap();
        let file = std::fs::read(shipped.join(format!("{name}.onnx")))
            .unwrap_or_else(|e| panic!("checkpoints/shipped/{name}.onnx: {e}"));
        assert!(
            bytes == file,
            "checkpoints/shipped/{name}.onnx is not `bredon export checkpoints/shipped/{name}.bredon --format onnx`"
        );
    }
}
