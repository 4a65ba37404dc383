//! A readable terminal diagram of a position, stacks visible.

use crate::position::Position;
use crate::types::{Color, PieceKind, Square};

impl Position {
    /// Draws the board: each square shows its stack bottom to top (`1` white, `2` black,
    /// top piece suffixed `S` for a wall or `C` for a capstone, as in TPS), rank 1 at the
    /// bottom, then side to move, reserves and flat counts.
    pub fn diagram(&self) -> String {
        let n = self.size();
        let cell = |sq: Square| -> String {
            let st = self.stack(sq);
            let mut s: String = st.pieces().map(|p| (b'0' + p.color.player_number()) as char).collect();
            match st.top_kind {
                PieceKind::Wall if st.height > 0 => s.push('S'),
                PieceKind::Cap if st.height > 0 => s.push('C'),
                _ => {}
            }
            s
        };
        let width = (0..n * n).map(|i| cell(Square(i as u8)).len()).max().unwrap_or(0).max(2);
        let line = |l: &str, m: &str, r: &str| {
            let seg = "─".repeat(width + 2);
            format!("   {l}{}{r}\n", vec![seg; n].join(m))
        };
        let mut out = line("┌", "┬", "┐");
        for row in (0..n).rev() {
            out.push_str(&format!("{:>2} │", row + 1));
            for col in 0..n {
                out.push_str(&format!(" {:<width$} │", cell(Square::from_coords(col, row, n))));
            }
            out.push('\n');
            out.push_str(&if row == 0 { line("└", "┴", "┘") } else { line("├", "┼", "┤") });
        }
        out.push_str("   ");
        for col in 0..n {
            out.push_str(&format!(" {:^width$}  ", (b'a' + col as u8) as char));
        }
        out.push('\n');
        let (wf, bf) = self.flat_counts();
        let res = |c: Color| {
            let (s, k) = self.reserves(c);
            format!("{s} stones, {k} caps")
        };
        out.push_str(&format!(
            "{} to move, move {}. Reserves: white {}, black {}. Flats {}–{}, komi {}.\n",
            if self.side_to_move() == Color::White { "White" } else { "Black" },
            self.move_number(),
            res(Color::White),
            res(Color::Black),
            wf,
            bf,
            self.half_komi() as f32 / 2.0
        ));
        if let Some(r) = self.result() {
            out.push_str(&format!("Game over: {r}\n"));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use crate::notation::parse_tps;

    #[test]
    fn diagram_shows_stacks_and_coordinates() {
        let p = parse_tps("2S,x4/x5/x,121C,x3/x5/1,x4 1 8").unwrap();
        let d = p.diagram();
        let lines: Vec<&str> = d.lines().collect();
        assert!(lines[1].starts_with(" 5 │ 2S"), "{d}");
        assert!(lines[5].contains("121C"), "{d}");
        assert!(lines[9].starts_with(" 1 │ 1 "), "{d}");
        assert!(lines[11].contains('a') && lines[11].contains('e'), "{d}");
        assert!(d.contains("White to move, move 8"), "{d}");
    }
}
