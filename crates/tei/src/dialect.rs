//! The board sizes TEI carries and its two dialects.

/// Board sizes the protocol carries (`teinewgame`, `size`).
pub const SIZES: std::ops::RangeInclusive<usize> = 3..=8;

/// The two dialects of TEI. They share every line; they differ in how a client starts a
/// game and in what some lines mean.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Dialect {
    /// The match runners' TEI (racetrack, Tiltak, Bredon's arena): `setoption name
    /// HalfKomi value K` then `teinewgame N`; a bare `go` searches the engine's default
    /// budget; proven results are `score cp ±(10000 − plies)`.
    #[default]
    MatchRunner,
    /// PTN Ninja's TEI (its `tei.md`, "TEI 1"): `teinewgame size N halfkomi K` after the
    /// engine announced `size … halfkomi …`; a bare `go` searches until `stop`; proven
    /// results are `score solved win|loss|draw N`.
    PtnNinja,
}
