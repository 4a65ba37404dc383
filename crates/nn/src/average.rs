//! Weight averaging: one network whose every weight is the mean of the same weight in
//! several checkpoints of one run (KataGo exports such averages of its recent snapshots:
//! the mean of nearby points of one training trajectory judges more steadily than any
//! one of them). The BatchNorms' running statistics are averaged too; every network must
//! have the same architecture and board size.

use burn::module::{Module, ModuleMapper, ModuleVisitor, Param};
use burn::prelude::*;
use thiserror::Error;

use crate::model::TakNet;
use bredon_netform::meta::ModelMeta;

/// Why a set of networks cannot be averaged.
#[derive(Debug, Error, PartialEq)]
pub enum AverageError {
    /// Nothing to average.
    #[error("no networks to average")]
    Empty,
    /// A network differs from the first in architecture, size or komi.
    #[error(
        "network {index} is a {size}x{size} {net} (half komi {half_komi}); the first is a {first_size}x{first_size} {first_net} (half komi {first_half_komi}): only checkpoints of one architecture, size and komi average"
    )]
    Mismatch {
        /// Its position in the list (0-based).
        index: usize,
        /// Its board size.
        size: usize,
        /// Its architecture's name.
        net: String,
        /// Its komi in half points.
        half_komi: i8,
        /// The first network's size.
        first_size: usize,
        /// The first network's architecture's name.
        first_net: String,
        /// The first network's komi in half points.
        first_half_komi: i8,
    },
    /// The weights' layout differs although the metadata agree (a damaged or foreign file).
    #[error("network {index}: weight tensor {tensor} has shape {shape:?}, the first network's {first_shape:?}")]
    Layout {
        /// Its position in the list.
        index: usize,
        /// The tensor's place in visiting order.
        tensor: usize,
        /// Its shape.
        shape: Vec<usize>,
        /// The first network's shape there (empty when the first has no such tensor).
        first_shape: Vec<usize>,
    },
}

/// Every float tensor of a module (parameters and BatchNorm statistics) in visiting order.
#[derive(Default)]
struct Collect(Vec<(Vec<usize>, Vec<f32>)>);

impl ModuleVisitor for Collect {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        let t = param.val();
        let dims = t.dims().to_vec();
        let values = t.into_data().convert::<f32>().try_into_vec::<f32>().expect("a float tensor converts to f32");
        self.0.push((dims, values));
    }
}

/// Writes the averaged values back, tensor by tensor in the same order.
struct Replace {
    sums: std::vec::IntoIter<(Vec<usize>, Vec<f32>)>,
}

impl ModuleMapper for Replace {
    fn map_float<const D: usize>(&mut self, param: Param<Tensor<D>>) -> Param<Tensor<D>> {
        let (dims, values) = self.sums.next().expect("the averaged module has the collected layout");
        param.map(|t| {
            let grad = t.is_require_grad();
            let shape: [usize; D] = std::array::from_fn(|d| dims[d]);
            let mean = Tensor::<D>::from_data(TensorData::new(values, shape), &t.device());
            if grad { mean.require_grad() } else { mean }
        })
    }
}

/// The mean of `models` (each with its metadata), weight by weight, and metadata for it:
/// the newest step and generation among them. Refuses networks of another architecture,
/// size or komi than the first.
pub fn average(models: &[(TakNet, ModelMeta)]) -> Result<(TakNet, ModelMeta), AverageError> {
    let (first, first_meta) = models.first().ok_or(AverageError::Empty)?;
    let mut sums = Collect::default();
    first.visit(&mut sums);
    let mut sums = sums.0;
    for (index, (model, meta)) in models.iter().enumerate().skip(1) {
        if meta.net != first_meta.net || meta.size != first_meta.size || meta.half_komi != first_meta.half_komi {
            return Err(AverageError::Mismatch {
                index,
                size: meta.size,
                net: meta.net.name(),
                half_komi: meta.half_komi,
                first_size: first_meta.size,
                first_net: first_meta.net.name(),
                first_half_komi: first_meta.half_komi,
            });
        }
        let mut other = Collect::default();
        model.visit(&mut other);
        if other.0.len() != sums.len() {
            let tensor = other.0.len().min(sums.len());
            return Err(AverageError::Layout {
                index,
                tensor,
                shape: other.0.get(tensor).map(|t| t.0.clone()).unwrap_or_default(),
                first_shape: sums.get(tensor).map(|t| t.0.clone()).unwrap_or_default(),
            });
        }
        for (tensor, ((dims, sum), (odims, values))) in sums.iter_mut().zip(other.0).enumerate() {
            if *dims != odims {
                return Err(AverageError::Layout { index, tensor, shape: odims, first_shape: dims.clone() });
            }
            sum.iter_mut().zip(values).for_each(|(s, v)| *s += v);
        }
    }
    let n = models.len() as f32;
    for (_, sum) in &mut sums {
        sum.iter_mut().for_each(|s| *s /= n);
    }
    let net = first.clone().map(&mut Replace { sums: sums.into_iter() });
    let newest = models.iter().map(|(_, m)| m).max_by_key(|m| (m.step, m.generation)).expect("not empty");
    let meta = ModelMeta {
        step: newest.step,
        generation: newest.generation,
        stage: newest.stage.clone(),
        ..first_meta.clone()
    };
    Ok((net, meta))
}

#[cfg(test)]
mod tests {
    use super::*;
    use bredon_netform::config::NetConfig;

    fn net(seed: u64, cfg: &NetConfig, step: u64) -> (TakNet, ModelMeta) {
        let device = crate::device::cpu();
        (TakNet::seeded(cfg, &device, seed), ModelMeta::new(cfg, 4, step, step as u32))
    }

    fn weights(model: &TakNet) -> Vec<(Vec<usize>, Vec<f32>)> {
        let mut c = Collect::default();
        model.visit(&mut c);
        c.0
    }

    #[test]
    fn the_average_is_the_mean_of_every_weight_and_statistic() {
        let cfg = NetConfig { size: 4, blocks: 1, channels: 8, ..NetConfig::default() };
        let models = [net(1, &cfg, 10), net(2, &cfg, 30), net(3, &cfg, 20)];
        let (mean, meta) = average(&models).unwrap();
        assert_eq!((meta.step, meta.generation), (30, 30), "the newest step names the average");
        let parts: Vec<_> = models.iter().map(|(m, _)| weights(m)).collect();
        let got = weights(&mean);
        assert_eq!(got.len(), parts[0].len());
        let mut differing = 0;
        for (t, (dims, values)) in got.iter().enumerate() {
            assert_eq!(dims, &parts[0][t].0);
            for (i, v) in values.iter().enumerate() {
                let want = (parts[0][t].1[i] + parts[1][t].1[i] + parts[2][t].1[i]) / 3.0;
                assert!((v - want).abs() <= 1e-6 * want.abs().max(1.0), "tensor {t} element {i}: {v} != {want}");
                differing += usize::from(parts[0][t].1[i] != parts[1][t].1[i]);
            }
        }
        assert!(differing > 1000, "the seeds gave different networks ({differing} weights differ)");
        // The same network averaged with itself is itself.
        let (same, _) = average(&[models[0].clone(), models[0].clone()]).unwrap();
        assert_eq!(weights(&same), parts[0]);
    }

    #[test]
    fn networks_of_another_shape_or_komi_are_refused() {
        let cfg = NetConfig { size: 4, blocks: 1, channels: 8, ..NetConfig::default() };
        let wider = NetConfig { channels: 16, ..cfg.clone() };
        let err = average(&[net(1, &cfg, 1), net(2, &wider, 2)]).unwrap_err();
        assert!(matches!(err, AverageError::Mismatch { index: 1, .. }), "{err}");
        let (m, mut meta) = net(3, &cfg, 3);
        meta.half_komi = 0;
        let err = average(&[net(1, &cfg, 1), (m, meta)]).unwrap_err();
        assert!(err.to_string().contains("half komi 0"), "{err}");
        assert_eq!(average(&[]).unwrap_err(), AverageError::Empty);
    }
}
