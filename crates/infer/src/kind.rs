//! [`InferenceKind`]: which implementation runs the search's forward pass, named once
//! (`--inference`, `[selfplay] inference`).

use bredon_kernels::{Arithmetic, Precision};
use bredon_nn::device::is_cpu;
use burn::prelude::Device;

/// Which implementation runs the forward pass for search: `fast` ([`FastNet`], the CPU
/// default; `fast:int8` runs its residual blocks in 8-bit integers, [`Precision`]), `burn` (the training framework's own forward pass, on the model's device),
/// `wgsl` (Bredon's own kernels on a wgpu device, [`crate::wgsl`]; `wgsl:ARITHMETIC` names
/// the trunk's [`Arithmetic`], e.g. `wgsl:tensor`), or `auto`: fast for a model on the CPU,
/// wgsl for one on a GPU (burn's in a build without the `wgpu` feature).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum InferenceKind {
    /// Fast on the CPU; on a GPU device wgsl (burn in a build without the `wgpu` feature).
    #[default]
    Auto,
    /// The fast path: BatchNorm folded, channels-last implicit-GEMM kernels (CPU), the
    /// residual blocks in the given precision (8-bit integers only where the CPU has
    /// AVX-512 VNNI; elsewhere single precision, with a warning).
    Fast(Precision),
    /// burn's forward pass on the selected device (flex on the CPU, or the GPU).
    Burn,
    /// Bredon's own WGSL kernels on the wgpu adapter of the selected device, the trunk in
    /// the given arithmetic (a build with the `wgpu` feature; on the CPU device this is the
    /// fast path, and in a build without the feature burn's).
    Wgsl(Arithmetic),
}

impl InferenceKind {
    /// The WGSL kernels in [`Arithmetic::DEFAULT`] (what `wgsl` and `auto` on a GPU mean).
    pub const WGSL: InferenceKind = InferenceKind::Wgsl(Arithmetic::DEFAULT);

    /// The fast path in single precision (what `fast` and `auto` on the CPU mean).
    pub const FAST: InferenceKind = InferenceKind::Fast(Precision::F32);

    /// `Auto` made concrete for a model on `device`; the others as they are.
    pub fn resolve_for(self, device: &Device) -> InferenceKind {
        match self {
            InferenceKind::Auto | InferenceKind::Wgsl(_) if is_cpu(device) => InferenceKind::FAST,
            InferenceKind::Auto if cfg!(feature = "wgpu") => InferenceKind::WGSL,
            InferenceKind::Auto | InferenceKind::Wgsl(_) if !cfg!(feature = "wgpu") => InferenceKind::Burn,
            k => k,
        }
    }

    /// Whether this is the WGSL kernels, in any arithmetic.
    pub fn is_wgsl(self) -> bool {
        matches!(self, InferenceKind::Wgsl(_))
    }
}

/// A name that is not an [`InferenceKind`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown inference {0:?} (use auto, fast, fast:int8, burn, wgsl, or wgsl:ARITHMETIC with f32, f16-pairs or tensor)"
)]
pub struct UnknownInference(pub String);

impl std::str::FromStr for InferenceKind {
    type Err = UnknownInference;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let name = s.trim().to_ascii_lowercase();
        match name.as_str() {
            "auto" => Ok(InferenceKind::Auto),
            "fast" => Ok(InferenceKind::FAST),
            "burn" => Ok(InferenceKind::Burn),
            "wgsl" => Ok(InferenceKind::WGSL),
            other => {
                if let Some(Ok(p)) = other.strip_prefix("fast:").map(str::parse::<Precision>) {
                    return Ok(InferenceKind::Fast(p));
                }
                match other.strip_prefix("wgsl:").map(str::parse::<Arithmetic>) {
                    Some(Ok(a)) => Ok(InferenceKind::Wgsl(a)),
                    _ => Err(UnknownInference(s.trim().to_string())),
                }
            }
        }
    }
}

impl TryFrom<String> for InferenceKind {
    type Error = UnknownInference;

    fn try_from(s: String) -> Result<Self, Self::Error> {
        s.parse()
    }
}

impl From<InferenceKind> for String {
    fn from(kind: InferenceKind) -> String {
        kind.to_string()
    }
}

impl std::fmt::Display for InferenceKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            InferenceKind::Auto => f.write_str("auto"),
            InferenceKind::Fast(Precision::F32) => f.write_str("fast"),
            InferenceKind::Fast(p) => write!(f, "fast:{}", p.name()),
            InferenceKind::Burn => f.write_str("burn"),
            InferenceKind::Wgsl(a) if *a == Arithmetic::DEFAULT => f.write_str("wgsl"),
            InferenceKind::Wgsl(a) => write!(f, "wgsl:{}", a.name()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use InferenceKind::{Auto, Burn, Wgsl};
    const FAST: InferenceKind = InferenceKind::FAST;
    const INT8: InferenceKind = InferenceKind::Fast(Precision::Int8);

    #[test]
    fn inference_names_parse_print_back_and_resolve_on_the_cpu() {
        let tensor = Wgsl(Arithmetic::Tensor);
        for (text, kind) in [
            ("auto", Auto),
            ("fast", FAST),
            ("fast:f32", FAST),
            ("FAST:int8", INT8),
            ("BURN", Burn),
            (" wgsl ", InferenceKind::WGSL),
            ("wgsl:f32", Wgsl(Arithmetic::F32)),
            ("wgsl:F16-pairs", Wgsl(Arithmetic::F16Pairs)),
            ("wgsl:tensor", tensor),
        ] {
            assert_eq!(text.parse::<InferenceKind>().unwrap(), kind, "{text}");
            assert_eq!(kind.to_string().parse::<InferenceKind>().unwrap(), kind);
            let json = serde_json::to_string(&kind).unwrap();
            assert_eq!(serde_json::from_str::<InferenceKind>(&json).unwrap(), kind);
        }
        assert_eq!(InferenceKind::WGSL.to_string(), "wgsl");
        assert_eq!(tensor.to_string(), "wgsl:tensor");
        assert!(tensor.is_wgsl() && !Burn.is_wgsl());
        assert_eq!(INT8.to_string(), "fast:int8");
        for bad in ["gpu", "wgsl:", "wgsl:bf16", "tensor", "fast:bf16", "fast:"] {
            let e = bad.parse::<InferenceKind>().unwrap_err().to_string();
            assert!(
                e.contains(&format!("{bad:?}"))
                    && e.contains("use auto, fast, fast:int8, burn, wgsl, or wgsl:ARITHMETIC"),
                "{e}"
            );
        }
        // A run config's key reads the same names and says what is wrong with a bad one.
        #[derive(serde::Deserialize)]
        struct Section {
            inference: InferenceKind,
        }
        let read: Section = toml::from_str("inference = \"wgsl:tensor\"").unwrap();
        assert_eq!(read.inference, tensor);
        let e = toml::from_str::<Section>("inference = \"wgsl:bf16\"").err().unwrap().to_string();
        assert!(e.contains("unknown inference \"wgsl:bf16\""), "{e}");
        // On the CPU device the GPU kernels are the fast path; burn stays burn.
        let cpu = bredon_nn::device::cpu();
        let resolved: Vec<_> =
            [Auto, FAST, INT8, Burn, InferenceKind::WGSL, tensor].iter().map(|k| k.resolve_for(&cpu)).collect();
        assert_eq!(resolved, [FAST, FAST, INT8, Burn, FAST, FAST]);
    }
}
