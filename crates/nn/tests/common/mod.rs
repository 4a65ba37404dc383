//! Helpers shared by the nn integration tests.

use bredon_rules::Position;
use bredon_rules::notation::Ptn;

/// Every unfinished position of the reference games in `shared/data/games` (all 5x5).
pub fn real_positions() -> Vec<Position> {
    let dir =
        bredon_rules::testdata::shared_data_dir().expect("shared/data not found; set BREDON_SHARED_DATA").join("games");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("read {}: {e}", dir.display()))
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "ptn"))
        .collect();
    files.sort();
    let mut out = Vec::new();
    for f in files {
        let replay = Ptn::parse(&std::fs::read_to_string(&f).unwrap()).unwrap().replay().unwrap();
        out.extend(replay.positions().iter().filter(|p| p.result().is_none()).cloned());
    }
    out
}
