"""One panel per file; each renders state or results and computes nothing itself."""
