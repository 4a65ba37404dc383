//! The residual policy/value network.

use burn::module::{ModuleVisitor, Param};
use burn::nn::conv::{Conv2d, Conv2dConfig};
use burn::nn::{BatchNorm, BatchNormConfig, Initializer, Linear, LinearConfig, PaddingConfig2d};
use burn::prelude::*;
use burn::tensor::activation::{relu, softmax, tanh};

use bredon_netform::config::{NetConfig, PolicyHead, ValueHead, pool_size_scale};
use bredon_netform::policy::policy_size;

/// Global pooling (KataGo) of `x` `[B, C, N, N]` over the board: `[B, 3C]` holding, per
/// channel, the mean, the mean times [`pool_size_scale`]`(N)`, and the maximum (in that
/// order: all means, then all scaled means, then all maxima).
pub fn global_pool(x: Tensor<4>) -> Tensor<2> {
    let [b, c, h, w] = x.dims();
    pool_over(x.reshape([b, c, h * w]), 2, h)
}

/// [`global_pool`] of `flat` (`[B, ·, ·]`, the board's squares along `dim` (1 or 2) and the
/// channels along the other) on an `n`x`n` board: `[B, 3C]`.
pub(crate) fn pool_over(flat: Tensor<3>, dim: usize, n: usize) -> Tensor<2> {
    let [b, ..] = flat.dims();
    let mean: Tensor<2> = flat.clone().mean_dim(dim).reshape([b as i32, -1]);
    let max: Tensor<2> = flat.max_dim(dim).reshape([b as i32, -1]);
    let scaled = mean.clone().mul_scalar(pool_size_scale(n));
    Tensor::cat(vec![mean, scaled, max], 1)
}

/// conv-bn-relu-conv-bn + skip + relu; with global pooling, conv-bn-relu, + the bias of
/// `gpool_fc` on the pooled first channels, conv-bn + skip + relu.
#[derive(Module, Debug)]
pub struct ResBlock {
    pub(crate) conv1: Conv2d,
    pub(crate) bn1: BatchNorm,
    pub(crate) conv2: Conv2d,
    pub(crate) bn2: BatchNorm,
    /// Global pooling ([`NetConfig::global_pool`]): `3 × gpool_channels` pooled features
    /// to a bias per channel (initialised to zero).
    pub(crate) gpool_fc: Option<Linear>,
}

fn conv(i: usize, o: usize, k: usize, device: &Device) -> Conv2d {
    let pad = if k == 1 { PaddingConfig2d::Valid } else { PaddingConfig2d::Same };
    Conv2dConfig::new([i, o], [k, k]).with_padding(pad).with_bias(false).init(device)
}

impl ResBlock {
    fn new(cfg: &NetConfig, device: &Device) -> ResBlock {
        let c = cfg.channels;
        let gpool = || {
            assert!(
                (1..=c).contains(&cfg.gpool_channels),
                "gpool_channels {} is not within 1 to channels ({c})",
                cfg.gpool_channels
            );
            LinearConfig::new(3 * cfg.gpool_channels, c).with_initializer(Initializer::Zeros).init(device)
        };
        ResBlock {
            conv1: conv(c, c, 3, device),
            bn1: BatchNormConfig::new(c).init(device),
            conv2: conv(c, c, 3, device),
            bn2: BatchNormConfig::new(c).init(device),
            gpool_fc: cfg.global_pool.then(gpool),
        }
    }

    pub(crate) fn forward(&self, x: Tensor<4>) -> Tensor<4> {
        let y = self.first(x.clone());
        self.rest(x, y)
    }

    /// [`ResBlock::forward`] that also returns the first convolution's activations (after
    /// its ReLU, before the pooled bias), for `crate::activity`. `forward` does not keep
    /// them, so that training holds no extra reference to them.
    pub(crate) fn forward_traced(&self, x: Tensor<4>) -> (Tensor<4>, Tensor<4>) {
        let mid = self.first(x.clone());
        (self.rest(x, mid.clone()), mid)
    }

    /// conv1, BatchNorm, ReLU.
    fn first(&self, x: Tensor<4>) -> Tensor<4> {
        relu(self.bn1.forward(self.conv1.forward(x)))
    }

    /// From the first convolution's activations `y` on: the pooled bias, conv2,
    /// BatchNorm, the skip from the block's input `x`, ReLU.
    fn rest(&self, x: Tensor<4>, mut y: Tensor<4>) -> Tensor<4> {
        if let Some(fc) = &self.gpool_fc {
            let [b, c, h, w] = y.dims();
            let g = fc.weight.dims()[0] / 3;
            let bias: Tensor<4> = fc.forward(global_pool(y.clone().narrow(1, 0, g))).reshape([b, c, 1, 1]);
            y = y + bias.expand([b, c, h, w]);
        }
        let y = self.bn2.forward(self.conv2.forward(y));
        relu(y + x)
    }
}

/// Which outputs a forward pass computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outputs {
    /// The policy and the value: what the search needs.
    PolicyValue,
    /// Every head the network has: the auxiliary ones (flat margin, ownership, opponent
    /// policy) too.
    All,
}

/// Every output of the network for a batch of `B` positions.
#[derive(Clone, Debug)]
pub struct NetOutput {
    /// Policy logits `[B, policy_size(N)]`.
    pub policy: Tensor<2>,
    /// Values `[B, 1]` in [-1, 1] for the side to move (P(win) − P(loss) with WDL).
    pub value: Tensor<2>,
    /// Win/draw/loss logits `[B, 3]` (with [`NetConfig::wdl`]).
    pub wdl: Option<Tensor<2>>,
    /// Predicted final flat margin / N² for the side to move `[B, 1]` (with `aux`).
    pub flat_margin: Option<Tensor<2>>,
    /// Predicted final owner of each square `[B, N²]` in [-1, 1], +1 = the side to move
    /// (with `aux`).
    pub ownership: Option<Tensor<2>>,
    /// The opponent's next-move policy logits `[B, policy_size(N)]` (with `aux`).
    pub opponent_policy: Option<Tensor<2>>,
}

/// The network. Input `[B, planes(input_version), N, N]`; outputs policy logits `[B, policy_size(N)]`
/// and values `[B, 1]` in [-1, 1] for the side to move.
#[derive(Module, Debug)]
pub struct TakNet {
    pub(crate) stem: Conv2d,
    pub(crate) stem_bn: BatchNorm,
    pub(crate) blocks: Vec<ResBlock>,
    pub(crate) policy_conv: Conv2d,
    pub(crate) policy_bn: BatchNorm,
    /// Dense policy head: the flattened policy features to the logits.
    pub(crate) policy_fc: Option<Linear>,
    /// Convolutional policy head: 1x1, policy features to the logits per square.
    pub(crate) policy_out: Option<Conv2d>,
    pub(crate) value_conv: Conv2d,
    pub(crate) value_bn: BatchNorm,
    pub(crate) value_fc1: Linear,
    /// `value_hidden` to 1 (tanh value) or 3 (WDL logits).
    pub(crate) value_fc2: Linear,
    /// Auxiliary: `value_hidden` to the flat margin.
    pub(crate) margin_fc: Option<Linear>,
    /// Auxiliary: 1x1 convolution of the trunk to one ownership plane (with bias, no BN).
    pub(crate) ownership_conv: Option<Conv2d>,
    /// Auxiliary: the policy features to the opponent's policy logits (dense head).
    pub(crate) opponent_policy_fc: Option<Linear>,
    /// Auxiliary: the same for the convolutional head (1x1 per square).
    pub(crate) opponent_policy_out: Option<Conv2d>,
    /// Input plane layout (not a weight: set from the [`NetConfig`] when built).
    pub(crate) input_version: u32,
}

impl TakNet {
    /// A freshly initialised network for `cfg` (whose size must be set and whose input
    /// version must be known, see [`bredon_netform::encoding::check_input_version`]),
    /// every weight drawn now from burn's generator as it stands ([`crate::draws`]).
    pub fn new(cfg: &NetConfig, device: &Device) -> TakNet {
        crate::draws::drawn(|| {
            let net = TakNet::unloaded(cfg, device);
            net.visit(&mut DrawAll);
            net
        })
    }

    /// [`TakNet::new`] with its weights drawn from `seed`: the same network for the same
    /// `seed` on every call, whatever other threads of the process draw meanwhile.
    pub fn seeded(cfg: &NetConfig, device: &Device, seed: u64) -> TakNet {
        crate::draws::seeded(device, seed, || TakNet::new(cfg, device))
    }

    /// The layers with no weight drawn yet, for a record that sets every one (a full
    /// `try_load_record`, as [`crate::checkpoint`] loads): burn's parameters are lazy and
    /// loading replaces them undrawn. A parameter left out would be drawn at its first use,
    /// outside [`crate::draws`]' lock.
    pub(crate) fn unloaded(cfg: &NetConfig, device: &Device) -> TakNet {
        let n = cfg.size;
        let c = cfg.channels;
        assert!(cfg.planes() > 0, "unknown input version {}", cfg.input_version);
        let dense = cfg.policy_head == PolicyHead::Dense;
        let pf = cfg.policy_filters;
        let fc = || LinearConfig::new(pf * n * n, policy_size(n)).init(device);
        let per_square = || Conv2dConfig::new([pf, PolicyHead::conv_outputs(n)], [1, 1]).with_bias(true).init(device);
        TakNet {
            stem: conv(cfg.planes(), c, 3, device),
            stem_bn: BatchNormConfig::new(c).init(device),
            blocks: (0..cfg.blocks).map(|_| ResBlock::new(cfg, device)).collect(),
            policy_conv: conv(c, cfg.policy_filters, 1, device),
            policy_bn: BatchNormConfig::new(cfg.policy_filters).init(device),
            policy_fc: dense.then(fc),
            policy_out: (!dense).then(per_square),
            value_conv: conv(c, cfg.value_filters, 1, device),
            value_bn: BatchNormConfig::new(cfg.value_filters).init(device),
            value_fc1: LinearConfig::new(cfg.value_features(), cfg.value_hidden).init(device),
            value_fc2: LinearConfig::new(cfg.value_hidden, cfg.value_outputs()).init(device),
            margin_fc: cfg.aux.then(|| LinearConfig::new(cfg.value_hidden, 1).init(device)),
            ownership_conv: cfg.aux.then(|| Conv2dConfig::new([c, 1], [1, 1]).with_bias(true).init(device)),
            opponent_policy_fc: (cfg.aux && dense).then(fc),
            opponent_policy_out: (cfg.aux && !dense).then(per_square),
            input_version: cfg.input_version,
        }
    }

    /// Whether the value head gives win/draw/loss logits.
    pub fn wdl(&self) -> bool {
        self.value_fc2.weight.dims()[1] == 3
    }

    /// The kind of policy head.
    pub fn policy_head(&self) -> PolicyHead {
        if self.policy_out.is_some() { PolicyHead::Conv } else { PolicyHead::Dense }
    }

    /// Whether the auxiliary heads are present.
    pub fn aux(&self) -> bool {
        self.margin_fc.is_some()
    }

    /// Channels pooled by each residual block's global pooling, or `None` without it.
    pub fn gpool_channels(&self) -> Option<usize> {
        self.blocks.first().and_then(|b| b.gpool_fc.as_ref()).map(|fc| fc.weight.dims()[0] / 3)
    }

    /// The kind of value head (read from the shapes: the pooled head's hidden layer has
    /// `3 × value_filters` inputs, the dense one `value_filters × N²` with `N ≥ 3`).
    pub fn value_head(&self) -> ValueHead {
        let filters = self.value_conv.weight.dims()[0];
        if self.value_fc1.weight.dims()[0] == 3 * filters { ValueHead::Pool } else { ValueHead::Dense }
    }

    /// The input plane layout the network reads.
    pub fn input_version(&self) -> u32 {
        self.input_version
    }

    /// The device the weights are on (inputs must be made there).
    pub fn device(&self) -> Device {
        self.stem.weight.val().device()
    }

    /// The network's outputs: the auxiliary heads only with [`Outputs::All`] (and when the
    /// network has them).
    pub fn forward_all(&self, x: Tensor<4>, outputs: Outputs) -> NetOutput {
        let aux = outputs == Outputs::All;
        let [b, _, _, _] = x.dims();
        let mut h = relu(self.stem_bn.forward(self.stem.forward(x)));
        for block in &self.blocks {
            h = block.forward(h);
        }
        let p = relu(self.policy_bn.forward(self.policy_conv.forward(h.clone())));
        let aux = aux && self.aux();
        let (logits, opponent_policy) = self.policy_outputs(p, aux, |p| p.reshape([b as i32, -1]), per_square_logits);
        let ownership = self.ownership_conv.as_ref().filter(|_| aux).map(|conv| {
            let o: Tensor<2> = conv.forward(h.clone()).reshape([b as i32, -1]);
            tanh(o)
        });
        let v = relu(self.value_bn.forward(self.value_conv.forward(h)));
        let v: Tensor<2> = match self.value_head() {
            ValueHead::Dense => v.reshape([b as i32, -1]),
            ValueHead::Pool => global_pool(v),
        };
        let (value, wdl, flat_margin) = self.value_outputs(v, aux);
        NetOutput { policy: logits, value, wdl, flat_margin, ownership, opponent_policy }
    }

    /// The policy head after its first layer: the logits and (with `aux`) the opponent's,
    /// from the features `p` through the dense layers (`flatten`: `p` as `[B, features]`
    /// in the channels-first order) or the per-square ones (`per_square`: a last layer's
    /// logits in the policy index order), whichever the network has.
    pub(crate) fn policy_outputs<P: Clone>(
        &self,
        p: P,
        aux: bool,
        flatten: impl Fn(P) -> Tensor<2>,
        per_square: impl Fn(&Conv2d, P) -> Tensor<2>,
    ) -> (Tensor<2>, Option<Tensor<2>>) {
        match (&self.policy_fc, &self.policy_out) {
            (Some(fc), _) => {
                let p = flatten(p);
                let opponent = self.opponent_policy_fc.as_ref().filter(|_| aux).map(|fc| fc.forward(p.clone()));
                (fc.forward(p), opponent)
            }
            (None, Some(out)) => {
                let opponent = self.opponent_policy_out.as_ref().filter(|_| aux).map(|o| per_square(o, p.clone()));
                (per_square(out, p), opponent)
            }
            (None, None) => unreachable!("a network has a policy head"),
        }
    }

    /// The value head after its pooling or flattening: the value, the WDL logits (with
    /// [`NetConfig::wdl`]) and the flat margin (with `aux`) from its features `v`.
    pub(crate) fn value_outputs(&self, v: Tensor<2>, aux: bool) -> (Tensor<2>, Option<Tensor<2>>, Option<Tensor<2>>) {
        let v = relu(self.value_fc1.forward(v));
        let flat_margin = self.margin_fc.as_ref().filter(|_| aux).map(|fc| fc.forward(v.clone()));
        let z = self.value_fc2.forward(v);
        if self.wdl() {
            let prob = softmax(z.clone(), 1);
            (prob.clone().narrow(1, 0, 1) - prob.narrow(1, 2, 1), Some(z), flat_margin)
        } else {
            (tanh(z), None, flat_margin)
        }
    }
}

/// What [`TakNet::from_compatible`] took from the source network.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TransferReport {
    /// Tensors copied from the source (same name and shape), in record order.
    pub copied: Vec<String>,
    /// Tensors of the convolutional policy heads carried to another board size: the
    /// channels of the moves both sizes have copied, the others (spreads carrying more
    /// pieces than the source's size allows) zero.
    pub mapped: Vec<String>,
    /// Tensors left at their fresh initialisation (absent from the source, or of another
    /// shape there): zero for the global pooling layers. The tensors of added blocks are
    /// not listed here but in `identity_blocks`.
    pub fresh: Vec<String>,
    /// Residual blocks added after the source's last one, which start as the identity
    /// (their second batch norm's scale and shift at zero).
    pub identity_blocks: Vec<usize>,
}

impl TransferReport {
    /// One line: how many tensors were copied or mapped and which are new.
    pub fn summary(&self) -> String {
        let fresh = if self.fresh.is_empty() { "none".to_string() } else { self.fresh.join(", ") };
        let mapped = if self.mapped.is_empty() {
            String::new()
        } else {
            format!("; mapped to the new board size: {}", self.mapped.join(", "))
        };
        let added = match (self.identity_blocks.first(), self.identity_blocks.last()) {
            (Some(a), Some(b)) => format!("; residual blocks {a} to {b} added as the identity"),
            _ => String::new(),
        };
        format!("copied {} tensors{mapped}{added}; new (freshly initialised): {fresh}", self.copied.len())
    }
}

/// The channels of a convolutional policy head for board size `to` taken from one for
/// `from`: `Some(source channel)` for the placements and for every spread whose drop
/// pattern both sizes have (a pattern is the same move on every size, see
/// [`crate::policy`]), `None` for the patterns only `to` has.
fn policy_channel_map(from: usize, to: usize) -> Vec<Option<usize>> {
    let (pf, pt) = ((1usize << from) - 1, (1usize << to) - 1);
    let spreads = (0..4 * pt).map(|c| {
        let (dir, pattern) = (c / pt, c % pt);
        (pattern < pf).then_some(3 + dir * pf + pattern)
    });
    (0..3).map(Some).chain(spreads).collect()
}

/// `tensor` (f32, `[channels, ...]` with the channel first) with its channels picked by
/// `map` (zero where `None`), or `None` when its shape does not fit `shape`.
fn remap_channels(tensor: burn_pack::Tensor, shape: &[u64], map: &[Option<usize>]) -> Option<burn_pack::Tensor> {
    let rest: u64 = shape.iter().skip(1).product();
    let fits = tensor.dtype == burn_pack::DType::F32
        && shape.first() == Some(&(map.len() as u64))
        && tensor.shape.len() == shape.len()
        && tensor.shape.iter().skip(1).map(|&d| d as u64).eq(shape.iter().skip(1).copied());
    if !fits {
        return None;
    }
    let (name, dtype, _, id, bytes) = tensor.into_parts().ok()?;
    let row = 4 * rest as usize;
    let source_rows = bytes.len() / row;
    let mut out = vec![0u8; map.len() * row];
    for (c, from) in map.iter().enumerate() {
        if let Some(f) = from.filter(|&f| f < source_rows) {
            out[c * row..(c + 1) * row].copy_from_slice(&bytes[f * row..(f + 1) * row]);
        }
    }
    let shape: Vec<usize> = shape.iter().map(|&d| d as usize).collect();
    Some(burn_pack::Tensor::new(name, dtype, shape, id, burn::tensor::Bytes::from_bytes_vec(out)))
}

impl TakNet {
    /// A network of `net` (size set) that takes from `source`, a network of `source_cfg`,
    /// every tensor whose name and shape match; the others keep their fresh
    /// initialisation. This is how a trained model gains the options that start neutral:
    /// with only [`NetConfig::global_pool`] added, the new gpool layers are zero and the
    /// result computes exactly what `source` does. (Other differences, such as the value
    /// head's kind, leave the layers they change freshly initialised.) Residual blocks
    /// beyond the source's start as the identity, so a deeper network computes what
    /// `source` does too.
    ///
    /// Across board sizes (KataGo's one net for all sizes) the trunk's convolutions, the
    /// global pooling, the pooled value head and the ownership head carry over as they
    /// are; the convolutional policy heads keep the logits of every move both sizes have
    /// (the new ones start at zero); layers over N² features (dense heads) start fresh.
    /// A network whose heads are all size-independent then computes on the new size
    /// exactly what `source` computes there.
    pub fn from_compatible(net: &NetConfig, source: &TakNet, source_cfg: &NetConfig) -> (TakNet, TransferReport) {
        let device = source.device();
        let expected = bredon_netform::limits::expected_tensors(net);
        let bytes = source.clone().into_record().into_bytes().expect("a network's record serialises");
        let stored = burn_pack::Reader::from_bytes(bytes)
            .and_then(|r| r.into_tensors())
            .expect("a record just written reads back");
        let mut by_name: std::collections::HashMap<String, burn_pack::Tensor> =
            stored.into_iter().map(|t| (t.name.clone(), t)).collect();
        let policy_map = (net.size != source_cfg.size && net.policy_head == PolicyHead::Conv)
            .then(|| policy_channel_map(source_cfg.size, net.size));
        let mut kept = Vec::new();
        let mut report =
            TransferReport { identity_blocks: (source_cfg.blocks..net.blocks).collect(), ..Default::default() };
        let added: Vec<String> = report.identity_blocks.iter().map(|b| format!("blocks.{b}.")).collect();
        for (name, shape) in &expected {
            let fits = by_name.get(name).is_some_and(|t| {
                t.dtype == burn_pack::DType::F32 && t.shape.iter().map(|&d| d as u64).eq(shape.iter().copied())
            });
            let per_square = name.starts_with("policy_out.") || name.starts_with("opponent_policy_out.");
            if fits {
                kept.push(by_name.remove(name).expect("present"));
                report.copied.push(name.clone());
            } else if let Some(t) = policy_map
                .as_ref()
                .filter(|_| per_square)
                .and_then(|map| remap_channels(by_name.remove(name)?, shape, map))
            {
                kept.push(t);
                report.mapped.push(name.clone());
            } else if !added.iter().any(|prefix| name.starts_with(prefix)) {
                report.fresh.push(name.clone());
            }
        }
        let bytes = burn_pack::Writer::new(kept).into_bytes().expect("tensors serialise");
        let record = burn::store::ModuleRecord::from_bytes(bytes).expect("a record just written reads back");
        // The layers `source` lacks start from a fixed seed: the same on every transfer.
        let mut model = TakNet::seeded(net, &device, 0)
            .try_load_record(record.allow_partial(true))
            .expect("tensors of matching names and shapes load");
        // Blocks beyond the source's compute `relu(bn2(..) + x)` = `x` (x is already a
        // ReLU output) while bn2's scale and shift are zero: the deeper network computes
        // what the source does, and the new blocks learn from there.
        for &b in &report.identity_blocks {
            let bn2 = &mut model.blocks[b].bn2;
            bn2.gamma = bn2.gamma.clone().map(|t| t.zeros_like());
            bn2.beta = bn2.beta.clone().map(|t| t.zeros_like());
        }
        (model.valid(), report)
    }

    /// This network (of architecture `cfg`) for games on `size`x`size` boards, with the
    /// architecture it then has: itself on its own size; on another, carried there by
    /// [`TakNet::from_compatible`] when no layer is sized by the board
    /// ([`NetConfig::plays_every_size`]), so it computes there what it learnt (the moves
    /// its own size lacks start at logit 0); else `None`.
    pub fn on_size(&self, cfg: &NetConfig, size: usize) -> Option<(TakNet, NetConfig)> {
        if size == cfg.size {
            return Some((self.clone(), cfg.clone()));
        }
        if !cfg.plays_every_size() {
            return None;
        }
        let net = NetConfig { size, ..cfg.clone() };
        let (model, report) = TakNet::from_compatible(&net, self, cfg);
        report.fresh.is_empty().then_some((model, net))
    }
}

/// The convolutional head's logits in the order of [`crate::policy`]: `out` gives
/// `[B, 3 + 4P, N, N]`; placements are kind-major (`kind × N² + square`, the first three
/// channels flattened as they are), spreads square-major (`(square × 4 + direction) × P +
/// pattern − 1`, the other channels moved last before flattening).
fn per_square_logits(out: &Conv2d, p: Tensor<4>) -> Tensor<2> {
    let y = out.forward(p);
    let [b, k, _, _] = y.dims();
    let place: Tensor<2> = y.clone().narrow(1, 0, 3).reshape([b as i32, -1]);
    let spread: Tensor<2> = y.narrow(1, 3, k - 3).permute([0, 2, 3, 1]).reshape([b as i32, -1]);
    Tensor::cat(vec![place, spread], 1)
}

/// Draws every lazy parameter of a module (reading one draws it).
struct DrawAll;

impl ModuleVisitor for DrawAll {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        let _ = param.val();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bredon_netform::policy::index_to_move;
    use burn::tensor::Distribution;

    fn floats<const D: usize>(t: Tensor<D>) -> Vec<f32> {
        t.into_data().convert::<f32>().try_into_vec::<f32>().unwrap()
    }

    /// Every logit of the convolutional head is the 1x1 convolution at the move's square
    /// of the channel of its kind (placement) or direction and drop pattern (spread),
    /// computed here from the move itself, independently of the reshaping in the model.
    #[test]
    fn conv_policy_logits_follow_the_policy_index_order() {
        let device = crate::device::cpu();
        for size in [3, 5, 6] {
            let cfg = NetConfig {
                size,
                blocks: 1,
                channels: 8,
                policy_filters: 4,
                aux: true,
                policy_head: PolicyHead::Conv,
                ..NetConfig::default()
            };
            let net = TakNet::new(&cfg, &device);
            assert!(net.policy_fc.is_none() && net.opponent_policy_fc.is_none());
            let x = crate::draws::drawn(|| {
                Tensor::<4>::random([2, cfg.planes(), size, size], Distribution::Normal(0.0, 1.0), &device)
            });
            let out = net.forward_all(x.clone(), Outputs::All);
            let mut h = relu(net.stem_bn.forward(net.stem.forward(x)));
            for block in &net.blocks {
                h = block.forward(h);
            }
            let p = floats(relu(net.policy_bn.forward(net.policy_conv.forward(h))));
            let area = size * size;
            let pf = cfg.policy_filters;
            let k = PolicyHead::conv_outputs(size);
            let patterns = (1usize << size) - 1;
            for (conv, logits) in
                [(&net.policy_out, out.policy), (&net.opponent_policy_out, out.opponent_policy.unwrap())]
            {
                let conv = conv.as_ref().unwrap();
                let w = floats(conv.weight.val());
                let bias = floats(conv.bias.as_ref().unwrap().val());
                let logits = floats(logits);
                assert_eq!(logits.len(), 2 * policy_size(size));
                for b in 0..2 {
                    for i in 0..policy_size(size) {
                        let Some(mv) = index_to_move(i, size) else { continue };
                        let sq = mv.square().index();
                        let channel = if mv.is_placement() {
                            mv.kind().index()
                        } else {
                            3 + mv.direction().index() * patterns + mv.pattern() as usize - 1
                        };
                        assert!(channel < k);
                        let expected = bias[channel]
                            + (0..pf).map(|f| w[channel * pf + f] * p[(b * pf + f) * area + sq]).sum::<f32>();
                        let got = logits[b * policy_size(size) + i];
                        assert!((got - expected).abs() < 1e-4, "{size}x{size} {mv:?}: {got} vs {expected}");
                    }
                }
            }
        }
    }
}
