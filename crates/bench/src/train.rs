//! `bredon bench train`: the training step's throughput (samples/s), where a step's time
//! goes phase by phase, and a device's first steps against the CPU's.

use crate::error::BenchError;
use bredon_netform::NetConfig;
use bredon_netform::positions::random_positions;
use bredon_nn::train::{AuxTargets, OptimizerSettings};
use bredon_nn::{Convolutions, Device, Losses, StepOutcome, StepPhase, TrainError, TrainExample, Trainer};
use bredon_selfplay::worker::{process_cpu_time, thread_cpu_time};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::time::{Duration, Instant};

/// The learning rate of every measured step.
pub const LR: f64 = 1e-3;

/// Four batches of `batch` training examples on random positions of `size`, with targets
/// for every head (the auxiliary ones too, so that their cost is measured).
pub fn examples(size: usize, batch: usize) -> Vec<TrainExample> {
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    random_positions(size, 4 * batch.max(1), 3)
        .into_iter()
        .map(|position| {
            let moves = position.legal_moves();
            let policy = moves.iter().take(8).map(|&m| (m, 1.0 / moves.len().min(8) as f32)).collect();
            let aux = AuxTargets {
                flat_margin: Some(rng.random_range(-0.5..=0.5)),
                ownership: Some((0..size * size).map(|_| rng.random_range(-1..=1) as f32).collect()),
                opponent_policy: Some(vec![(moves[0], 1.0)]),
            };
            TrainExample { policy, value: rng.random_range(-1.0..=1.0), wdl: None, position, aux }
        })
        .collect()
}

/// One step of the same batch on the CPU and on the device.
#[derive(Clone, Debug)]
pub struct StepComparison {
    /// The CPU's losses (burn's own convolutions).
    pub cpu: Losses,
    /// The device's.
    pub device: Losses,
}

impl StepComparison {
    /// Whether the losses agree within 1e-3 (relative for the policy): the wgpu tests'
    /// bound.
    pub fn agree(&self) -> bool {
        let (a, b) = (&self.cpu, &self.device);
        (a.policy - b.policy).abs() < 1e-3 * a.policy.abs().max(1.0) && (a.value - b.value).abs() < 1e-3
    }
}

/// Three steps of the same batches on copies of `trainer`'s weights, one on the CPU with
/// burn's own convolutions and one on `device` with `convolutions` (`trainer` itself is
/// left as it is).
pub fn compare_with_cpu(
    net: &NetConfig,
    trainer: &Trainer,
    settings: &OptimizerSettings,
    device: &Device,
    convolutions: Convolutions,
    examples: &[TrainExample],
    batch: usize,
) -> Result<Vec<StepComparison>, TrainError> {
    let batch = batch.max(1);
    let mut cpu = Trainer::from_model_on(net, trainer.model(), settings.clone(), &bredon_nn::device::cpu())?;
    cpu.set_convolutions(Convolutions::Direct);
    let mut on_device = Trainer::from_model_on(net, trainer.model(), settings.clone(), device)?;
    on_device.set_convolutions(convolutions);
    (0..3)
        .map(|step| {
            let lo = (step * batch) % (examples.len() - batch + 1);
            let cpu = cpu.step(&examples[lo..lo + batch], LR)?;
            let device = on_device.step(&examples[lo..lo + batch], LR)?;
            Ok(StepComparison { cpu, device })
        })
        .collect()
}

/// Training throughput over about `seconds`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TrainRate {
    /// Steps taken.
    pub steps: usize,
    /// Samples per step.
    pub batch: usize,
    /// Seconds they took.
    pub secs: f64,
}

impl TrainRate {
    /// Samples per second.
    pub fn samples_per_s(&self) -> f64 {
        (self.steps * self.batch) as f64 / self.secs
    }

    /// Steps per second.
    pub fn steps_per_s(&self) -> f64 {
        self.steps as f64 / self.secs
    }
}

/// `trainer`'s steps of `batch` of `examples` for about `seconds` (at least one), after
/// one warm-up step.
pub fn train_rate(
    trainer: &mut Trainer,
    examples: &[TrainExample],
    batch: usize,
    seconds: f64,
) -> Result<TrainRate, TrainError> {
    let batch = batch.max(1);
    trainer.step(&examples[..batch], LR)?;
    let start = Instant::now();
    let (mut samples, mut i) = (0usize, 0usize);
    while start.elapsed().as_secs_f64() < seconds || samples == 0 {
        let lo = (i * batch) % (examples.len() - batch + 1);
        trainer.step(&examples[lo..lo + batch], LR)?;
        samples += batch;
        i += 1;
    }
    Ok(TrainRate { steps: i, batch, secs: start.elapsed().as_secs_f64() })
}

/// One phase's time, summed over the steps.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PhaseTime {
    /// Wall time.
    pub wall: Duration,
    /// The calling thread's CPU time.
    pub thread: Duration,
    /// Every thread's CPU time.
    pub process: Duration,
}

impl std::ops::AddAssign for PhaseTime {
    fn add_assign(&mut self, o: PhaseTime) {
        self.wall += o.wall;
        self.thread += o.thread;
        self.process += o.process;
    }
}

/// Where a training step's time went (see [`step_phases`]).
#[derive(Clone, Debug, PartialEq)]
pub struct StepPhases {
    /// Steps measured.
    pub steps: usize,
    /// Samples per step.
    pub batch: usize,
    /// Whether the platform has the per-thread and per-process CPU clocks (otherwise only
    /// the wall times count).
    pub have_clocks: bool,
    /// Each phase of [`StepPhase::ALL`] with its time summed over the steps.
    pub phases: Vec<(StepPhase, PhaseTime)>,
}

impl StepPhases {
    /// `d` (summed over the steps) in ms per step.
    pub fn ms(&self, d: Duration) -> f64 {
        d.as_secs_f64() * 1e3 / self.steps as f64
    }

    /// The whole step: the phases' sum.
    pub fn total(&self) -> PhaseTime {
        self.phases.iter().fold(PhaseTime::default(), |mut acc, (_, t)| {
            acc += *t;
            acc
        })
    }

    /// Samples/s of the steps with their waits.
    pub fn samples_per_s(&self) -> f64 {
        (self.steps * self.batch) as f64 / self.total().wall.as_secs_f64().max(1e-9)
    }
}

/// Where a training step's time goes: steps with the device waited for after each
/// [`StepPhase`] (at least 3, up to 20, for about `seconds`), each phase's wall time, the
/// calling thread's CPU time in it and the whole process's. The calling thread builds the
/// autodiff graph and hands every kernel to burn's GPU runtime, whose server thread
/// encodes and submits it: on a GPU a phase whose process CPU time is near its wall time
/// is bound by the host issuing kernels, not by the device running them (on the CPU and
/// on lavapipe the process's time includes the arithmetic itself). A skipped step stops
/// the measurement ([`BenchError::StepSkipped`]), so partial phases are never returned.
pub fn step_phases(
    trainer: &mut Trainer,
    examples: &[TrainExample],
    batch: usize,
    seconds: f64,
) -> Result<StepPhases, BenchError> {
    let batch = batch.max(1);
    let mut total = vec![PhaseTime::default(); StepPhase::ALL.len()];
    let clocks = || [thread_cpu_time(), process_cpu_time()];
    let (mut steps, start) = (0usize, Instant::now());
    while steps < 3 || (steps < 20 && start.elapsed().as_secs_f64() < seconds) {
        let lo = (steps * batch) % (examples.len() - batch + 1);
        let (mut since, mut cpu_since) = (Instant::now(), clocks());
        let outcome = trainer.try_step_probed(&examples[lo..lo + batch], LR, &mut |phase| {
            let (now, cpu) = (Instant::now(), clocks());
            let at = StepPhase::ALL.iter().position(|&p| p == phase).expect("a phase of ALL");
            let spent = |k: usize| match (cpu[k], cpu_since[k]) {
                (Some(a), Some(b)) => a.saturating_sub(b),
                _ => Duration::ZERO,
            };
            total[at] += PhaseTime { wall: now - since, thread: spent(0), process: spent(1) };
            (since, cpu_since) = (now, cpu);
        })?;
        if let StepOutcome::Skipped(why) = outcome {
            return Err(BenchError::StepSkipped(why));
        }
        steps += 1;
    }
    let have_clocks = clocks().iter().all(Option::is_some);
    let phases = StepPhase::ALL.iter().copied().zip(total).collect();
    Ok(StepPhases { steps, batch, have_clocks, phases })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn step_phases_sum_to_the_step() {
        let ms = Duration::from_millis;
        let phases =
            StepPhase::ALL.iter().map(|&p| (p, PhaseTime { wall: ms(10), thread: ms(4), process: ms(8) })).collect();
        let p = StepPhases { steps: 2, batch: 100, have_clocks: true, phases };
        let total = p.total();
        assert_eq!(total.wall, ms(10 * StepPhase::ALL.len() as u64));
        assert_eq!(total.thread, ms(4 * StepPhase::ALL.len() as u64));
        assert!((p.ms(total.wall) - 5.0 * StepPhase::ALL.len() as f64).abs() < 1e-9);
        // 200 samples in 40 ms.
        assert!((p.samples_per_s() - 200.0 / total.wall.as_secs_f64()).abs() < 1e-6);
    }

    #[test]
    fn examples_come_in_four_batches_with_every_target() {
        let examples = examples(4, 3);
        assert_eq!(examples.len(), 12);
        for e in &examples {
            assert!(!e.policy.is_empty() && e.policy.len() <= 8);
            assert_eq!(e.aux.ownership.as_ref().map(Vec::len), Some(16));
        }
    }
}
