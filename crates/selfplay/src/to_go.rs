//! What is left of a run's limit after a generation, and about how long it takes: the
//! end of each generation's log line (`to go: 18448 steps, ~14.2 h`) and `to_go` in
//! `logs/generations.jsonl`.

use serde::Serialize;

/// What is left of a run's limit: the limit that ends it first (`[schedule]` steps,
/// generations or minutes, or a curriculum stage's), with an estimate of the minutes it
/// takes at the pace of the run directory's own clock so far.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(tag = "limit", rename_all = "snake_case")]
pub enum ToGo {
    /// Training steps left, and the estimated minutes.
    Steps { steps: u64, minutes: f64 },
    /// Generations left, and the estimated minutes.
    Generations { generations: u32, minutes: f64 },
    /// Minutes left of this invocation's `--minutes` (or the stage's).
    Minutes { minutes: f64 },
}

impl ToGo {
    /// The limit of `schedule` that ends the run first after a generation: the run is at
    /// `step` and `generation` after `elapsed_secs` on its own clock, its first checkpoint
    /// at `first_step`, and `minutes_used` of this invocation's `max_minutes` are gone. A
    /// count with no pace yet (nothing done) gives no estimate (NaN) and loses to a limit
    /// that has one.
    pub(crate) fn of(schedule: &ScheduleProgress) -> Option<ToGo> {
        let ScheduleProgress { limits, first_step, step, generation, elapsed_secs, minutes_used } = *schedule;
        let pace = |done: f64, left: f64| {
            if done > 0.0 && elapsed_secs > 0.0 { left * elapsed_secs / done / 60.0 } else { f64::NAN }
        };
        let mut candidates = Vec::new();
        if let Some(steps) = limits.steps_left(first_step, step) {
            let trained = step.saturating_sub(first_step);
            candidates.push(ToGo::Steps { steps, minutes: pace(trained as f64, steps as f64) });
        }
        if limits.generations > 0 {
            let generations = limits.generations.saturating_sub(generation);
            candidates
                .push(ToGo::Generations { generations, minutes: pace(f64::from(generation), f64::from(generations)) });
        }
        if limits.max_minutes > 0.0 {
            candidates.push(ToGo::Minutes { minutes: (limits.max_minutes - minutes_used).max(0.0) });
        }
        let soonest = |t: &ToGo| if t.minutes().is_nan() { f64::INFINITY } else { t.minutes() };
        candidates.into_iter().min_by(|a, b| soonest(a).total_cmp(&soonest(b)))
    }

    /// The estimate in minutes (NaN: no pace yet).
    pub fn minutes(&self) -> f64 {
        match *self {
            ToGo::Steps { minutes, .. } | ToGo::Generations { minutes, .. } | ToGo::Minutes { minutes } => minutes,
        }
    }
}

impl std::fmt::Display for ToGo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            ToGo::Steps { steps, .. } => write!(f, "{steps} steps")?,
            ToGo::Generations { generations, .. } => write!(f, "{generations} generations")?,
            ToGo::Minutes { .. } => {}
        }
        let minutes = self.minutes();
        let sep = if matches!(self, ToGo::Minutes { .. }) { "" } else { ", " };
        if minutes.is_nan() || (minutes == 0.0 && !matches!(self, ToGo::Minutes { .. })) {
            Ok(())
        } else if minutes < 1.0 {
            write!(f, "{sep}<1 min")
        } else if minutes < 90.0 {
            write!(f, "{sep}~{minutes:.0} min")
        } else {
            write!(f, "{sep}~{:.1} h", minutes / 60.0)
        }
    }
}

/// Where a run stands against its limits after a generation ([`ToGo::of`]).
#[derive(Clone, Copy, Debug)]
pub(crate) struct ScheduleProgress<'a> {
    pub(crate) limits: &'a crate::config::ScheduleConfig,
    /// The step of the run's first checkpoint, where `[schedule] steps` counts from.
    pub(crate) first_step: u64,
    /// The step reached.
    pub(crate) step: u64,
    /// The generation just written.
    pub(crate) generation: u32,
    /// The run directory's clock.
    pub(crate) elapsed_secs: f64,
    /// Minutes of this invocation.
    pub(crate) minutes_used: f64,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The limit that ends the run first is the one shown, with its time at the run's
    /// pace; a count with no pace yet gives way to one that has it.
    #[test]
    fn to_go_is_the_limit_that_ends_the_run_first() {
        let limits = crate::config::ScheduleConfig { steps: 1000, generations: 40, ..Default::default() };
        // 10 generations, 200 steps in 20 minutes: 800 steps take 80 minutes, 30
        // generations 60: the generations end it first.
        fn at(limits: &crate::config::ScheduleConfig, trained: u64, minutes_used: f64) -> ScheduleProgress<'_> {
            ScheduleProgress {
                limits,
                first_step: 5000,
                step: 5000 + trained,
                generation: 10,
                elapsed_secs: 1200.0,
                minutes_used,
            }
        }
        let to_go = ToGo::of(&at(&limits, 200, 20.0)).unwrap();
        assert_eq!(to_go, ToGo::Generations { generations: 30, minutes: 60.0 });
        assert_eq!(to_go.to_string(), "30 generations, ~60 min");
        // At 400 steps: 600 steps in 60 minutes, 30 generations in 60: the first found.
        let limits = crate::config::ScheduleConfig { steps: 1000, generations: 100, ..Default::default() };
        let to_go = ToGo::of(&at(&limits, 400, 20.0)).unwrap();
        assert_eq!(to_go, ToGo::Steps { steps: 600, minutes: 30.0 });
        // `--minutes 25` with 20 used ends it sooner still.
        let limits = crate::config::ScheduleConfig { max_minutes: 25.0, ..limits };
        let to_go = ToGo::of(&at(&limits, 400, 20.0)).unwrap();
        assert_eq!(to_go, ToGo::Minutes { minutes: 5.0 });
        assert_eq!(to_go.to_string(), "~5 min");
        assert_eq!(ToGo::Minutes { minutes: 0.4 }.to_string(), "<1 min");
        assert_eq!(ToGo::Steps { steps: 0, minutes: 0.0 }.to_string(), "0 steps");
        // Long estimates in hours; no steps trained yet: no estimate, and the count alone.
        let limits = crate::config::ScheduleConfig { steps: 19300, ..Default::default() };
        assert_eq!(ToGo::of(&at(&limits, 100, 20.0)).unwrap().to_string(), "19200 steps, ~64.0 h");
        assert_eq!(ToGo::of(&at(&limits, 0, 20.0)).unwrap().to_string(), "19300 steps");
        // An open-ended run has nothing to go.
        assert_eq!(ToGo::of(&at(&crate::config::ScheduleConfig::default(), 100, 20.0)), None);
    }
}
