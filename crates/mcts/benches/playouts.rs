//! Playouts per second with the uniform evaluator (search overhead without a network).
//! `cargo bench -p bredon-mcts`

use bredon_mcts::{Search, SearchConfig, UniformEvaluator};
use bredon_rules::Position;
use bredon_rules::notation::parse_tps;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

fn playouts(c: &mut Criterion) {
    let mut g = c.benchmark_group("playouts");
    let visits = 2000u64;
    g.throughput(Throughput::Elements(visits));
    let cases = [
        ("5x5-start", Position::new(5).unwrap()),
        ("6x6-start", Position::new(6).unwrap()),
        (
            "5x5-midgame",
            parse_tps("x3,12,2S/x,22S,22C,11,21/121,212,12,1121C,1212S/21S,1,21,211S,12S/x,21S,2,x2 1 26").unwrap(),
        ),
    ];
    for (name, pos) in cases {
        g.bench_function(name, |b| {
            b.iter(|| {
                let mut rng = ChaCha8Rng::seed_from_u64(1);
                let mut s = Search::new(pos.clone(), SearchConfig::default());
                s.run(&UniformEvaluator, visits, &mut rng).root_visits
            })
        });
    }
    g.finish();
}

criterion_group!(benches, playouts);
criterion_main!(benches);
