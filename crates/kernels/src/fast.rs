//! The fast inference path: the network's forward pass outside burn, for search.
//!
//! Built from a [`FoldedNet`] (BatchNorm folded into the convolutions), so every layer is
//! one matrix product with a fused epilogue (bias, residual add, ReLU):
//!
//! - **Layout**: activations are channels-last (`[position][pixel][channel]`) on a board
//!   padded by one zero square on every side, so a 3x3 convolution is an *implicit GEMM*:
//!   row `m` of the left matrix (one output pixel) is the nine 3x3 neighbours' channel
//!   vectors, read in place at fixed offsets; no im2col copy, no bounds checks. Borders
//!   are zeroed once and never written.
//! - **Kernel** (`f32.rs`; bf16 in `amx.rs`, 8-bit integers in `int8.rs`): an `MR x NR`
//!   register tile (`NR` output channels, a multiple of the SIMD width) accumulated over
//!   `k` with one broadcast per row and one FMA per vector; the weights are packed once
//!   into column panels of width `NR`. AVX-512 and AVX2+FMA kernels are picked at run time
//!   ([`Isa::detect`]) with a portable fallback.
//! - **Heads**: the policy and value 1x1 convolutions are one layer; the fully connected
//!   weights are permuted to the channels-last flatten order instead of moving data.
//! - **Threads**: a batch is split into chunks run on rayon's pool, a few a thread so that
//!   a thread slowed by a neighbour does fewer; each pool thread has its own scratch
//!   buffers (reused across calls: no allocation after the first call at a size).
//!   A batch too small to split (one position, for play and analysis) splits each large
//!   layer instead: two halves of its rows, or of its column panels, joined per layer.
//!
//! - **Global pooling** (optional, [`NetConfig::global_pool`] and the pooling value head):
//!   the pooled means and maxima are plain Rust, and each block's small dense layer runs
//!   for a chunk's positions at once on the f32 kernels; the per-channel bias is added to
//!   the interior squares only (the padding stays zero).
//!
//! - **Denormals**: every thread running a layer flushes denormal floats to zero while it
//!   does (`bredon_netform::denormals::FlushDenormals`). Trained weights and activations can hold values so small
//!   that x86 handles them in microcode, hundreds of cycles per operation: without the
//!   flush the shipped 6x6 model ran 5x slower than an untrained one.
//!
//! The results agree with burn's forward pass to float rounding (see the tests).

use bredon_rules::{Move, Position};
use rayon::prelude::*;
use std::sync::Mutex;

use bredon_netform::config::{NetConfig, pool_size_scale};
use bredon_netform::denormals::FlushDenormals;
use bredon_netform::encoding::{encode, input_len, planes};
use bredon_netform::folded::{FoldedNet, Matrix};
use bredon_netform::policy::{move_to_index, policy_size};

use crate::aligned::Aligned;
use crate::amx::{
    BPacked, Bf16Kernel, Bf16Layer, RowTile, gemm_bf16, margin_pixels, row_tiles, tiles_per_position, to_bf16_plus,
};
pub use crate::f32::Isa;
use crate::f32::{Gemm, Packed, gemm};
use crate::int8::{Int8Kernel, QGemm, QInput, QPacked, gemm_i8, quantize};
use crate::precision::Precision;

/// How many bytes of activations one thread's turn of positions may hold
/// ([`FastNet::cached_positions`]): under half of a core's L2 cache (2 MB on the Xeons
/// measured), so each layer reads its input from L2, not memory.
const CACHED_BYTES: usize = 1 << 20;

/// A batch split over threads is cut into up to this many chunks a thread (of at least
/// [`FINE_CHUNK`] positions), taken by whichever thread is free: a thread that runs slower
/// for a while (a vCPU whose core, or matrix unit, a neighbour is using) then does fewer of
/// them, instead of the call waiting for its fixed half.
const CHUNKS_PER_THREAD: usize = 4;

/// The fewest positions of a chunk beyond one a thread ([`CHUNKS_PER_THREAD`]).
const FINE_CHUNK: usize = 8;

/// A pool thread's buffers, laid out per position so a larger chunk only extends them.
#[derive(Default)]
struct Scratch {
    /// Positions the buffers hold room for.
    capacity: usize,
    /// One position's planes, channel-major (as [`encode`] writes them).
    planes: Vec<f32>,
    /// Input, `[position][padded pixel][planes]`.
    x: Aligned<f32>,
    /// Trunk activations, `[position][padded pixel][channels]`.
    h: Aligned<f32>,
    /// The inner activation of a residual block.
    y: Aligned<f32>,
    /// The 8-bit inputs of a block's first and second convolutions.
    hq: QInput,
    yq: QInput,
    /// The bf16 inputs of a block's first and second convolutions (`h` and `y` in bf16,
    /// [`margin_pixels`] more pixels at the end), and the AMX row tiles of the positions.
    hb: Aligned<u16>,
    yb: Aligned<u16>,
    tiles: Vec<RowTile>,
    /// Every position's pooled biases (`[position][channels]`), and what each tap of the
    /// second convolution makes of them (`[position][9 channels]`, 8-bit blocks only).
    gbias: Vec<f32>,
    gtaps: Vec<f32>,
    /// Head features, `[position][square][policy filters + 2]`.
    head: Aligned<f32>,
    /// Policy features, `[position][square][policy filters]`.
    pol: Vec<f32>,
    /// Value features, `[position][square][2]`.
    val: Vec<f32>,
    /// Value hidden layer, `[position][hidden]`.
    hid: Vec<f32>,
    /// Every policy output of each position, where a pass of a dense policy head is asked
    /// for some moves' logits only.
    all: Vec<f32>,
    /// Convolutional policy head's logits, `[position][square][3 + 4P]`.
    plog: Aligned<f32>,
    /// Row offsets (floats) of each (position, square) in `x`.
    rows_x: Vec<usize>,
    /// ... in `h` and `y`.
    rows_c: Vec<usize>,
    /// ... in `head`.
    rows_head: Vec<usize>,
    /// Row offsets of each position in `pol`, `val`, the logits, `hid`.
    rows_pol: Vec<usize>,
    rows_val: Vec<usize>,
    rows_logits: Vec<usize>,
    rows_hid: Vec<usize>,
    /// Row offsets of each (position, square)'s policy features in `head` and of its
    /// logits in `plog`.
    rows_pix_pol: Vec<usize>,
    rows_pix_log: Vec<usize>,
    /// Global pooling: every position's pooled features (`[position][3 g]`), and the row
    /// offsets of each position in them and in `gbias`.
    gpool_in: Vec<f32>,
    rows_gpool_in: Vec<usize>,
    rows_gbias: Vec<usize>,
    /// Pooling value head: the pooled value features, `[position][3 value filters]`, the
    /// row offsets of each (position, square)'s value features in `head`, and of each
    /// position in `vpool`.
    vpool: Vec<f32>,
    rows_pix_val: Vec<usize>,
    rows_vpool: Vec<usize>,
}

/// Global pooling of channels `0..g` of the pixels starting at `rows` of `a` into `out`
/// (`3 g`): the means, the means times `scale`, the maxima (`bredon_nn::model::global_pool`).
fn pool_rows(a: &[f32], rows: &[usize], g: usize, scale: f32, out: &mut [f32]) {
    let (mean, rest) = out[..3 * g].split_at_mut(g);
    let (scaled, max) = rest.split_at_mut(g);
    mean.fill(0.0);
    max.fill(f32::NEG_INFINITY);
    for &r in rows {
        for ((m, x), &v) in mean.iter_mut().zip(max.iter_mut()).zip(&a[r..r + g]) {
            *m += v;
            *x = x.max(v);
        }
    }
    let inv = 1.0 / rows.len() as f32;
    for (m, sc) in mean.iter_mut().zip(scaled.iter_mut()) {
        *m *= inv;
        *sc = *m * scale;
    }
}

/// `a · b` over equal lengths, in eight running sums (which the compiler keeps in
/// vector registers).
fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut acc = [0.0f32; 8];
    let (ac, bc) = (a.chunks_exact(8), b.chunks_exact(8));
    let tail: f32 = ac.remainder().iter().zip(bc.remainder()).map(|(x, y)| x * y).sum();
    for (x, y) in ac.zip(bc) {
        for k in 0..8 {
            acc[k] += x[k] * y[k];
        }
    }
    acc.iter().sum::<f32>() + tail
}

/// The policy head's last layer in fast form.
enum PolicyOut {
    /// Dense: all features of a position to its logits.
    Dense(Packed),
    /// 1x1 convolution: each square's features to the logits of the moves from it.
    Conv(Packed),
}

/// Residual blocks at the trunk's start that stay f32 in an 8-bit trunk. With one
/// activation scale a position, the first block's inputs (the input layer's output and
/// what the first convolution makes of it) quantise worst: on the 6x6 network shipped on
/// 2026-12-07, all blocks in 8 bits gave a value error of 0.023 at the 99th percentile,
/// the first block in f32 0.0095 (its first convolution alone 0.013), and the same top
/// move in 98.7 % of positions instead of 98.3 % (`int8_agrees_with_single_precision_on_the_shipped_networks`).
const INT8_F32_BLOCKS: usize = 1;

/// The residual blocks' convolutions in a lower precision than f32, and the kernel that
/// runs them.
enum LowTrunk {
    /// 8-bit integers ([`Precision::Int8`]), one pair of convolutions a block; `None` for
    /// the first [`INT8_F32_BLOCKS`] blocks, which stay f32.
    Int8(Int8Kernel, Vec<Option<(QPacked, QPacked)>>),
    /// bfloat16 ([`Precision::Bf16`]). (The input layer stays f32: in bf16 it tripled
    /// the value error of the shipped 6x6 network, p99 0.005 to 0.013, for no speed.)
    Bf16(Bf16Kernel, Vec<(BPacked, BPacked)>),
}

/// The residual blocks in a lower precision.
struct LowBlocks {
    trunk: LowTrunk,
    /// In 8 bits, per block with global pooling, its second convolution's f32 weights
    /// tap-major ([`taps_matrix`]): the pooled biases go through them exactly
    /// ([`add_board_taps`]) instead of into the 8-bit input, which then stays unsigned.
    /// (In bf16 they join the input, which is converted again.)
    conv2: Vec<Option<Packed>>,
}

/// One convolution of a residual block, in the precision it runs in.
#[derive(Clone, Copy)]
enum BlockConv<'a> {
    F32(&'a Packed),
    Int8(Int8Kernel, &'a QPacked),
    Bf16(Bf16Kernel, &'a BPacked),
}

/// A 3x3 convolution's weights `[9 cin][cout]` rearranged tap-major, `[cin][9 cout]`, and
/// packed: one product of a position's per-channel biases (`cin`) gives what each tap
/// makes of them (`9 cout`).
fn taps_matrix(isa: Isa, w: &Matrix) -> Packed {
    let (cin, cout) = (w.k / 9, w.n);
    let m =
        Matrix::from_fn(cin, 9 * cout, |ci, tj| w.w[((tj / cout) * cin + ci) * cout + tj % cout], &vec![0.0; 9 * cout]);
    Packed::new(isa, &m)
}

/// Adds to `out` (rows `rows` of one position's `n`x`n` board, `cout` channels each) the
/// sum over the taps that land on the board of `taps` (`[9][cout]`: what each tap of a 3x3
/// convolution makes of a bias on every square and zero on the padding).
fn add_board_taps(taps: &[f32], n: usize, rows: &[usize], out: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx512f") {
        // SAFETY: the CPU has AVX-512F.
        return unsafe { add_board_taps_avx512(taps, n, rows, out) };
    }
    add_board_taps_body(taps, n, rows, out);
}

/// [`add_board_taps`] compiled for AVX-512 (the same sums, 16 lanes at a time).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn add_board_taps_avx512(taps: &[f32], n: usize, rows: &[usize], out: &mut [f32]) {
    add_board_taps_body(taps, n, rows, out);
}

#[inline(always)]
fn add_board_taps_body(taps: &[f32], n: usize, rows: &[usize], out: &mut [f32]) {
    let cout = taps.len() / 9;
    for (sq, &r) in rows.iter().enumerate() {
        let (y, x) = ((sq / n) as isize, (sq % n) as isize);
        let dst = &mut out[r..r + cout];
        for (t, tap) in taps.chunks(cout).enumerate() {
            let (yy, xx) = (y + t as isize / 3 - 1, x + t as isize % 3 - 1);
            if (0..n as isize).contains(&yy) && (0..n as isize).contains(&xx) {
                dst.iter_mut().zip(tap).for_each(|(o, &v)| *o += v);
            }
        }
    }
}

/// A residual block's rows: `rows` (each square of each position), `area` a position,
/// the 3x3 taps' offsets (in floats, and in pixels), `c` channels, and whether a layer
/// may split over two threads.
struct BlockRows<'a> {
    rows: &'a [usize],
    area: usize,
    taps: &'a [isize],
    pixel_taps: &'a [isize],
    c: usize,
    split: bool,
}

/// A layer's input and output buffers besides the f32 ones: the 8-bit copy of the input
/// it fills, or the bf16 input it reads and the bf16 copy of its output it writes.
struct LowBuffers<'a> {
    q: &'a mut QInput,
    b_in: &'a [u16],
    b_out: &'a mut [u16],
    tiles: &'a [RowTile],
}

/// One 3x3 convolution of a residual block from `src` into `dst` with ReLU (`residual`:
/// adding what `dst` holds): in f32, in 8 bits through `low.q`, or in bf16 from `low.b_in`
/// (also writing `low.b_out`).
fn conv3_layer(
    isa: Isa,
    conv: BlockConv,
    src: &[f32],
    low: LowBuffers,
    b: &BlockRows,
    residual: bool,
    dst: &mut [f32],
) {
    match conv {
        BlockConv::Int8(kernel, qw) => {
            quantize(src, b.rows, b.area, b.c, low.q);
            let g = QGemm { a: low.q, a_rows: b.rows, taps: b.taps, seg: b.c, out_rows: b.rows, residual, relu: true };
            gemm_i8(kernel, qw, &g, dst, b.split);
        }
        BlockConv::Bf16(kernel, bw) => {
            let g = Bf16Layer { a: low.b_in, tiles: low.tiles, taps: b.pixel_taps, residual, relu: true };
            gemm_bf16(kernel, bw, &g, dst, low.b_out);
        }
        BlockConv::F32(w) => {
            let g = Gemm { a: src, a_rows: b.rows, taps: b.taps, seg: b.c, out_rows: b.rows, residual, relu: true };
            gemm(isa, w, &g, dst, b.split);
        }
    }
}

/// The network in inference form for the fast path. Cheap to share (`&self` forward);
/// build it again from the burn model when the weights change.
pub struct FastNet {
    isa: Isa,
    config: NetConfig,
    policy_size: usize,
    stem: Packed,
    blocks: Vec<(Packed, Packed)>,
    /// The residual blocks in bf16 or 8-bit integers, when they run so.
    low: Option<LowBlocks>,
    /// Per block, its global pooling layer (`3 g` features to `channels` biases), run
    /// for a chunk's positions at once.
    gpool: Vec<Option<Packed>>,
    /// The board-size feature's scale of global pooling ([`pool_size_scale`]).
    pool_scale: f32,
    /// The value head pools the value features (instead of flattening them).
    value_pool: bool,
    /// Policy and value 1x1 convolutions as one layer (policy filters first).
    head: Packed,
    policy: PolicyOut,
    /// The convolutional policy head's weights a column at a time (`[per-square
    /// output][policy filters]`) and its biases, for the logits of single moves (empty
    /// with the dense head).
    policy_columns: Vec<f32>,
    policy_bias: Vec<f32>,
    value_fc1: Packed,
    /// The value head's last layer, `[hidden][outputs]` (1 output: tanh; 3: WDL logits).
    value_fc2: Vec<f32>,
    /// The flat-margin head (weights over the value head's hidden layer, bias), if any.
    margin: Option<(Vec<f32>, f32)>,
    value_b2: Vec<f32>,
    /// Tap offsets (in pixels of the padded board) of a 3x3 convolution.
    taps3: [isize; 9],
    /// Input planes (of `config.input_version`).
    planes: usize,
    scratch: Vec<Mutex<Scratch>>,
    /// Fewest positions per parallel chunk.
    min_chunk: usize,
}

impl FastNet {
    /// The fast network from folded weights, with the best kernels for this CPU.
    pub fn new(net: &FoldedNet) -> FastNet {
        FastNet::from_folded(net, Isa::detect())
    }

    /// The fast network from folded weights, with the kernels of `isa` (which must be in
    /// [`Isa::available`]; otherwise the portable kernels are used).
    pub fn from_folded(net: &FoldedNet, isa: Isa) -> FastNet {
        FastNet::with_precision(net, isa, Precision::F32)
    }

    /// The fast network from folded weights, with the kernels of `isa` (as
    /// [`FastNet::from_folded`]) and its residual blocks in `precision` where it can
    /// (elsewhere they run in single precision: [`FastNet::precision`] says which):
    ///
    /// - bf16 needs a multiple of 16 channels and runs on the AMX tiles, or where the CPU
    ///   lacks them in portable Rust, correct but far slower than single precision;
    /// - 8-bit integers need a multiple of 4 channels and run on AVX-512 VNNI, or in
    ///   portable Rust, several times slower than single precision; the first
    ///   [`INT8_F32_BLOCKS`] residual blocks stay f32.
    ///
    /// [`Precision::is_native`] tells a caller which to ask for.
    pub fn with_precision(net: &FoldedNet, isa: Isa, precision: Precision) -> FastNet {
        let isa = if Isa::available().contains(&isa) { isa } else { Isa::Portable };
        let c = net.config.channels;
        let trunk = match precision {
            Precision::Int8 if c.is_multiple_of(4) => {
                let kernel = if Int8Kernel::vnni_available() { Int8Kernel::Vnni512 } else { Int8Kernel::Portable };
                let pack = |m: &Matrix| {
                    let (nv, mr) = Isa::Avx512.tile_shape(m.n);
                    QPacked::new(m, c, nv, mr)
                };
                let blocks = net.blocks.iter().enumerate().map(|(i, (a, b))| {
                    (i >= INT8_F32_BLOCKS).then(|| (pack(&Matrix::conv3(a)), pack(&Matrix::conv3(b))))
                });
                Some(LowTrunk::Int8(kernel, blocks.collect()))
            }
            Precision::Bf16 if BPacked::fits(c, c) => {
                let kernel = if Bf16Kernel::amx_available() { Bf16Kernel::Amx } else { Bf16Kernel::Portable };
                let pack = |m: &Matrix| BPacked::new(m, c);
                let blocks = net.blocks.iter().map(|(a, b)| (pack(&Matrix::conv3(a)), pack(&Matrix::conv3(b))));
                Some(LowTrunk::Bf16(kernel, blocks.collect()))
            }
            _ => None,
        };
        let low = trunk.map(|trunk| LowBlocks {
            conv2: net
                .blocks
                .iter()
                .zip(&net.gpool)
                .enumerate()
                .map(|(i, ((_, b), g))| match (&trunk, g) {
                    // An 8-bit block adds the pooled biases through its second
                    // convolution's taps; an f32 one adds them to that convolution's input.
                    (LowTrunk::Int8(_, q), Some(_)) if q[i].is_some() => Some(taps_matrix(isa, &Matrix::conv3(b))),
                    _ => None,
                })
                .collect(),
            trunk,
        });
        let n = net.size();
        let head = Packed::new(isa, &net.head_matrix());
        let policy = net.policy_matrix();
        let side = (n + 2) as isize;
        let mut taps3 = [0isize; 9];
        for (t, tap) in taps3.iter_mut().enumerate() {
            *tap = (t as isize / 3 - 1) * side + (t as isize % 3 - 1);
        }
        let threads = rayon::current_num_threads().max(1);
        FastNet {
            isa,
            config: net.config.clone(),
            policy_size: policy_size(n),
            stem: Packed::new(isa, &Matrix::conv3(&net.stem)),
            blocks: net
                .blocks
                .iter()
                .map(|(a, b)| (Packed::new(isa, &Matrix::conv3(a)), Packed::new(isa, &Matrix::conv3(b))))
                .collect(),
            low,
            head,
            policy: match net.policy_fc {
                Some(_) => PolicyOut::Dense(Packed::new(isa, &policy)),
                None => PolicyOut::Conv(Packed::new(isa, &policy)),
            },
            policy_columns: match net.policy_fc {
                Some(_) => Vec::new(),
                None => (0..policy.n)
                    .flat_map(|j| (0..policy.k).map(move |r| (r, j)))
                    .map(|(r, j)| policy.w[r * policy.n + j])
                    .collect(),
            },
            policy_bias: match net.policy_fc {
                Some(_) => Vec::new(),
                None => policy.bias.clone(),
            },
            gpool: net.gpool.iter().map(|g| g.as_ref().map(|l| Packed::new(isa, &Matrix::dense(l)))).collect(),
            pool_scale: pool_size_scale(n),
            value_pool: net.value_pool(),
            value_fc1: Packed::new(isa, &net.value_fc1_matrix()),
            value_fc2: net.value_fc2.weight.clone(),
            value_b2: net.value_fc2.bias.clone(),
            margin: net.margin_fc.as_ref().map(|l| (l.weight.clone(), l.bias[0])),
            taps3,
            planes: planes(net.config.input_version),
            scratch: (0..threads).map(|_| Mutex::new(Scratch::default())).collect(),
            min_chunk: 2,
        }
    }

    /// The instruction set of the kernels in use.
    pub fn isa(&self) -> Isa {
        self.isa
    }

    /// This network with its bf16 or 8-bit layers (if any) on the portable kernel: for
    /// 8-bit integers the same integers and floats as the VNNI kernel's, which the tests
    /// check bit for bit; for bf16 the same products as the AMX tiles', summed in another
    /// order.
    pub fn with_portable_low_kernel(mut self) -> FastNet {
        match self.low.as_mut().map(|l| &mut l.trunk) {
            Some(LowTrunk::Int8(kernel, _)) => *kernel = Int8Kernel::Portable,
            Some(LowTrunk::Bf16(kernel, _)) => *kernel = Bf16Kernel::Portable,
            None => {}
        }
        self
    }

    /// The residual blocks in a lower precision, if they run so.
    fn trunk(&self) -> Option<&LowTrunk> {
        self.low.as_ref().map(|l| &l.trunk)
    }

    /// What the residual blocks compute in.
    pub fn precision(&self) -> Precision {
        match self.trunk() {
            None => Precision::F32,
            Some(LowTrunk::Int8(..)) => Precision::Int8,
            Some(LowTrunk::Bf16(..)) => Precision::Bf16,
        }
    }

    /// The units the residual blocks run on: `avx512` (or another [`Isa`]) in f32, `amx`,
    /// `vnni`, or `portable` where the CPU lacks the units for the precision asked.
    pub fn units(&self) -> &'static str {
        match self.trunk() {
            None => self.isa.name(),
            Some(LowTrunk::Int8(Int8Kernel::Vnni512, _)) => "vnni",
            Some(LowTrunk::Bf16(Bf16Kernel::Amx, _)) => "amx",
            Some(_) => "portable",
        }
    }

    /// Board size.
    pub fn size(&self) -> usize {
        self.config.size
    }

    /// Policy logits (`policy_size(N)` per position) and values of `positions`, like
    /// `bredon_infer::forward_raw`. Positions must be of the network's size.
    pub fn forward(&self, positions: &[&Position]) -> (Vec<f32>, Vec<f32>) {
        let mut logits = Vec::new();
        let mut values = Vec::new();
        self.forward_into(positions, &mut logits, &mut values);
        (logits, values)
    }

    /// [`FastNet::forward`] into reused vectors.
    pub fn forward_into(&self, positions: &[&Position], logits: &mut Vec<f32>, values: &mut Vec<f32>) {
        let mut scalars = Scalars::default();
        std::mem::swap(values, &mut scalars.values);
        self.forward_scalars_into(positions, logits, &mut scalars);
        std::mem::swap(values, &mut scalars.values);
    }

    /// Whether the network has a win/draw/loss value head (so draws are estimated).
    pub fn has_wdl(&self) -> bool {
        self.value_b2.len() == 3
    }

    /// Whether the network has the flat-margin head (so margins are estimated).
    pub fn has_margin(&self) -> bool {
        self.margin.is_some()
    }

    /// [`FastNet::forward_into`] with every per-position scalar: value, draw probability
    /// (0 without the win/draw/loss head, see [`FastNet::has_wdl`]) and final flat margin
    /// in flats (0 without the margin head, see [`FastNet::has_margin`]).
    pub fn forward_scalars_into(&self, positions: &[&Position], logits: &mut Vec<f32>, scalars: &mut Scalars) {
        logits.resize(positions.len() * self.policy_size, 0.0);
        self.run(positions, Logits::All(logits), scalars);
    }

    /// What a search asks: [`FastNet::forward_scalars_into`] with, for each position, the
    /// logits of its `moves` only, one after another in `logits` (position 0's moves
    /// first, in their order; `sum of moves[i].len()` values). With the convolutional
    /// policy head each is one dot product of its square's features, so the pass skips
    /// the other `policy_size(N)` outputs (9,180 a position on 6x6).
    pub fn forward_moves_into(
        &self,
        positions: &[&Position],
        moves: &[&[Move]],
        logits: &mut Vec<f32>,
        scalars: &mut Scalars,
    ) {
        assert_eq!(moves.len(), positions.len(), "one list of moves a position");
        logits.resize(moves.iter().map(|m| m.len()).sum(), 0.0);
        self.run(positions, Logits::Moves(moves, logits), scalars);
    }

    fn run(&self, positions: &[&Position], logits: Logits, scalars: &mut Scalars) {
        let Scalars { values, draws, margins } = scalars;
        let b = positions.len();
        for pos in positions {
            assert_eq!(pos.size(), self.size(), "a {0}x{0} position for a {1}x{1} network", pos.size(), self.size());
        }
        values.resize(b, 0.0);
        draws.resize(b, 0.0);
        margins.resize(b, 0.0);
        let threads = self.scratch.len();
        // One chunk a thread, or up to `CHUNKS_PER_THREAD` of at least `FINE_CHUNK` (with
        // one thread, one chunk: nothing to balance).
        let fine = if threads > 1 { (b / FINE_CHUNK).min(threads * CHUNKS_PER_THREAD) } else { 1 };
        let chunks = (b / self.min_chunk).clamp(1, threads).max(fine);
        if chunks == 1 {
            let mut s = self.scratch[0].lock().unwrap_or_else(|e| e.into_inner());
            if let Some(LowTrunk::Bf16(..)) = self.trunk() {
                // The AMX layers do a position's block in about 3 µs, less than a fork and
                // join; splitting only the f32 layers measured slower than one thread.
                return self.forward_cached(positions, logits, (values, draws, margins), &mut s);
            }
            if rayon::current_num_threads() > 1 && rayon::current_thread_index().is_none() {
                // Run on a pool thread: the per-layer joins then hand their second half to
                // a worker that is still awake from the previous layer, instead of
                // injecting a job from outside the pool each time (tens of microseconds).
                let s: &mut Scratch = &mut s;
                rayon::scope(|_| self.forward_chunk(positions, logits, (values, draws, margins), s, true));
            } else {
                self.forward_chunk(positions, logits, (values, draws, margins), &mut s, true);
            }
            return;
        }
        let per = b.div_ceil(chunks);
        let parts = logits.split(per, self.policy_size);
        positions
            .par_chunks(per)
            .zip(parts)
            .zip(values.par_chunks_mut(per))
            .zip(draws.par_chunks_mut(per))
            .zip(margins.par_chunks_mut(per))
            .for_each(|((((ps, l), v), d), m)| {
                // Each pool thread its own buffers: a thread runs one chunk at a time
                // (`forward_cached` does not fork), so the lock is never contended in
                // the pool this network was built for.
                let t = rayon::current_thread_index().unwrap_or(0) % threads;
                let mut s = self.scratch[t].lock().unwrap_or_else(|e| e.into_inner());
                self.forward_cached(ps, l, (v, d, m), &mut s);
            });
    }

    /// Positions whose activations fit [`CACHED_BYTES`] (at least one).
    fn cached_positions(&self) -> usize {
        let n = self.size();
        let low = if self.low.is_some() { 2 + 2 } else { 0 };
        // `h` and `y` in f32 and their low-precision copies (bf16 `hb`/`yb`; the 8-bit
        // inputs, a byte a value, are counted as two), a padded pixel of `c` channels each.
        let per = (n + 2) * (n + 2) * self.config.channels * (4 + 4 + low);
        (CACHED_BYTES / per).max(1)
    }

    /// [`FastNet::forward_chunk`] over `positions` in equal turns of at most
    /// [`FastNet::cached_positions`] on this thread, so each turn's activations stay in
    /// the core's cache from layer to layer.
    fn forward_cached(
        &self,
        positions: &[&Position],
        logits: Logits,
        (values, draws, margins): (&mut [f32], &mut [f32], &mut [f32]),
        s: &mut Scratch,
    ) {
        let most = self.cached_positions();
        if positions.len() <= most {
            return self.forward_chunk(positions, logits, (values, draws, margins), s, false);
        }
        // As few turns as fit, of equal size (32 positions as 16 + 16, not 21 + 11).
        let per = positions.len().div_ceil(positions.len().div_ceil(most));
        let parts = logits.split(per, self.policy_size);
        for ((ps, l), at) in positions.chunks(per).zip(parts).zip((0..).step_by(per)) {
            let r = at..at + ps.len();
            self.forward_chunk(ps, l, (&mut values[r.clone()], &mut draws[r.clone()], &mut margins[r]), s, false);
        }
    }

    /// The convolutional policy head's logits of `moves` (per position) into `out`, one
    /// after another: each a dot product of its square's policy features (the first
    /// `policy_filters` of its row of `head`, `heads` a row) with the move's column.
    fn move_logits(&self, head: &[f32], heads: usize, moves: &[&[Move]], out: &mut [f32]) {
        let n = self.size();
        let area = n * n;
        let pf = self.config.policy_filters;
        let per_square = self.policy_bias.len();
        let mut o = 0;
        for (i, ms) in moves.iter().enumerate() {
            for &mv in ms.iter() {
                let idx = move_to_index(mv, n);
                // Placements are kind-major, spreads square-major (`crate::policy`).
                let (sq, col) = if idx < 3 * area {
                    (idx % area, idx / area)
                } else {
                    let j = idx - 3 * area;
                    (j / (per_square - 3), 3 + j % (per_square - 3))
                };
                let row = (i * area + sq) * heads;
                out[o] =
                    self.policy_bias[col] + dot(&head[row..row + pf], &self.policy_columns[col * pf..(col + 1) * pf]);
                o += 1;
            }
        }
    }

    fn reserve(&self, s: &mut Scratch, b: usize) {
        if b <= s.capacity {
            return;
        }
        let n = self.size();
        let (area, padded) = (n * n, (n + 2) * (n + 2));
        let c = self.config.channels;
        let pf = self.config.policy_filters;
        let heads = self.head.n;
        let vf = heads - pf;
        let hidden = self.value_fc1.n;
        let planes = self.planes;
        s.planes.resize(input_len(self.config.input_version, n), 0.0);
        s.x.resize(b * padded * planes);
        s.h.resize(b * padded * c);
        s.y.resize(b * padded * c);
        if let Some(LowTrunk::Bf16(..)) = self.trunk() {
            s.hb.resize((b * padded + margin_pixels(n)) * c);
            s.yb.resize((b * padded + margin_pixels(n)) * c);
            s.tiles = row_tiles(b, n);
        }
        s.head.resize(b * area * heads);
        s.pol.resize(b * area * pf, 0.0);
        s.val.resize(b * area * vf, 0.0);
        s.hid.resize(b * hidden, 0.0);
        let per_square = self.policy_size / area;
        if let PolicyOut::Conv(_) = self.policy {
            s.plog.resize(b * area * per_square);
        }
        let pix = |m: usize| {
            let (i, sq) = (m / area, m % area);
            i * padded + (sq / n + 1) * (n + 2) + sq % n + 1
        };
        s.rows_x = (0..b * area).map(|m| pix(m) * planes).collect();
        s.rows_c = (0..b * area).map(|m| pix(m) * c).collect();
        s.rows_head = (0..b * area).map(|m| m * heads).collect();
        s.rows_pol = (0..b).map(|i| i * area * pf).collect();
        s.rows_val = (0..b).map(|i| i * area * vf).collect();
        s.rows_logits = (0..b).map(|i| i * self.policy_size).collect();
        s.rows_hid = (0..b).map(|i| i * hidden).collect();
        s.rows_pix_pol = (0..b * area).map(|m| m * heads).collect();
        s.rows_pix_log = (0..b * area).map(|m| m * per_square).collect();
        let g = self.gpool.iter().flatten().map(|l| l.k).max().unwrap_or(0);
        s.gpool_in.resize(b * g, 0.0);
        s.rows_gpool_in = (0..b).map(|i| i * g).collect();
        s.gbias.resize(b * c, 0.0);
        s.rows_gbias = (0..b).map(|i| i * c).collect();
        if self.value_pool {
            s.vpool.resize(b * 3 * vf, 0.0);
            s.rows_pix_val = (0..b * area).map(|m| m * heads + pf).collect();
            s.rows_vpool = (0..b).map(|i| i * 3 * vf).collect();
        }
        s.capacity = b;
    }

    fn forward_chunk(
        &self,
        positions: &[&Position],
        logits: Logits,
        (values, draws, margins): (&mut [f32], &mut [f32], &mut [f32]),
        s: &mut Scratch,
        split: bool,
    ) {
        let _flush = FlushDenormals::new();
        let b = positions.len();
        self.reserve(s, b);
        let n = self.size();
        let area = n * n;
        let m = b * area;
        let c = self.config.channels;
        let isa = self.isa;
        // Input planes, channels-last on the padded board.
        let planes = self.planes;
        for (i, pos) in positions.iter().enumerate() {
            encode(pos, self.config.input_version, &mut s.planes);
            for sq in 0..area {
                let o = s.rows_x[i * area + sq];
                let px = &mut s.x[o..o + planes];
                for (plane, v) in px.iter_mut().enumerate() {
                    *v = s.planes[plane * area + sq];
                }
            }
        }
        let taps_x = self.taps3.map(|t| t * planes as isize);
        let taps_c = self.taps3.map(|t| t * c as isize);
        let rows_c = &s.rows_c[..m];
        gemm(
            isa,
            &self.stem,
            &Gemm {
                a: &s.x,
                a_rows: &s.rows_x[..m],
                taps: &taps_x,
                seg: planes,
                out_rows: rows_c,
                residual: false,
                relu: true,
            },
            &mut s.h,
            split,
        );
        let bf16 = matches!(self.trunk(), Some(LowTrunk::Bf16(..)));
        let tiles = &s.tiles[..s.tiles.len().min(b * tiles_per_position(n))];
        if bf16 {
            // The first block's input in bf16; each layer after writes its own.
            to_bf16_plus(&s.h, rows_c, None, c, &mut s.hb);
        }
        for (i, ((conv1, conv2), gpool)) in self.blocks.iter().zip(&self.gpool).enumerate() {
            let (first, second) = match self.trunk() {
                None => (BlockConv::F32(conv1), BlockConv::F32(conv2)),
                Some(LowTrunk::Int8(k, q)) => match &q[i] {
                    Some((a, b)) => (BlockConv::Int8(*k, a), BlockConv::Int8(*k, b)),
                    None => (BlockConv::F32(conv1), BlockConv::F32(conv2)),
                },
                Some(LowTrunk::Bf16(k, w)) => (BlockConv::Bf16(*k, &w[i].0), BlockConv::Bf16(*k, &w[i].1)),
            };
            let block = BlockRows { rows: rows_c, area, taps: &taps_c, pixel_taps: &self.taps3, c, split };
            let low = LowBuffers { q: &mut s.hq, b_in: &s.hb, b_out: &mut s.yb, tiles };
            conv3_layer(isa, first, &s.h, low, &block, false, &mut s.y);
            if let Some(fc) = gpool {
                // Per position: pool the first g channels; the dense layer gives every
                // position one bias per channel at once. They join the board's squares
                // (not the zero padding): in f32 added to the input of the second
                // convolution; in bf16 added as it is converted; in 8 bits through the
                // second convolution to its output instead.
                let gin = fc.k;
                for (rows, &at) in rows_c.chunks(area).zip(&s.rows_gpool_in) {
                    pool_rows(&s.y, rows, gin / 3, self.pool_scale, &mut s.gpool_in[at..at + gin]);
                }
                let dense = Gemm {
                    a: &s.gpool_in[..],
                    a_rows: &s.rows_gpool_in[..b],
                    taps: &[0],
                    seg: gin,
                    out_rows: &s.rows_gbias[..b],
                    residual: false,
                    relu: false,
                };
                gemm(isa, fc, &dense, &mut s.gbias, false);
                let conv2_taps = self.low.as_ref().and_then(|q| q.conv2[i].as_ref());
                if let Some(w) = conv2_taps {
                    // Every position's biases through each tap at once; the residual
                    // epilogue adds `h`, so their share on the board joins it.
                    s.gtaps.resize(b * w.n, 0.0);
                    let out_rows: Vec<usize> = (0..b).map(|p| p * w.n).collect();
                    let taps = Gemm {
                        a: &s.gbias[..],
                        a_rows: &s.rows_gbias[..b],
                        taps: &[0],
                        seg: c,
                        out_rows: &out_rows,
                        residual: false,
                        relu: false,
                    };
                    gemm(isa, w, &taps, &mut s.gtaps, split);
                    for (pi, rows) in rows_c.chunks(area).enumerate() {
                        add_board_taps(&s.gtaps[pi * w.n..(pi + 1) * w.n], n, rows, &mut s.h);
                    }
                } else if bf16 {
                    to_bf16_plus(&s.y, rows_c, Some((&s.gbias, area)), c, &mut s.yb);
                } else {
                    for (rows, bias) in rows_c.chunks(area).zip(s.gbias.chunks(c)) {
                        for &r in rows {
                            s.y[r..r + c].iter_mut().zip(bias).for_each(|(y, b)| *y += b);
                        }
                    }
                }
            }
            let low = LowBuffers { q: &mut s.yq, b_in: &s.yb, b_out: &mut s.hb, tiles };
            conv3_layer(isa, second, &s.y, low, &block, true, &mut s.h);
        }
        gemm(
            isa,
            &self.head,
            &Gemm {
                a: &s.h,
                a_rows: rows_c,
                taps: &[0],
                seg: c,
                out_rows: &s.rows_head[..m],
                residual: false,
                relu: true,
            },
            &mut s.head,
            split,
        );
        let heads = self.head.n;
        let pf = self.config.policy_filters;
        let vf = heads - pf;
        // The convolutional policy head and the pooling value head read their features
        // in place; the dense heads of older networks need each position's contiguous.
        let dense_policy = matches!(self.policy, PolicyOut::Dense(_));
        for r in 0..m {
            let h = &s.head[r * heads..(r + 1) * heads];
            if dense_policy {
                s.pol[r * pf..(r + 1) * pf].copy_from_slice(&h[..pf]);
            }
            if !self.value_pool {
                s.val[r * vf..(r + 1) * vf].copy_from_slice(&h[pf..]);
            }
        }
        let p = self.policy_size;
        let (all, gather) = match logits {
            Logits::Moves(moves, out) if !self.policy_columns.is_empty() => {
                // The convolutional head, for the moves asked only.
                self.move_logits(&s.head, heads, moves, out);
                (None, None)
            }
            Logits::Moves(moves, out) => {
                s.all.resize(b * p, 0.0);
                (Some(&mut s.all[..b * p]), Some((moves, out)))
            }
            Logits::All(l) => (Some(l), None),
        };
        if let Some(logits) = all {
            match &self.policy {
                PolicyOut::Dense(fc) => gemm(
                    isa,
                    fc,
                    &Gemm {
                        a: &s.pol,
                        a_rows: &s.rows_pol[..b],
                        taps: &[0],
                        seg: area * pf,
                        out_rows: &s.rows_logits[..b],
                        residual: false,
                        relu: false,
                    },
                    logits,
                    split,
                ),
                PolicyOut::Conv(out) => {
                    gemm(
                        isa,
                        out,
                        &Gemm {
                            a: &s.head,
                            a_rows: &s.rows_pix_pol[..m],
                            taps: &[0],
                            seg: pf,
                            out_rows: &s.rows_pix_log[..m],
                            residual: false,
                            relu: false,
                        },
                        &mut s.plog,
                        split,
                    );
                    // To the order of `crate::policy`: placements kind-major, spreads
                    // square-major (already their order within a square).
                    let k = out.n;
                    for (i, l) in logits.chunks_mut(p).take(b).enumerate() {
                        let (place, spread) = l.split_at_mut(3 * area);
                        for sq in 0..area {
                            let row = &s.plog[(i * area + sq) * k..(i * area + sq + 1) * k];
                            for kind in 0..3 {
                                place[kind * area + sq] = row[kind];
                            }
                            spread[sq * (k - 3)..(sq + 1) * (k - 3)].copy_from_slice(&row[3..]);
                        }
                    }
                }
            }
            if let Some((moves, out)) = gather {
                let mut o = 0;
                for (i, ms) in moves.iter().enumerate() {
                    for &mv in ms.iter() {
                        out[o] = logits[i * p + move_to_index(mv, n)];
                        o += 1;
                    }
                }
            }
        }
        let value_in = if self.value_pool {
            for (i, rows) in s.rows_pix_val[..m].chunks(area).enumerate() {
                pool_rows(&s.head, rows, vf, self.pool_scale, &mut s.vpool[i * 3 * vf..(i + 1) * 3 * vf]);
            }
            Gemm {
                a: &s.vpool[..],
                a_rows: &s.rows_vpool[..b],
                taps: &[0],
                seg: 3 * vf,
                out_rows: &[],
                residual: false,
                relu: true,
            }
        } else {
            Gemm {
                a: &s.val[..],
                a_rows: &s.rows_val[..b],
                taps: &[0],
                seg: area * vf,
                out_rows: &[],
                residual: false,
                relu: true,
            }
        };
        gemm(isa, &self.value_fc1, &Gemm { out_rows: &s.rows_hid[..b], ..value_in }, &mut s.hid, split);
        let hidden = self.value_fc1.n;
        let outs = self.value_b2.len();
        for (i, ((v, d), m)) in values.iter_mut().zip(draws.iter_mut()).zip(margins.iter_mut()).enumerate() {
            let h = &s.hid[i * hidden..(i + 1) * hidden];
            *m = match &self.margin {
                // The head predicts the margin / N²; the output is in flats.
                Some((w, bias)) => (h.iter().zip(w).map(|(a, w)| a * w).sum::<f32>() + bias) * area as f32,
                None => 0.0,
            };
            let mut z = [0.0f32; 3];
            for (k, zk) in z.iter_mut().enumerate().take(outs) {
                *zk =
                    h.iter().enumerate().map(|(j, a)| a * self.value_fc2[j * outs + k]).sum::<f32>() + self.value_b2[k];
            }
            *v = if outs == 3 {
                // Win/draw/loss logits: P(win) − P(loss), a softmax shifted by the maximum.
                let m = z[0].max(z[1]).max(z[2]);
                let e = z.map(|x| (x - m).exp());
                let sum = e[0] + e[1] + e[2];
                *d = e[1] / sum;
                (e[0] - e[2]) / sum
            } else {
                *d = 0.0;
                z[0].tanh()
            };
        }
    }
}

/// Where a pass writes its policy: every output of each position, or the outputs of
/// the given moves of each position only, one after another.
enum Logits<'a> {
    All(&'a mut [f32]),
    Moves(&'a [&'a [Move]], &'a mut [f32]),
}

impl<'a> Logits<'a> {
    /// The parts of chunks of `per` positions (`p` outputs a position when all).
    fn split(self, per: usize, p: usize) -> Vec<Logits<'a>> {
        match self {
            Logits::All(l) => l.chunks_mut(per * p).map(Logits::All).collect(),
            Logits::Moves(moves, mut l) => {
                let mut parts = Vec::new();
                for ms in moves.chunks(per) {
                    let (part, rest) = std::mem::take(&mut l).split_at_mut(ms.iter().map(|m| m.len()).sum());
                    parts.push(Logits::Moves(ms, part));
                    l = rest;
                }
                parts
            }
        }
    }
}

/// The per-position scalar outputs of a forward pass ([`FastNet::forward_scalars_into`]).
#[derive(Clone, Debug, Default)]
pub struct Scalars {
    /// Values for the side to move.
    pub values: Vec<f32>,
    /// Draw probabilities (0 without the win/draw/loss head).
    pub draws: Vec<f32>,
    /// Final flat margins in flats for the side to move, komi included (0 without the
    /// margin head).
    pub margins: Vec<f32>,
}
