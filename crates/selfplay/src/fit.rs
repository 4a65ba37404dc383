//! Training on a fixed set of stored games, with no self-play: the controlled comparison
//! of training settings (the optimiser and its decay, ReDo, the network's size) on the
//! same data from the same start, which a run cannot give because each arm's games
//! would differ (`bredon fit`).
//!
//! Every `report_every` steps [`fit`] measures the network as a run's generation line
//! does (mean losses since the last report; dead trunk channels and weights ≤ 1e-6 from
//! the folded weights; τ-dormant first-convolution units on fixed positions of the
//! data) and hands the report and the network to the caller, which writes them. Two fits
//! with the same data, start, seed and plan draw the same batches in the same order, so
//! they differ only in the settings under test.

use crate::error::{Result, RunError};
use crate::health::HealthFigures;
use crate::net::Learner;
use crate::train::StepGuard;
use crate::window::ReplayWindow;
use bredon_nn::LossSum;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::Serialize;
use std::time::Instant;

use crate::config::RunConfig;
use crate::rundir::Generation;

/// How a fit runs.
#[derive(Clone, Debug)]
pub struct FitPlan {
    /// Training steps (of the config's `[train] batch_size`).
    pub steps: u64,
    /// Measure and report every this many steps (and after the last).
    pub report_every: u64,
    /// The optimiser step the network starts at (the start model's own step): the
    /// learning rate follows the config's schedule from there, as a run continued from
    /// that model would.
    pub start_step: u64,
    /// Seeds the batches' draw and the positions the units are scored on.
    pub seed: u64,
    /// ReDo (`[train] revive_tau`) before step 0 and every this many steps (0: never).
    pub revive_every: u64,
}

/// One report: the network after `step` steps of the fit.
#[derive(Clone, Debug, Default, Serialize)]
pub struct FitReport {
    /// Steps of this fit so far.
    pub step: u64,
    /// The network's optimiser step (`start_step + step`).
    pub model_step: u64,
    /// The learning rate of the last step.
    pub learning_rate: f64,
    /// Mean losses over the steps since the last report (0 at step 0).
    pub policy_loss: f64,
    /// Mean value loss (MSE against the blended target).
    pub value_loss: f64,
    /// Mean policy entropy.
    pub policy_entropy: f64,
    /// The residual blocks' dead channels (every incoming folded weight ≤ 1e-6), in percent.
    pub dead_percent: f64,
    /// Weights ≤ 1e-6 in the whole network, in percent.
    pub tiny_percent: f64,
    /// The blocks' first-convolution units τ-dormant at τ = [`crate::health::DORMANT_TAU`] on the fit's
    /// probe positions, in percent.
    pub dormant_percent: f64,
    /// Units revived by ReDo since the last report.
    pub revived_units: usize,
    /// Steps skipped as non-finite since the start.
    pub skipped_steps: usize,
    /// Training samples a second since the last report.
    pub samples_per_sec: f64,
}

/// Trains `learner` on `window`'s samples (uniformly, each under a random symmetry, as a
/// run does) by `plan`, with the learning rate and batch size of `cfg`'s `[train]`.
/// `report` receives step 0's measurement, then one every `plan.report_every` steps and
/// one after the last step, with the learner to save or export; an error from it stops
/// the fit. Returns the last report.
pub fn fit(
    cfg: &RunConfig,
    learner: &mut Learner,
    window: &ReplayWindow,
    plan: &FitPlan,
    mut report: impl FnMut(&FitReport, &Learner) -> Result<()>,
) -> Result<FitReport> {
    let available = window.len();
    if available == 0 {
        return Err(RunError::NoSamples);
    }
    let size = cfg.game.size;
    let batch = cfg.train.batch_size;
    let mut probe_rng = ChaCha8Rng::seed_from_u64(plan.seed ^ 0x5eed_d0e5);
    let probe = window.sample_positions(available, cfg.train.revive_positions, &mut probe_rng);
    let measure = |learner: &Learner, r: &mut FitReport| {
        let h = HealthFigures::of(&learner.model(), size, &probe);
        (r.dead_percent, r.tiny_percent, r.dormant_percent) = (h.dead_percent, h.tiny_percent, h.dormant_percent);
    };
    let mut rng = ChaCha8Rng::seed_from_u64(plan.seed);
    let mut guard = StepGuard::default();
    let mut losses = LossSum::default();
    let mut revived = 0;
    let mut since = Instant::now();
    let mut last = FitReport {
        model_step: plan.start_step,
        learning_rate: cfg.train.lr_at(plan.start_step),
        ..FitReport::default()
    };
    measure(learner, &mut last);
    report(&last, learner)?;
    let mut step = 0;
    while step < plan.steps {
        if plan.revive_every > 0 && step.is_multiple_of(plan.revive_every) {
            let revival = learner.revive(&probe, cfg.train.revive_tau, plan.seed ^ step)?;
            if revival.units() > 0 {
                eprintln!("step {step}: revived {revival} (τ = {})", cfg.train.revive_tau);
            }
            revived += revival.units();
        }
        let model_step = plan.start_step + step;
        let lr = cfg.train.lr_at(model_step);
        let samples = window.sample(available, batch, &mut rng);
        let outcome = learner.step(&samples, lr, &mut rng)?;
        // A skipped step still counts against the plan, so every arm ends on the same step.
        step += 1;
        if guard.record(&outcome, model_step, Generation::FIRST)?
            && let bredon_nn::StepOutcome::Trained(l) = outcome
        {
            losses.add(&l);
        }
        if step.is_multiple_of(plan.report_every.max(1)) || step == plan.steps {
            let mean = losses.mean();
            let secs = since.elapsed().as_secs_f64().max(1e-9);
            last = FitReport {
                step,
                model_step: plan.start_step + step,
                learning_rate: lr,
                policy_loss: mean.policy,
                value_loss: mean.value,
                policy_entropy: mean.entropy,
                revived_units: std::mem::take(&mut revived),
                skipped_steps: guard.skipped,
                samples_per_sec: (losses.steps() * batch) as f64 / secs,
                ..FitReport::default()
            };
            measure(learner, &mut last);
            report(&last, learner)?;
            losses = LossSum::default();
            since = Instant::now();
        }
    }
    Ok(last)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replay::{GameRecord, PlyRecord, StoredResult, store_game};
    use bredon_rules::Position;

    fn tiny_cfg() -> RunConfig {
        RunConfig::from_toml(
            "[game]\nsize = 3\n[net]\nblocks = 1\nchannels = 8\n[train]\nbatch_size = 8\nrevive_positions = 16\n",
        )
        .unwrap()
    }

    /// Four 3x3 games of legal moves (a different stride through the move list each),
    /// stored, then loaded as a window.
    fn window_of_games(dir: &std::path::Path) -> ReplayWindow {
        for (i, stride) in [7, 5, 11, 3].into_iter().enumerate() {
            let mut pos = Position::new(3).unwrap();
            let mut plies = Vec::new();
            while pos.result().is_none() {
                let moves = pos.legal_moves();
                let mv = moves[plies.len() * stride % moves.len()];
                plies.push(PlyRecord { mv: mv.0, visits: vec![(mv.0, 3), (moves[0].0, 1)], root_value: 0.1 });
                pos.play(mv).unwrap();
            }
            let result = StoredResult::finished(pos.result().unwrap());
            let r = GameRecord { size: 3, half_komi: 0, model: "gen-0000".into(), plies, result };
            store_game(&dir.join("gen-0000"), &r, &format!("g{i}")).unwrap();
        }
        let mut w = ReplayWindow::new();
        assert!(w.refresh(dir).unwrap() > 0);
        w
    }

    #[test]
    fn same_plan_same_network_and_reports_at_the_planned_steps() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = tiny_cfg();
        let window = window_of_games(dir.path());
        let plan = FitPlan { steps: 5, report_every: 2, start_step: 0, seed: 3, revive_every: 0 };
        let run = |plan: &FitPlan| {
            let mut learner = Learner::new(&cfg, 1, &bredon_infer::Compute::cpu()).unwrap();
            let mut steps = Vec::new();
            let last = fit(&cfg, &mut learner, &window, plan, |r, _| {
                steps.push(r.step);
                Ok(())
            })
            .unwrap();
            let stem = learner.model().fold(3).stem;
            (steps, last, (stem.weight, stem.bias))
        };
        let (steps, last, a) = run(&plan);
        assert_eq!(steps, vec![0, 2, 4, 5]);
        assert_eq!(last.model_step, 5);
        assert!(last.policy_loss > 0.0 && last.value_loss > 0.0, "{last:?}");
        let (_, _, b) = run(&plan);
        assert_eq!(a, b, "the same data, start, seed and plan give the same network");
        let (_, _, c) = run(&FitPlan { seed: 4, ..plan });
        assert_ne!(a, c, "another seed draws other batches");
    }

    #[test]
    fn an_empty_window_is_an_error() {
        let cfg = tiny_cfg();
        let mut learner = Learner::new(&cfg, 1, &bredon_infer::Compute::cpu()).unwrap();
        let plan = FitPlan { steps: 1, report_every: 1, start_step: 0, seed: 0, revive_every: 0 };
        let err = fit(&cfg, &mut learner, &ReplayWindow::new(), &plan, |_, _| Ok(())).unwrap_err();
        assert!(matches!(err, RunError::NoSamples), "{err}");
    }
}
