//! Evaluations remembered by position, in front of an [`Evaluator`].
//!
//! A Tak game tree is full of transpositions: two placements on different squares give
//! the same position in either order, so one search meets many positions again on other
//! paths, and the next move's search meets positions the last one evaluated outside the
//! subtree it kept. [`CachedEvaluator`] asks its inner evaluator only about positions it
//! has not seen, and answers the others from memory, exactly as the inner evaluator did
//! (the search itself is unchanged: same priors, same values, fewer network calls).
//!
//! A position is known by its Zobrist hash (the stacks and the side to move: the pieces
//! in hand follow from the stacks), the board size, the komi and the number of legal
//! moves (so that a hash collision between positions with different move lists cannot
//! give a policy of the wrong length). Memory is bounded: the entries live in two
//! generations, and when the current one reaches half the budget, the older is dropped
//! and the current one becomes the older (a hit there moves the entry forward), an
//! approximation of least-recently-used at the cost of one map swap.
//!
//! The maps are sharded by hash, each shard behind its own lock with its share of the
//! budget (one shard per MB, up to 64), so that the many search threads of a GPU's
//! self-play (192 games at once) do not queue on one lock.

use crate::evaluator::{Evaluation, Evaluator};
use bredon_rules::{Move, Position};
use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// What identifies a position to the cache.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Key {
    hash: u64,
    size: u8,
    half_komi: i8,
    moves: u32,
}

impl Key {
    fn of(pos: &Position, legal: &[Move]) -> Key {
        Key { hash: pos.hash(), size: pos.size() as u8, half_komi: pos.half_komi(), moves: legal.len() as u32 }
    }
}

/// Bytes an entry is counted as: the evaluation, its policy and the map's overhead.
fn entry_bytes(e: &Evaluation) -> usize {
    std::mem::size_of::<Evaluation>() + 4 * e.policy.len() + 64
}

#[derive(Default)]
struct Generations {
    current: HashMap<Key, Arc<Evaluation>>,
    current_bytes: usize,
    previous: HashMap<Key, Arc<Evaluation>>,
}

impl Generations {
    fn get(&mut self, key: &Key) -> Option<Arc<Evaluation>> {
        if let Some(e) = self.current.get(key) {
            return Some(e.clone());
        }
        let e = self.previous.remove(key)?;
        self.current_bytes += entry_bytes(&e);
        self.current.insert(*key, e.clone());
        Some(e)
    }

    fn insert(&mut self, key: Key, e: Arc<Evaluation>, budget: usize) {
        if let Entry::Vacant(v) = self.current.entry(key) {
            self.current_bytes += entry_bytes(&e);
            v.insert(e);
        }
        if self.current_bytes >= budget / 2 {
            self.previous = std::mem::take(&mut self.current);
            self.current_bytes = 0;
        }
    }
}

/// Hits and lookups of a [`CachedEvaluator`] since it was made.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Positions answered from memory.
    pub hits: u64,
    /// Positions asked about.
    pub lookups: u64,
}

impl std::ops::AddAssign for CacheStats {
    fn add_assign(&mut self, o: CacheStats) {
        self.hits += o.hits;
        self.lookups += o.lookups;
    }
}

impl CacheStats {
    /// The share of lookups answered from memory (0 before any).
    pub fn hit_rate(&self) -> f64 {
        if self.lookups == 0 { 0.0 } else { self.hits as f64 / self.lookups as f64 }
    }
}

/// An [`Evaluator`] that remembers the evaluations of `inner` by position, within a
/// memory budget (see the module's documentation). Shared between threads like any
/// evaluator; the inner evaluator is called without the cache's lock held.
pub struct CachedEvaluator<E> {
    inner: E,
    /// Each shard's share of the budget.
    budget: usize,
    /// A power of two of them, chosen by the key's hash.
    shards: Box<[Mutex<Generations>]>,
    hits: AtomicU64,
    lookups: AtomicU64,
}

impl<E: Evaluator> CachedEvaluator<E> {
    /// A cache of at most about `budget_bytes` in front of `inner` (0: nothing is kept).
    pub fn new(inner: E, budget_bytes: usize) -> CachedEvaluator<E> {
        // One shard per MB (a shard's generations need room for many entries), at most
        // MAX_SHARDS, a power of two.
        let shards = (budget_bytes >> 20).clamp(1, MAX_SHARDS);
        let shards = if shards.is_power_of_two() { shards } else { shards.next_power_of_two() / 2 };
        CachedEvaluator {
            inner,
            budget: budget_bytes / shards,
            shards: (0..shards).map(|_| Mutex::new(Generations::default())).collect(),
            hits: AtomicU64::new(0),
            lookups: AtomicU64::new(0),
        }
    }

    /// The evaluator behind the cache.
    pub fn inner(&self) -> &E {
        &self.inner
    }

    /// Hits and lookups so far.
    pub fn stats(&self) -> CacheStats {
        CacheStats { hits: self.hits.load(Ordering::Relaxed), lookups: self.lookups.load(Ordering::Relaxed) }
    }

    /// Forgets every evaluation (for example after the inner evaluator's weights change).
    pub fn clear(&self) {
        for shard in self.shards.iter() {
            *shard.lock().unwrap_or_else(|e| e.into_inner()) = Generations::default();
        }
    }

    /// The shard that holds `key`, locked.
    fn shard(&self, key: &Key) -> std::sync::MutexGuard<'_, Generations> {
        let i = key.hash as usize & (self.shards.len() - 1);
        self.shards[i].lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Most shards of a [`CachedEvaluator`].
const MAX_SHARDS: usize = 64;

impl<E: Evaluator> Evaluator for CachedEvaluator<E> {
    fn evaluate_batch(&self, positions: &[&Position], legal: &[&[Move]]) -> Vec<Evaluation> {
        let keys: Vec<Key> = positions.iter().zip(legal).map(|(p, l)| Key::of(p, l)).collect();
        let mut found: Vec<Option<Arc<Evaluation>>> = vec![None; positions.len()];
        // The positions to ask about: each key once, with the batch's first index of it.
        let mut ask: Vec<usize> = Vec::new();
        for (i, key) in keys.iter().enumerate() {
            found[i] = self.shard(key).get(key);
        }
        let mut first_of: HashMap<Key, usize> = HashMap::new();
        for (i, key) in keys.iter().enumerate() {
            if found[i].is_none() {
                first_of.entry(*key).or_insert_with(|| {
                    ask.push(i);
                    i
                });
            }
        }
        self.lookups.fetch_add(positions.len() as u64, Ordering::Relaxed);
        self.hits.fetch_add((positions.len() - ask.len()) as u64, Ordering::Relaxed);
        if !ask.is_empty() {
            let ps: Vec<&Position> = ask.iter().map(|&i| positions[i]).collect();
            let ls: Vec<&[Move]> = ask.iter().map(|&i| legal[i]).collect();
            let fresh: Vec<Arc<Evaluation>> = self.inner.evaluate_batch(&ps, &ls).into_iter().map(Arc::new).collect();
            for (&i, e) in ask.iter().zip(&fresh) {
                if self.budget > 0 {
                    self.shard(&keys[i]).insert(keys[i], e.clone(), self.budget);
                }
                found[i] = Some(e.clone());
            }
            for (i, key) in keys.iter().enumerate() {
                if found[i].is_none() {
                    found[i] = found[first_of[key]].clone();
                }
            }
        }
        found.into_iter().map(|e| Evaluation::clone(&e.expect("every position answered"))).collect()
    }

    fn preferred_batch_size(&self) -> usize {
        self.inner.preferred_batch_size()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::UniformEvaluator;
    use bredon_rules::notation::parse_move;
    use std::sync::atomic::AtomicUsize;

    /// Counts the positions it is asked about; the value says which call answered.
    struct Counting {
        asked: AtomicUsize,
    }

    impl Evaluator for Counting {
        fn evaluate_batch(&self, positions: &[&Position], legal: &[&[Move]]) -> Vec<Evaluation> {
            let n = self.asked.fetch_add(positions.len(), Ordering::Relaxed);
            let mut out = UniformEvaluator.evaluate_batch(positions, legal);
            for (k, e) in out.iter_mut().enumerate() {
                e.value = ((n + k) as f32 / 1000.0).min(1.0);
            }
            out
        }
    }

    fn after(moves: &[&str]) -> Position {
        let mut p = Position::new(5).unwrap();
        for m in moves {
            p.make(parse_move(m, 5).unwrap());
        }
        p
    }

    #[test]
    fn a_transposed_position_is_answered_from_memory() {
        let cache = CachedEvaluator::new(Counting { asked: AtomicUsize::new(0) }, 1 << 20);
        // White places c1 and e1 in either order: the same position.
        let a = after(&["a1", "b1", "c1", "d1", "e1", "a2"]);
        let b = after(&["a1", "b1", "e1", "d1", "c1", "a2"]);
        assert_eq!(a.hash(), b.hash());
        let (la, lb) = (a.legal_moves(), b.legal_moves());
        let first = cache.evaluate_batch(&[&a], &[&la]);
        let second = cache.evaluate_batch(&[&b], &[&lb]);
        assert_eq!(first, second);
        assert_eq!(cache.inner().asked.load(Ordering::Relaxed), 1);
        assert_eq!(cache.stats(), CacheStats { hits: 1, lookups: 2 });
        // Twice in one batch: asked once, both answered alike.
        let c = after(&["a1", "b1"]);
        let lc = c.legal_moves();
        let both = cache.evaluate_batch(&[&c, &c], &[&lc, &lc]);
        assert_eq!(both[0], both[1]);
        assert_eq!(cache.inner().asked.load(Ordering::Relaxed), 2);
        // Another komi is another position.
        let mut k = Position::with_options(a.options().with_half_komi(4)).unwrap();
        for m in ["a1", "b1", "c1", "d1", "e1", "a2"] {
            k.make(parse_move(m, 5).unwrap());
        }
        let lk = k.legal_moves();
        cache.evaluate_batch(&[&k], &[&lk]);
        assert_eq!(cache.inner().asked.load(Ordering::Relaxed), 3);
        cache.clear();
        cache.evaluate_batch(&[&a], &[&la]);
        assert_eq!(cache.inner().asked.load(Ordering::Relaxed), 4);
    }

    /// Priors and a value that depend on the position alone (through its hash).
    struct ByHash;

    impl Evaluator for ByHash {
        fn evaluate_batch(&self, positions: &[&Position], legal: &[&[Move]]) -> Vec<Evaluation> {
            positions
                .iter()
                .zip(legal)
                .map(|(p, l)| {
                    let h = p.hash();
                    let raw: Vec<f32> = (0..l.len()).map(|i| 1.0 + ((h >> (i % 48)) & 7) as f32).collect();
                    let sum: f32 = raw.iter().sum();
                    let value = ((h % 2001) as f32 / 1000.0 - 1.0) * 0.6;
                    Evaluation::new(raw.into_iter().map(|x| x / sum).collect(), value)
                })
                .collect()
        }
        fn preferred_batch_size(&self) -> usize {
            8
        }
    }

    #[test]
    fn a_search_through_the_cache_is_the_same_search() {
        use crate::{Budget, play_config, search_once};
        use rand::SeedableRng;
        let pos = after(&["a1", "e5", "c3", "c2"]);
        let cached = CachedEvaluator::new(ByHash, 64 << 20);
        let run = |e: &dyn Evaluator| {
            let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
            search_once(&pos, e, &play_config(), Budget::Visits(3000), &mut rng)
        };
        let (plain, through) = (run(&ByHash), run(&cached));
        assert_eq!(plain.visits, through.visits);
        assert_eq!((plain.best_move, plain.value), (through.best_move, through.value));
        let st = cached.stats();
        assert!(st.hits > 0, "a 3,000-visit search of a placement position meets transpositions: {st:?}");
    }

    #[test]
    fn memory_stays_within_the_budget() {
        // A budget of about 20 entries: older positions are dropped and asked again.
        let p0 = after(&["a1", "b1"]);
        let per = entry_bytes(&UniformEvaluator.evaluate_batch(&[&p0], &[&p0.legal_moves()])[0]);
        let cache = CachedEvaluator::new(Counting { asked: AtomicUsize::new(0) }, 20 * per);
        let mut ps = Vec::new();
        for a in ["a", "b", "c", "d", "e"] {
            for r in 1..=5 {
                for m in ["c3", "d4"] {
                    let sq = format!("{a}{r}");
                    if sq != m {
                        ps.push(after(&[&sq, m]));
                    }
                }
            }
        }
        for p in &ps {
            cache.evaluate_batch(&[p], &[&p.legal_moves()]);
        }
        assert_eq!(cache.shards.len(), 1, "a budget under a MB is one shard");
        let maps = cache.shards[0].lock().unwrap();
        assert!(maps.current.len() + maps.previous.len() <= 20, "{}", maps.current.len() + maps.previous.len());
        drop(maps);
        let asked = cache.inner().asked.load(Ordering::Relaxed);
        let first = &ps[0];
        cache.evaluate_batch(&[first], &[&first.legal_moves()]);
        assert_eq!(cache.inner().asked.load(Ordering::Relaxed), asked + 1, "the oldest entry was dropped");
    }

    #[test]
    fn a_large_cache_is_sharded_and_each_shard_keeps_its_share() {
        let sizes: Vec<usize> = [0usize, 1 << 20, 3 << 20, 64 << 20, 256 << 20]
            .iter()
            .map(|&b| CachedEvaluator::new(UniformEvaluator, b).shards.len())
            .collect();
        assert_eq!(sizes, [1, 1, 2, 64, 64]);
        // Positions land in several shards, and each is found again.
        let cache = CachedEvaluator::new(Counting { asked: AtomicUsize::new(0) }, 64 << 20);
        let ps: Vec<Position> = ["a1", "b1", "c1", "d1", "e1", "a2", "b2", "c2"].iter().map(|m| after(&[m])).collect();
        for p in &ps {
            cache.evaluate_batch(&[p], &[&p.legal_moves()]);
        }
        let used = cache.shards.iter().filter(|s| !s.lock().unwrap().current.is_empty()).count();
        assert!(used > 1, "{used} shard(s) in use");
        let refs: Vec<&Position> = ps.iter().collect();
        let legal: Vec<Vec<Move>> = ps.iter().map(|p| p.legal_moves()).collect();
        let legal: Vec<&[Move]> = legal.iter().map(|m| m.as_slice()).collect();
        cache.evaluate_batch(&refs, &legal);
        assert_eq!(cache.inner().asked.load(Ordering::Relaxed), ps.len(), "every position answered from memory");
        assert_eq!(cache.stats(), CacheStats { hits: 8, lookups: 16 });
    }
}
