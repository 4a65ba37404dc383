//! [`PrecisionChoice`]: the arithmetic the CPU fast path's residual blocks run in, as users
//! name it (`--precision`, `fast:PRECISION`, the arena's `precision=`, `[selfplay]
//! precision`), and the check that makes `auto` safe: a network runs in bf16 or 8-bit
//! integers only where the CPU has the units for them and that pass agrees with single
//! precision on this network.

use std::sync::atomic::{AtomicBool, Ordering};

use bredon_kernels::{FastNet, Isa, Precision};
use bredon_netform::FoldedNet;
use bredon_netform::policy::masked_softmax;
use bredon_rules::Position;

/// The fast path's arithmetic as chosen: `auto` (the default) or one named precision.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum PrecisionChoice {
    /// The fastest arithmetic this CPU has that agrees with single precision on the
    /// network when it loads ([`fast_net`]): bf16 on AMX tiles, else 8-bit integers with
    /// AVX-512 VNNI, else f32.
    #[default]
    Auto,
    /// This precision (one the CPU lacks the units for runs in f32, with a warning).
    Exactly(Precision),
}

impl PrecisionChoice {
    /// The name used on the command line and in configs.
    pub fn name(self) -> &'static str {
        match self {
            PrecisionChoice::Auto => "auto",
            PrecisionChoice::Exactly(p) => p.name(),
        }
    }
}

/// A name that is not a [`PrecisionChoice`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown precision {0:?} (use auto, f32, bf16 or int8)")]
pub struct UnknownPrecisionChoice(pub String);

impl std::str::FromStr for PrecisionChoice {
    type Err = UnknownPrecisionChoice;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "auto" => Ok(PrecisionChoice::Auto),
            other => other.parse().map(PrecisionChoice::Exactly).map_err(|_| UnknownPrecisionChoice(s.trim().into())),
        }
    }
}

impl std::fmt::Display for PrecisionChoice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl TryFrom<String> for PrecisionChoice {
    type Error = UnknownPrecisionChoice;

    fn try_from(s: String) -> Result<Self, Self::Error> {
        s.parse()
    }
}

impl From<PrecisionChoice> for String {
    fn from(p: PrecisionChoice) -> String {
        p.to_string()
    }
}

impl serde::Serialize for PrecisionChoice {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> serde::Deserialize<'de> for PrecisionChoice {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d)?.parse().map_err(serde::de::Error::custom)
    }
}

/// How far one fast pass's outputs are from another's over some positions.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Agreement {
    /// Positions compared.
    pub positions: usize,
    /// The 99th percentile of |Δ value|.
    pub value_p99: f32,
    /// The largest |Δ value|.
    pub value_max: f32,
    /// The share of positions whose most likely legal move is the same.
    pub same_top_move: f64,
    /// The mean total variation distance between the two policies over the legal moves
    /// (half the summed |Δ probability|): unlike the top move, blind to near-ties.
    pub policy_tv: f64,
    /// The mean KL divergence of the other policy from the reference.
    pub mean_kl: f64,
}

impl Agreement {
    /// The bars `auto` holds a bf16 or 8-bit pass to before using it: |Δ value| at most
    /// 0.05 at the 99th percentile and policies within 0.05 in total variation on
    /// average, so that a network whose weights round badly stays in f32. (The shipped
    /// models measure p99 0.010 to 0.019 and TV about 0.01 in 8 bits.)
    pub fn good_enough(&self) -> bool {
        self.value_p99 <= 0.05 && self.policy_tv <= 0.05
    }
}

/// The agreement of `other`'s outputs with `reference`'s on `positions` (of their size).
pub fn agreement(reference: &FastNet, other: &FastNet, positions: &[Position]) -> Agreement {
    let size = reference.size();
    let mut dv = Vec::with_capacity(positions.len());
    let (mut same, mut tv, mut kl) = (0usize, 0.0f64, 0.0f64);
    for chunk in positions.chunks(256) {
        let refs: Vec<&Position> = chunk.iter().collect();
        let (el, ev) = reference.forward(&refs);
        let (ql, qv) = other.forward(&refs);
        let per = el.len() / chunk.len().max(1);
        for (i, pos) in chunk.iter().enumerate() {
            dv.push((ev[i] - qv[i]).abs());
            let legal = pos.legal_moves();
            let p = masked_softmax(&el[i * per..(i + 1) * per], &legal, size);
            let q = masked_softmax(&ql[i * per..(i + 1) * per], &legal, size);
            let top = |v: &[f32]| v.iter().enumerate().fold(0, |b, (j, &x)| if x > v[b] { j } else { b });
            same += usize::from(top(&p) == top(&q));
            tv += 0.5 * p.iter().zip(&q).map(|(&a, &b)| (a - b).abs() as f64).sum::<f64>();
            kl += p
                .iter()
                .zip(&q)
                .filter(|(a, _)| **a > 0.0)
                .map(|(&a, &b)| a as f64 * (a as f64 / (b as f64).max(1e-30)).ln())
                .sum::<f64>();
        }
    }
    dv.sort_by(f32::total_cmp);
    let n = positions.len().max(1);
    Agreement {
        positions: positions.len(),
        value_p99: dv.get((n * 99 / 100).min(n - 1)).copied().unwrap_or(0.0),
        value_max: dv.last().copied().unwrap_or(0.0),
        same_top_move: same as f64 / n as f64,
        policy_tv: tv / n as f64,
        mean_kl: kl / n as f64,
    }
}

/// Positions `auto` checks a bf16 or 8-bit pass on: from random games of the network's
/// size, the same every time (so a model is always run the same way).
pub const AUTO_CHECK_POSITIONS: usize = 128;

/// The lower precisions `auto` tries, fastest first.
pub const AUTO_ORDER: [Precision; 2] = [Precision::Bf16, Precision::Int8];

/// The fast path for `folded` in `choice`, and why it runs in another precision than the
/// one chosen (`None` when it runs as chosen, or when `auto` settles on f32 because the
/// CPU has no faster unit). `auto` runs the first of [`AUTO_ORDER`] whose units this CPU
/// has and whose pass's [`Agreement`] with f32 on [`AUTO_CHECK_POSITIONS`] positions is
/// [`Agreement::good_enough`].
pub fn fast_net(folded: &FoldedNet, choice: PrecisionChoice) -> (FastNet, Option<String>) {
    let isa = Isa::detect();
    match choice {
        PrecisionChoice::Exactly(p) if !p.is_native() => (
            FastNet::with_precision(folded, isa, Precision::F32),
            Some(format!("this CPU lacks the units for {p} ({}); the fast path runs in f32 instead", p.units())),
        ),
        PrecisionChoice::Exactly(p) => (FastNet::with_precision(folded, isa, p), None),
        PrecisionChoice::Auto => {
            let exact = FastNet::with_precision(folded, isa, Precision::F32);
            let mut why = None;
            let mut positions = None;
            for p in AUTO_ORDER.into_iter().filter(|p| p.is_native()) {
                let low = FastNet::with_precision(folded, isa, p);
                if low.precision() != p {
                    continue; // the network's channels do not fit this precision's kernel
                }
                let positions = positions.get_or_insert_with(|| {
                    bredon_netform::positions::random_positions(exact.size(), AUTO_CHECK_POSITIONS, 71)
                });
                let check = agreement(&exact, &low, positions);
                if check.good_enough() {
                    return (low, None);
                }
                why.get_or_insert(format!(
                    "the {p} pass disagrees with f32 on this network (|Δ value| p99 {:.3}, policy distance {:.3}; bars 0.05 and 0.05); `auto` runs it in f32",
                    check.value_p99, check.policy_tv
                ));
            }
            (exact, why)
        }
    }
}

/// Prints `why` (a fallback from [`fast_net`]) on stderr, the first time in this process
/// only: every inference thread and every generation builds its own fast path.
pub fn warn_once(why: &str) {
    static WARNED: AtomicBool = AtomicBool::new(false);
    if !WARNED.swap(true, Ordering::Relaxed) {
        eprintln!("bredon: {why}");
    }
}
