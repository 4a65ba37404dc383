//! Bredon's own forward pass for the search on a wgpu device (Vulkan, Metal, DirectX 12):
//! WGSL kernels over the folded weights ([`FoldedNet`]), the GPU twin of the CPU's fast
//! path ([`crate::fast`]). burn stays for training.
//!
//! A pass is one submission: the positions are encoded on the host in a compact form (a
//! `u32` per square and eight constants, [`crate::encoding::encode_compact`]: 176 bytes a
//! 6x6 position instead of 7,936 of planes) and uploaded with each position's legal moves;
//! a first kernel (`wgsl/expand.wgsl`) writes the input planes, channels-last on the
//! zero-padded board, from it on the device (the same floats as the host's planes, to the
//! bit); every layer runs as one matrix kernel (`wgsl/gemm.wgsl`: the stem, two 3x3
//! convolutions per residual block with the residual added in place, the 1x1 heads, the
//! policy's last layer and the value head's dense layer), with global pooling, value
//! pooling, the value head's last layer and the legal moves' softmax as small kernels of
//! their own; only the search's outputs come back (per position its value, draw
//! probability, flat margin and priors over its legal moves: a few hundred floats on 6x6,
//! not 9,180 logits). All activations stay on the device. Each [`WgslNet`] holds two sets
//! of buffers so that a batch can be launched while the previous one is still running
//! ([`WgslNet::launch`], [`Ticket::finish`]).
//!
//! The kernels run any network the fast path runs (dense or convolutional policy head,
//! pooled or dense value head, global pooling of up to 64 channels, boards up to 8x8).

use std::sync::{Mutex, MutexGuard};

use bredon_rules::{Move, Position};
use burn::tensor::wgpu::wgpu;
use rayon::prelude::*;

use crate::encoding::{COMPACT_CONSTANTS, compact_table, encode_compact, planes};
use crate::folded::{FoldedNet, Matrix};
pub use crate::inference::Arithmetic;
use crate::model::{TakNet, pool_size_scale};
use crate::policy::{move_to_index, policy_size};

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

impl Arithmetic {
    /// Whether `adapter` runs this arithmetic, and if not why not.
    pub fn check(self, adapter: &wgpu::Adapter) -> Result<(), WgslError> {
        let features = adapter.features();
        let missing = |what: &str| Err(WgslError::NotOnAdapter { arithmetic: self.name(), why: what.to_string() });
        if self != Arithmetic::F32 && !features.contains(wgpu::Features::SHADER_F16) {
            return missing("the adapter has no shader-f16");
        }
        if self == Arithmetic::Tensor {
            if !features.contains(wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX) {
                return missing("the adapter has no cooperative matrices");
            }
            let fits = adapter.cooperative_matrix_properties().iter().any(|c| {
                (c.m_size, c.n_size, c.k_size) == (16, 16, 16)
                    && c.ab_type == wgpu::CooperativeScalarType::F16
                    && c.cr_type == wgpu::CooperativeScalarType::F32
            });
            if !fits {
                return missing("the adapter has no 16x16x16 cooperative matrices of f16 with f32 sums");
            }
            let shared = adapter.limits().max_compute_workgroup_storage_size;
            if shared < COOP_WORKGROUP_BYTES {
                return missing(&format!(
                    "{shared} bytes of workgroup memory (the kernel needs {COOP_WORKGROUP_BYTES})"
                ));
            }
            let info = adapter.get_info();
            if (info.subgroup_min_size, info.subgroup_max_size) != (32, 32) {
                return missing(&format!(
                    "subgroups of {} to {} lanes (the kernel needs exactly 32)",
                    info.subgroup_min_size, info.subgroup_max_size
                ));
            }
        }
        Ok(())
    }

    /// The features a device needs for this arithmetic.
    fn features(self) -> wgpu::Features {
        match self {
            Arithmetic::F32 => wgpu::Features::empty(),
            Arithmetic::F16Pairs => wgpu::Features::SHADER_F16,
            Arithmetic::Tensor => wgpu::Features::SHADER_F16 | wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX,
        }
    }

    /// The trunk kernel's source and the output rows of its workgroup.
    fn trunk_kernel(self) -> (String, u32) {
        let shader = |operand: &str| {
            [
                operand,
                include_str!("wgsl/gemm_vec4.wgsl"),
                include_str!("wgsl/gemm_common.wgsl"),
                include_str!("wgsl/gemm.wgsl"),
            ]
            .concat()
        };
        match self {
            Arithmetic::F32 => (shader(include_str!("wgsl/operand_f32.wgsl")), TILE_M),
            Arithmetic::F16Pairs => (shader(include_str!("wgsl/operand_f16.wgsl")), TILE_M),
            Arithmetic::Tensor => (
                [
                    include_str!("wgsl/coop_enable.wgsl"),
                    include_str!("wgsl/gemm_vec4.wgsl"),
                    include_str!("wgsl/gemm_common.wgsl"),
                    include_str!("wgsl/gemm_coop.wgsl"),
                ]
                .concat(),
                COOP_TILE_M,
            ),
        }
    }
}

/// What one pass sends back per position.
#[derive(Clone, Debug, Default)]
pub struct WgslOutputs {
    /// Per position: its priors over its legal moves (in the order given), or with
    /// [`WgslNet::logits`] every policy logit in the order of [`crate::policy`].
    pub policy: Vec<Vec<f32>>,
    /// Values for the side to move.
    pub values: Vec<f32>,
    /// Draw probabilities (a network with a win/draw/loss head).
    pub draws: Option<Vec<f32>>,
    /// Expected final flat margins in flats (a network with the flat-margin head).
    pub margins: Option<Vec<f32>>,
}

/// The sizes of the network and board that the kernels and buffers follow.
#[derive(Clone, Copy, Debug)]
struct Shape {
    n: usize,
    area: usize,
    /// Pixels of the zero-padded board, `(n + 2)²`.
    padded: usize,
    planes: usize,
    input_version: u32,
    channels: usize,
    /// Policy features (first columns of the head layer) and value features (the rest).
    pf: usize,
    vf: usize,
    /// Logits per square of the convolutional policy head; `None` for the dense head.
    per_square: Option<usize>,
    policy: usize,
    hidden: usize,
    value_pool: bool,
    outs: usize,
    margin: bool,
}

impl Shape {
    fn heads(&self) -> usize {
        self.pf + self.vf
    }

    /// Floats of logits one position's policy layer writes.
    fn logits_block(&self) -> usize {
        match self.per_square {
            Some(k) => self.area * k,
            None => self.policy,
        }
    }

    /// Where policy index `i` sits in a position's block of logits.
    fn logit_offset(&self, i: usize) -> u32 {
        let at = match self.per_square {
            None => i,
            Some(k) => {
                let place = 3 * self.area;
                if i < place {
                    (i % self.area) * k + i / self.area
                } else {
                    let r = i - place;
                    (r / (k - 3)) * k + 3 + r % (k - 3)
                }
            }
        };
        at as u32
    }
}

/// Per-batch activation buffers (one set per batch in flight).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Act {
    /// Input planes on the padded board.
    X,
    /// The trunk's activations (padded board), and the block's middle.
    H,
    Y,
    /// The policy and value features of every square.
    Head,
    /// The policy layer's output.
    Logits,
    /// The pooled value features.
    VPool,
    /// The value head's hidden layer.
    Hid,
}

/// How the rows of a matrix kernel map to pixels.
#[derive(Clone, Copy, Debug)]
enum Rows {
    /// Row `i * area + s`: square `s` of position `i` on the padded board.
    Pix,
    /// Row `r`: pixel `r`.
    Ident,
    /// Row `i`: pixel `i * area` (the first square of position `i`).
    Pos,
}

/// One matrix kernel of the pass.
#[derive(Clone, Debug)]
struct GemmOp {
    matrix: usize,
    a: Act,
    a_rows: Rows,
    a_stride: u32,
    a_col: u32,
    seg: u32,
    taps: Vec<i32>,
    out: Act,
    out_rows: Rows,
    out_stride: u32,
    residual: bool,
    relu: bool,
    /// Rows per position (`m = b * this`).
    rows_per_position: u32,
}

/// The kernels of a pass, in order.
#[derive(Clone, Debug)]
enum Op {
    /// The input planes from the positions' compact form.
    Expand,
    Gemm(GemmOp),
    /// Global pooling of block `.0` on `Y`.
    Gpool(usize),
    VPool,
    Value,
    Gather,
}

struct Pipelines {
    /// The matrix kernel with scalar operand loads, and with vector loads
    /// ([`Pipelines::gemm_for`]).
    gemm: wgpu::ComputePipeline,
    gemm4: wgpu::ComputePipeline,
    /// Output rows of a `gemm4` workgroup (128, or 32 on cooperative matrices).
    gemm4_rows: u32,
    expand: wgpu::ComputePipeline,
    gpool: wgpu::ComputePipeline,
    vpool: wgpu::ComputePipeline,
    value: wgpu::ComputePipeline,
    gather: wgpu::ComputePipeline,
}

impl Pipelines {
    /// The matrix kernel for `g` with `n` columns and the output rows of its workgroup:
    /// vector loads (and the network's [`Arithmetic`]) when its K segment, input stride and
    /// column, and column count are all multiples of 4 (the trunk's layers).
    fn gemm_for(&self, g: &GemmOp, n: u32) -> (&wgpu::ComputePipeline, u32) {
        if [g.seg, g.a_stride, g.a_col, n].iter().all(|x| x % 4 == 0) {
            (&self.gemm4, self.gemm4_rows)
        } else {
            (&self.gemm, TILE_M)
        }
    }
}

/// A matrix's weights and biases on the device.
struct DeviceMatrix {
    w: wgpu::Buffer,
    bias: wgpu::Buffer,
    n: u32,
}

/// Size of the uniform parameters of one kernel, a multiple of every adapter's offset
/// alignment (256).
const PARAM_SLOT: u64 = 512;
/// Threads per workgroup of the small kernels, and rows x columns of a matrix kernel's
/// workgroup (as in the WGSL sources).
const SMALL_GROUP: u32 = 64;
const TILE_M: u32 = 128;
const TILE_N: u32 = 64;
/// The matrix kernel with scalar operand loads, for the layers the trunk kernel does not
/// take (always single precision).
const SCALAR_KERNEL: &str = concat!(
    include_str!("wgsl/operand_f32.wgsl"),
    include_str!("wgsl/gemm_scalar.wgsl"),
    include_str!("wgsl/gemm_common.wgsl"),
    include_str!("wgsl/gemm.wgsl")
);
/// Output rows of a workgroup of the cooperative-matrix kernel (`wgsl/gemm_coop.wgsl`).
const COOP_TILE_M: u32 = 32;
/// Its workgroup memory: the pairs of half-precision tiles of A (32 x 32) and B (32 x 64),
/// and the 32 x 64 single-precision block of results.
const COOP_WORKGROUP_BYTES: u32 = 2 * 2 * (32 * 32 + 32 * 64) + 4 * 32 * 64;
/// How far apart two arithmetics' priors and values may be for
/// [`WgslNet::agrees_with`]: the bound every output of the kernels is held to.
pub const AGREEMENT_TOLERANCE: f32 = 1e-3;

/// Positions [`WgslNet::for_search`] compares the two arithmetics on.
pub const SEARCH_CHECK_POSITIONS: usize = 64;
/// Most taps of a matrix kernel (`array<vec4<i32>, 16>`), so boards up to 8x8.
const MAX_TAPS: usize = 64;
/// Most channels global pooling reads (`pooled: array<f32, 192>`).
const MAX_POOLED: usize = 64;

/// One set of per-batch buffers, bind groups and the host's input staging.
struct Set {
    positions: usize,
    moves: usize,
    acts: Vec<(Act, wgpu::Buffer)>,
    pix: wgpu::Buffer,
    ident: wgpu::Buffer,
    pos: wgpu::Buffer,
    /// The positions' compact form: a `u32` per square, the constants of each.
    squares: wgpu::Buffer,
    per_position: wgpu::Buffer,
    offs: wgpu::Buffer,
    idx: wgpu::Buffer,
    out: wgpu::Buffer,
    staging: wgpu::Buffer,
    params: wgpu::Buffer,
    groups: Vec<wgpu::BindGroup>,
    host_squares: Vec<u32>,
    host_per_position: Vec<f32>,
}

impl Set {
    fn act(&self, a: Act) -> &wgpu::Buffer {
        &self.acts.iter().find(|(k, _)| *k == a).expect("every activation has a buffer").1
    }
}

/// The network on a wgpu device, run by Bredon's WGSL kernels.
pub struct WgslNet {
    device: wgpu::Device,
    queue: wgpu::Queue,
    adapter: String,
    arithmetic: Arithmetic,
    shape: Shape,
    pipelines: Pipelines,
    matrices: Vec<DeviceMatrix>,
    /// Per block with global pooling: its dense layer, pooled channels.
    gpool: Vec<Option<(wgpu::Buffer, wgpu::Buffer, u32)>>,
    /// The value head's last layer, the margin weights (a dummy without the head), the
    /// margin bias.
    value_w: wgpu::Buffer,
    value_b: wgpu::Buffer,
    margin_w: wgpu::Buffer,
    margin_bias: f32,
    pool_scale: f32,
    ops: Vec<Op>,
    sets: [Mutex<Option<Set>>; 2],
    next: std::sync::atomic::AtomicUsize,
}

/// A launched pass whose outputs have not been read yet ([`WgslNet::launch`]).
pub struct Ticket<'a> {
    net: &'a WgslNet,
    set: MutexGuard<'a, Option<Set>>,
    submission: wgpu::SubmissionIndex,
    lens: Vec<usize>,
    total: usize,
    encoded: std::time::Duration,
    /// Read back (by [`Ticket::finish`]); a ticket dropped unread waits for its pass and
    /// unmaps its staging buffer, so that its set of buffers can run the next pass.
    read: bool,
}

impl Drop for Ticket<'_> {
    fn drop(&mut self) {
        if !self.read {
            let _ = self.net.wait(self.submission.clone());
            if let Some(set) = self.set.as_mut() {
                set.staging.unmap();
            }
        }
    }
}

fn storage(device: &wgpu::Device, label: &str, floats: usize, extra: wgpu::BufferUsages) -> wgpu::Buffer {
    device.create_buffer(&wgpu::BufferDescriptor {
        label: Some(label),
        size: (floats.max(1) * 4) as u64,
        usage: wgpu::BufferUsages::STORAGE | extra,
        mapped_at_creation: false,
    })
}

/// A storage buffer holding `data` (floats or indices: 4 bytes each).
fn upload<T: bytemuck::Pod>(device: &wgpu::Device, queue: &wgpu::Queue, label: &str, data: &[T]) -> wgpu::Buffer {
    let b = storage(device, label, data.len(), wgpu::BufferUsages::COPY_DST);
    if !data.is_empty() {
        queue.write_buffer(&b, 0, bytemuck::cast_slice(data));
    }
    b
}

/// The wgpu adapter that burn's `device` runs on: the one of the same name (the first
/// such), else the adapter wgpu prefers for high performance.
fn adapter_for(device: &burn::prelude::Device) -> Result<wgpu::Adapter, WgslError> {
    let instance = wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle_from_env());
    let adapters = pollster::block_on(instance.enumerate_adapters(wgpu::Backends::all()));
    let name = device.identity().map(|i| i.name);
    if let Some(a) = adapters.iter().find(|a| Some(&a.get_info().name) == name.as_ref()) {
        return Ok(a.clone());
    }
    pollster::block_on(instance.request_adapter(&wgpu::RequestAdapterOptions {
        power_preference: wgpu::PowerPreference::HighPerformance,
        ..Default::default()
    }))
    .map_err(|e| WgslError::NoAdapter(e.to_string()))
}

impl WgslNet {
    /// `model` for boards of `size` on the wgpu adapter its device is (or the preferred
    /// one when the model is on the CPU).
    pub fn for_model(model: &TakNet, size: usize) -> Result<WgslNet, WgslError> {
        WgslNet::for_model_with(model, size, Arithmetic::DEFAULT)
    }

    /// [`WgslNet::for_model`] with the trunk in `arithmetic`.
    pub fn for_model_with(model: &TakNet, size: usize, arithmetic: Arithmetic) -> Result<WgslNet, WgslError> {
        let adapter = adapter_for(&model.device())?;
        WgslNet::with_arithmetic(&FoldedNet::from_model(model, size), &adapter, arithmetic)
    }

    /// [`WgslNet::for_model_with`] for a search: in an arithmetic other than single
    /// precision, the network's priors and values on [`SEARCH_CHECK_POSITIONS`] positions
    /// of random games must first agree with single precision's within
    /// [`AGREEMENT_TOLERANCE`] on the same adapter ([`WgslNet::agrees_with`]): a device
    /// whose matrix units round differently from what the kernels assume (or a network
    /// whose weights magnify the operands' rounding) never plays with wrong priors
    /// unnoticed. Where the adapter lacks the arithmetic ([`WgslError::NotOnAdapter`]) or
    /// it disagrees ([`WgslError::Disagrees`]), the answer is the single-precision
    /// kernels (built once, for the check and for the fallback) with that error as the
    /// reason; an error only where the kernels cannot run at all.
    pub fn for_search(
        model: &TakNet,
        size: usize,
        arithmetic: Arithmetic,
    ) -> Result<(WgslNet, Option<WgslError>), WgslError> {
        let reference = WgslNet::for_model_with(model, size, Arithmetic::F32)?;
        if arithmetic == Arithmetic::F32 {
            return Ok((reference, None));
        }
        let why = match WgslNet::for_model_with(model, size, arithmetic) {
            Ok(net) => {
                let positions = crate::positions::random_positions(size, SEARCH_CHECK_POSITIONS, 0x5eed);
                let positions: Vec<&Position> = positions.iter().collect();
                match net.agrees_with(&reference, &positions) {
                    Ok(()) => return Ok((net, None)),
                    Err(why) => WgslError::Disagrees { arithmetic: arithmetic.name(), why },
                }
            }
            Err(e @ WgslError::NotOnAdapter { .. }) => e,
            Err(e) => return Err(e),
        };
        Ok((reference, Some(why)))
    }

    /// The folded network `net` on `adapter`, in [`Arithmetic::DEFAULT`].
    pub fn new(net: &FoldedNet, adapter: &wgpu::Adapter) -> Result<WgslNet, WgslError> {
        WgslNet::with_arithmetic(net, adapter, Arithmetic::DEFAULT)
    }

    /// Whether this net's priors and values on `positions` are those of `reference` (the
    /// same weights in another arithmetic) within [`AGREEMENT_TOLERANCE`].
    pub fn agrees_with(&self, reference: &WgslNet, positions: &[&Position]) -> Result<(), String> {
        let legal: Vec<Vec<Move>> = positions.iter().map(|p| p.legal_moves()).collect();
        let legal: Vec<&[Move]> = legal.iter().map(|m| m.as_slice()).collect();
        let (a, b) = (
            self.evaluate(positions, &legal).map_err(|e| e.to_string())?,
            reference.evaluate(positions, &legal).map_err(|e| e.to_string())?,
        );
        let worst = |x: &[f32], y: &[f32]| x.iter().zip(y).map(|(p, q)| (p - q).abs()).fold(0.0f32, f32::max);
        let values = worst(&a.values, &b.values);
        let priors = a.policy.iter().zip(&b.policy).map(|(x, y)| worst(x, y)).fold(0.0f32, f32::max);
        if values.is_finite() && priors.is_finite() && values <= AGREEMENT_TOLERANCE && priors <= AGREEMENT_TOLERANCE {
            Ok(())
        } else {
            Err(format!("values {values} and priors {priors} from the {} kernels'", reference.arithmetic.name()))
        }
    }

    /// The arithmetic of the trunk's kernels.
    pub fn arithmetic(&self) -> Arithmetic {
        self.arithmetic
    }

    /// The folded network `net` on `adapter`, its trunk in `arithmetic` (an error where
    /// the adapter does not run it).
    pub fn with_arithmetic(
        net: &FoldedNet,
        adapter: &wgpu::Adapter,
        arithmetic: Arithmetic,
    ) -> Result<WgslNet, WgslError> {
        arithmetic.check(adapter)?;
        WgslNet::with_trunk_kernel(net, adapter, arithmetic, arithmetic.trunk_kernel())
    }

    /// [`WgslNet::with_arithmetic`] with the trunk's kernel given as its source and the
    /// output rows of its workgroup (the tests run the cooperative-matrix kernel with its
    /// matrix operations emulated), on a device with `arithmetic`'s features.
    fn with_trunk_kernel(
        net: &FoldedNet,
        adapter: &wgpu::Adapter,
        arithmetic: Arithmetic,
        trunk: (String, u32),
    ) -> Result<WgslNet, WgslError> {
        let c = &net.config;
        let n = net.size();
        let area = n * n;
        let shape = Shape {
            n,
            area,
            padded: (n + 2) * (n + 2),
            planes: planes(c.input_version),
            input_version: c.input_version,
            channels: c.channels,
            pf: net.policy_conv.cout,
            vf: net.value_conv.cout,
            per_square: net.policy_out.as_ref().map(|o| o.cout),
            policy: policy_size(n),
            hidden: net.value_fc1.dout,
            value_pool: net.value_pool(),
            outs: net.value_fc2.dout,
            margin: net.margin_fc.is_some(),
        };
        if area > MAX_TAPS {
            return Err(WgslError::Unsupported(format!("{n}x{n} boards (at most 8x8)")));
        }
        // The gather kernel reads the moves' offsets as 16 bits (65,472 logits on 8x8).
        if shape.logits_block() > 1 << 16 {
            return Err(WgslError::Unsupported(format!("{} logits a position", shape.logits_block())));
        }
        if let Some(g) = net.gpool.iter().flatten().map(|l| l.din / 3).max()
            && g > MAX_POOLED
        {
            return Err(WgslError::Unsupported(format!("global pooling of {g} channels (at most {MAX_POOLED})")));
        }
        if !matches!(shape.outs, 1 | 3) {
            return Err(WgslError::Unsupported(format!("{} value outputs", shape.outs)));
        }
        let info = adapter.get_info();
        let required_features = arithmetic.features();
        let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
            label: Some("bredon wgsl"),
            required_features,
            required_limits: adapter.limits(),
            // SAFETY: cooperative matrices are one of wgpu's experimental features, asked for
            // only where the adapter reports them (`Arithmetic::check`) and only when the
            // caller asks for the tensor kernel, which `auto` does not choose until a real
            // GPU has measured it against single precision (`bench nn --arithmetic tensor
            // --compare-cpu`, docs/gpu.md).
            experimental_features: if required_features.contains(wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX) {
                unsafe { wgpu::ExperimentalFeatures::enabled() }
            } else {
                wgpu::ExperimentalFeatures::disabled()
            },
            ..Default::default()
        }))
        .map_err(|e| WgslError::Device(e.to_string()))?;
        let pipeline = |label: &str, source: &str| {
            let module = {
                let desc = wgpu::ShaderModuleDescriptor {
                    label: Some(label),
                    source: wgpu::ShaderSource::Wgsl(source.into()),
                };
                // SAFETY: without naga's runtime checks (an index clamp on every array access
                // and a counter in every loop: a tenth or more of the inner loop's work). Every
                // index of these kernels is bounded by construction: rows and columns are
                // compared with the pass's `m` and `n` before use, the tiles' indices are
                // bounded by the workgroup's size, each row index points into a buffer sized for
                // the set's positions, moves and policy offsets are built by the host from the
                // same counts as the buffers (`make_set`, checked against the device's limits),
                // and every loop's bound is a uniform parameter. The tests compare every output
                // with the CPU's.
                unsafe { device.create_shader_module_trusted(desc, wgpu::ShaderRuntimeChecks::unchecked()) }
            };
            device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                label: Some(label),
                layout: None,
                module: &module,
                entry_point: Some("main"),
                compilation_options: Default::default(),
                cache: None,
            })
        };
        let pipelines = Pipelines {
            gemm: pipeline("gemm", SCALAR_KERNEL),
            gemm4: pipeline("gemm4", &trunk.0),
            gemm4_rows: trunk.1,
            expand: pipeline("expand", include_str!("wgsl/expand.wgsl")),
            gpool: pipeline("gpool", include_str!("wgsl/gpool.wgsl")),
            vpool: pipeline("vpool", include_str!("wgsl/vpool.wgsl")),
            value: pipeline("value", include_str!("wgsl/value.wgsl")),
            gather: pipeline("gather", include_str!("wgsl/gather.wgsl")),
        };
        let mut matrices = Vec::new();
        let mut add = |m: Matrix| {
            matrices.push(DeviceMatrix {
                w: upload(&device, &queue, "weights", &m.w),
                bias: upload(&device, &queue, "bias", &m.bias),
                n: m.n as u32,
            });
            matrices.len() - 1
        };
        let side = (n + 2) as i32;
        let taps3: Vec<i32> = (0..9).map(|t| (t / 3 - 1) * side + (t % 3 - 1)).collect();
        let squares: Vec<i32> = (0..area as i32).collect();
        let (ch, pl) = (shape.channels as u32, shape.planes as u32);
        let heads = shape.heads() as u32;
        let area32 = area as u32;
        let conv = |matrix, a, out, seg, residual| GemmOp {
            matrix,
            a,
            a_rows: Rows::Pix,
            a_stride: seg,
            a_col: 0,
            seg,
            taps: taps3.clone(),
            out,
            out_rows: Rows::Pix,
            out_stride: ch,
            residual,
            relu: true,
            rows_per_position: area32,
        };
        let mut ops = vec![Op::Expand, Op::Gemm(conv(add(Matrix::conv3(&net.stem)), Act::X, Act::H, pl, false))];
        for (i, (c1, c2)) in net.blocks.iter().enumerate() {
            ops.push(Op::Gemm(conv(add(Matrix::conv3(c1)), Act::H, Act::Y, ch, false)));
            if net.gpool[i].is_some() {
                ops.push(Op::Gpool(i));
            }
            ops.push(Op::Gemm(conv(add(Matrix::conv3(c2)), Act::Y, Act::H, ch, true)));
        }
        ops.push(Op::Gemm(GemmOp {
            matrix: add(net.head_matrix()),
            taps: vec![0],
            out: Act::Head,
            out_rows: Rows::Ident,
            out_stride: heads,
            ..conv(0, Act::H, Act::Head, ch, false)
        }));
        let policy = add(net.policy_matrix());
        ops.push(Op::Gemm(match shape.per_square {
            // Per square: its policy features to its logits.
            Some(k) => GemmOp {
                matrix: policy,
                a: Act::Head,
                a_rows: Rows::Ident,
                a_stride: heads,
                a_col: 0,
                seg: shape.pf as u32,
                taps: vec![0],
                out: Act::Logits,
                out_rows: Rows::Ident,
                out_stride: k as u32,
                residual: false,
                relu: false,
                rows_per_position: area32,
            },
            // Per position: every square's policy features (one tap per square).
            None => GemmOp {
                matrix: policy,
                a: Act::Head,
                a_rows: Rows::Pos,
                a_stride: heads,
                a_col: 0,
                seg: shape.pf as u32,
                taps: squares.clone(),
                out: Act::Logits,
                out_rows: Rows::Ident,
                out_stride: shape.policy as u32,
                residual: false,
                relu: false,
                rows_per_position: 1,
            },
        }));
        let fc1 = add(net.value_fc1_matrix());
        if shape.value_pool {
            ops.push(Op::VPool);
        }
        ops.push(Op::Gemm(GemmOp {
            matrix: fc1,
            a: if shape.value_pool { Act::VPool } else { Act::Head },
            a_rows: if shape.value_pool { Rows::Ident } else { Rows::Pos },
            a_stride: if shape.value_pool { 3 * shape.vf as u32 } else { heads },
            a_col: if shape.value_pool { 0 } else { shape.pf as u32 },
            seg: if shape.value_pool { 3 * shape.vf as u32 } else { shape.vf as u32 },
            taps: if shape.value_pool { vec![0] } else { squares.clone() },
            out: Act::Hid,
            out_rows: Rows::Ident,
            out_stride: shape.hidden as u32,
            residual: false,
            relu: true,
            rows_per_position: 1,
        }));
        ops.push(Op::Value);
        ops.push(Op::Gather);
        let gpool = net
            .gpool
            .iter()
            .map(|l| {
                l.as_ref().map(|l| {
                    let (w, bias) =
                        (upload(&device, &queue, "gpool", &l.weight), upload(&device, &queue, "gpool bias", &l.bias));
                    (w, bias, (l.din / 3) as u32)
                })
            })
            .collect();
        let (margin_w, margin_bias) = match &net.margin_fc {
            Some(l) => (upload(&device, &queue, "margin", &l.weight), l.bias[0]),
            None => (upload(&device, &queue, "margin", &[0.0f32]), 0.0),
        };
        Ok(WgslNet {
            value_w: upload(&device, &queue, "value", &net.value_fc2.weight),
            value_b: upload(&device, &queue, "value bias", &net.value_fc2.bias),
            margin_w,
            margin_bias,
            pool_scale: pool_size_scale(n),
            adapter: format!("{} ({:?})", info.name, info.backend),
            arithmetic,
            device,
            queue,
            shape,
            pipelines,
            matrices,
            gpool,
            ops,
            sets: [Mutex::new(None), Mutex::new(None)],
            next: std::sync::atomic::AtomicUsize::new(0),
        })
    }

    /// Floats one buffer may hold on this device (the smaller of its largest buffer and its
    /// largest storage binding).
    fn binding_floats(&self) -> usize {
        let l = self.device.limits();
        let bytes = l.max_storage_buffer_binding_size.min(l.max_buffer_size);
        usize::try_from(bytes / 4).unwrap_or(usize::MAX)
    }

    /// The most positions one pass takes: what the largest per-position buffer allows on
    /// this device, and at most 65,535 (one workgroup per position in a dispatch).
    pub fn max_batch(&self) -> usize {
        let s = self.shape;
        let per =
            [s.padded * s.planes, s.padded * s.channels, s.area * s.heads(), s.logits_block(), 3 * s.vf, s.hidden]
                .into_iter()
                .max()
                .unwrap_or(1);
        (self.binding_floats() / per).clamp(1, 65_535)
    }

    /// The adapter the kernels run on.
    pub fn adapter(&self) -> &str {
        &self.adapter
    }

    /// Board size.
    pub fn size(&self) -> usize {
        self.shape.n
    }

    /// Whether the network has a win/draw/loss value head.
    pub fn has_wdl(&self) -> bool {
        self.shape.outs == 3
    }

    /// Whether the network has the flat-margin head.
    pub fn has_margin(&self) -> bool {
        self.shape.margin
    }

    /// One pass: each position's priors over its `legal` moves, value, draw and margin.
    pub fn evaluate(&self, positions: &[&Position], legal: &[&[Move]]) -> Result<WgslOutputs, WgslError> {
        self.launch(positions, Some(legal))?.finish()
    }

    /// One pass reading back every policy logit (for comparisons and benchmarks; the
    /// search uses [`WgslNet::evaluate`]).
    pub fn logits(&self, positions: &[&Position]) -> Result<WgslOutputs, WgslError> {
        self.launch(positions, None)?.finish()
    }

    /// Encodes, uploads and launches a pass without waiting for it: the priors over
    /// `legal` (or every logit with `None`). At most two passes are in flight; a third
    /// waits until one of them is finished.
    pub fn launch(&self, positions: &[&Position], legal: Option<&[&[Move]]>) -> Result<Ticket<'_>, WgslError> {
        self.launch_timed(positions, legal, None)
    }

    /// One pass as the search uses it, phase by phase like
    /// [`crate::inference::forward_timed`]: encoding on the host, the upload, the kernels,
    /// the read back and the conversion, the device waited for after each (so each
    /// phase's time is its own). For benchmarks (`bredon bench nn`), not for search.
    pub fn evaluate_timed(
        &self,
        positions: &[&Position],
        legal: &[&[Move]],
    ) -> Result<(WgslOutputs, crate::inference::PassTimes), WgslError> {
        let mut t = crate::inference::PassTimes::default();
        let ticket = self.launch_timed(positions, Some(legal), Some(&mut t))?;
        let out = ticket.finish_timed(Some(&mut t))?;
        Ok((out, t))
    }

    fn wait(&self, submission: wgpu::SubmissionIndex) -> Result<(), WgslError> {
        self.device
            .poll(wgpu::PollType::Wait { submission_index: Some(submission), timeout: None })
            .map(|_| ())
            .map_err(|e| WgslError::Execution(e.to_string()))
    }

    fn launch_timed(
        &self,
        positions: &[&Position],
        legal: Option<&[&[Move]]>,
        mut times: Option<&mut crate::inference::PassTimes>,
    ) -> Result<Ticket<'_>, WgslError> {
        let clock = std::time::Instant::now();
        let s = self.shape;
        let b = positions.len();
        if let Some(legal) = legal {
            assert_eq!(legal.len(), b, "legal moves for every position");
        }
        for pos in positions {
            assert_eq!(pos.size(), s.n, "a {0}x{0} position for a {1}x{1} network", pos.size(), s.n);
        }
        if b > self.max_batch() {
            return Err(WgslError::Unsupported(format!(
                "a batch of {b} positions (this adapter's buffers hold at most {})",
                self.max_batch()
            )));
        }
        // The moves of each position as offsets into its block of logits (in parallel:
        // on 6x6 a batch of 1,536 positions has hundreds of thousands of moves).
        let lens: Vec<usize> = match legal {
            Some(legal) => legal.iter().map(|m| m.len()).collect(),
            None => vec![s.policy; b],
        };
        // Two to a word on the device (a block of logits fits in 16 bits: checked at start),
        // padded to whole words.
        let mut idx: Vec<u16> = match legal {
            Some(legal) => legal
                .par_iter()
                .flat_map_iter(|moves| moves.iter().map(|&m| s.logit_offset(move_to_index(m, s.n)) as u16))
                .collect(),
            None => (0..b).flat_map(|_| (0..s.policy).map(|k| s.logit_offset(k) as u16)).collect(),
        };
        let offs: Vec<u32> = std::iter::once(0)
            .chain(lens.iter().scan(0u32, |at, &n| {
                *at += n as u32;
                Some(*at)
            }))
            .collect();
        let total = idx.len();
        idx.resize(total.next_multiple_of(2), 0);
        let k = self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed) % 2;
        let mut guard = self.sets[k].lock().unwrap_or_else(|e| e.into_inner());
        if guard.as_ref().is_none_or(|set| set.positions < b || set.moves < total) {
            let (have_b, have_m) = guard.as_ref().map_or((0, 0), |set| (set.positions, set.moves));
            let positions = b.max(have_b).max(64).next_power_of_two().min(self.max_batch());
            let most = self.binding_floats();
            if total > most {
                return Err(WgslError::Unsupported(format!(
                    "{total} moves in one pass (this adapter's buffers hold at most {most})"
                )));
            }
            let moves = total.max(have_m).max(positions * 64).next_power_of_two().min(most);
            *guard = Some(self.make_set(positions, moves));
        }
        let set = guard.as_mut().expect("a set of buffers");
        // The positions' compact form (the expansion kernel writes the planes from it).
        set.host_squares[..b * s.area]
            .par_chunks_mut(s.area)
            .zip(set.host_per_position[..b * COMPACT_CONSTANTS].par_chunks_mut(COMPACT_CONSTANTS))
            .zip(positions.par_iter())
            .for_each(|((squares, constants), pos)| encode_compact(pos, s.input_version, squares, constants));
        let encoded = clock.elapsed();
        if let Some(t) = times.as_deref_mut() {
            t.encode = encoded;
        }
        let clock = std::time::Instant::now();
        self.queue.write_buffer(&set.squares, 0, bytemuck::cast_slice(&set.host_squares[..b * s.area]));
        self.queue.write_buffer(
            &set.per_position,
            0,
            bytemuck::cast_slice(&set.host_per_position[..b * COMPACT_CONSTANTS]),
        );
        self.queue.write_buffer(&set.offs, 0, bytemuck::cast_slice(&offs));
        if total > 0 {
            self.queue.write_buffer(&set.idx, 0, bytemuck::cast_slice(&idx));
        }
        self.queue.write_buffer(&set.params, 0, &self.params(b, legal.is_some()));
        if let Some(t) = times.as_deref_mut() {
            self.wait(self.queue.submit([]))?;
            t.upload = clock.elapsed();
        }
        let clock = std::time::Instant::now();
        let mut encoder = self.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("pass") });
        {
            let mut pass = encoder
                .begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some("forward"), timestamp_writes: None });
            for (op, group) in self.ops.iter().zip(&set.groups) {
                let (pipeline, groups) = match op {
                    Op::Expand => (&self.pipelines.expand, (b as u32, 1)),
                    Op::Gemm(g) => {
                        let m = b as u32 * g.rows_per_position;
                        let n = self.matrices[g.matrix].n;
                        let (pipeline, rows) = self.pipelines.gemm_for(g, n);
                        (pipeline, (m.div_ceil(rows), n.div_ceil(TILE_N)))
                    }
                    Op::Gpool(_) => (&self.pipelines.gpool, (b as u32, 1)),
                    Op::VPool => (&self.pipelines.vpool, (b as u32, 1)),
                    Op::Value => (&self.pipelines.value, ((b as u32).div_ceil(SMALL_GROUP), 1)),
                    Op::Gather => (&self.pipelines.gather, (b as u32, 1)),
                };
                if groups.0 == 0 {
                    continue;
                }
                pass.set_pipeline(pipeline);
                pass.set_bind_group(0, group, &[]);
                pass.dispatch_workgroups(groups.0, groups.1, 1);
            }
        }
        if let Some(t) = times {
            self.wait(self.queue.submit([encoder.finish()]))?;
            t.kernels = clock.elapsed();
            encoder = self.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("read") });
        }
        // At least one float: an empty batch still maps something.
        let bytes = ((3 * b + total).max(1) * 4) as u64;
        encoder.copy_buffer_to_buffer(&set.out, 0, &set.staging, 0, bytes);
        let submission = self.queue.submit([encoder.finish()]);
        set.staging.slice(..bytes).map_async(wgpu::MapMode::Read, |_| {});
        Ok(Ticket { net: self, set: guard, submission, lens, total, encoded, read: false })
    }

    /// The uniform parameters of every kernel for a batch of `b`.
    fn params(&self, b: usize, softmax: bool) -> Vec<u8> {
        let s = self.shape;
        let mut bytes = vec![0u8; self.ops.len() * PARAM_SLOT as usize];
        for (i, op) in self.ops.iter().enumerate() {
            let mut words: Vec<u32> = match op {
                Op::Expand => [s.n as u32, s.planes as u32, 0, 0]
                    .into_iter()
                    .chain(compact_table(s.n).map(f32::to_bits))
                    .collect(),
                Op::Gemm(g) => {
                    let flags = u32::from(g.residual) | (u32::from(g.relu) << 1);
                    let mut w = vec![
                        b as u32 * g.rows_per_position,
                        self.matrices[g.matrix].n,
                        g.seg,
                        g.taps.len() as u32,
                        g.a_stride,
                        g.out_stride,
                        g.a_col,
                        flags,
                    ];
                    w.extend(g.taps.iter().map(|&t| t as u32));
                    w
                }
                Op::Gpool(block) => {
                    let g = self.gpool[*block].as_ref().map_or(0, |p| p.2);
                    vec![s.channels as u32, g, s.area as u32, self.pool_scale.to_bits()]
                }
                Op::VPool => {
                    vec![s.heads() as u32, s.pf as u32, s.vf as u32, s.area as u32, self.pool_scale.to_bits(), 0, 0, 0]
                }
                Op::Value => vec![
                    b as u32,
                    s.hidden as u32,
                    s.outs as u32,
                    u32::from(s.margin),
                    (s.area as f32).to_bits(),
                    self.margin_bias.to_bits(),
                    0,
                    0,
                ],
                Op::Gather => vec![b as u32, s.logits_block() as u32, u32::from(softmax), 3 * b as u32],
            };
            words.resize(words.len().next_multiple_of(4), 0);
            let at = i * PARAM_SLOT as usize;
            bytes[at..at + words.len() * 4].copy_from_slice(bytemuck::cast_slice(&words));
        }
        bytes
    }

    /// Buffers and bind groups for batches of up to `positions` positions and `moves`
    /// moves in all.
    fn make_set(&self, positions: usize, moves: usize) -> Set {
        let s = self.shape;
        let d = &self.device;
        let none = wgpu::BufferUsages::empty();
        let rows = positions * s.area;
        let acts = vec![
            // (read back by a test)
            (Act::X, storage(d, "x", positions * s.padded * s.planes, wgpu::BufferUsages::COPY_SRC)),
            (Act::H, storage(d, "h", positions * s.padded * s.channels, none)),
            (Act::Y, storage(d, "y", positions * s.padded * s.channels, none)),
            (Act::Head, storage(d, "head", rows * s.heads(), none)),
            (Act::Logits, storage(d, "logits", positions * s.logits_block(), none)),
            (Act::VPool, storage(d, "vpool", positions * 3 * s.vf, none)),
            (Act::Hid, storage(d, "hidden", positions * s.hidden, none)),
        ];
        let pix: Vec<u32> = (0..rows)
            .map(|m| {
                let (i, sq) = (m / s.area, m % s.area);
                (i * s.padded + (sq / s.n + 1) * (s.n + 2) + sq % s.n + 1) as u32
            })
            .collect();
        let ident: Vec<u32> = (0..rows as u32).collect();
        let pos: Vec<u32> = (0..positions).map(|i| (i * s.area) as u32).collect();
        let out_floats = 3 * positions + moves;
        let mut set = Set {
            positions,
            moves,
            acts,
            pix: upload(d, &self.queue, "pix", &pix),
            ident: upload(d, &self.queue, "ident", &ident),
            pos: upload(d, &self.queue, "pos", &pos),
            squares: storage(d, "squares", rows, wgpu::BufferUsages::COPY_DST),
            per_position: storage(d, "per position", positions * COMPACT_CONSTANTS, wgpu::BufferUsages::COPY_DST),
            offs: storage(d, "offs", positions + 1, wgpu::BufferUsages::COPY_DST),
            idx: storage(d, "idx", moves.div_ceil(2), wgpu::BufferUsages::COPY_DST),
            out: storage(d, "out", out_floats, wgpu::BufferUsages::COPY_SRC),
            staging: d.create_buffer(&wgpu::BufferDescriptor {
                label: Some("staging"),
                size: (out_floats * 4) as u64,
                usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            }),
            params: d.create_buffer(&wgpu::BufferDescriptor {
                label: Some("params"),
                size: self.ops.len() as u64 * PARAM_SLOT,
                usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            }),
            groups: Vec::new(),
            host_squares: vec![0; rows],
            host_per_position: vec![0.0; positions * COMPACT_CONSTANTS],
        };
        set.groups = self.ops.iter().enumerate().map(|(i, op)| self.bind(&set, i, op)).collect();
        set
    }

    /// The bind group of the `i`-th kernel `op` over `set`'s buffers.
    fn bind(&self, set: &Set, i: usize, op: &Op) -> wgpu::BindGroup {
        // The kernel's slot of the parameters, at its struct's size.
        let params_size = match op {
            Op::Expand => 144,
            Op::Gemm(_) => 288,
            Op::Gpool(_) | Op::Gather => 16,
            Op::VPool | Op::Value => 32,
        };
        let params = wgpu::BindingResource::Buffer(wgpu::BufferBinding {
            buffer: &set.params,
            offset: i as u64 * PARAM_SLOT,
            size: std::num::NonZeroU64::new(params_size),
        });
        let rows = |r: Rows| match r {
            Rows::Pix => &set.pix,
            Rows::Ident => &set.ident,
            Rows::Pos => &set.pos,
        };
        let (pipeline, buffers): (_, Vec<&wgpu::Buffer>) = match op {
            Op::Expand => (&self.pipelines.expand, vec![&set.squares, &set.per_position, set.act(Act::X)]),
            Op::Gemm(g) => {
                let m = &self.matrices[g.matrix];
                (
                    self.pipelines.gemm_for(g, m.n).0,
                    vec![set.act(g.a), rows(g.a_rows), &m.w, &m.bias, set.act(g.out), rows(g.out_rows)],
                )
            }
            Op::Gpool(block) => {
                let (w, bias, _) = self.gpool[*block].as_ref().expect("a block with global pooling");
                (&self.pipelines.gpool, vec![set.act(Act::Y), &set.pix, w, bias])
            }
            Op::VPool => (&self.pipelines.vpool, vec![set.act(Act::Head), set.act(Act::VPool)]),
            Op::Value => {
                (&self.pipelines.value, vec![set.act(Act::Hid), &self.value_w, &self.value_b, &self.margin_w, &set.out])
            }
            Op::Gather => (&self.pipelines.gather, vec![set.act(Act::Logits), &set.offs, &set.idx, &set.out]),
        };
        let mut entries = vec![wgpu::BindGroupEntry { binding: 0, resource: params }];
        entries.extend(
            buffers
                .into_iter()
                .enumerate()
                .map(|(k, b)| wgpu::BindGroupEntry { binding: k as u32 + 1, resource: b.as_entire_binding() }),
        );
        self.device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: None,
            layout: &pipeline.get_bind_group_layout(0),
            entries: &entries,
        })
    }
}

impl Ticket<'_> {
    /// The host's time encoding the positions and moves of this pass.
    pub fn encode_time(&self) -> std::time::Duration {
        self.encoded
    }

    /// Waits for the pass and reads its outputs back.
    pub fn finish(self) -> Result<WgslOutputs, WgslError> {
        self.finish_timed(None)
    }

    fn finish_timed(mut self, times: Option<&mut crate::inference::PassTimes>) -> Result<WgslOutputs, WgslError> {
        let clock = std::time::Instant::now();
        let net = self.net;
        net.wait(self.submission.clone())?;
        let b = self.lens.len();
        let set = self.set.as_mut().expect("a set of buffers");
        let bytes = ((3 * b + self.total).max(1) * 4) as u64;
        let floats: Vec<f32> = {
            let view =
                set.staging.slice(..bytes).get_mapped_range().map_err(|e| WgslError::Execution(e.to_string()))?;
            bytemuck::cast_slice::<u8, f32>(&view).to_vec()
        };
        set.staging.unmap();
        self.read = true;
        let read = clock.elapsed();
        let clock = std::time::Instant::now();
        let (scalars, flat) = floats.split_at(3 * b);
        let mut at = 0;
        let policy = self
            .lens
            .iter()
            .map(|&n| {
                let row = &flat[at..at + n];
                at += n;
                row.to_vec()
            })
            .collect();
        let out = WgslOutputs {
            policy,
            values: scalars[..b].to_vec(),
            draws: net.has_wdl().then(|| scalars[b..2 * b].to_vec()),
            margins: net.has_margin().then(|| scalars[2 * b..3 * b].to_vec()),
        };
        if let Some(t) = times {
            t.readback = read;
            t.convert = clock.elapsed();
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wgpu::naga;

    /// `source` parsed, validated with every capability and written as SPIR-V 1.6, as
    /// wgpu does on a Vulkan device that has the features the kernel enables.
    fn spirv(what: &str, source: &str) -> Vec<u32> {
        let module =
            naga::front::wgsl::parse_str(source).unwrap_or_else(|e| panic!("{what}: {}", e.emit_to_string(source)));
        let info = naga::valid::Validator::new(naga::valid::ValidationFlags::all(), naga::valid::Capabilities::all())
            .validate(&module)
            .unwrap_or_else(|e| panic!("{what}: {}", e.emit_to_string(source)));
        let options = naga::back::spv::Options { lang_version: (1, 6), ..Default::default() };
        naga::back::spv::write_vec(&module, &info, &options, None).unwrap_or_else(|e| panic!("{what}: {e}"))
    }

    /// Lavapipe has no cooperative matrices, so the tests that run kernels never compile
    /// this one: here naga (wgpu's shader compiler) checks that every trunk kernel is
    /// valid WGSL and becomes SPIR-V, the cooperative-matrix one with its matrix loads,
    /// products and stores.
    #[test]
    fn every_trunk_kernel_compiles_to_spirv() {
        for a in Arithmetic::ALL {
            let (source, rows) = a.trunk_kernel();
            let words = spirv(a.name(), &source);
            assert!(words.len() > 100, "{}: {} words of SPIR-V", a.name(), words.len());
            assert_eq!(rows, if a == Arithmetic::Tensor { COOP_TILE_M } else { TILE_M });
        }
        // SPIR-V's opcodes for the cooperative matrices' load, store and product
        // (SPV_KHR_cooperative_matrix: 4457, 4458, 4459); none in the shader-arithmetic kernels.
        let opcodes = |a: Arithmetic| -> std::collections::HashSet<u32> {
            let words = spirv(a.name(), &a.trunk_kernel().0);
            let mut ops = std::collections::HashSet::new();
            let mut at = 5;
            while at < words.len() {
                ops.insert(words[at] & 0xffff);
                at += (words[at] >> 16).max(1) as usize;
            }
            ops
        };
        let coop = opcodes(Arithmetic::Tensor);
        for op in [4457, 4458, 4459] {
            assert!(coop.contains(&op), "the cooperative-matrix kernel has no opcode {op}");
            assert!(!opcodes(Arithmetic::F32).contains(&op));
        }
        spirv("scalar", SCALAR_KERNEL);
    }

    /// `source` with each `call(&tile[index], stride)` or `call(matrix, &tile[index],
    /// stride)` replaced by `make(matrix, tile, index, stride)`.
    fn rewrite(source: &str, call: &str, make: impl Fn(Option<&str>, &str, &str, &str) -> String) -> String {
        let (mut out, mut rest) = (String::new(), source);
        while let Some(at) = rest.find(call) {
            out.push_str(&rest[..at]);
            let tail = &rest[at + call.len()..];
            let close = tail.find(')').expect("a closing parenthesis");
            let args = &tail[..close];
            let (matrix, place) = match args.split_once(", &") {
                Some((m, p)) => (Some(m), p),
                None => (None, args.strip_prefix('&').expect("a pointer")),
            };
            let (tile, index) = place.split_once('[').expect("an indexed tile");
            let (index, stride) = index.split_once("], ").expect("a stride");
            out.push_str(&make(matrix, tile, index, stride));
            rest = &tail[close + 1..];
        }
        out + rest
    }

    /// gemm_coop.wgsl with its cooperative-matrix operations done in the shader's own
    /// arithmetic, so that a device without matrix units (lavapipe) runs everything else
    /// the tensor kernel does: its staging of both operands' halves through workgroup
    /// memory, the tiles' offsets and strides, the three products per tile, the stores of
    /// the sums and the epilogue. A matrix operand becomes its place in workgroup memory
    /// (which tile, where, the row stride: what `coopLoadT` is given, row-major), an
    /// accumulator a slot of 256 sums in workgroup memory of which each of the 32 lanes
    /// holds 8, and a product of 16 x 16 tiles each lane's 8 sums of 16 products, in
    /// single precision as the matrix units sum.
    fn emulated_coop_kernel() -> String {
        let coop: String = include_str!("wgsl/gemm_coop.wgsl")
            .lines()
            .map(|l| l.split("//").next().unwrap_or(""))
            .collect::<Vec<_>>()
            .join("\n");
        let tile_id = |tile: &str| ["tile_a", "tile_a_lo", "tile_b", "tile_b_lo"].iter().position(|t| *t == tile);
        let mut body = rewrite(&coop, "coopLoadT<coop_mat16x16<f16, A>>(", |_, t, i, s| {
            format!("vec3<u32>({}u, {i}, {s})", tile_id(t).expect("an A tile"))
        });
        body = rewrite(&body, "coopLoadT<coop_mat16x16<f16, B>>(", |_, t, i, s| {
            format!("vec3<u32>({}u, {i}, {s})", tile_id(t).expect("a B tile"))
        });
        body = rewrite(&body, "coopStoreT(", |m, t, i, s| {
            assert_eq!(t, "tile_c");
            format!("emu_store({}, {i}, {s})", m.expect("a matrix"))
        });
        for slot in 0..8 {
            let c = format!("c{}{}", slot / 4, slot % 4);
            let zero = format!("var {c} = coop_mat16x16<f32, C>();");
            assert!(body.contains(&zero), "{zero}");
            body = body.replace(&zero, &format!("var {c} = emu_zero({slot}u);"));
        }
        body = body.replace("coopMultiplyAdd(", "emu_mma(");
        let entry = "@builtin(local_invocation_index) t: u32) {";
        assert!(body.contains(entry));
        body = body.replace(entry, &format!("{entry}\n    emu_lane = t;"));
        assert!(!body.contains("coop"), "an operation left unemulated:\n{body}");
        let emulation = r"
var<private> emu_lane: u32;
var<workgroup> emu_acc: array<f32, 2048>;

fn emu_at(tile: u32, i: u32) -> f32 {
    switch tile {
        case 0u: { return f32(tile_a[i]); }
        case 1u: { return f32(tile_a_lo[i]); }
        case 2u: { return f32(tile_b[i]); }
        default: { return f32(tile_b_lo[i]); }
    }
}

fn emu_zero(c: u32) -> u32 {
    for (var e = 0u; e < 8u; e++) {
        emu_acc[c * 256u + emu_lane * 8u + e] = 0.0;
    }
    return c;
}

fn emu_mma(a: vec3<u32>, b: vec3<u32>, c: u32) -> u32 {
    for (var e = 0u; e < 8u; e++) {
        let i = emu_lane * 8u + e;
        let r = i / 16u;
        let col = i % 16u;
        var s = 0.0;
        for (var k = 0u; k < 16u; k++) {
            s += emu_at(a.x, a.y + r * a.z + k) * emu_at(b.x, b.y + k * b.z + col);
        }
        emu_acc[c * 256u + i] += s;
    }
    return c;
}

fn emu_store(c: u32, at: u32, stride: u32) {
    for (var e = 0u; e < 8u; e++) {
        let i = emu_lane * 8u + e;
        tile_c[at + (i / 16u) * stride + i % 16u] = emu_acc[c * 256u + i];
    }
}
";
        ["enable f16;\n", include_str!("wgsl/gemm_vec4.wgsl"), include_str!("wgsl/gemm_common.wgsl"), &body, emulation]
            .concat()
    }

    /// The input planes the expansion kernel writes on the device from the compact form
    /// are [`crate::encoding::encode`]'s on the host to the bit, on the padded board with
    /// a zero border, for the shipped networks of both input versions, in a batch that
    /// reuses a set of buffers written by a larger one.
    #[test]
    fn the_planes_expanded_on_the_device_are_the_hosts() {
        use crate::encoding::{encode, input_len};
        let shipped = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../checkpoints/shipped");
        let mut versions = std::collections::BTreeSet::new();
        for (size, name) in [(4, ""), (5, ""), (6, ""), (4, "-v1"), (6, "-v1")] {
            let (model, _) = crate::load_exported(&shipped.join(format!("{size}x{size}{name}.bredon"))).unwrap();
            let net = WgslNet::for_model(&model, size).unwrap_or_else(|e| panic!("{e}"));
            let s = net.shape;
            versions.insert(s.input_version);
            let mut positions = crate::positions::random_positions(size, 70, 90 + size as u64);
            if size == 5 {
                // A stack taller than plane 18 tells apart, a capstone on top, black to move.
                positions.push(bredon_rules::notation::parse_tps("1212121212121C,x4/x5/x5/x5/x5 2 30").unwrap());
            }
            for batch in [positions.len(), 9] {
                let chunk: Vec<&Position> = positions[..batch].iter().collect();
                let ticket = net.launch(&chunk, None).unwrap();
                let floats = batch * s.padded * s.planes;
                let staging = net.device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some("planes read back"),
                    size: (floats * 4) as u64,
                    usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                    mapped_at_creation: false,
                });
                let x = ticket.set.as_ref().expect("a set of buffers").act(Act::X);
                let mut encoder = net.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: None });
                encoder.copy_buffer_to_buffer(x, 0, &staging, 0, (floats * 4) as u64);
                let submission = net.queue.submit([encoder.finish()]);
                staging.slice(..).map_async(wgpu::MapMode::Read, |_| {});
                net.wait(submission).unwrap();
                let got: Vec<f32> = bytemuck::cast_slice(&staging.slice(..).get_mapped_range().unwrap()).to_vec();
                drop(ticket);
                let mut planes = vec![0.0; input_len(s.input_version, size)];
                for (i, pos) in chunk.iter().enumerate() {
                    encode(pos, s.input_version, &mut planes);
                    for pix in 0..s.padded {
                        let (r, c) = (pix / (size + 2), pix % (size + 2));
                        let inside = (1..=size).contains(&r) && (1..=size).contains(&c);
                        for p in 0..s.planes {
                            let want = if inside { planes[p * s.area + (r - 1) * size + c - 1] } else { 0.0 };
                            let have = got[(i * s.padded + pix) * s.planes + p];
                            assert_eq!(
                                have.to_bits(),
                                want.to_bits(),
                                "{size}x{size} v{}, position {i}, plane {p}, pixel ({r}, {c}): {have} vs {want}",
                                s.input_version
                            );
                        }
                    }
                }
            }
        }
        assert_eq!(versions.len(), 2, "the shipped networks have both input versions: {versions:?}");
    }

    /// The tensor kernel with its matrix operations emulated ([`emulated_coop_kernel`])
    /// gives the single-precision kernels' logits, values, draws and margins on the
    /// shipped 6x6 and 4x4 networks to within the pairs' own rounding, in batches that end
    /// inside a workgroup's 32 rows and across many: what is left for a device with matrix units to show is
    /// only that its `coopLoadT`, `coopMultiplyAdd` and `coopStoreT` do what the
    /// extension says (`bench nn --arithmetic tensor --compare-cpu`, scripts/gpu-check.sh).
    #[test]
    fn the_tensor_kernel_with_its_matrix_operations_emulated_agrees_with_f32() {
        let shipped = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../checkpoints/shipped");
        let source = emulated_coop_kernel();
        spirv("emulated tensor kernel", &source);
        // Rows are positions x squares, in tiles of COOP_TILE_M (32): 6x6 batches of 1 and 7
        // end 4 and 28 rows into a tile, 4x4 batches of 3 and 4 end half-way and on an edge;
        // every batch spans more than one tile (6x6's 7 spans eight). Lavapipe runs the
        // emulation at about a third of a second a tile, so the batches are no larger than
        // that needs.
        for (size, batches) in [(6, [1usize, 7]), (4, [3, 4])] {
            let (model, _) = crate::load_exported(&shipped.join(format!("{size}x{size}.bredon"))).unwrap();
            let adapter = adapter_for(&model.device()).unwrap_or_else(|e| panic!("{e}"));
            let folded = FoldedNet::from_model(&model, size);
            let f32s = WgslNet::with_arithmetic(&folded, &adapter, Arithmetic::F32).unwrap();
            let emulated = match Arithmetic::F16Pairs.check(&adapter) {
                Ok(()) => {
                    WgslNet::with_trunk_kernel(&folded, &adapter, Arithmetic::F16Pairs, (source.clone(), COOP_TILE_M))
                        .unwrap_or_else(|e| panic!("{e}"))
                }
                Err(e) => panic!("the emulation needs shader-f16 ({e}); CI's lavapipe has it"),
            };
            let positions = crate::positions::random_positions(size, 64, 70 + size as u64);
            let mut at = 0;
            let mut worst = [0.0f32; 4];
            for b in batches {
                let chunk: Vec<&Position> = positions[at..at + b].iter().collect();
                at += b;
                let (got, want) = (emulated.logits(&chunk).unwrap(), f32s.logits(&chunk).unwrap());
                let far = |x: &[f32], y: &[f32]| x.iter().zip(y).map(|(p, q)| (p - q).abs()).fold(0.0f32, f32::max);
                for (g, w) in got.policy.iter().zip(&want.policy) {
                    assert_eq!(g.len(), w.len());
                    worst[0] = worst[0].max(far(g, w));
                }
                worst[1] = worst[1].max(far(&got.values, &want.values));
                worst[2] = worst[2].max(far(got.draws.as_deref().unwrap_or(&[]), want.draws.as_deref().unwrap_or(&[])));
                worst[3] =
                    worst[3].max(far(got.margins.as_deref().unwrap_or(&[]), want.margins.as_deref().unwrap_or(&[])));
                assert_eq!(
                    (got.draws.is_some(), got.margins.is_some()),
                    (want.draws.is_some(), want.margins.is_some())
                );
            }
            eprintln!(
                "{size}x{size}, emulated tensor kernel against f32: logits {:.1e}, values {:.1e}, draws {:.1e}, margins {:.1e}",
                worst[0], worst[1], worst[2], worst[3]
            );
            // The pairs in the shader's arithmetic (`F16Pairs`) are about 2e-5 from single
            // precision on these networks; a tile read from the wrong place, even only a
            // remainder's, moves the logits by 3e-3 or more. 1e-4 tells the two apart.
            assert!(worst.iter().all(|w| w.is_finite() && *w <= 1e-4), "{size}x{size}: {worst:?}");
            let probe: Vec<&Position> = positions[..5].iter().collect();
            emulated.agrees_with(&f32s, &probe).unwrap();
        }
    }

    #[test]
    fn arithmetic_names_parse_back() {
        for a in Arithmetic::ALL {
            assert_eq!(a.name().parse::<Arithmetic>(), Ok(a));
        }
        assert_eq!(" Tensor ".parse::<Arithmetic>(), Ok(Arithmetic::Tensor));
        let e = "bf16".parse::<Arithmetic>().unwrap_err();
        assert!(e.to_string().contains("\"bf16\"") && e.to_string().contains("f32, f16-pairs or tensor"), "{e}");
    }
}
