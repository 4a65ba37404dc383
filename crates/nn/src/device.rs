//! Where the network runs: the CPU (burn's flex backend and the fast path), or a GPU
//! through burn's `wgpu` or `cuda` backend when the crate is built with that feature.
//!
//! A [`DeviceChoice`] is parsed once (`--device`, `[device]` in a run config) and opened
//! with [`DeviceChoice::open`], which checks the backend is compiled in and the adapter
//! exists before anything is trained. The opened device and the search's forward pass
//! travel together as a `bredon_infer::Compute` value to whatever builds, trains or
//! evaluates a network: there is no process-wide device. Models are loaded on the CPU and
//! placed on the device by `Compute::place`. Checkpoints are the same bytes on every
//! device (a run started on the CPU resumes on a GPU and back).

use burn::prelude::Device;
use std::fmt;
use std::str::FromStr;

/// A device named by the user: `cpu`, `wgpu`, `wgpu:N`, `cuda` or `cuda:N`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum DeviceChoice {
    /// burn's pure-Rust CPU backend (flex), and the fast path for search.
    #[default]
    Cpu,
    /// A wgpu adapter (Vulkan, Metal, DirectX 12): the best one, or the N-th of
    /// `bredon devices`' list.
    Wgpu(Option<usize>),
    /// The CUDA device with this index.
    Cuda(usize),
}

/// Why a device could not be used.
#[derive(Debug, thiserror::Error)]
pub enum DeviceError {
    /// The text is not a device name.
    #[error("unknown device {0:?} (use cpu, wgpu, wgpu:N, cuda or cuda:N)")]
    Parse(String),
    /// The backend is not compiled into this binary.
    #[error(
        "this bredon was built without the `{feature}` feature, so it cannot use --device {choice}; rebuild with `cargo build --release -p bredon-cli --features {feature}`"
    )]
    NotCompiled {
        /// The device asked for.
        choice: DeviceChoice,
        /// The cargo feature that adds its backend.
        feature: &'static str,
    },
    /// The backend is there, but not the adapter asked for.
    #[error("no {choice} adapter: {detail}; adapters seen: {seen}")]
    NoAdapter {
        /// The device asked for.
        choice: DeviceChoice,
        /// What went wrong.
        detail: String,
        /// The adapters the backend found (or "none").
        seen: String,
    },
}

impl DeviceChoice {
    /// Whether this is the CPU.
    pub fn is_cpu(self) -> bool {
        self == DeviceChoice::Cpu
    }

    /// The burn device, after checking that its backend is compiled in and its adapter
    /// exists (a GPU device runs a small computation to prove it works).
    pub fn open(self) -> Result<Device, DeviceError> {
        match self {
            DeviceChoice::Cpu => Ok(Device::flex()),
            DeviceChoice::Wgpu(index) => open_wgpu(self, index),
            DeviceChoice::Cuda(index) => open_cuda(self, index),
        }
    }
}

impl fmt::Display for DeviceChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DeviceChoice::Cpu => f.write_str("cpu"),
            DeviceChoice::Wgpu(None) => f.write_str("wgpu"),
            DeviceChoice::Wgpu(Some(n)) => write!(f, "wgpu:{n}"),
            DeviceChoice::Cuda(n) => write!(f, "cuda:{n}"),
        }
    }
}

impl FromStr for DeviceChoice {
    type Err = DeviceError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim().to_ascii_lowercase();
        let (name, index) = match t.split_once(':') {
            Some((name, n)) => match n.parse::<usize>() {
                Ok(n) if n < 64 => (name, Some(n)),
                _ => return Err(DeviceError::Parse(s.to_string())),
            },
            None => (t.as_str(), None),
        };
        match (name, index) {
            ("cpu", None) => Ok(DeviceChoice::Cpu),
            ("wgpu", index) => Ok(DeviceChoice::Wgpu(index)),
            ("cuda", index) => Ok(DeviceChoice::Cuda(index.unwrap_or(0))),
            _ => Err(DeviceError::Parse(s.to_string())),
        }
    }
}

impl serde::Serialize for DeviceChoice {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for DeviceChoice {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// Whether this build runs burn's GPU backends with kernel fusion (the `wgpu-fusion`
/// feature: chains of tensor operations compiled into fewer kernels at run time).
pub const BURN_FUSION: bool = cfg!(feature = "wgpu-fusion");

/// The CPU device (burn's flex backend): where models are loaded and the fast path runs.
pub fn cpu() -> Device {
    Device::flex()
}

/// Whether `device` is the CPU (with or without autodiff).
pub fn is_cpu(device: &Device) -> bool {
    device.clone().without_autodiff() == Device::flex()
}

/// One line per adapter each compiled-in GPU backend sees, numbered as `wgpu:N` takes
/// them (empty in a CPU-only build).
pub fn list_adapters() -> Vec<String> {
    #[allow(unused_mut)]
    let mut lines = Vec::new();
    #[cfg(feature = "wgpu")]
    for (i, a) in wgpu_adapters().iter().enumerate() {
        lines.push(format!("wgpu:{i}  {}", describe(a)));
    }
    #[cfg(feature = "cuda")]
    lines.push("cuda:N  CUDA devices are opened by index (`--device cuda:0`)".to_string());
    lines
}

#[cfg(not(feature = "wgpu"))]
fn open_wgpu(choice: DeviceChoice, _index: Option<usize>) -> Result<Device, DeviceError> {
    Err(DeviceError::NotCompiled { choice, feature: "wgpu" })
}

#[cfg(not(feature = "cuda"))]
fn open_cuda(choice: DeviceChoice, _index: usize) -> Result<Device, DeviceError> {
    Err(DeviceError::NotCompiled { choice, feature: "cuda" })
}

#[cfg(feature = "cuda")]
fn open_cuda(choice: DeviceChoice, index: usize) -> Result<Device, DeviceError> {
    // CUDA initialisation failures surface as panics inside cubecl; turn them into an error.
    let device = Device::cuda(index);
    let probe = device.clone();
    std::panic::catch_unwind(move || smoke_test(&probe)).map_err(|e| DeviceError::NoAdapter {
        choice,
        detail: panic_text(&e),
        seen: "see nvidia-smi".into(),
    })?;
    Ok(device)
}

/// A tiny computation read back, so a broken device fails here and not mid-run.
#[cfg(any(feature = "wgpu", feature = "cuda"))]
fn smoke_test(device: &Device) {
    let t = burn::tensor::Tensor::<1>::from_floats([1.0, 2.0, 3.0], device);
    let sum: f32 = t.sum().into_scalar();
    assert!((sum - 6.0).abs() < 1e-5, "the device computed 1 + 2 + 3 = {sum}");
}

#[cfg(any(feature = "wgpu", feature = "cuda"))]
fn panic_text(e: &Box<dyn std::any::Any + Send>) -> String {
    e.downcast_ref::<String>()
        .cloned()
        .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "it failed to start".into())
}

#[cfg(feature = "wgpu")]
fn wgpu_adapters() -> Vec<burn::tensor::wgpu::wgpu::Adapter> {
    use burn::tensor::wgpu::wgpu;
    let instance = wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle_from_env());
    pollster::block_on(instance.enumerate_adapters(wgpu::Backends::all()))
}

#[cfg(feature = "wgpu")]
fn describe(a: &burn::tensor::wgpu::wgpu::Adapter) -> String {
    let info = a.get_info();
    format!("{} ({:?}, {:?}, driver {} {})", info.name, info.device_type, info.backend, info.driver, info.driver_info)
}

#[cfg(feature = "wgpu")]
fn open_wgpu(choice: DeviceChoice, index: Option<usize>) -> Result<Device, DeviceError> {
    use burn::tensor::DeviceKind;
    use burn::tensor::wgpu::wgpu::DeviceType;
    let adapters = wgpu_adapters();
    let seen = if adapters.is_empty() {
        "none (install a Vulkan driver, e.g. Debian's mesa-vulkan-drivers for the CPU's lavapipe)".to_string()
    } else {
        adapters.iter().enumerate().map(|(i, a)| format!("wgpu:{i} {}", describe(a))).collect::<Vec<_>>().join("; ")
    };
    let no = |detail: String| DeviceError::NoAdapter { choice, detail, seen: seen.clone() };
    let kind = match index {
        None if adapters.is_empty() => return Err(no("wgpu found no adapter".into())),
        None => DeviceKind::DefaultDevice,
        Some(n) => {
            let a = adapters.get(n).ok_or_else(|| no(format!("there are {} adapters", adapters.len())))?;
            let ty = a.get_info().device_type;
            // burn names an adapter by its type and its index among adapters of that type.
            let nth = adapters[..n].iter().filter(|b| b.get_info().device_type == ty).count();
            match ty {
                DeviceType::DiscreteGpu => DeviceKind::DiscreteGpu(nth),
                DeviceType::IntegratedGpu => DeviceKind::IntegratedGpu(nth),
                DeviceType::VirtualGpu => DeviceKind::VirtualGpu(nth),
                DeviceType::Cpu => DeviceKind::Cpu,
                DeviceType::Other => return Err(no(format!("adapter {n} is of an unknown type"))),
            }
        }
    };
    let device = Device::wgpu(kind);
    let probe = device.clone();
    std::panic::catch_unwind(move || smoke_test(&probe)).map_err(|e| no(panic_text(&e)))?;
    Ok(device)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_and_print_back() {
        for (text, choice) in [
            ("cpu", DeviceChoice::Cpu),
            ("wgpu", DeviceChoice::Wgpu(None)),
            ("wgpu:1", DeviceChoice::Wgpu(Some(1))),
            ("cuda", DeviceChoice::Cuda(0)),
            ("CUDA:2", DeviceChoice::Cuda(2)),
        ] {
            let parsed: DeviceChoice = text.parse().unwrap();
            assert_eq!(parsed, choice, "{text}");
            assert_eq!(parsed.to_string().parse::<DeviceChoice>().unwrap(), choice);
        }
        for bad in ["gpu", "cpu:0", "wgpu:", "wgpu:x", "cuda:-1", "wgpu:99999", ""] {
            let e = bad.parse::<DeviceChoice>().unwrap_err();
            assert!(matches!(e, DeviceError::Parse(_)), "{bad}: {e}");
            assert!(e.to_string().contains("use cpu, wgpu"), "{e}");
        }
    }

    #[test]
    fn a_backend_not_compiled_in_is_a_clear_error() {
        #[cfg(not(feature = "wgpu"))]
        {
            let e = DeviceChoice::Wgpu(None).open().unwrap_err().to_string();
            assert!(e.contains("without the `wgpu` feature") && e.contains("--features wgpu"), "{e}");
        }
        #[cfg(not(feature = "cuda"))]
        {
            let e = DeviceChoice::Cuda(0).open().unwrap_err().to_string();
            assert!(e.contains("without the `cuda` feature") && e.contains("--features cuda"), "{e}");
        }
        assert!(DeviceChoice::Cpu.open().is_ok());
    }

    #[test]
    fn config_text_round_trips() {
        #[derive(serde::Serialize, serde::Deserialize, PartialEq, Debug)]
        struct C {
            device: DeviceChoice,
        }
        let c: C = toml_like("wgpu:0");
        assert_eq!(c, C { device: DeviceChoice::Wgpu(Some(0)) });
        let e = serde_json::from_str::<C>(r#"{"device":"tpu"}"#).unwrap_err().to_string();
        assert!(e.contains("unknown device \"tpu\""), "{e}");
    }

    fn toml_like<T: serde::de::DeserializeOwned>(v: &str) -> T {
        serde_json::from_str(&format!(r#"{{"device":"{v}"}}"#)).unwrap()
    }
}
