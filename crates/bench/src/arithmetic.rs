//! The WGSL kernels by the arithmetic of their trunk, side by side (feature `wgpu`):
//! positions/s at each batch, one pass at a time and two in flight, and whether each
//! arithmetic agrees with the one `auto` chooses.

use crate::error::BenchError;
use crate::nn::{forward_rate, pipelined_rate, positions_for};
use bredon_infer::Engine;
use bredon_kernels::Arithmetic;
use bredon_kernels::wgsl::WgslError;
use bredon_netform::ModelMeta;
use bredon_nn::TakNet;
use bredon_rules::Position;

/// The arithmetics to measure: `requested`, or every one when it is empty (those the
/// adapter does not run come back as [`ArithmeticRow::Unavailable`]).
pub fn arithmetics(requested: &[Arithmetic]) -> Vec<Arithmetic> {
    if requested.is_empty() { Arithmetic::ALL.to_vec() } else { requested.to_vec() }
}

/// How an arithmetic's kernels compare with those `auto` chooses, on 64 positions.
#[derive(Clone, Debug, PartialEq)]
pub enum Verdict {
    /// This is the arithmetic `auto` chooses.
    Auto,
    /// Priors and values within 1e-3 of this arithmetic's (the one `auto` chooses).
    Agrees(Arithmetic),
    /// They differ more: why.
    Disagrees(String),
}

/// One row of the arithmetic table.
#[derive(Clone, Debug, PartialEq)]
pub enum ArithmeticRow {
    /// The adapter cannot run the kernels in `arithmetic`.
    Unavailable {
        /// The board size.
        size: usize,
        /// The network's name.
        net: String,
        /// The arithmetic.
        arithmetic: Arithmetic,
        /// Why (the kernels' error).
        reason: String,
    },
    /// Positions/s of the kernels in `arithmetic` at `batch`.
    Rates {
        /// The board size.
        size: usize,
        /// The network's name.
        net: String,
        /// The batch size.
        batch: usize,
        /// The arithmetic.
        arithmetic: Arithmetic,
        /// One pass at a time.
        single: f64,
        /// Two passes in flight.
        pipelined: f64,
        /// Against the arithmetic `auto` chooses.
        verdict: Verdict,
    },
}

/// The kernels of one network in one arithmetic, built by [`arithmetic_table`].
pub struct ArithmeticEngine {
    /// The network's index in the `models` given.
    pub model: usize,
    /// The arithmetic.
    pub arithmetic: Arithmetic,
    /// The kernels (an [`Engine::Wgsl`]).
    pub engine: Engine,
}

/// The WGSL kernels of every network of `models` in each of `arithmetics`, at every
/// batch of `batches` for about `seconds`, handing each row to `on_row` as soon as it is
/// measured. Returns the kernels built (for comparisons with the CPU).
pub fn arithmetic_table(
    models: &[(TakNet, ModelMeta)],
    arithmetics: &[Arithmetic],
    batches: &[usize],
    seconds: f64,
    on_row: &mut dyn FnMut(&ArithmeticRow),
) -> Result<Vec<ArithmeticEngine>, BenchError> {
    let mut built = Vec::new();
    for (index, (model, meta)) in models.iter().enumerate() {
        let size = meta.size;
        let name = meta.net.name();
        let single = bredon_infer::gpu::wgsl_for_model(model, size, Arithmetic::DEFAULT)?;
        let positions = positions_for(size, batches);
        let probe: Vec<&Position> = positions.iter().take(64).collect();
        for &a in arithmetics {
            let net = match bredon_infer::gpu::wgsl_for_model(model, size, a) {
                Ok(net) => net,
                Err(e @ WgslError::NotOnAdapter { .. }) => {
                    let reason = e.to_string();
                    on_row(&ArithmeticRow::Unavailable { size, net: name.clone(), arithmetic: a, reason });
                    continue;
                }
                Err(e) => return Err(e.into()),
            };
            let verdict = if a == single.arithmetic() {
                Verdict::Auto
            } else {
                match net.agrees_with(&single, &probe) {
                    Ok(()) => Verdict::Agrees(single.arithmetic()),
                    Err(why) => Verdict::Disagrees(why),
                }
            };
            let engine = Engine::Wgsl(Box::new(net));
            let Engine::Wgsl(net) = &engine else { unreachable!("a wgsl engine") };
            for &batch in batches {
                let x1 = forward_rate(&engine, &positions, batch, seconds);
                let x2 = pipelined_rate(net, &positions, batch, seconds)?;
                on_row(&ArithmeticRow::Rates {
                    size,
                    net: name.clone(),
                    batch,
                    arithmetic: a,
                    single: x1,
                    pipelined: x2,
                    verdict: verdict.clone(),
                });
            }
            built.push(ArithmeticEngine { model: index, arithmetic: a, engine });
        }
    }
    Ok(built)
}
