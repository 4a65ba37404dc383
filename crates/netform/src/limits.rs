//! Bounds on what a model file may describe, checked before anything is allocated.
//!
//! A checksum proves a file intact, not sane: anyone can write a `.bredon` export or a
//! checkpoint's `model.json` with a valid CRC. The loaders therefore check, in this
//! order and before building a network:
//!
//! 1. the metadata's fields ([`check_meta_json`] on the raw JSON, so a negative or
//!    fractional number is refused naming its field, then [`check_meta`] on the parsed
//!    metadata): board size 3 to 8, every width within [`Limits`], the input version
//!    known, the sizes consistent, and the network's parameter count bounded;
//! 2. the weights' tensors as stored in the burnpack (names, shapes and dtypes, read from
//!    its header without touching the data) against those the architecture expects
//!    (`bredon_nn::weights::check_weights`, which needs burn's file format).
//!
//! Errors name the field and the limit, and every message is bounded
//! ([`bounded`], [`MAX_MESSAGE`]): a mismatch lists the first few tensors and a count.

use thiserror::Error;

use crate::config::{NetConfig, PolicyHead, ValueHead};
use crate::encoding::{LATEST_INPUT_VERSION, planes};
use crate::policy::policy_size;

/// What a model's architecture may be: generous bounds that cover every real network
/// (the largest trained so far is b6c64 with 32 policy filters).
pub struct Limits;

impl Limits {
    /// Board sizes.
    pub const SIZE: (u64, u64) = (3, 8);
    /// Residual blocks.
    pub const BLOCKS: (u64, u64) = (1, 64);
    /// Filters per convolution.
    pub const CHANNELS: (u64, u64) = (1, 1024);
    /// Width of the value head's hidden layer.
    pub const VALUE_HIDDEN: (u64, u64) = (1, 4096);
    /// Filters of the policy head.
    pub const POLICY_FILTERS: (u64, u64) = (1, 256);
    /// Filters of the value head.
    pub const VALUE_FILTERS: (u64, u64) = (1, 256);
    /// Parameters of the whole network (2^28 floats: 1 GiB of weights).
    pub const PARAMETERS: u64 = 1 << 28;
    /// Bytes of a model's JSON metadata (a `.bredon` export's or a checkpoint's
    /// `model.json`; a real one is about 250 or 400).
    pub const METADATA_BYTES: usize = 64 * 1024;
}

/// The longest error message a loader gives for one problem (characters).
pub const MAX_MESSAGE: usize = 300;

/// Why a model file's metadata or weights were refused.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ModelFileError {
    /// A field holds something other than a whole number, or one out of its type's range.
    #[error("field `{field}` is {found}, expected a whole number from {min} to {max}")]
    NotANumber {
        /// The field (`net.channels`).
        field: &'static str,
        /// What it holds (bounded).
        found: String,
        /// Smallest accepted.
        min: i64,
        /// Largest accepted.
        max: u64,
    },
    /// A number outside what any real network uses.
    #[error("field `{field}` is {value}, outside the supported range {min} to {max}")]
    OutOfRange {
        /// The field.
        field: &'static str,
        /// Its value.
        value: u64,
        /// Smallest accepted.
        min: u64,
        /// Largest accepted.
        max: u64,
    },
    /// An input plane layout this build does not know.
    #[error("model uses input format version {0}, this build reads versions 1 and {LATEST_INPUT_VERSION}")]
    UnknownInputVersion(u64),
    /// Two fields that must agree do not.
    #[error("model metadata is inconsistent: field `{field}` is {value}, expected {expected} ({why})")]
    Inconsistent {
        /// The field.
        field: &'static str,
        /// Its value.
        value: u64,
        /// What it must be.
        expected: u64,
        /// The rule.
        why: &'static str,
    },
    /// The architecture is within every per-field limit but too large as a whole.
    #[error("the network {arch} would have {params} parameters, more than the limit of {max}")]
    TooManyParameters {
        /// Its short name.
        arch: String,
        /// Its parameter count.
        params: u64,
        /// [`Limits::PARAMETERS`].
        max: u64,
    },
    /// The metadata of an export is longer than [`Limits::METADATA_BYTES`].
    #[error("metadata of {len} bytes, more than the limit of {max} bytes")]
    MetadataTooLong {
        /// Its length.
        len: u64,
        /// The limit.
        max: usize,
    },
    /// The curriculum stage a model names is not one ([`crate::meta::StageProgress`]).
    #[error("field `stage`: {0}")]
    BadStage(String),
    /// The metadata does not parse as a model's (the parser's reason, bounded).
    #[error("bad metadata: {0}")]
    BadMetadata(String),
    /// The weights are not a readable burnpack (burn's reason, bounded).
    #[error("bad weights: {0}")]
    BadWeights(String),
    /// The stored tensors are not those of the architecture: the first few differences
    /// and a count.
    #[error("weights do not fit the architecture {arch}: {summary}")]
    WeightsMismatch {
        /// The architecture's short name.
        arch: String,
        /// What differs (bounded).
        summary: String,
    },
}

/// An error naming the versions this build reads unless `input_version` is one of them.
pub fn check_input_version(input_version: u32) -> Result<(), ModelFileError> {
    if planes(input_version) == 0 {
        return Err(ModelFileError::UnknownInputVersion(input_version.into()));
    }
    Ok(())
}

/// `text` cut to at most `max` characters (on a character boundary), saying how much was
/// left out.
pub fn bounded(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let cut: String = text.chars().take(max).collect();
    let left = text.chars().count() - max;
    format!("{cut}… ({left} more characters)")
}

/// Numeric fields of a model's metadata, by JSON path: (top-level key, key within `net`
/// or none, smallest, largest accepted by its type).
const NUMERIC_FIELDS: &[(&str, Option<&str>, &str, i64, u64)] = &[
    ("size", None, "size", 0, u32::MAX as u64),
    ("policy_size", None, "policy_size", 0, u32::MAX as u64),
    ("input_version", None, "input_version", 0, u32::MAX as u64),
    ("step", None, "step", 0, u64::MAX),
    ("generation", None, "generation", 0, u32::MAX as u64),
    ("half_komi", None, "half_komi", i8::MIN as i64, i8::MAX as u64),
    ("net", Some("size"), "net.size", 0, u32::MAX as u64),
    ("net", Some("blocks"), "net.blocks", 0, u32::MAX as u64),
    ("net", Some("channels"), "net.channels", 0, u32::MAX as u64),
    ("net", Some("value_hidden"), "net.value_hidden", 0, u32::MAX as u64),
    ("net", Some("policy_filters"), "net.policy_filters", 0, u32::MAX as u64),
    ("net", Some("input_version"), "net.input_version", 0, u32::MAX as u64),
    ("net", Some("gpool_channels"), "net.gpool_channels", 0, u32::MAX as u64),
    ("net", Some("value_filters"), "net.value_filters", 0, u32::MAX as u64),
];

/// Checks the numeric fields of a model's metadata as JSON, before it is parsed: each
/// present one must be a whole number in its type's range (the per-field limits come
/// after parsing, in [`check_meta`]). Parsing alone would refuse `-1` without naming the
/// field.
pub fn check_meta_json(value: &serde_json::Value) -> Result<(), ModelFileError> {
    for &(key, sub, field, min, max) in NUMERIC_FIELDS {
        let v = match sub {
            None => value.get(key),
            Some(sub) => value.get(key).and_then(|n| n.get(sub)),
        };
        let Some(v) = v else { continue };
        let ok = match (v.as_i64(), v.as_u64()) {
            (_, Some(u)) => u <= max,
            (Some(i), None) => i >= min,
            _ => false,
        };
        if !ok {
            let found = bounded(&v.to_string(), 40);
            return Err(ModelFileError::NotANumber { field, found, min, max });
        }
    }
    Ok(())
}

fn in_range(field: &'static str, value: usize, (min, max): (u64, u64)) -> Result<(), ModelFileError> {
    let value = value as u64;
    if value < min || value > max {
        return Err(ModelFileError::OutOfRange { field, value, min, max });
    }
    Ok(())
}

/// Checks a model's metadata against [`Limits`] and for consistency: `size` (the board)
/// and its network's, the input versions, the policy size. Nothing is allocated.
pub fn check_meta(size: usize, input_version: u32, policy: usize, net: &NetConfig) -> Result<(), ModelFileError> {
    in_range("size", size, Limits::SIZE)?;
    if net.size != size {
        let why = "the network's board size is the model's";
        return Err(ModelFileError::Inconsistent {
            field: "net.size",
            value: net.size as u64,
            expected: size as u64,
            why,
        });
    }
    if planes(input_version) == 0 {
        return Err(ModelFileError::UnknownInputVersion(input_version.into()));
    }
    if net.input_version != input_version {
        return Err(ModelFileError::Inconsistent {
            field: "net.input_version",
            value: net.input_version.into(),
            expected: input_version.into(),
            why: "the network reads the model's input version",
        });
    }
    if policy != policy_size(size) {
        return Err(ModelFileError::Inconsistent {
            field: "policy_size",
            value: policy as u64,
            expected: policy_size(size) as u64,
            why: "the number of moves of the board size",
        });
    }
    in_range("net.blocks", net.blocks, Limits::BLOCKS)?;
    in_range("net.channels", net.channels, Limits::CHANNELS)?;
    in_range("net.value_hidden", net.value_hidden, Limits::VALUE_HIDDEN)?;
    in_range("net.policy_filters", net.policy_filters, Limits::POLICY_FILTERS)?;
    in_range("net.value_filters", net.value_filters, Limits::VALUE_FILTERS)?;
    if net.global_pool {
        // Pooled channels are some of each block's channels.
        in_range("net.gpool_channels", net.gpool_channels, (1, net.channels as u64))?;
    }
    let params: u64 = expected_tensors(net).iter().map(|(_, s)| s.iter().product::<u64>()).sum();
    if params > Limits::PARAMETERS {
        return Err(ModelFileError::TooManyParameters { arch: net.name(), params, max: Limits::PARAMETERS });
    }
    Ok(())
}

/// Every tensor of the burnpack record of the network of `cfg` (whose fields must be
/// within [`Limits`], so no product overflows): its path and shape, in burn's layout
/// (convolutions `[out, in, k, k]`, linear layers `[in, out]`). A test checks this list
/// against the record of a network built by [`crate::TakNet::new`].
pub fn expected_tensors(cfg: &NetConfig) -> Vec<(String, Vec<u64>)> {
    let n = cfg.size as u64;
    let c = cfg.channels as u64;
    let pf = cfg.policy_filters as u64;
    let vh = cfg.value_hidden as u64;
    let mut out = Vec::new();
    let conv = |name: &str, i: u64, o: u64, k: u64, bias: bool, out: &mut Vec<(String, Vec<u64>)>| {
        out.push((format!("{name}.weight"), vec![o, i, k, k]));
        if bias {
            out.push((format!("{name}.bias"), vec![o]));
        }
    };
    let bn = |name: &str, c: u64, out: &mut Vec<(String, Vec<u64>)>| {
        for p in ["gamma", "beta", "running_mean", "running_var"] {
            out.push((format!("{name}.{p}"), vec![c]));
        }
    };
    let linear = |name: &str, i: u64, o: u64, out: &mut Vec<(String, Vec<u64>)>| {
        out.push((format!("{name}.weight"), vec![i, o]));
        out.push((format!("{name}.bias"), vec![o]));
    };
    conv("stem", cfg.planes() as u64, c, 3, false, &mut out);
    bn("stem_bn", c, &mut out);
    for b in 0..cfg.blocks {
        conv(&format!("blocks.{b}.conv1"), c, c, 3, false, &mut out);
        bn(&format!("blocks.{b}.bn1"), c, &mut out);
        conv(&format!("blocks.{b}.conv2"), c, c, 3, false, &mut out);
        bn(&format!("blocks.{b}.bn2"), c, &mut out);
        if cfg.global_pool {
            linear(&format!("blocks.{b}.gpool_fc"), 3 * cfg.gpool_channels as u64, c, &mut out);
        }
    }
    conv("policy_conv", c, pf, 1, false, &mut out);
    bn("policy_bn", pf, &mut out);
    let moves = policy_size(cfg.size) as u64;
    let per_square = PolicyHead::conv_outputs(cfg.size) as u64;
    let dense = cfg.policy_head == PolicyHead::Dense;
    if dense {
        linear("policy_fc", pf * n * n, moves, &mut out);
    } else {
        conv("policy_out", pf, per_square, 1, true, &mut out);
    }
    let vf = cfg.value_filters as u64;
    conv("value_conv", c, vf, 1, false, &mut out);
    bn("value_bn", vf, &mut out);
    let value_features = match cfg.value_head {
        ValueHead::Dense => vf * n * n,
        ValueHead::Pool => 3 * vf,
    };
    linear("value_fc1", value_features, vh, &mut out);
    linear("value_fc2", vh, cfg.value_outputs() as u64, &mut out);
    if cfg.aux {
        linear("margin_fc", vh, 1, &mut out);
        conv("ownership_conv", c, 1, 1, true, &mut out);
        if dense {
            linear("opponent_policy_fc", pf * n * n, moves, &mut out);
        } else {
            conv("opponent_policy_out", pf, per_square, 1, true, &mut out);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounded_cuts_long_text_on_a_character_boundary() {
        assert_eq!(bounded("short", 10), "short");
        let long = "é".repeat(1000);
        let b = bounded(&long, 10);
        assert!(b.starts_with(&"é".repeat(10)) && b.ends_with("(990 more characters)"), "{b}");
    }

    #[test]
    fn numeric_fields_are_named_when_not_whole_numbers() {
        let v: serde_json::Value = serde_json::json!({"size": 4, "net": {"channels": -5}});
        let e = check_meta_json(&v).unwrap_err().to_string();
        assert!(e.contains("`net.channels`") && e.contains("-5"), "{e}");
        let v: serde_json::Value = serde_json::json!({"half_komi": 300});
        assert!(check_meta_json(&v).unwrap_err().to_string().contains("`half_komi`"));
        let v: serde_json::Value = serde_json::json!({"size": 4.5});
        assert!(check_meta_json(&v).unwrap_err().to_string().contains("`size`"));
        let v: serde_json::Value = serde_json::json!({"step": "x".repeat(10_000)});
        assert!(check_meta_json(&v).unwrap_err().to_string().len() < 200);
        let v: serde_json::Value = serde_json::json!({"size": 4, "half_komi": -4, "net": {"blocks": 6}});
        assert_eq!(check_meta_json(&v), Ok(()));
    }

    #[test]
    fn gpool_channels_must_fit_the_channels() {
        let cfg = NetConfig { size: 5, channels: 8, global_pool: true, gpool_channels: 9, ..NetConfig::default() };
        let e = check_meta(5, 1, policy_size(5), &cfg).unwrap_err().to_string();
        assert!(e.contains("`net.gpool_channels` is 9") && e.contains("1 to 8"), "{e}");
        // Without global pooling the field is not used.
        check_meta(5, 1, policy_size(5), &NetConfig { global_pool: false, ..cfg.clone() }).unwrap();
        check_meta(5, 1, policy_size(5), &NetConfig { gpool_channels: 8, ..cfg }).unwrap();
    }
}
