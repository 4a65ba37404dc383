//! `bredon export`: a checkpoint as one self-contained model file for play, or as ONNX.

use anyhow::{Context, Result, bail};
use bredon_nn::{average, export_model, load_exported};
use bredon_selfplay::curriculum::{CURRICULUM_FILE, newest_stage_dir, stage_progress};
use bredon_selfplay::remote::CheckpointFiles;
use bredon_selfplay::rundir::{Generation, RunDir};
use std::path::PathBuf;

/// Arguments of `bredon export`.
#[derive(clap::Args, Debug)]
pub struct ExportArgs {
    /// A checkpoint directory or a `.bredon` model file to export (or use `--run`).
    pub checkpoint: Option<PathBuf>,
    /// A run directory: exports its latest checkpoint (or `--generation`).
    #[arg(long, conflicts_with = "checkpoint")]
    pub run: Option<bredon_storage::RunLocation>,
    /// With `--run`: the generation to export instead of the latest.
    #[arg(long, requires = "run")]
    pub generation: Option<u32>,
    /// With `--run`: export the mean of the weights of this many consecutive checkpoints
    /// ending at the exported generation (KataGo's averaged snapshots; 1 = that checkpoint
    /// alone). The file is named `gen-NNNN-avgN.bredon` by default.
    #[arg(long, requires = "run", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub average: u32,
    /// Output file (default: `<run>/exports/<checkpoint>.bredon`, or next to the checkpoint;
    /// `.onnx` with `--format onnx`).
    #[arg(long, short)]
    pub out: Option<PathBuf>,
    /// `bredon` (one file for `play`, `tei`, `analyse`) or `onnx` (opset 17, dynamic batch:
    /// input `planes`, outputs `policy_logits` and `value`, for onnxruntime and others).
    #[arg(long, value_enum, default_value_t = ExportFormat::Bredon)]
    pub format: ExportFormat,
}

/// What `bredon export` writes.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExportFormat {
    /// Bredon's own model file (`.bredon`): metadata, weights and a checksum.
    Bredon,
    /// An ONNX model (`.onnx`) with BatchNorm folded.
    Onnx,
}

/// Writes the model file and checks that it loads back.
pub fn run(args: ExportArgs) -> Result<()> {
    // The checkpoints to export, oldest first: one, or the `--average` ones ending at it.
    // The run and generation of the checkpoint exported, when it is one of a run's.
    let mut source: Option<(RunDir, Generation)> = None;
    let (dirs, default_out) = match (&args.checkpoint, &args.run) {
        (Some(dir), None) => {
            let name = dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "model".into());
            let name = name.strip_suffix(".bredon").map(str::to_string).unwrap_or(name);
            if dir.is_dir() {
                source = RunDir::of_checkpoint(dir);
            }
            (vec![dir.clone()], dir.with_file_name(format!("{name}.bredon")))
        }
        (None, Some(location)) => {
            // A run on an object store: the checkpoint is fetched into a local copy, and
            // the export written there (`--out` to put it elsewhere).
            let opened = crate::run_arg::open(location, None, "export")?;
            let dir = if opened.dir.join(CURRICULUM_FILE).is_file() {
                let stage =
                    newest_stage_dir(&opened.dir)?.with_context(|| format!("{location} has no checkpoint yet"))?;
                eprintln!("{location} is a curriculum: exporting its newest stage, {}", stage.display());
                stage
            } else {
                opened.dir.clone()
            };
            let run = RunDir::new(&dir);
            if let Some(r) = &opened.remote {
                r.pull_run(CheckpointFiles::Model)?;
                if let Some(g) = args.generation {
                    r.pull_checkpoint(Generation(g), CheckpointFiles::Model)?;
                }
            }
            let generation = match args.generation {
                Some(g) => Generation(g),
                None => run.latest()?.with_context(|| format!("{location} has no checkpoint yet"))?,
            };
            if args.average > generation.0 + 1 {
                bail!(
                    "--average {} needs {} checkpoints ending at {generation}, and the run starts at gen-0000",
                    args.average,
                    args.average
                );
            }
            let first = generation.0 + 1 - args.average;
            if let Some(r) = &opened.remote {
                // The exported generation itself was fetched above.
                for g in first..generation.0 {
                    r.pull_checkpoint(Generation(g), CheckpointFiles::Model)?;
                }
            }
            let dirs = (first..=generation.0).map(|g| run.checkpoint_dir(Generation(g))).collect();
            let name =
                if args.average > 1 { format!("{generation}-avg{}", args.average) } else { generation.to_string() };
            let out = run.exports_dir().join(format!("{name}.bredon"));
            source = Some((run, generation));
            (dirs, out)
        }
        _ => bail!("give a checkpoint directory or --run DIR"),
    };
    let load = |dir: &PathBuf| load_exported(dir).with_context(|| format!("loading checkpoint {}", dir.display()));
    let mut models = dirs.iter().map(load).collect::<Result<Vec<_>>>()?;
    let (model, meta) = if models.len() == 1 {
        models.pop().expect("one model")
    } else {
        let (model, meta) = average(&models).context("averaging the checkpoints")?;
        eprintln!(
            "averaged {} checkpoints, {} to {} (steps {} to {})",
            models.len(),
            models[0].1.generation,
            meta.generation,
            models[0].1.step,
            meta.step
        );
        (model, meta)
    };
    let onnx = args.format == ExportFormat::Onnx;
    // A curriculum stage's checkpoint carries how far into the stage it is (a model that
    // `--start-stage NAME --init-from` goes on from; ONNX has no use for it).
    let mut meta = meta;
    if let Some((run, generation)) = source.as_ref().filter(|_| !onnx) {
        match stage_progress(run, *generation) {
            Ok(Some(p)) => {
                eprintln!(
                    "stage {}: {} steps, {} generations and {:.1} minutes of it behind this model",
                    p.name, p.steps, p.generations, p.minutes
                );
                meta.stage = Some(p);
            }
            Ok(None) => {}
            Err(e) => eprintln!("warning: exported without its curriculum stage's progress: {e}"),
        }
    }
    let out = args.out.unwrap_or(if onnx { default_out.with_extension("onnx") } else { default_out });
    if let Some(parent) = out.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))?;
    }
    if onnx {
        bredon_onnx::export_onnx(&model.fold(meta.size), &meta, &out)
            .with_context(|| format!("writing {}", out.display()))?;
        let back = bredon_onnx::read_onnx_summary(&out).with_context(|| format!("reading back {}", out.display()))?;
        let size = back.metadata.iter().find(|(k, _)| k == "size").map(|(_, v)| v.as_str());
        let outputs = 2 + usize::from(meta.net.wdl) + 3 * usize::from(meta.net.aux);
        if size != Some(meta.size.to_string().as_str()) || back.outputs.len() != outputs {
            bail!("{} does not read back as the exported model", out.display());
        }
        println!(
            "{}: ONNX opset {}, {size}x{size} {} model, step {}, generation {}, half komi {}, {} nodes, {:.2} MB",
            out.display(),
            back.opset,
            meta.net.name(),
            meta.step,
            meta.generation,
            meta.half_komi,
            back.nodes,
            std::fs::metadata(&out)?.len() as f64 / 1e6,
            size = meta.size,
        );
        return Ok(());
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
