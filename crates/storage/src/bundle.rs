//! Bundles: several named files in one object, so that a self-play worker uploads a batch
//! of games in one request, complete or not at all.
//!
//! Format: `BRDNBNDL`, version (u32 LE), count (u32), then per file its name (u32 length,
//! UTF-8) and contents (u64 length, bytes), and a CRC-32C trailer over everything.

use crate::integrity::{IntegrityError, append_crc, split_crc};

const MAGIC: &[u8; 8] = b"BRDNBNDL";
const VERSION: u32 = 1;

/// Whether `name` may name a file in a bundle (a plain file name).
fn valid_name(name: &str) -> bool {
    !name.is_empty() && name != "." && name != ".." && !name.contains(['/', '\\', '\0']) && name.len() <= 255
}

/// Packs `(name, contents)` pairs into one bundle. Names must be plain file names.
pub fn pack(files: &[(String, Vec<u8>)]) -> Result<Vec<u8>, IntegrityError> {
    let mut out = Vec::with_capacity(16 + files.iter().map(|(n, b)| n.len() + b.len() + 12).sum::<usize>());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&VERSION.to_le_bytes());
    out.extend_from_slice(&(files.len() as u32).to_le_bytes());
    for (name, bytes) in files {
        if !valid_name(name) {
            return Err(IntegrityError::Json(format!("{name:?} is not a plain file name")));
        }
        out.extend_from_slice(&(name.len() as u32).to_le_bytes());
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
        out.extend_from_slice(bytes);
    }
    append_crc(&mut out);
    Ok(out)
}

/// Unpacks a bundle, checking its checksum and structure.
pub fn unpack(bytes: &[u8]) -> Result<Vec<(String, Vec<u8>)>, IntegrityError> {
    let body = split_crc(bytes)?;
    let bad = |what: &str| IntegrityError::Json(format!("not a valid bundle: {what}"));
    let mut r = body;
    let mut take = |n: usize| -> Result<&[u8], IntegrityError> {
        if r.len() < n {
            return Err(bad("truncated"));
        }
        let (a, b) = r.split_at(n);
        r = b;
        Ok(a)
    };
    if take(8)? != MAGIC {
        return Err(bad("wrong magic"));
    }
    let u32_of = |b: &[u8]| u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
    let version = u32_of(take(4)?);
    if version != VERSION {
        return Err(bad(&format!("version {version}, this program reads {VERSION}")));
    }
    let count = u32_of(take(4)?) as usize;
    let mut files = Vec::new();
    for _ in 0..count {
        let n = u32_of(take(4)?) as usize;
        let name = std::str::from_utf8(take(n)?).map_err(|_| bad("a name is not UTF-8"))?.to_string();
        if !valid_name(&name) {
            return Err(bad(&format!("{name:?} is not a plain file name")));
        }
        let l = take(8)?;
        let len = u64::from_le_bytes([l[0], l[1], l[2], l[3], l[4], l[5], l[6], l[7]]);
        let len = usize::try_from(len).map_err(|_| bad("a file is too long"))?;
        files.push((name, take(len)?.to_vec()));
    }
    if !r.is_empty() {
        return Err(bad("bytes after the last file"));
    }
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bundles_round_trip_and_refuse_damage() {
        let files = vec![("a.game".to_string(), vec![1, 2, 3]), ("a.ptn".to_string(), b"1. a1 b1".to_vec())];
        let b = pack(&files).unwrap();
        assert_eq!(unpack(&b).unwrap(), files);
        assert_eq!(unpack(&pack(&[]).unwrap()).unwrap(), vec![]);
        for i in 0..b.len() {
            let mut c = b.clone();
            c[i] ^= 1;
            assert!(unpack(&c).is_err(), "flip at {i}");
        }
        assert!(unpack(&b[..b.len() - 5]).is_err());
        assert!(pack(&[("../x".into(), vec![])]).is_err());
    }
}
