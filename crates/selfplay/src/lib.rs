//! Self-play and training (placeholder).
