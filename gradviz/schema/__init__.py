"""The torch-free, Qt-free model every front-end shares: settings, results, errors, sessions."""
