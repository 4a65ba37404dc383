//! The shared balanced openings files (`../shared/data/openings`, or
//! `$BREDON_SHARED_DATA/openings`) load as match openings. Without the data the test is
//! reported as ignored, with a line saying why; in CI (`CI=1`) it runs and fails. (A test
//! harness of its own, `libtest-mimic`, so that missing data is counted as ignored rather
//! than as a pass.)

use bredon_arena::OpeningsConfig;
use libtest_mimic::{Arguments, Failed, Trial};

const FILES: [(usize, &str); 2] = [(5, "5s_4ply_balanced_openings.txt"), (6, "6s_4ply_balanced_openings.txt")];

fn main() {
    let args = Arguments::from_args();
    let paths: Option<Vec<_>> =
        FILES.iter().map(|(_, f)| bredon_rules::testdata::shared_data_file(&format!("openings/{f}"))).collect();
    let ignored = paths.is_none() && !bredon_rules::testdata::in_ci();
    let needs = "the shared openings files (put the shared data beside the repository or set BREDON_SHARED_DATA)";
    if ignored {
        eprintln!("shared_openings_files_load: ignored, {needs} are missing; in CI it runs and fails");
    }
    let trial = Trial::test("shared_openings_files_load", move || {
        let Some(paths) = paths else {
            return Err(Failed::from(format!("{needs} are missing, and CI must run this test")));
        };
        for ((size, _), path) in FILES.iter().zip(paths) {
            let cfg = OpeningsConfig::File { path, count: Some(10), shuffle_seed: Some(1) };
            let openings = bredon_arena::load_openings(&cfg, bredon_rules::GameOptions::new(*size))
                .map_err(|e| Failed::from(e.to_string()))?;
            assert_eq!(openings.len(), 10);
            assert!(openings.iter().all(|o| o.len() == 4));
        }
        Ok(())
    })
    .with_ignored_flag(ignored);
    libtest_mimic::run(&args, vec![trial]).exit();
}
