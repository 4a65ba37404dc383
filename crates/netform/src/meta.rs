//! [`ModelMeta`]: what a model file says it is (board size, komi, architecture, input
//! version, policy size, training step and generation), parsed and checked against
//! [`crate::limits`] before anything is built from the file.

use serde::{Deserialize, Serialize};

use crate::config::NetConfig;
use crate::limits::{MAX_MESSAGE, ModelFileError, bounded, check_meta, check_meta_json};
use crate::policy::policy_size;

/// What a model file is: enough to rebuild the network and to refuse a mismatch.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ModelMeta {
    /// Board size.
    pub size: usize,
    /// Komi (half points) the model was trained with.
    pub half_komi: i8,
    /// Architecture.
    pub net: NetConfig,
    /// Input plane layout version (the same as `net.input_version`; see [`crate::encoding`]).
    pub input_version: u32,
    /// Policy outputs.
    pub policy_size: usize,
    /// Optimiser steps trained.
    pub step: u64,
    /// Generation within its run.
    pub generation: u32,
    /// How far into a curriculum stage the model was exported, when it was (`bredon
    /// export` of a stage's checkpoint): `bredon train --start-stage NAME --init-from
    /// MODEL` goes on with what is left of that stage.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stage: Option<StageProgress>,
}

/// How far a model got into a curriculum stage: the stage's name, and the training steps,
/// generations and minutes of the stage's own clock behind the model (across every
/// machine it ran on).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StageProgress {
    /// The stage's name in its curriculum (`6x6`).
    pub name: String,
    /// Training steps of the stage behind the model.
    pub steps: u64,
    /// Generations of the stage behind the model.
    #[serde(default)]
    pub generations: u32,
    /// Minutes of the stage's clock behind the model.
    pub minutes: f64,
}

impl StageProgress {
    /// The longest stage name a model file may carry (and a curriculum may give).
    pub const MAX_NAME: usize = 64;
    /// The most training steps a stage's progress may count (10^12: far past any run).
    pub const MAX_STEPS: u64 = 1_000_000_000_000;

    /// Whether `name` can name a stage: 1 to [`Self::MAX_NAME`] letters, digits, `-`, `_`
    /// or `.` (it names a folder). A curriculum's stages and a model's progress share it.
    pub fn is_valid_name(name: &str) -> bool {
        !name.is_empty()
            && name.len() <= Self::MAX_NAME
            && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    }

    /// Checks the name ([`Self::is_valid_name`]), the minutes (finite, not negative) and
    /// the steps (at most [`Self::MAX_STEPS`]).
    pub fn check(&self) -> Result<(), ModelFileError> {
        if !Self::is_valid_name(&self.name) {
            let found = bounded(&format!("{:?}", self.name), 40);
            return Err(ModelFileError::BadStage(format!(
                "name {found} is not 1 to {} letters, digits, '-', '_' or '.'",
                Self::MAX_NAME
            )));
        }
        if !(self.minutes.is_finite() && self.minutes >= 0.0) {
            return Err(ModelFileError::BadStage(format!("minutes {} is not a duration", self.minutes)));
        }
        if self.steps > Self::MAX_STEPS {
            return Err(ModelFileError::BadStage(format!("steps {} is more than {}", self.steps, Self::MAX_STEPS)));
        }
        Ok(())
    }
}

impl ModelMeta {
    /// Metadata for a model of `net` (size set).
    pub fn new(net: &NetConfig, half_komi: i8, step: u64, generation: u32) -> ModelMeta {
        ModelMeta {
            size: net.size,
            half_komi,
            net: net.clone(),
            input_version: net.input_version,
            policy_size: policy_size(net.size),
            step,
            generation,
            stage: None,
        }
    }

    /// Checks the metadata against [`crate::limits::Limits`] and for consistency (board
    /// sizes, input versions, policy size, the network's parameter count): the error names
    /// the field and the limit.
    pub fn check(&self) -> Result<(), ModelFileError> {
        check_meta(self.size, self.input_version, self.policy_size, &self.net)?;
        self.stage.as_ref().map_or(Ok(()), StageProgress::check)
    }

    /// Parses and checks a model's metadata from its JSON object: numeric fields are
    /// checked to be whole numbers before parsing and against the limits after, so a
    /// hostile value is refused with an error naming its field before anything is built.
    pub fn from_json(value: serde_json::Value) -> Result<ModelMeta, ModelFileError> {
        check_meta_json(&value)?;
        let meta: ModelMeta = serde_json::from_value(value)
            .map_err(|e| ModelFileError::BadMetadata(bounded(&e.to_string(), MAX_MESSAGE)))?;
        meta.check()?;
        Ok(meta)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::NetConfig;

    /// A model's stage progress goes through its JSON and back; a model without one reads
    /// as before (no `stage` key); a bad name or duration is refused naming the field.
    #[test]
    fn stage_progress_round_trips_and_bad_ones_are_refused() {
        let mut meta = ModelMeta::new(&NetConfig::default_for_size(6), 4, 1315, 35);
        let plain = serde_json::to_value(&meta).unwrap();
        assert!(plain.get("stage").is_none(), "{plain}");
        assert_eq!(ModelMeta::from_json(plain).unwrap(), meta);
        meta.stage = Some(StageProgress { name: "6x6".into(), steps: 1315, generations: 35, minutes: 148.5 });
        let json = serde_json::to_value(&meta).unwrap();
        assert_eq!(json["stage"]["steps"], 1315, "{json}");
        assert_eq!(ModelMeta::from_json(json.clone()).unwrap(), meta);
        let refused = |stage: serde_json::Value| {
            let mut j = json.clone();
            j["stage"] = stage;
            ModelMeta::from_json(j).unwrap_err().to_string()
        };
        let e = refused(serde_json::json!({"name": "6x6/../x", "steps": 1, "minutes": 1.0}));
        assert!(e.contains("field `stage`") && e.contains("6x6/../x"), "{e}");
        let e = refused(serde_json::json!({"name": "x".repeat(65), "steps": 1, "minutes": 1.0}));
        assert!(e.contains("field `stage`"), "{e}");
        let e = refused(serde_json::json!({"name": "6x6", "steps": 1, "minutes": -3.0}));
        assert!(e.contains("minutes -3"), "{e}");
        let e = refused(serde_json::json!({"name": "6x6", "steps": -1, "minutes": 1.0}));
        assert!(e.contains("bad metadata"), "{e}");
        let e = refused(serde_json::json!({"name": "6x6", "steps": u64::MAX, "minutes": 1.0}));
        assert!(e.contains("field `stage`: steps"), "{e}");
    }
}
