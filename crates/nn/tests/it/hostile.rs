//! Hostile model files (issue 26): copies of the shipped 4x4 model with edited metadata
//! or weights and a recomputed, valid checksum. Each is refused quickly, before a
//! network is built, with a short message naming what is wrong.
//!
//! With `BREDON_HOSTILE_DIR` set, the files are also written there (to measure the
//! binary on them: `/usr/bin/time -v bredon tei --model FILE`).

use bredon_nn::checkpoint::{WEIGHTS_CRC_FIELD, load_exported_bytes, load_model};
use bredon_storage::integrity::{append_crc, crc_hex, crc32c, to_checked_json};
use burn_pack::{Reader, Tensor, Writer};
use serde_json::{Value, json};
use std::path::Path;
use std::time::{Duration, Instant};

/// The longest message a hostile file may get.
const MAX_LEN: usize = 500;

fn shipped() -> (Value, Vec<u8>) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../checkpoints/shipped/4x4.bredon");
    let b = std::fs::read(path).unwrap();
    let len = u32::from_le_bytes(b[8..12].try_into().unwrap()) as usize;
    let meta = serde_json::from_slice(&b[12..12 + len]).unwrap();
    (meta, b[12 + len..b.len() - 4].to_vec())
}

/// A `.bredon` file of `meta` and `weights` with a valid checksum.
fn bredon(meta: &Value, weights: &[u8]) -> Vec<u8> {
    assemble(&serde_json::to_vec(meta).unwrap(), weights)
}

fn assemble(json: &[u8], weights: &[u8]) -> Vec<u8> {
    let mut out = b"BREDONM2".to_vec();
    out.extend_from_slice(&(json.len() as u32).to_le_bytes());
    out.extend_from_slice(json);
    out.extend_from_slice(weights);
    append_crc(&mut out);
    out
}

/// The shipped model with `edit` applied to its metadata.
fn edited(edit: impl FnOnce(&mut Value)) -> Vec<u8> {
    let (mut meta, weights) = shipped();
    edit(&mut meta);
    bredon(&meta, &weights)
}

/// The shipped weights with `edit` applied to their burnpack tensors.
fn reweighted(edit: impl FnOnce(&mut Vec<Tensor>)) -> Vec<u8> {
    let (meta, weights) = shipped();
    let mut tensors = Reader::from_bytes(burn::tensor::Bytes::from_bytes_vec(weights)).unwrap().into_tensors().unwrap();
    edit(&mut tensors);
    let bytes = Writer::new(tensors).into_bytes().unwrap();
    bredon(&meta, &bytes)
}

/// Loads `file`, expecting an error that names each of `needles`; returns it.
#[track_caller]
fn refused(name: &str, file: &[u8], needles: &[&str]) -> String {
    if let Some(dir) = std::env::var_os("BREDON_HOSTILE_DIR") {
        std::fs::write(Path::new(&dir).join(format!("{name}.bredon")), file).unwrap();
    }
    let t = Instant::now();
    let r = load_exported_bytes(file, &format!("{name}.bredon"));
    let took = t.elapsed();
    let e = match r {
        Ok(_) => panic!("{name}: loaded"),
        Err(e) => bredon_storage::error_chain(&e),
    };
    assert!(e.len() < MAX_LEN, "{name}: a message of {} bytes: {}", e.len(), &e[..e.len().min(2000)]);
    for n in needles {
        assert!(e.contains(n), "{name}: {e:?} does not name {n:?}");
    }
    assert!(took < Duration::from_secs(1), "{name}: {took:?}");
    e
}

#[test]
fn the_shipped_model_loads_as_bytes() {
    let (meta, weights) = shipped();
    let (_, m, _) = load_exported_bytes(&bredon(&meta, &weights), "copy.bredon").unwrap();
    assert_eq!((m.size, m.net.blocks, m.net.channels), (4, 4, 48));
}

/// The smallest network within the limits (3x3, one block, one channel, widths of one)
/// exports and loads: the lower bounds refuse nothing real. (Written to
/// `BREDON_HOSTILE_DIR` as `tiny-valid.bredon`, the `model_file` fuzz target's seed.)
#[test]
fn the_smallest_network_within_the_limits_loads() {
    use bredon_netform::NetConfig;
    use bredon_netform::meta::ModelMeta;
    use bredon_nn::{TakNet, export_model};
    let cfg = NetConfig { size: 3, blocks: 1, channels: 1, value_hidden: 1, policy_filters: 1, ..NetConfig::default() };
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("tiny.bredon");
    export_model(&TakNet::new(&cfg, &bredon_nn::device::cpu()), &ModelMeta::new(&cfg, 0, 0, 0), &file).unwrap();
    let bytes = std::fs::read(&file).unwrap();
    let (_, meta, _) = load_exported_bytes(&bytes, "tiny.bredon").unwrap();
    assert_eq!(meta.net, cfg);
    if let Some(d) = std::env::var_os("BREDON_HOSTILE_DIR") {
        std::fs::write(Path::new(&d).join("tiny-valid.bredon"), &bytes).unwrap();
    }
}

#[test]
fn hostile_metadata_is_refused_naming_the_field() {
    let e = refused(
        "channels-200000",
        &edited(|m| m["net"]["channels"] = json!(200000)),
        &["`net.channels`", "200000", "1024"],
    );
    assert!(e.contains("channels-200000.bredon"), "{e}");
    refused("blocks-100000", &edited(|m| m["net"]["blocks"] = json!(100000)), &["`net.blocks`", "100000", "64"]);
    refused(
        "size-99",
        &edited(|m| {
            m["size"] = json!(99);
            m["net"]["size"] = json!(99);
        }),
        &["`size`", "99", "3 to 8"],
    );
    refused("net-size-5", &edited(|m| m["net"]["size"] = json!(5)), &["`net.size`", "5", "expected 4"]);
    refused("policy-size-1009", &edited(|m| m["policy_size"] = json!(1009)), &["`policy_size`", "1009", "1008"]);
    refused("channels-negative", &edited(|m| m["net"]["channels"] = json!(-1)), &["`net.channels`", "-1"]);
    refused("channels-fraction", &edited(|m| m["net"]["channels"] = json!(48.5)), &["`net.channels`", "48.5"]);
    refused("value-hidden-2pow64", &edited(|m| m["net"]["value_hidden"] = json!(u64::MAX)), &["`net.value_hidden`"]);
    refused(
        "step-huge",
        &assemble(
            String::from_utf8(serde_json::to_vec(&shipped().0).unwrap())
                .unwrap()
                .replace("\"step\":54596", "\"step\":1e300")
                .as_bytes(),
            &shipped().1,
        ),
        &["`step`"],
    );
    refused(
        "policy-filters-0",
        &edited(|m| m["net"]["policy_filters"] = json!(0)),
        &["`net.policy_filters`", "1 to 256"],
    );
    refused("half-komi-1000", &edited(|m| m["half_komi"] = json!(1000)), &["`half_komi`"]);
    refused(
        "input-version-7",
        &edited(|m| {
            m["input_version"] = json!(7);
            m["net"]["input_version"] = json!(7);
        }),
        &["input format version 7"],
    );
    refused("input-versions-differ", &edited(|m| m["net"]["input_version"] = json!(1)), &["`net.input_version`"]);
    // Every field within its own limit, the whole too large: 8x8, b64c1024.
    refused(
        "too-many-parameters",
        &edited(|m| {
            m["size"] = json!(8);
            m["net"]["size"] = json!(8);
            m["policy_size"] = json!(65472);
            m["net"]["blocks"] = json!(64);
            m["net"]["channels"] = json!(1024);
        }),
        &["parameters", "limit"],
    );
    // An unknown field with a long name: serde's message quoting it is cut.
    let long = "x".repeat(10_000);
    refused(
        "unknown-field-10k",
        &edited(|m| m["net"][long.as_str()] = json!(1)),
        &["unknown field", "more characters"],
    );
    let long = "x".repeat(1_000_000);
    refused(
        "unknown-field-1mb",
        &edited(|m| m["net"][long.as_str()] = json!(1)),
        &["metadata of 1000216 bytes", "limit of 65536"],
    );
    refused("not-an-object", &edited(|m| *m = json!([1, 2, 3])), &["bad metadata"]);
    // A metadata length field far beyond the file, and one beyond the limit.
    let mut b = edited(|_| {});
    b[8..12].copy_from_slice(&u32::MAX.to_le_bytes());
    b.truncate(b.len() - 4);
    append_crc(&mut b);
    refused("metadata-length-4g", &b, &["metadata of 4294967295 bytes", "limit"]);
}

#[test]
fn hostile_weights_are_refused_before_the_network_is_built() {
    // Metadata within the limits that does not describe the stored weights.
    refused(
        "channels-64",
        &edited(|m| m["net"]["channels"] = json!(64)),
        &["b4c64", "`stem.weight` has shape", "and "],
    );
    refused("blocks-5", &edited(|m| m["net"]["blocks"] = json!(5)), &["`blocks.4.conv1.weight` is missing"]);
    refused("blocks-64", &edited(|m| m["net"]["blocks"] = json!(64)), &["problems", "is missing", "more"]);
    refused("no-aux", &edited(|m| m["net"]["aux"] = json!(false)), &["is not a tensor of this network"]);
    refused("conv-head", &edited(|m| m["net"]["policy_head"] = json!("conv")), &["`policy_out.weight` is missing"]);
    // Truncated weights (the checksum recomputed over what is left).
    let (meta, w) = shipped();
    refused("weights-truncated", &bredon(&meta, &w[..w.len() / 2]), &["bad weights", "truncated"]);
    refused("weights-empty", &bredon(&meta, &[]), &["bad weights"]);
    // One tensor's shape swapped (same bytes, transposed dimensions).
    refused(
        "shape-swapped",
        &reweighted(|ts| {
            let i = ts.iter().position(|t| t.name == "value_fc1.weight").unwrap();
            let t = ts.remove(i);
            let (name, dtype, shape, id, bytes) = t.into_parts().unwrap();
            let swapped = vec![shape[1], shape[0]];
            ts.push(Tensor::new(name, dtype, swapped, id, bytes));
        }),
        &["`value_fc1.weight` has shape [64, 32], expected [32, 64]"],
    );
    // A tensor stored as f64 with the right shape.
    refused(
        "dtype-f64",
        &reweighted(|ts| {
            let i = ts.iter().position(|t| t.name == "stem_bn.gamma").unwrap();
            let (name, _, shape, id, bytes) = ts.remove(i).into_parts().unwrap();
            let wide: Vec<u8> = bytes
                .chunks(4)
                .flat_map(|c| (f32::from_le_bytes(c.try_into().unwrap()) as f64).to_le_bytes())
                .collect();
            ts.push(Tensor::new(name, burn_pack::DType::F64, shape, id, burn::tensor::Bytes::from_bytes_vec(wide)));
        }),
        &["`stem_bn.gamma` holds F64, expected F32"],
    );
    // Thousands of extra tensors with long names: the message lists three and a count.
    refused(
        "extra-tensors",
        &reweighted(|ts| {
            for i in 0..5000 {
                let name = format!("{}{i}", "y".repeat(500));
                ts.push(Tensor::new(
                    name,
                    burn_pack::DType::F32,
                    vec![1],
                    None,
                    burn::tensor::Bytes::from_bytes_vec(vec![0; 4]),
                ));
            }
        }),
        &["5000 problems", "and 4997 more"],
    );
}

#[test]
fn a_hostile_checkpoint_directory_is_refused_naming_the_field() {
    let (mut meta, weights) = shipped();
    let dir = tempfile::tempdir().unwrap();
    let write = |meta: &Value| {
        std::fs::write(dir.path().join("model.bpk"), &weights).unwrap();
        let crc: Value = crc_hex(crc32c(&weights)).into();
        std::fs::write(dir.path().join("model.json"), to_checked_json(meta, &[(WEIGHTS_CRC_FIELD, crc)]).unwrap())
            .unwrap();
    };
    write(&meta);
    assert_eq!(load_model(dir.path()).unwrap().1.net.blocks, 4);
    for (field, value, needle) in [
        ("channels", json!(200000), "`net.channels` is 200000"),
        ("blocks", json!(100000), "`net.blocks` is 100000"),
        ("blocks", json!(-3), "`net.blocks` is -3"),
        ("channels", json!(64), "`stem.weight` has shape"),
        ("x".repeat(100_000).leak(), json!(1), "more than the limit of 65536 bytes"),
    ] {
        meta["net"][field] = value;
        write(&meta);
        let t = Instant::now();
        let e = bredon_storage::error_chain(&load_model(dir.path()).err().unwrap());
        assert!(e.contains(needle) && e.len() < MAX_LEN && t.elapsed() < Duration::from_secs(1), "{e}");
        meta = shipped().0;
    }
}

/// Global pooling: metadata that claims it for weights without it, more pooled channels
/// than channels, and a model with it whose gpool tensor has the wrong shape.
#[test]
fn a_model_claiming_global_pooling_without_its_tensors_is_refused() {
    use bredon_netform::NetConfig;
    use bredon_netform::meta::ModelMeta;
    use bredon_nn::{TakNet, export_model};
    refused(
        "gpool-claimed",
        &edited(|m| m["net"]["global_pool"] = json!(true)),
        &["-g16", "`blocks.0.gpool_fc.weight` is missing", "and 5 more"],
    );
    refused(
        "gpool-channels-100",
        &edited(|m| {
            m["net"]["global_pool"] = json!(true);
            m["net"]["gpool_channels"] = json!(100);
        }),
        &["`net.gpool_channels` is 100", "1 to 48"],
    );
    refused("gpool-channels-negative", &edited(|m| m["net"]["gpool_channels"] = json!(-2)), &["`net.gpool_channels`"]);
    refused("value-head-pool", &edited(|m| m["net"]["value_head"] = json!("pool")), &["`value_fc1.weight` has shape"]);
    refused("value-head-unknown", &edited(|m| m["net"]["value_head"] = json!("sideways")), &["unknown variant"]);

    // A real model with global pooling, one of its gpool tensors reshaped.
    let cfg = NetConfig {
        size: 4,
        blocks: 2,
        channels: 8,
        value_hidden: 4,
        policy_filters: 2,
        global_pool: true,
        gpool_channels: 4,
        ..NetConfig::default()
    };
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("gpool.bredon");
    export_model(&TakNet::new(&cfg, &bredon_nn::device::cpu()), &ModelMeta::new(&cfg, 0, 0, 0), &file).unwrap();
    let b = std::fs::read(&file).unwrap();
    let (_, m, _) = load_exported_bytes(&b, "gpool.bredon").unwrap();
    assert_eq!(m.net, cfg);
    let len = u32::from_le_bytes(b[8..12].try_into().unwrap()) as usize;
    let meta: Value = serde_json::from_slice(&b[12..12 + len]).unwrap();
    let weights = b[12 + len..b.len() - 4].to_vec();
    let mut tensors = Reader::from_bytes(burn::tensor::Bytes::from_bytes_vec(weights)).unwrap().into_tensors().unwrap();
    let i = tensors.iter().position(|t| t.name == "blocks.1.gpool_fc.weight").unwrap();
    let (name, dtype, shape, id, bytes) = tensors.remove(i).into_parts().unwrap();
    assert_eq!((shape.len(), shape[0], shape[1]), (2, 12, 8));
    tensors.push(Tensor::new(name, dtype, vec![24, 4], id, bytes));
    let bytes = Writer::new(tensors).into_bytes().unwrap();
    refused(
        "gpool-wrong-shape",
        &bredon(&meta, &bytes),
        &["b2c8-g4", "`blocks.1.gpool_fc.weight` has shape [24, 4], expected [12, 8]"],
    );
}
