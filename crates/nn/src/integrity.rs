//! Integrity of the files that matter: CRC-32C checksums (the `crc32c` crate) and finite
//! weights.
//!
//! - Binary formats Bredon owns (`.bredon` exports, `.game` records) end with a 4-byte
//!   little-endian CRC-32C of everything before it ([`append_crc`], [`split_crc`]).
//! - JSON files (`model.json`, `state.json`, `ratings.json`) carry a `"crc32c"` field: the
//!   checksum of the file's *canonical* form, the compact JSON of the same object without
//!   that field and with sorted keys ([`to_checked_json`], [`from_checked_json`]). A flipped
//!   bit in a value is caught; a change of whitespace is harmless and is not.
//! - Files written by burn (`model.bpk`, `optimizer.bpk`) are checksummed by the JSON file
//!   written after them (`model.json` holds the weights' checksum, `state.json` the
//!   optimiser's).
//!
//! A file without a checksum (written before checksums existed) still loads, with
//! [`Verified::NoChecksum`] so callers can warn; a checksum that does not match is always
//! an error naming the file.

use anyhow::{Result, bail};
use burn::module::{Module, ModuleVisitor, Param};
use burn::prelude::*;
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::path::Path;

use crate::model::TakNet;

/// Name of the checksum field in checked JSON files.
pub const CRC_FIELD: &str = "crc32c";

/// CRC-32C (Castagnoli) of `bytes`.
pub fn crc32c(bytes: &[u8]) -> u32 {
    crc32c::crc32c(bytes)
}

/// The checksum of a file's contents as stored in JSON: 8 lower-case hex digits.
pub fn crc_hex(crc: u32) -> String {
    format!("{crc:08x}")
}

/// Whether a file's checksum was checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verified {
    /// The checksum matched.
    Ok,
    /// The file has no checksum (an older format): it was read unverified.
    NoChecksum,
}

/// Appends the CRC-32C of `bytes` to it.
pub fn append_crc(bytes: &mut Vec<u8>) {
    let crc = crc32c(bytes);
    bytes.extend_from_slice(&crc.to_le_bytes());
}

/// Checks and strips the 4-byte CRC-32C trailer added by [`append_crc`]; the error says
/// what is wrong (the caller adds the file name).
pub fn split_crc(bytes: &[u8]) -> Result<&[u8]> {
    if bytes.len() < 4 {
        bail!("too short to hold a checksum ({} bytes)", bytes.len());
    }
    let (body, tail) = bytes.split_at(bytes.len() - 4);
    let stored = u32::from_le_bytes(tail.try_into().expect("4 bytes"));
    let actual = crc32c(body);
    // Fuzz builds skip the comparison so that mutated inputs reach the parsers.
    if stored != actual && !cfg!(fuzzing) {
        bail!(
            "checksum mismatch (stored {}, contents {}): the file is damaged or truncated",
            crc_hex(stored),
            crc_hex(actual)
        );
    }
    Ok(body)
}

/// Canonical bytes of a JSON value: compact, keys sorted (serde_json's map is ordered).
fn canonical(value: &serde_json::Value) -> Vec<u8> {
    serde_json::to_vec(value).expect("a JSON value serialises")
}

/// `value` as pretty JSON with a `"crc32c"` field over its canonical form. `extra` fields
/// (e.g. checksums of sibling files) are added to the object before the checksum, so the
/// checksum covers them too.
pub fn to_checked_json<T: Serialize>(value: &T, extra: &[(&str, serde_json::Value)]) -> Result<Vec<u8>> {
    let mut v = serde_json::to_value(value)?;
    let Some(obj) = v.as_object_mut() else { bail!("checked JSON must be an object") };
    for (k, x) in extra {
        obj.insert((*k).to_string(), x.clone());
    }
    obj.remove(CRC_FIELD);
    let crc = crc32c(&canonical(&v));
    v.as_object_mut().expect("object").insert(CRC_FIELD.into(), crc_hex(crc).into());
    let mut out = serde_json::to_vec_pretty(&v)?;
    out.push(b'\n');
    Ok(out)
}

/// Parses a JSON file written by [`to_checked_json`] (or an older one without a
/// checksum), verifying the checksum. Returns the value, the whole JSON object (to read
/// extra fields) and whether it was verified. `path` names the file in errors.
pub fn from_checked_json<T: DeserializeOwned>(bytes: &[u8], path: &Path) -> Result<(T, serde_json::Value, Verified)> {
    let mut v: serde_json::Value = serde_json::from_slice(bytes)
        .map_err(|e| anyhow::anyhow!("{} is not valid JSON ({e}): the file is damaged", path.display()))?;
    let Some(obj) = v.as_object_mut() else { bail!("{} is not a JSON object", path.display()) };
    let verified = match obj.remove(CRC_FIELD) {
        None => Verified::NoChecksum,
        Some(stored) => {
            let stored = stored.as_str().and_then(|s| u32::from_str_radix(s, 16).ok());
            let actual = crc32c(&canonical(&v));
            match stored {
                Some(s) if s == actual => Verified::Ok,
                Some(s) => bail!(
                    "{}: checksum mismatch (stored {}, contents {}): the file is damaged",
                    path.display(),
                    crc_hex(s),
                    crc_hex(actual)
                ),
                None => bail!("{}: the {CRC_FIELD} field is not 8 hex digits: the file is damaged", path.display()),
            }
        }
    };
    let value = serde_json::from_value(v.clone()).map_err(|e| {
        anyhow::anyhow!("{}: {}", path.display(), crate::limits::bounded(&e.to_string(), crate::limits::MAX_MESSAGE))
    })?;
    Ok((value, v, verified))
}

/// Reads the hex checksum stored under `key` of a checked JSON object, if present.
pub fn crc_field(obj: &serde_json::Value, key: &str) -> Option<u32> {
    obj.get(key).and_then(|v| v.as_str()).and_then(|s| u32::from_str_radix(s, 16).ok())
}

/// Checks the CRC-32C of `bytes` read from `path` against `expected` (if any).
pub fn check_crc(bytes: &[u8], expected: Option<u32>, path: &Path) -> Result<Verified> {
    let Some(expected) = expected else { return Ok(Verified::NoChecksum) };
    let actual = crc32c(bytes);
    if actual != expected {
        bail!(
            "{}: checksum mismatch (recorded {}, contents {}): the file is damaged or was replaced",
            path.display(),
            crc_hex(expected),
            crc_hex(actual)
        );
    }
    Ok(Verified::Ok)
}

/// Finds the first parameter of a module holding a NaN or an infinity.
struct FiniteCheck {
    path: Vec<String>,
    bad: Option<(String, usize, usize)>,
}

impl ModuleVisitor for FiniteCheck {
    fn enter_module(&mut self, name: &str, _container_type: &str) {
        self.path.push(name.to_string());
    }

    fn exit_module(&mut self, _name: &str, _container_type: &str) {
        self.path.pop();
    }

    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        if self.bad.is_some() {
            return;
        }
        let data = param.val().into_data();
        let Ok(values) = data.try_to_vec::<f32>() else { return };
        let bad = values.iter().filter(|x| !x.is_finite()).count();
        if bad > 0 {
            self.bad = Some((self.path.join("."), bad, values.len()));
        }
    }
}

/// Errors if any weight of `model` (parameters and batch-norm statistics) is NaN or
/// infinite, naming the first such tensor.
pub fn check_finite(model: &TakNet) -> Result<()> {
    let mut v = FiniteCheck { path: Vec::new(), bad: None };
    model.visit(&mut v);
    if let Some((name, bad, total)) = v.bad {
        bail!("non-finite weights: {bad} of {total} values of `{name}` are NaN or infinite");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize, serde::Deserialize, Debug, PartialEq)]
    struct S {
        b: f64,
        a: u64,
        name: String,
    }

    #[test]
    fn checked_json_round_trips_and_catches_changes() {
        let s = S { b: 0.1 + 0.2, a: u64::MAX, name: "gen-0003".into() };
        let bytes = to_checked_json(&s, &[("extra", "x".into())]).unwrap();
        let p = Path::new("f.json");
        let (back, obj, ver) = from_checked_json::<S>(&bytes, p).unwrap();
        assert_eq!((back, ver), (s, Verified::Ok));
        assert_eq!(obj["extra"], "x");
        // Reformatting is harmless.
        let v: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(from_checked_json::<S>(&serde_json::to_vec(&v).unwrap(), p).unwrap().2, Verified::Ok);
        // A changed value is caught and the file is named.
        let text = String::from_utf8(bytes.clone()).unwrap().replace("gen-0003", "gen-0004");
        let err = from_checked_json::<S>(text.as_bytes(), p).unwrap_err().to_string();
        assert!(err.contains("f.json") && err.contains("checksum mismatch"), "{err}");
        // No checksum: read, reported unverified.
        let plain = serde_json::to_vec(&S { b: 1.0, a: 2, name: "x".into() }).unwrap();
        assert_eq!(from_checked_json::<S>(&plain, p).unwrap().2, Verified::NoChecksum);
        assert!(from_checked_json::<S>(b"{\"b\":", p).is_err());
    }

    /// The canonical form re-reads floats exactly (serde_json's `float_roundtrip`):
    /// without it, about one float in a few thousand read back one ulp off and an intact
    /// `state.json` failed its checksum.
    #[test]
    fn checked_json_is_stable_for_any_float() {
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let f = f64::from_bits(x);
            if !f.is_finite() {
                continue;
            }
            let s = S { b: f, a: x, name: String::new() };
            let bytes = to_checked_json(&s, &[]).unwrap();
            let (back, _, v) = from_checked_json::<S>(&bytes, Path::new("s.json")).unwrap();
            assert_eq!((back.b.to_bits(), v), (f.to_bits(), Verified::Ok));
            let e = (x % 1_000_000) as f64 * 1e-3 + 0.1; // elapsed-seconds-like values
            let s = S { b: e, a: 0, name: String::new() };
            assert!(from_checked_json::<S>(&to_checked_json(&s, &[]).unwrap(), Path::new("s.json")).is_ok(), "{e}");
        }
    }

    #[test]
    fn crc_trailer_catches_flips_and_truncation() {
        let mut b = b"hello world".to_vec();
        append_crc(&mut b);
        assert_eq!(split_crc(&b).unwrap(), b"hello world");
        for i in 0..b.len() {
            let mut c = b.clone();
            c[i] ^= 0x10;
            assert!(split_crc(&c).is_err(), "flip at {i} not caught");
        }
        assert!(split_crc(&b[..b.len() - 1]).is_err());
        assert!(split_crc(&b[..2]).is_err());
    }
}
