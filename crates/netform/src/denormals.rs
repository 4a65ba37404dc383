//! Denormal floats flushed to zero while a guard lives: for the network's forward passes
//! (the CPU kernels) and the training step (burn's CPU backend on rayon's pool).
//!
//! Trained weights and activations can hold values so small that x86 computes with them
//! in microcode, hundreds of cycles per operation: without the flush the shipped 6x6
//! model ran 5x slower than an untrained one.

/// While alive, the current thread treats denormal floats as zero and flushes denormal
/// results to zero (x86-64: the FTZ and DAZ bits of MXCSR); dropping it restores the
/// thread's previous mode, so callers' own arithmetic is left as it was. The network's
/// outputs change only below the smallest normal float (about 1e-38), far under its
/// rounding. Elsewhere a no-op.
pub struct FlushDenormals {
    #[cfg(target_arch = "x86_64")]
    saved: u32,
}

/// MXCSR's flush-to-zero (bit 15) and denormals-are-zero (bit 6).
#[cfg(target_arch = "x86_64")]
const FTZ_DAZ: u32 = 0x8040;

impl FlushDenormals {
    #[inline]
    #[allow(clippy::new_without_default)] // a guard that changes the thread's mode: not a default value
    pub fn new() -> FlushDenormals {
        #[cfg(target_arch = "x86_64")]
        {
            // The intrinsics are deprecated because the compiler assumes the default mode
            // when it folds constants; here that only means a folded denormal might not be
            // flushed, which changes nothing.
            #[allow(deprecated)]
            // SAFETY: SSE is part of x86-64; only the two denormal bits change.
            let saved = unsafe { std::arch::x86_64::_mm_getcsr() };
            if saved & FTZ_DAZ != FTZ_DAZ {
                #[allow(deprecated)]
                // SAFETY: as above.
                unsafe {
                    std::arch::x86_64::_mm_setcsr(saved | FTZ_DAZ)
                };
            }
            FlushDenormals { saved }
        }
        #[cfg(not(target_arch = "x86_64"))]
        FlushDenormals {}
    }
}

impl Drop for FlushDenormals {
    #[inline]
    fn drop(&mut self) {
        #[cfg(target_arch = "x86_64")]
        if self.saved & FTZ_DAZ != FTZ_DAZ {
            #[allow(deprecated)]
            // SAFETY: restores the mode read in `new`.
            unsafe {
                std::arch::x86_64::_mm_setcsr(self.saved)
            };
        }
    }
}

/// [`FlushDenormals`] on the current thread and on every thread of the current rayon pool
/// (the global one, where burn's CPU backend and the fast kernels run) while alive: for work, such as a
/// training step, that fans out to the pool through code that is not ours. Dropping it
/// restores each thread's previous mode.
pub struct FlushDenormalsInPool {
    _here: FlushDenormals,
}

thread_local! {
    /// A pool thread's guard while a [`FlushDenormalsInPool`] lives.
    static POOL_FLUSH: std::cell::Cell<Option<FlushDenormals>> = const { std::cell::Cell::new(None) };
}

impl FlushDenormalsInPool {
    #[allow(clippy::new_without_default)] // a guard that changes the pool's mode: not a default value
    pub fn new() -> FlushDenormalsInPool {
        let here = FlushDenormals::new();
        if cfg!(target_arch = "x86_64") {
            rayon::broadcast(|_| POOL_FLUSH.with(|g| g.set(Some(FlushDenormals::new()))));
        }
        FlushDenormalsInPool { _here: here }
    }
}

impl Drop for FlushDenormalsInPool {
    fn drop(&mut self) {
        if cfg!(target_arch = "x86_64") {
            rayon::broadcast(|_| POOL_FLUSH.with(|g| drop(g.take())));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::FlushDenormals;
    use std::hint::black_box;

    /// Half the smallest normal float times one: a denormal result, or zero when flushed.
    fn denormal_product() -> f32 {
        black_box(f32::MIN_POSITIVE) * black_box(0.5f32)
    }

    #[test]
    fn denormals_are_flushed_while_the_guard_lives_and_the_mode_comes_back() {
        let before = denormal_product();
        assert!(before > 0.0 && !before.is_normal(), "the default mode keeps denormals: {before:e}");
        {
            let _outer = FlushDenormals::new();
            if cfg!(target_arch = "x86_64") {
                assert_eq!(denormal_product(), 0.0, "flushed to zero inside the guard");
                // A denormal input counts as zero too (DAZ).
                assert_eq!(black_box(before) * black_box(4.0f32), 0.0);
            }
            {
                let _inner = FlushDenormals::new(); // nested: the outer mode stays
            }
            if cfg!(target_arch = "x86_64") {
                assert_eq!(denormal_product(), 0.0, "a nested guard leaves the outer one's mode");
            }
        }
        assert_eq!(denormal_product(), before, "the thread's mode is restored");
    }

    #[test]
    fn the_pool_guard_flushes_on_every_pool_thread_and_restores_them() {
        use super::FlushDenormalsInPool;
        // A pool of its own: tests running beside this one use the global pool.
        let pool = rayon::ThreadPoolBuilder::new().num_threads(3).build().unwrap();
        pool.install(|| {
            let on_pool = || rayon::broadcast(|_| denormal_product());
            let before = denormal_product();
            assert!(on_pool().iter().all(|&p| p == before), "the pool keeps denormals by default");
            {
                let _flush = FlushDenormalsInPool::new();
                if cfg!(target_arch = "x86_64") {
                    assert_eq!(denormal_product(), 0.0, "the calling thread is flushed");
                    let products = on_pool();
                    assert_eq!(products, vec![0.0; 3], "every pool thread is flushed");
                }
            }
            assert_eq!(denormal_product(), before, "the calling thread's mode is restored");
            assert!(on_pool().iter().all(|&p| p == before), "the pool threads' modes are restored");
        });
    }
}
