//! Building a [`WgslNet`]: its pipelines, weights and buffer sets on a device, and the
//! agreement check between two arithmetics.

use std::sync::Mutex;

use bredon_netform::config::pool_size_scale;
use bredon_netform::encoding::{COMPACT_CONSTANTS, planes};
use bredon_netform::folded::{FoldedNet, Matrix};
use bredon_netform::policy::policy_size;
use bredon_netform::positions::random_positions;
use bredon_rules::{Move, Position};

use super::error::WgslError;
use super::net::*;
use crate::arithmetic::Arithmetic;

impl WgslNet {
    /// [`WgslNet::with_arithmetic`] for a search: in an arithmetic other than single
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
        net: &FoldedNet,
        adapter: &wgpu::Adapter,
        arithmetic: Arithmetic,
    ) -> Result<(WgslNet, Option<WgslError>), WgslError> {
        let reference = WgslNet::with_arithmetic(net, adapter, Arithmetic::F32)?;
        if arithmetic == Arithmetic::F32 {
            return Ok((reference, None));
        }
        let why = match WgslNet::with_arithmetic(net, adapter, arithmetic) {
            Ok(candidate) => {
                let positions = random_positions(net.size(), SEARCH_CHECK_POSITIONS, 0x5eed);
                let positions: Vec<&Position> = positions.iter().collect();
                match candidate.agrees_with(&reference, &positions) {
                    Ok(()) => return Ok((candidate, None)),
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
    pub(super) fn with_trunk_kernel(
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
            expand: pipeline("expand", include_str!("expand.wgsl")),
            gpool: pipeline("gpool", include_str!("gpool.wgsl")),
            vpool: pipeline("vpool", include_str!("vpool.wgsl")),
            value: pipeline("value", include_str!("value.wgsl")),
            gather: pipeline("gather", include_str!("gather.wgsl")),
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
    pub(super) fn binding_floats(&self) -> usize {
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

    /// Buffers and bind groups for batches of up to `positions` positions and `moves`
    /// moves in all.
    pub(super) fn make_set(&self, positions: usize, moves: usize) -> Set {
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
    pub(super) fn bind(&self, set: &Set, i: usize, op: &Op) -> wgpu::BindGroup {
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
