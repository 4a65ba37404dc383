//! `bredon export`: a checkpoint as one self-contained model file for play.

use anyhow::{Context, Result, bail};
use bredon_nn::{export_model, load_exported, load_model};
use bredon_selfplay::rundir::RunDir;
use std::path::PathBuf;

/// Arguments of `bredon export`.
#[derive(clap::Args, Debug)]
pub struct ExportArgs {
    /// A checkpoint directory to export (or use `--run`).
    pub checkpoint: Option<PathBuf>,
    /// A run directory: exports its latest checkpoint (or `--generation`).
    #[arg(long, conflicts_with = "checkpoint")]
    pub run: Option<PathBuf>,
    /// With `--run`: the generation to export instead of the latest.
    #[arg(long, requires = "run")]
    pub generation: Option<u32>,
    /// Output file (default: `<run>/exports/<checkpoint>.bredon`, or next to the checkpoint).
    #[arg(long, short)]
    pub out: Option<PathBuf>,
}

/// Writes the model file and checks that it loads back.
pub fn run(args: ExportArgs) -> Result<()> {
    let (dir, default_out) = match (&args.checkpoint, &args.run) {
        (Some(dir), None) => {
            let name = dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "model".into());
            (dir.clone(), dir.with_file_name(format!("{name}.bredon")))
        }
        (None, Some(run_path)) => {
            let run = RunDir::new(run_path);
            let name = match args.generation {
                Some(g) => RunDir::model_name(g),
                None => run.latest()?.with_context(|| format!("{} has no checkpoint yet", run_path.display()))?,
            };
            (run.checkpoint_dir(&name), run.root().join("exports").join(format!("{name}.bredon")))
        }
        _ => bail!("give a checkpoint directory or --run DIR"),
    };
    let (model, meta) = load_model(&dir).with_context(|| format!("loading checkpoint {}", dir.display()))?;
    let out = args.out.unwrap_or(default_out);
    if let Some(parent) = out.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))?;
    }
    export_model(&model, &meta, &out)?;
    let (_, back) = load_exported(&out).with_context(|| format!("reading back {}", out.display()))?;
    if back != meta {
        bail!("{} does not read back the same metadata", out.display());
    }
    let bytes = std::fs::metadata(&out)?.len();
    println!(
        "{}: {size}x{size} {} model, step {}, generation {}, half komi {}, {:.2} MB",
        out.display(),
        meta.net.name(),
        meta.step,
        meta.generation,
        meta.half_komi,
        bytes as f64 / 1e6,
        size = meta.size,
    );
    Ok(())
}
