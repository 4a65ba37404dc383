//! Zobrist keys, computed on the fly by a 64-bit mixer (no tables to keep in cache).

use crate::types::PieceKind;

/// SplitMix64 finaliser: a bijective, well-mixing function of a 64-bit counter.
#[inline]
const fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Key of a piece of `color` (0/1) at `level` (0 = bottom) of square `sq`.
#[inline]
pub const fn piece(sq: usize, level: usize, color: usize) -> u64 {
    mix(((sq as u64) << 9) | ((level as u64) << 1) | color as u64)
}

/// Key of the top piece kind of a non-empty square (flats included, so that a square
/// with a flat on top differs from an empty one even at the same colours).
#[inline]
pub const fn top_kind(sq: usize, kind: PieceKind) -> u64 {
    mix((1u64 << 40) | ((sq as u64) << 2) | kind as u64)
}

/// Key toggled when black is to move.
pub const BLACK_TO_MOVE: u64 = mix(1u64 << 48);
