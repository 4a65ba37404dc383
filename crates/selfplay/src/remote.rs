//! A run on an object store (`--run s3://BUCKET/PREFIX`): the store holds the run's shared
//! files, each process works in a local copy (its cache directory) and exchanges files at
//! fixed points. The training loop and the workers are the same code as for a local run.
//!
//! On the store:
//!
//! ```text
//! config.toml, init.json       written when the run is created
//! latest, best                 pointers, written after the checkpoint they name
//! checkpoints/gen-0003/...     model.bpk, model.json, optimizer.bpk, state.json (last)
//! games/gen-0003/<b>.bundle    a batch of finished games (bredon_storage::bundle), one PUT
//! logs/generations.jsonl       the generation log
//! train.lease                  the trainer's lease (one trainer per run)
//! ```
//!
//! **Games are counted once.** A game's name in a bundle is `<writer id>-<local id>`; the
//! writer id is made once per cache directory and kept there (`writer-id`). The trainer
//! unpacks every bundle into its copy's `games/gen-N/` under those names, so a game in two
//! bundles (a worker killed after its upload, before it noted it) is one file, one game.
//!
//! **Uploads are complete or absent.** A worker moves its finished games (rename) into
//! `outbox/<gen>/<bundle id>/` in its cache, uploads that directory as one bundle (one PUT,
//! atomic on an object store), then deletes it. A worker killed before or during the PUT
//! leaves the directory; the next worker on the same cache uploads it (same key, same
//! contents).

use crate::error::{IoContext, Result, RunError};
use bredon_storage::fsutil::{atomic_write, is_temp_name};
use bredon_storage::{Store, bundle};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::rundir::{Generation, RunDir, layout};

/// Which files of a checkpoint a process fetches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CheckpointFiles {
    /// The model and `state.json`: enough to play with it (workers, `export`).
    Model,
    /// The optimiser state too: enough to train on from it (the trainer resuming).
    WithOptimizer,
}

/// Environment variable for tests: `before-put` or `after-put` makes a worker exit at
/// once at that point of its first game upload (as a kill would).
pub const INJECT_UPLOAD_KILL_ENV: &str = "BREDON_INJECT_UPLOAD_KILL";

/// The object store of a run and this process's local copy of it.
#[derive(Debug)]
pub struct Remote {
    store: Store,
    cache: RunDir,
    writer: String,
    nonce: String,
    seq: AtomicU64,
    /// Bundles already unpacked into the copy (by key).
    seen: std::sync::Mutex<std::collections::HashSet<String>>,
}

impl Remote {
    /// The run in `store`, with its local copy at `cache`.
    pub fn new(store: Store, cache: &Path) -> Result<Remote> {
        std::fs::create_dir_all(cache).io("creating", cache)?;
        let id_path = cache.join("writer-id");
        let writer = match std::fs::read_to_string(&id_path) {
            Ok(s) if !s.trim().is_empty() => s.trim().to_string(),
            _ => {
                let id = format!("w{}", &bredon_storage::unique_token()[..12]);
                bredon_storage::fsutil::create_if_absent(&id_path, id.as_bytes())?;
                std::fs::read_to_string(&id_path).io("reading", &id_path)?.trim().to_string()
            }
        };
        Ok(Remote {
            store,
            cache: RunDir::new(cache),
            writer,
            nonce: bredon_storage::unique_token()[..8].to_string(),
            seq: AtomicU64::new(0),
            seen: Default::default(),
        })
    }

    /// The store.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// The local copy.
    pub fn cache(&self) -> &RunDir {
        &self.cache
    }

    /// Copies `key` from the store into the local copy if it is there; returns whether.
    fn fetch(&self, key: &str) -> Result<bool> {
        match self.store.get(key)? {
            Some(bytes) => {
                atomic_write(&self.cache.path(key), &bytes)?;
                Ok(true)
            }
            None => Ok(false),
        }
    }

    /// Uploads the local copy's file `key` (if it exists locally).
    pub fn push(&self, key: &str) -> Result<()> {
        let p = self.cache.path(key);
        match std::fs::read(&p) {
            Ok(bytes) => Ok(self.store.put(key, &bytes)?),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(e).io("reading", &p),
        }
    }

    /// Fetches what a process needs to start: `config.toml` and `init.json`, the `latest`
    /// and `best` pointers with their checkpoints (`files` of them: the trainer resumes
    /// with the optimiser state), and the generation log. Returns whether the run exists
    /// on the store (has a `config.toml`).
    pub fn pull_run(&self, files: CheckpointFiles) -> Result<bool> {
        if !self.fetch(layout::CONFIG)? {
            return Ok(false);
        }
        self.fetch(layout::INIT)?;
        self.fetch(layout::GENERATION_LOG)?;
        self.pull_pointers(files)?;
        Ok(true)
    }

    /// Fetches `latest` and `best` and the checkpoints they name (if not already in the
    /// copy), checkpoint first, pointer after. Returns the generation `latest` points to.
    pub fn pull_pointers(&self, files: CheckpointFiles) -> Result<Option<Generation>> {
        let mut latest = None;
        for pointer in [layout::BEST, layout::LATEST] {
            let Some(bytes) = self.store.get(pointer)? else { continue };
            let name = String::from_utf8_lossy(&bytes).trim().to_string();
            let Ok(generation) = name.parse::<Generation>() else {
                return Err(RunError::BadPointer { pointer: self.store.describe(pointer), name });
            };
            self.pull_checkpoint(generation, files)?;
            atomic_write(&self.cache.path(pointer), &bytes)?;
            if pointer == layout::LATEST {
                latest = Some(generation);
            }
        }
        Ok(latest)
    }

    /// Fetches the checkpoint of `generation` into the copy unless it is complete there
    /// already (`state.json` last, so a partial download is never taken for a checkpoint).
    pub fn pull_checkpoint(&self, generation: Generation, files: CheckpointFiles) -> Result<()> {
        let key = |file: &str| layout::checkpoint_file(generation, file);
        let optimizer = files == CheckpointFiles::WithOptimizer;
        if self.cache.path(&key(layout::STATE)).is_file()
            && (!optimizer || self.cache.path(&key(layout::OPTIMIZER)).is_file())
        {
            return Ok(());
        }
        for f in layout::MODEL_FILES {
            if !self.fetch(&key(f))? {
                return Err(RunError::IncompleteCheckpoint { object: self.store.describe(&key(f)) });
            }
        }
        if optimizer {
            self.fetch(&key(layout::OPTIMIZER))?;
        }
        if !self.fetch(&key(layout::STATE))? {
            return Err(RunError::IncompleteCheckpoint { object: self.store.describe(&key(layout::STATE)) });
        }
        Ok(())
    }

    /// Uploads the checkpoint of `generation` from the copy, `state.json` last.
    pub fn push_checkpoint(&self, generation: Generation) -> Result<()> {
        for f in layout::MODEL_FILES.into_iter().chain([layout::OPTIMIZER, layout::STATE]) {
            self.push(&layout::checkpoint_file(generation, f))?;
        }
        Ok(())
    }

    /// Unpacks the store's game bundles of `generation` not yet seen into the copy's
    /// `games/gen-NNNN/` (skipping this writer's own); returns how many bundles.
    pub fn pull_games(&self, generation: Generation) -> Result<usize> {
        let prefix = format!("{}/", layout::games(generation));
        let keys = self.store.list(&prefix)?;
        let own = format!("{prefix}{}-", self.writer);
        let mut n = 0;
        for key in keys {
            if !key.ends_with(".bundle") || key.starts_with(&own) || self.seen.lock().unwrap().contains(&key) {
                continue;
            }
            let Some(bytes) = self.store.get(&key)? else { continue };
            let files = match bundle::unpack(&bytes) {
                Ok(f) => f,
                Err(e) => {
                    eprintln!("warning: skipping {}: {e}", self.store.describe(&key));
                    self.seen.lock().unwrap().insert(key);
                    continue;
                }
            };
            let dir = self.cache.generation_games_dir(generation);
            // `.ptn` first, `.game` (the file that counts) last, as for a local game.
            for (name, data) in files.iter().filter(|(n, _)| !n.ends_with(".game")) {
                atomic_write(&dir.join(name), data)?;
            }
            for (name, data) in files.iter().filter(|(n, _)| n.ends_with(".game")) {
                if !dir.join(name).is_file() {
                    atomic_write(&dir.join(name), data)?;
                }
            }
            self.seen.lock().unwrap().insert(key);
            n += 1;
        }
        Ok(n)
    }

    /// The trainer's own games of `generation` (those it played, not unpacked from
    /// bundles), uploaded as one bundle that grows with them (`<writer>-own.bundle`).
    pub fn push_own_games(&self, generation: Generation) -> Result<()> {
        let dir = self.cache.generation_games_dir(generation);
        let files = own_files(&dir)?;
        if files.is_empty() {
            return Ok(());
        }
        let mut entries = Vec::new();
        for f in &files {
            let name = f.file_name().unwrap_or_default().to_string_lossy().into_owned();
            entries.push((format!("{}-{name}", self.writer), std::fs::read(f).io("reading", f)?));
        }
        let bytes = bundle::pack(&entries)?;
        self.store.put(&format!("{}/{}-own.bundle", layout::games(generation), self.writer), &bytes)?;
        Ok(())
    }

    /// A worker's finished games: moved into the outbox, uploaded in one bundle per
    /// generation, then removed (see the module docs). Also uploads what a killed worker
    /// left in the outbox. Returns the games uploaded.
    pub fn push_worker_games(&self) -> Result<usize> {
        let outbox = self.cache.path(OUTBOX);
        for generation in self.cache.game_generations() {
            let files = own_files(&self.cache.generation_games_dir(generation))?;
            if files.is_empty() {
                continue;
            }
            let id = format!(
                "{}-{}-{}-{}",
                self.writer,
                std::process::id(),
                self.nonce,
                self.seq.fetch_add(1, Ordering::Relaxed)
            );
            let dir = outbox.join(generation.to_string()).join(&id);
            std::fs::create_dir_all(&dir).io("creating", &dir)?;
            for f in files {
                let _ = std::fs::rename(&f, dir.join(f.file_name().unwrap_or_default()));
            }
        }
        let mut uploaded = 0;
        let Ok(gens) = std::fs::read_dir(&outbox) else { return Ok(0) };
        for g in gens.flatten() {
            let Some(generation) = g.file_name().to_str().and_then(|name| name.parse::<Generation>().ok()) else {
                continue;
            };
            let Ok(batches) = std::fs::read_dir(g.path()) else { continue };
            for b in batches.flatten() {
                let id = b.file_name().to_string_lossy().into_owned();
                // Another live worker's batch on the same cache is its own to upload.
                let owner: Option<u32> = id.split('-').nth(1).and_then(|p| p.parse().ok());
                if owner.is_some_and(|pid| pid != std::process::id() && Path::new(&format!("/proc/{pid}")).exists()) {
                    continue;
                }
                let mut entries = Vec::new();
                let mut games = 0;
                let mut names: Vec<PathBuf> =
                    std::fs::read_dir(b.path()).io("reading", &b.path())?.flatten().map(|e| e.path()).collect();
                names.sort();
                for f in names {
                    let name = f.file_name().unwrap_or_default().to_string_lossy().into_owned();
                    games += usize::from(name.ends_with(".game"));
                    entries.push((format!("{}-{name}", self.writer), std::fs::read(&f).io("reading", &f)?));
                }
                let key = format!("{}/{id}.bundle", layout::games(generation));
                let inject = std::env::var(INJECT_UPLOAD_KILL_ENV).ok();
                if inject.as_deref() == Some("before-put") {
                    eprintln!("injected kill before uploading {key}");
                    std::process::exit(137);
                }
                self.store.put(&key, &bundle::pack(&entries)?)?;
                if inject.as_deref() == Some("after-put") {
                    eprintln!("injected kill after uploading {key}");
                    std::process::exit(137);
                }
                std::fs::remove_dir_all(b.path()).io("removing", &b.path())?;
                uploaded += games;
            }
        }
        Ok(uploaded)
    }

    /// Fetches the whole run into the copy (for `check`, `arena`, `export`): every object
    /// but the lease, with every game bundle unpacked. Optimiser states are fetched too.
    pub fn pull_all(&self) -> Result<PullReport> {
        let mut rep = PullReport::default();
        let mut names: std::collections::HashMap<String, usize> = Default::default();
        let keys = self.store.list("")?;
        // Pointers last, after the checkpoints they name.
        let (pointers, rest): (Vec<String>, Vec<String>) =
            keys.into_iter().partition(|k| k == layout::LATEST || k == layout::BEST);
        for key in rest.iter().chain(&pointers) {
            if key == layout::LEASE {
                continue;
            }
            if let Some(generation) = bundle_generation(key) {
                rep.bundles += 1;
                let Some(bytes) = self.store.get(key)? else { continue };
                match bundle::unpack(&bytes) {
                    Ok(files) => {
                        for (name, data) in files {
                            if name.ends_with(".game") {
                                *names.entry(format!("{generation}/{name}")).or_default() += 1;
                            }
                            atomic_write(&self.cache.generation_games_dir(generation).join(&name), &data)?;
                        }
                    }
                    Err(e) => rep.damaged.push(format!("{}: {e}", self.store.describe(key))),
                }
                continue;
            }
            self.fetch(key)?;
        }
        rep.games = names.len();
        rep.in_two_bundles = names.values().filter(|n| **n > 1).count();
        Ok(rep)
    }

    /// Uploads every file of the copy under `dir` (e.g. `arena`, `exports`).
    pub fn push_tree(&self, dir: &str) -> Result<usize> {
        let local = Store::local(self.cache.root());
        let keys = local.list(&format!("{dir}/"))?;
        for k in &keys {
            self.push(k)?;
        }
        Ok(keys.len())
    }
}

/// The directory of a worker's cache that holds game batches until they are uploaded.
const OUTBOX: &str = "outbox";

/// The generation of a game bundle's key (`games/gen-0003/<id>.bundle`); `None` for
/// other keys.
fn bundle_generation(key: &str) -> Option<Generation> {
    let (generation, file) = key.strip_prefix(layout::GAMES)?.strip_prefix('/')?.split_once('/')?;
    file.ends_with(".bundle").then(|| generation.parse().ok()).flatten()
}

/// What [`Remote::pull_all`] found.
#[derive(Debug, Default)]
pub struct PullReport {
    /// Game bundles on the store.
    pub bundles: usize,
    /// Distinct games in them.
    pub games: usize,
    /// Games found in more than one bundle (uploaded again after a kill; counted once).
    pub in_two_bundles: usize,
    /// Bundles that failed their checks.
    pub damaged: Vec<String>,
}

/// The `.game` and `.ptn` files in `dir` played by this copy's process(es): not
/// unpacked from bundles (those names start with `w`), not temporaries.
fn own_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let rd = match std::fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e).io("reading", dir),
    };
    let mut out: Vec<PathBuf> = rd
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            let name = p.file_name().unwrap_or_default().to_string_lossy();
            !is_temp_name(&name) && !name.starts_with('w') && p.extension().is_some_and(|x| x == "game" || x == "ptn")
        })
        .collect();
    out.sort();
    // A `.ptn` whose `.game` is not written yet belongs to an unfinished game: leave it.
    let games: std::collections::HashSet<PathBuf> =
        out.iter().filter(|p| p.extension().is_some_and(|x| x == "game")).map(|p| p.with_extension("")).collect();
    out.retain(|p| games.contains(&p.with_extension("")));
    Ok(out)
}
