//! The documentation stays true: in README.md, ARCHITECTURE.md, configs/README.md and
//! docs/*.md every relative link points to a file that exists (and a `#heading` to a
//! heading there), and every `bredon …` command in a shell block names a real subcommand
//! with flags it accepts; `scripts/…` commands name scripts that exist and `cargo … -p X`
//! a crate of the workspace.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

/// The pages a user reads, relative to the repository root.
fn pages() -> Vec<PathBuf> {
    let root = repo();
    let mut v: Vec<PathBuf> =
        ["README.md", "ARCHITECTURE.md", "configs/README.md"].iter().map(|p| root.join(p)).collect();
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .expect("docs/ exists")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    docs.sort();
    assert!(docs.iter().any(|p| p.ends_with("docs/README.md")), "docs/README.md is the index");
    v.extend(docs);
    v
}

/// Lines outside fenced code blocks, and the fenced blocks as (language, lines).
fn split_fences(text: &str) -> (Vec<&str>, Vec<(String, Vec<&str>)>) {
    let mut prose = Vec::new();
    let mut blocks = Vec::new();
    let mut current: Option<(String, Vec<&str>)> = None;
    for line in text.lines() {
        let fence = line.trim_start().strip_prefix("```");
        match (&mut current, fence) {
            (None, Some(lang)) => current = Some((lang.trim().to_string(), Vec::new())),
            (Some(_), Some(_)) => blocks.push(current.take().unwrap()),
            (Some((_, lines)), None) => lines.push(line),
            (None, None) => prose.push(line),
        }
    }
    assert!(current.is_none(), "an unclosed code fence");
    (prose, blocks)
}

/// GitHub's anchor for a heading: lower case, spaces to `-`, punctuation dropped.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            '-' | '_' => Some(c),
            c if c.is_alphanumeric() => Some(c.to_ascii_lowercase()),
            _ => None,
        })
        .collect()
}

fn anchors(file: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(file).unwrap();
    split_fences(&text).0.iter().filter_map(|l| l.strip_prefix('#')).map(|h| slug(h.trim_start_matches('#'))).collect()
}

/// Link targets `](target)` in prose lines, outside inline code.
fn links(prose: &[&str]) -> Vec<String> {
    let mut out = Vec::new();
    for line in prose {
        // Drop inline code spans.
        let mut plain = String::new();
        for (i, part) in line.split('`').enumerate() {
            if i % 2 == 0 {
                plain.push_str(part);
            }
        }
        let mut rest = plain.as_str();
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let Some(end) = after.find(')') else { break };
            out.push(after[..end].trim().to_string());
            rest = &after[end..];
        }
    }
    out
}

#[test]
fn relative_links_resolve() {
    let mut broken = Vec::new();
    for page in pages() {
        let text = std::fs::read_to_string(&page).unwrap();
        let (prose, _) = split_fences(&text);
        for target in links(&prose) {
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            let (path, anchor) = match target.split_once('#') {
                Some((p, a)) => (p, Some(a)),
                None => (target.as_str(), None),
            };
            let file = if path.is_empty() { page.clone() } else { page.parent().unwrap().join(path) };
            if !file.exists() {
                broken.push(format!("{}: {target}: no such file", page.display()));
                continue;
            }
            if let Some(a) = anchor
                && file.extension().is_some_and(|x| x == "md")
                && !anchors(&file).iter().any(|h| h == a)
            {
                broken.push(format!("{}: {target}: no heading #{a} in {}", page.display(), file.display()));
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

/// Splits a shell line into words (double quotes group), up to a `#` comment.
fn words(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut in_word = false;
    for c in line.chars() {
        match c {
            '"' => {
                quoted = !quoted;
                in_word = true;
            }
            '#' if !quoted && !in_word => break,
            c if c.is_whitespace() && !quoted => {
                if in_word {
                    out.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            c => {
                cur.push(c);
                in_word = true;
            }
        }
    }
    if in_word {
        out.push(cur);
    }
    out
}

fn help(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_bredon")).args(args).arg("--help").output().unwrap();
    assert!(out.status.success(), "bredon {} --help failed: {}", args.join(" "), String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

fn workspace_packages() -> Vec<String> {
    let root = repo();
    std::fs::read_dir(root.join("crates"))
        .unwrap()
        .filter_map(|e| std::fs::read_to_string(e.unwrap().path().join("Cargo.toml")).ok())
        .filter_map(|toml| {
            toml.lines().find_map(|l| l.strip_prefix("name = \"").and_then(|r| r.strip_suffix('"')).map(str::to_string))
        })
        .collect()
}

#[test]
fn shell_commands_name_real_subcommands_flags_scripts_and_crates() {
    let root = repo();
    let packages = workspace_packages();
    let mut helps: BTreeMap<Vec<String>, String> = BTreeMap::new();
    let mut wrong = Vec::new();
    let mut commands = 0;
    for page in pages() {
        let text = std::fs::read_to_string(&page).unwrap();
        for (lang, lines) in split_fences(&text).1 {
            if !matches!(lang.as_str(), "sh" | "bash" | "shell") {
                continue;
            }
            for line in lines {
                let mut w = words(line);
                let where_ = format!("{}: {}", page.display(), line.trim());
                // `cargo run --release --bin bredon -- ARGS` runs `bredon ARGS`.
                if let Some(p) = w.iter().position(|x| x == "--")
                    && w.starts_with(&["cargo".into(), "run".into()])
                    && w.iter().any(|x| x == "bredon")
                {
                    w = std::iter::once("bredon".to_string()).chain(w[p + 1..].iter().cloned()).collect();
                }
                if w.first().is_some_and(|x| x.starts_with("scripts/")) && !root.join(&w[0]).is_file() {
                    wrong.push(format!("{where_}: no script {}", w[0]));
                }
                if w.first().is_some_and(|x| x == "cargo") {
                    for pair in w.windows(2).filter(|p| p[0] == "-p") {
                        if !packages.contains(&pair[1]) {
                            wrong.push(format!("{where_}: no package {}", pair[1]));
                        }
                    }
                }
                if w.first().is_none_or(|x| x != "bredon") {
                    continue;
                }
                commands += 1;
                let Some(sub) = w.get(1) else { continue };
                let mut path = vec![sub.clone()];
                let top = helps.entry(path.clone()).or_insert_with(|| help(&[sub])).clone();
                // A command with subcommands of its own (`bench nn`, `ptn check`).
                if top.contains("\nCommands:")
                    && let Some(next) = w.get(2)
                {
                    path.push(next.clone());
                }
                let args: Vec<&str> = path.iter().map(String::as_str).collect();
                let text = helps.entry(path.clone()).or_insert_with(|| help(&args));
                for flag in w.iter().filter(|x| x.starts_with("--") && x.len() > 2) {
                    let flag = flag.split('=').next().unwrap();
                    let listed = text.lines().any(|l| l.split([' ', ',', '=', '<']).any(|t| t == flag));
                    if !listed {
                        wrong.push(format!("{where_}: `bredon {}` has no {flag}", path.join(" ")));
                    }
                }
            }
        }
    }
    assert!(commands >= 20, "only {commands} bredon commands found in the docs");
    assert!(wrong.is_empty(), "commands that are not true:\n{}", wrong.join("\n"));
}

#[test]
fn the_front_door_keeps_its_two_commands_and_stays_a_page() {
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let block = split_fences(&readme).1.into_iter().next().expect("a code block first").1;
    assert!(
        block[0].starts_with("cargo run --release --bin bredon -- train --config configs/4x4.toml --minutes 10"),
        "{block:?}"
    );
    assert!(block[1].starts_with("cargo test --workspace --release"), "{block:?}");
    let lines = readme.lines().count();
    assert!(lines <= 160, "README.md has {lines} lines: the manual belongs in docs/");
}

#[test]
fn configs_readme_lists_every_config() {
    let root = repo();
    let index = std::fs::read_to_string(root.join("configs/README.md")).unwrap();
    for entry in std::fs::read_dir(root.join("configs")).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        if name.ends_with(".toml") {
            assert!(index.contains(&format!("`{name}`")), "configs/README.md does not list {name}");
        }
    }
}
