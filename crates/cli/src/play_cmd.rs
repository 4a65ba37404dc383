//! `bredon play` (placeholder; being written).

/// Arguments of `bredon play`.
#[derive(clap::Args, Debug)]
pub struct PlayArgs {}

/// Plays against a person.
pub fn run(_args: PlayArgs) -> anyhow::Result<()> {
    anyhow::bail!("not implemented yet")
}
