//! `bredon analyse` (placeholder; being written).

/// Arguments of `bredon analyse`.
#[derive(clap::Args, Debug)]
pub struct AnalyseArgs {}

/// Analyses a game.
pub fn run(_args: AnalyseArgs) -> anyhow::Result<()> {
    anyhow::bail!("not implemented yet")
}
