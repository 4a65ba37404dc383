//! [`Generation`]: a generation of a run, named `gen-NNNN` (its checkpoint and the
//! self-play games it played).

use serde::{Deserialize, Serialize};

/// A generation of a run: checkpoint `gen-NNNN` and the self-play games it played. Its
/// name (`Display`, [`std::str::FromStr`]) is `gen-` and the number, at least 4 digits.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Generation(pub u32);

impl Generation {
    /// The first generation: the network a run starts from.
    pub const FIRST: Generation = Generation(0);

    /// The generation number.
    pub fn number(self) -> u32 {
        self.0
    }

    /// The generation after this one.
    pub fn next(self) -> Generation {
        Generation(self.0 + 1)
    }

    /// The generation before this one (`None` for the first).
    pub fn previous(self) -> Option<Generation> {
        self.0.checked_sub(1).map(Generation)
    }
}

impl std::fmt::Display for Generation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "gen-{:04}", self.0)
    }
}

/// A name that is not a generation's (`gen-NNNN`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{name:?} is not a generation name (gen-NNNN)")]
pub struct GenerationNameError {
    /// The name.
    pub name: String,
}

impl std::str::FromStr for Generation {
    type Err = GenerationNameError;

    /// Parses `gen-0003` (at least 4 digits, nothing else).
    fn from_str(name: &str) -> std::result::Result<Generation, GenerationNameError> {
        let digits = name.strip_prefix("gen-").filter(|d| d.len() >= 4 && d.bytes().all(|b| b.is_ascii_digit()));
        digits
            .and_then(|d| d.parse().ok())
            .map(Generation)
            .ok_or_else(|| GenerationNameError { name: name.to_string() })
    }
}
