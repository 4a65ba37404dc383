//! The stored weights checked against the architecture before any of them is loaded:
//! the second of the loaders' checks ([`bredon_netform::limits`] holds the first, on the
//! metadata, and the tensors an architecture has).

use burn::tensor::Bytes;
use burn_pack::{DType, Reader};

use bredon_netform::config::NetConfig;
use bredon_netform::limits::{MAX_MESSAGE, ModelFileError, bounded, expected_tensors};

/// How many differences a mismatch message lists before giving only their count.
const LISTED: usize = 3;

/// Checks the tensors stored in burnpack `bytes` (names, shapes, dtypes, and that the
/// bytes hold their data, all from the burnpack's header) against those of the
/// architecture `cfg` (already checked by [`check_meta`]), before any of it is loaded.
pub fn check_weights(cfg: &NetConfig, bytes: Bytes) -> Result<(), ModelFileError> {
    let reader =
        Reader::from_bytes(bytes).map_err(|e| ModelFileError::BadWeights(bounded(&e.to_string(), MAX_MESSAGE)))?;
    let stored = reader.into_tensors().map_err(|e| ModelFileError::BadWeights(bounded(&e.to_string(), MAX_MESSAGE)))?;
    let mut stored: std::collections::HashMap<String, (DType, Vec<u64>)> =
        stored.into_iter().map(|t| (t.name, (t.dtype, t.shape.iter().map(|&d| d as u64).collect()))).collect();
    let name = |s: &str| bounded(s, 40);
    let mut problems = Vec::new();
    let mut count = 0usize;
    let mut note = |p: String| {
        count += 1;
        if problems.len() < LISTED {
            problems.push(p);
        }
    };
    let expected = expected_tensors(cfg);
    for (path, shape) in &expected {
        match stored.remove(path) {
            None => note(format!("`{path}` is missing")),
            Some((_, s)) if s != *shape => {
                note(format!("`{path}` has shape {}, expected {shape:?}", bounded(&format!("{s:?}"), 60)))
            }
            Some((dtype, _)) if dtype != DType::F32 => note(format!("`{path}` holds {dtype:?}, expected F32")),
            Some(_) => {}
        }
    }
    let mut unexpected: Vec<String> = stored.into_keys().collect();
    unexpected.sort();
    for u in unexpected {
        note(format!("`{}` is not a tensor of this network", name(&u)));
    }
    if count == 0 {
        return Ok(());
    }
    let mut summary =
        format!("{count} problem{} in {} expected tensors: ", if count == 1 { "" } else { "s" }, expected.len());
    summary.push_str(&problems.join("; "));
    if count > problems.len() {
        summary.push_str(&format!("; and {} more", count - problems.len()));
    }
    Err(ModelFileError::WeightsMismatch { arch: cfg.name(), summary })
}

#[cfg(test)]
mod tests {
    use super::*;
    use bredon_netform::config::{PolicyHead, ValueHead};
    use bredon_netform::limits::check_meta;
    use bredon_netform::policy::policy_size;

    /// The tensors [`expected_tensors`] lists are exactly those of the record of a network
    /// built by `TakNet::new`, for every kind of head.
    #[test]
    fn expected_tensors_are_those_of_a_built_network() {
        use burn::module::Module;
        for (size, head, aux, wdl, input_version, global_pool, value_head) in [
            (3, PolicyHead::Dense, false, false, 1, false, ValueHead::Dense),
            (4, PolicyHead::Dense, true, true, 2, true, ValueHead::Dense),
            (5, PolicyHead::Conv, true, false, 2, true, ValueHead::Pool),
            (6, PolicyHead::Conv, false, true, 1, false, ValueHead::Pool),
        ] {
            let cfg = NetConfig {
                size,
                blocks: 2,
                channels: 6,
                value_hidden: 5,
                policy_filters: 3,
                policy_head: head,
                aux,
                wdl,
                input_version,
                global_pool,
                gpool_channels: 4,
                value_head,
                value_filters: if global_pool { 5 } else { 2 },
            };
            check_meta(size, input_version, policy_size(size), &cfg).unwrap();
            let net = crate::TakNet::new(&cfg, &crate::device::cpu());
            let bytes = net.into_record().into_bytes().unwrap();
            assert_eq!(check_weights(&cfg, bytes.clone()), Ok(()), "{cfg:?}");
            // Another architecture's tensors are refused, in a bounded message.
            let other = NetConfig { blocks: 3, channels: 7, ..cfg.clone() };
            let e = check_weights(&other, bytes.clone()).unwrap_err().to_string();
            assert!(e.contains("problems in") && e.contains("and ") && e.len() < 600, "{e}");
            // Global pooling and the value head's kind are checked too.
            let other = NetConfig { global_pool: !global_pool, ..cfg.clone() };
            let e = check_weights(&other, bytes.clone()).unwrap_err().to_string();
            assert!(e.contains("gpool_fc"), "{e}");
            let flipped = if value_head == ValueHead::Dense { ValueHead::Pool } else { ValueHead::Dense };
            let other = NetConfig { value_head: flipped, ..cfg.clone() };
            let e = check_weights(&other, bytes).unwrap_err().to_string();
            assert!(e.contains("`value_fc1.weight` has shape"), "{e}");
        }
    }
}
