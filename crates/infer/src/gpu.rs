//! The WGSL kernels for a network on a burn device (feature `wgpu`): the adapter that the
//! device runs on, and the kernels built from the folded network there.

use bredon_kernels::Arithmetic;
use bredon_kernels::wgsl::{WgslError, WgslNet, adapter_named, wgpu};
use bredon_nn::TakNet;
use burn::prelude::Device;

/// The wgpu adapter that burn's `device` runs on: the one of the same name (the first
/// such), else the adapter wgpu prefers for high performance (a model on the CPU).
pub fn adapter_for(device: &Device) -> Result<wgpu::Adapter, WgslError> {
    adapter_named(device.identity().map(|i| i.name).as_deref())
}

/// `model` for boards of `size` as WGSL kernels in `arithmetic`, on the adapter its device
/// is (or the preferred one when the model is on the CPU).
pub fn wgsl_for_model(model: &TakNet, size: usize, arithmetic: Arithmetic) -> Result<WgslNet, WgslError> {
    WgslNet::with_arithmetic(&model.fold(size), &adapter_for(&model.device())?, arithmetic)
}

/// [`WgslNet::for_search`] for `model` on the adapter its device is.
pub fn wgsl_for_search(
    model: &TakNet,
    size: usize,
    arithmetic: Arithmetic,
) -> Result<(WgslNet, Option<WgslError>), WgslError> {
    WgslNet::for_search(&model.fold(size), &adapter_for(&model.device())?, arithmetic)
}
