//! `bredon tei` (placeholder; being written).

/// Arguments of `bredon tei`.
#[derive(clap::Args, Debug)]
pub struct TeiArgs {}

/// Runs the TEI engine.
pub fn run(_args: TeiArgs) -> anyhow::Result<()> {
    anyhow::bail!("not implemented yet")
}
