//! The `.bredon` model loader: `load_exported_bytes` (magic, checksum — skipped in fuzz
//! builds, `cfg(fuzzing)` — metadata length, fields and limits, the burnpack's stored
//! tensors against the architecture, then the network) never panics, refuses what it
//! refuses with a short message, and what it accepts is a network within the limits.
#![no_main]

use bredon_nn::checkpoint::load_exported_bytes;
use bredon_netform::limits::{Limits, expected_tensors};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    match load_exported_bytes(data, "fuzz.bredon") {
        Ok((model, meta, _)) => {
            assert!(meta.check().is_ok(), "{meta:?}");
            assert_eq!(model.input_version(), meta.input_version);
            assert_eq!(model.wdl(), meta.net.wdl);
            assert_eq!(model.aux(), meta.net.aux);
            let params: u64 = expected_tensors(&meta.net).iter().map(|(_, s)| s.iter().product::<u64>()).sum();
            assert!(params <= Limits::PARAMETERS);
        }
        Err(e) => {
            let m = format!("{e:#}");
            assert!(!m.is_empty() && m.len() < 1500, "{} bytes: {}", m.len(), &m[..m.len().min(3000)]);
        }
    }
});
