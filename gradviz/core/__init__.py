"""Headless core: loading user code, Jacobians, verdicts. Never imports Qt."""
