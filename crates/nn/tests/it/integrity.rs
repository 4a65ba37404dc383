//! Damaged model files are refused with a clear error; non-finite weights are never
//! loaded or written; a non-finite training step changes nothing.

use bredon_netform::NetConfig;
use bredon_netform::meta::ModelMeta;
use bredon_nn::checkpoint::{load_exported_verified, load_model_verified};
use bredon_nn::train::OptimizerSettings;
use bredon_nn::{StepOutcome, TakNet, TrainExample, Trainer, export_model, load_exported, load_model, save_model};
use bredon_rules::Position;
use bredon_storage::integrity::Verified;
use burn::module::{Module, ModuleMapper, Param};
use burn::prelude::*;
use std::path::Path;

fn tiny(size: usize) -> NetConfig {
    NetConfig { size, blocks: 1, channels: 8, value_hidden: 8, policy_filters: 2, ..NetConfig::default() }
}

#[track_caller]
fn err_of<T, E: std::error::Error>(r: Result<T, E>) -> String {
    match r {
        Ok(_) => panic!("expected an error"),
        Err(e) => bredon_storage::error_chain(&e),
    }
}

/// Sets every value of the first float parameter to NaN.
struct Poison(bool);

impl ModuleMapper for Poison {
    fn map_float<const D: usize>(&mut self, param: Param<Tensor<D>>) -> Param<Tensor<D>> {
        if self.0 {
            return param;
        }
        self.0 = true;
        param.map(|t| t.mul_scalar(f32::NAN))
    }
}

fn flip(path: &Path, at: usize) {
    let mut b = std::fs::read(path).unwrap();
    let at = at.min(b.len() - 1);
    b[at] ^= 0x40;
    std::fs::write(path, b).unwrap();
}

#[test]
fn checkpoint_checksums_catch_damage() {
    let cfg = tiny(4);
    let model = Trainer::new(&cfg, OptimizerSettings::default(), 1).unwrap().model();
    let meta = ModelMeta::new(&cfg, 0, 7, 1);
    let dir = tempfile::tempdir().unwrap();
    save_model(&model, &meta, dir.path()).unwrap();
    assert_eq!(load_model_verified(dir.path()).unwrap().2, Verified::Ok);
    let json = std::fs::read(dir.path().join("model.json")).unwrap();
    // One flipped bit in the weights: refused, naming the file.
    let bpk = dir.path().join("model.bpk");
    let good = std::fs::read(&bpk).unwrap();
    flip(&bpk, good.len() / 2);
    let e = err_of(load_model(dir.path()));
    assert!(e.contains("model.bpk") && e.contains("checksum mismatch"), "{e}");
    std::fs::write(&bpk, &good).unwrap();
    // A truncated weights file too.
    std::fs::write(&bpk, &good[..good.len() - 100]).unwrap();
    assert!(err_of(load_model(dir.path())).contains("checksum mismatch"));
    std::fs::write(&bpk, &good).unwrap();
    // An edited value in the metadata.
    let text = String::from_utf8(json.clone()).unwrap().replace("\"step\": 7", "\"step\": 8");
    std::fs::write(dir.path().join("model.json"), text).unwrap();
    let e = err_of(load_model(dir.path()));
    assert!(e.contains("model.json") && e.contains("checksum mismatch"), "{e}");
    // Half a JSON file.
    std::fs::write(dir.path().join("model.json"), &json[..json.len() / 2]).unwrap();
    let e = err_of(load_model(dir.path()));
    assert!(e.contains("model.json") && e.contains("not valid JSON"), "{e}");
    // A checkpoint from before checksums (plain model.json) still loads, unverified.
    std::fs::write(dir.path().join("model.json"), serde_json::to_vec(&meta).unwrap()).unwrap();
    let (_, m, v) = load_model_verified(dir.path()).unwrap();
    assert_eq!((m, v), (meta, Verified::NoChecksum));
}

#[test]
fn exports_are_checksummed_and_old_exports_still_load() {
    let cfg = tiny(4);
    let model = Trainer::new(&cfg, OptimizerSettings::default(), 2).unwrap().model();
    let meta = ModelMeta::new(&cfg, 0, 7, 1);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("m.bredon");
    export_model(&model, &meta, &file).unwrap();
    assert_eq!(load_exported_verified(&file).unwrap().2, Verified::Ok);
    let good = std::fs::read(&file).unwrap();
    for at in [0usize, 10, 40, good.len() / 2, good.len() - 1] {
        let mut b = good.clone();
        b[at] ^= 1;
        std::fs::write(&file, &b).unwrap();
        let e = err_of(load_exported(&file));
        assert!(e.contains("m.bredon"), "byte {at}: {e}");
    }
    std::fs::write(&file, &good[..good.len() - 7]).unwrap();
    assert!(err_of(load_exported(&file)).contains("checksum mismatch"));
    // The version-1 layout (magic BREDONM1, no trailer) loads unverified...
    let mut v1 = good[..good.len() - 4].to_vec();
    v1[..8].copy_from_slice(b"BREDONM1");
    std::fs::write(&file, &v1).unwrap();
    assert_eq!(load_exported_verified(&file).unwrap().2, Verified::NoChecksum);
    // ...but NaN weights in it are refused: 0xFF bytes amid the weights (issue 13's damage).
    let at = v1.len() / 2;
    v1[at..at + 8].copy_from_slice(&[0xFF; 8]); // 8 bytes: one whole aligned f32 at least
    std::fs::write(&file, &v1).unwrap();
    let e = err_of(load_exported(&file));
    assert!(e.contains("non-finite weights") && e.contains("m.bredon"), "{e}");
}

#[test]
fn the_shipped_models_are_checksummed_and_a_damaged_copy_is_refused() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../checkpoints/shipped");
    // Every model shipped, current (`NxN.bredon`) and earlier (`NxN-v1.bredon`), is
    // checksummed and of the size its name says.
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with(".bredon"))
        .collect();
    names.sort();
    for size in [4, 5, 6] {
        assert!(names.contains(&format!("{size}x{size}.bredon")), "no {size}x{size}.bredon in {names:?}");
    }
    for name in &names {
        let size: usize = name.split('x').next().and_then(|n| n.parse().ok()).expect("an NxN model name");
        let (_, meta, v) = load_exported_verified(&dir.join(name)).unwrap();
        assert_eq!((meta.size, v), (size, Verified::Ok), "{name}");
    }
    // The damage of issue 13 (in the model shipped then): 0xFF at byte 600000.
    let shipped = dir.join("4x4-v1.bredon");
    let mut b = std::fs::read(&shipped).unwrap();
    b[600_000..600_004].copy_from_slice(&[0xFF; 4]);
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("4x4.bredon");
    std::fs::write(&copy, &b).unwrap();
    let e = err_of(load_exported(&copy));
    assert!(e.contains("4x4.bredon") && e.contains("checksum mismatch"), "{e}");
}

#[test]
fn non_finite_weights_are_never_written() {
    let cfg = tiny(3);
    let model: TakNet = Trainer::new(&cfg, OptimizerSettings::default(), 3).unwrap().model();
    let bad = model.map(&mut Poison(false));
    let meta = ModelMeta::new(&cfg, 0, 0, 0);
    let dir = tempfile::tempdir().unwrap();
    let e = err_of(save_model(&bad, &meta, &dir.path().join("ck")));
    assert!(e.contains("non-finite weights"), "{e}");
    assert!(!dir.path().join("ck/model.json").exists());
    let e = err_of(export_model(&bad, &meta, &dir.path().join("x.bredon")));
    assert!(e.contains("non-finite weights") && e.contains("x.bredon"), "{e}");
    assert!(!dir.path().join("x.bredon").exists());
}

#[test]
fn a_non_finite_step_is_skipped_and_changes_nothing() {
    let cfg = tiny(3);
    let mut trainer = Trainer::new(&cfg, OptimizerSettings::default(), 4).unwrap();
    let pos = Position::new(3).unwrap();
    let mv = pos.legal_moves()[0];
    let good = vec![TrainExample {
        position: pos.clone(),
        policy: vec![(mv, 1.0)],
        value: 0.5,
        wdl: None,
        aux: Default::default(),
    }];
    let nan_value = vec![TrainExample {
        position: pos.clone(),
        policy: vec![(mv, 1.0)],
        value: f32::NAN,
        wdl: None,
        aux: Default::default(),
    }];
    let inf_policy = vec![TrainExample {
        position: pos.clone(),
        policy: vec![(mv, f32::INFINITY)],
        value: 0.0,
        wdl: None,
        aux: Default::default(),
    }];
    // A twin trainer with the same weights that never sees the bad batches.
    let mut twin = Trainer::from_model(&cfg, trainer.model(), OptimizerSettings::default()).unwrap();
    for bad in [&nan_value, &inf_policy] {
        match trainer.try_step(bad, 0.01).unwrap() {
            StepOutcome::Skipped(why) => assert!(why.contains("non-finite"), "{why}"),
            other => panic!("{other:?}"),
        }
    }
    assert!(matches!(trainer.try_step(&good, f64::NAN).unwrap(), StepOutcome::Skipped(_)));
    assert!(trainer.step(&nan_value, 0.01).is_err());
    // Parameters and optimiser state are as if the skipped steps never happened: the
    // next steps give exactly the twin's losses (training-mode losses use batch
    // statistics, so they depend on nothing else).
    for _ in 0..3 {
        let (a, b) = (trainer.try_step(&good, 0.01).unwrap(), twin.try_step(&good, 0.01).unwrap());
        let (StepOutcome::Trained(a), StepOutcome::Trained(b)) = (a, b) else { panic!("a step was skipped") };
        assert!(a.total.is_finite() && (a.total - b.total).abs() <= 1e-5 * b.total.abs(), "{a:?} vs {b:?}");
    }
}
