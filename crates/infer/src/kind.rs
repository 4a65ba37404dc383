//! [`InferenceKind`]: which implementation runs the search's forward pass, named once
//! (`--inference`, `[selfplay] inference`).

use bredon_kernels::{Arithmetic, Precision};

use crate::precision::PrecisionChoice;
use bredon_nn::device::is_cpu;
use burn::prelude::Device;

/// Which implementation runs the forward pass for search: `fast` (the CPU fast path,
/// `bredon_kernels::FastNet`; `fast:f32` and `fast:int8` fix its arithmetic, plain `fast`
/// is `auto`'s, [`PrecisionChoice`]), `burn` (the training framework's own forward pass, on
/// the model's device), `wgsl` (Bredon's own kernels on a wgpu device; `wgsl:ARITHMETIC`
/// names the trunk's [`Arithmetic`], e.g. `wgsl:tensor`), or `auto`: fast for a model on
/// the CPU, wgsl for one on a GPU (burn's in a build without the `wgpu` feature).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum InferenceKind {
    /// Fast on the CPU, in the given precision; on a GPU device wgsl (burn in a build
    /// without the `wgpu` feature), where the precision does not apply.
    Auto(PrecisionChoice),
    /// The fast path: BatchNorm folded, channels-last implicit-GEMM kernels (CPU), the
    /// residual blocks in the chosen precision (8-bit integers only where the CPU has
    /// AVX-512 VNNI; a named precision the CPU lacks runs in f32, with a warning).
    Fast(PrecisionChoice),
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

    /// The fast path in `auto` precision (what `fast`, and `auto` on the CPU, mean).
    pub const FAST: InferenceKind = InferenceKind::Fast(PrecisionChoice::Auto);

    /// The fast path in single precision (what tests that compare it with burn's forward
    /// pass to 1e-4 run).
    pub const FAST_F32: InferenceKind = InferenceKind::fast(Precision::F32);

    /// `auto` in `auto` precision: the default.
    pub const AUTO: InferenceKind = InferenceKind::Auto(PrecisionChoice::Auto);

    /// The fast path in exactly `precision`.
    pub const fn fast(precision: Precision) -> InferenceKind {
        InferenceKind::Fast(PrecisionChoice::Exactly(precision))
    }

    /// `Auto` made concrete for a model on `device`; the others as they are.
    pub fn resolve_for(self, device: &Device) -> InferenceKind {
        match self {
            InferenceKind::Auto(p) if is_cpu(device) => InferenceKind::Fast(p),
            InferenceKind::Wgsl(_) if is_cpu(device) => InferenceKind::FAST,
            InferenceKind::Auto(_) if cfg!(feature = "wgpu") => InferenceKind::WGSL,
            InferenceKind::Auto(_) | InferenceKind::Wgsl(_) if !cfg!(feature = "wgpu") => InferenceKind::Burn,
            k => k,
        }
    }

    /// This kind with the fast path's arithmetic set to `precision` (`--precision`, the
    /// arena's `precision=`, `[selfplay] precision`): for `auto` and `fast`; `None` for
    /// the passes it does not apply to (`burn`, `wgsl`).
    pub fn with_precision(self, precision: PrecisionChoice) -> Option<InferenceKind> {
        match self {
            InferenceKind::Auto(_) => Some(InferenceKind::Auto(precision)),
            InferenceKind::Fast(_) => Some(InferenceKind::Fast(precision)),
            InferenceKind::Burn | InferenceKind::Wgsl(_) => None,
        }
    }

    /// Whether this is the WGSL kernels, in any arithmetic.
    pub fn is_wgsl(self) -> bool {
        matches!(self, InferenceKind::Wgsl(_))
    }
}

impl Default for InferenceKind {
    fn default() -> InferenceKind {
        InferenceKind::AUTO
    }
}

/// A name that is not an [`InferenceKind`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown inference {0:?} (use auto, fast, fast:PRECISION with auto, f32, bf16 or int8, burn, wgsl, or wgsl:ARITHMETIC with f32, f16-pairs or tensor)"
)]
pub struct UnknownInference(pub String);

impl std::str::FromStr for InferenceKind {
    type Err = UnknownInference;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let name = s.trim().to_ascii_lowercase();
        match name.as_str() {
            "auto" => Ok(InferenceKind::AUTO),
            "fast" => Ok(InferenceKind::FAST),
            "burn" => Ok(InferenceKind::Burn),
            "wgsl" => Ok(InferenceKind::WGSL),
            other => {
                if let Some(Ok(p)) = other.strip_prefix("fast:").map(str::parse::<PrecisionChoice>) {
                    return Ok(InferenceKind::Fast(p));
                }
                if let Some(Ok(p)) = other.strip_prefix("auto:").map(str::parse::<PrecisionChoice>) {
                    return Ok(InferenceKind::Auto(p));
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
            InferenceKind::Auto(PrecisionChoice::Auto) => f.write_str("auto"),
            InferenceKind::Auto(p) => write!(f, "auto:{p}"),
            InferenceKind::Fast(PrecisionChoice::Auto) => f.write_str("fast"),
            InferenceKind::Fast(p) => write!(f, "fast:{p}"),
            InferenceKind::Burn => f.write_str("burn"),
            InferenceKind::Wgsl(a) if *a == Arithmetic::DEFAULT => f.write_str("wgsl"),
            InferenceKind::Wgsl(a) => write!(f, "wgsl:{}", a.name()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use InferenceKind::{Burn, Wgsl};
    const AUTO: InferenceKind = InferenceKind::AUTO;
    const FAST: InferenceKind = InferenceKind::FAST;
    const F32: InferenceKind = InferenceKind::fast(Precision::F32);
    const INT8: InferenceKind = InferenceKind::fast(Precision::Int8);

    #[test]
    fn inference_names_parse_print_back_and_resolve_on_the_cpu() {
        let tensor = Wgsl(Arithmetic::Tensor);
        let auto_f32 = InferenceKind::Auto(PrecisionChoice::Exactly(Precision::F32));
        for (text, kind) in [
            ("auto", AUTO),
            ("auto:f32", auto_f32),
            ("fast", FAST),
            ("fast:auto", FAST),
            ("fast:f32", F32),
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
        assert_eq!(InferenceKind::default(), AUTO);
        assert_eq!(InferenceKind::WGSL.to_string(), "wgsl");
        assert_eq!(tensor.to_string(), "wgsl:tensor");
        assert!(tensor.is_wgsl() && !Burn.is_wgsl());
        assert_eq!(INT8.to_string(), "fast:int8");
        assert_eq!(FAST.to_string(), "fast");
        for bad in ["gpu", "wgsl:", "wgsl:bf16", "tensor", "fast:fp16", "fast:", "auto:fast"] {
            let e = bad.parse::<InferenceKind>().unwrap_err().to_string();
            assert!(
                e.contains(&format!("{bad:?}"))
                    && e.contains(
                        "use auto, fast, fast:PRECISION with auto, f32, bf16 or int8, burn, wgsl, or wgsl:ARITHMETIC"
                    ),
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
        // On the CPU device the GPU kernels are the fast path; burn stays burn; `auto`
        // keeps its precision.
        let cpu = bredon_nn::device::cpu();
        let resolved: Vec<_> = [AUTO, auto_f32, FAST, INT8, Burn, InferenceKind::WGSL, tensor]
            .iter()
            .map(|k| k.resolve_for(&cpu))
            .collect();
        assert_eq!(resolved, [FAST, F32, FAST, INT8, Burn, FAST, FAST]);
    }

    /// `--precision` sets the fast path's arithmetic where there is one, and says where
    /// there is none.
    #[test]
    fn a_precision_applies_to_auto_and_fast_only() {
        let int8 = PrecisionChoice::Exactly(Precision::Int8);
        assert_eq!(AUTO.with_precision(int8), Some(InferenceKind::Auto(int8)));
        assert_eq!(F32.with_precision(int8), Some(INT8));
        assert_eq!(INT8.with_precision(PrecisionChoice::Auto), Some(FAST));
        assert_eq!(Burn.with_precision(int8), None);
        assert_eq!(InferenceKind::WGSL.with_precision(int8), None);
        for (text, choice) in
            [("auto", PrecisionChoice::Auto), ("F32", PrecisionChoice::Exactly(Precision::F32)), (" int8", int8)]
        {
            assert_eq!(text.parse::<PrecisionChoice>().unwrap(), choice);
            assert_eq!(choice.to_string().parse::<PrecisionChoice>().unwrap(), choice);
        }
        assert_eq!("BF16".parse::<PrecisionChoice>().unwrap(), PrecisionChoice::Exactly(Precision::Bf16));
        let e = "fp16".parse::<PrecisionChoice>().unwrap_err().to_string();
        assert!(e.contains("\"fp16\"") && e.contains("use auto, f32, bf16 or int8"), "{e}");
    }
}
