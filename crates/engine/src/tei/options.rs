//! The options the engine declares in its handshake, their bounds and their values.

use std::ops::RangeInclusive;

use bredon_infer::PrecisionChoice;
use bredon_tei::OptionInfo;

use super::error::OptionError;

/// Komi values (half points) the engine plays: `HalfKomi` and `teinewgame … halfkomi K`.
pub const HALF_KOMI: RangeInclusive<i8> = -10..=10;

/// An option of the engine: a TEI `spin` (an integer with bounds), or `Precision`, a
/// `combo`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EngineOption {
    /// `HalfKomi`: the komi in half points for the games from the next `position` on.
    HalfKomi,
    /// `MultiPV`: how many root moves each `info` report gives a line (1 to 16).
    MultiPv,
    /// `Threads`: threads that search the one tree, one core each.
    Threads,
    /// `Hash`: the search tree's memory in MB (see [`NODE_BYTES`]).
    Hash,
    /// `Precision`: the arithmetic of the network's CPU fast path (`auto`, `f32`,
    /// `bf16`, `int8`; [`PrecisionChoice`]), from the next `go` on.
    Precision,
}

/// The values of `Precision`, in the handshake's order.
pub const PRECISIONS: [&str; 4] = ["auto", "f32", "bf16", "int8"];

/// Bytes counted per node of the search tree, by which `Hash` (MB) becomes a node budget:
/// a little above the size of `bredon_mcts`'s tree node (which is private to it). The
/// vector that holds the nodes may reserve up to twice what it holds while it grows,
/// which `Hash` does not count. The engine counts a visit of the root as one expansion:
/// as many nodes as the root has moves.
pub const NODE_BYTES: u64 = 48;

impl EngineOption {
    /// Every option, in the order of the handshake.
    pub const ALL: [EngineOption; 5] = [
        EngineOption::HalfKomi,
        EngineOption::MultiPv,
        EngineOption::Threads,
        EngineOption::Hash,
        EngineOption::Precision,
    ];

    /// The name in `option` and `setoption` lines (matched without regard to case).
    pub fn name(self) -> &'static str {
        match self {
            EngineOption::HalfKomi => "HalfKomi",
            EngineOption::MultiPv => "MultiPV",
            EngineOption::Threads => "Threads",
            EngineOption::Hash => "Hash",
            EngineOption::Precision => "Precision",
        }
    }

    /// The values a `spin` allows (`None` for the `combo` `Precision`).
    pub fn bounds(self) -> Option<RangeInclusive<i64>> {
        match self {
            EngineOption::HalfKomi => Some(i64::from(*HALF_KOMI.start())..=i64::from(*HALF_KOMI.end())),
            EngineOption::MultiPv => Some(1..=16),
            EngineOption::Threads => Some(1..=256),
            EngineOption::Hash => Some(1..=65_536),
            EngineOption::Precision => None,
        }
    }

    /// The option called `name`, whatever its case.
    pub fn from_name(name: &str) -> Option<EngineOption> {
        EngineOption::ALL.into_iter().find(|o| o.name().eq_ignore_ascii_case(name.trim()))
    }
}

/// The values of the options.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OptionValues {
    /// The network's arithmetic on the CPU fast path.
    pub precision: PrecisionChoice,
    /// Komi in half points.
    pub half_komi: i8,
    /// Lines per report.
    pub multi_pv: u32,
    /// Search threads.
    pub threads: usize,
    /// Tree memory in MB.
    pub hash_mb: u64,
}

impl OptionValues {
    /// The value of a `spin` option (`Precision` is [`OptionValues::precision`]).
    pub fn get(&self, option: EngineOption) -> i64 {
        match option {
            EngineOption::HalfKomi => self.half_komi.into(),
            EngineOption::MultiPv => self.multi_pv.into(),
            EngineOption::Threads => self.threads as i64,
            EngineOption::Hash => self.hash_mb as i64,
            EngineOption::Precision => 0,
        }
    }

    /// The handshake's line for `option`, with these values as the defaults.
    pub fn declaration(&self, option: EngineOption) -> OptionInfo {
        match option.bounds() {
            Some(bounds) => OptionInfo::spin(option.name(), self.get(option), *bounds.start(), *bounds.end()),
            None => OptionInfo::combo(option.name(), self.precision.name(), &PRECISIONS),
        }
    }

    /// `setoption name NAME value VALUE`: sets the option and says which it was, or
    /// refuses the value (the option keeps its value).
    pub fn set(&mut self, name: &str, value: Option<&str>) -> Result<EngineOption, OptionError> {
        let Some(option) = EngineOption::from_name(name) else {
            return Err(OptionError::Unknown { name: name.to_string() });
        };
        let Some(bounds) = option.bounds() else {
            let choices = PRECISIONS.join(", ");
            let text = value.map(str::trim).unwrap_or_default();
            self.precision = match text.parse::<PrecisionChoice>() {
                Ok(p) if PRECISIONS.contains(&p.name()) => p,
                _ => return Err(OptionError::NotAChoice { option: option.name(), value: text.to_string(), choices }),
            };
            return Ok(option);
        };
        let (min, max) = (*bounds.start(), *bounds.end());
        let Some(text) = value else { return Err(OptionError::MissingValue { option: option.name(), min, max }) };
        let v = match text.trim().parse::<i64>() {
            Ok(v) if bounds.contains(&v) => v,
            _ => return Err(OptionError::OutOfRange { option: option.name(), value: text.to_string(), min, max }),
        };
        // In bounds, so every cast below keeps the value.
        match option {
            EngineOption::HalfKomi => self.half_komi = v as i8,
            EngineOption::MultiPv => self.multi_pv = v as u32,
            EngineOption::Threads => self.threads = v as usize,
            EngineOption::Hash => self.hash_mb = v as u64,
            EngineOption::Precision => unreachable!("a combo, handled above"),
        }
        Ok(option)
    }

    /// The tree's node budget that `Hash` gives.
    pub fn hash_nodes(&self) -> u64 {
        self.hash_mb * (1 << 20) / NODE_BYTES
    }
}
