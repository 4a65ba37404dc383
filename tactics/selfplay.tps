# Bredon tactics suite: one TPS per line (komi 0), classified when read.
