//! `bredon bench nn --compare-cpu`: every head of a network on its device against the
//! same weights on the CPU, and the WGSL kernels' outputs against the CPU's fast path.

use crate::error::BenchError;
use bredon_infer::{Engine, InferenceKind};
use bredon_kernels::Arithmetic;
use bredon_netform::positions::random_positions;
use bredon_nn::{HeadDifference, TakNet};
use bredon_rules::Position;

/// The positions compared on.
pub const POSITIONS: usize = 256;

/// The WGSL kernels' outputs against the CPU's fast path.
#[derive(Clone, Debug, PartialEq)]
pub struct WgslComparison {
    /// The arithmetic of the kernels' trunk, where one of the arithmetic table's (`None`:
    /// the kernels the `wgsl` path chose).
    pub arithmetic: Option<Arithmetic>,
    /// The largest difference (relative above 1) of each head: `policy` (every logit),
    /// `value`, and `draw` and `margin` where the network has them.
    pub heads: Vec<(&'static str, f32)>,
}

impl WgslComparison {
    /// The largest difference over the heads.
    pub fn worst(&self) -> f32 {
        self.heads.iter().map(|h| h.1).fold(0.0f32, f32::max)
    }
}

/// One network's comparison with the CPU.
#[derive(Clone, Debug, PartialEq)]
pub struct CpuComparison {
    /// Every head on the network's device against the CPU (largest |a - b| / max(|a|, 1)).
    pub heads: Vec<HeadDifference>,
    /// The WGSL kernels against the fast path: first those of the `wgsl` path (when one
    /// was measured), then those of each arithmetic given.
    pub wgsl: Vec<WgslComparison>,
}

impl CpuComparison {
    /// The largest difference over the heads (not the WGSL kernels').
    pub fn worst(&self) -> f32 {
        self.heads.iter().map(|d| d.max_difference).fold(0.0f32, f32::max)
    }
}

/// `model` (on its device) against the CPU on [`POSITIONS`] random positions of `size`;
/// with `wgsl` (the WGSL path measured, if any), also the kernels of that path and each
/// of `arithmetics` (kernels already built) against the CPU's fast path.
pub fn compare_with_cpu(
    model: &TakNet,
    size: usize,
    wgsl: Option<InferenceKind>,
    arithmetics: &[(Arithmetic, &Engine)],
) -> Result<CpuComparison, BenchError> {
    let cpu = bredon_nn::device::cpu();
    let positions = random_positions(size, POSITIONS, 17);
    let refs: Vec<&Position> = positions.iter().collect();
    let heads = bredon_nn::compare_devices(model, &cpu, &refs, size)?;
    let mut compared = Vec::new();
    if let Some(kind) = wgsl {
        let fast = Engine::new(model.clone(), size, InferenceKind::FAST_F32);
        let heads = compare_wgsl(&fast, &Engine::new(model.clone(), size, kind), &refs);
        compared.push(WgslComparison { arithmetic: None, heads });
        for &(arithmetic, engine) in arithmetics {
            compared.push(WgslComparison { arithmetic: Some(arithmetic), heads: compare_wgsl(&fast, engine, &refs) });
        }
    }
    Ok(CpuComparison { heads, wgsl: compared })
}

/// The WGSL kernels' outputs against the CPU's fast path on `positions`: the largest
/// difference (relative above 1) of every policy logit, the value, the draw probability
/// and the flat margin.
pub fn compare_wgsl(fast: &Engine, wgsl: &Engine, positions: &[&Position]) -> Vec<(&'static str, f32)> {
    let fast = fast.forward_wdl(positions);
    let gpu = wgsl.forward_wdl(positions);
    let worst =
        |a: &[f32], b: &[f32]| a.iter().zip(b).map(|(x, y)| (x - y).abs() / x.abs().max(1.0)).fold(0.0f32, f32::max);
    let mut heads = vec![("policy", worst(&fast.logits, &gpu.logits)), ("value", worst(&fast.values, &gpu.values))];
    if let (Some(a), Some(b)) = (&fast.draws, &gpu.draws) {
        heads.push(("draw", worst(a, b)));
    }
    if let (Some(a), Some(b)) = (&fast.margins, &gpu.margins) {
        heads.push(("margin", worst(a, b)));
    }
    heads
}
