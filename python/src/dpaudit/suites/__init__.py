"""One-command audits of DP libraries (each needs its library; see each module)."""
