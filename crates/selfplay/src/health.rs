//! A network's health as a generation's log line (and `bredon fit`'s report) gives it:
//! dead channels, tiny weights and τ-dormant units (the blocks' and the value head's).

use bredon_netform::health::net_health;

/// The τ of the generation log's `dormant` figure: ReDo's small threshold, whatever
/// `[train] revive_tau` says, so that runs compare.
pub const DORMANT_TAU: f32 = bredon_nn::activity::TAUS[1];

/// A network's health as a generation's log line gives it.
#[derive(Clone, Copy, Debug, Default)]
pub struct HealthFigures {
    /// The residual blocks' dead channels (every incoming folded weight ≤ 1e-6), in percent.
    pub dead_percent: f64,
    /// Weights ≤ 1e-6 in the whole network, in percent.
    pub tiny_percent: f64,
    /// The blocks' first-convolution units τ-dormant at [`DORMANT_TAU`] on the probe
    /// positions, in percent (0 with no positions).
    pub dormant_percent: f64,
    /// The value head's hidden units (`value_fc1`) τ-dormant at [`DORMANT_TAU`] on the
    /// probe positions, in percent (0 with no positions).
    pub value_dormant_percent: f64,
}

impl HealthFigures {
    /// `model`'s figures: the first two from its folded weights, the dormant share from
    /// a forward pass on `probe`.
    pub fn of(model: &bredon_nn::TakNet, size: usize, probe: &[&bredon_rules::Position]) -> HealthFigures {
        let health = net_health(&model.fold(size));
        let (dormant_percent, value_dormant_percent) = if probe.is_empty() {
            (0.0, 0.0)
        } else {
            let scores = bredon_nn::activity::unit_scores(model, probe, size);
            (
                bredon_nn::activity::dormant_block_percent(&scores, DORMANT_TAU),
                bredon_nn::activity::dormant_value_percent(&scores, DORMANT_TAU),
            )
        };
        HealthFigures {
            dead_percent: health.dead_trunk_percent(),
            tiny_percent: health.tiny_percent(),
            dormant_percent,
            value_dormant_percent,
        }
    }
}
