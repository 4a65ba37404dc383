//! Every head of a loaded network for a few positions, for analysis: the value, the
//! win/draw/loss probabilities, the expected final flat margin and the ownership map.
//!
//! The search sees only policy and value (through `bredon_mcts::Evaluator`); a front end
//! that shows a position (the JSON analysis engine, `bredon serve`) asks [`Heads`] for the
//! rest, once per position, through burn's forward pass.
//!
//! What the heads predict (their training targets are made in
//! `bredon_selfplay::replay`):
//!
//! - **WDL**: the probabilities that the side to move wins, draws or loses the game
//!   (networks with [`NetConfig::wdl`](crate::NetConfig::wdl); `None` for the others, whose
//!   value is one tanh output and which predict no draw rate).
//! - **Flat margin**: the side to move's flats minus the opponent's at the game's end,
//!   **komi included** (komi counts for black: white's margin is white's flats − black's
//!   flats − komi), in flats. The head predicts margin / N²; [`HeadValues::margin`] is
//!   scaled back to flats. The target of a game won by a road is the flat count of its
//!   last position, so the margin is what the board would count at the end, not a score.
//! - **Ownership**: per square, who tops it at the game's end, in [-1, 1], +1 = the side
//!   to move. [`HeadValues::ownership_for`] turns it to a fixed colour's view.

use std::sync::Mutex;

use bredon_rules::{Color, Position};
use burn::module::Module;
use burn::tensor::activation::softmax;

use crate::model::{Outputs, TakNet};
use crate::rows::Convolutions;
use crate::train::encode_batch;

/// Why [`Heads::evaluate`] refused positions.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HeadsError {
    /// A position of another board size than the network's.
    #[error("the network is for {expected}x{expected} boards, the position is {found}x{found}")]
    WrongSize {
        /// The network's board size.
        expected: usize,
        /// The position's board size.
        found: usize,
    },
}

pub use bredon_mcts::Wdl;

/// Every head's output for one position, from the side to move's view.
#[derive(Clone, Debug, PartialEq)]
pub struct HeadValues {
    /// The value the search would get, in [-1, 1] (P(win) − P(loss) with WDL).
    pub value: f32,
    /// Win/draw/loss probabilities (networks with a WDL head only).
    pub wdl: Option<Wdl>,
    /// Expected final flat margin in flats, komi included (networks with the auxiliary
    /// heads only).
    pub margin: Option<f32>,
    /// Expected final owner of each square in [-1, 1], +1 = the side to move; index
    /// `row * N + col`, rank 1 first (networks with the auxiliary heads only).
    pub ownership: Option<Vec<f32>>,
}

impl HeadValues {
    /// The ownership map from `color`'s view (+1 = `color` owns the square), for a
    /// position where `mover` is to move.
    pub fn ownership_for(&self, color: Color, mover: Color) -> Option<Vec<f32>> {
        let sign = if color == mover { 1.0 } else { -1.0 };
        self.ownership.as_ref().map(|o| o.iter().map(|&x| x * sign).collect())
    }
}

/// A network kept for reading all its heads (behind a lock: one forward pass at a time).
pub struct Heads {
    net: Mutex<TakNet>,
    size: usize,
}

impl Heads {
    /// Wraps `net`, a network for `size`x`size` boards.
    pub fn new(net: TakNet, size: usize) -> Heads {
        Heads { net: Mutex::new(net), size }
    }

    /// The board size the network reads.
    pub fn size(&self) -> usize {
        self.size
    }

    /// Whether the network has a WDL head.
    pub fn has_wdl(&self) -> bool {
        self.lock().wdl()
    }

    /// Whether the network has the auxiliary heads (margin and ownership).
    pub fn has_aux(&self) -> bool {
        self.lock().aux()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, TakNet> {
        self.net.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Every head for `positions` (one batch), each from its side to move's view.
    pub fn evaluate(&self, positions: &[&Position]) -> Result<Vec<HeadValues>, HeadsError> {
        if let Some(p) = positions.iter().find(|p| p.size() != self.size) {
            return Err(HeadsError::WrongSize { expected: self.size, found: p.size() });
        }
        if positions.is_empty() {
            return Ok(Vec::new());
        }
        let net = self.lock();
        let x = encode_batch(positions.iter().copied(), net.input_version(), self.size, &net.device());
        let out = net.forward_with(x, Outputs::All, Convolutions::Auto);
        let floats = |t: burn::prelude::Tensor<2>| t.into_data().try_into_vec::<f32>().expect("f32 outputs");
        let values = floats(out.value);
        let wdl = out.wdl.map(|z| floats(softmax(z, 1)));
        let margin = out.flat_margin.map(floats);
        let ownership = out.ownership.map(floats);
        let area = self.size * self.size;
        let scale = area as f32;
        Ok((0..positions.len())
            .map(|i| HeadValues {
                value: values[i].clamp(-1.0, 1.0),
                wdl: wdl.as_ref().map(|w| Wdl { win: w[3 * i], draw: w[3 * i + 1], loss: w[3 * i + 2] }),
                margin: margin.as_ref().map(|m| m[i] * scale),
                ownership: ownership.as_ref().map(|o| o[i * area..(i + 1) * area].to_vec()),
            })
            .collect())
    }
}

/// How far one head of a network on one device is from the same head on another
/// ([`compare_devices`]).
#[derive(Clone, Debug, PartialEq)]
pub struct HeadDifference {
    /// The head: `policy`, `value`, `wdl` (logits), `flat_margin`, `ownership` or
    /// `opponent_policy`.
    pub head: &'static str,
    /// The largest difference over the head's outputs, relative where an output is above
    /// one in size: `|a − b| / max(|a|, 1)`.
    pub max_difference: f32,
    /// Whether every output of the head is near zero (`|a| ≤ 1e-3`) on the first device,
    /// where agreement would prove nothing.
    pub near_zero: bool,
}

/// Every head of `model` (on its device) against the same weights moved to `other`, on
/// `positions` of `size`: the check that a backend computes the network as the CPU does
/// (`bredon bench nn --compare-cpu`, the wgpu tests). Heads the network lacks are left out.
pub fn compare_devices(
    model: &TakNet,
    other: &burn::prelude::Device,
    positions: &[&Position],
    size: usize,
) -> Result<Vec<HeadDifference>, HeadsError> {
    if let Some(p) = positions.iter().find(|p| p.size() != size) {
        return Err(HeadsError::WrongSize { expected: size, found: p.size() });
    }
    let moved = model.clone().to_device(other);
    let outputs = |net: &TakNet| {
        let x = encode_batch(positions.iter().copied(), net.input_version(), size, &net.device());
        let o = net.forward_with(x, Outputs::All, Convolutions::Auto);
        let floats = |t: burn::prelude::Tensor<2>| t.into_data().convert::<f32>().try_into_vec::<f32>().expect("f32");
        [
            ("policy", Some(floats(o.policy))),
            ("value", Some(floats(o.value))),
            ("wdl", o.wdl.map(floats)),
            ("flat_margin", o.flat_margin.map(floats)),
            ("ownership", o.ownership.map(floats)),
            ("opponent_policy", o.opponent_policy.map(floats)),
        ]
    };
    Ok(outputs(model)
        .into_iter()
        .zip(outputs(&moved))
        .filter_map(|((head, a), (_, b))| {
            let (a, b) = (a?, b?);
            let max_difference = if a.len() == b.len() {
                a.iter().zip(&b).map(|(p, q)| (p - q).abs() / p.abs().max(1.0)).fold(0.0f32, f32::max)
            } else {
                f32::INFINITY
            };
            Some(HeadDifference { head, max_difference, near_zero: a.iter().all(|p| p.abs() <= 1e-3) })
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checkpoint::load_exported;
    use bredon_rules::notation::parse_tps;
    use std::path::{Path, PathBuf};

    fn shipped(name: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../checkpoints/shipped").join(name)
    }

    fn heads(name: &str) -> Heads {
        let (net, meta) = load_exported(&shipped(name)).unwrap();
        Heads::new(net, meta.size)
    }

    #[test]
    fn every_head_of_a_shipped_model_is_finite_and_in_range() {
        let h = heads("5x5.bredon");
        assert!(h.has_wdl() && h.has_aux());
        let start = Position::new(5).unwrap();
        let mid = parse_tps("x5/x2,2,x2/x,1,1C,2,x/x2,1,x2/x5 2 4").unwrap();
        let out = h.evaluate(&[&start, &mid]).unwrap();
        assert_eq!(out.len(), 2);
        for v in &out {
            assert!(v.value.is_finite() && (-1.0..=1.0).contains(&v.value), "{v:?}");
            let wdl = v.wdl.expect("the shipped 5x5 model has a WDL head");
            let sum = wdl.win + wdl.draw + wdl.loss;
            assert!((sum - 1.0).abs() < 1e-4, "{wdl:?} sums to {sum}");
            assert!([wdl.win, wdl.draw, wdl.loss].iter().all(|p| (0.0..=1.0).contains(p)), "{wdl:?}");
            assert!((v.value - (wdl.win - wdl.loss)).abs() < 1e-4, "value is P(win) - P(loss): {v:?}");
            let margin = v.margin.expect("aux heads");
            assert!(margin.is_finite() && margin.abs() <= 25.0, "{margin}");
            let own = v.ownership.as_ref().expect("aux heads");
            assert_eq!(own.len(), 25);
            assert!(own.iter().all(|o| o.is_finite() && (-1.0..=1.0).contains(o)), "{own:?}");
        }
        // One batch or one position at a time: the same numbers.
        let alone = h.evaluate(&[&mid]).unwrap().pop().unwrap();
        assert!((alone.value - out[1].value).abs() < 1e-4);
        assert!((alone.margin.unwrap() - out[1].margin.unwrap()).abs() < 1e-3);
    }

    #[test]
    fn a_board_one_colour_covers_is_owned_by_that_colour() {
        let h = heads("5x5.bredon");
        // White walls on 15 squares, two black flats in a corner, black to move: white
        // will keep the walled squares whatever happens.
        let walls = parse_tps("1S,1S,1S,1S,1S/1S,1S,1S,1S,1S/1S,1S,1S,1S,1S/x3,2,2/x5 2 9").unwrap();
        let v = h.evaluate(&[&walls]).unwrap().pop().unwrap();
        let mover = walls.side_to_move();
        assert_eq!(mover, Color::Black);
        let white = v.ownership_for(Color::White, mover).unwrap();
        let walled = 10..25; // ranks 3 to 5
        let white_squares = walled.clone().filter(|&sq| white[sq] > 0.0).count();
        assert!(white_squares >= 12, "white owns {white_squares} of 15 walled squares: {white:?}");
        // From black's (the mover's) view the same map is negative there.
        let black = v.ownership_for(Color::Black, mover).unwrap();
        assert!(walled.clone().all(|sq| black[sq] == -white[sq]));
        assert_eq!(v.ownership.as_ref(), Some(&black), "the raw map is the mover's view");
        // The same board in black: black owns most of it, now from white's view negative.
        let black_walls = parse_tps("2S,2S,2S,2S,2S/2S,2S,2S,2S,2S/2S,2S,2S,2S,2S/x3,1,1/x5 1 9").unwrap();
        let v = h.evaluate(&[&black_walls]).unwrap().pop().unwrap();
        let white = v.ownership_for(Color::White, black_walls.side_to_move()).unwrap();
        let black_squares = walled.filter(|&sq| white[sq] < 0.0).count();
        assert!(black_squares >= 12, "black owns {black_squares} of 15 walled squares: {white:?}");
    }

    #[test]
    fn a_network_compared_with_itself_on_the_cpu_differs_nowhere() {
        let (net, meta) = load_exported(&shipped("5x5.bredon")).unwrap();
        let start = Position::new(5).unwrap();
        let mid = parse_tps("x5/x2,2,x2/x,1,1C,2,x/x2,1,x2/x5 2 4").unwrap();
        let diffs = compare_devices(&net, &net.device(), &[&start, &mid], meta.size).unwrap();
        let heads: Vec<&str> = diffs.iter().map(|d| d.head).collect();
        assert_eq!(heads, ["policy", "value", "wdl", "flat_margin", "ownership", "opponent_policy"]);
        assert!(diffs.iter().all(|d| d.max_difference == 0.0 && !d.near_zero), "{diffs:?}");
        // Without the auxiliary and WDL heads only policy and value are compared.
        let (old, _) = load_exported(&shipped("4x4-v1.bredon")).unwrap();
        let four = Position::new(4).unwrap();
        let diffs = compare_devices(&old, &old.device(), &[&four], 4).unwrap();
        assert_eq!(diffs.iter().map(|d| d.head).collect::<Vec<_>>(), ["policy", "value"]);
        let e = compare_devices(&old, &old.device(), &[&start], 4).unwrap_err();
        assert_eq!(e, HeadsError::WrongSize { expected: 4, found: 5 });
    }

    #[test]
    fn a_model_without_wdl_reports_none_and_other_sizes_are_refused() {
        let h = heads("4x4-v1.bredon");
        assert!(!h.has_wdl() && !h.has_aux());
        let v = h.evaluate(&[&Position::new(4).unwrap()]).unwrap().pop().unwrap();
        assert!(v.value.is_finite());
        assert_eq!((v.wdl, v.margin, v.ownership), (None, None, None));
        assert!(h.evaluate(&[]).unwrap().is_empty());
        let e = h.evaluate(&[&Position::new(5).unwrap()]).unwrap_err();
        assert_eq!(e, HeadsError::WrongSize { expected: 4, found: 5 });
        assert!(e.to_string().contains("4x4"), "{e}");
    }
}
