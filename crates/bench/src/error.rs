//! [`BenchError`]: what can stop a benchmark.

/// What can stop a benchmark: the underlying crates' errors, passed on as they are, and a
/// few of the benchmarks' own.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// burn's device failed during a timed forward pass.
    #[error("the device failed: {0}")]
    Device(String),
    /// Comparing the network's heads across devices.
    #[error(transparent)]
    Heads(#[from] bredon_nn::HeadsError),
    /// The training step.
    #[error(transparent)]
    Train(#[from] bredon_nn::TrainError),
    /// A timed training step was skipped (non-finite losses or gradients): its phases
    /// would be partial.
    #[error("a timed training step was skipped: {0}")]
    StepSkipped(String),
    /// Self-play: the inference service or the games.
    #[error(transparent)]
    Run(#[from] bredon_selfplay::error::RunError),
    /// The temporary directory of the self-play benchmark's games.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// Bredon's WGSL kernels.
    #[cfg(feature = "wgpu")]
    #[error(transparent)]
    Wgsl(#[from] bredon_kernels::wgsl::WgslError),
}
