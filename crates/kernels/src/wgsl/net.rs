//! The network on the device ([`WgslNet`]) and what it is made of: its shape, the
//! layers as kernel operations, the pipelines, the weights' buffers and the per-batch
//! buffer sets; the kernels' sizes and limits.

use std::sync::{Mutex, MutexGuard};

use crate::arithmetic::Arithmetic;

/// What one pass sends back per position.
#[derive(Clone, Debug, Default)]
pub struct WgslOutputs {
    /// Per position: its priors over its legal moves (in the order given), or with
    /// [`WgslNet::logits`] every policy logit in the order of `bredon_netform::policy`.
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
pub(super) struct Shape {
    pub(super) n: usize,
    pub(super) area: usize,
    /// Pixels of the zero-padded board, `(n + 2)²`.
    pub(super) padded: usize,
    pub(super) planes: usize,
    pub(super) input_version: u32,
    pub(super) channels: usize,
    /// Policy features (first columns of the head layer) and value features (the rest).
    pub(super) pf: usize,
    pub(super) vf: usize,
    /// Logits per square of the convolutional policy head; `None` for the dense head.
    pub(super) per_square: Option<usize>,
    pub(super) policy: usize,
    pub(super) hidden: usize,
    pub(super) value_pool: bool,
    pub(super) outs: usize,
    pub(super) margin: bool,
}

impl Shape {
    pub(super) fn heads(&self) -> usize {
        self.pf + self.vf
    }

    /// Floats of logits one position's policy layer writes.
    pub(super) fn logits_block(&self) -> usize {
        match self.per_square {
            Some(k) => self.area * k,
            None => self.policy,
        }
    }

    /// Where policy index `i` sits in a position's block of logits.
    pub(super) fn logit_offset(&self, i: usize) -> u32 {
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
pub(super) enum Act {
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
pub(super) enum Rows {
    /// Row `i * area + s`: square `s` of position `i` on the padded board.
    Pix,
    /// Row `r`: pixel `r`.
    Ident,
    /// Row `i`: pixel `i * area` (the first square of position `i`).
    Pos,
}

/// One matrix kernel of the pass.
#[derive(Clone, Debug)]
pub(super) struct GemmOp {
    pub(super) matrix: usize,
    pub(super) a: Act,
    pub(super) a_rows: Rows,
    pub(super) a_stride: u32,
    pub(super) a_col: u32,
    pub(super) seg: u32,
    pub(super) taps: Vec<i32>,
    pub(super) out: Act,
    pub(super) out_rows: Rows,
    pub(super) out_stride: u32,
    pub(super) residual: bool,
    pub(super) relu: bool,
    /// Rows per position (`m = b * this`).
    pub(super) rows_per_position: u32,
}

/// The kernels of a pass, in order.
#[derive(Clone, Debug)]
pub(super) enum Op {
    /// The input planes from the positions' compact form.
    Expand,
    Gemm(GemmOp),
    /// Global pooling of block `.0` on `Y`.
    Gpool(usize),
    VPool,
    Value,
    Gather,
}

pub(super) struct Pipelines {
    /// The matrix kernel with scalar operand loads, and with vector loads
    /// ([`Pipelines::gemm_for`]).
    pub(super) gemm: wgpu::ComputePipeline,
    pub(super) gemm4: wgpu::ComputePipeline,
    /// Output rows of a `gemm4` workgroup (128, or 32 on cooperative matrices).
    pub(super) gemm4_rows: u32,
    pub(super) expand: wgpu::ComputePipeline,
    pub(super) gpool: wgpu::ComputePipeline,
    pub(super) vpool: wgpu::ComputePipeline,
    pub(super) value: wgpu::ComputePipeline,
    pub(super) gather: wgpu::ComputePipeline,
}

impl Pipelines {
    /// The matrix kernel for `g` with `n` columns and the output rows of its workgroup:
    /// vector loads (and the network's [`Arithmetic`]) when its K segment, input stride and
    /// column, and column count are all multiples of 4 (the trunk's layers).
    pub(super) fn gemm_for(&self, g: &GemmOp, n: u32) -> (&wgpu::ComputePipeline, u32) {
        if [g.seg, g.a_stride, g.a_col, n].iter().all(|x| x % 4 == 0) {
            (&self.gemm4, self.gemm4_rows)
        } else {
            (&self.gemm, TILE_M)
        }
    }
}

/// A matrix's weights and biases on the device.
pub(super) struct DeviceMatrix {
    pub(super) w: wgpu::Buffer,
    pub(super) bias: wgpu::Buffer,
    pub(super) n: u32,
}

/// Size of the uniform parameters of one kernel, a multiple of every adapter's offset
/// alignment (256).
pub(super) const PARAM_SLOT: u64 = 512;
/// Threads per workgroup of the small kernels, and rows x columns of a matrix kernel's
/// workgroup (as in the WGSL sources).
pub(super) const SMALL_GROUP: u32 = 64;
pub(super) const TILE_M: u32 = 128;
pub(super) const TILE_N: u32 = 64;
/// The matrix kernel with scalar operand loads, for the layers the trunk kernel does not
/// take (always single precision).
pub(super) const SCALAR_KERNEL: &str = concat!(
    include_str!("operand_f32.wgsl"),
    include_str!("gemm_scalar.wgsl"),
    include_str!("gemm_common.wgsl"),
    include_str!("gemm.wgsl")
);
/// Output rows of a workgroup of the cooperative-matrix kernel (`wgsl/gemm_coop.wgsl`).
pub(super) const COOP_TILE_M: u32 = 32;
/// Its workgroup memory: the pairs of half-precision tiles of A (32 x 32) and B (32 x 64),
/// and the 32 x 64 single-precision block of results.
pub(super) const COOP_WORKGROUP_BYTES: u32 = 2 * 2 * (32 * 32 + 32 * 64) + 4 * 32 * 64;
/// How far apart two arithmetics' priors and values may be for
/// [`WgslNet::agrees_with`]: the bound every output of the kernels is held to.
pub const AGREEMENT_TOLERANCE: f32 = 1e-3;

/// Positions [`WgslNet::for_search`] compares the two arithmetics on.
pub const SEARCH_CHECK_POSITIONS: usize = 64;
/// Most taps of a matrix kernel (`array<vec4<i32>, 16>`), so boards up to 8x8.
pub(super) const MAX_TAPS: usize = 64;
/// Most channels global pooling reads (`pooled: array<f32, 192>`).
pub(super) const MAX_POOLED: usize = 64;

/// One set of per-batch buffers, bind groups and the host's input staging.
pub(super) struct Set {
    pub(super) positions: usize,
    pub(super) moves: usize,
    pub(super) acts: Vec<(Act, wgpu::Buffer)>,
    pub(super) pix: wgpu::Buffer,
    pub(super) ident: wgpu::Buffer,
    pub(super) pos: wgpu::Buffer,
    /// The positions' compact form: a `u32` per square, the constants of each.
    pub(super) squares: wgpu::Buffer,
    pub(super) per_position: wgpu::Buffer,
    pub(super) offs: wgpu::Buffer,
    pub(super) idx: wgpu::Buffer,
    pub(super) out: wgpu::Buffer,
    pub(super) staging: wgpu::Buffer,
    pub(super) params: wgpu::Buffer,
    pub(super) groups: Vec<wgpu::BindGroup>,
    pub(super) host_squares: Vec<u32>,
    pub(super) host_per_position: Vec<f32>,
}

impl Set {
    pub(super) fn act(&self, a: Act) -> &wgpu::Buffer {
        &self.acts.iter().find(|(k, _)| *k == a).expect("every activation has a buffer").1
    }
}

/// The network on a wgpu device, run by Bredon's WGSL kernels.
pub struct WgslNet {
    pub(super) device: wgpu::Device,
    pub(super) queue: wgpu::Queue,
    pub(super) adapter: String,
    pub(super) arithmetic: Arithmetic,
    pub(super) shape: Shape,
    pub(super) pipelines: Pipelines,
    pub(super) matrices: Vec<DeviceMatrix>,
    /// Per block with global pooling: its dense layer, pooled channels.
    pub(super) gpool: Vec<Option<(wgpu::Buffer, wgpu::Buffer, u32)>>,
    /// The value head's last layer, the margin weights (a dummy without the head), the
    /// margin bias.
    pub(super) value_w: wgpu::Buffer,
    pub(super) value_b: wgpu::Buffer,
    pub(super) margin_w: wgpu::Buffer,
    pub(super) margin_bias: f32,
    pub(super) pool_scale: f32,
    pub(super) ops: Vec<Op>,
    pub(super) sets: [Mutex<Option<Set>>; 2],
    pub(super) next: std::sync::atomic::AtomicUsize,
}

/// A launched pass whose outputs have not been read yet ([`WgslNet::launch`]).
pub struct Ticket<'a> {
    pub(super) net: &'a WgslNet,
    pub(super) set: MutexGuard<'a, Option<Set>>,
    pub(super) submission: wgpu::SubmissionIndex,
    pub(super) lens: Vec<usize>,
    pub(super) total: usize,
    pub(super) encoded: std::time::Duration,
    /// Read back (by [`Ticket::finish`]); a ticket dropped unread waits for its pass and
    /// unmaps its staging buffer, so that its set of buffers can run the next pass.
    pub(super) read: bool,
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

pub(super) fn storage(device: &wgpu::Device, label: &str, floats: usize, extra: wgpu::BufferUsages) -> wgpu::Buffer {
    device.create_buffer(&wgpu::BufferDescriptor {
        label: Some(label),
        size: (floats.max(1) * 4) as u64,
        usage: wgpu::BufferUsages::STORAGE | extra,
        mapped_at_creation: false,
    })
}

/// A storage buffer holding `data` (floats or indices: 4 bytes each).
pub(super) fn upload<T: bytemuck::Pod>(
    device: &wgpu::Device,
    queue: &wgpu::Queue,
    label: &str,
    data: &[T],
) -> wgpu::Buffer {
    let b = storage(device, label, data.len(), wgpu::BufferUsages::COPY_DST);
    if !data.is_empty() {
        queue.write_buffer(&b, 0, bytemuck::cast_slice(data));
    }
    b
}
