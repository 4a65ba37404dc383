//! The run config loader: `RunConfig::from_toml` (TOML parsing with serde defaults and
//! `deny_unknown_fields`, then `validate`) never panics, and a config it accepts can be
//! used: every number finite, the learning-rate schedule and the replay window sane at
//! any step, the network and search settings in range.
#![no_main]

use bredon_selfplay::config::RunConfig;
use libfuzzer_sys::fuzz_target;

fn all_finite(v: &toml::Value) -> bool {
    match v {
        toml::Value::Float(f) => f.is_finite(),
        toml::Value::Array(a) => a.iter().all(all_finite),
        toml::Value::Table(t) => t.values().all(all_finite),
        _ => true,
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(cfg) = RunConfig::from_toml(text) else { return };
    let v = toml::Value::try_from(&cfg).expect("a config serialises");
    assert!(all_finite(&v), "non-finite number accepted: {text:?}");
    for step in [0u64, 1, 1000, u64::MAX / 2, u64::MAX] {
        let lr = cfg.train.lr_at(step);
        assert!(lr.is_finite() && lr > 0.0, "learning rate {lr} at step {step}: {text:?}");
    }
    for total in [0usize, 1, 1 << 20, usize::MAX] {
        let w = cfg.train.window_size(total);
        assert!(w <= total && (w >= 1 || total == 0), "window {w} for {total} samples: {text:?}");
    }
    let net = cfg.net.for_size(cfg.game.size);
    assert_eq!(net.size, cfg.game.size);
    // The text the run keeps (`config.toml`) reads back to the same config.
    let again = RunConfig::from_toml(&toml::to_string(&cfg).expect("serialises")).expect("round trip");
    assert_eq!(again, cfg);
});
