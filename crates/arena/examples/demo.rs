//! A small arena run that prints the ratings table:
//! `cargo run --release -p bredon-arena --example demo -- OUT_DIR [GAMES] [SPEC…]`
//! (default players: `uniform:50 uniform:200 random`).
use bredon_arena::{MatchConfig, OpeningsConfig, PlayerSpec, run_arena};

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let out = args.first().cloned().unwrap_or_else(|| "arena-demo".into());
    let games = args.get(1).map(|g| g.parse()).transpose()?.unwrap_or(10);
    let mut specs: Vec<String> = args.iter().skip(2).cloned().collect();
    if specs.is_empty() {
        specs = ["uniform:50", "uniform:200", "random"].map(String::from).to_vec();
    }
    let config = MatchConfig {
        size: 5,
        half_komi: 4,
        games_per_pairing: games,
        openings: OpeningsConfig::Random { plies: 2, count: 50, seed: 1 },
        threads: 2,
        ..MatchConfig::default()
    };
    let players: Vec<PlayerSpec> = specs.iter().map(|s| s.parse()).collect::<Result<_, _>>()?;
    let table = run_arena(&config, &players, std::path::Path::new(&out), &mut |_| {})?;
    print!("{table}");
    Ok(())
}
