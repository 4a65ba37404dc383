# Sourced by scripts/ab.sh and scripts/ship.sh.
# openings_toml SIZE COUNT SEED: the body of a match config's [openings] table: COUNT of the
# balanced 4-ply openings a strong engine chose (../shared/data/openings, 5x5 and 6x6),
# shuffled with SEED, else COUNT random 2-ply openings drawn with SEED.
openings_toml() {
  local balanced=../shared/data/openings/${1}s_4ply_balanced_openings.txt
  if [ -f "$balanced" ]; then
    printf 'kind = "file"\npath = "%s"\ncount = %s\nshuffle_seed = %s\n' "$balanced" "$2" "$3"
  else
    printf 'kind = "random"\nplies = 2\ncount = %s\nseed = %s\n' "$2" "$3"
  fi
}
