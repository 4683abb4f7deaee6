"""Functions that corpus files import from a sibling package, as a project would."""
