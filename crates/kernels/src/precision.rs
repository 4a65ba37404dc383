//! [`Precision`]: what the CPU fast path's residual blocks compute in, named on the
//! command line (`--inference fast:PRECISION`).

/// The arithmetic of the fast path's residual blocks (nearly all of a pass's work); the
/// input layer and the heads always run in single precision.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Precision {
    /// Single precision (every CPU).
    #[default]
    F32,
    /// 8-bit integers, 32-bit sums (AVX-512 VNNI; elsewhere the fast path runs in single
    /// precision and says so): weights with a scale per output channel, activations with
    /// a scale per position and layer (`fast::int8`).
    Int8,
}

impl Precision {
    /// Every precision, in the order benchmarks list them.
    pub const ALL: [Precision; 2] = [Precision::F32, Precision::Int8];

    /// The name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Precision::F32 => "f32",
            Precision::Int8 => "int8",
        }
    }

    /// Whether this CPU has the units that make this precision fast (single precision
    /// always; 8-bit integers with AVX-512 VNNI).
    pub fn is_native(self) -> bool {
        match self {
            Precision::F32 => true,
            Precision::Int8 => crate::int8::Int8Kernel::vnni_available(),
        }
    }
}

/// A name that is not a [`Precision`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown precision {0:?} (use f32 or int8)")]
pub struct UnknownPrecision(pub String);

impl std::str::FromStr for Precision {
    type Err = UnknownPrecision;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Precision::ALL
            .into_iter()
            .find(|p| p.name() == s.trim().to_ascii_lowercase())
            .ok_or_else(|| UnknownPrecision(s.to_string()))
    }
}

impl std::fmt::Display for Precision {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}
