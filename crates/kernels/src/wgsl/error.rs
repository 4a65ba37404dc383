//! [`WgslError`], and finding the adapter to run on.

/// Why the WGSL forward pass cannot run.
#[derive(Debug, thiserror::Error)]
pub enum WgslError {
    /// No wgpu adapter.
    #[error("no wgpu adapter for the wgsl forward pass: {0}")]
    NoAdapter(String),
    /// The adapter would not open a device.
    #[error("the wgpu device for the wgsl forward pass did not open: {0}")]
    Device(String),
    /// The network is outside what the kernels run.
    #[error("the wgsl forward pass does not run this network: {0}")]
    Unsupported(String),
    /// The adapter does not run the asked-for [`Arithmetic`].
    #[error("the wgsl kernels' {arithmetic} arithmetic is not on this adapter: {why}")]
    NotOnAdapter {
        /// The arithmetic's name.
        arithmetic: &'static str,
        /// What the adapter lacks.
        why: String,
    },
    /// The trunk in an arithmetic other than single precision moved the network's
    /// priors or values by more than [`AGREEMENT_TOLERANCE`].
    #[error("the wgsl kernels' {arithmetic} arithmetic disagrees with single precision on this network: {why}")]
    Disagrees {
        /// The arithmetic's name.
        arithmetic: &'static str,
        /// How far apart they were.
        why: String,
    },
    /// The device failed while running or reading back a pass.
    #[error("the wgsl forward pass failed on the device: {0}")]
    Execution(String),
}

/// The wgpu adapter named `name` (the first such), else, or with no name, the adapter
/// wgpu prefers for high performance.
pub fn adapter_named(name: Option<&str>) -> Result<wgpu::Adapter, WgslError> {
    let instance = wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle_from_env());
    let adapters = pollster::block_on(instance.enumerate_adapters(wgpu::Backends::all()));
    if let Some(a) = adapters.iter().find(|a| Some(a.get_info().name.as_str()) == name) {
        return Ok(a.clone());
    }
    pollster::block_on(instance.request_adapter(&wgpu::RequestAdapterOptions {
        power_preference: wgpu::PowerPreference::HighPerformance,
        ..Default::default()
    }))
    .map_err(|e| WgslError::NoAdapter(e.to_string()))
}
