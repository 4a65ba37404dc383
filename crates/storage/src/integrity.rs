//! Checksums of the files that matter: CRC-32C (the `crc32c` crate). (The check that a
//! network's weights are finite belongs to the network and lives in `bredon-nn`.)
//!
//! - Binary formats Bredon owns (`.bredon` exports, `.game` records, game bundles) end
//!   with a 4-byte little-endian CRC-32C of everything before it ([`append_crc`],
//!   [`split_crc`]).
//! - JSON files (`model.json`, `state.json`, `ratings.json`) carry a `"crc32c"` field: the
//!   checksum of the file's *canonical* form, the compact JSON of the same object without
//!   that field and with sorted keys ([`to_checked_json`], [`from_checked_json`]). A flipped
//!   bit in a value is caught; a change of whitespace is harmless and is not.
//! - Files written by other libraries (burn's `model.bpk`, `optimizer.bpk`) are
//!   checksummed by the JSON file written after them ([`check_crc`]).
//!
//! A file without a checksum (written before checksums existed) still loads, with
//! [`Verified::NoChecksum`] so callers can warn; a checksum that does not match is always
//! an error naming the file.

pub use crate::error::IntegrityError;
use crate::error::{Result, StorageError};
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::path::Path;

/// Name of the checksum field in checked JSON files.
pub const CRC_FIELD: &str = "crc32c";

/// Longest message from a JSON decoder quoted in an error (hostile files can make them
/// long).
const MAX_MESSAGE: usize = 300;

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
pub fn split_crc(bytes: &[u8]) -> std::result::Result<&[u8], IntegrityError> {
    if bytes.len() < 4 {
        return Err(IntegrityError::TooShort { len: bytes.len() });
    }
    let (body, tail) = bytes.split_at(bytes.len() - 4);
    let stored = u32::from_le_bytes([tail[0], tail[1], tail[2], tail[3]]);
    let actual = crc32c(body);
    // Fuzz builds skip the comparison so that mutated inputs reach the parsers.
    if stored != actual && !cfg!(fuzzing) {
        return Err(IntegrityError::Mismatch { stored, actual });
    }
    Ok(body)
}

/// Canonical bytes of a JSON value: compact, keys sorted (serde_json's map is ordered).
fn canonical(value: &serde_json::Value) -> Vec<u8> {
    serde_json::to_vec(value).expect("a JSON value serialises")
}

/// `s` cut to at most `max` bytes (at a character boundary), marked when cut.
fn bounded(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

/// `value` as pretty JSON with a `"crc32c"` field over its canonical form. `extra` fields
/// (e.g. checksums of sibling files) are added to the object before the checksum, so the
/// checksum covers them too. Errors if `value` is not a JSON object.
pub fn to_checked_json<T: Serialize>(
    value: &T,
    extra: &[(&str, serde_json::Value)],
) -> std::result::Result<Vec<u8>, IntegrityError> {
    let mut v = serde_json::to_value(value).map_err(|e| IntegrityError::Json(e.to_string()))?;
    let Some(obj) = v.as_object_mut() else {
        return Err(IntegrityError::Json("checked JSON must be an object".into()));
    };
    for (k, x) in extra {
        obj.insert((*k).to_string(), x.clone());
    }
    obj.remove(CRC_FIELD);
    let crc = crc32c(&canonical(&v));
    if let Some(obj) = v.as_object_mut() {
        obj.insert(CRC_FIELD.into(), crc_hex(crc).into());
    }
    let mut out = serde_json::to_vec_pretty(&v).map_err(|e| IntegrityError::Json(e.to_string()))?;
    out.push(b'\n');
    Ok(out)
}

/// Parses a JSON file written by [`to_checked_json`] (or an older one without a
/// checksum), verifying the checksum. Returns the value, the whole JSON object (to read
/// extra fields) and whether it was verified. `path` names the file in errors.
pub fn from_checked_json<T: DeserializeOwned>(bytes: &[u8], path: &Path) -> Result<(T, serde_json::Value, Verified)> {
    let damaged = |problem| StorageError::Damaged { name: path.display().to_string(), problem };
    let json = |s: String| damaged(IntegrityError::Json(s));
    let mut v: serde_json::Value = serde_json::from_slice(bytes)
        .map_err(|e| json(format!("not valid JSON ({}): the file is damaged", bounded(&e.to_string(), MAX_MESSAGE))))?;
    let Some(obj) = v.as_object_mut() else { return Err(json("not a JSON object".into())) };
    let verified = match obj.remove(CRC_FIELD) {
        None => Verified::NoChecksum,
        Some(stored) => {
            let stored = stored.as_str().and_then(|s| u32::from_str_radix(s, 16).ok());
            let actual = crc32c(&canonical(&v));
            match stored {
                Some(s) if s == actual => Verified::Ok,
                Some(stored) => return Err(damaged(IntegrityError::Mismatch { stored, actual })),
                None => return Err(json(format!("the {CRC_FIELD} field is not 8 hex digits: the file is damaged"))),
            }
        }
    };
    let value = serde_json::from_value(v.clone()).map_err(|e| json(bounded(&e.to_string(), MAX_MESSAGE)))?;
    Ok((value, v, verified))
}

/// Reads the hex checksum stored under `key` of a checked JSON object, if present.
pub fn crc_field(obj: &serde_json::Value, key: &str) -> Option<u32> {
    obj.get(key).and_then(|v| v.as_str()).and_then(|s| u32::from_str_radix(s, 16).ok())
}

/// Checks the CRC-32C of `bytes` read from `path` against `expected` (if any).
pub fn check_crc(bytes: &[u8], expected: Option<u32>, path: &Path) -> Result<Verified> {
    let Some(recorded) = expected else { return Ok(Verified::NoChecksum) };
    let actual = crc32c(bytes);
    if actual != recorded {
        return Err(StorageError::Damaged {
            name: path.display().to_string(),
            problem: IntegrityError::Recorded { recorded, actual },
        });
    }
    Ok(Verified::Ok)
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
        let err = from_checked_json::<S>(b"{\"b\":", p).unwrap_err().to_string();
        assert!(err.contains("f.json") && err.contains("not valid JSON"), "{err}");
        assert!(to_checked_json(&3u8, &[]).is_err());
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
        assert_eq!(split_crc(&b[..2]), Err(IntegrityError::TooShort { len: 2 }));
        let err = check_crc(b"abc", Some(1), Path::new("m.bpk")).unwrap_err().to_string();
        assert!(err.contains("m.bpk") && err.contains("recorded 00000001"), "{err}");
        // The error (defined in `error`) shows checksums as `crc_hex` writes them.
        let err = IntegrityError::Mismatch { stored: 0xab, actual: crc32c(b"x") }.to_string();
        assert!(err.contains(&format!("stored {}, contents {}", crc_hex(0xab), crc_hex(crc32c(b"x")))), "{err}");
    }
}
