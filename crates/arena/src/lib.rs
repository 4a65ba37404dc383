//! Matches and ratings (placeholder).
