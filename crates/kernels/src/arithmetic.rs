//! [`Arithmetic`]: what the WGSL kernels' trunk computes in, named on the command line
//! (`--inference wgsl:ARITHMETIC`).

/// The arithmetic of the trunk's matrix kernels (the residual blocks' convolutions and
/// every other layer whose sizes are multiples of 4: nearly all of a pass's work). The
/// heads' small layers always run in single precision.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Arithmetic {
    /// Single precision, in the shader's own multiply-adds (every adapter).
    F32,
    /// Each operand as a pair of half-precision numbers (the value rounded, and the
    /// remainder rounded), in the shader's own single-precision multiply-adds (adapters
    /// with `shader-f16`): [`Arithmetic::Tensor`]'s operands on any device, so that
    /// lavapipe measures what they do to the outputs. No faster than `F32`.
    F16Pairs,
    /// Cooperative matrices (NVIDIA's tensor cores, the matrix units of other GPUs):
    /// 16 x 16 x 16 products of half-precision tiles summed in single precision, by
    /// whole subgroups of 32 lanes, each operand a pair of halves so that the result is
    /// single precision's (`wgsl/gemm_coop.wgsl` says how).
    Tensor,
}

impl Arithmetic {
    /// What the WGSL kernels run in unless told otherwise: single precision, until the
    /// tensor kernel has been measured on a real GPU (docs/gpu.md).
    pub const DEFAULT: Arithmetic = Arithmetic::F32;

    /// Every arithmetic, in the order benchmarks list them.
    pub const ALL: [Arithmetic; 3] = [Arithmetic::F32, Arithmetic::F16Pairs, Arithmetic::Tensor];

    /// The name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Arithmetic::F32 => "f32",
            Arithmetic::F16Pairs => "f16-pairs",
            Arithmetic::Tensor => "tensor",
        }
    }
}

/// A name that is not an [`Arithmetic`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown arithmetic {0:?} (use f32, f16-pairs or tensor)")]
pub struct UnknownArithmetic(pub String);

impl std::str::FromStr for Arithmetic {
    type Err = UnknownArithmetic;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Arithmetic::ALL
            .into_iter()
            .find(|a| a.name() == s.trim().to_ascii_lowercase())
            .ok_or_else(|| UnknownArithmetic(s.to_string()))
    }
}
