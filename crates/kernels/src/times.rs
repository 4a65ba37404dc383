//! [`PassTimes`]: one forward pass's time, phase by phase, for benchmarks.

use std::time::Duration;

/// Where the time of one forward pass goes, phase by phase (burn's path in
/// `bredon_infer::forward_timed`, the WGSL kernels in [`crate::wgsl::WgslNet::forward_timed`]).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PassTimes {
    /// Encoding the positions into input planes on the host.
    pub encode: Duration,
    /// Copying the input to the device, until it is there.
    pub upload: Duration,
    /// The network's kernels, from the first launch until the device is idle.
    pub kernels: Duration,
    /// Reading the policy (every logit, or the legal moves' priors) and the values back to
    /// the host (one read).
    pub readback: Duration,
    /// From the outputs read back to what the search uses: each position's policy over its
    /// legal moves (a masked softmax over its logits, or cutting the priors' rows) and its
    /// value.
    pub convert: Duration,
}

impl PassTimes {
    /// The whole pass.
    pub fn total(&self) -> Duration {
        self.encode + self.upload + self.kernels + self.readback + self.convert
    }

    /// Each phase divided by `n` (the mean of `n` passes).
    pub fn per(&self, n: u32) -> PassTimes {
        let n = n.max(1);
        PassTimes {
            encode: self.encode / n,
            upload: self.upload / n,
            kernels: self.kernels / n,
            readback: self.readback / n,
            convert: self.convert / n,
        }
    }
}

impl std::ops::AddAssign for PassTimes {
    fn add_assign(&mut self, o: PassTimes) {
        self.encode += o.encode;
        self.upload += o.upload;
        self.kernels += o.kernels;
        self.readback += o.readback;
        self.convert += o.convert;
    }
}
