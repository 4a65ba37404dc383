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

use crate::error::{Context, Result, RunError};
use bredon_storage::fsutil::{atomic_write, is_temp_name};
use bredon_storage::{Store, bundle};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::rundir::RunDir;

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
        std::fs::create_dir_all(cache).with_context(|| format!("creating {}", cache.display()))?;
        let id_path = cache.join("writer-id");
        let writer = match std::fs::read_to_string(&id_path) {
            Ok(s) if !s.trim().is_empty() => s.trim().to_string(),
            _ => {
                let id = format!("w{}", &bredon_storage::unique_token()[..12]);
                bredon_storage::fsutil::create_if_absent(&id_path, id.as_bytes())?;
                std::fs::read_to_string(&id_path)?.trim().to_string()
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
                atomic_write(&self.cache.root().join(key), &bytes)?;
                Ok(true)
            }
            None => Ok(false),
        }
    }

    /// Uploads the local copy's file `key` (if it exists locally).
    pub fn push(&self, key: &str) -> Result<()> {
        let p = self.cache.root().join(key);
        match std::fs::read(&p) {
            Ok(bytes) => Ok(self.store.put(key, &bytes)?),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(e).with_context(|| format!("reading {}", p.display())),
        }
    }

    /// Fetches what a process needs to start: `config.toml` and `init.json`, the `latest`
    /// and `best` pointers with their checkpoints (with the optimiser state when
    /// `optimizer`: the trainer resumes from it), and the generation log. Returns whether
    /// the run exists on the store (has a `config.toml`).
    pub fn pull_run(&self, optimizer: bool) -> Result<bool> {
        if !self.fetch("config.toml")? {
            return Ok(false);
        }
        self.fetch("init.json")?;
        self.fetch("logs/generations.jsonl")?;
        self.pull_pointers(optimizer)?;
        Ok(true)
    }

    /// Fetches `latest` and `best` and the checkpoints they name (if not already in the
    /// copy), checkpoint first, pointer after. Returns the name `latest` points to.
    pub fn pull_pointers(&self, optimizer: bool) -> Result<Option<String>> {
        let mut latest = None;
        for pointer in ["best", "latest"] {
            let Some(bytes) = self.store.get(pointer)? else { continue };
            let name = String::from_utf8_lossy(&bytes).trim().to_string();
            if name.is_empty() || name.contains(['/', '\\']) || name.starts_with('.') {
                return Err(RunError::BadPointer { pointer: self.store.describe(pointer), name });
            }
            self.pull_checkpoint(&name, optimizer)?;
            atomic_write(&self.cache.root().join(pointer), &bytes)?;
            if pointer == "latest" {
                latest = Some(name);
            }
        }
        Ok(latest)
    }

    /// Fetches checkpoint `name` into the copy unless it is complete there already
    /// (`state.json` last, so a partial download is never taken for a checkpoint).
    pub fn pull_checkpoint(&self, name: &str, optimizer: bool) -> Result<()> {
        let dir = format!("checkpoints/{name}");
        if self.cache.root().join(&dir).join("state.json").is_file()
            && (!optimizer || self.cache.root().join(&dir).join("optimizer.bpk").is_file())
        {
            return Ok(());
        }
        for f in ["model.bpk", "model.json"] {
            if !self.fetch(&format!("{dir}/{f}"))? {
                return Err(RunError::IncompleteCheckpoint { object: self.store.describe(&format!("{dir}/{f}")) });
            }
        }
        if optimizer {
            self.fetch(&format!("{dir}/optimizer.bpk"))?;
        }
        if !self.fetch(&format!("{dir}/state.json"))? {
            return Err(RunError::IncompleteCheckpoint { object: self.store.describe(&format!("{dir}/state.json")) });
        }
        Ok(())
    }

    /// Uploads checkpoint `name` from the copy, `state.json` last.
    pub fn push_checkpoint(&self, name: &str) -> Result<()> {
        for f in ["model.bpk", "model.json", "optimizer.bpk", "state.json"] {
            self.push(&format!("checkpoints/{name}/{f}"))?;
        }
        Ok(())
    }

    /// Unpacks the store's game bundles of generation `model` not yet seen into the
    /// copy's `games/<model>/` (skipping this writer's own); returns how many bundles.
    pub fn pull_games(&self, model: &str) -> Result<usize> {
        let prefix = format!("games/{model}/");
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
            let dir = self.cache.games_dir().join(model);
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

    /// The trainer's own games of `model` (those it played, not unpacked from bundles),
    /// uploaded as one bundle that grows with them (`<writer>-own.bundle`).
    pub fn push_own_games(&self, model: &str) -> Result<()> {
        let dir = self.cache.games_dir().join(model);
        let files = own_files(&dir)?;
        if files.is_empty() {
            return Ok(());
        }
        let mut entries = Vec::new();
        for f in &files {
            let name = f.file_name().unwrap_or_default().to_string_lossy().into_owned();
            entries.push((format!("{}-{name}", self.writer), std::fs::read(f)?));
        }
        let bytes = bundle::pack(&entries)?;
        self.store.put(&format!("games/{model}/{}-own.bundle", self.writer), &bytes)?;
        Ok(())
    }

    /// A worker's finished games: moved into the outbox, uploaded in one bundle per
    /// generation, then removed (see the module docs). Also uploads what a killed worker
    /// left in the outbox. Returns the games uploaded.
    pub fn push_worker_games(&self) -> Result<usize> {
        let outbox = self.cache.root().join("outbox");
        if let Ok(gens) = std::fs::read_dir(self.cache.games_dir()) {
            for g in gens.flatten() {
                let model = g.file_name().to_string_lossy().into_owned();
                let files = own_files(&g.path())?;
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
                let dir = outbox.join(&model).join(&id);
                std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
                for f in files {
                    let _ = std::fs::rename(&f, dir.join(f.file_name().unwrap_or_default()));
                }
            }
        }
        let mut uploaded = 0;
        let Ok(gens) = std::fs::read_dir(&outbox) else { return Ok(0) };
        for g in gens.flatten() {
            let model = g.file_name().to_string_lossy().into_owned();
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
                let mut names: Vec<PathBuf> = std::fs::read_dir(b.path())?.flatten().map(|e| e.path()).collect();
                names.sort();
                for f in names {
                    let name = f.file_name().unwrap_or_default().to_string_lossy().into_owned();
                    games += usize::from(name.ends_with(".game"));
                    entries.push((format!("{}-{name}", self.writer), std::fs::read(&f)?));
                }
                let key = format!("games/{model}/{id}.bundle");
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
                std::fs::remove_dir_all(b.path()).with_context(|| format!("removing {}", b.path().display()))?;
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
        let (pointers, rest): (Vec<String>, Vec<String>) = keys.into_iter().partition(|k| k == "latest" || k == "best");
        for key in rest.iter().chain(&pointers) {
            if key == "train.lease" {
                continue;
            }
            if let Some(model) = key.strip_prefix("games/").and_then(|k| k.split_once('/')).map(|(m, _)| m)
                && key.ends_with(".bundle")
            {
                rep.bundles += 1;
                let Some(bytes) = self.store.get(key)? else { continue };
                match bundle::unpack(&bytes) {
                    Ok(files) => {
                        for (name, data) in files {
                            if name.ends_with(".game") {
                                *names.entry(format!("{model}/{name}")).or_default() += 1;
                            }
                            atomic_write(&self.cache.games_dir().join(model).join(&name), &data)?;
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
        Err(e) => return Err(e).with_context(|| format!("reading {}", dir.display())),
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
