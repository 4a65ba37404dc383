//! Where a run lives: a local directory or an object-store URL, parsed once from `--run`.

use crate::error::{Result, StorageError};
use std::path::PathBuf;

/// A run's location, from the `--run` argument.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RunLocation {
    /// A directory on this machine (or on a shared file system such as NFS).
    Local(PathBuf),
    /// `s3://BUCKET/PREFIX` on S3 or an S3-compatible server (credentials, region and
    /// endpoint from the standard `AWS_*` environment variables).
    S3 {
        /// The bucket.
        bucket: String,
        /// The key prefix of the run's objects, without leading or trailing `/` (may be
        /// empty: the run is the whole bucket).
        prefix: String,
    },
}

impl std::str::FromStr for RunLocation {
    type Err = StorageError;

    fn from_str(s: &str) -> Result<RunLocation> {
        let bad = |problem: &str| StorageError::BadLocation { given: s.to_string(), problem: problem.to_string() };
        if let Some(rest) = s.strip_prefix("s3://") {
            let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
            if bucket.is_empty() {
                return Err(bad("no bucket name (write s3://BUCKET/PREFIX)"));
            }
            if !bucket.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.') {
                return Err(bad("an S3 bucket name has lower-case letters, digits, '-' and '.' only"));
            }
            let prefix = prefix.trim_matches('/');
            if prefix.split('/').any(|p| p.is_empty() || p == "." || p == "..") && !prefix.is_empty() {
                return Err(bad("the prefix has an empty, '.' or '..' part"));
            }
            return Ok(RunLocation::S3 { bucket: bucket.to_string(), prefix: prefix.to_string() });
        }
        if let Some((scheme, _)) = s.split_once("://") {
            return Err(bad(&format!(
                "{scheme}:// is not supported: a run is a local directory or s3://BUCKET/PREFIX (any S3-compatible server)"
            )));
        }
        if s.is_empty() {
            return Err(bad("empty"));
        }
        Ok(RunLocation::Local(PathBuf::from(s)))
    }
}

impl std::fmt::Display for RunLocation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RunLocation::Local(p) => write!(f, "{}", p.display()),
            RunLocation::S3 { bucket, prefix } if prefix.is_empty() => write!(f, "s3://{bucket}"),
            RunLocation::S3 { bucket, prefix } => write!(f, "s3://{bucket}/{prefix}"),
        }
    }
}

impl RunLocation {
    /// The local directory, for a local run.
    pub fn local(&self) -> Option<&std::path::Path> {
        match self {
            RunLocation::Local(p) => Some(p),
            RunLocation::S3 { .. } => None,
        }
    }

    /// A directory name for this run's local working copy under a cache root:
    /// `s3/BUCKET/PREFIX` (`_` for an empty prefix).
    pub fn cache_name(&self) -> PathBuf {
        match self {
            RunLocation::Local(p) => p.clone(),
            RunLocation::S3 { bucket, prefix } => {
                let mut p = PathBuf::from("s3").join(bucket);
                p.push(if prefix.is_empty() { "_" } else { prefix });
                p
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locations_parse_once() {
        let l: RunLocation = "s3://runs/bredon/4x4/".parse().unwrap();
        assert_eq!(l, RunLocation::S3 { bucket: "runs".into(), prefix: "bredon/4x4".into() });
        assert_eq!(l.to_string(), "s3://runs/bredon/4x4");
        assert_eq!("s3://runs".parse::<RunLocation>().unwrap().to_string(), "s3://runs");
        assert_eq!("checkpoints/4x4".parse::<RunLocation>().unwrap(), RunLocation::Local("checkpoints/4x4".into()));
        for bad in ["s3://", "s3:///x", "s3://Bad_Bucket/x", "s3://b/a//c", "s3://b/../x", "gs://b/x", ""] {
            let e = bad.parse::<RunLocation>().unwrap_err().to_string();
            assert!(e.contains("bad run location"), "{bad}: {e}");
        }
        assert!("gs://b/x".parse::<RunLocation>().unwrap_err().to_string().contains("gs:// is not supported"));
    }
}
