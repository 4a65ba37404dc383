//! Time management: how long to think on a game clock.

use std::time::Duration;

/// Thinking time for one move with `time_ms` left on the clock and `inc_ms` added per
/// move: a twentieth of the time left plus three quarters of the increment, never more
/// than a third of the time left, minus 10 ms of safety for the move's overhead.
pub fn clock_budget(time_ms: u64, inc_ms: u64) -> Duration {
    let spend = time_ms / 20 + inc_ms * 3 / 4;
    let cap = time_ms / 3;
    Duration::from_millis(spend.min(cap).saturating_sub(10).max(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clock_budget_is_sane() {
        assert!(clock_budget(60_000, 0) >= Duration::from_millis(2900));
        assert!(clock_budget(60_000, 0) <= Duration::from_millis(3000));
        assert!(clock_budget(300, 10_000) <= Duration::from_millis(100));
        assert!(clock_budget(0, 0) >= Duration::from_millis(1));
        // 10 s + 0.1 s: about half a second for the first move.
        assert_eq!(clock_budget(10_000, 100), Duration::from_millis(565));
    }
}
