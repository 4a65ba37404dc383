//! Move generation and perft benchmarks.
//!
//! `cargo bench -p bredon-rules` — the 6x6 perft(5) from the start position is the
//! headline number (1,253,506,520 nodes).

use bredon_rules::notation::parse_tps;
use bredon_rules::perft::perft;
use bredon_rules::{Move, Position};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use std::hint::black_box;

const ENDGAME_6X6: &str =
    "2,2,21S,2,2,2/2,x,222221,2,2,x/1,1,2221C,x,111112C,2S/x,1,2S,x2,121211212/1,1,1212S,1S,2,1S/x2,2,1,21,1 1 42";
const MIDGAME_5X5: &str = "x3,12,2S/x,22S,22C,11,21/121,212,12,1121C,1212S/21S,1,21,211S,12S/x,21S,2,x2 1 26";

fn movegen(c: &mut Criterion) {
    let mut g = c.benchmark_group("movegen");
    for (name, tps) in [("6x6-endgame", ENDGAME_6X6), ("5x5-midgame", MIDGAME_5X5)] {
        let pos = parse_tps(tps).unwrap();
        let mut moves: Vec<Move> = Vec::with_capacity(512);
        pos.generate_moves(&mut moves);
        g.throughput(Throughput::Elements(moves.len() as u64));
        g.bench_function(format!("generate/{name}"), |b| {
            b.iter(|| {
                moves.clear();
                black_box(&pos).generate_moves(&mut moves);
                moves.len()
            })
        });
        g.bench_function(format!("count/{name}"), |b| b.iter(|| black_box(&pos).count_moves()));
        let mut p = pos.clone();
        g.bench_function(format!("make-unmake-all/{name}"), |b| {
            b.iter(|| {
                for &mv in &moves {
                    let u = p.make(mv);
                    p.unmake(mv, u);
                }
            })
        });
    }
    g.finish();
}

fn perft_bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("perft");
    g.sample_size(10);
    let cases: [(&str, Option<&str>, usize, u32, u64); 3] = [
        ("6x6-start-d5", None, 6, 5, 1_253_506_520),
        ("6x6-endgame-d4", Some(ENDGAME_6X6), 6, 4, 395_359_484),
        ("5x5-start-d4", None, 5, 4, 2_999_784),
    ];
    for (name, tps, size, depth, nodes) in cases {
        let mut pos = match tps {
            Some(t) => parse_tps(t).unwrap(),
            None => Position::new(size).unwrap(),
        };
        g.throughput(Throughput::Elements(nodes));
        g.bench_function(name, |b| b.iter(|| assert_eq!(perft(&mut pos, depth), nodes)));
    }
    g.finish();
}

criterion_group!(benches, movegen, perft_bench);
criterion_main!(benches);
