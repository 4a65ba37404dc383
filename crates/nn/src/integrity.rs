//! The network's half of file integrity: weights must be finite to be written or loaded.
//! (Checksums, CRC-32C trailers and checked JSON are `bredon_storage::integrity`.)

use burn::module::{Module, ModuleVisitor, Param};
use burn::prelude::*;

use crate::error::ModelError;
use crate::model::TakNet;

/// Finds the first parameter of a module holding a NaN or an infinity.
struct FiniteCheck {
    path: Vec<String>,
    bad: Option<(String, usize, usize)>,
}

impl ModuleVisitor for FiniteCheck {
    fn enter_module(&mut self, name: &str, _container_type: &str) {
        self.path.push(name.to_string());
    }

    fn exit_module(&mut self, _name: &str, _container_type: &str) {
        self.path.pop();
    }

    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        if self.bad.is_some() {
            return;
        }
        let data = param.val().into_data();
        let Ok(values) = data.try_to_vec::<f32>() else { return };
        let bad = values.iter().filter(|x| !x.is_finite()).count();
        if bad > 0 {
            self.bad = Some((self.path.join("."), bad, values.len()));
        }
    }
}

/// Errors if any weight of `model` (parameters and batch-norm statistics) is NaN or
/// infinite, naming the first such tensor.
pub fn check_finite(model: &TakNet) -> Result<(), ModelError> {
    let mut v = FiniteCheck { path: Vec::new(), bad: None };
    model.visit(&mut v);
    if let Some((tensor, bad, total)) = v.bad {
        return Err(ModelError::NonFinite { tensor, bad, total });
    }
    Ok(())
}
