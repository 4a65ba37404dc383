//! One forward pass: encoding and upload on the host, the kernels launched in one
//! submission, and the outputs read back ([`Ticket`]).

use bredon_netform::encoding::{COMPACT_CONSTANTS, compact_table, encode_compact};
use bredon_netform::policy::move_to_index;
use bredon_rules::{Move, Position};
use rayon::prelude::*;

use super::error::WgslError;
use super::net::*;
use crate::times::PassTimes;

impl WgslNet {
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
    /// `bredon_infer::forward_timed`: encoding on the host, the upload, the kernels,
    /// the read back and the conversion, the device waited for after each (so each
    /// phase's time is its own). For benchmarks (`bredon bench nn`), not for search.
    pub fn evaluate_timed(
        &self,
        positions: &[&Position],
        legal: &[&[Move]],
    ) -> Result<(WgslOutputs, PassTimes), WgslError> {
        let mut t = PassTimes::default();
        let ticket = self.launch_timed(positions, Some(legal), Some(&mut t))?;
        let out = ticket.finish_timed(Some(&mut t))?;
        Ok((out, t))
    }

    pub(super) fn wait(&self, submission: wgpu::SubmissionIndex) -> Result<(), WgslError> {
        self.device
            .poll(wgpu::PollType::Wait { submission_index: Some(submission), timeout: None })
            .map(|_| ())
            .map_err(|e| WgslError::Execution(e.to_string()))
    }

    pub(super) fn launch_timed(
        &self,
        positions: &[&Position],
        legal: Option<&[&[Move]]>,
        mut times: Option<&mut PassTimes>,
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
    pub(super) fn params(&self, b: usize, softmax: bool) -> Vec<u8> {
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

    pub(super) fn finish_timed(mut self, times: Option<&mut PassTimes>) -> Result<WgslOutputs, WgslError> {
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
