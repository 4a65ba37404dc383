//! [`Compute`]: the opened device and the search's forward pass, chosen once and passed
//! to whatever loads, trains or evaluates a network (there is no process-wide device).

use bredon_nn::TakNet;
use bredon_nn::device::{DeviceChoice, DeviceError, cpu, is_cpu};
use burn::prelude::{Device, Module};

use crate::evaluator::NetEvaluator;
use crate::kind::InferenceKind;

/// Where networks run and which forward pass the search uses, chosen once (from
/// `--device` and `--inference`, or a run config's `[device]` and `[selfplay] inference`)
/// and passed to what loads, trains and evaluates networks.
#[derive(Clone, Debug)]
pub struct Compute {
    /// The device as the user named it.
    pub choice: DeviceChoice,
    /// The opened device.
    pub device: Device,
    /// The search's forward pass (`auto`: fast on the CPU, the WGSL kernels on a GPU).
    pub inference: InferenceKind,
}

impl Default for Compute {
    fn default() -> Self {
        Compute::cpu()
    }
}

impl Compute {
    /// The CPU, with the fast path for search.
    pub fn cpu() -> Compute {
        Compute { choice: DeviceChoice::Cpu, device: cpu(), inference: InferenceKind::AUTO }
    }

    /// Opens `choice` (see [`DeviceChoice::open`]) for networks run by `inference`.
    pub fn open(choice: DeviceChoice, inference: InferenceKind) -> Result<Compute, DeviceError> {
        Ok(Compute { choice, device: choice.open()?, inference })
    }

    /// The search's forward pass with `auto` made concrete for this device.
    pub fn search_path(&self) -> InferenceKind {
        self.inference.resolve_for(&self.device)
    }

    /// `model` (loaded on the CPU) moved to this device.
    pub fn place(&self, model: TakNet) -> TakNet {
        if is_cpu(&self.device) { model } else { model.to_device(&self.device) }
    }

    /// An evaluator for the search with `lanes` copies of `model` (one per search thread
    /// that may run a forward pass at once; see [`NetEvaluator::with_lanes`]).
    pub fn evaluator(&self, model: TakNet, size: usize, lanes: usize) -> NetEvaluator {
        NetEvaluator::with_lanes(self.place(model), size, self.inference, lanes)
    }

    /// An evaluator for a search on `cores` threads that uses that many cores: a copy of
    /// `model` per thread, each pass on one core ([`NetEvaluator::on_cores`]).
    pub fn evaluator_on_cores(&self, model: TakNet, size: usize, cores: usize) -> NetEvaluator {
        NetEvaluator::on_cores(self.place(model), size, self.inference, cores)
    }
}
