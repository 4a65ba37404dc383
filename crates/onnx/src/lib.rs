//! # bredon-onnx
//!
//! ONNX export: the network as a standard ONNX model (opset 17) for other runtimes.
//!
//! The graph is built from the [`FoldedNet`] (BatchNorm folded into the convolutions)
//! with the ONNX protobuf types of the `onnx-protobuf` crate:
//!
//! - input `planes`: `[batch, P, N, N]` float32 (the `bredon_netform::encoding` planes of the
//!   model's input version, P = 27 for version 1 and 31 for version 2;
//!   channel-major, square `(row, col)` at `[.., row, col]`), batch dynamic;
//! - outputs `policy_logits`: `[batch, policy_size(N)]` (indices of `bredon_netform::policy`;
//!   apply a softmax over the legal moves), and `value`: `[batch, 1]` in [-1, 1] for the
//!   side to move; with the WDL head also `wdl_logits` `[batch, 3]` (win, draw, loss;
//!   `value` is then P(win) − P(loss)); with the auxiliary heads also `flat_margin`
//!   `[batch, 1]` (final flat margin / N² for the side to move), `ownership`
//!   `[batch, N²]` (final owner of each square, +1 = the side to move) and
//!   `opponent_policy_logits` `[batch, policy_size(N)]`;
//! - global pooling ([`bredon_netform::NetConfig::global_pool`], the pooling value head): `Slice`
//!   of the pooled channels, `ReduceMean` and `ReduceMax` over the board, a `Mul` by the
//!   board-size scale, `Concat`, then `Gemm`; a block's biases are `Reshape`d to
//!   `[batch, channels, 1, 1]` and added by a broadcasting `Add`;
//! - metadata properties: `size`, `half_komi`, `komi`, `input_version`, `planes`,
//!   `policy_size`, `net` (the [`bredon_netform::NetConfig`] as JSON), `blocks`, `channels`,
//!   `step`, `generation`, `producer`.

mod error;

pub use error::OnnxError;
use onnx_protobuf::attribute_proto::AttributeType;
use onnx_protobuf::tensor_proto::DataType;
use onnx_protobuf::tensor_shape_proto::{Dimension, dimension};
use onnx_protobuf::{
    AttributeProto, GraphProto, Message, ModelProto, NodeProto, OperatorSetIdProto, StringStringEntryProto,
    TensorProto, TensorShapeProto, TypeProto, ValueInfoProto, type_proto,
};
use protobuf::{EnumOrUnknown, MessageField};
use std::path::Path;

use bredon_netform::config::pool_size_scale;
use bredon_netform::encoding::planes;
use bredon_netform::folded::{FoldedConv, FoldedLinear, FoldedNet};
use bredon_netform::meta::ModelMeta;
use bredon_netform::policy::policy_size;
use bredon_storage::fsutil::atomic_write;

/// The opset the graph is written for.
pub const OPSET: i64 = 17;
/// ONNX IR version of opset 17.
const IR_VERSION: i64 = 8;
/// Name of the input.
pub const INPUT: &str = "planes";
/// Name of the policy output.
pub const POLICY_OUTPUT: &str = "policy_logits";
/// Name of the value output.
pub const VALUE_OUTPUT: &str = "value";
/// Name of the win/draw/loss logits output (WDL models).
pub const WDL_OUTPUT: &str = "wdl_logits";
/// Name of the flat margin output (auxiliary heads).
pub const FLAT_MARGIN_OUTPUT: &str = "flat_margin";
/// Name of the ownership output (auxiliary heads).
pub const OWNERSHIP_OUTPUT: &str = "ownership";
/// Name of the opponent policy output (auxiliary heads).
pub const OPPONENT_POLICY_OUTPUT: &str = "opponent_policy_logits";

fn attr_ints(name: &str, v: &[i64]) -> AttributeProto {
    AttributeProto {
        name: name.into(),
        type_: EnumOrUnknown::new(AttributeType::INTS),
        ints: v.to_vec(),
        ..Default::default()
    }
}

fn attr_int(name: &str, v: i64) -> AttributeProto {
    AttributeProto { name: name.into(), type_: EnumOrUnknown::new(AttributeType::INT), i: v, ..Default::default() }
}

fn int64_tensor(name: &str, data: &[i64]) -> TensorProto {
    TensorProto {
        name: name.into(),
        dims: vec![data.len() as i64],
        data_type: DataType::INT64 as i32,
        int64_data: data.to_vec(),
        ..Default::default()
    }
}

fn tensor(name: &str, dims: &[usize], data: &[f32]) -> TensorProto {
    debug_assert_eq!(dims.iter().product::<usize>(), data.len());
    TensorProto {
        name: name.into(),
        dims: dims.iter().map(|&d| d as i64).collect(),
        data_type: DataType::FLOAT as i32,
        float_data: data.to_vec(),
        ..Default::default()
    }
}

fn value_info(name: &str, dims: &[Option<usize>]) -> ValueInfoProto {
    let dim = dims
        .iter()
        .map(|d| Dimension {
            value: Some(match d {
                Some(n) => dimension::Value::DimValue(*n as i64),
                None => dimension::Value::DimParam("batch".into()),
            }),
            ..Default::default()
        })
        .collect();
    let tensor_type = type_proto::Tensor {
        elem_type: DataType::FLOAT as i32,
        shape: MessageField::some(TensorShapeProto { dim, ..Default::default() }),
        ..Default::default()
    };
    ValueInfoProto {
        name: name.into(),
        type_: MessageField::some(TypeProto {
            value: Some(type_proto::Value::TensorType(tensor_type)),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// Builds the graph node by node.
#[derive(Default)]
struct Builder {
    nodes: Vec<NodeProto>,
    init: Vec<TensorProto>,
}

impl Builder {
    fn node(&mut self, op: &str, name: &str, inputs: &[&str], attrs: Vec<AttributeProto>) -> String {
        let out = name.to_string();
        self.nodes.push(NodeProto {
            op_type: op.into(),
            name: name.into(),
            input: inputs.iter().map(|s| s.to_string()).collect(),
            output: vec![out.clone()],
            attribute: attrs,
            ..Default::default()
        });
        out
    }

    fn conv(&mut self, name: &str, x: &str, c: &FoldedConv) -> String {
        let w = format!("{name}.weight");
        let b = format!("{name}.bias");
        self.init.push(tensor(&w, &[c.cout, c.cin, c.k, c.k], &c.weight));
        self.init.push(tensor(&b, &[c.cout], &c.bias));
        let pad = (c.k / 2) as i64;
        let attrs = vec![
            attr_ints("kernel_shape", &[c.k as i64, c.k as i64]),
            attr_ints("pads", &[pad, pad, pad, pad]),
            attr_ints("strides", &[1, 1]),
        ];
        self.node("Conv", name, &[x, &w, &b], attrs)
    }

    fn gemm(&mut self, name: &str, x: &str, l: &FoldedLinear, out: Option<&str>) -> String {
        let w = format!("{name}.weight");
        let b = format!("{name}.bias");
        self.init.push(tensor(&w, &[l.din, l.dout], &l.weight));
        self.init.push(tensor(&b, &[l.dout], &l.bias));
        self.node("Gemm", out.unwrap_or(name), &[x, &w, &b], vec![])
    }

    /// A policy head's logits into `output`: the dense layer `fc` on the flattened
    /// features, or the per-square convolution `out` on the features `(p, p_flat)`.
    fn policy_logits(
        &mut self,
        (p, p_flat): (&str, Option<&str>),
        fc: (Option<&FoldedLinear>, &str),
        out: (Option<&FoldedConv>, &str),
        output: &str,
    ) -> Result<(), OnnxError> {
        match (fc, out, p_flat) {
            ((Some(fc), name), _, Some(flat)) => {
                self.gemm(name, flat, fc, Some(output));
            }
            (_, (Some(out), name), _) => self.per_square_logits(name, p, out, output),
            _ => return Err(OnnxError::NoPolicyHead(output.into())),
        }
        Ok(())
    }

    /// The convolutional policy head: `out`'s first 3 channels (placements) flattened
    /// channel-major, then the others moved last and flattened (spreads, square-major),
    /// concatenated into `output`. Two 1x1 convolutions with `out`'s weights split.
    fn per_square_logits(&mut self, name: &str, p: &str, out: &FoldedConv, output: &str) {
        let split = 3 * out.cin;
        let place = FoldedConv {
            cin: out.cin,
            cout: 3,
            k: 1,
            weight: out.weight[..split].to_vec(),
            bias: out.bias[..3].to_vec(),
        };
        let spread = FoldedConv {
            cin: out.cin,
            cout: out.cout - 3,
            k: 1,
            weight: out.weight[split..].to_vec(),
            bias: out.bias[3..].to_vec(),
        };
        let a = self.conv(&format!("{name}.place"), p, &place);
        let a = self.node("Flatten", &format!("{name}.place.flatten"), &[&a], vec![attr_int("axis", 1)]);
        let b = self.conv(&format!("{name}.spread"), p, &spread);
        let b = self.node("Transpose", &format!("{name}.spread.nhwc"), &[&b], vec![attr_ints("perm", &[0, 2, 3, 1])]);
        let b = self.node("Flatten", &format!("{name}.spread.flatten"), &[&b], vec![attr_int("axis", 1)]);
        self.node("Concat", output, &[&a, &b], vec![attr_int("axis", 1)]);
    }

    /// Global pooling (`bredon_nn::model::global_pool`) of the first `channels` of `x`
    /// (`[batch, C, N, N]`, all of them when `channels` is C) on an `n`x`n` board:
    /// `[batch, 3 channels]`, the means, the scaled means and the maxima.
    fn global_pool(&mut self, name: &str, x: &str, channels: usize, all: bool, n: usize) -> String {
        let x = if all {
            x.to_string()
        } else {
            let (starts, ends, axes) = (format!("{name}.starts"), format!("{name}.ends"), format!("{name}.axes"));
            self.init.push(int64_tensor(&starts, &[0]));
            self.init.push(int64_tensor(&ends, &[channels as i64]));
            self.init.push(int64_tensor(&axes, &[1]));
            self.node("Slice", &format!("{name}.slice"), &[x, &starts, &ends, &axes], vec![])
        };
        // Opset 17: the axes of both reductions are an attribute.
        let reduce = || vec![attr_ints("axes", &[2, 3]), attr_int("keepdims", 0)];
        let mean = self.node("ReduceMean", &format!("{name}.mean"), &[&x], reduce());
        let max = self.node("ReduceMax", &format!("{name}.max"), &[&x], reduce());
        let scale = format!("{name}.size_scale");
        self.init.push(tensor(&scale, &[], &[pool_size_scale(n)]));
        let scaled = self.node("Mul", &format!("{name}.scaled"), &[&mean, &scale], vec![]);
        self.node("Concat", &format!("{name}.concat"), &[&mean, &scaled, &max], vec![attr_int("axis", 1)])
    }

    fn relu(&mut self, name: &str, x: &str) -> String {
        self.node("Relu", name, &[x], vec![])
    }
}

/// The ONNX model of `net` with `meta`'s metadata, serialised.
pub fn onnx_bytes(net: &FoldedNet, meta: &ModelMeta) -> Result<Vec<u8>, OnnxError> {
    let n = net.size();
    if meta.size != n || meta.net != net.config {
        return Err(OnnxError::MetaMismatch {
            meta: format!("{} {}", meta.size, meta.net.name()),
            net: format!("{} {}", n, net.config.name()),
        });
    }
    let version = net.config.input_version;
    let planes = planes(version);
    let mut g = Builder::default();
    let stem = g.conv("stem", INPUT, &net.stem);
    let mut h = g.relu("stem.relu", &stem);
    for (i, ((c1, c2), gpool)) in net.blocks.iter().zip(&net.gpool).enumerate() {
        let y = g.conv(&format!("block{i}.conv1"), &h, c1);
        let mut y = g.relu(&format!("block{i}.relu1"), &y);
        if let Some(fc) = gpool {
            let pooled = g.global_pool(&format!("block{i}.gpool"), &y, fc.din / 3, fc.din / 3 == c1.cout, n);
            let bias = g.gemm(&format!("block{i}.gpool.fc"), &pooled, fc, None);
            let shape = format!("block{i}.gpool.shape");
            g.init.push(int64_tensor(&shape, &[-1, fc.dout as i64, 1, 1]));
            let bias = g.node("Reshape", &format!("block{i}.gpool.reshape"), &[&bias, &shape], vec![]);
            y = g.node("Add", &format!("block{i}.gpool.add"), &[&y, &bias], vec![]);
        }
        let y = g.conv(&format!("block{i}.conv2"), &y, c2);
        let y = g.node("Add", &format!("block{i}.add"), &[&y, &h], vec![]);
        h = g.relu(&format!("block{i}.relu2"), &y);
    }
    let p = g.conv("policy.conv", &h, &net.policy_conv);
    let p = g.relu("policy.relu", &p);
    // The dense heads read the features flattened (both heads the same node).
    let p_flat = net.policy_fc.is_some().then(|| g.node("Flatten", "policy.flatten", &[&p], vec![attr_int("axis", 1)]));
    let heads = (p.as_str(), p_flat.as_deref());
    g.policy_logits(
        heads,
        (net.policy_fc.as_ref(), "policy.fc"),
        (net.policy_out.as_ref(), "policy.out"),
        POLICY_OUTPUT,
    )?;
    let v = g.conv("value.conv", &h, &net.value_conv);
    let v = g.relu("value.relu", &v);
    let v = if net.value_pool() {
        g.global_pool("value.pool", &v, net.value_conv.cout, true, n)
    } else {
        g.node("Flatten", "value.flatten", &[&v], vec![attr_int("axis", 1)])
    };
    let v = g.gemm("value.fc1", &v, &net.value_fc1, None);
    let v = g.relu("value.relu1", &v);
    let mut outputs =
        vec![value_info(POLICY_OUTPUT, &[None, Some(policy_size(n))]), value_info(VALUE_OUTPUT, &[None, Some(1)])];
    if net.config.wdl {
        let z = g.gemm("value.fc2", &v, &net.value_fc2, Some(WDL_OUTPUT));
        let prob = g.node("Softmax", "value.softmax", &[&z], vec![attr_int("axis", 1)]);
        // value = P(win) - P(loss): the probabilities times the column (1, 0, -1).
        g.init.push(tensor("value.wdl_to_value", &[3, 1], &[1.0, 0.0, -1.0]));
        g.node("MatMul", VALUE_OUTPUT, &[&prob, "value.wdl_to_value"], vec![]);
        outputs.push(value_info(WDL_OUTPUT, &[None, Some(3)]));
    } else {
        let v = g.gemm("value.fc2", &v, &net.value_fc2, None);
        g.node("Tanh", VALUE_OUTPUT, &[&v], vec![]);
    }
    if let (Some(margin), Some(own)) = (&net.margin_fc, &net.ownership_conv) {
        g.gemm("aux.margin_fc", &v, margin, Some(FLAT_MARGIN_OUTPUT));
        let o = g.conv("aux.ownership_conv", &h, own);
        let o = g.node("Tanh", "aux.ownership_tanh", &[&o], vec![]);
        g.node("Flatten", OWNERSHIP_OUTPUT, &[&o], vec![attr_int("axis", 1)]);
        g.policy_logits(
            heads,
            (net.opponent_policy_fc.as_ref(), "aux.opponent_policy_fc"),
            (net.opponent_policy_out.as_ref(), "aux.opponent_policy_out"),
            OPPONENT_POLICY_OUTPUT,
        )?;
        outputs.push(value_info(FLAT_MARGIN_OUTPUT, &[None, Some(1)]));
        outputs.push(value_info(OWNERSHIP_OUTPUT, &[None, Some(n * n)]));
        outputs.push(value_info(OPPONENT_POLICY_OUTPUT, &[None, Some(policy_size(n))]));
    }

    let graph = GraphProto {
        name: format!("bredon_{n}x{n}_{}", net.config.name()),
        node: g.nodes,
        initializer: g.init,
        input: vec![value_info(INPUT, &[None, Some(planes), Some(n), Some(n)])],
        output: outputs,
        ..Default::default()
    };
    let mut extra = String::new();
    if net.config.wdl {
        extra.push_str(", wdl_logits [batch, 3]");
    }
    if net.config.aux {
        extra.push_str(&format!(
            ", flat_margin [batch, 1], ownership [batch, {}], opponent_policy_logits [batch, {}]",
            n * n,
            policy_size(n)
        ));
    }
    let props = [
        ("producer", "bredon".to_string()),
        ("size", n.to_string()),
        ("half_komi", meta.half_komi.to_string()),
        ("komi", format!("{}", meta.half_komi as f64 / 2.0)),
        ("input_version", meta.input_version.to_string()),
        ("planes", planes.to_string()),
        ("policy_size", policy_size(n).to_string()),
        ("net", serde_json::to_string(&meta.net).expect("a network configuration serialises")),
        ("blocks", meta.net.blocks.to_string()),
        ("channels", meta.net.channels.to_string()),
        ("step", meta.step.to_string()),
        ("generation", meta.generation.to_string()),
    ];
    let model = ModelProto {
        ir_version: IR_VERSION,
        opset_import: vec![OperatorSetIdProto { domain: String::new(), version: OPSET, ..Default::default() }],
        producer_name: "bredon".into(),
        producer_version: env!("CARGO_PKG_VERSION").into(),
        doc_string: format!(
            "Bredon Tak network {n}x{n} {}: input planes [batch, {planes}, {n}, {n}] (input version {version}), \
             outputs policy_logits [batch, {}] and value [batch, 1] for the side to move{extra}",
            net.config.name(),
            policy_size(n)
        ),
        graph: MessageField::some(graph),
        metadata_props: props
            .into_iter()
            .map(|(k, v)| StringStringEntryProto { key: k.into(), value: v, ..Default::default() })
            .collect(),
        ..Default::default()
    };
    model.write_to_bytes().map_err(OnnxError::Serialise)
}

/// Writes the folded network `net` (`bredon_nn::TakNet::fold`) as an ONNX file at
/// `path` (atomically).
pub fn export_onnx(net: &FoldedNet, meta: &ModelMeta, path: &Path) -> Result<(), OnnxError> {
    let bytes = onnx_bytes(net, meta)?;
    Ok(atomic_write(path, &bytes)?)
}

/// What an ONNX file written by [`export_onnx`] says about itself: its metadata
/// properties, input and output names, and node count. Fails on files that do not parse.
#[derive(Clone, Debug, PartialEq)]
pub struct OnnxSummary {
    /// Opset of the default domain.
    pub opset: i64,
    /// Input names.
    pub inputs: Vec<String>,
    /// Output names.
    pub outputs: Vec<String>,
    /// Graph nodes.
    pub nodes: usize,
    /// Metadata properties, in file order.
    pub metadata: Vec<(String, String)>,
}

/// Reads back an ONNX file's [`OnnxSummary`].
pub fn read_onnx_summary(path: &Path) -> Result<OnnxSummary, OnnxError> {
    let bytes = std::fs::read(path).map_err(|source| OnnxError::Read { path: path.into(), source })?;
    let model =
        ModelProto::parse_from_bytes(&bytes).map_err(|source| OnnxError::NotOnnx { path: path.into(), source })?;
    let graph = model.graph.as_ref().ok_or_else(|| OnnxError::NoGraph { path: path.into() })?;
    Ok(OnnxSummary {
        opset: model.opset_import.iter().find(|o| o.domain.is_empty()).map_or(0, |o| o.version),
        inputs: graph.input.iter().map(|i| i.name.clone()).collect(),
        outputs: graph.output.iter().map(|o| o.name.clone()).collect(),
        nodes: graph.node.len(),
        metadata: model.metadata_props.iter().map(|p| (p.key.clone(), p.value.clone())).collect(),
    })
}
