//! Random draws from burn's generator, made reproducible across threads.
//!
//! burn's CPU backend keeps **one random generator per process** (burn-flex's `SEED`):
//! `device.seed(s)` sets it for every thread, and whichever thread draws next takes the
//! numbers. burn's parameters are also **lazy**: a layer's random weights are drawn at the
//! parameter's first use, not when the layer is built. So "seed, then build" gave the same
//! network only while nothing else in the process drew meanwhile: two trainings side by
//! side (parallel tests did) could get each other's numbers.
//!
//! Every draw Bredon makes from burn's generator happens inside [`seeded`] or [`drawn`],
//! which hold one process-wide lock for the seeding and all the draws together; networks
//! are built with every weight drawn at once ([`crate::TakNet::seeded`], [`crate::TakNet::new`]),
//! and a loaded one draws none (its record replaces the lazy parameters undrawn).

use std::cell::Cell;
use std::sync::{Mutex, PoisonError};

use burn::prelude::Device;

/// Held for a seeding and every draw that must follow it undisturbed.
static DRAWS: Mutex<()> = Mutex::new(());

thread_local! {
    /// Whether this thread holds [`DRAWS`] (a draw inside a draw, such as
    /// [`crate::TakNet::new`] inside [`seeded`], runs under the same hold).
    static HOLDING: Cell<bool> = const { Cell::new(false) };
}

/// Runs `draw` with no other thread drawing from burn's generator, from wherever it
/// stands (unseeded draws: a new network, a test's noise), holding [`DRAWS`] unless this
/// thread holds it already.
pub fn drawn<T>(draw: impl FnOnce() -> T) -> T {
    if HOLDING.get() {
        return draw();
    }
    // A panic while drawing leaves nothing half-written that matters: the generator is
    // seeded again by the next `seeded`.
    let _held = DRAWS.lock().unwrap_or_else(PoisonError::into_inner);
    struct Release;
    impl Drop for Release {
        fn drop(&mut self) {
            HOLDING.set(false);
        }
    }
    HOLDING.set(true);
    let _release = Release;
    draw()
}

/// Runs `draw` with burn's generator seeded with `seed` and no other thread drawing: the
/// same `seed` gives the same numbers whatever else the process does. `draw` must not
/// leave lazy draws behind: build networks inside it with [`crate::TakNet::new`], which
/// draws every weight at once.
pub fn seeded<T>(device: &Device, seed: u64, draw: impl FnOnce() -> T) -> T {
    drawn(|| {
        device.seed(seed);
        draw()
    })
}

#[cfg(test)]
mod tests {
    use crate::TakNet;
    use bredon_netform::config::NetConfig;

    fn stem(net: &TakNet) -> Vec<f32> {
        net.stem.weight.val().into_data().try_to_vec::<f32>().unwrap()
    }

    /// A seeded network is the same while other threads build networks from burn's one
    /// generator (before the lock and the eager draws, its weights were drawn lazily at
    /// first use and any thread's draw could come between the seed and them).
    #[test]
    fn a_seeded_network_is_the_same_whatever_other_threads_draw() {
        let cfg =
            NetConfig { size: 4, blocks: 1, channels: 8, value_hidden: 8, policy_filters: 2, ..NetConfig::default() };
        let device = crate::device::cpu();
        let reference = stem(&TakNet::seeded(&cfg, &device, 5));
        assert_ne!(reference, stem(&TakNet::seeded(&cfg, &device, 6)), "another seed, other weights");
        let stop = std::sync::atomic::AtomicBool::new(false);
        let builds = std::thread::scope(|s| {
            for _ in 0..2 {
                s.spawn(|| {
                    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                        let net = TakNet::new(&cfg, &device);
                        assert!(stem(&net).iter().all(|w| w.is_finite()));
                    }
                });
            }
            let builds: Vec<Vec<f32>> = (0..30)
                .map(|_| {
                    let net = TakNet::seeded(&cfg, &device, 5);
                    // Read after the others have drawn more: lazy weights would be drawn now.
                    std::thread::yield_now();
                    stem(&net)
                })
                .collect();
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
            builds
        });
        for (i, build) in builds.iter().enumerate() {
            assert!(build == &reference, "build {i} of seed 5 differs from the first");
        }
    }
}
