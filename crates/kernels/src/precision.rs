//! [`Precision`]: what the CPU fast path's residual blocks compute in, named on the
//! command line (`--inference fast:PRECISION`).

/// The arithmetic of the fast path's residual blocks (nearly all of a pass's work); the
/// input layer and the heads always run in single precision.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Precision {
    /// Single precision (every CPU).
    #[default]
    F32,
    /// bfloat16 inputs and weights, f32 sums, on Intel AMX's tile registers (elsewhere
    /// the fast path runs in single precision and says so): `amx`.
    Bf16,
    /// 8-bit integers, 32-bit sums (AVX-512 VNNI; elsewhere the fast path runs in single
    /// precision and says so): weights with a scale per output channel, activations with
    /// a scale per position and layer (`fast::int8`).
    Int8,
}

impl Precision {
    /// Every precision, in the order benchmarks list them.
    pub const ALL: [Precision; 3] = [Precision::F32, Precision::Bf16, Precision::Int8];

    /// The name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Precision::F32 => "f32",
            Precision::Bf16 => "bf16",
            Precision::Int8 => "int8",
        }
    }

    /// The units that make this precision fast, as messages name them.
    pub fn units(self) -> &'static str {
        match self {
            Precision::F32 => "SIMD floats",
            Precision::Bf16 => "AMX tiles",
            Precision::Int8 => "AVX-512 VNNI",
        }
    }

    /// Whether this CPU has the units that make this precision fast (single precision
    /// always; bf16 with AMX, where Linux grants this process the tiles; 8-bit integers
    /// with AVX-512 VNNI).
    pub fn is_native(self) -> bool {
        match self {
            Precision::F32 => true,
            Precision::Bf16 => crate::amx::Bf16Kernel::amx_available(),
            Precision::Int8 => crate::int8::Int8Kernel::vnni_available(),
        }
    }
}

/// A name that is not a [`Precision`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown precision {0:?} (use f32, bf16 or int8)")]
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
