//! Cost of the tactical queries the search runs at every leaf.
//!
//! `cargo bench -p bredon-rules --bench tactics`: `leaf-check/*` is what one search leaf
//! pays (the side to move's immediate win, then the opponent's threat) averaged over
//! positions of random games; compare it with one network evaluation (`bredon bench nn`).
//! `losing-moves/*` is what an expanded leaf pays on top when the opponent threatens.

use bredon_rules::notation::parse_tps;
use bredon_rules::{Move, Position};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use std::hint::black_box;

const ENDGAME_6X6: &str =
    "2,2,21S,2,2,2/2,x,222221,2,2,x/1,1,2221C,x,111112C,2S/x,1,2S,x2,121211212/1,1,1212S,1S,2,1S/x2,2,1,21,1 1 42";

/// Positions from `games` random games on `size`, every ply after the opening (a fixed
/// linear congruential generator picks the moves, so every run measures the same set).
fn random_positions(size: usize, games: usize) -> Vec<Position> {
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut out = Vec::new();
    let mut moves: Vec<Move> = Vec::new();
    for _ in 0..games {
        let mut pos = Position::new(size).unwrap();
        while pos.result().is_none() {
            moves.clear();
            pos.generate_moves(&mut moves);
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let mv = moves[(state >> 33) as usize % moves.len()];
            pos.make(mv);
            if !pos.is_opening() && pos.result().is_none() {
                out.push(pos.clone());
            }
        }
    }
    out
}

fn tactics(c: &mut Criterion) {
    let mut g = c.benchmark_group("tactics");
    for size in [4, 5, 6, 7, 8] {
        let positions = random_positions(size, 40);
        g.throughput(Throughput::Elements(positions.len() as u64));
        g.bench_function(format!("leaf-check/{size}x{size}-random-games"), |b| {
            b.iter(|| {
                let mut n = 0;
                for p in &positions {
                    if black_box(p).find_immediate_win().is_some() || p.opponent_threatens() {
                        n += 1;
                    }
                }
                n
            })
        });
    }
    // What an expanded leaf pays when the opponent threatens a win: every legal move
    // checked for leaving that win open (`move_loses_at_once`), over the positions of
    // random games where the opponent threatens.
    for size in [5, 6, 7, 8] {
        let threatened: Vec<(Position, Vec<Move>)> = random_positions(size, 40)
            .into_iter()
            .filter(|p| p.find_immediate_win().is_none() && p.opponent_threatens())
            .map(|p| {
                let moves = p.legal_moves();
                (p, moves)
            })
            .collect();
        g.throughput(Throughput::Elements(threatened.len() as u64));
        g.bench_function(format!("losing-moves/{size}x{size}-random-games"), |b| {
            b.iter(|| {
                let mut n = 0;
                for (p, moves) in &threatened {
                    let mut p = black_box(p).clone();
                    for &mv in moves {
                        n += p.move_loses_at_once(mv) as usize;
                    }
                }
                n
            })
        });
    }
    // The Tak input features of the network (input version 2): road-in-one squares and
    // road-group extents for both sides.
    for size in [4, 6] {
        let positions = random_positions(size, 40);
        g.throughput(Throughput::Elements(positions.len() as u64));
        g.bench_function(format!("road-features/{size}x{size}-random-games"), |b| {
            b.iter(|| {
                let mut acc = 0usize;
                for p in &positions {
                    let p = black_box(p);
                    for color in [bredon_rules::Color::White, bredon_rules::Color::Black] {
                        acc += p.road_completion_squares(color).count_ones() as usize;
                        for group in p.road_groups(color) {
                            let (r, c) = p.info().extent(group);
                            acc += r.max(c);
                        }
                    }
                }
                acc
            })
        });
    }
    let endgame = parse_tps(ENDGAME_6X6).unwrap();
    g.throughput(Throughput::Elements(1));
    g.bench_function("immediate-wins/6x6-endgame", |b| {
        let mut out = Vec::new();
        b.iter(|| {
            out.clear();
            black_box(&endgame).immediate_wins(&mut out);
            out.len()
        })
    });
    g.bench_function("forced-wins-in-three/6x6-endgame", |b| {
        b.iter(|| black_box(&endgame).forced_wins_in_three().len())
    });
    g.finish();
}

criterion_group!(benches, tactics);
criterion_main!(benches);
