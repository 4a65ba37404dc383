//! The network's forward pass with its activations as rows: one row per board square of
//! each position, the channels along the row (`[B·N², C]`, channels-last), and every
//! convolution a matrix product. The same network, weights and outputs as
//! [`TakNet::forward_all`] (a test compares both, values and gradients); what differs is
//! which kernels a device runs.
//!
//! burn's `conv2d` on its GPU backends without autotune is a direct convolution (one
//! thread a few output channels of one square, no reuse of the inputs through shared
//! memory), and burn converts between its channels-first tensors and the kernels'
//! channels-last layout around each call. Matrix products are what GPU kernels do well,
//! so on a GPU device the training step computes a 3x3 convolution of `x` (`[B·N², C]`)
//! as two of them:
//!
//! ```text
//! Z = x · W          W: [C, 9·C'], tap t's weights in columns t·C' .. (t + 1)·C'
//! y = S · Z          per position: S: [N², 9·N²] (0 or 1), Z seen as [B, 9·N², C']
//! ```
//!
//! `S` picks, for each output square `q` and tap `t`, the row of the square `q + offset(t)`
//! (nothing where that is off the board: the zero padding). The second product costs
//! `N² / C` of the first (0.56 on 6x6 with 64 channels) in FLOPs that are mostly zeros,
//! but it is one dense kernel instead of gathers and scatters: autodiff then gives the
//! backward pass as matrix products too (`Sᵀ · dy`, `dZ · Wᵀ`, `xᵀ · dZ`), three or four
//! kernels a convolution instead of burn's direct kernels and their layout copies. 1x1
//! convolutions are one product, BatchNorm normalises the rows' columns (burn's, the
//! same statistics), global pooling averages each position's rows.

use burn::nn::conv::Conv2d;
use burn::prelude::*;
use burn::tensor::activation::{relu, tanh};
use serde::{Deserialize, Serialize};

use crate::model::{NetOutput, Outputs, ResBlock, TakNet, pool_over};
use bredon_netform::config::ValueHead;

/// How a training step computes the network's convolutions.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Convolutions {
    /// [`Convolutions::Direct`] on every device: on the CPU the products train 13–17 %
    /// slower, and on an H200 at half the speed (2,313 samples/s against 4,831 at batch
    /// 512, docs/gpu.md).
    #[default]
    Auto,
    /// burn's `conv2d` over channels-first planes (`[B, C, N, N]`).
    Direct,
    /// Matrix products over channels-last rows (this module).
    Matmul,
}

impl Convolutions {
    /// The choice on `device`: `Auto` resolved (today the same on every device measured;
    /// the device stays in the signature for a backend where the products win).
    pub fn on(self, _device: &Device) -> Convolutions {
        match self {
            Convolutions::Auto => Convolutions::Direct,
            other => other,
        }
    }

    /// The name a config or a command line uses.
    pub fn name(self) -> &'static str {
        match self {
            Convolutions::Auto => "auto",
            Convolutions::Direct => "direct",
            Convolutions::Matmul => "matmul",
        }
    }
}

/// A name that is not a [`Convolutions`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown convolutions {0:?} (use auto, direct or matmul)")]
pub struct UnknownConvolutions(pub String);

impl std::str::FromStr for Convolutions {
    type Err = UnknownConvolutions;

    fn from_str(s: &str) -> Result<Convolutions, UnknownConvolutions> {
        match s {
            "auto" => Ok(Convolutions::Auto),
            "direct" => Ok(Convolutions::Direct),
            "matmul" => Ok(Convolutions::Matmul),
            other => Err(UnknownConvolutions(other.to_string())),
        }
    }
}

/// Activations of `positions` positions as rows `[positions · squares, channels]`.
#[derive(Clone, Debug)]
struct Rows {
    t: Tensor<2>,
    positions: usize,
    squares: usize,
}

impl Rows {
    fn map(self, f: impl FnOnce(Tensor<2>) -> Tensor<2>) -> Rows {
        Rows { t: f(self.t), ..self }
    }

    fn channels(&self) -> usize {
        self.t.dims()[1]
    }

    /// `[B, squares, C]`.
    fn per_position(&self) -> Tensor<3> {
        self.t.clone().reshape([self.positions, self.squares, self.channels()])
    }

    /// `[B, C · squares]` in the channels-first order (`c · squares + square`) that
    /// [`TakNet::forward_all`]'s flattened planes have.
    fn flatten_planes(&self) -> Tensor<2> {
        self.per_position().swap_dims(1, 2).reshape([self.positions as i32, -1])
    }
}

/// The 3x3 convolution's shift matrix for an `n`x`n` board: `[1, n², 9·n²]`, 1 at
/// `(q, p·9 + t)` where square `p` is square `q` moved by tap `t` (`t = 3·ky + kx`, the
/// kernel's row and column), 0 elsewhere and where that square is off the board.
fn shift_matrix(n: usize, device: &Device) -> Tensor<3> {
    let sq = n * n;
    let mut s = vec![0.0f32; sq * 9 * sq];
    for y in 0..n {
        for x in 0..n {
            let q = y * n + x;
            for ky in 0..3 {
                for kx in 0..3 {
                    let (sy, sx) = ((y + ky).wrapping_sub(1), (x + kx).wrapping_sub(1));
                    if sy < n && sx < n {
                        let p = sy * n + sx;
                        s[q * 9 * sq + p * 9 + ky * 3 + kx] = 1.0;
                    }
                }
            }
        }
    }
    Tensor::from_data(TensorData::new(s, [1, sq, 9 * sq]), device)
}

/// A convolution of the rows: 3x3 (zero padding, the shift matrix `shift`) or 1x1, with
/// the convolution's bias when it has one.
fn conv(conv: &Conv2d, x: Rows, shift: &Tensor<3>) -> Rows {
    let [out, inp, k, _] = conv.weight.dims();
    let w = conv.weight.val();
    let y = if k == 1 {
        x.t.clone().matmul(w.reshape([out, inp]).transpose())
    } else {
        debug_assert_eq!(k, 3, "the network's convolutions are 3x3 or 1x1");
        // [out, in, ky, kx] -> [in, ky, kx, out] -> [in, 9·out]: tap t's block of columns.
        let w: Tensor<2> = w.permute([1, 2, 3, 0]).reshape([inp, 9 * out]);
        let z: Tensor<3> = x.t.clone().matmul(w).reshape([x.positions, x.squares * 9, out]);
        shift.clone().matmul(z).reshape([x.positions * x.squares, out])
    };
    let y = match &conv.bias {
        Some(bias) => y + bias.val().unsqueeze_dim(0),
        None => y,
    };
    Rows { t: y, ..x }
}

/// [`crate::model::global_pool`] of the rows: `[B, 3C]`.
fn global_pool(x: &Rows, n: usize) -> Tensor<2> {
    pool_over(x.per_position(), 1, n)
}

fn block(b: &ResBlock, x: Rows, shift: &Tensor<3>, n: usize) -> Rows {
    let mut y = conv(&b.conv1, x.clone(), shift).map(|t| relu(b.bn1.forward(t)));
    if let Some(fc) = &b.gpool_fc {
        let g = fc.weight.dims()[0] / 3;
        let pooled = global_pool(&Rows { t: y.t.clone().narrow(1, 0, g), ..y }, n);
        let bias: Tensor<3> = fc.forward(pooled).unsqueeze_dim(1);
        let (positions, squares, c) = (y.positions, y.squares, y.channels());
        y = y.map(|t| (t.reshape([positions, squares, c]) + bias).reshape([positions * squares, c]));
    }
    let y = conv(&b.conv2, y, shift).map(|t| b.bn2.forward(t));
    Rows { t: relu(y.t + x.t), ..x }
}

/// The convolutional policy head's logits from the per-square features `p`:
/// [`TakNet::forward_all`]'s order (the 3 placement planes channels-first, then the
/// spreads square by square).
fn per_square_logits(out: &Conv2d, p: Rows, shift: &Tensor<3>) -> Tensor<2> {
    let y = conv(out, p, shift);
    let k = y.channels();
    let per = y.per_position();
    let place: Tensor<2> = per.clone().narrow(2, 0, 3).swap_dims(1, 2).reshape([y.positions as i32, -1]);
    let spread: Tensor<2> = per.narrow(2, 3, k - 3).reshape([y.positions as i32, -1]);
    Tensor::cat(vec![place, spread], 1)
}

impl TakNet {
    /// Policy logits and values, computed the way [`Convolutions::Auto`]
    /// picks on the network's device (burn's `conv2d` on the CPU, matrix products over
    /// rows on a GPU).
    pub fn forward(&self, x: Tensor<4>) -> (Tensor<2>, Tensor<2>) {
        let out = self.forward_with(x, Outputs::PolicyValue, Convolutions::Auto);
        (out.policy, out.value)
    }

    /// [`TakNet::forward_all`] computed as matrix products over channels-last rows (the
    /// [module](self) says why); the same outputs.
    pub fn forward_all_rows(&self, x: Tensor<4>, outputs: Outputs) -> NetOutput {
        let [b, planes, n, _] = x.dims();
        let device = x.device();
        let shift = shift_matrix(n, &device);
        let squares = n * n;
        let x = Rows { t: x.permute([0, 2, 3, 1]).reshape([b * squares, planes]), positions: b, squares };
        let mut h = conv(&self.stem, x, &shift).map(|t| relu(self.stem_bn.forward(t)));
        for blk in &self.blocks {
            h = block(blk, h, &shift, n);
        }
        let p = conv(&self.policy_conv, h.clone(), &shift).map(|t| relu(self.policy_bn.forward(t)));
        let aux = outputs == Outputs::All && self.aux();
        let (logits, opponent_policy) =
            self.policy_outputs(p, aux, |p| p.flatten_planes(), |out, p| per_square_logits(out, p, &shift));
        let ownership = self
            .ownership_conv
            .as_ref()
            .filter(|_| aux)
            .map(|c| tanh(conv(c, h.clone(), &shift).t.reshape([b as i32, -1])));
        let v = conv(&self.value_conv, h, &shift).map(|t| relu(self.value_bn.forward(t)));
        let v: Tensor<2> = match self.value_head() {
            ValueHead::Dense => v.flatten_planes(),
            ValueHead::Pool => global_pool(&v, n),
        };
        let (value, wdl, flat_margin) = self.value_outputs(v, aux);
        NetOutput { policy: logits, value, wdl, flat_margin, ownership, opponent_policy }
    }

    /// [`TakNet::forward_all`] or [`TakNet::forward_all_rows`], as `convolutions` says on
    /// the network's device.
    pub fn forward_with(&self, x: Tensor<4>, outputs: Outputs, convolutions: Convolutions) -> NetOutput {
        match convolutions.on(&self.device()) {
            Convolutions::Matmul => self.forward_all_rows(x, outputs),
            _ => self.forward_all(x, outputs),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bredon_netform::config::{NetConfig, PolicyHead};
    use burn::module::{Module, ModuleMapper, Param};
    use burn::tensor::Distribution;

    /// Replaces every weight with a random one, so that the zero-initialised layers (the
    /// global pooling's) take part in the comparison too.
    struct Randomise;

    impl ModuleMapper for Randomise {
        fn map_float<const D: usize>(&mut self, param: Param<Tensor<D>>) -> Param<Tensor<D>> {
            param.map(|t| {
                let noise = Tensor::random(t.shape(), Distribution::Normal(0.0, 0.3), &t.device());
                // A fresh leaf, as a network's parameters are.
                (t.mul_scalar(0.5) + noise).detach().require_grad()
            })
        }
    }

    fn floats<const D: usize>(t: Tensor<D>) -> Vec<f32> {
        t.into_data().convert::<f32>().try_into_vec::<f32>().unwrap()
    }

    fn assert_close(what: &str, a: Vec<f32>, b: Vec<f32>) {
        assert_eq!(a.len(), b.len(), "{what}: lengths");
        let scale = a.iter().fold(1.0f32, |m, v| m.max(v.abs()));
        let worst = a.iter().zip(&b).map(|(x, y)| (x - y).abs()).fold(0.0f32, f32::max);
        assert!(worst <= 1e-4 * scale, "{what}: largest difference {worst} (scale {scale})");
    }

    #[test]
    fn row_convolutions_give_the_planes_outputs_and_gradients() {
        let device = crate::device::cpu().autodiff();
        let configs = [
            (3, PolicyHead::Dense, ValueHead::Dense, false, false),
            (4, PolicyHead::Conv, ValueHead::Pool, true, true),
            (5, PolicyHead::Dense, ValueHead::Pool, true, false),
            (6, PolicyHead::Conv, ValueHead::Pool, true, true),
            (8, PolicyHead::Conv, ValueHead::Dense, false, true),
        ];
        for (size, policy_head, value_head, global_pool, wdl) in configs {
            let cfg = NetConfig {
                size,
                blocks: 2,
                channels: 8,
                policy_filters: 4,
                value_hidden: 8,
                aux: true,
                wdl,
                policy_head,
                value_head,
                global_pool,
                gpool_channels: 4,
                ..NetConfig::default()
            };
            let what = format!("{size}x{size} {policy_head:?} {value_head:?} gpool {global_pool} wdl {wdl}");
            let (net, x) = crate::draws::seeded(&device, size as u64, || {
                let net = TakNet::new(&cfg, &device).map(&mut Randomise);
                (net, Tensor::<4>::random([3, cfg.planes(), size, size], Distribution::Normal(0.0, 1.0), &device))
            });
            let planes = net.forward_all(x.clone(), Outputs::All);
            let rows = net.forward_all_rows(x, Outputs::All);
            let heads = |o: &NetOutput| {
                let mut v = vec![("policy", o.policy.clone()), ("value", o.value.clone())];
                for (name, t) in [
                    ("wdl", &o.wdl),
                    ("margin", &o.flat_margin),
                    ("ownership", &o.ownership),
                    ("opponent", &o.opponent_policy),
                ] {
                    if let Some(t) = t {
                        v.push((name, t.clone()));
                    }
                }
                v
            };
            // A loss that weighs every output differently, so that each gradient depends
            // on where each output went. The weights are drawn once and serve both passes.
            let weights: Vec<Tensor<2>> = crate::draws::drawn(|| {
                heads(&planes)
                    .iter()
                    .map(|(_, t)| Tensor::<2>::random(t.dims(), Distribution::Default, &device))
                    .collect()
            });
            let loss = |o: &NetOutput| {
                heads(o)
                    .into_iter()
                    .zip(&weights)
                    .enumerate()
                    .map(|(i, ((_, t), w))| (t * w.clone()).sum().mul_scalar(1.0 + i as f32))
                    .reduce(|a, b| a + b)
                    .unwrap()
            };
            for ((name, a), (_, b)) in heads(&planes).into_iter().zip(heads(&rows)) {
                assert_close(&format!("{what}: {name}"), floats(a), floats(b));
            }
            let gp = loss(&planes).backward();
            let gr = loss(&rows).backward();
            let mut params: Vec<(&str, Tensor<4>)> = vec![
                ("stem", net.stem.weight.val()),
                ("block conv1", net.blocks[0].conv1.weight.val()),
                ("block conv2", net.blocks[1].conv2.weight.val()),
                ("policy conv", net.policy_conv.weight.val()),
                ("value conv", net.value_conv.weight.val()),
            ];
            if let Some(out) = &net.policy_out {
                params.push(("policy out", out.weight.val()));
            }
            for (name, p) in params {
                assert_close(
                    &format!("{what}: grad {name}"),
                    floats(p.grad(&gp).unwrap()),
                    floats(p.grad(&gr).unwrap()),
                );
            }
            let mut vectors: Vec<(&str, Tensor<1>)> =
                vec![("stem bn gamma", net.stem_bn.gamma.val()), ("block bn2 beta", net.blocks[1].bn2.beta.val())];
            if let Some(fc) = &net.blocks[0].gpool_fc {
                vectors.push(("gpool fc bias", fc.bias.as_ref().unwrap().val()));
                let w = fc.weight.val();
                assert_close(
                    &format!("{what}: grad gpool fc"),
                    floats(w.grad(&gp).unwrap()),
                    floats(w.grad(&gr).unwrap()),
                );
            }
            for (name, p) in vectors {
                assert_close(
                    &format!("{what}: grad {name}"),
                    floats(p.grad(&gp).unwrap()),
                    floats(p.grad(&gr).unwrap()),
                );
            }
            let fc1 = net.value_fc1.weight.val();
            assert_close(
                &format!("{what}: grad value fc1"),
                floats(fc1.grad(&gp).unwrap()),
                floats(fc1.grad(&gr).unwrap()),
            );
        }
    }

    #[test]
    fn the_shift_matrix_picks_each_neighbour_once() {
        let device = crate::device::cpu();
        for n in 3..=8 {
            let s = floats(shift_matrix(n, &device));
            let sq = n * n;
            for q in 0..sq {
                let row = &s[q * 9 * sq..(q + 1) * 9 * sq];
                let (y, x) = (q / n, q % n);
                let inside = (y.saturating_sub(1)..=(y + 1).min(n - 1)).count()
                    * (x.saturating_sub(1)..=(x + 1).min(n - 1)).count();
                assert_eq!(row.iter().filter(|&&v| v == 1.0).count(), inside, "{n}x{n} square {q}");
                // The centre tap (4) of square q is q itself.
                assert_eq!(row[q * 9 + 4], 1.0);
            }
        }
    }
}
